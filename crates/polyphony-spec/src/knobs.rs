//! The description of the knob space: which knobs exist, their physical ranges and scales.
//!
//! This module only describes the space; the controller core validates it, normalises
//! configurations into `[0,1]` coordinates and maps them back.

use crate::{BitsPerSec, Bytes, Dscp};
use serde::{Deserialize, Serialize};

/// What a knob controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobKind {
    /// Per-class ECN marking threshold K, in bytes.
    EcnThreshold,
    /// Per-class initial congestion window, in packets.
    InitCwnd,
    /// Per-class queue limit, in bytes.
    Buffer,
}

impl KnobKind {
    /// The name used in metrics, logs and configuration keys.
    pub fn as_str(self) -> &'static str {
        match self {
            KnobKind::EcnThreshold => "ecn_threshold",
            KnobKind::InitCwnd => "init_cwnd",
            KnobKind::Buffer => "buffer",
        }
    }
}

/// How a knob's physical range maps onto `[0,1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// `u = (v − min) / (max − min)`.
    #[default]
    Linear,
    /// `u = ln(v/min) / ln(max/min)`; for ranges spanning decades. Needs `min > 0`.
    Log,
}

/// One hypercube knob of one class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobSpec {
    /// What the knob controls.
    pub kind: KnobKind,
    /// Which class it belongs to.
    pub dscp: Dscp,
    /// Lowest physical value.
    pub min: f64,
    /// Highest physical value.
    pub max: f64,
    /// Mapping onto `[0,1]`.
    #[serde(default)]
    pub scale: Scale,
}

impl KnobSpec {
    /// `"AF11.ecn_threshold"`: the knob's name in errors, metrics and logs.
    pub fn name(&self) -> String {
        format!("{}.{}", self.dscp.name(), self.kind.as_str())
    }
}

/// A simplex block: the scheduling weights of a set of classes, which sum to 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimplexSpec {
    /// Block name, e.g. `"weights"`.
    pub name: String,
    /// The classes whose weights the block holds (at least two).
    pub classes: Vec<Dscp>,
    /// Smallest weight any class may be given (keeps every class served); 0 ≤ floor < 1/n.
    #[serde(default)]
    pub floor: f64,
}

/// The whole knob space: hypercube knobs and simplex blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobSpace {
    /// Hypercube knobs, in coordinate order.
    #[serde(default)]
    pub knobs: Vec<KnobSpec>,
    /// Simplex blocks, after the hypercube coordinates.
    #[serde(default)]
    pub simplexes: Vec<SimplexSpec>,
}

impl KnobSpace {
    /// The paper's nine-knob space for the given classes: one weight simplex over all classes,
    /// and per class an ECN threshold K and an initial window, both log-scaled.
    ///
    /// K spans 2 to 200 full-size packets (3 kB to 300 kB); at 100 Mbit/s that is 0.24 ms to
    /// 24 ms of queueing, at 10 Gbit/s 2.4 µs to 240 µs. The initial window spans 2 to 64
    /// packets (Linux's default is 10). The weight floor of 0.05 keeps every class served.
    pub fn per_class_default(dscps: &[Dscp], _bottleneck: BitsPerSec) -> KnobSpace {
        let mut knobs = Vec::new();
        for &dscp in dscps {
            knobs.push(KnobSpec {
                kind: KnobKind::EcnThreshold,
                dscp,
                min: Bytes(3_000).0 as f64,
                max: Bytes(300_000).0 as f64,
                scale: Scale::Log,
            });
            knobs.push(KnobSpec {
                kind: KnobKind::InitCwnd,
                dscp,
                min: 2.0,
                max: 64.0,
                scale: Scale::Log,
            });
        }
        KnobSpace {
            knobs,
            simplexes: vec![SimplexSpec {
                name: "weights".into(),
                classes: dscps.to_vec(),
                floor: 0.05,
            }],
        }
    }

    /// Number of optimisation coordinates: one per hypercube knob, one per simplex class.
    pub fn dim(&self) -> usize {
        self.knobs.len() + self.simplexes.iter().map(|s| s.classes.len()).sum::<usize>()
    }
}
