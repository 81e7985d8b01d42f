//! A scenario's network as the controller sees it, interval by interval: the traffic of each
//! measurement interval ([`Traffic`]), the in-process "live" network that replays an interval
//! through pktsim under the configuration in force ([`SimulatedNetwork`]), and the bridge from a
//! [`NetworkModel`] to the controller's [`PerformanceModel`] ([`WindowModel`]: a batch of
//! candidate configurations scored on one workload window with common random numbers, split
//! across a rayon pool).
//!
//! No file and no clock: the CDFs are the shipped ones, and a caller that wants the model's
//! time passes its own clocks ([`WindowModel::with_clock`] for wall time,
//! [`WindowModel::with_cpu_clock`] for CPU time on the pool's threads).

use crate::error::ModelError;
use crate::model::{ModelInput, NetworkModel};
use crate::pktsim::PktSim;
use crate::synth::{mix_cdfs, synthesize, SynthesisOptions};
use crate::topology::Topology;
use crate::SizeCdf;
use polyphony_spec::{Dscp, Nanos, NetworkConfig, PerformanceModel, Scenario, SliVector, TopologySpec, Workload};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a model needs besides the workload: the topology and the classes in objective order.
#[derive(Debug, Clone)]
pub struct ModelContext {
    /// The network.
    pub topology: Arc<Topology>,
    /// The classes, in the order of the controller's objective.
    pub classes: Vec<Dscp>,
}

impl ModelContext {
    /// The context of a topology description and classes.
    pub fn new(spec: &TopologySpec, classes: Vec<Dscp>) -> Result<ModelContext, ModelError> {
        let topology = Arc::new(Topology::from_spec(spec)?);
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
    /// Prepares a scenario with the shipped CDFs its mix names.
    pub fn new(scenario: Scenario) -> Result<Traffic, ModelError> {
        let cdfs = mix_cdfs(&scenario)?;
        Traffic::with_cdfs(scenario, cdfs)
    }

    /// Prepares a scenario with the caller's CDFs, one per mix entry in mix order.
    pub fn with_cdfs(scenario: Scenario, cdfs: Vec<SizeCdf>) -> Result<Traffic, ModelError> {
        if cdfs.len() != scenario.mix.len() {
            return Err(ModelError::invalid(
                "cdfs",
                cdfs.len(),
                format!(
                    "give one CDF per mix entry of scenario {:?} ({})",
                    scenario.name,
                    scenario.mix.len()
                ),
            ));
        }
        let context = ModelContext::new(&scenario.topology, scenario.dscps())?;
        Ok(Traffic {
            scenario,
            context,
            cdfs,
        })
    }

    /// The CDFs, one per mix entry.
    pub fn cdfs(&self) -> &[SizeCdf] {
        &self.cdfs
    }

    /// The workload of measurement interval `index` (0-based): the scenario's interval length,
    /// starting at `index · interval` (so load phases advance), drawn with a seed derived from
    /// the scenario's seed, `seed` and the index, and shifted to start at time 0.
    pub fn interval_workload(&self, index: u64, seed: u64) -> Result<Workload, ModelError> {
        let len = self.scenario.interval();
        let mut opts = SynthesisOptions::new(len, mix(self.scenario.seed ^ mix(seed) ^ mix(index + 1)));
        opts.start = Nanos(len.0.saturating_mul(index));
        let w = synthesize(&self.scenario, &self.context.topology, &self.cdfs, &opts)?;
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
    /// A simulated network for `traffic`; `seed` varies the traffic samples.
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
    pub fn measure(&self, index: u64, config: &NetworkConfig) -> Result<Measurement, ModelError> {
        let workload = Arc::new(self.traffic.interval_workload(index, self.seed)?);
        let input = self.traffic.context.input(workload.clone(), self.seed ^ index);
        let out = self
            .sim
            .evaluate(&input, std::slice::from_ref(config))
            .pop()
            .unwrap_or_else(|| Err(ModelError::invalid("configs", 1, "pktsim returned no result")))?;
        Ok(Measurement { sli: out.sli, workload })
    }
}

/// A rayon pool with `threads` threads (0 = one per core).
pub fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    let b = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("model-{i}"));
    // Building a pool fails only when threads cannot be spawned; fall back to a single thread.
    Arc::new(b.build().unwrap_or_else(|_| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap_or_else(|e| panic!("cannot start even one model thread: {e}"))
    }))
}

/// A monotonic clock in nanoseconds, supplied by a caller that wants the model's time. As a CPU
/// clock ([`WindowModel::with_cpu_clock`]) it reads the CPU time of the thread that calls it.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// A [`PerformanceModel`] over one workload window.
pub struct WindowModel {
    model: Arc<dyn NetworkModel>,
    context: ModelContext,
    workload: Arc<Workload>,
    pool: Arc<rayon::ThreadPool>,
    clock: Option<Clock>,
    nanos: AtomicU64,
    cpu_clock: Option<Clock>,
    cpu_nanos: AtomicU64,
    calls: AtomicU64,
}

impl WindowModel {
    /// A model of `context`'s network replaying `workload`.
    pub fn new(
        model: Arc<dyn NetworkModel>,
        context: ModelContext,
        workload: Arc<Workload>,
        pool: Arc<rayon::ThreadPool>,
    ) -> WindowModel {
        WindowModel {
            model,
            context,
            workload,
            pool,
            clock: None,
            nanos: AtomicU64::new(0),
            cpu_clock: None,
            cpu_nanos: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// Accumulates the time spent in `predict`, read with `clock`.
    pub fn with_clock(mut self, clock: Clock) -> WindowModel {
        self.clock = Some(clock);
        self
    }

    /// Accumulates the CPU time the model's evaluations take on the pool's threads, read with
    /// `clock`, a per-thread CPU clock (such as `CLOCK_THREAD_CPUTIME_ID`): each thread reads it
    /// around its own share of a batch, so the sum is the model's CPU time wherever it ran.
    pub fn with_cpu_clock(mut self, clock: Clock) -> WindowModel {
        self.cpu_clock = Some(clock);
        self
    }

    /// Time spent in `predict` so far, seconds (0 without a clock).
    pub fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// CPU time the model's evaluations took so far, summed over the pool's threads, seconds
    /// (0 without a CPU clock).
    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Configurations scored so far.
    pub fn evaluations(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl PerformanceModel for WindowModel {
    fn predict(&self, configs: &[NetworkConfig], crn_seed: u64) -> Result<Vec<SliVector>, polyphony_spec::ModelError> {
        let t0 = self.clock.as_ref().map(|c| c());
        let input = self.context.input(self.workload.clone(), crn_seed);
        // One part per thread, each a whole number of the model's groups.
        let threads = self.pool.current_num_threads().max(1);
        let q = self.model.batch_quantum().max(1);
        let chunk = configs.len().div_ceil(threads).div_ceil(q).max(1) * q;
        let results: Vec<_> = self.pool.install(|| {
            configs
                .par_chunks(chunk)
                .flat_map_iter(|c| {
                    let c0 = self.cpu_clock.as_ref().map(|k| k());
                    let out = self.model.evaluate(&input, c);
                    if let (Some(k), Some(c0)) = (&self.cpu_clock, c0) {
                        self.cpu_nanos.fetch_add(k().saturating_sub(c0), Ordering::Relaxed);
                    }
                    out
                })
                .collect()
        });
        if let (Some(c), Some(t0)) = (&self.clock, t0) {
            self.nanos.fetch_add(c().saturating_sub(t0), Ordering::Relaxed);
        }
        self.calls.fetch_add(configs.len() as u64, Ordering::Relaxed);
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.map(|o| o.sli)
                    .map_err(|e| polyphony_spec::ModelError(format!("{} on candidate {i}: {e}", self.model.name())))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowsim::FlowSim;
    use crate::simulate::{poor_config, ModelKind};

    fn window() -> (Traffic, Arc<Workload>) {
        let text = include_str!("../../../configs/scenarios/reference-medium.toml");
        let scenario = Scenario::from_toml(text, "reference-medium.toml").expect("reference scenario");
        let traffic = Traffic::new(scenario).expect("traffic");
        let w = Arc::new(traffic.interval_workload(0, 3).expect("workload"));
        (traffic, w)
    }

    #[test]
    fn the_configured_model_kind_is_the_model_that_scores_the_candidates() {
        let (traffic, w) = window();
        let uniform = NetworkConfig::uniform(
            &traffic.scenario.dscps(),
            polyphony_spec::Bytes(30_000),
            polyphony_spec::Packets(10),
        );
        let configs = [uniform, poor_config(&traffic.scenario)];
        let scored = |kind: ModelKind| {
            WindowModel::new(
                kind.model().expect("model"),
                traffic.context.clone(),
                w.clone(),
                pool(1),
            )
            .predict(&configs, 5)
            .expect("model SLIs")
        };
        let direct = || {
            let input: ModelInput = traffic.context.input(w.clone(), 5);
            FlowSim::default()
                .evaluate(&input, &configs)
                .into_iter()
                .map(|r| r.expect("SLIs").sli)
                .collect::<Vec<_>>()
        };
        let input: ModelInput = traffic.context.input(w.clone(), 5);
        let corrected: Vec<_> = crate::correction::Corrected::shipped()
            .expect("shipped correction")
            .evaluate(&input, &configs)
            .into_iter()
            .map(|r| r.expect("SLIs").sli)
            .collect();
        assert_eq!(scored(ModelKind::default()), corrected);
        assert_ne!(corrected, direct(), "the correction changes flowsim's p99");
        assert_eq!(scored(ModelKind::FlowSimAggregate), direct());
    }

    #[test]
    fn the_cpu_clock_is_read_around_every_thread_share_of_a_batch() {
        let (traffic, w) = window();
        // 20 on two threads: parts of 16 and 4 (whole lane groups first).
        let configs = vec![poor_config(&traffic.scenario); 20];
        // A clock that advances 1 µs per read, on whichever thread reads it.
        let reads = Arc::new(AtomicU64::new(0));
        let r = reads.clone();
        let clock: Clock = Arc::new(move || 1000 * r.fetch_add(1, Ordering::Relaxed));
        let m = WindowModel::new(
            ModelKind::FlowSimAggregate.model().expect("model"),
            traffic.context.clone(),
            w,
            pool(2),
        )
        .with_cpu_clock(clock);
        assert_eq!(m.cpu_seconds(), 0.0);
        m.predict(&configs, 1).expect("SLIs");
        // Two threads' shares, one read before and one after each: 2 reads per share.
        let n = reads.load(Ordering::Relaxed);
        assert_eq!(n, 4, "two shares of the batch, each timed once");
        // Each share's two reads are 1–3 µs apart (the other share's reads may fall between).
        let us = m.cpu_seconds() * 1e6;
        assert!((2.0 - 1e-9..=4.0 + 1e-9).contains(&us), "{us} µs");
        assert_eq!(m.evaluations(), 20);
    }

    /// flowsim, with the size of every part of a batch it is given recorded.
    struct Parts {
        sizes: std::sync::Mutex<Vec<usize>>,
    }

    impl NetworkModel for Parts {
        fn name(&self) -> &'static str {
            "parts"
        }
        fn evaluate(
            &self,
            input: &ModelInput,
            configs: &[NetworkConfig],
        ) -> Vec<Result<crate::ModelOutput, ModelError>> {
            self.sizes.lock().expect("sizes").push(configs.len());
            FlowSim::default().evaluate(input, configs)
        }
        fn batch_quantum(&self) -> usize {
            FlowSim::default().batch_quantum()
        }
    }

    #[test]
    fn a_batch_is_split_across_threads_in_whole_groups_of_the_model() {
        let (traffic, w) = window();
        assert_eq!(FlowSim::default().batch_quantum(), 16);
        assert_eq!(
            crate::correction::Corrected::shipped()
                .expect("shipped")
                .batch_quantum(),
            16
        );
        let parts = Arc::new(Parts {
            sizes: std::sync::Mutex::new(Vec::new()),
        });
        let m = WindowModel::new(parts.clone(), traffic.context.clone(), w.clone(), pool(2));
        let configs = vec![poor_config(&traffic.scenario); 48];
        let split = m.predict(&configs, 1).expect("SLIs");
        // 48 on two threads: 32 and 16, not 24 and 24 (8 idle lanes each).
        let mut sizes = parts.sizes.lock().expect("sizes").clone();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![16, 32]);
        // The split changes no result.
        let whole = WindowModel::new(
            ModelKind::FlowSimAggregate.model().expect("model"),
            traffic.context.clone(),
            w,
            pool(1),
        );
        assert_eq!(split, whole.predict(&configs, 1).expect("SLIs"));
    }

    #[test]
    fn a_wrong_number_of_cdfs_is_an_error_naming_the_scenario() {
        let (traffic, _) = window();
        let e = Traffic::with_cdfs(traffic.scenario.clone(), vec![])
            .unwrap_err()
            .to_string();
        assert!(e.contains(&traffic.scenario.name), "{e}");
    }

    #[test]
    fn intervals_start_at_zero_and_differ() {
        let (traffic, _) = window();
        let a = traffic.interval_workload(0, 1).expect("interval 0");
        let b = traffic.interval_workload(1, 1).expect("interval 1");
        assert!(a
            .flows
            .iter()
            .chain(&b.flows)
            .all(|f| f.start.0 < a.duration.0.max(b.duration.0)));
        assert_ne!(a.flows.len(), 0);
        assert_ne!(a.flows.first().map(|f| f.start), b.flows.first().map(|f| f.start));
    }
}
