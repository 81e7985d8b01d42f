//! The description of the knob space: which knobs exist, their physical ranges and scales.
//!
//! This module only describes the space; the controller core validates it, normalises
//! configurations into `[0,1]` coordinates and maps them back.

use crate::{Bytes, CongestionControl, Dscp, NetworkConfig, SpecError};
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

/// A categorical knob of one class: its TCP congestion-control algorithm, chosen from a set the
/// operator allows (and the hosts offer). ECN comes with the choice: the DCTCP family runs
/// with it, the others without ([`CongestionControl::ecn`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoricalSpec {
    /// The class.
    pub dscp: Dscp,
    /// The allowed algorithms (at least two, no repeats). The first is what a class whose
    /// configuration leaves `congestion_control` unset runs: list the hosts' default first.
    pub congestion_control: Vec<CongestionControl>,
}

/// The whole knob space: hypercube knobs, simplex blocks and categorical knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobSpace {
    /// Hypercube knobs, in coordinate order.
    #[serde(default)]
    pub knobs: Vec<KnobSpec>,
    /// Simplex blocks, after the hypercube coordinates.
    #[serde(default)]
    pub simplexes: Vec<SimplexSpec>,
    /// Categorical knobs, after the simplex blocks (none by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categorical: Vec<CategoricalSpec>,
}

impl KnobSpace {
    /// Checks the space against the classes it tunes: every knob and simplex names a declared
    /// class, ranges are ordered (log-scaled ones positive), no knob is declared twice, a
    /// simplex spans at least two classes with a floor in [0, 1/n). Errors name the field
    /// (`knobs[1].max`, `simplexes[0].floor`).
    pub fn validate_for(&self, dscps: &[Dscp]) -> Result<(), SpecError> {
        let space = self;
        for (i, k) in space.knobs.iter().enumerate() {
            let f = format!("knobs[{i}]");
            if !dscps.contains(&k.dscp) {
                return Err(SpecError::invalid(
                    format!("{f}.dscp"),
                    k.dscp,
                    "no declared class has this DSCP",
                ));
            }
            if !(k.min.is_finite() && k.max.is_finite() && k.min < k.max) {
                return Err(SpecError::invalid(
                    format!("{f}.max"),
                    k.max,
                    format!("the range needs min < max (min = {})", k.min),
                ));
            }
            if k.scale == Scale::Log && k.min <= 0.0 {
                return Err(SpecError::invalid(
                    format!("{f}.min"),
                    k.min,
                    "a log-scaled knob needs min > 0",
                ));
            }
            if space.knobs[..i].iter().any(|o| o.dscp == k.dscp && o.kind == k.kind) {
                return Err(SpecError::invalid(
                    format!("{f}.kind"),
                    k.kind.as_str(),
                    "this knob is declared twice",
                ));
            }
        }
        for (i, s) in space.simplexes.iter().enumerate() {
            let f = format!("simplexes[{i}]");
            if s.classes.len() < 2 {
                return Err(SpecError::invalid(
                    format!("{f}.classes"),
                    format!("{} classes", s.classes.len()),
                    "a weight simplex spans at least two classes",
                ));
            }
            if let Some(d) = s.classes.iter().find(|d| !dscps.contains(d)) {
                return Err(SpecError::invalid(
                    format!("{f}.classes"),
                    d,
                    "no declared class has this DSCP",
                ));
            }
            let n = s.classes.len() as f64;
            if !(s.floor.is_finite() && s.floor >= 0.0 && s.floor < 1.0 / n) {
                return Err(SpecError::invalid(
                    format!("{f}.floor"),
                    s.floor,
                    format!("the weight floor must be in [0, 1/{n})"),
                ));
            }
        }
        for (i, c) in space.categorical.iter().enumerate() {
            let f = format!("categorical[{i}]");
            if !dscps.contains(&c.dscp) {
                return Err(SpecError::invalid(
                    format!("{f}.dscp"),
                    c.dscp,
                    "no declared class has this DSCP",
                ));
            }
            if space.categorical[..i].iter().any(|o| o.dscp == c.dscp) {
                return Err(SpecError::invalid(
                    format!("{f}.dscp"),
                    c.dscp,
                    format!("class {} has a congestion-control knob already", c.dscp.name()),
                ));
            }
            let names: Vec<&str> = c.congestion_control.iter().map(|a| a.name()).collect();
            if names.len() < 2 {
                return Err(SpecError::invalid(
                    format!("{f}.congestion_control"),
                    format!("{names:?}"),
                    format!(
                        "class {} needs at least two algorithms to choose from (or no categorical knob)",
                        c.dscp.name()
                    ),
                ));
            }
            if let Some(j) = (1..names.len()).find(|&j| names[..j].contains(&names[j])) {
                return Err(SpecError::invalid(
                    format!("{f}.congestion_control[{j}]"),
                    names[j],
                    format!("class {} lists this algorithm twice", c.dscp.name()),
                ));
            }
        }
        Ok(())
    }

    /// `cfg` with each categorical class's unset `congestion_control` made explicit as the
    /// knob's first choice — what that class's hosts run ([`CategoricalSpec`]). The controller
    /// reads an unset algorithm as that choice and the models as DCTCP; a start resolved here
    /// is the same configuration to both, and to the network.
    pub fn resolve_unset(&self, cfg: &NetworkConfig) -> NetworkConfig {
        let mut out = cfg.clone();
        for cat in &self.categorical {
            if let Some(c) = out.classes.iter_mut().find(|c| c.dscp == cat.dscp) {
                if c.congestion_control.is_none() {
                    c.congestion_control = cat.congestion_control.first().cloned();
                }
            }
        }
        out
    }

    /// The paper's nine-knob space for the given classes: one weight simplex over all classes
    /// (none for a single class), and per class an ECN threshold K and an initial window, both
    /// log-scaled.
    ///
    /// K spans 2 to 200 full-size packets (3 kB to 300 kB); at 100 Mbit/s that is 0.24 ms to
    /// 24 ms of queueing, at 10 Gbit/s 2.4 µs to 240 µs. The initial window spans 2 to 64
    /// packets (Linux's default is 10). The weight floor of 0.05 keeps every class served.
    pub fn per_class_default(dscps: &[Dscp]) -> KnobSpace {
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
        // One class has no weight to share: its space is its K and initial window.
        let simplexes = if dscps.len() >= 2 {
            vec![SimplexSpec {
                name: "weights".into(),
                classes: dscps.to_vec(),
                floor: 0.05,
            }]
        } else {
            Vec::new()
        };
        KnobSpace {
            knobs,
            simplexes,
            categorical: Vec::new(),
        }
    }

    /// Number of optimisation coordinates: one per hypercube knob, one per simplex class, one
    /// per categorical knob.
    pub fn dim(&self) -> usize {
        self.knobs.len() + self.simplexes.iter().map(|s| s.classes.len()).sum::<usize>() + self.categorical.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> Vec<Dscp> {
        vec![Dscp::AF11, Dscp::AF21, Dscp::AF31]
    }

    #[test]
    fn one_class_has_no_weights_to_share() {
        let s = KnobSpace::per_class_default(&[Dscp::AF11]);
        assert!(s.simplexes.is_empty());
        assert_eq!(s.knobs.len(), 2);
        s.validate_for(&[Dscp::AF11]).expect("a single class's K and initcwnd");
    }

    #[test]
    fn an_unset_algorithm_resolves_to_the_first_choice_of_its_knob() {
        let cc = |n: &str| CongestionControl::new(n).unwrap();
        let mut space = KnobSpace::per_class_default(&classes());
        space.categorical.push(CategoricalSpec {
            dscp: Dscp::AF31,
            congestion_control: vec![cc("cubic"), cc("dctcp")],
        });
        let mut cfg = NetworkConfig::uniform(&classes(), Bytes(30_000), crate::Packets(10));
        let r = space.resolve_unset(&cfg);
        assert_eq!(r.classes[2].congestion_control, Some(cc("cubic")));
        // Classes without a categorical knob stay unset; an explicit choice is kept.
        assert_eq!(r.classes[0].congestion_control, None);
        cfg.classes[2].congestion_control = Some(cc("dctcp"));
        assert_eq!(space.resolve_unset(&cfg), cfg);
    }

    #[test]
    fn the_default_space_is_valid_for_its_classes() {
        let s = KnobSpace::per_class_default(&classes());
        s.validate_for(&classes()).expect("valid");
        let e = s
            .validate_for(&classes()[..2])
            .expect_err("a knob of an undeclared class");
        assert!(e.to_string().contains("dscp"), "{e}");
    }

    #[test]
    fn each_broken_rule_names_its_field() {
        let base = KnobSpace::per_class_default(&classes());
        let mut reversed = base.clone();
        reversed.knobs[0].min = reversed.knobs[0].max;
        let mut twice = base.clone();
        let dup = twice.knobs[0].clone();
        twice.knobs.push(dup);
        let mut floor = base.clone();
        floor.simplexes[0].floor = 0.5;
        let mut log = base.clone();
        if let Some(k) = log.knobs.iter_mut().find(|k| k.scale == Scale::Log) {
            k.min = 0.0;
        }
        for (space, field) in [
            (reversed, "knobs[0].max"),
            (twice, ".kind"),
            (floor, "simplexes[0].floor"),
            (log, ".min"),
        ] {
            let e = space.validate_for(&classes()).expect_err(field).to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }

    #[test]
    fn categorical_knobs_parse_from_toml_and_each_broken_rule_names_its_key() {
        let text = |cats: &str| {
            format!(
                "[[knobs]]\nkind = \"ecn_threshold\"\ndscp = 10\nmin = 3000.0\nmax = 300000.0\nscale = \"log\"\n{cats}"
            )
        };
        let ok: KnobSpace = toml::from_str(&text(
            "[[categorical]]\ndscp = 18\ncongestion_control = [\"dctcp\", \"cubic\", \"reno\"]\n",
        ))
        .unwrap();
        ok.validate_for(&classes()).unwrap();
        assert_eq!(ok.categorical[0].congestion_control[1].name(), "cubic");
        assert_eq!(ok.dim(), 2);
        // A name that cannot be a kernel algorithm fails at parse time, naming it.
        let e = toml::from_str::<KnobSpace>(&text(
            "[[categorical]]\ndscp = 18\ncongestion_control = [\"dctcp\", \"Cubic!\"]\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("Cubic!") && e.contains("congestion_control"), "{e}");
        let e = toml::from_str::<KnobSpace>(&text("[[categorical]]\ndscp = 18\nalgorithms = [\"dctcp\"]\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("algorithms"), "{e}");
        for (cats, key, what) in [
            (
                "dscp = 12\ncongestion_control = [\"dctcp\", \"cubic\"]",
                "categorical[0].dscp",
                "no declared class",
            ),
            (
                "dscp = 18\ncongestion_control = [\"cubic\"]",
                "categorical[0].congestion_control",
                "AF21 needs at least two",
            ),
            (
                "dscp = 18\ncongestion_control = [\"cubic\", \"reno\", \"cubic\"]",
                "categorical[0].congestion_control[2] = cubic",
                "AF21 lists this algorithm twice",
            ),
        ] {
            let s: KnobSpace = toml::from_str(&text(&format!("[[categorical]]\n{cats}\n"))).unwrap();
            let e = s.validate_for(&classes()).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(what), "{key}: {e}");
        }
        let mut twice = ok.clone();
        twice.categorical.push(ok.categorical[0].clone());
        let e = twice.validate_for(&classes()).unwrap_err().to_string();
        assert!(e.contains("categorical[1].dscp") && e.contains("already"), "{e}");
    }
}
