//! The "live" network a run is measured on ("ground truth"): pktsim in-process, or the
//! namespace testbed driven by `emu` (root). Each interval the ground replays a fresh workload
//! sample of the scenario under the configuration in force and returns the per-class SLIs and
//! the workload window (what Workfeed would capture), which the controller's model replays.
//!
//! The pktsim ground touches nothing outside the process. The testbed ground creates network
//! namespaces with its own prefix and tears them down when dropped.

use crate::EvalError;
use polyphony_model::{mix_cdfs, ModelContext, Traffic};
use polyphony_model::{synthesize, NetworkModel, PktSim, SizeCdf, SynthesisOptions, TrafficMatrix};
use polyphony_spec::{Nanos, NetworkConfig, Scenario, SliVector, Workload};
use std::sync::Arc;

/// One measured interval.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Per-class SLIs of the flows measured in the interval.
    pub sli: SliVector,
    /// The interval's flows, starting at time 0.
    pub workload: Arc<Workload>,
    /// CPU seconds a packet-level simulator took to produce the interval (pktsim's replay on
    /// the measuring thread); NaN for a ground that is not a simulator.
    pub sim_cpu_s: f64,
}

/// Where measurements come from.
pub trait Ground {
    /// `pktsim` or `testbed`.
    fn name(&self) -> &'static str;
    /// Runs interval `index` (0-based) under `config`. Traffic depends on `(scenario, seed,
    /// index)` only, so every tuner of one seed sees the same arrivals.
    fn measure(&mut self, index: u64, config: &NetworkConfig) -> Result<Interval, EvalError>;
}

/// SplitMix64 finaliser: decorrelates seeds.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A scenario's traffic with an explicit leaf-spine traffic matrix (the dumbbell ignores it).
#[derive(Debug, Clone)]
pub struct ScenarioTraffic {
    /// The scenario.
    pub scenario: Scenario,
    /// Topology and classes for model inputs.
    pub context: ModelContext,
    /// Destination choice on leaf-spine fabrics.
    pub matrix: TrafficMatrix,
    cdfs: Vec<SizeCdf>,
}

impl ScenarioTraffic {
    /// Prepares `scenario` (the shipped CDFs its mix names).
    pub fn new(scenario: Scenario, matrix: TrafficMatrix) -> Result<ScenarioTraffic, EvalError> {
        let context = ModelContext::new(&scenario.topology, scenario.dscps()).map_err(EvalError::scenario)?;
        let cdfs = mix_cdfs(&scenario).map_err(EvalError::scenario)?;
        Ok(ScenarioTraffic {
            scenario,
            context,
            matrix,
            cdfs,
        })
    }

    /// The flows of window `[start, start + len)` of the scenario's timeline (phases advance
    /// with `start`), rebased to start at 0, drawn with `seed`.
    pub fn window(&self, start: Nanos, len: Nanos, seed: u64) -> Result<Workload, EvalError> {
        let mut opts = SynthesisOptions::new(len, seed);
        opts.start = start;
        opts.matrix = self.matrix;
        let mut w = synthesize(&self.scenario, &self.context.topology, &self.cdfs, &opts)
            .map_err(|e| EvalError::Ground(format!("synthesis: {e}")))?;
        for f in &mut w.flows {
            f.start = Nanos(f.start.0.saturating_sub(start.0));
        }
        w.duration = Nanos(w.duration.0.saturating_sub(start.0));
        Ok(w)
    }

    /// The workload of measurement interval `index` of a run with `seed`.
    pub fn interval(&self, index: u64, seed: u64) -> Result<Workload, EvalError> {
        let len = self.scenario.interval();
        let s = mix(self.scenario.seed ^ mix(seed) ^ mix(index + 1));
        self.window(Nanos(len.0.saturating_mul(index)), len, s)
    }
}

/// pktsim as the live network.
#[derive(Debug, Clone)]
pub struct PktsimGround {
    traffic: ScenarioTraffic,
    sim: PktSim,
    seed: u64,
}

impl PktsimGround {
    /// The live network of `traffic` for a run with `seed`.
    pub fn new(traffic: ScenarioTraffic, seed: u64) -> PktsimGround {
        PktsimGround {
            traffic,
            sim: PktSim::default(),
            seed,
        }
    }

    /// Runs `workload` under `config` once.
    pub fn replay(&self, workload: Arc<Workload>, config: &NetworkConfig, salt: u64) -> Result<SliVector, EvalError> {
        let input = self.traffic.context.input(workload, self.seed ^ salt);
        let out = self
            .sim
            .evaluate(&input, std::slice::from_ref(config))
            .pop()
            .ok_or_else(|| EvalError::Ground("pktsim returned no result".into()))?
            .map_err(|e| EvalError::Ground(format!("pktsim: {e}")))?;
        Ok(out.sli)
    }
}

impl Ground for PktsimGround {
    fn name(&self) -> &'static str {
        "pktsim"
    }
    fn measure(&mut self, index: u64, config: &NetworkConfig) -> Result<Interval, EvalError> {
        let workload = Arc::new(self.traffic.interval(index, self.seed)?);
        let c0 = crate::thread_cpu_s();
        let sli = self.replay(workload.clone(), config, index)?;
        let sim_cpu_s = crate::thread_cpu_s() - c0;
        Ok(Interval {
            sli,
            workload,
            sim_cpu_s,
        })
    }
}

/// The namespace testbed (root): `testbed::up` at construction, `Testbed::apply` before each
/// interval, `emu` replays the interval's flows; `testbed::down` when dropped. Slowdowns divide
/// by the fixed `testbed::REFERENCE_BASE_RTT` (the one the SLOs of
/// `configs/scenarios/testbed-*.toml` were calibrated with), not by the probe taken at `up`,
/// which moves 3× with the machine's load.
pub struct TestbedGround {
    bed: testbed::Testbed,
    plan: emu::EmuPlan,
    traffic: Traffic,
    seed: u64,
}

impl TestbedGround {
    /// Brings up instance `prefix` for `scenario` (a dumbbell). Needs root.
    pub fn up(scenario: &Scenario, prefix: &str, seed: u64) -> Result<TestbedGround, EvalError> {
        // testbed::up refuses without root and names what is missing.
        let bed = testbed::up(scenario, &testbed::TestbedOptions::new(prefix))
            .map_err(|e| EvalError::Ground(format!("testbed up {prefix}: {e}")))?;
        let mut plan = emu::EmuPlan::new(
            bed.state.hosts(),
            bed.state.classes.clone(),
            bed.state.reference_ideal(),
            scenario.interval(),
        );
        plan.drain = Nanos::from_secs_f64(3.0);
        let traffic = Traffic::new(scenario.clone()).map_err(EvalError::scenario)?;
        Ok(TestbedGround {
            bed,
            plan,
            traffic,
            seed,
        })
    }
}

impl TestbedGround {
    /// Traffic of the next run comes from `seed` (one instance serves every run in turn).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }
}

impl Ground for TestbedGround {
    fn name(&self) -> &'static str {
        "testbed"
    }
    fn measure(&mut self, index: u64, config: &NetworkConfig) -> Result<Interval, EvalError> {
        self.bed
            .apply(config)
            .map_err(|e| EvalError::Ground(format!("testbed apply: {e}")))?;
        let w = self
            .traffic
            .interval_workload(index, self.seed)
            .map_err(|e| EvalError::Ground(format!("{e:#}")))?;
        let r = emu::run(
            &self.plan,
            &w,
            self.traffic.scenario.interval(),
            &emu::EmuOutputs::default(),
        )
        .map_err(|e| EvalError::Ground(format!("emu: {e}")))?;
        Ok(Interval {
            sli: SliVector {
                classes: r.summary.classes,
            },
            workload: Arc::new(w),
            sim_cpu_s: f64::NAN,
        })
    }
}

impl Drop for TestbedGround {
    fn drop(&mut self) {
        if let Err(e) = testbed::down(&self.bed.names.prefix) {
            tracing::warn!("testbed down {}: {e}", self.bed.names.prefix);
        }
    }
}
