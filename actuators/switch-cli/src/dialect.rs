//! What a vendor dialect must provide: per-queue settings, their rendering as CLI input, and
//! the parser of what the switch shows.

use crate::config::VendorConfig;
use polyphony_actuator::{Command, NativeState};
use polyphony_spec::{Bytes, Dscp};
use std::fmt;

/// One per-queue setting.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueItem {
    /// The queue's scheduling weight.
    Weight {
        /// Egress queue.
        queue: u8,
        /// The class it serves.
        dscp: Dscp,
    },
    /// The queue's WRED/ECN profile.
    Ecn {
        /// Egress queue.
        queue: u8,
        /// The class it serves.
        dscp: Dscp,
    },
}

impl QueueItem {
    /// The queue.
    pub fn queue(&self) -> u8 {
        match self {
            QueueItem::Weight { queue, .. } | QueueItem::Ecn { queue, .. } => *queue,
        }
    }
    /// The class.
    pub fn dscp(&self) -> Dscp {
        match self {
            QueueItem::Weight { dscp, .. } | QueueItem::Ecn { dscp, .. } => *dscp,
        }
    }
}

impl fmt::Display for QueueItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueItem::Weight { queue, dscp } => {
                write!(f, "queue {queue} ({}) weight", dscp.name())
            }
            QueueItem::Ecn { queue, dscp } => write!(f, "queue {queue} ({}) ecn", dscp.name()),
        }
    }
}

/// A per-queue setting's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueValue {
    /// Scheduling weight as a whole percentage of the port.
    Percent(u8),
    /// ECN marking between `min` and `max` queue bytes (marking probability 100 % at `max`).
    Thresholds {
        /// Marking starts.
        min: Bytes,
        /// Every packet is marked.
        max: Bytes,
    },
}

impl fmt::Display for QueueValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueValue::Percent(p) => write!(f, "{p}%"),
            QueueValue::Thresholds { min, max } => write!(f, "mark {}..{} B", min.0, max.0),
        }
    }
}

/// A vendor CLI.
pub trait Dialect: Send + Sync + fmt::Debug {
    /// The dialect's name in the configuration.
    fn name(&self) -> &'static str;
    /// The ECN setting that realises threshold K (rounded to the switch's unit).
    fn thresholds(&self, k: Bytes) -> QueueValue;
    /// The largest K the switch accepts.
    fn max_threshold(&self) -> Bytes;
    /// The command (before the SSH transport) that sets `item` to `value` (`None`: remove).
    fn set(&self, cfg: &VendorConfig, item: &QueueItem, value: Option<&QueueValue>) -> Command;
    /// The commands (before the transport) whose outputs [`Dialect::parse`] reads.
    fn read(&self, cfg: &VendorConfig) -> Vec<Command>;
    /// The settings found in the outputs of [`Dialect::read`], for the configured queues.
    fn parse(&self, cfg: &VendorConfig, outputs: &[String]) -> Result<NativeState<QueueItem, QueueValue>, String>;
    /// The one-time script that attaches the per-queue objects to the ports (for the operator).
    fn setup(&self, cfg: &VendorConfig) -> String;
}

/// Whole percentages for `weights` (largest-remainder rounding), each at least 1, summing to
/// 100.
pub fn percentages(weights: &[f64]) -> Vec<u8> {
    let total: f64 = weights.iter().sum();
    if weights.is_empty() || total <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / total * 100.0).collect();
    let mut p: Vec<i64> = exact.iter().map(|x| (x.floor() as i64).max(1)).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let mut sum: i64 = p.iter().sum();
    let mut i = 0;
    while sum < 100 {
        p[order[i % order.len()]] += 1;
        sum += 1;
        i += 1;
    }
    while sum > 100 {
        // Take from the largest share (never below 1).
        let (j, _) = p.iter().enumerate().max_by_key(|(_, v)| **v).unwrap_or((0, &0));
        if p[j] <= 1 {
            break;
        }
        p[j] -= 1;
        sum -= 1;
    }
    p.into_iter().map(|v| v.clamp(0, 100) as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_sum_to_100() {
        assert_eq!(percentages(&[1.0 / 3.0; 3]), vec![34, 33, 33]);
        assert_eq!(percentages(&[0.5, 0.3, 0.2]), vec![50, 30, 20]);
        assert_eq!(percentages(&[0.001, 0.999]), vec![1, 99]);
        let p = percentages(&[0.126, 0.437, 0.437]);
        assert_eq!(p.iter().map(|&x| x as u32).sum::<u32>(), 100);
    }
}
