//! Scenarios: a topology, the traffic classes with their objectives, and the workload mix.
//!
//! Scenarios are TOML files under `configs/scenarios/`. [`Scenario::from_toml`] parses and
//! validates one; every error names the key (`mix[2].load`) and the offending value.

use crate::class::validate_classes;
use crate::{BitsPerSec, Bytes, Dscp, KnobSpace, Nanos, NetworkConfig, SloKind, SpecError, TrafficClass};
use serde::{Deserialize, Serialize};

/// The network's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// `senders` hosts → one switch → one receiver; the switch's port to the receiver is the
    /// bottleneck. Hosts are numbered senders `0..senders`, receiver `senders`.
    Dumbbell {
        /// Number of sending hosts.
        senders: u32,
        /// Rate of every link, in Mbit/s.
        rate_mbps: f64,
        /// One-way propagation delay of every link, in µs.
        link_delay_us: f64,
    },
    /// A two-tier leaf-spine (see [`LeafSpineSpec`]).
    LeafSpine(LeafSpineSpec),
}

/// A two-tier leaf-spine: `racks` leaves with `hosts_per_rack` hosts each, every leaf connected
/// to every spine. Hosts are numbered rack-major.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineSpec {
    /// Number of racks (leaf switches).
    pub racks: u32,
    /// Hosts per rack.
    pub hosts_per_rack: u32,
    /// Number of spine switches.
    pub spines: u32,
    /// Host ↔ leaf link rate, in Mbit/s.
    pub host_rate_mbps: f64,
    /// Leaf ↔ spine link rate, in Mbit/s.
    pub fabric_rate_mbps: f64,
    /// One-way propagation delay of every link, in µs.
    pub link_delay_us: f64,
}

/// `x` to four significant digits at most, trailing zeros dropped (20951.4178 → 20951,
/// 4.00684 → 4.007, 2.5 → 2.5): drawn rates, delays and intervals read as numbers, not as
/// float dumps.
pub fn short_number(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return x.to_string();
    }
    let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

impl std::fmt::Display for TopologySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopologySpec::Dumbbell {
                senders,
                rate_mbps,
                link_delay_us,
            } => write!(
                f,
                "dumbbell, {senders} senders, {} Mbit/s, {} µs per link",
                short_number(*rate_mbps),
                short_number(*link_delay_us)
            ),
            TopologySpec::LeafSpine(ls) => write!(
                f,
                "leaf-spine {}×{}, {} spines, {}/{} Mbit/s, {} µs per link",
                ls.racks,
                ls.hosts_per_rack,
                ls.spines,
                short_number(ls.host_rate_mbps),
                short_number(ls.fabric_rate_mbps),
                short_number(ls.link_delay_us)
            ),
        }
    }
}

/// Slowest link rate a topology may declare (1 kbit/s): slower rounds to nothing in bit/s.
const MIN_RATE_MBPS: f64 = 1e-3;
/// Fastest link rate a topology may declare (10 Tbit/s).
const MAX_RATE_MBPS: f64 = 1e7;
/// Longest propagation delay a link may declare (1 s).
const MAX_LINK_DELAY_US: f64 = 1e6;

impl TopologySpec {
    /// The rate that offered loads are fractions of: the dumbbell's bottleneck link, or the
    /// leaf-spine's host link.
    pub fn reference_rate(&self) -> BitsPerSec {
        let mbps = match self {
            TopologySpec::Dumbbell { rate_mbps, .. } => *rate_mbps,
            TopologySpec::LeafSpine(ls) => ls.host_rate_mbps,
        };
        BitsPerSec((mbps * 1e6).round() as u64)
    }
    /// The dumbbell's sender count; `None` for a leaf-spine (what the namespace testbed, a
    /// dumbbell, asks of a scenario).
    pub fn dumbbell_senders(&self) -> Option<u32> {
        match self {
            TopologySpec::Dumbbell { senders, .. } => Some(*senders),
            TopologySpec::LeafSpine(_) => None,
        }
    }
    /// Total number of hosts.
    pub fn hosts(&self) -> u32 {
        match self {
            TopologySpec::Dumbbell { senders, .. } => senders + 1,
            TopologySpec::LeafSpine(ls) => ls.racks * ls.hosts_per_rack,
        }
    }

    /// Checks every count, rate and delay (field names start with `topology.`): link rates
    /// from 1 kbit/s to 10 Tbit/s, link delays from 0 to 1 s.
    pub fn validate(&self) -> Result<(), SpecError> {
        let rate = |k: &str, v: f64| {
            if (MIN_RATE_MBPS..=MAX_RATE_MBPS).contains(&v) {
                Ok(())
            } else {
                Err(SpecError::invalid(
                    format!("topology.{k}"),
                    v,
                    "must be a link rate from 0.001 Mbit/s (1 kbit/s) to 10000000 Mbit/s (10 Tbit/s)",
                ))
            }
        };
        let delay = |k: &str, v: f64| {
            if (0.0..=MAX_LINK_DELAY_US).contains(&v) {
                Ok(())
            } else {
                Err(SpecError::invalid(
                    format!("topology.{k}"),
                    v,
                    "must be a propagation delay from 0 to 1000000 µs (1 s)",
                ))
            }
        };
        let count = |k: &str, v: u32, lo: u32, hi: u32| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(SpecError::invalid(
                    format!("topology.{k}"),
                    v,
                    format!("must be in {lo}..={hi}"),
                ))
            }
        };
        match self {
            TopologySpec::Dumbbell {
                senders,
                rate_mbps,
                link_delay_us,
            } => {
                count("senders", *senders, 1, 64)?;
                rate("rate_mbps", *rate_mbps)?;
                delay("link_delay_us", *link_delay_us)
            }
            TopologySpec::LeafSpine(ls) => {
                count("racks", ls.racks, 1, 256)?;
                count("hosts_per_rack", ls.hosts_per_rack, 1, 64)?;
                count("spines", ls.spines, 1, 64)?;
                rate("host_rate_mbps", ls.host_rate_mbps)?;
                rate("fabric_rate_mbps", ls.fabric_rate_mbps)?;
                delay("link_delay_us", ls.link_delay_us)
            }
        }
    }
}

/// How one class's traffic is generated.
///
/// Without `incast`, the class's flows arrive one by one (log-normal gaps, sizes from
/// `size_cdf`). With `[mix.incast]` the class is partition-aggregate traffic: *queries* arrive
/// (log-normal gaps with the same σ); each query picks one requester host and `fan_in`
/// responders, and every responder sends one response to the requester at the query's start.
/// `load` then counts the responses' bytes, so the query rate is
/// `load · R / (8 · fan_in · mean response size)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassMix {
    /// The class.
    pub dscp: Dscp,
    /// Name of a flow-size CDF under `models/cdf/` (without the extension), e.g. `meta-cache`.
    /// For an incast class, the responses' sizes; may be left out when `incast.response_bytes`
    /// fixes them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub size_cdf: String,
    /// Offered load as a fraction of the reference rate (0.2 = 20 %).
    pub load: f64,
    /// σ of the log-normal inter-arrival distribution (the paper: 2 for bursty traffic).
    #[serde(default = "default_sigma")]
    pub sigma: f64,
    /// Partition-aggregate queries instead of independent flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incast: Option<IncastSpec>,
}

/// A partition-aggregate workload: each query has `fan_in` responders answering one requester
/// at once (see [`ClassMix`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncastSpec {
    /// Responders per query (N).
    pub fan_in: u32,
    /// Every response's payload size; absent: drawn from the mix entry's `size_cdf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<Bytes>,
}

impl IncastSpec {
    /// The most responders a query may have.
    pub const MAX_FAN_IN: u32 = 1024;
    /// The largest fixed response (1 GB).
    pub const MAX_RESPONSE_BYTES: u64 = 1 << 30;
}

fn default_sigma() -> f64 {
    2.0
}

/// A phase of an adaptation run: per-class loads (in class-mix order) held for a duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadPhase {
    /// How long the phase lasts, in seconds.
    pub duration_s: f64,
    /// Load of each class in `mix` order, as fractions of the reference rate.
    pub loads: Vec<f64>,
}

/// A complete scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// What the scenario represents and where its numbers come from.
    #[serde(default)]
    pub description: String,
    /// Seed of every random choice made for this scenario.
    #[serde(default)]
    pub seed: u64,
    /// Length of one measurement interval, in seconds of network time.
    pub interval_s: f64,
    /// The network.
    pub topology: TopologySpec,
    /// Traffic classes with their objectives.
    pub classes: Vec<TrafficClass>,
    /// Workload of each class.
    pub mix: Vec<ClassMix>,
    /// Optional load phases (adaptation study); empty means the mix's loads throughout.
    #[serde(default)]
    pub phases: Vec<LoadPhase>,
    /// Optional configuration to start from.
    #[serde(default)]
    pub initial: Option<NetworkConfig>,
    /// Optional knob space the controller tunes (`[[knobs.knobs]]`, `[[knobs.simplexes]]`,
    /// `[[knobs.categorical]]`); absent: [`KnobSpace::per_class_default`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knobs: Option<KnobSpace>,
}

impl Scenario {
    /// Parses and validates a scenario from TOML text. `source_name` names the text in errors.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Scenario, SpecError> {
        let s: Scenario = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|r| text[..r.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(0);
            SpecError::Parse {
                source_name: source_name.into(),
                line,
                why: e.message().to_string(),
            }
        })?;
        s.validate()?;
        Ok(s)
    }

    /// Renders the scenario as TOML.
    pub fn to_toml(&self) -> Result<String, SpecError> {
        toml::to_string_pretty(self).map_err(|e| SpecError::invalid("scenario", &self.name, e.to_string()))
    }

    /// The class DSCPs in declaration order.
    pub fn dscps(&self) -> Vec<Dscp> {
        self.classes.iter().map(|c| c.dscp).collect()
    }

    /// The knob space the controller tunes: the scenario's own, or the per-class default.
    pub fn knob_space(&self) -> KnobSpace {
        self.knobs
            .clone()
            .unwrap_or_else(|| KnobSpace::per_class_default(&self.dscps()))
    }

    /// The measurement interval.
    pub fn interval(&self) -> Nanos {
        Nanos::from_secs_f64(self.interval_s)
    }

    /// Checks every rule; the error names the key and the value.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.name.trim().is_empty() {
            return Err(SpecError::invalid("name", "\"\"", "give the scenario a name"));
        }
        if !(self.interval_s.is_finite() && self.interval_s > 0.0 && self.interval_s <= 3600.0) {
            return Err(SpecError::invalid(
                "interval_s",
                self.interval_s,
                "must be in (0, 3600] seconds",
            ));
        }
        self.topology.validate()?;
        validate_classes(&self.classes, "classes")?;
        let mut total = 0.0;
        for (i, m) in self.mix.iter().enumerate() {
            let f = format!("mix[{i}]");
            if !self.classes.iter().any(|c| c.dscp == m.dscp) {
                return Err(SpecError::invalid(
                    format!("{f}.dscp"),
                    m.dscp,
                    "no class declares this DSCP: add it to [[classes]]",
                ));
            }
            if self.mix[..i].iter().any(|o| o.dscp == m.dscp) {
                return Err(SpecError::invalid(
                    format!("{f}.dscp"),
                    m.dscp,
                    "this class already has a mix entry",
                ));
            }
            if let Some(inc) = &m.incast {
                if !(1..=IncastSpec::MAX_FAN_IN).contains(&inc.fan_in) {
                    return Err(SpecError::invalid(
                        format!("{f}.incast.fan_in"),
                        inc.fan_in,
                        format!("a query has 1..={} responders", IncastSpec::MAX_FAN_IN),
                    ));
                }
                if let Some(b) = inc.response_bytes {
                    if !(1..=IncastSpec::MAX_RESPONSE_BYTES).contains(&b.0) {
                        return Err(SpecError::invalid(
                            format!("{f}.incast.response_bytes"),
                            b.0,
                            format!("a response carries 1..={} bytes", IncastSpec::MAX_RESPONSE_BYTES),
                        ));
                    }
                    if !m.size_cdf.is_empty() {
                        return Err(SpecError::invalid(
                            format!("{f}.size_cdf"),
                            &m.size_cdf,
                            "incast.response_bytes fixes the response size: drop size_cdf or response_bytes",
                        ));
                    }
                }
            }
            let fixed = m.incast.is_some_and(|i| i.response_bytes.is_some());
            if !fixed
                && (m.size_cdf.trim().is_empty() || m.size_cdf.contains(['/', '\\']) || m.size_cdf.starts_with('.'))
            {
                return Err(SpecError::invalid(
                    format!("{f}.size_cdf"),
                    &m.size_cdf,
                    "name a CDF under models/cdf/ without directory or extension, e.g. \"meta-cache\"",
                ));
            }
            check_load(&format!("{f}.load"), m.load)?;
            total += m.load;
            if !(m.sigma.is_finite() && m.sigma > 0.0 && m.sigma <= 5.0) {
                return Err(SpecError::invalid(format!("{f}.sigma"), m.sigma, "σ must be in (0, 5]"));
            }
        }
        if self.mix.is_empty() {
            return Err(SpecError::invalid("mix", "[]", "give at least one class a workload"));
        }
        for (i, c) in self.classes.iter().enumerate() {
            // A class without traffic never has an SLI: every interval would be skipped.
            let Some(j) = self.mix.iter().position(|m| m.dscp == c.dscp) else {
                return Err(SpecError::invalid(
                    format!("classes[{i}]"),
                    &c.name,
                    format!(
                        "no [[mix]] entry gives class {} (DSCP {}) traffic, so it would never have an SLI to control: add one with dscp = {}, size_cdf and load, or remove the class",
                        c.name, c.dscp, c.dscp
                    ),
                ));
            };
            let offered =
                self.mix[j].load > 0.0 || self.phases.iter().any(|ph| ph.loads.get(j).is_some_and(|&l| l > 0.0));
            if !offered {
                return Err(SpecError::invalid(
                    format!("mix[{j}].load"),
                    self.mix[j].load,
                    format!(
                        "class {} offers no traffic (and no phase gives it any), so it would never have an SLI to control: give it a positive load or remove the class",
                        c.name
                    ),
                ));
            }
            let queries = self.mix.iter().any(|m| m.dscp == c.dscp && m.incast.is_some());
            if c.slo.kind() == SloKind::QctP99 && !queries {
                return Err(SpecError::invalid(
                    format!("classes[{i}].slo.kind"),
                    SloKind::QctP99.name(),
                    format!(
                        "class {} has no queries: give its [[mix]] entry an [mix.incast] table, or use a slowdown SLO",
                        c.name
                    ),
                ));
            }
        }
        check_total("mix[].load", total)?;
        for (p, ph) in self.phases.iter().enumerate() {
            let f = format!("phases[{p}]");
            if !(ph.duration_s.is_finite() && ph.duration_s > 0.0) {
                return Err(SpecError::invalid(
                    format!("{f}.duration_s"),
                    ph.duration_s,
                    "must be positive",
                ));
            }
            if ph.loads.len() != self.mix.len() {
                return Err(SpecError::invalid(
                    format!("{f}.loads"),
                    format!("{} values", ph.loads.len()),
                    format!("give one load per mix entry ({})", self.mix.len()),
                ));
            }
            for (i, &l) in ph.loads.iter().enumerate() {
                check_load(&format!("{f}.loads[{i}]"), l)?;
            }
            check_total(&format!("{f}.loads"), ph.loads.iter().sum())?;
        }
        let under = |prefix: &str, e: SpecError| match e {
            SpecError::Invalid { field, value, why } => SpecError::Invalid {
                field: format!("{prefix}.{field}"),
                value,
                why,
            },
            other => other,
        };
        if let Some(k) = &self.knobs {
            k.validate_for(&self.dscps()).map_err(|e| under("knobs", e))?;
        }
        if let (Some(init), Some(k)) = (&self.initial, &self.knobs) {
            for (i, cat) in k.categorical.iter().enumerate() {
                let chosen = init.class(cat.dscp).and_then(|c| c.congestion_control.as_ref());
                if let Some(a) = chosen.filter(|a| !cat.congestion_control.contains(a)) {
                    return Err(SpecError::invalid(
                        format!("initial.classes.{}.congestion_control", cat.dscp.name()),
                        a,
                        format!("not among knobs.categorical[{i}].congestion_control: allow it there or start from one of those"),
                    ));
                }
            }
        }
        if let Some(init) = &self.initial {
            init.validate().map_err(|e| under("initial", e))?;
            if init.classes.len() != self.classes.len() || self.classes.iter().any(|c| init.class(c.dscp).is_none()) {
                return Err(SpecError::invalid(
                    "initial.classes",
                    format!("{} classes", init.classes.len()),
                    "configure exactly the scenario's classes",
                ));
            }
        }
        Ok(())
    }
}

fn check_load(field: &str, l: f64) -> Result<(), SpecError> {
    if l.is_finite() && (0.0..=1.0).contains(&l) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            field,
            l,
            "a load is a fraction of the link rate in [0, 1]",
        ))
    }
}

fn check_total(field: &str, total: f64) -> Result<(), SpecError> {
    if total < 1.0 {
        Ok(())
    } else {
        // Rounded: a sum of decimal fractions prints as 1.3499999999999999 otherwise.
        Err(SpecError::invalid(
            field,
            format!("{} in all", (total * 1e4).round() / 1e4),
            "the loads add up to 100 % or more of the link: the network could never drain",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed reference scenario (medium tightness) is the fixture.
    const REF: &str = include_str!("../../../configs/scenarios/reference-medium.toml");

    #[test]
    fn parses_the_reference_shape() {
        let s = Scenario::from_toml(REF, "ref.toml").unwrap();
        assert_eq!(s.dscps(), vec![Dscp::AF11, Dscp::AF21, Dscp::AF31]);
        assert_eq!(s.topology.reference_rate(), BitsPerSec::from_mbps(100));
        let without_sigma = Scenario::from_toml(&REF.replace("sigma = 2.0\n", ""), "ref.toml").unwrap();
        assert_eq!(without_sigma.mix[0].sigma, 2.0, "σ defaults to 2");
        let again = Scenario::from_toml(&s.to_toml().unwrap(), "again").unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn leaf_spine_parses_and_refuses_unknown_keys() {
        let ls = REF.replace(
            "kind = \"dumbbell\"\nsenders = 3\nrate_mbps = 100\nlink_delay_us = 2.5",
            "kind = \"leaf_spine\"\nracks = 4\nhosts_per_rack = 2\nspines = 2\n\
             host_rate_mbps = 10000\nfabric_rate_mbps = 40000\nlink_delay_us = 2",
        );
        let s = Scenario::from_toml(&ls, "ls.toml").unwrap();
        let TopologySpec::LeafSpine(spec) = &s.topology else {
            panic!("parsed as {:?}", s.topology)
        };
        assert_eq!((spec.racks, spec.hosts_per_rack, spec.spines), (4, 2, 2));
        assert_eq!(s.topology.hosts(), 8);
        assert_eq!(s.topology.reference_rate(), BitsPerSec(10_000_000_000));
        assert!(s.topology.to_string().starts_with("leaf-spine 4×2, 2 spines"));
        let bad = ls.replace("spines = 2", "spines = 2\nspline = 3");
        let e = Scenario::from_toml(&bad, "ls.toml").unwrap_err().to_string();
        assert!(e.contains("spline"), "{e}");
        let zero = ls.replace("racks = 4", "racks = 0");
        let e = Scenario::from_toml(&zero, "ls.toml").unwrap_err().to_string();
        assert!(e.contains("topology.racks"), "{e}");
    }

    #[test]
    fn rates_and_delays_beyond_any_network_are_refused_with_the_key() {
        for (from, to, key) in [
            ("rate_mbps = 100", "rate_mbps = 1e300", "topology.rate_mbps = 1e300:"),
            (
                "rate_mbps = 100",
                "rate_mbps = 1e-9",
                "topology.rate_mbps = 0.000000001:",
            ),
            ("rate_mbps = 100", "rate_mbps = 0", "topology.rate_mbps = 0:"),
            ("rate_mbps = 100", "rate_mbps = nan", "topology.rate_mbps = NaN:"),
            (
                "link_delay_us = 2.5",
                "link_delay_us = 2e6",
                "topology.link_delay_us = 2000000:",
            ),
            (
                "link_delay_us = 2.5",
                "link_delay_us = -1",
                "topology.link_delay_us = -1:",
            ),
        ] {
            let bad = REF.replace(from, to);
            let e = Scenario::from_toml(&bad, "ref.toml").unwrap_err().to_string();
            assert!(e.contains(key), "{to}: {e}");
        }
        // The ends of the ranges are networks one may declare.
        for (from, to) in [
            ("rate_mbps = 100", "rate_mbps = 1e7"),
            ("rate_mbps = 100", "rate_mbps = 0.001"),
            ("link_delay_us = 2.5", "link_delay_us = 1e6"),
            ("link_delay_us = 2.5", "link_delay_us = 0"),
        ] {
            Scenario::from_toml(&REF.replace(from, to), "ref.toml").unwrap();
        }
    }

    #[test]
    fn overload_names_the_key() {
        let bad = REF.replacen("load = 0.2", "load = 0.9", 1);
        let e = Scenario::from_toml(&bad, "ref.toml").unwrap_err().to_string();
        assert!(e.starts_with("mix[].load = 1.3 in all"), "{e}");
    }

    #[test]
    fn unknown_key_gives_line() {
        let bad = REF.replace("seed = 1", "seed = 1\nsede = 8");
        let e = Scenario::from_toml(&bad, "ref.toml").unwrap_err().to_string();
        assert!(e.starts_with("ref.toml:7:") && e.contains("sede"), "{e}");
    }

    #[test]
    fn a_scenario_states_its_knob_space_with_categorical_choices() {
        let cats = "[knobs]\n[[knobs.simplexes]]\nname = \"weights\"\nclasses = [10, 18]\nfloor = 0.05\n\
                    [[knobs.categorical]]\ndscp = 18\ncongestion_control = [\"dctcp\", \"cubic\"]\n";
        let s = Scenario::from_toml(&format!("{REF}{cats}"), "cat.toml").unwrap();
        let k = s.knob_space();
        assert_eq!(k.categorical[0].congestion_control[1].name(), "cubic");
        assert_eq!(Scenario::from_toml(&s.to_toml().unwrap(), "again").unwrap(), s);
        assert_eq!(
            Scenario::from_toml(REF, "ref").unwrap().knob_space().categorical.len(),
            0
        );
        // Errors name the key under `knobs`.
        let one = cats.replace("[\"dctcp\", \"cubic\"]", "[\"cubic\"]");
        let e = Scenario::from_toml(&format!("{REF}{one}"), "cat.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("knobs.categorical[0].congestion_control"), "{e}");
        // A starting configuration outside the allowed set is refused, naming both keys.
        let init = "[initial]\n[[initial.classes]]\ndscp = 10\nweight = 0.5\necn_threshold = 30000\ninit_cwnd = 10\n\
                    [[initial.classes]]\ndscp = 18\nweight = 0.5\necn_threshold = 30000\ninit_cwnd = 10\n\
                    congestion_control = \"bbr\"\n";
        let e = Scenario::from_toml(&format!("{REF}{init}{cats}"), "cat.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("initial.classes.AF21.congestion_control = bbr") && e.contains("knobs.categorical[0]"),
            "{e}"
        );
    }

    /// The reference scenario with a fourth class of incast queries and a QCT SLO.
    fn with_incast(incast: &str) -> String {
        let body = REF.replacen(
            "[[mix]]",
            "[[classes]]\nname = \"agg\"\ndscp = 34\nslo = { kind = \"qct_p99\", max_qct_us = 3000 }\n\n[[mix]]",
            1,
        );
        format!("{body}\n[[mix]]\ndscp = 34\nload = 0.1\n{incast}")
    }

    #[test]
    fn an_incast_class_parses_validates_and_round_trips() {
        let s = Scenario::from_toml(
            &with_incast("[mix.incast]\nfan_in = 8\nresponse_bytes = 20000\n"),
            "i.toml",
        )
        .unwrap();
        let m = &s.mix[3];
        assert_eq!(
            m.incast,
            Some(IncastSpec {
                fan_in: 8,
                response_bytes: Some(Bytes(20_000))
            })
        );
        assert_eq!(s.classes[3].slo, crate::Slo::qct_p99(Nanos(3_000_000)));
        assert_eq!(Scenario::from_toml(&s.to_toml().unwrap(), "again").unwrap(), s);
        // Responses from a CDF.
        let cdf = with_incast("size_cdf = \"meta-cache\"\n[mix.incast]\nfan_in = 4\n");
        assert_eq!(
            Scenario::from_toml(&cdf, "i.toml").unwrap().mix[3]
                .incast
                .unwrap()
                .fan_in,
            4
        );
        // Errors name the key and the value.
        for (incast, want) in [
            (
                "[mix.incast]\nfan_in = 0\nresponse_bytes = 1000\n",
                "mix[3].incast.fan_in = 0",
            ),
            (
                "[mix.incast]\nfan_in = 4\nresponse_bytes = 0\n",
                "mix[3].incast.response_bytes = 0",
            ),
            ("[mix.incast]\nfan_in = 4\n", "mix[3].size_cdf = : name a CDF"),
            (
                "size_cdf = \"meta-cache\"\n[mix.incast]\nfan_in = 4\nresponse_bytes = 10\n",
                "mix[3].size_cdf = meta-cache",
            ),
            ("size_cdf = \"meta-cache\"\n", "classes[3].slo.kind = qct_p99"),
        ] {
            let e = Scenario::from_toml(&with_incast(incast), "i.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(want), "{incast:?}: {e}");
        }
        let e = Scenario::from_toml(&with_incast("[mix.incast]\nfan_in = 4\nfanin = 3\n"), "i.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("fanin"), "{e}");
    }

    #[test]
    fn an_unknown_slo_kind_names_the_class() {
        let bad = REF.replacen(
            "slo = { max_slowdown = 15.0 }",
            "slo = { kind = \"fct_p99\", max_slowdown = 15.0 }",
            1,
        );
        let e = Scenario::from_toml(&bad, "ref.toml").unwrap_err().to_string();
        assert!(e.contains("slo.kind = \"fct_p99\" of class \"AF21\""), "{e}");
    }

    #[test]
    fn mix_for_undeclared_class_is_rejected() {
        let bad = REF.replace("dscp = 18\nsize_cdf", "dscp = 34\nsize_cdf");
        let e = Scenario::from_toml(&bad, "ref.toml").unwrap_err().to_string();
        assert!(e.starts_with("mix[1].dscp = 34"), "{e}");
    }

    #[test]
    fn a_topology_prints_drawn_numbers_to_four_digits() {
        let t = TopologySpec::Dumbbell {
            senders: 9,
            rate_mbps: 20951.417840409795,
            link_delay_us: 4.006839837627265,
        };
        assert_eq!(t.to_string(), "dumbbell, 9 senders, 20951 Mbit/s, 4.007 µs per link");
        let t = TopologySpec::Dumbbell {
            senders: 3,
            rate_mbps: 100.0,
            link_delay_us: 2.5,
        };
        assert_eq!(t.to_string(), "dumbbell, 3 senders, 100 Mbit/s, 2.5 µs per link");
    }

    #[test]
    fn a_class_without_traffic_is_refused_naming_it() {
        let (head, _) = REF.rsplit_once("[[mix]]").unwrap();
        let e = Scenario::from_toml(head, "ref.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("classes[2] = AF31: no [[mix]] entry gives class AF31"),
            "{e}"
        );
        let idle = REF.replace(
            "size_cdf = \"meta-hadoop\"\nload = 0.2",
            "size_cdf = \"meta-hadoop\"\nload = 0.0",
        );
        let e = Scenario::from_toml(&idle, "ref.toml").unwrap_err().to_string();
        assert!(e.starts_with("mix[2].load = 0: class AF31 offers no traffic"), "{e}");
        // Idle in the steady mix but loaded in a phase: traffic, so valid.
        let phased = format!("{idle}\n[[phases]]\nduration_s = 1.0\nloads = [0.2, 0.2, 0.2]\n");
        Scenario::from_toml(&phased, "ref.toml").unwrap();
    }
}
