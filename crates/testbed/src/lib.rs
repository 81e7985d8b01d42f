//! The namespace testbed (`docs/testbed.md` is the contract of its names): builds and tears
//! down, on this host, a real multi-class network — sender, switch and receiver namespaces
//! joined by veths; at the switch's bottleneck an HTB class per traffic class with bfifo
//! leaves and u32 DSCP filters; a tc BPF sojourn-time ECN marker with thresholds in a pinned
//! map; the project's BPF struct_ops DCTCP (`pp_dctcp`) on every host; per-class initial
//! windows through fwmark rules and routing tables.
//!
//! It touches only objects named after its instance prefix (namespaces `<P>-*`, pins under
//! `/sys/fs/bpf/polyphony/<P>/`, `/run/polyphony/testbed/<P>.json`, the cgroup
//! `<cgroup2>/polyphony/<P>`) plus the machine-global `pp_dctcp` registration, which it shares
//! between instances (see [`dctcp`]).
#![warn(missing_docs)]

mod cli;
pub mod cmd;
pub mod dctcp;
mod error;
pub mod knobs;
pub mod marker;
pub mod names;
pub mod net;
pub mod preflight;
pub mod status;

pub use cli::{run_cli, TestbedArgs, TestbedCommand};
pub use error::TestbedError;
pub use names::Names;
pub use status::{InstanceState, TestbedStatus};

use polyphony_spec::{BitsPerSec, Bytes, Nanos, NetworkConfig, Packets, Scenario};

/// ECN threshold of the default configuration.
pub const DEFAULT_K: Bytes = Bytes(30_000);
/// Initial window of the default configuration.
pub const DEFAULT_INIT_CWND: Packets = Packets(10);
/// The base RTT that calibrated testbed studies (`configs/scenarios/testbed-*.toml`, the
/// daemon's end-to-end test, `eval --ground testbed`) divide flow completion times by: 25 µs,
/// the idle probe on a quiet machine (`docs/testbed-measurements.md`). The probe taken at
/// `up` ([`InstanceState::base_rtt`]) swings between 21 and 98 µs with the machine's load
/// (three `up`s within one second read 58, 25 and 78 µs), which rescales every small flow's
/// slowdown by up to 3×; a fixed reference keeps slowdowns of different runs comparable.
pub const REFERENCE_BASE_RTT: Nanos = Nanos(25_000);

/// How to build an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct TestbedOptions {
    /// Instance prefix (1–4 of `[a-z0-9]`).
    pub prefix: String,
    /// Bottleneck rate; default the scenario's link rate.
    pub rate: Option<BitsPerSec>,
    /// Configuration to apply; default the scenario's `initial`, else uniform weights,
    /// K = 30 kB, initcwnd 10.
    pub config: Option<NetworkConfig>,
    /// Measure the base RTT (a ~0.1 s ping-pong) at `up`; when false, `base_rtt` is recorded as 0.
    pub measure_rtt: bool,
}

impl TestbedOptions {
    /// Defaults for `prefix`.
    pub fn new(prefix: &str) -> TestbedOptions {
        TestbedOptions {
            prefix: prefix.into(),
            rate: None,
            config: None,
            measure_rtt: true,
        }
    }
}

/// A running instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Testbed {
    /// Its names.
    pub names: Names,
    /// What `up` recorded.
    pub state: InstanceState,
}

impl Testbed {
    /// Builds (or completes, or re-applies) instance `opts.prefix` for `scenario`.
    pub fn up(scenario: &Scenario, opts: &TestbedOptions) -> Result<Testbed, TestbedError> {
        up(scenario, opts)
    }
    /// Applies a configuration to the running instance and records it.
    pub fn apply(&mut self, cfg: &NetworkConfig) -> Result<(), TestbedError> {
        knobs::apply(&self.names, self.state.senders, self.state.rate, cfg)?;
        self.state.config = cfg.clone();
        self.state.write(&self.names)
    }
    /// The live status.
    pub fn status(&self) -> Result<TestbedStatus, TestbedError> {
        status::read(&self.names)
    }
}

/// The dumbbell's sender count and rate, or why the scenario cannot run here.
fn dumbbell(scenario: &Scenario) -> Result<(u32, BitsPerSec), TestbedError> {
    match scenario.topology.dumbbell_senders() {
        Some(senders) if (1..=16).contains(&senders) => Ok((senders, scenario.topology.reference_rate())),
        Some(senders) => Err(TestbedError::invalid(
            "topology.senders",
            senders,
            "the namespace testbed hosts 1..=16 senders",
        )),
        None => Err(TestbedError::invalid(
            "topology.kind",
            "leaf_spine",
            "the namespace testbed is a dumbbell; run leaf-spine scenarios in pktsim",
        )),
    }
}

/// Builds instance `opts.prefix` for `scenario`. Idempotent: every step creates what is absent
/// and replaces what is there, so running it twice gives the same network.
pub fn up(scenario: &Scenario, opts: &TestbedOptions) -> Result<Testbed, TestbedError> {
    let n = Names::new(&opts.prefix)?;
    let (senders, srate) = dumbbell(scenario)?;
    let rate = opts.rate.unwrap_or(srate);
    if rate.0 < 1_000_000 || rate.0 > 10_000_000_000 {
        return Err(TestbedError::invalid("rate", rate, "use 1 Mbit/s ..= 10 Gbit/s"));
    }
    let cfg = opts
        .config
        .clone()
        .or_else(|| scenario.initial.clone())
        .unwrap_or_else(|| NetworkConfig::uniform(&scenario.dscps(), DEFAULT_K, DEFAULT_INIT_CWND));
    cfg.validate()
        .map_err(|e| TestbedError::invalid("config", "the initial configuration", e.to_string()))?;
    preflight::check()?;
    let lock = dctcp::lock()?;
    // Mark the instance alive before anything else, so a concurrent `down` elsewhere keeps
    // pp_dctcp registered.
    std::fs::create_dir_all(n.pin_dir()).map_err(|e| TestbedError::io(n.pin_dir(), e))?;
    dctcp::ensure(&lock, names::STATE_ROOT)?;
    drop(lock);
    net::build(&n, senders)?;
    net::set_transport(&n, senders, testbed_ebpf::DCTCP_NAME)?;
    knobs::set_receiver_route(&n)?;
    knobs::build_bottleneck(&n, rate, &cfg)?;
    marker::install(&n)?;
    knobs::apply(&n, senders, rate, &cfg)?;
    if let Some(root) = preflight::cgroup2_mount() {
        let cg = format!("{root}/polyphony/{}", n.prefix);
        std::fs::create_dir_all(&cg).map_err(|e| TestbedError::io(&cg, e))?;
    }
    let mut state = InstanceState {
        prefix: n.prefix.clone(),
        scenario: scenario.name.clone(),
        senders,
        rate,
        classes: scenario.classes.iter().map(|c| (c.dscp, c.name.clone())).collect(),
        config: cfg,
        base_rtt: polyphony_spec::Nanos(0),
    };
    if opts.measure_rtt {
        state.base_rtt = polyphony_netns::base_rtt(&state.hosts(), 0)?;
    }
    state.write(&n)?;
    tracing::info!(
        "testbed {} up: {senders} senders at {rate}, base RTT {}",
        n.prefix,
        state.base_rtt
    );
    Ok(Testbed { names: n, state })
}

/// What `down` removed.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DownReport {
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
    /// Whether the BPF pin directory was removed.
    pub pins: bool,
    /// Whether the BPF root `/sys/fs/bpf/polyphony` was removed (it was left empty: no other
    /// instance's pins remain).
    pub pins_root: bool,
    /// Whether the cgroup was removed.
    pub cgroup: bool,
    /// Whether `pp_dctcp` was unregistered (only when no other instance remains).
    pub dctcp_unregistered: bool,
}

/// Removes everything instance `prefix` made, also after a crash (works from names alone), and the
/// BPF root `/sys/fs/bpf/polyphony` when no other instance's pins remain in it.
pub fn down(prefix: &str) -> Result<DownReport, TestbedError> {
    let n = Names::new(prefix)?;
    if !preflight::is_root() {
        return Err(TestbedError::NotRoot);
    }
    let mut r = DownReport {
        namespaces: net::remove(&n)?,
        ..Default::default()
    };
    // Pins and the BPF root change under the lock `up` creates them under, so an instance coming
    // up never sees its root vanish, and the root is never seen empty while the lock is free.
    let lock = dctcp::lock()?;
    let pins = n.pin_dir();
    if std::path::Path::new(&pins).exists() {
        std::fs::remove_dir_all(&pins).map_err(|e| TestbedError::io(&pins, e))?;
        r.pins = true;
    }
    r.pins_root = remove_if_empty(names::BPF_ROOT)?;
    if let Some(root) = preflight::cgroup2_mount() {
        let cg = format!("{root}/polyphony/{}", n.prefix);
        if std::path::Path::new(&cg).exists() {
            std::fs::remove_dir(&cg).map_err(|e| TestbedError::io(&cg, e))?;
            r.cgroup = true;
        }
    }
    let sf = n.state_file();
    if std::path::Path::new(&sf).exists() {
        std::fs::remove_file(&sf).map_err(|e| TestbedError::io(&sf, e))?;
    }
    r.dctcp_unregistered = dctcp::release(&lock, &n.prefix)?;
    Ok(r)
}

/// Removes the directory `dir` if it exists and is empty; returns whether it did.
fn remove_if_empty(dir: &str) -> Result<bool, TestbedError> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(TestbedError::io(dir, e)),
    }
}

/// The live status of instance `prefix`.
pub fn status(prefix: &str) -> Result<TestbedStatus, TestbedError> {
    status::read(&Names::new(prefix)?)
}

/// The running instance `prefix`, from its state file.
pub fn attach(prefix: &str) -> Result<Testbed, TestbedError> {
    let names = Names::new(prefix)?;
    let state = InstanceState::read(&names)?;
    Ok(Testbed { names, state })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAF: &str = r#"
name = "ls"
interval_s = 12.0
[topology]
kind = "leaf_spine"
racks = 2
hosts_per_rack = 2
spines = 1
host_rate_mbps = 100
fabric_rate_mbps = 100
link_delay_us = 1
[[classes]]
name = "AF11"
dscp = 10
slo = { max_slowdown = 11.0 }
[[mix]]
dscp = 10
size_cdf = "meta-cache"
load = 0.2
"#;

    #[test]
    fn leaf_spine_scenarios_are_refused_with_the_reason() {
        let sc = Scenario::from_toml(LEAF, "ls.toml").unwrap();
        let e = up(&sc, &TestbedOptions::new("ppt")).unwrap_err().to_string();
        assert!(e.contains("topology.kind") && e.contains("dumbbell"), "{e}");
    }

    #[test]
    fn only_an_empty_directory_is_removed() {
        let root = std::env::temp_dir().join(format!("pp-testbed-rmdir-{}", std::process::id()));
        let other = root.join("other-instance");
        std::fs::create_dir_all(&other).unwrap();
        let dir = root.to_str().unwrap();
        assert!(!remove_if_empty(dir).unwrap(), "another instance's directory is inside");
        assert!(other.exists());
        std::fs::remove_dir(&other).unwrap();
        assert!(remove_if_empty(dir).unwrap());
        assert!(!root.exists());
        assert!(!remove_if_empty(dir).unwrap(), "already gone");
    }

    #[test]
    fn a_bad_prefix_is_refused_before_anything_is_touched() {
        let e = down("../etc").unwrap_err().to_string();
        assert!(e.starts_with("prefix"), "{e}");
    }
}
