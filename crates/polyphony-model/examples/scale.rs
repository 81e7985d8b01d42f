//! The scale preset (32 racks × 8 hosts leaf-spine, 60 % load) simulated with pktsim for 1 s of
//! network time (or `--seconds`); prints the wall time, packets/s and per-class SLIs, then
//! flowsim on the same workload.
//!
//! ```text
//! cargo run --release -p polyphony-model --example scale -- --seconds 1
//! ```

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::{default_config, scale_scenario, scenario_input, FlowSim, NetworkModel, PktSim};
use polyphony_spec::Nanos;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    /// Seconds of network time.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let s = scale_scenario();
    let input = scenario_input(&s, Nanos::from_secs_f64(a.seconds), 1)?;
    let cfg = vec![default_config(&s)];
    println!(
        "{:?}; {} flows over {} s of network time",
        s.topology,
        input.workload.flows.len(),
        a.seconds
    );
    for m in [&PktSim::default() as &dyn NetworkModel, &FlowSim::default()] {
        let t0 = Instant::now();
        let out = m.evaluate(&input, &cfg).pop().context("no result")??;
        let wall = t0.elapsed().as_secs_f64();
        let st = out.stats;
        println!(
            "{}: wall {:.2} s · simulated until {} · {} host packets ({:.2} M/s) · {} events · {} dropped · {} unfinished",
            m.name(),
            wall,
            st.sim_time,
            st.packets,
            st.packets as f64 / wall / 1e6,
            st.events,
            st.dropped,
            st.unfinished
        );
        for c in &out.sli.classes {
            println!(
                "  {}: {} flows · p50 {:.2} · p99 {:.2} · p99.9 {:.2}",
                c.dscp.name(),
                c.flows,
                c.p50,
                c.p99,
                c.p999
            );
        }
    }
    Ok(())
}
