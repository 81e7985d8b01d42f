//! The simulated network and workload windows, built from the model crate: the demo's
//! scenario and the flow-size CDFs embedded in the binary (so `polyphony demo` runs from any
//! directory), workload synthesis per measurement interval, and the in-process "live" network
//! that replays each interval's workload through the packet-level simulator.
//!
//! Reads CDF files only for scenarios naming a CDF that is not embedded.

use anyhow::{anyhow, Context, Result};
use polyphony_model::{
    default_cdf_dir, synthesize, ModelInput, NetworkModel, PktSim, SizeCdf, SynthesisOptions, Topology,
};
use polyphony_spec::{Nanos, NetworkConfig, Scenario, SliVector, Workload};
use std::path::Path;
use std::sync::Arc;

/// The demo's scenario: the reference scenario at medium SLO tightness, time-scaled for the
/// simulators (`configs/scenarios/reference-sim-medium.toml`; its header says why: on the
/// unscaled 100 Mbit/s, 2.5 µs dumbbell no configuration meets the paper's SLOs).
pub const DEMO_SCENARIO: &str = include_str!("../../../configs/scenarios/reference-sim-medium.toml");

const EMBEDDED_CDFS: [(&str, &str); 5] = [
    ("meta-cache", include_str!("../../../models/cdf/meta-cache.cdf")),
    ("meta-web", include_str!("../../../models/cdf/meta-web.cdf")),
    ("meta-hadoop", include_str!("../../../models/cdf/meta-hadoop.cdf")),
    ("websearch", include_str!("../../../models/cdf/websearch.cdf")),
    ("datamining", include_str!("../../../models/cdf/datamining.cdf")),
];

/// The embedded demo scenario, parsed.
pub fn demo_scenario() -> Result<Scenario> {
    Scenario::from_toml(DEMO_SCENARIO, "reference-sim-medium.toml (embedded)").map_err(|e| anyhow!("{e}"))
}

/// Reads and validates a scenario file.
pub fn load_scenario(path: &Path) -> Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    Scenario::from_toml(&text, &path.display().to_string()).map_err(|e| anyhow!("{e}"))
}

/// The size CDF of every mix entry, in mix order: embedded ones first, else from `models/cdf/`.
pub fn mix_cdfs(scenario: &Scenario) -> Result<Vec<SizeCdf>> {
    scenario
        .mix
        .iter()
        .map(|m| match EMBEDDED_CDFS.iter().find(|(n, _)| *n == m.size_cdf) {
            Some((name, text)) => SizeCdf::parse(text, &format!("{name}.cdf (embedded)")).map_err(|e| anyhow!("{e}")),
            None => SizeCdf::load_named(&default_cdf_dir(), &m.size_cdf).map_err(|e| anyhow!("{e}")),
        })
        .collect()
}

/// What a model needs besides the workload: the topology and the classes in objective order.
#[derive(Debug, Clone)]
pub struct ModelContext {
    /// The network.
    pub topology: Arc<Topology>,
    /// The classes, in the order of the controller's objective.
    pub classes: Vec<polyphony_spec::Dscp>,
}

impl ModelContext {
    /// The context of a topology description and classes.
    pub fn new(spec: &polyphony_spec::TopologySpec, classes: Vec<polyphony_spec::Dscp>) -> Result<ModelContext> {
        let topology = Arc::new(Topology::from_spec(spec).map_err(|e| anyhow!("topology: {e}"))?);
        Ok(ModelContext { topology, classes })
    }

    /// A model input over `workload` measuring flows after a warm-up of a tenth of its span.
    pub fn input(&self, workload: Arc<Workload>, seed: u64) -> ModelInput {
        let warm = Nanos(workload.duration.0 / 10);
        let mut input = ModelInput::new(workload, self.topology.clone(), self.classes.clone());
        input.measure_from = warm;
        input.seed = seed;
        input
    }
}

/// A scenario made ready to generate traffic: topology, CDFs, classes.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// The scenario.
    pub scenario: Scenario,
    /// Its topology and classes.
    pub context: ModelContext,
    cdfs: Vec<SizeCdf>,
}

impl Traffic {
    /// Prepares a scenario.
    pub fn new(scenario: Scenario) -> Result<Traffic> {
        let context = ModelContext::new(&scenario.topology, scenario.dscps())?;
        let cdfs = mix_cdfs(&scenario)?;
        Ok(Traffic {
            scenario,
            context,
            cdfs,
        })
    }

    /// The workload of measurement interval `index` (0-based): the scenario's interval length,
    /// starting at `index · interval` (so load phases advance), drawn with a seed derived from
    /// the scenario's seed, `seed` and the index.
    pub fn interval_workload(&self, index: u64, seed: u64) -> Result<Workload> {
        let len = self.scenario.interval();
        let mut opts = SynthesisOptions::new(len, mix(self.scenario.seed ^ mix(seed) ^ mix(index + 1)));
        opts.start = Nanos(len.0.saturating_mul(index));
        let w = synthesize(&self.scenario, &self.context.topology, &self.cdfs, &opts).map_err(|e| anyhow!("{e}"))?;
        Ok(rebase(w, opts.start))
    }
}

/// Shifts a window's flows so the window starts at time 0 (models replay windows from 0).
fn rebase(mut w: Workload, start: Nanos) -> Workload {
    if start.0 == 0 {
        return w;
    }
    for f in &mut w.flows {
        f.start = Nanos(f.start.0.saturating_sub(start.0));
    }
    w.duration = Nanos(w.duration.0.saturating_sub(start.0));
    w
}

/// SplitMix64 finaliser: decorrelates seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The in-process "live" network: each interval, a fresh workload sample of the scenario is
/// replayed through pktsim under the configuration in force. What it returns is what a real
/// deployment measures: the SLIs of the interval and the workload window Workfeed captured.
#[derive(Debug, Clone)]
pub struct SimulatedNetwork {
    traffic: Traffic,
    sim: PktSim,
    seed: u64,
}

/// One interval of the simulated network.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Per-class SLIs.
    pub sli: SliVector,
    /// The flows of the interval.
    pub workload: Arc<Workload>,
}

impl SimulatedNetwork {
    /// A simulated network for `scenario`; `seed` varies the traffic samples.
    pub fn new(traffic: Traffic, seed: u64) -> SimulatedNetwork {
        SimulatedNetwork {
            traffic,
            sim: PktSim::default(),
            seed,
        }
    }

    /// The traffic description.
    pub fn traffic(&self) -> &Traffic {
        &self.traffic
    }

    /// Runs interval `index` under `config`.
    pub fn measure(&self, index: u64, config: &NetworkConfig) -> Result<Measurement> {
        let workload = Arc::new(self.traffic.interval_workload(index, self.seed)?);
        let input = self.traffic.context.input(workload.clone(), self.seed ^ index);
        let out = self
            .sim
            .evaluate(&input, std::slice::from_ref(config))
            .pop()
            .ok_or_else(|| anyhow!("pktsim returned no result"))?
            .map_err(|e| anyhow!("pktsim: {e}"))?;
        Ok(Measurement { sli: out.sli, workload })
    }
}
