//! Criterion benchmark of one `propose` with W_s = 50 samples, the nine-knob space and a
//! model that burns ~1 ms per configuration. Reports the controller's own time (wall time
//! minus the wall time measured inside the model) and the model evaluations per proposal on stderr.
//!
//! `cargo bench -p polyphony-bench --bench propose -- --warm-up-time 1 --measurement-time 10`

use criterion::{criterion_group, criterion_main, Criterion};
use polyphony_bench::harness::primed_controller;
use polyphony_bench::synthetic::{Problem, SyntheticModel};
use polyphony_core::{Controller, ControllerParams, LocalSolver};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A controller holding 50 admitted samples spread over the space.
fn primed(solver: LocalSolver, reselect_every: u32) -> Controller {
    let params = ControllerParams {
        acq_solver: solver,
        gp_reselect_every: reselect_every,
        ..ControllerParams::default()
    };
    primed_controller(params, 50).expect("the synthetic problem primes")
}

fn bench(cr: &mut Criterion) {
    let cost = Duration::from_millis(1);
    // LBFGS with finite differences is left out here: the synthetic benchmark measured ~24x
    // more model evaluations per proposal for the same quality (docs/controller.md), i.e.
    // seconds per proposal with a 1 ms model.
    let cases = [
        ("nelder-mead/gp-refit", LocalSolver::NelderMead, 1000),
        ("nelder-mead/gp-select", LocalSolver::NelderMead, 1),
    ];
    for (name, solver, reselect) in cases {
        let base = primed(solver, reselect);
        let model = SyntheticModel::new(Problem::new(0.05), cost);
        let mut evals = Vec::new();
        let mut overhead = Vec::new();
        cr.bench_function(&format!("propose/{name}/ws50/9knobs/1ms-model"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut c = base.clone();
                    let before = model.spent.load(Ordering::Relaxed);
                    let t = Instant::now();
                    let p = c.propose(&model).expect("propose");
                    let dt = t.elapsed();
                    let in_model = Duration::from_nanos(model.spent.load(Ordering::Relaxed) - before);
                    total += dt;
                    evals.push(p.model_evaluations);
                    overhead.push(dt.saturating_sub(in_model));
                }
                total
            })
        });
        overhead.sort();
        evals.sort();
        if !overhead.is_empty() {
            eprintln!(
                "{name}: controller overhead (wall − time inside the model) median {:?}, p90 {:?}; model evaluations per proposal median {}, max {}; n = {}",
                overhead[overhead.len() / 2],
                overhead[overhead.len() * 9 / 10],
                evals[evals.len() / 2],
                evals[evals.len() - 1],
                overhead.len()
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
