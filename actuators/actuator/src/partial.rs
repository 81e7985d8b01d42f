//! The part of a [`NetworkConfig`] one actuator owns, as read back from the system.
//!
//! Each actuator owns a subset of the knobs ([`Knobs`]): the tc actuator the weights, ECN
//! thresholds and buffers of a port, the iproute actuator the initial windows. Reading back gives
//! a [`PartialConfig`] with only those knobs set; [`PartialConfig::merge`] combines the parts of
//! several actuators and [`PartialConfig::overlay`] writes them over a full configuration.

use polyphony_spec::{Bytes, Dscp, NetworkConfig, Packets};
use serde::{Deserialize, Serialize};

/// Which per-class knobs an actuator sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Knobs {
    /// Scheduling weights.
    pub weight: bool,
    /// ECN marking thresholds.
    pub ecn_threshold: bool,
    /// Initial congestion windows.
    pub init_cwnd: bool,
    /// Per-class buffer limits.
    pub buffer: bool,
}

impl Knobs {
    /// The knobs set by either `self` or `other`.
    pub fn union(self, other: Knobs) -> Knobs {
        Knobs {
            weight: self.weight || other.weight,
            ecn_threshold: self.ecn_threshold || other.ecn_threshold,
            init_cwnd: self.init_cwnd || other.init_cwnd,
            buffer: self.buffer || other.buffer,
        }
    }
}

/// The knobs of one class that were read back; `None` = not owned, or not set on the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialClass {
    /// The class.
    pub dscp: Dscp,
    /// Scheduling weight (guaranteed rate / link rate).
    pub weight: Option<f64>,
    /// ECN marking threshold K.
    pub ecn_threshold: Option<Bytes>,
    /// Initial congestion window.
    pub init_cwnd: Option<Packets>,
    /// Per-class buffer limit.
    pub buffer: Option<Bytes>,
}

/// Knobs read back from the system, per class, in the order the actuator reports them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PartialConfig {
    /// One entry per class the actuator knows.
    pub classes: Vec<PartialClass>,
}

impl PartialConfig {
    /// The entry of class `dscp`, if present.
    pub fn class(&self, dscp: Dscp) -> Option<&PartialClass> {
        self.classes.iter().find(|c| c.dscp == dscp)
    }

    /// The entry of class `dscp`, created empty if absent.
    pub fn class_mut(&mut self, dscp: Dscp) -> &mut PartialClass {
        if let Some(i) = self.classes.iter().position(|c| c.dscp == dscp) {
            &mut self.classes[i]
        } else {
            self.classes.push(PartialClass {
                dscp,
                weight: None,
                ecn_threshold: None,
                init_cwnd: None,
                buffer: None,
            });
            let last = self.classes.len() - 1;
            &mut self.classes[last]
        }
    }

    /// Adds `other`'s knobs; where both set a knob, `other` wins.
    pub fn merge(&mut self, other: &PartialConfig) {
        for o in &other.classes {
            let c = self.class_mut(o.dscp);
            c.weight = o.weight.or(c.weight);
            c.ecn_threshold = o.ecn_threshold.or(c.ecn_threshold);
            c.init_cwnd = o.init_cwnd.or(c.init_cwnd);
            c.buffer = o.buffer.or(c.buffer);
        }
    }

    /// `base` with every knob this part sets written over it (classes `base` lacks are ignored).
    pub fn overlay(&self, base: &NetworkConfig) -> NetworkConfig {
        let mut out = base.clone();
        for c in &mut out.classes {
            if let Some(p) = self.class(c.dscp) {
                if let Some(w) = p.weight {
                    c.weight = w;
                }
                if let Some(k) = p.ecn_threshold {
                    c.ecn_threshold = k;
                }
                if let Some(n) = p.init_cwnd {
                    c.init_cwnd = n;
                }
                if p.buffer.is_some() {
                    c.buffer = p.buffer;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_overlay_combine_parts() {
        let base = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        let mut a = PartialConfig::default();
        a.class_mut(Dscp::AF11).weight = Some(0.7);
        a.class_mut(Dscp::AF21).weight = Some(0.3);
        let mut b = PartialConfig::default();
        b.class_mut(Dscp::AF21).init_cwnd = Some(Packets(32));
        a.merge(&b);
        let full = a.overlay(&base);
        assert_eq!(full.classes[0].weight, 0.7);
        assert_eq!(full.classes[1].weight, 0.3);
        assert_eq!(full.classes[1].init_cwnd, Packets(32));
        assert_eq!(full.classes[0].init_cwnd, Packets(10));
        assert_eq!(full.classes[0].ecn_threshold, Bytes(30_000));
    }
}
