//! A network configuration in physical units: what actuators apply and models evaluate.

use crate::{Bytes, Dscp, Packets, SpecError};
use serde::{Deserialize, Serialize};

/// The knobs of one traffic class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// The class these knobs belong to.
    pub dscp: Dscp,
    /// Scheduling weight: this class's guaranteed share of a congested port. The weights of all
    /// classes lie on the simplex (positive, summing to 1).
    pub weight: f64,
    /// ECN marking threshold K: a packet is CE-marked when the class queue exceeds K bytes
    /// (where the marker is time based, the sojourn threshold is K·8/C for port rate C).
    pub ecn_threshold: Bytes,
    /// Initial congestion window of the class's connections.
    pub init_cwnd: Packets,
    /// Per-class queue limit at a port, if the class has its own buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Bytes>,
    /// The TCP congestion-control algorithm of the class's connections; `None`: the hosts'
    /// default, left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_control: Option<CongestionControl>,
}

/// A TCP congestion-control algorithm by its kernel name (`dctcp`, `cubic`, `reno`, `bbr`, or
/// a BPF `struct_ops` one such as the project's `pp_dctcp`): 1–15 characters of `a-z`, `0-9`
/// and `_` (the kernel's `TCP_CA_NAME_MAX` is 16 with the terminating NUL). Whether a host
/// offers it is the actuator's check, not the type's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CongestionControl(String);

impl CongestionControl {
    /// The algorithm called `name`, or an error naming it when it cannot be a kernel name.
    pub fn new(name: impl Into<String>) -> Result<CongestionControl, SpecError> {
        let name = name.into();
        let ok = (1..=15).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(CongestionControl(name))
        } else {
            Err(SpecError::invalid(
                "congestion_control",
                format!("{name:?}"),
                "a kernel congestion-control name: 1–15 characters of a-z, 0-9 and _ (e.g. dctcp, cubic, reno, bbr)",
            ))
        }
    }

    /// The kernel name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Whether the algorithm's connections negotiate ECN: the DCTCP family (`dctcp` and BPF
    /// variants whose name contains it) reacts to CE marks; loss-based and model-based ones
    /// (`cubic`, `reno`, `bbr`) run without ECN.
    pub fn ecn(&self) -> bool {
        self.0.contains("dctcp")
    }
}

impl TryFrom<String> for CongestionControl {
    type Error = SpecError;
    fn try_from(s: String) -> Result<Self, SpecError> {
        CongestionControl::new(s)
    }
}

impl std::str::FromStr for CongestionControl {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        CongestionControl::new(s)
    }
}

impl From<CongestionControl> for String {
    fn from(c: CongestionControl) -> String {
        c.0
    }
}

impl std::fmt::Display for CongestionControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl ClassConfig {
    /// The knobs of class `dscp` without a buffer limit of its own.
    pub fn new(dscp: Dscp, weight: f64, ecn_threshold: Bytes, init_cwnd: Packets) -> ClassConfig {
        ClassConfig {
            dscp,
            weight,
            ecn_threshold,
            init_cwnd,
            buffer: None,
            congestion_control: None,
        }
    }
}

/// A whole network configuration: per-class knobs plus per-port settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// One entry per class, in the scenario's class order.
    pub classes: Vec<ClassConfig>,
    /// Shared buffer of each switch port, if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_buffer: Option<Bytes>,
}

/// Tolerance on the sum of the weights.
pub const WEIGHT_SUM_TOLERANCE: f64 = 1e-6;

impl NetworkConfig {
    /// The knobs of class `dscp`.
    pub fn class(&self, dscp: Dscp) -> Option<&ClassConfig> {
        self.classes.iter().find(|c| c.dscp == dscp)
    }

    /// Checks that this configuration has exactly the classes `dscps` (no more, no fewer); the
    /// error (key `field`) names the missing and the unexpected ones.
    pub fn check_classes(&self, dscps: &[Dscp], field: &str) -> Result<(), SpecError> {
        let name = |d: &Dscp| match d.name() {
            n if n.starts_with("DSCP") => format!("DSCP {d}"),
            n => format!("{n} (DSCP {d})"),
        };
        let missing: Vec<String> = dscps.iter().filter(|d| self.class(**d).is_none()).map(name).collect();
        let extra: Vec<String> = self
            .classes
            .iter()
            .filter(|c| !dscps.contains(&c.dscp))
            .map(|c| name(&c.dscp))
            .collect();
        if missing.is_empty() && extra.is_empty() {
            return Ok(());
        }
        let mut why = Vec::new();
        if !missing.is_empty() {
            why.push(format!("missing {}", missing.join(", ")));
        }
        if !extra.is_empty() {
            why.push(format!("not a class here: {}", extra.join(", ")));
        }
        let all: Vec<String> = dscps.iter().map(name).collect();
        Err(SpecError::invalid(
            field,
            format!("{} classes", self.classes.len()),
            format!("{}; configure exactly {}", why.join("; "), all.join(", ")),
        ))
    }

    /// Checks that this configuration can be applied: weights on the simplex, K > 0,
    /// initcwnd ≥ 1, buffers > 0, no class twice. The error names the class and the knob.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.classes.is_empty() {
            return Err(SpecError::invalid(
                "classes",
                "[]",
                "a configuration needs at least one class",
            ));
        }
        let mut sum = 0.0;
        for (i, c) in self.classes.iter().enumerate() {
            // The label is built only for an error: a valid configuration formats nothing
            // (the models check every configuration of every batch).
            let who = || format!("class {} (DSCP {})", c.dscp.name(), c.dscp);
            if self.classes[..i].iter().any(|o| o.dscp == c.dscp) {
                return Err(SpecError::invalid(who(), c.dscp, "class configured twice"));
            }
            if !(c.weight.is_finite() && c.weight > 0.0 && c.weight <= 1.0) {
                return Err(SpecError::invalid(
                    format!("{}.weight", who()),
                    c.weight,
                    "a scheduling weight is a share in (0, 1]",
                ));
            }
            sum += c.weight;
            if c.ecn_threshold.0 == 0 {
                return Err(SpecError::invalid(
                    format!("{}.ecn_threshold", who()),
                    c.ecn_threshold,
                    "the ECN threshold K must be positive",
                ));
            }
            if c.init_cwnd.0 == 0 {
                return Err(SpecError::invalid(
                    format!("{}.init_cwnd", who()),
                    c.init_cwnd,
                    "the initial congestion window must be at least 1 packet",
                ));
            }
            if c.buffer == Some(Bytes(0)) {
                return Err(SpecError::invalid(
                    format!("{}.buffer", who()),
                    "0 B",
                    "a class buffer must be positive",
                ));
            }
        }
        if (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
            return Err(SpecError::invalid(
                "weights",
                sum,
                "the class weights must sum to 1 (they are shares of the port)",
            ));
        }
        if self.port_buffer == Some(Bytes(0)) {
            return Err(SpecError::invalid(
                "port_buffer",
                "0 B",
                "a port buffer must be positive",
            ));
        }
        Ok(())
    }

    /// Equal weights, the given K and initcwnd for every class.
    pub fn uniform(dscps: &[Dscp], ecn_threshold: Bytes, init_cwnd: Packets) -> NetworkConfig {
        let w = 1.0 / dscps.len().max(1) as f64;
        NetworkConfig {
            classes: dscps
                .iter()
                .map(|&dscp| ClassConfig::new(dscp, w, ecn_threshold, init_cwnd))
                .collect(),
            port_buffer: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> NetworkConfig {
        NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21, Dscp::AF31], Bytes(30_000), Packets(10))
    }

    #[test]
    fn congestion_control_names_are_kernel_names_and_dctcp_brings_ecn() {
        for ok in ["dctcp", "cubic", "reno", "bbr", "pp_dctcp"] {
            assert_eq!(CongestionControl::new(ok).unwrap().name(), ok);
        }
        assert!(CongestionControl::new("pp_dctcp").unwrap().ecn());
        assert!(!CongestionControl::new("cubic").unwrap().ecn());
        for bad in ["", "Cubic", "cubic;reboot", "a_name_of_sixteen"] {
            let e = CongestionControl::new(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        let c: ClassConfig = serde_json::from_str(
            r#"{"dscp": 10, "weight": 1.0, "ecn_threshold": 30000, "init_cwnd": 10, "congestion_control": "bbr"}"#,
        )
        .unwrap();
        assert_eq!(c.congestion_control.as_ref().map(|c| c.name()), Some("bbr"));
        let e = serde_json::from_str::<ClassConfig>(
            r#"{"dscp": 10, "weight": 1.0, "ecn_threshold": 30000, "init_cwnd": 10, "congestion_control": "BBR!"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("BBR!"), "{e}");
        let plain = serde_json::to_string(&ClassConfig::new(Dscp::AF11, 1.0, Bytes(1), Packets(1))).unwrap();
        assert!(!plain.contains("congestion_control"), "{plain}");
    }

    #[test]
    fn uniform_is_valid() {
        assert_eq!(cfg().validate(), Ok(()));
    }

    #[test]
    fn weights_off_the_simplex_are_rejected() {
        let mut c = cfg();
        c.classes[0].weight = 0.9;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("weights"), "{e}");
    }

    #[test]
    fn zero_k_names_class_and_knob() {
        let mut c = cfg();
        c.classes[1].ecn_threshold = Bytes(0);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("AF21") && e.contains("ecn_threshold"), "{e}");
    }

    #[test]
    fn zero_initcwnd_names_class_and_knob() {
        let mut c = cfg();
        c.classes[2].init_cwnd = Packets(0);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("AF31") && e.contains("init_cwnd"), "{e}");
    }

    #[test]
    fn every_rule_reports_its_field_value_and_remedy() {
        type Edit = fn(&mut NetworkConfig);
        let msg = |f: Edit| {
            let mut c = cfg();
            f(&mut c);
            c.validate().map_err(|e| e.to_string())
        };
        let cases: [(Edit, &str); 8] = [
            (
                |c| c.classes.clear(),
                "classes = []: a configuration needs at least one class",
            ),
            (
                |c| c.classes[2].dscp = Dscp::AF11,
                "class AF11 (DSCP 10) = 10: class configured twice",
            ),
            (
                |c| c.classes[1].weight = f64::NAN,
                "class AF21 (DSCP 18).weight = NaN: a scheduling weight is a share in (0, 1]",
            ),
            (
                |c| c.classes[1].ecn_threshold = Bytes(0),
                "class AF21 (DSCP 18).ecn_threshold = 0 B: the ECN threshold K must be positive",
            ),
            (
                |c| c.classes[0].init_cwnd = Packets(0),
                "class AF11 (DSCP 10).init_cwnd = 0 pkts: the initial congestion window must be at least 1 packet",
            ),
            (
                |c| c.classes[2].buffer = Some(Bytes(0)),
                "class AF31 (DSCP 26).buffer = 0 B: a class buffer must be positive",
            ),
            (
                |c| c.classes[0].weight = 0.5,
                "weights = 1.1666666666666665: the class weights must sum to 1 (they are shares of the port)",
            ),
            (
                |c| c.port_buffer = Some(Bytes(0)),
                "port_buffer = 0 B: a port buffer must be positive",
            ),
        ];
        for (f, want) in cases {
            assert_eq!(msg(f), Err(want.to_string()));
        }
        assert_eq!(msg(|c| c.classes[0].buffer = Some(Bytes(1))), Ok(()));
    }

    #[test]
    fn a_configuration_for_other_classes_names_the_missing_and_the_extra() {
        let c = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        c.check_classes(&[Dscp::AF11, Dscp::AF21], "initial").unwrap();
        let e = c
            .check_classes(&[Dscp::AF11, Dscp::AF31], "initial")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "initial = 2 classes: missing AF31 (DSCP 26); not a class here: AF21 (DSCP 18); configure exactly AF11 (DSCP 10), AF31 (DSCP 26)"
        );
    }
}
