//! Physical units as newtypes, so a byte count is never mistaken for a time.
//!
//! All are serialised as plain integers (`#[serde(transparent)]`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A duration or a timestamp in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

/// A rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitsPerSec(pub u64);

/// A number of packets (segments), e.g. an initial congestion window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Packets(pub u32);

impl Nanos {
    /// One microsecond.
    pub const MICRO: Nanos = Nanos(1_000);
    /// One millisecond.
    pub const MILLI: Nanos = Nanos(1_000_000);
    /// One second.
    pub const SECOND: Nanos = Nanos(1_000_000_000);

    /// From (possibly fractional) seconds; negative or non-finite inputs saturate to 0.
    pub fn from_secs_f64(s: f64) -> Nanos {
        if s.is_finite() && s > 0.0 {
            Nanos((s * 1e9).round() as u64)
        } else {
            Nanos(0)
        }
    }
    /// As seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Saturating difference.
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl BitsPerSec {
    /// From megabits per second.
    pub const fn from_mbps(m: u64) -> BitsPerSec {
        BitsPerSec(m * 1_000_000)
    }
    /// From gigabits per second.
    pub const fn from_gbps(g: u64) -> BitsPerSec {
        BitsPerSec(g * 1_000_000_000)
    }
    /// As megabits per second.
    pub fn as_mbps(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time to serialise `bytes` at this rate (rounded up to a whole nanosecond).
    /// A zero rate gives `Nanos(u64::MAX)`.
    pub fn serialization_time(self, bytes: Bytes) -> Nanos {
        if self.0 == 0 {
            return Nanos(u64::MAX);
        }
        let bits = bytes.0 as u128 * 8 * 1_000_000_000;
        Nanos(bits.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes carried in `t` at this rate (rounded down).
    pub fn bytes_in(self, t: Nanos) -> Bytes {
        Bytes((self.0 as u128 * t.0 as u128 / 8 / 1_000_000_000) as u64)
    }
}

macro_rules! arith {
    ($t:ident) => {
        impl Add for $t {
            type Output = $t;
            fn add(self, o: $t) -> $t {
                $t(self.0 + o.0)
            }
        }
        impl AddAssign for $t {
            fn add_assign(&mut self, o: $t) {
                self.0 += o.0;
            }
        }
        impl Sub for $t {
            type Output = $t;
            fn sub(self, o: $t) -> $t {
                $t(self.0 - o.0)
            }
        }
    };
}
arith!(Bytes);
arith!(Nanos);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= 1_000_000_000 {
            write!(f, "{:.3} s", n as f64 / 1e9)
        } else if n >= 1_000_000 {
            write!(f, "{:.3} ms", n as f64 / 1e6)
        } else if n >= 1_000 {
            write!(f, "{:.3} µs", n as f64 / 1e3)
        } else {
            write!(f, "{n} ns")
        }
    }
}
impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e9 {
            write!(f, "{} Gbit/s", b / 1e9)
        } else {
            write!(f, "{} Mbit/s", b / 1e6)
        }
    }
}
impl fmt::Display for Packets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} pkts", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_of_a_1500_byte_packet_at_10g_is_1200ns() {
        assert_eq!(BitsPerSec::from_gbps(10).serialization_time(Bytes(1500)), Nanos(1200));
    }

    #[test]
    fn bytes_in_inverts_serialization_time() {
        let r = BitsPerSec::from_mbps(100);
        assert_eq!(r.bytes_in(r.serialization_time(Bytes(125_000))), Bytes(125_000));
    }

    #[test]
    fn zero_rate_never_finishes() {
        assert_eq!(BitsPerSec(0).serialization_time(Bytes(1)), Nanos(u64::MAX));
    }
}
