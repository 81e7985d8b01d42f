//! Model speed on one core: flowsim flows/s (on a batch of 30 — on a fresh model value and on
//! one that keeps its plan — and on one configuration) and
//! pktsim packets/s on the reference scenario (12 s of network
//! time), and both on the 32 × 8 leaf-spine at 60 % load (a short slice of network time per
//! iteration; `examples/scale.rs` runs the full second and reports wall time); and the learned
//! correction's forest walk on the feature rows of a batch of 30 on `dc-10g-dumbbell`.
//!
//! ```text
//! cargo bench -p polyphony-model --bench models -- --warm-up-time 1 --measurement-time 3
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use polyphony_model::{default_config, scenario_input, FlowSim, NetworkModel, PktSim};
use polyphony_spec::{Bytes, Nanos, NetworkConfig, Packets, Scenario};
use std::hint::black_box;

fn scenario(name: &str) -> Scenario {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs/scenarios")
        .join(name);
    let text = std::fs::read_to_string(&p).expect("scenario file");
    Scenario::from_toml(&text, name).expect("valid scenario")
}

fn aggregate() -> FlowSim {
    FlowSim::default()
}

/// `n` distinct configurations around the scenario's default (weights, K and initcwnd varied
/// deterministically), for batch timings.
fn batch_of(s: &Scenario, n: usize) -> Vec<NetworkConfig> {
    (0..n)
        .map(|i| {
            let mut c = default_config(s);
            let k = c.classes.len();
            for (j, cl) in c.classes.iter_mut().enumerate() {
                let x = ((i * 7 + j * 3) % 10) as f64 / 10.0;
                cl.weight = (0.5 + x) / k as f64;
                cl.ecn_threshold = Bytes(3_000 + ((i * 13 + j * 5) % 20) as u64 * 15_000);
                cl.init_cwnd = Packets(2 + ((i * 11 + j * 7) % 31) as u32 * 2);
            }
            let total: f64 = c.classes.iter().map(|cl| cl.weight).sum();
            for cl in &mut c.classes {
                cl.weight /= total;
            }
            c
        })
        .collect()
}

fn reference(c: &mut Criterion) {
    let s = scenario("reference-medium.toml");
    let input = scenario_input(&s, s.interval(), 1).expect("input");
    let cfg = vec![default_config(&s)];
    let flows = input.workload.flows.len() as u64;
    let pk = PktSim::default()
        .evaluate(&input, &cfg)
        .pop()
        .expect("one")
        .expect("runs");
    let mut g = c.benchmark_group("reference-12s");
    g.throughput(Throughput::Elements(flows));
    // flowsim on one batch of configurations per call, so the configuration-
    // independent work is shared by the batch (elements = flows × configurations): on a fresh
    // model value (the first call of a window: planning included), and on one value called
    // again and again on the same window, which keeps its plan (the controller's steady state).
    let batch = batch_of(&s, 30);
    g.throughput(Throughput::Elements(flows * batch.len() as u64));
    g.bench_function("flowsim aggregate, batch of 30 (elements = flows × configs)", |b| {
        b.iter(|| black_box(aggregate().evaluate(&input, &batch)))
    });
    let kept = aggregate();
    g.bench_function(
        "flowsim aggregate, batch of 30, plan kept (elements = flows × configs)",
        |b| b.iter(|| black_box(kept.evaluate(&input, &batch))),
    );
    g.throughput(Throughput::Elements(flows));
    g.bench_function("flowsim aggregate, one config (elements = flows)", |b| {
        b.iter(|| black_box(aggregate().evaluate(&input, &cfg)))
    });
    g.throughput(Throughput::Elements(pk.stats.packets));
    g.sample_size(10);
    g.bench_function("pktsim (elements = host packets)", |b| {
        b.iter(|| black_box(PktSim::default().evaluate(&input, &cfg)))
    });
    g.finish();
}

fn scale(c: &mut Criterion) {
    let s = polyphony_model::scale_scenario();
    let input = scenario_input(&s, Nanos(10 * Nanos::MILLI.0), 1).expect("input");
    let cfg = vec![default_config(&s)];
    let pk = PktSim::default()
        .evaluate(&input, &cfg)
        .pop()
        .expect("one")
        .expect("runs");
    let mut g = c.benchmark_group("leaf-spine-32x8-60pct-10ms");
    g.sample_size(10);
    g.throughput(Throughput::Elements(pk.stats.packets));
    g.bench_function("pktsim (elements = host packets)", |b| {
        b.iter(|| black_box(PktSim::default().evaluate(&input, &cfg)))
    });
    g.throughput(Throughput::Elements(input.workload.flows.len() as u64));
    g.bench_function("flowsim aggregate, one config (elements = flows)", |b| {
        b.iter(|| black_box(aggregate().evaluate(&input, &cfg)))
    });
    let batch = batch_of(&s, 30);
    g.throughput(Throughput::Elements((input.workload.flows.len() * batch.len()) as u64));
    g.bench_function("flowsim aggregate, batch of 30 (elements = flows × configs)", |b| {
        b.iter(|| black_box(aggregate().evaluate(&input, &batch)))
    });
    g.finish();
}

fn correction(c: &mut Criterion) {
    use polyphony_model::correction::{features, Correction};
    let s = scenario("dc-10g-dumbbell.toml");
    let input = scenario_input(&s, s.interval(), 1).expect("input");
    let batch = batch_of(&s, 30);
    let rows: Vec<_> = features(&aggregate(), &input, &batch)
        .into_iter()
        .flat_map(|r| r.expect("flowsim runs").1.into_iter().map(|(_, x)| x))
        .collect();
    let forest = Correction::shipped().expect("the committed artifact parses");
    let mut g = c.benchmark_group("correction-dc-10g-dumbbell");
    g.throughput(Throughput::Elements(rows.len() as u64));
    g.bench_function("forest walk, feature rows of a batch of 30 (elements = rows)", |b| {
        b.iter(|| black_box(forest.ln_factors(&rows)))
    });
    g.finish();
}

criterion_group!(benches, reference, scale, correction);
criterion_main!(benches);
