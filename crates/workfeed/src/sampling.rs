//! Deterministic hash-based downsampling with weights.
//!
//! A connection is kept iff `u(key) < p`, where `u` maps the connection's canonical key
//! ([`ConnKey`]: client then server address and port) to [0, 1) with a fixed hash (splitmix64
//! finalisers over the 12 key bytes — specified here, so every agent and aggregator of any build
//! decides alike). Both sockets of a connection therefore share the decision, and nested sampling
//! is consistent: keeping at p then at p' keeps exactly the connections with u < min(p, p'). A
//! kept record carries its keep probability; its weight is 1/p, so Σ weight·size is an unbiased
//! estimate of the true total (Horvitz–Thompson). Pure.

use crate::record::ConnKey;
use thiserror::Error;

/// A keep probability in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct KeepProbability(f64);

/// A keep probability outside (0, 1].
#[derive(Debug, Error, Clone, PartialEq)]
#[error("sampling probability {0} is outside (0, 1]: use e.g. 0.25 to keep one connection in four")]
pub struct BadProbability(pub f64);

impl KeepProbability {
    /// Keep everything.
    pub const ALL: KeepProbability = KeepProbability(1.0);

    /// Checked constructor.
    pub fn new(p: f64) -> Result<KeepProbability, BadProbability> {
        if p > 0.0 && p <= 1.0 {
            Ok(KeepProbability(p))
        } else {
            Err(BadProbability(p))
        }
    }
    /// The probability.
    pub fn get(self) -> f64 {
        self.0
    }
    /// The weight a kept record carries.
    pub fn weight(self) -> f64 {
        1.0 / self.0
    }
    /// Whether the connection is kept.
    pub fn keeps(self, key: &ConnKey) -> bool {
        self.0 >= 1.0 || unit_hash(key) < self.0
    }
    /// The probability of keeping under both this and `other` (the hash is shared).
    pub fn and(self, other: KeepProbability) -> KeepProbability {
        KeepProbability(self.0.min(other.0))
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The connection's position in [0, 1).
pub fn unit_hash(key: &ConnKey) -> f64 {
    let b = key.to_bytes();
    let a = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    let c = u64::from(u32::from_be_bytes([b[8], b[9], b[10], b[11]]));
    let h = mix(mix(a ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(c));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn key(port: u16) -> ConnKey {
        ConnKey {
            client: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1, 2), port),
            server: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 5001),
        }
    }

    #[test]
    fn keeps_about_a_quarter_and_the_weights_reconstruct_the_count() {
        let p = KeepProbability::new(0.25).unwrap();
        let kept = (10_000..30_000).filter(|&port| p.keeps(&key(port))).count();
        let estimate = kept as f64 * p.weight();
        assert!((estimate - 20_000.0).abs() < 20_000.0 * 0.05, "estimate {estimate}");
    }

    #[test]
    fn nested_sampling_equals_sampling_at_the_minimum() {
        let (a, b) = (KeepProbability::new(0.5).unwrap(), KeepProbability::new(0.2).unwrap());
        for port in 1000..3000 {
            let k = key(port);
            assert_eq!(a.keeps(&k) && b.keeps(&k), a.and(b).keeps(&k));
        }
    }

    #[test]
    fn probabilities_outside_the_unit_interval_are_refused() {
        for p in [0.0, -1.0, 1.5, f64::NAN] {
            assert!(KeepProbability::new(p).is_err(), "{p}");
        }
    }
}
