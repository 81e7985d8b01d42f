//! The part of a [`NetworkConfig`] one actuator owns, as read back from the system.
//!
//! Each actuator owns a subset of the knobs ([`Knobs`]): the tc actuator the weights, ECN
//! thresholds and buffers of a port, the iproute actuator the initial windows and congestion
//! control. Reading back gives
//! a [`PartialConfig`] with only those knobs set; [`PartialConfig::merge`] combines the parts of
//! several actuators and [`PartialConfig::overlay`] writes them over a full configuration.

use polyphony_spec::{Bytes, CongestionControl, Dscp, NetworkConfig, Packets};
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
    /// Per-class congestion-control algorithms.
    pub congestion_control: bool,
}

impl Knobs {
    /// The knobs set by either `self` or `other`.
    pub fn union(self, other: Knobs) -> Knobs {
        Knobs {
            weight: self.weight || other.weight,
            ecn_threshold: self.ecn_threshold || other.ecn_threshold,
            init_cwnd: self.init_cwnd || other.init_cwnd,
            buffer: self.buffer || other.buffer,
            congestion_control: self.congestion_control || other.congestion_control,
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
    /// Congestion-control algorithm.
    pub congestion_control: Option<CongestionControl>,
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
                congestion_control: None,
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
            c.congestion_control = o.congestion_control.clone().or(c.congestion_control.take());
        }
    }

    /// `base` with every knob this part sets written over it (classes `base` lacks are ignored).
    ///
    /// When this part gives a weight to every class of `base`, the weights are rescaled to sum
    /// to 1: devices store weights rounded (HTB rates to what tc prints, switch weights to whole
    /// percentages), so the raw shares read back can miss 1 by more than
    /// `NetworkConfig::validate` allows (10⁻⁶), while they stand for the same split of the port.
    pub fn overlay(&self, base: &NetworkConfig) -> NetworkConfig {
        let mut out = base.clone();
        let weights: Option<Vec<f64>> = out
            .classes
            .iter()
            .map(|c| self.class(c.dscp).and_then(|p| p.weight))
            .collect();
        let total: f64 = weights.iter().flatten().sum();
        for c in &mut out.classes {
            if let Some(p) = self.class(c.dscp) {
                if let Some(w) = p.weight {
                    c.weight = match &weights {
                        Some(_) if total > 0.0 => w / total,
                        _ => w,
                    };
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
                if p.congestion_control.is_some() {
                    c.congestion_control = p.congestion_control.clone();
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

    #[test]
    fn weights_read_back_rounded_are_rescaled_onto_the_simplex() {
        let dscps = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
        let base = NetworkConfig::uniform(&dscps, Bytes(30_000), Packets(10));
        let mut p = PartialConfig::default();
        for d in dscps {
            p.class_mut(d).weight = Some(0.33333); // 33333 kbit/s of 100 Mbit/s
        }
        let full = p.overlay(&base);
        assert_eq!(full.validate(), Ok(()));
        assert!((full.classes[0].weight - 1.0 / 3.0).abs() < 1e-12);
    }
}
