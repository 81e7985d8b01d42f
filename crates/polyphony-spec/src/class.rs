//! Traffic classes (a DSCP code point each) and their service-level objectives.

use crate::{ClassSli, Nanos, SpecError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A Differentiated Services code point (6 bits, 0..=63).
///
/// The TOS byte carries it in its upper six bits: `tos = dscp << 2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Dscp(u8);

impl Dscp {
    /// AF11 (10), the paper's first class.
    pub const AF11: Dscp = Dscp(10);
    /// AF21 (18).
    pub const AF21: Dscp = Dscp(18);
    /// AF31 (26).
    pub const AF31: Dscp = Dscp(26);
    /// AF41 (34).
    pub const AF41: Dscp = Dscp(34);

    /// Checked constructor.
    pub fn new(v: u8) -> Result<Dscp, SpecError> {
        if v <= 63 {
            Ok(Dscp(v))
        } else {
            Err(SpecError::invalid("dscp", v, "a DSCP is 6 bits: use 0..=63"))
        }
    }
    /// The code point.
    pub fn value(self) -> u8 {
        self.0
    }
    /// The TOS byte with this code point and ECN bits zero.
    pub fn tos(self) -> u8 {
        self.0 << 2
    }
    /// The code point carried by a TOS byte.
    pub fn from_tos(tos: u8) -> Dscp {
        Dscp(tos >> 2)
    }
    /// The conventional name (AF11, EF, CS1, ...) or the number.
    pub fn name(self) -> String {
        match self.0 {
            0 => "BE".into(),
            46 => "EF".into(),
            v if v % 8 == 0 => format!("CS{}", v / 8),
            v if (10..=38).contains(&v) && v % 2 == 0 => format!("AF{}{}", v / 8, (v % 8) / 2),
            v => format!("DSCP{v}"),
        }
    }
}

impl TryFrom<u8> for Dscp {
    type Error = SpecError;
    fn try_from(v: u8) -> Result<Self, Self::Error> {
        Dscp::new(v)
    }
}
impl From<Dscp> for u8 {
    fn from(d: Dscp) -> u8 {
        d.0
    }
}
impl fmt::Display for Dscp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What an SLO is about. In a file, `kind = "fct_slowdown_p99"` or `kind = "qct_p99"`; a
/// `slo` table without `kind` is an FCT-slowdown objective (at `percentile`, default 0.99).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloKind {
    /// A percentile of the flows' FCT slowdown (unitless, ≥ 1).
    FctSlowdownP99,
    /// The p99 of the class's query completion times (partition-aggregate queries: the time
    /// from a query's start until the last byte of its last response), an absolute time.
    QctP99,
}

impl SloKind {
    /// The name used in files (`fct_slowdown_p99`, `qct_p99`).
    pub fn name(self) -> &'static str {
        match self {
            SloKind::FctSlowdownP99 => "fct_slowdown_p99",
            SloKind::QctP99 => "qct_p99",
        }
    }
    /// The unit of the SLI and threshold as reported ("" for a slowdown, "µs" for a QCT).
    pub fn unit(self) -> &'static str {
        match self {
            SloKind::FctSlowdownP99 => "",
            SloKind::QctP99 => "µs",
        }
    }
    fn parse(s: &str) -> Option<SloKind> {
        [SloKind::FctSlowdownP99, SloKind::QctP99]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// A service-level objective of a class.
///
/// * FCT slowdown: the `percentile` of the flows' slowdowns over a measurement interval must not
///   exceed `max_slowdown` (`slo = { max_slowdown = 11 }`, optionally `percentile = 0.999` or
///   `kind = "fct_slowdown_p99"`).
/// * Query completion time: the p99 of the class's query completion times must not exceed
///   `max` (`slo = { kind = "qct_p99", max_qct_us = 2500 }`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SloToml", into = "SloToml")]
pub enum Slo {
    /// A slowdown objective.
    FctSlowdown {
        /// Which percentile: 0.5, 0.99 or 0.999 (the ones [`ClassSli`] keeps). The paper uses 0.99.
        percentile: f64,
        /// The threshold v_i on the slowdown (unitless, ≥ 1).
        max_slowdown: f64,
    },
    /// A p99 query-completion-time objective.
    QctP99 {
        /// The threshold on the p99 QCT.
        max: Nanos,
    },
}

/// An SLO as written in a file (see [`Slo`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SloToml {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    percentile: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_slowdown: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_qct_us: Option<f64>,
}

impl SloToml {
    /// The typed SLO; the error says which key is wrong and what to write (`class` names the
    /// class in it when known).
    fn into_slo(self, class: Option<&str>) -> Result<Slo, String> {
        let of = class.map(|c| format!(" of class {c:?}")).unwrap_or_default();
        let kind = match self.kind.as_deref() {
            None => SloKind::FctSlowdownP99,
            Some(k) => SloKind::parse(k).ok_or_else(|| {
                format!("slo.kind = {k:?}{of}: unknown SLO kind; use \"fct_slowdown_p99\" or \"qct_p99\"")
            })?,
        };
        match kind {
            SloKind::FctSlowdownP99 => {
                if self.max_qct_us.is_some() {
                    return Err(format!(
                        "slo.max_qct_us{of}: a slowdown objective has no QCT threshold; set kind = \"qct_p99\" or drop the key"
                    ));
                }
                if self.kind.is_some() && self.percentile.is_some_and(|p| (p - 0.99).abs() > 1e-9) {
                    return Err(format!(
                        "slo.percentile{of}: kind \"fct_slowdown_p99\" is the p99; drop `kind` to use another percentile"
                    ));
                }
                let max_slowdown = self
                    .max_slowdown
                    .ok_or_else(|| format!("slo{of}: missing max_slowdown (the p99 slowdown threshold, ≥ 1)"))?;
                Ok(Slo::FctSlowdown {
                    percentile: self.percentile.unwrap_or(0.99),
                    max_slowdown,
                })
            }
            SloKind::QctP99 => {
                if self.max_slowdown.is_some() || self.percentile.is_some() {
                    return Err(format!(
                        "slo{of}: kind \"qct_p99\" takes max_qct_us only (no max_slowdown or percentile)"
                    ));
                }
                let us = self
                    .max_qct_us
                    .ok_or_else(|| format!("slo{of}: missing max_qct_us (the p99 QCT threshold in µs)"))?;
                if !(us.is_finite() && us > 0.0 && us <= 3.6e9) {
                    return Err(format!(
                        "slo.max_qct_us = {us}{of}: a QCT threshold is a positive number of µs (at most an hour)"
                    ));
                }
                Ok(Slo::QctP99 {
                    max: Nanos((us * 1e3).round() as u64),
                })
            }
        }
    }
}

impl TryFrom<SloToml> for Slo {
    type Error = String;
    fn try_from(t: SloToml) -> Result<Slo, String> {
        t.into_slo(None)
    }
}

impl From<Slo> for SloToml {
    fn from(s: Slo) -> SloToml {
        match s {
            Slo::FctSlowdown {
                percentile,
                max_slowdown,
            } => SloToml {
                kind: None,
                percentile: Some(percentile),
                max_slowdown: Some(max_slowdown),
                max_qct_us: None,
            },
            Slo::QctP99 { max } => SloToml {
                kind: Some(SloKind::QctP99.name().into()),
                percentile: None,
                max_slowdown: None,
                max_qct_us: Some(max.0 as f64 / 1e3),
            },
        }
    }
}

impl Slo {
    /// A p99 slowdown objective.
    pub fn p99(max_slowdown: f64) -> Slo {
        Slo::FctSlowdown {
            percentile: 0.99,
            max_slowdown,
        }
    }
    /// A p99 query-completion-time objective.
    pub fn qct_p99(max: Nanos) -> Slo {
        Slo::QctP99 { max }
    }
    /// What the objective is about.
    pub fn kind(&self) -> SloKind {
        match self {
            Slo::FctSlowdown { .. } => SloKind::FctSlowdownP99,
            Slo::QctP99 { .. } => SloKind::QctP99,
        }
    }
    /// The percentile the objective is about.
    pub fn percentile(&self) -> f64 {
        match self {
            Slo::FctSlowdown { percentile, .. } => *percentile,
            Slo::QctP99 { .. } => 0.99,
        }
    }
    /// The threshold in the unit of [`SloKind::unit`]: a slowdown, or a QCT in µs.
    pub fn threshold(&self) -> f64 {
        match self {
            Slo::FctSlowdown { max_slowdown, .. } => *max_slowdown,
            Slo::QctP99 { max } => max.0 as f64 / 1e3,
        }
    }
    /// The class's SLI this objective is about, in the threshold's unit: the slowdown at the
    /// percentile, or the p99 QCT in µs (`None` when the SLI does not carry it, e.g. a class
    /// without completed queries).
    pub fn sli(&self, s: &ClassSli) -> Option<f64> {
        match self {
            Slo::FctSlowdown { percentile, .. } => s.at(*percentile),
            Slo::QctP99 { .. } => s.qct.map(|q| q.p99.0 as f64 / 1e3),
        }
    }
    /// A value in this objective's unit, for people: `11` or `2500 µs`.
    pub fn show(&self, v: f64) -> String {
        match self.kind() {
            SloKind::FctSlowdownP99 => format!("{v:.4}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            SloKind::QctP99 => format!("{v:.0} µs"),
        }
    }
    /// A short description: `p99 slowdown ≤ 11` or `p99 QCT ≤ 2500 µs`.
    pub fn describe(&self) -> String {
        match self {
            Slo::FctSlowdown { percentile, .. } => {
                format!("p{} slowdown ≤ {}", percentile * 100.0, self.show(self.threshold()))
            }
            Slo::QctP99 { .. } => format!("p99 QCT ≤ {}", self.show(self.threshold())),
        }
    }
    /// Checks the objective; `field` names it in the error.
    pub fn validate(&self, field: &str) -> Result<(), SpecError> {
        match *self {
            Slo::FctSlowdown {
                percentile,
                max_slowdown,
            } => {
                if ClassSli::KEPT_PERCENTILES
                    .iter()
                    .all(|&q| (q - percentile).abs() > 1e-9)
                {
                    return Err(SpecError::invalid(
                        format!("{field}.percentile"),
                        percentile,
                        "SLIs are kept as p50, p99 and p99.9: use 0.5, 0.99 or 0.999",
                    ));
                }
                if !(1.0..=1e6).contains(&max_slowdown) {
                    return Err(SpecError::invalid(
                        format!("{field}.max_slowdown"),
                        max_slowdown,
                        "a slowdown threshold is a number from 1 (no flow beats the unloaded network) to 1000000",
                    ));
                }
            }
            Slo::QctP99 { max } => {
                if max.0 == 0 {
                    return Err(SpecError::invalid(
                        format!("{field}.max_qct_us"),
                        0,
                        "a QCT threshold is a positive time",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A traffic class: a named DSCP with its objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ClassToml")]
pub struct TrafficClass {
    /// Human name, e.g. "AF11" or "storage".
    pub name: String,
    /// The code point that identifies the class on the wire.
    pub dscp: Dscp,
    /// The objective the controller keeps.
    pub slo: Slo,
    /// Relative importance in the objective (1.0 = equal). Must be positive.
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

/// A class as written in a file: its SLO is checked with the class's name at hand, so that an
/// SLO error names the class.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassToml {
    name: String,
    dscp: Dscp,
    slo: SloToml,
    #[serde(default = "one")]
    weight: f64,
}

impl TryFrom<ClassToml> for TrafficClass {
    type Error = String;
    fn try_from(c: ClassToml) -> Result<TrafficClass, String> {
        let slo = c.slo.into_slo(Some(&c.name))?;
        Ok(TrafficClass {
            name: c.name,
            dscp: c.dscp,
            slo,
            weight: c.weight,
        })
    }
}

impl TrafficClass {
    /// A class with the default p99 objective and weight 1.
    pub fn new(name: impl Into<String>, dscp: Dscp, p99_max_slowdown: f64) -> TrafficClass {
        TrafficClass {
            name: name.into(),
            dscp,
            slo: Slo::p99(p99_max_slowdown),
            weight: 1.0,
        }
    }
}

/// Checks a list of classes: non-empty, distinct DSCPs and names, valid objectives and weights.
/// `field` names the list in errors (e.g. `classes`, giving `classes[1].dscp`).
pub fn validate_classes(classes: &[TrafficClass], field: &str) -> Result<(), SpecError> {
    if classes.is_empty() {
        return Err(SpecError::invalid(field, "[]", "declare at least one traffic class"));
    }
    for (i, c) in classes.iter().enumerate() {
        let f = format!("{field}[{i}]");
        c.slo.validate(&format!("{f}.slo"))?;
        if !(c.weight.is_finite() && c.weight > 0.0) {
            return Err(SpecError::invalid(
                format!("{f}.weight"),
                c.weight,
                "a class weight is a positive number",
            ));
        }
        if c.name.trim().is_empty() {
            return Err(SpecError::invalid(format!("{f}.name"), "\"\"", "give the class a name"));
        }
        if let Some(j) = classes[..i].iter().position(|o| o.dscp == c.dscp) {
            return Err(SpecError::invalid(
                format!("{f}.dscp"),
                c.dscp,
                format!("DSCP already used by {field}[{j}]: each class needs its own code point"),
            ));
        }
        if let Some(j) = classes[..i].iter().position(|o| o.name == c.name) {
            return Err(SpecError::invalid(
                format!("{f}.name"),
                &c.name,
                format!("name already used by {field}[{j}]"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn af_names() {
        assert_eq!(Dscp::AF11.name(), "AF11");
        assert_eq!(Dscp::AF21.name(), "AF21");
        assert_eq!(Dscp::AF31.name(), "AF31");
        assert_eq!(Dscp::new(46).map(Dscp::name), Ok("EF".to_string()));
        assert_eq!(Dscp::AF11.tos(), 0x28);
    }

    #[test]
    fn dscp_out_of_range_is_rejected() {
        assert!(Dscp::new(64).is_err());
        assert!(serde_json::from_str::<Dscp>("99").is_err());
    }

    #[test]
    fn duplicate_dscp_is_named() {
        let cs = vec![
            TrafficClass::new("a", Dscp::AF11, 10.0),
            TrafficClass::new("b", Dscp::AF11, 12.0),
        ];
        let e = validate_classes(&cs, "classes").unwrap_err().to_string();
        assert!(e.contains("classes[1].dscp"), "{e}");
    }

    #[test]
    fn slo_kinds_parse_and_unknown_kinds_name_the_class() {
        #[derive(Deserialize)]
        struct F {
            classes: Vec<TrafficClass>,
        }
        let parse = |slo: &str| {
            toml::from_str::<F>(&format!("[[classes]]\nname = \"rpc\"\ndscp = 34\nslo = {{ {slo} }}\n"))
                .map(|f| f.classes[0].slo)
                .map_err(|e| e.to_string())
        };
        // Without a kind: today's slowdown objective.
        assert_eq!(parse("max_slowdown = 11.0"), Ok(Slo::p99(11.0)));
        assert_eq!(
            parse("kind = \"fct_slowdown_p99\", max_slowdown = 11.0"),
            Ok(Slo::p99(11.0))
        );
        let q = parse("kind = \"qct_p99\", max_qct_us = 2500").unwrap();
        assert_eq!(q, Slo::qct_p99(Nanos(2_500_000)));
        assert_eq!(
            (q.kind(), q.threshold(), q.kind().unit()),
            (SloKind::QctP99, 2500.0, "µs")
        );
        assert_eq!(q.describe(), "p99 QCT ≤ 2500 µs");
        let e = parse("kind = \"qct_p50\", max_qct_us = 2500").unwrap_err();
        assert!(e.contains("slo.kind = \"qct_p50\" of class \"rpc\""), "{e}");
        let e = parse("kind = \"qct_p99\", max_slowdown = 3.0").unwrap_err();
        assert!(e.contains("of class \"rpc\"") && e.contains("max_qct_us only"), "{e}");
        let e = parse("kind = \"qct_p99\", max_qct_us = -1").unwrap_err();
        assert!(e.contains("slo.max_qct_us = -1 of class \"rpc\""), "{e}");
        let e = parse("max_qct_us = 10").unwrap_err();
        assert!(e.contains("set kind = \"qct_p99\""), "{e}");
        // Round trip through TOML keeps the kind.
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(json, r#"{"kind":"qct_p99","max_qct_us":2500.0}"#);
        assert_eq!(serde_json::from_str::<Slo>(&json).unwrap(), q);
        assert_eq!(
            serde_json::from_str::<Slo>(&serde_json::to_string(&Slo::p99(12.0)).unwrap()).unwrap(),
            Slo::p99(12.0)
        );
    }

    #[test]
    fn slo_below_one_is_rejected() {
        let e = Slo::p99(0.5).validate("classes[0].slo").unwrap_err().to_string();
        assert!(e.contains("classes[0].slo.max_slowdown = 0.5"), "{e}");
    }
}
