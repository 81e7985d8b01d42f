//! The daemon's configuration file (TOML): what it is, how it is parsed and how it is checked.
//!
//! Parsing is strict (`deny_unknown_fields` everywhere, so a misspelt key is an error with its
//! line), and [`DaemonConfig::validate`] checks every rule serde cannot express. Every error names
//! the key and the offending value. Relative paths inside the file are resolved against the
//! file's directory, so a config works from any working directory. This module reads files and
//! touches nothing else.

use polyphony_core::{ControllerParams, CoreError};
use polyphony_spec::{Dscp, KnobSpace, NetworkConfig, Scenario, SpecError, TopologySpec, TrafficClass};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A configuration that could not be loaded. Always a user error: the binary exits with code 2.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read: {why}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        why: String,
    },
    /// The text is not valid TOML for this schema (unknown key, wrong type, ...).
    #[error("{path}:{line}: {why}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// What the parser said, including the key.
        why: String,
    },
    /// A value breaks a rule.
    #[error("{path}: {key} = {value}: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// Dotted key, e.g. `classes[1].slo.max_slowdown`.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong and what to do.
        why: String,
    },
}

/// What the daemon does with the configuration it chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Compute and publish the next configuration; never touch the network.
    #[default]
    Advise,
    /// Apply the chosen configuration through the actuators.
    Apply,
}

impl Mode {
    /// `"advise"` or `"apply"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Advise => "advise",
            Mode::Apply => "apply",
        }
    }
}

/// Which network model the controller uses as its fast model f (`kind = "flowsim"`, the
/// default; `"flowsim-aggregate"`; `"pktsim"`).
pub use polyphony_model::ModelKind;

/// `[model]`: the controller's model and how its candidates are evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Which model predicts SLIs for candidate configurations.
    #[serde(default)]
    pub kind: ModelKind,
    /// Threads evaluating candidates in parallel (0 = one per core).
    #[serde(default)]
    pub threads: usize,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            kind: ModelKind::FlowSim,
            threads: 0,
        }
    }
}

/// `[sli]`: where the per-class SLIs of each interval come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum SliSource {
    /// An in-process packet-level simulation (pktsim) of the workload's scenario under the
    /// configuration in force: a "simulated network" that needs no root. Requires
    /// `[workload] source = "scenario"`.
    Simulated,
    /// The namespace testbed (docs/testbed.md): each interval the daemon replays a fresh sample
    /// of the scenario's workload with the `emu` generator (real TCP flows through the testbed's
    /// switch, root needed) and takes the per-class slowdown statistics it measured. Requires
    /// `[workload] source = "scenario"`; the window given to the model is the replayed workload.
    Emu {
        /// Testbed instance prefix (`pp` unless the testbed was brought up with another).
        #[serde(default = "default_prefix")]
        prefix: String,
        /// Base RTT in µs for the ideal FCT; measured with a ping-pong when absent.
        #[serde(default)]
        base_rtt_us: Option<f64>,
    },
    /// PromQL instant queries against a Prometheus server: for each class and each kept
    /// percentile (p50, p99, p99.9) one query, with `{dscp}` replaced by the class's DSCP and
    /// `{quantile}` by `0.5`, `0.99` or `0.999`. Each answer must be one scalar sample.
    Prometheus {
        /// Base URL of the Prometheus HTTP API, e.g. `http://127.0.0.1:9090`.
        url: String,
        /// One template for all three percentiles (needs `{dscp}` and `{quantile}`), e.g.
        /// `app_fct_slowdown{dscp="{dscp}",quantile="{quantile}"}`.
        #[serde(default)]
        query: Option<String>,
        /// Per-percentile templates (each needs `{dscp}`); a percentile given here overrides
        /// `query` for it.
        #[serde(default)]
        queries: PromQueries,
    },
    /// Per-class slowdowns of the flows Workfeed captured (the `[workload] source = "workfeed"`
    /// window): each flow's duration (connection open to close, as the probe saw it) over the
    /// ideal FCT of its path in `[topology]` (docs/models.md). Requires the workfeed workload
    /// source.
    Workfeed {
        /// Base RTT in µs for the ideal FCT; default: the topology's base RTT of the flow's path.
        #[serde(default)]
        base_rtt_us: Option<f64>,
        /// Fewest captured flows a class needs in the window for its SLI (fewer: the interval is
        /// skipped, see docs/operating.md).
        #[serde(default = "default_min_flows")]
        min_flows: u64,
    },
}

/// `[sli.queries]`: PromQL templates per percentile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PromQueries {
    /// Median slowdown.
    #[serde(default)]
    pub p50: Option<String>,
    /// 99th percentile slowdown.
    #[serde(default)]
    pub p99: Option<String>,
    /// 99.9th percentile slowdown.
    #[serde(default)]
    pub p999: Option<String>,
    /// Mean slowdown (optional; without it the median stands in for the mean, which the
    /// controller does not use).
    #[serde(default)]
    pub mean: Option<String>,
}

/// The query templates of a Prometheus SLI source, one per statistic.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedQueries {
    /// p50, p99, p99.9 templates (with `{dscp}`; `{quantile}` already substituted).
    pub percentiles: [String; 3],
    /// Mean template, if configured.
    pub mean: Option<String>,
}

/// The quantile strings substituted for `{quantile}`, in [`ResolvedQueries::percentiles`] order.
pub const QUANTILES: [&str; 3] = ["0.5", "0.99", "0.999"];

impl PromQueries {
    /// The template for each percentile (`queries.pXX`, else `query` with `{quantile}`
    /// substituted), or the key that is missing or wrong with its value and why.
    pub fn resolve(&self, query: Option<&str>) -> Result<ResolvedQueries, (String, String, String)> {
        let own = [&self.p50, &self.p99, &self.p999];
        let names = ["p50", "p99", "p999"];
        let mut out: Vec<String> = Vec::with_capacity(3);
        for i in 0..3 {
            let (key, q) =
                match (own[i], query) {
                    (Some(q), _) => (format!("sli.queries.{}", names[i]), q.clone()),
                    (None, Some(q)) => {
                        if !q.contains("{quantile}") {
                            return Err((
                                "sli.query".into(),
                                format!("{q:?}"),
                                format!(
                                "no query for {}: put a {{quantile}} placeholder in sli.query or give sli.queries.{}",
                                names[i], names[i]
                            ),
                            ));
                        }
                        ("sli.query".to_string(), q.replace("{quantile}", QUANTILES[i]))
                    }
                    (None, None) => return Err((
                        format!("sli.queries.{}", names[i]),
                        "(missing)".into(),
                        "give sli.query with {dscp} and {quantile} placeholders, or sli.queries.p50, .p99 and .p999"
                            .into(),
                    )),
                };
            check_template(&key, &q)?;
            out.push(q);
        }
        if let Some(m) = &self.mean {
            check_template("sli.queries.mean", m)?;
        }
        let percentiles: [String; 3] = [out[0].clone(), out[1].clone(), out[2].clone()];
        Ok(ResolvedQueries {
            percentiles,
            mean: self.mean.clone(),
        })
    }
}

fn check_template(key: &str, q: &str) -> Result<(), (String, String, String)> {
    if q.trim().is_empty() || !q.contains("{dscp}") {
        return Err((
            key.into(),
            format!("{q:?}"),
            "the query needs a {dscp} placeholder so one query per class can be made".into(),
        ));
    }
    Ok(())
}

fn default_min_flows() -> u64 {
    10
}

/// `[workload]`: where the workload window that the model replays comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSource {
    /// Synthesised from a scenario file's mix (sizes from the CDFs, log-normal arrivals).
    Scenario {
        /// Path to the scenario TOML (relative to this config file).
        scenario: PathBuf,
    },
    /// A recorded trace (JSON lines or CSV, as `polyphony_spec::Workload` reads them).
    Trace {
        /// Path to the trace (relative to this config file).
        path: PathBuf,
    },
    /// The flows Workfeed agents (or rack aggregators forwarding upstream) send to this daemon:
    /// it embeds a Workfeed aggregator (crates/workfeed) and each interval takes the flows whose
    /// connection opened in the last `window_s` seconds (and has closed) as the model's window.
    Workfeed {
        /// UDP address the embedded aggregator listens on (port 0: any free port, logged).
        listen: SocketAddr,
        /// Length of the window of recent flows, in seconds.
        window_s: f64,
        /// File holding the HMAC-SHA256 key shared with the agents (≥ 16 bytes); datagrams
        /// without a valid tag are then dropped and counted. Required unless `listen` is a
        /// loopback address.
        #[serde(default)]
        key_file: Option<PathBuf>,
        /// Captured IPv4 address → host id of `[topology]` (`"198.18.1.2" = 0`). Flows with an
        /// endpoint not listed here are left out of the window and counted.
        #[serde(deserialize_with = "ipv4_keys")]
        hosts: BTreeMap<Ipv4Addr, u32>,
    },
}

/// A table keyed by IPv4 addresses; a bad key is named in the error.
fn ipv4_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<Ipv4Addr, u32>, D::Error> {
    use serde::de::Error;
    BTreeMap::<String, u32>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| {
            k.parse::<Ipv4Addr>().map(|a| (a, v)).map_err(|_| {
                D::Error::custom(format!(
                    "workload.hosts: {k:?} is not an IPv4 address (write \"198.18.1.2\" = 0)"
                ))
            })
        })
        .collect()
}

/// `[http]`: the status API and `/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Listen address; loopback by default. Port 0 picks a free port (logged at start).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// A file whose first line is the bearer token that state-changing endpoints require.
    /// Without a token those endpoints answer 403.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

fn default_prefix() -> String {
    "pp".into()
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9464))
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            listen: default_listen(),
            token_file: None,
        }
    }
}

/// `[actuators]`: the actuator crates' own configurations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ActuatorsSection {
    /// Linux tc at the bottleneck (weights, ECN thresholds, buffers).
    #[serde(default)]
    pub tc: Option<polyphony_actuator_tc::TcConfig>,
    /// `ip route` initcwnd on the senders.
    #[serde(default)]
    pub iproute: Option<polyphony_actuator_iproute::IprouteConfig>,
    /// A switch over SSH, by dialect.
    #[serde(default)]
    pub switch: Option<SwitchSection>,
}

/// `[actuators.switch]`: a switch reached over SSH, by its `dialect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dialect", rename_all = "kebab-case")]
pub enum SwitchSection {
    /// A Linux switch (the testbed's `P-sw`, or any Linux box): the tc actuator over SSH.
    LinuxTc(polyphony_actuator_tc::TcOverSsh),
    /// Dell Networking OS9 (FTOS) through its CLI.
    DellOs9(polyphony_actuator_switch_cli::VendorConfig),
    /// SONiC through CONFIG_DB.
    Sonic(polyphony_actuator_switch_cli::VendorConfig),
}

impl ActuatorsSection {
    /// Whether no actuator is configured.
    pub fn is_empty(&self) -> bool {
        self.tc.is_none() && self.iproute.is_none() && self.switch.is_none()
    }
}

/// `[guard]`: when the daemon gives up on the configuration it tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSection {
    /// If the measured objective J exceeds this value, return to the last known good
    /// configuration. J ≈ the worst SLI/SLO ratio, so 2.0 means "some class at twice its SLO".
    #[serde(default = "default_max_objective")]
    pub max_objective: f64,
}

fn default_max_objective() -> f64 {
    2.5
}

impl Default for GuardSection {
    fn default() -> Self {
        GuardSection {
            max_objective: default_max_objective(),
        }
    }
}

/// The whole daemon configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// `apply` or `advise`.
    #[serde(default)]
    pub mode: Mode,
    /// Seconds between control iterations.
    pub interval_s: f64,
    /// Where controller state and history are kept.
    pub state_dir: PathBuf,
    /// The classes, their DSCPs and SLOs.
    pub classes: Vec<TrafficClass>,
    /// The network the model represents.
    pub topology: TopologySpec,
    /// The knob space; default: weights simplex + per-class ECN threshold and initcwnd.
    #[serde(default)]
    pub knobs: Option<KnobSpace>,
    /// The configuration to start from when no state exists; default: equal weights, K = 30 kB,
    /// initcwnd 10.
    #[serde(default)]
    pub initial: Option<NetworkConfig>,
    /// Controller hyperparameters (the core's `ControllerParams`, including its `seed`);
    /// omitted keys take the core's documented defaults.
    #[serde(default)]
    pub controller: ControllerParams,
    /// The model.
    #[serde(default)]
    pub model: ModelSection,
    /// The SLI source.
    pub sli: SliSource,
    /// The workload source.
    pub workload: WorkloadSource,
    /// Actuators (`[actuators.tc]`, `[actuators.iproute]`, `[actuators.switch]`; see
    /// docs/actuators.md), applied in the order switch, tc, iproute, all or nothing.
    #[serde(default)]
    pub actuators: ActuatorsSection,
    /// The HTTP API.
    #[serde(default)]
    pub http: HttpSection,
    /// The guard.
    #[serde(default)]
    pub guard: GuardSection,
}

/// A configuration that parsed and validated, with the file it came from and the scenario it
/// names (if any), both already loaded.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The parsed configuration, paths resolved.
    pub config: DaemonConfig,
    /// The file.
    pub path: PathBuf,
    /// The workload scenario when `[workload] source = "scenario"`.
    pub scenario: Option<Scenario>,
}

/// The 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl DaemonConfig {
    /// Parses TOML text; `path` names it in errors. Does not validate.
    pub fn parse(text: &str, path: &str) -> Result<DaemonConfig, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            line: e.span().map(|r| line_of(text, r.start)).unwrap_or(0),
            why: e.message().trim().replace('\n', " "),
        })
    }

    /// Reads, parses, resolves relative paths against the file's directory, validates, and
    /// loads the scenario the workload source names.
    pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: shown.clone(),
            why: e.to_string(),
        })?;
        let mut config = DaemonConfig::parse(&text, &shown)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        config.resolve_paths(&base);
        let scenario = config.validate(&shown)?;
        Ok(LoadedConfig {
            config,
            path: path.to_path_buf(),
            scenario,
        })
    }

    fn resolve_paths(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.state_dir);
        if let Some(t) = &mut self.http.token_file {
            fix(t);
        }
        match &mut self.workload {
            WorkloadSource::Scenario { scenario } => fix(scenario),
            WorkloadSource::Trace { path } => fix(path),
            WorkloadSource::Workfeed { key_file, .. } => {
                if let Some(k) = key_file {
                    fix(k);
                }
            }
        }
    }

    /// The class DSCPs in declaration order.
    pub fn dscps(&self) -> Vec<Dscp> {
        self.classes.iter().map(|c| c.dscp).collect()
    }

    /// The knob space in use (the configured one or the per-class default).
    pub fn knob_space(&self) -> KnobSpace {
        self.knobs
            .clone()
            .unwrap_or_else(|| KnobSpace::per_class_default(&self.dscps()))
    }

    /// The starting configuration (the configured one or the uniform default).
    pub fn initial_config(&self) -> NetworkConfig {
        self.initial.clone().unwrap_or_else(|| {
            NetworkConfig::uniform(
                &self.dscps(),
                polyphony_spec::Bytes(30_000),
                polyphony_spec::Packets(10),
            )
        })
    }

    /// Checks every rule; returns the workload scenario when the source names one.
    pub fn validate(&self, path: &str) -> Result<Option<Scenario>, ConfigError> {
        let bad = |key: &str, value: &dyn std::fmt::Display, why: &str| ConfigError::Invalid {
            path: path.into(),
            key: key.into(),
            value: value.to_string(),
            why: why.into(),
        };
        let spec = |prefix: &str, e: SpecError| match e {
            SpecError::Invalid { field, value, why } => ConfigError::Invalid {
                path: path.into(),
                key: if prefix.is_empty() {
                    field
                } else {
                    format!("{prefix}.{field}")
                },
                value,
                why,
            },
            SpecError::Parse { source_name, line, why } => ConfigError::Parse {
                path: source_name,
                line,
                why,
            },
        };
        if !(self.interval_s.is_finite() && self.interval_s >= 0.05 && self.interval_s <= 86_400.0) {
            return Err(bad(
                "interval_s",
                &self.interval_s,
                "the control interval is in seconds, between 0.05 and 86400",
            ));
        }
        if self.state_dir.as_os_str().is_empty() {
            return Err(bad("state_dir", &"\"\"", "name a directory for controller state"));
        }
        // The spec's class rules (distinct DSCPs and names, SLO ≥ 1, ...), via a scenario-less check.
        polyphony_spec::validate_classes(&self.classes, "classes").map_err(|e| spec("", e))?;
        let space = self.knob_space();
        space.validate_for(&self.dscps()).map_err(|e| spec("knobs", e))?;
        self.controller.validate().map_err(|e| match e {
            CoreError::InvalidParam { field, value, why } => ConfigError::Invalid {
                path: path.into(),
                key: format!("controller.{field}"),
                value,
                why,
            },
            other => bad("controller", &"(table)", &other.to_string()),
        })?;
        polyphony_core::Space::new(&space, self.controller.aitchison_alpha)
            .map_err(|e| bad("knobs", &"(table)", &e.to_string()))?;
        let init = self.initial_config();
        init.validate().map_err(|e| spec("initial", e))?;
        if init.classes.len() != self.classes.len() || self.classes.iter().any(|c| init.class(c.dscp).is_none()) {
            return Err(bad(
                "initial.classes",
                &format!("{} classes", init.classes.len()),
                "configure exactly the classes declared under [[classes]]",
            ));
        }
        if !(self.guard.max_objective.is_finite() && self.guard.max_objective > 0.0) {
            return Err(bad(
                "guard.max_objective",
                &self.guard.max_objective,
                "a positive objective value (≈ worst SLI/SLO ratio) above which the daemon rolls back",
            ));
        }
        if self.model.threads > 1024 {
            return Err(bad(
                "model.threads",
                &self.model.threads,
                "use 0 (one per core) or up to 1024",
            ));
        }
        match &self.sli {
            SliSource::Simulated => {
                if !matches!(self.workload, WorkloadSource::Scenario { .. }) {
                    return Err(bad(
                        "sli.source",
                        &"\"simulated\"",
                        "a simulated network needs [workload] source = \"scenario\" to know its traffic",
                    ));
                }
            }
            SliSource::Emu { prefix, base_rtt_us } => {
                if !matches!(self.workload, WorkloadSource::Scenario { .. }) {
                    return Err(bad(
                        "sli.source",
                        &"\"emu\"",
                        "the emu source replays the scenario's traffic: set [workload] source = \"scenario\"",
                    ));
                }
                if prefix.is_empty()
                    || prefix.len() > 4
                    || !prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                {
                    return Err(bad(
                        "sli.prefix",
                        &format!("{prefix:?}"),
                        "a testbed prefix is 1–4 characters [a-z0-9]",
                    ));
                }
                if let Some(us) = base_rtt_us {
                    if !(us.is_finite() && *us > 0.0) {
                        return Err(bad("sli.base_rtt_us", us, "a positive number of microseconds"));
                    }
                }
            }
            SliSource::Prometheus { url, query, queries } => {
                check_url("sli.url", url).map_err(|(k, v, w)| bad(k, &v, w))?;
                queries.resolve(query.as_deref()).map_err(|(k, v, w)| bad(&k, &v, &w))?;
            }
            SliSource::Workfeed { base_rtt_us, min_flows } => {
                if !matches!(self.workload, WorkloadSource::Workfeed { .. }) {
                    return Err(bad(
                        "sli.source",
                        &"\"workfeed\"",
                        "SLIs from Workfeed need the flows it captures: set [workload] source = \"workfeed\"",
                    ));
                }
                if let Some(us) = base_rtt_us {
                    if !(us.is_finite() && *us > 0.0) {
                        return Err(bad("sli.base_rtt_us", us, "a positive number of microseconds"));
                    }
                }
                if *min_flows == 0 {
                    return Err(bad(
                        "sli.min_flows",
                        min_flows,
                        "at least 1 flow per class is needed for a percentile",
                    ));
                }
            }
        }
        let scenario = match &self.workload {
            WorkloadSource::Scenario { scenario } => {
                let shown = scenario.display().to_string();
                let text = std::fs::read_to_string(scenario).map_err(|e| ConfigError::Invalid {
                    path: path.into(),
                    key: "workload.scenario".into(),
                    value: format!("{shown:?}"),
                    why: format!("cannot read the scenario: {e}"),
                })?;
                let s = Scenario::from_toml(&text, &shown).map_err(|e| spec("workload.scenario", e))?;
                let mut a = s.dscps();
                let mut b = self.dscps();
                a.sort();
                b.sort();
                if a != b {
                    return Err(bad(
                        "workload.scenario",
                        &format!("{shown:?}"),
                        "the scenario's classes (DSCPs) differ from [[classes]]",
                    ));
                }
                Some(s)
            }
            WorkloadSource::Trace { .. } => None,
            WorkloadSource::Workfeed {
                listen,
                window_s,
                key_file,
                hosts,
            } => {
                self.validate_workfeed(path, *listen, *window_s, key_file.as_deref(), hosts)?;
                None
            }
        };
        if self.mode == Mode::Apply && self.actuators.is_empty() && !matches!(self.sli, SliSource::Simulated) {
            return Err(bad(
                "mode",
                &"\"apply\"",
                "apply mode needs at least one [actuators.*] table (or use mode = \"advise\")",
            ));
        }
        if let Some(t) = &self.http.token_file {
            read_token(t).map_err(|why| bad("http.token_file", &format!("{:?}", t.display().to_string()), &why))?;
        }
        Ok(scenario)
    }
}

impl DaemonConfig {
    fn validate_workfeed(
        &self,
        path: &str,
        listen: SocketAddr,
        window_s: f64,
        key_file: Option<&Path>,
        hosts: &BTreeMap<Ipv4Addr, u32>,
    ) -> Result<(), ConfigError> {
        let bad = |key: &str, value: &dyn std::fmt::Display, why: &str| ConfigError::Invalid {
            path: path.into(),
            key: key.into(),
            value: value.to_string(),
            why: why.into(),
        };
        if !(window_s.is_finite() && window_s > 0.0 && window_s <= 86_400.0) {
            return Err(bad(
                "workload.window_s",
                &window_s,
                "seconds of recent flows, in (0, 86400]",
            ));
        }
        match key_file {
            Some(k) => {
                workfeed::wire::AuthKey::from_file(k).map_err(|e| {
                    bad(
                        "workload.key_file",
                        &format!("{:?}", k.display().to_string()),
                        &e.to_string(),
                    )
                })?;
            }
            None if !listen.ip().is_loopback() => {
                return Err(bad(
                    "workload.key_file",
                    &"(missing)",
                    "a Workfeed listener on a non-loopback address needs the agents' HMAC key file (≥ 16 bytes)",
                ))
            }
            None => {}
        }
        if hosts.is_empty() {
            return Err(bad(
                "workload.hosts",
                &"{}",
                "map every captured address to a [topology] host (\"198.18.1.2\" = 0); without it no flow can be modelled",
            ));
        }
        let n = polyphony_model::Topology::from_spec(&self.topology)
            .map(|t| t.hosts())
            .map_err(|e| bad("topology", &"(table)", &e.to_string()))?;
        if let Some((addr, id)) = hosts.iter().find(|(_, id)| **id >= n) {
            return Err(bad(
                &format!("workload.hosts.\"{addr}\""),
                id,
                &format!("the topology has {n} hosts, numbered 0..{}", n.saturating_sub(1)),
            ));
        }
        Ok(())
    }
}

/// Reads the bearer token: the file's first line, trimmed, at least 16 characters.
pub fn read_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the token file: {e}"))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 {
        return Err("the token (first line of the file) must have at least 16 characters".into());
    }
    Ok(token)
}

fn check_url(key: &'static str, url: &str) -> Result<(), (&'static str, String, &'static str)> {
    if url.starts_with("http://") && url.len() > "http://".len() {
        Ok(())
    } else {
        Err((
            key,
            format!("{url:?}"),
            "an http:// URL, e.g. \"http://127.0.0.1:9100/metrics\"",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_percentile_query_overrides_the_template_and_quantiles_are_substituted() {
        let q = PromQueries {
            p99: Some("tail99{dscp=\"{dscp}\"}".into()),
            ..PromQueries::default()
        };
        let r = q
            .resolve(Some("s{dscp=\"{dscp}\",quantile=\"{quantile}\"}"))
            .expect("valid");
        assert_eq!(
            r.percentiles,
            [
                "s{dscp=\"{dscp}\",quantile=\"0.5\"}".to_string(),
                "tail99{dscp=\"{dscp}\"}".to_string(),
                "s{dscp=\"{dscp}\",quantile=\"0.999\"}".to_string(),
            ]
        );
        assert_eq!(r.mean, None);
    }

    #[test]
    fn each_switch_dialect_selects_its_actuator_and_an_unknown_one_is_refused() {
        let lt: ActuatorsSection = toml::from_str(
            r#"[switch]
dialect = "linux-tc"
ssh = { host = "198.18.100.1", identity = "/k", known_hosts = "/h" }
tc = { device = "rx", link_rate = 100000000, ecn_map_pin = "/sys/fs/bpf/polyphony/pp/ecn_thresh_ns" }"#,
        )
        .expect("linux-tc");
        assert!(matches!(lt.switch, Some(SwitchSection::LinuxTc(ref t)) if t.tc.device == "rx"));
        let os9: ActuatorsSection = toml::from_str(
            r#"[switch]
dialect = "dell-os9"
ports = ["TenGigabitEthernet 1/48"]
queues = [{ dscp = 10, queue = 1 }]
link_rate = 10000000000
ssh = { host = "s4048", identity = "/k", known_hosts = "/h" }"#,
        )
        .expect("dell-os9");
        assert!(matches!(os9.switch, Some(SwitchSection::DellOs9(_))));
        let e = toml::from_str::<ActuatorsSection>("[switch]\ndialect = \"junos\"").expect_err("unknown dialect");
        assert!(e.to_string().contains("junos"), "{e}");
    }

    #[test]
    fn the_aggregate_flowsim_is_chosen_by_name_and_a_misspelt_model_is_refused() {
        let m: ModelSection = toml::from_str("kind = \"flowsim-aggregate\"").expect("valid");
        assert_eq!(m.kind, ModelKind::FlowSimAggregate);
        assert_eq!(m.kind.as_str(), "flowsim-aggregate");
        let e = toml::from_str::<ModelSection>("kind = \"aggregate\"").expect_err("unknown model");
        let e = e.to_string();
        assert!(e.contains("aggregate") && e.contains("flowsim-aggregate"), "{e}");
    }

    #[test]
    fn without_a_template_every_percentile_needs_its_own_query() {
        let q = PromQueries {
            p50: Some("a{dscp}".into()),
            p999: Some("c{dscp}".into()),
            ..PromQueries::default()
        };
        let (key, value, _) = q.resolve(None).expect_err("p99 has no query");
        assert_eq!((key.as_str(), value.as_str()), ("sli.queries.p99", "(missing)"));
    }
}
