//! The bridge from the model crate's [`NetworkModel`] to the controller core's
//! [`PerformanceModel`]: a batch of candidate configurations is scored on one workload window
//! with the core's common-random-number seed, split across threads (rayon), and the time spent
//! is accumulated so the daemon can report model time separately from the iteration.
//!
//! Pure computation; no I/O.

use crate::config::ModelKind;
use crate::network::ModelContext;
use polyphony_core::{ModelError, PerformanceModel};
use polyphony_model::NetworkModel;
use polyphony_spec::{NetworkConfig, SliVector, Workload};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The network model of the given kind with its default options.
pub fn network_model(kind: ModelKind) -> Arc<dyn NetworkModel> {
    match kind {
        ModelKind::Flowsim => Arc::new(polyphony_model::FlowSim::default()),
        ModelKind::FlowsimAggregate => Arc::new(polyphony_model::FlowSim::with_mode(
            polyphony_model::FlowSimMode::Aggregate,
        )),
        ModelKind::Pktsim => Arc::new(polyphony_model::PktSim::default()),
    }
}

/// A [`PerformanceModel`] over one workload window.
pub struct WindowModel {
    model: Arc<dyn NetworkModel>,
    context: ModelContext,
    workload: Arc<Workload>,
    pool: Arc<rayon::ThreadPool>,
    nanos: AtomicU64,
    calls: AtomicU64,
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
            nanos: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    /// Wall time spent in `predict` so far, seconds.
    pub fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Configurations scored so far.
    pub fn evaluations(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl PerformanceModel for WindowModel {
    fn predict(&self, configs: &[NetworkConfig], crn_seed: u64) -> Result<Vec<SliVector>, ModelError> {
        let t0 = Instant::now();
        let input = self.context.input(self.workload.clone(), crn_seed);
        let threads = self.pool.current_num_threads().max(1);
        let chunk = configs.len().div_ceil(threads).max(1);
        let results: Vec<_> = self.pool.install(|| {
            configs
                .par_chunks(chunk)
                .flat_map_iter(|c| self.model.evaluate(&input, c))
                .collect()
        });
        self.nanos.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.calls.fetch_add(configs.len() as u64, Ordering::Relaxed);
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.map(|o| o.sli)
                    .map_err(|e| ModelError(format!("{} on candidate {i}: {e}", self.model.name())))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Traffic;
    use polyphony_model::{FlowSim, FlowSimMode, ModelInput};

    fn window() -> (Traffic, Arc<Workload>) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../configs/scenarios/reference-medium.toml"
        );
        let text = std::fs::read_to_string(path).expect("reference scenario");
        let scenario = polyphony_spec::Scenario::from_toml(&text, path).expect("reference scenario");
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
        let configs = [uniform, crate::demo::poor_config(&traffic.scenario)];
        let scored = |kind| {
            WindowModel::new(network_model(kind), traffic.context.clone(), w.clone(), pool(1))
                .predict(&configs, 5)
                .expect("model SLIs")
        };
        let direct = |mode| {
            let input: ModelInput = traffic.context.input(w.clone(), 5);
            FlowSim::with_mode(mode)
                .evaluate(&input, &configs)
                .into_iter()
                .map(|r| r.expect("SLIs").sli)
                .collect::<Vec<_>>()
        };
        let aggregate = scored(ModelKind::FlowsimAggregate);
        assert_eq!(aggregate, direct(FlowSimMode::Aggregate));
        assert_eq!(scored(ModelKind::Flowsim), direct(FlowSimMode::PerFlow));
        assert_ne!(
            aggregate,
            scored(ModelKind::Flowsim),
            "the two modes are different models"
        );
    }
}
