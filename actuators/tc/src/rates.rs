//! Unit conversions between knobs and tc's native values, chosen so that what tc prints reads
//! back exactly.
//!
//! `tc class show` prints rates in decimal units and truncates: a rate is divided by 1000 while
//! it is a multiple of 1000 or at least 10⁶ in the current unit (iproute2's rate printer). So a
//! rate below 1 Mbit/s prints exactly when it is a whole number of bytes per second (a multiple
//! of 8 bit/s), and a larger one when it keeps at most six significant decimal digits in units
//! of 1000ⁿ. [`quantize_rate`] rounds to the nearest such rate (a relative error below 10⁻⁵),
//! so the weight read back is the weight applied to that precision.

use polyphony_spec::{BitsPerSec, Bytes, Nanos};

/// The nearest rate (bit/s) that the kernel stores and `tc` prints exactly.
pub fn quantize_rate(bits_per_sec: f64) -> BitsPerSec {
    let x = if bits_per_sec.is_finite() && bits_per_sec > 0.0 {
        bits_per_sec.round() as u64
    } else {
        0
    };
    let mut unit: u64 = 8;
    if x >= 1_000_000 {
        unit = 1000;
        while x / unit >= 1_000_000 {
            unit *= 1000;
        }
    }
    BitsPerSec((x + unit / 2) / unit * unit)
}

/// True when `rate` is stored and printed exactly by tc.
pub fn is_exact_rate(rate: BitsPerSec) -> bool {
    quantize_rate(rate.0 as f64) == rate
}

/// Parses a rate as `tc` prints it (`100Mbit`, `33333Kbit`, `999992bit`).
pub fn parse_tc_rate(s: &str) -> Option<BitsPerSec> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = s.split_at(digits_end);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit {
        "bit" => 1,
        "Kbit" => 1_000,
        "Mbit" => 1_000_000,
        "Gbit" => 1_000_000_000,
        "Tbit" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult).map(BitsPerSec)
}

/// The HTB rate of a class with weight `w` on a link of rate `link`.
pub fn class_rate(weight: f64, link: BitsPerSec) -> BitsPerSec {
    quantize_rate(weight * link.0 as f64)
}

/// The HTB quantum of a class: `q_min · w / w_min`, so the smallest weight gets `q_min` (one
/// frame) and the others proportionally more (HTB shares excess bandwidth in proportion to
/// quantum).
pub fn class_quantum(weight: f64, min_weight: f64, q_min: u32) -> u64 {
    if min_weight.is_nan() || min_weight <= 0.0 {
        return q_min as u64;
    }
    ((q_min as f64) * weight / min_weight).round().max(q_min as f64) as u64
}

/// The sojourn-time threshold for K bytes at link rate C: K·8/C, rounded to the nearest ns.
pub fn sojourn_threshold(k: Bytes, link: BitsPerSec) -> Nanos {
    if link.0 == 0 {
        return Nanos(u64::MAX);
    }
    let num = k.0 as u128 * 8 * 1_000_000_000;
    let c = link.0 as u128;
    Nanos(((num + c / 2) / c).min(u64::MAX as u128) as u64)
}

/// The K (bytes) a sojourn threshold stands for at link rate C (nearest byte).
pub fn threshold_bytes(t: Nanos, link: BitsPerSec) -> Bytes {
    let num = t.0 as u128 * link.0 as u128;
    let d: u128 = 8 * 1_000_000_000;
    Bytes(((num + d / 2) / d).min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_rates_print_exactly() {
        assert_eq!(quantize_rate(33_333_333.3), BitsPerSec(33_333_000));
        assert_eq!(quantize_rate(999_999.0), BitsPerSec(1_000_000));
        assert_eq!(quantize_rate(999_990.0), BitsPerSec(999_992));
        assert_eq!(quantize_rate(1.2345678e9), BitsPerSec(1_235_000_000));
        assert!(is_exact_rate(BitsPerSec::from_mbps(100)));
        assert!(!is_exact_rate(BitsPerSec(100_000_001)));
    }

    #[test]
    fn tc_rates_parse() {
        assert_eq!(parse_tc_rate("33333Kbit"), Some(BitsPerSec(33_333_000)));
        assert_eq!(parse_tc_rate("100Mbit"), Some(BitsPerSec::from_mbps(100)));
        assert_eq!(parse_tc_rate("999992bit"), Some(BitsPerSec(999_992)));
        assert_eq!(parse_tc_rate("1600b"), None);
        assert_eq!(parse_tc_rate("Mbit"), None);
    }

    #[test]
    fn threshold_round_trips_at_100_mbit() {
        let c = BitsPerSec::from_mbps(100);
        assert_eq!(sojourn_threshold(Bytes(30_000), c), Nanos(2_400_000));
        assert_eq!(threshold_bytes(Nanos(2_400_000), c), Bytes(30_000));
        for k in [1u64, 1499, 3000, 123_457, 300_000] {
            assert_eq!(threshold_bytes(sojourn_threshold(Bytes(k), c), c), Bytes(k));
        }
    }

    #[test]
    fn quantum_is_proportional_and_at_least_one_mtu() {
        assert_eq!(class_quantum(0.2, 0.2, 1500), 1500);
        assert_eq!(class_quantum(0.6, 0.2, 1500), 4500);
        assert_eq!(class_quantum(0.1, 0.2, 1500), 1500);
    }
}
