//! The daemon's configuration file (TOML): its schema (this module), loading with paths
//! resolved against the file's directory ([`DaemonConfig::load`]), the rules serde cannot express
//! (`validate`), and the Prometheus query templates (`prom`).
//!
//! Parsing is strict (`deny_unknown_fields` everywhere, so a misspelt key is an error with its
//! line), and [`DaemonConfig::validate`] checks every other rule. Every error names the key and
//! the offending value ([`ConfigError`]). The module reads files (the config, the scenario it
//! names, key and token files) and touches nothing else.

mod error;
mod load;
mod prom;
mod validate;

pub use error::{ConfigError, InvalidValue, TokenError};
pub use load::line_of;
pub use prom::{ResolvedQueries, QUANTILES};
pub use validate::read_token;

use polyphony_core::{ControllerParams, OperatorParams};
use polyphony_spec::{Dscp, KnobSpace, NetworkConfig, Scenario, TopologySpec, TrafficClass};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

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

/// Which network model the controller uses as its fast model f (`kind = "flowsim-corrected"`,
/// the default; `"flowsim-aggregate"`; `"pktsim"`).
pub use polyphony_model::ModelKind;

/// `[model]`: the controller's model and how its candidates are evaluated.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Which model predicts SLIs for candidate configurations.
    #[serde(default)]
    pub kind: ModelKind,
    /// Threads evaluating candidates in parallel (0 = one per core).
    #[serde(default)]
    pub threads: usize,
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
    /// A recorded trace (JSON lines, CSV or a `simulate --export-trace` flow trace, as
    /// `polyphony_spec::Workload::from_file_text` reads them).
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
        /// Also read IPFIX (RFC 7011) on this UDP address, from exporters already deployed
        /// (switches, hosts' flow exporters, Workfeed agents with `--ipfix-export`), into the
        /// same window. IPFIX over UDP carries no authentication: expose it only to the
        /// exporters' network.
        #[serde(default)]
        ipfix_listen: Option<SocketAddr>,
        /// Private enterprise number under which IPFIX records carry Workfeed's own elements
        /// (default 32473, the number reserved for documentation; docs/workfeed.md).
        #[serde(default)]
        ipfix_enterprise: Option<u32>,
    },
    /// Workfeed datagrams that agents publish to a NATS JetStream stream (`polyphony workfeed
    /// agent --nats-url …`): the daemon reads them through a durable consumer into an embedded
    /// Workfeed connection table, journals the accepted records in its state directory and only
    /// then acknowledges them, so a restart of the daemon or of the NATS server loses no record
    /// and counts none twice. The window is taken as with `source = "workfeed"`.
    Nats {
        /// Server URL(s), e.g. `nats://10.0.0.5:4222`.
        url: String,
        /// The stream (created with subjects `<subject_prefix>.>` if absent).
        #[serde(default = "default_nats_stream")]
        stream: String,
        /// The agents' subject prefix.
        #[serde(default = "default_nats_prefix")]
        subject_prefix: String,
        /// The durable consumer's name; one per daemon.
        #[serde(default = "default_nats_consumer")]
        consumer: String,
        /// Seconds the server waits for an acknowledgement before redelivering.
        #[serde(default = "default_ack_wait_s")]
        ack_wait_s: f64,
        /// Length of the window of recent flows, in seconds.
        window_s: f64,
        /// File holding the agents' HMAC-SHA256 key: datagrams must carry a valid tag.
        #[serde(default)]
        key_file: Option<PathBuf>,
        /// NATS user (with `password_file`).
        #[serde(default)]
        user: Option<String>,
        /// File holding the NATS user's password (first line).
        #[serde(default)]
        password_file: Option<PathBuf>,
        /// File holding a NATS token (first line).
        #[serde(default)]
        token_file: Option<PathBuf>,
        /// A NATS credentials file (user JWT and nkey seed).
        #[serde(default)]
        credentials_file: Option<PathBuf>,
        /// Captured IPv4 address → host id of `[topology]`.
        #[serde(deserialize_with = "ipv4_keys")]
        hosts: BTreeMap<Ipv4Addr, u32>,
    },
}

fn default_nats_stream() -> String {
    "WORKFEED".into()
}
fn default_nats_prefix() -> String {
    "workfeed".into()
}
fn default_nats_consumer() -> String {
    "polyphony".into()
}
fn default_ack_wait_s() -> f64 {
    30.0
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

    /// The configured actuators' names, in the order they are applied (switch, tc, iproute).
    pub fn names(&self) -> Vec<String> {
        let switch = self.switch.as_ref().map(|s| match s {
            SwitchSection::LinuxTc(t) => t.tc.name.clone(),
            SwitchSection::DellOs9(v) | SwitchSection::Sonic(v) => v.name.clone(),
        });
        switch
            .into_iter()
            .chain(self.tc.as_ref().map(|t| t.name.clone()))
            .chain(self.iproute.as_ref().map(|i| i.name.clone()))
            .collect()
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

/// `on_exit`: what the daemon leaves on the network when it stops on SIGTERM/SIGINT.
///
/// `keep` (the default) leaves the configuration in force: rolling settings back on every stop
/// or restart would swing the network between two configurations, and a stop is not evidence
/// that the configuration in force is bad (the guard judges that). `revert` restores the
/// configuration found on the devices when the daemon first started with this state directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExit {
    /// Leave the configuration in force.
    #[default]
    Keep,
    /// Restore the configuration found at start.
    Revert,
}

impl OnExit {
    /// `"keep"` or `"revert"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnExit::Keep => "keep",
            OnExit::Revert => "revert",
        }
    }
}

impl<'de> Deserialize<'de> for OnExit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OnExit, D::Error> {
        let v = String::deserialize(d)?;
        match v.as_str() {
            "keep" => Ok(OnExit::Keep),
            "revert" => Ok(OnExit::Revert),
            other => Err(serde::de::Error::custom(format!(
                "on_exit = {other:?}: use \"keep\" (leave the configuration in force, the default) or \"revert\" (restore the configuration found at start)"
            ))),
        }
    }
}

/// One stage of a staged apply (`[[stages]]`): actuators applied together, then judged by the
/// guard on the classes they affect after one interval before the next stage starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSection {
    /// Names of the actuators of this stage (`tc`, `iproute`, `switch`, or their `name`).
    pub actuators: Vec<String>,
    /// Names of the classes whose SLIs judge this stage (empty: every class).
    #[serde(default)]
    pub classes: Vec<String>,
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
    /// The operator's controller hyperparameters (the core's `OperatorParams`, including its
    /// `seed`); omitted keys take the core's documented defaults, and the method's variant
    /// switches are not settable here (see [`DaemonConfig::controller_params`]).
    #[serde(default)]
    pub controller: OperatorParams,
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
    /// Warm-up intervals on a fresh start (no state yet): before the control loop, measure this
    /// many design points around the initial configuration, within the controller's initial
    /// trust radius, so the residual GP starts with datapoints (paper §8.5). 0: none.
    #[serde(default)]
    pub warmup_intervals: usize,
    /// What to leave on the network on SIGTERM/SIGINT.
    #[serde(default)]
    pub on_exit: OnExit,
    /// Ordered stages of a staged apply; empty: one stage of every actuator (all at once).
    #[serde(default)]
    pub stages: Vec<StageSection>,
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

impl DaemonConfig {
    /// The class DSCPs in declaration order.
    pub fn dscps(&self) -> Vec<Dscp> {
        self.classes.iter().map(|c| c.dscp).collect()
    }

    /// The controller's full parameters: the operator's `[controller]` table over the core's
    /// defaults.
    pub fn controller_params(&self) -> ControllerParams {
        self.controller.clone().into()
    }

    /// The knob space in use (the configured one or the per-class default).
    pub fn knob_space(&self) -> KnobSpace {
        self.knobs
            .clone()
            .unwrap_or_else(|| KnobSpace::per_class_default(&self.dscps()))
    }

    /// The starting configuration (the configured one or the uniform default).
    pub fn initial_config(&self) -> NetworkConfig {
        let cfg = self.initial.clone().unwrap_or_else(|| {
            NetworkConfig::uniform(
                &self.dscps(),
                polyphony_spec::Bytes(30_000),
                polyphony_spec::Packets(10),
            )
        });
        self.knob_space().resolve_unset(&cfg)
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

    /// The start the daemon applies and the controller records are one configuration: a
    /// categorical class left unset in `[initial]` runs its knob's first choice (the hosts'
    /// default), not the models' DCTCP.
    #[test]
    fn an_unset_algorithm_in_initial_is_the_knobs_first_choice() {
        let text = r#"interval_s = 1.0
state_dir = "s"
[[classes]]
name = "AF11"
dscp = 10
slo = { max_slowdown = 10.0 }
[[classes]]
name = "AF31"
dscp = 26
slo = { max_slowdown = 20.0 }
[topology]
kind = "dumbbell"
senders = 2
rate_mbps = 1000
link_delay_us = 2
[sli]
source = "simulated"
[workload]
source = "scenario"
scenario = "x.toml"
[knobs]
simplexes = [{ name = "weights", classes = [10, 26], floor = 0.05 }]
categorical = [{ dscp = 26, congestion_control = ["cubic", "dctcp"] }]
[initial]
classes = [
  { dscp = 10, weight = 0.5, ecn_threshold = 30000, init_cwnd = 10 },
  { dscp = 26, weight = 0.5, ecn_threshold = 30000, init_cwnd = 10, buffer = 200000 },
]
"#;
        let c = DaemonConfig::parse(text, "t.toml").expect("parses");
        let init = c.initial_config();
        assert_eq!(
            init.classes[1].congestion_control.as_ref().map(|a| a.name()),
            Some("cubic")
        );
        assert_eq!(init.classes[0].congestion_control, None);
    }

    #[test]
    fn the_aggregate_flowsim_is_chosen_by_name_and_a_misspelt_model_is_refused() {
        let m: ModelSection = toml::from_str("kind = \"flowsim-aggregate\"").expect("valid");
        assert_eq!(m.kind, ModelKind::FlowSimAggregate);
        assert_eq!(m.kind.as_str(), "flowsim-aggregate");
        let e = toml::from_str::<ModelSection>("kind = \"aggregate\"").expect_err("unknown model");
        let e = e.to_string();
        assert!(e.contains("aggregate") && e.contains("flowsim-aggregate"), "{e}");
        // flowsim's per-flow mode was retired: its name is refused, not mapped to another model.
        let e = toml::from_str::<ModelSection>("kind = \"flowsim\"").expect_err("retired model");
        assert!(e.to_string().contains("flowsim-corrected"), "{e}");
    }

    #[test]
    fn without_a_template_every_percentile_needs_its_own_query() {
        let q = PromQueries {
            p50: Some("a{dscp}".into()),
            p999: Some("c{dscp}".into()),
            ..PromQueries::default()
        };
        let InvalidValue { key, value, .. } = q.resolve(None).expect_err("p99 has no query");
        assert_eq!((key.as_str(), value.as_str()), ("sli.queries.p99", "(missing)"));
    }
}
