//! Model speed on one core: flowsim flows/s and pktsim packets/s on the reference scenario
//! (12 s of network time), and pktsim on the 32 × 8 leaf-spine at 60 % load (a short slice of
//! network time per iteration; `examples/scale.rs` runs the full second and reports wall time).
//!
//! ```text
//! cargo bench -p polyphony-model --bench models -- --warm-up-time 1 --measurement-time 3
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use polyphony_model::{default_cdf_dir, default_config, scenario_input, FlowSim, NetworkModel, PktSim};
use polyphony_spec::{Nanos, Scenario};
use std::hint::black_box;

fn scenario(name: &str) -> Scenario {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs/scenarios")
        .join(name);
    let text = std::fs::read_to_string(&p).expect("scenario file");
    Scenario::from_toml(&text, name).expect("valid scenario")
}

fn reference(c: &mut Criterion) {
    let s = scenario("reference-medium.toml");
    let input = scenario_input(&s, &default_cdf_dir(), s.interval(), 1).expect("input");
    let cfg = vec![default_config(&s)];
    let flows = input.workload.flows.len() as u64;
    let pk = PktSim::default()
        .evaluate(&input, &cfg)
        .pop()
        .expect("one")
        .expect("runs");
    let mut g = c.benchmark_group("reference-12s");
    g.throughput(Throughput::Elements(flows));
    g.bench_function("flowsim (elements = flows)", |b| {
        b.iter(|| black_box(FlowSim::default().evaluate(&input, &cfg)))
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
    let input = scenario_input(&s, &default_cdf_dir(), Nanos(10 * Nanos::MILLI.0), 1).expect("input");
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
    g.bench_function("flowsim (elements = flows)", |b| {
        b.iter(|| black_box(FlowSim::default().evaluate(&input, &cfg)))
    });
    g.finish();
}

criterion_group!(benches, reference, scale);
criterion_main!(benches);
