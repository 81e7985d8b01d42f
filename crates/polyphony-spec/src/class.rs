//! Traffic classes (a DSCP code point each) and their service-level objectives.

use crate::{ClassSli, SpecError};
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

/// A service-level objective on a class's FCT slowdown: the `percentile` of slowdowns over a
/// measurement interval must not exceed `max_slowdown`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Which percentile: 0.5, 0.99 or 0.999 (the ones [`ClassSli`] keeps). The paper uses 0.99.
    #[serde(default = "default_percentile")]
    pub percentile: f64,
    /// The threshold v_i on the slowdown (unitless, ≥ 1).
    pub max_slowdown: f64,
}

fn default_percentile() -> f64 {
    0.99
}

impl Slo {
    /// A p99 objective.
    pub fn p99(max_slowdown: f64) -> Slo {
        Slo {
            percentile: 0.99,
            max_slowdown,
        }
    }
    /// Checks the objective; `field` names it in the error.
    pub fn validate(&self, field: &str) -> Result<(), SpecError> {
        if ClassSli::KEPT_PERCENTILES
            .iter()
            .all(|&q| (q - self.percentile).abs() > 1e-9)
        {
            return Err(SpecError::invalid(
                format!("{field}.percentile"),
                self.percentile,
                "SLIs are kept as p50, p99 and p99.9: use 0.5, 0.99 or 0.999",
            ));
        }
        if !(self.max_slowdown.is_finite() && self.max_slowdown >= 1.0) {
            return Err(SpecError::invalid(
                format!("{field}.max_slowdown"),
                self.max_slowdown,
                "a slowdown threshold is a finite number ≥ 1 (no flow beats the unloaded network)",
            ));
        }
        Ok(())
    }
}

/// A traffic class: a named DSCP with its objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    fn slo_below_one_is_rejected() {
        let e = Slo::p99(0.5).validate("classes[0].slo").unwrap_err().to_string();
        assert!(e.contains("classes[0].slo.max_slowdown = 0.5"), "{e}");
    }
}
