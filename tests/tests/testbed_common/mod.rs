//! Helpers shared by the testbed tests: root check, a guard that tears an instance down even
//! when an assertion fails, a lock that keeps this package's testbed runs from sharing the two
//! CPUs with each other, and workload synthesis through polyphony-model.
#![allow(dead_code)]

use emu::{EmuOutputs, EmuPlan, RunResult};
use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId, Nanos, Scenario, Workload};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the testbed runs of one test binary (each binary runs its tests in threads).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// True when the test may run; prints why not otherwise.
pub fn can_run() -> bool {
    if !polyphony_e2e::is_root() {
        println!("skipped: needs root");
        return false;
    }
    true
}

/// Tears instance `prefix` down when dropped (also on panic).
pub struct Guard(pub String);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = testbed::down(&self.0) {
            eprintln!("teardown of {} failed: {e}", self.0);
        }
    }
}

/// The scenario at `configs/scenarios/<name>.toml`.
pub fn scenario(name: &str) -> Scenario {
    let p = format!("{}/../configs/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&p).expect("scenario file");
    Scenario::from_toml(&text, &p).expect("valid scenario")
}

/// The scenario's workload over `secs` seconds, synthesised by polyphony-model.
pub fn workload(sc: &Scenario, secs: f64, seed: u64) -> Workload {
    let topo = polyphony_model::Topology::from_spec(&sc.topology).expect("topology");
    let cdfs = polyphony_model::mix_cdfs(sc).expect("CDFs");
    let opts = polyphony_model::SynthesisOptions::new(Nanos::from_secs_f64(secs), seed);
    polyphony_model::synthesize(sc, &topo, &cdfs, &opts).expect("synthesis")
}

/// The emu plan of a running instance.
pub fn plan(tb: &testbed::Testbed, interval_s: f64) -> EmuPlan {
    let mut p = EmuPlan::new(
        tb.state.hosts(),
        tb.state.classes.clone(),
        tb.state.ideal(),
        Nanos::from_secs_f64(interval_s),
    );
    p.drain = Nanos::from_secs_f64(3.0);
    p
}

/// Runs `wl` for `secs` with no file outputs.
pub fn run(tb: &testbed::Testbed, wl: &Workload, secs: f64) -> RunResult {
    emu::run(&plan(tb, secs), wl, Nanos::from_secs_f64(secs), &EmuOutputs::default()).expect("emu run")
}

/// A flow.
pub fn flow(id: u64, src: u32, dscp: Dscp, size: u64, start_s: f64) -> Flow {
    Flow::new(
        FlowId(id),
        HostId(src),
        HostId(3),
        dscp,
        Bytes(size),
        Nanos::from_secs_f64(start_s),
    )
}

/// p99 slowdown of the finished flows of class `d` no larger than `max_size` bytes.
pub fn p99_small(r: &RunResult, d: Dscp, max_size: u64) -> f64 {
    let mut v: Vec<f64> = r
        .records
        .iter()
        .filter(|x| x.dscp == d && x.size <= max_size)
        .filter_map(|x| x.slowdown)
        .collect();
    assert!(v.len() >= 50, "class {d}: only {} small flows finished", v.len());
    v.sort_by(f64::total_cmp);
    polyphony_spec::percentile(&v, 0.99).unwrap_or(f64::NAN)
}
