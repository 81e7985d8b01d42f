//! One CSV row per measured flow of development cases, pktsim's and flowsim's outcome side by
//! side (first configuration of each case), for finding where flowsim's tail holds other flows
//! than pktsim's: `tools/flow-tails/tails.py FILE` summarises it by rate band. pktsim's per-flow
//! outcomes are cached under `--cache` (one file per case seed; pktsim itself is not changed).
//!
//! ```text
//! cargo run --release -p polyphony-model --example flowdump -- --cases 108 --threads 2 --cache DIR --out FILE
//! ```
//!
//! Columns: case index, regime, class index, the class's weight, K (bytes) and initcwnd, source
//! and destination host, start (ns), size (bytes), ideal FCT, pktsim's FCT, flowsim's FCT (ns),
//! the path's base RTT (ns), its bottleneck rate (bit/s), the configuration's port buffer
//! (bytes, 0: pktsim's default).
mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::validation::{case, SeedSet};
use polyphony_model::{FlowSim, PktSim};
use std::io::Write;

#[derive(Parser)]
struct Args {
    /// First development case.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Development cases (the regime is the index modulo 18).
    #[arg(long, default_value_t = 36)]
    cases: u64,
    /// Random configurations drawn per case (the first is run; 4 draws the same first
    /// configuration as `train_correction --configs 4`).
    #[arg(long, default_value_t = 4)]
    configs: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// pktsim's per-flow outcomes are read from / written to this directory.
    #[arg(long)]
    cache: std::path::PathBuf,
    /// The CSV to write.
    #[arg(long)]
    out: std::path::PathBuf,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let idx: Vec<u64> = (a.first..a.first + a.cases).collect();
    let rows = common::par_map(&idx, a.threads, |&i| -> Result<String> {
        let c = case(SeedSet::Development, i, a.configs)?;
        let mut input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
        input.keep_flows = true;
        let cfg = &c.configs[0];
        let path = a.cache.join(format!("flows-{}.json", c.seed));
        let pf: Vec<polyphony_spec::FlowOutcome> = match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t)?,
            Err(_) => {
                let o = PktSim::default().run(&input, cfg)?;
                let f = o.output.flows.context("no flows")?;
                std::fs::write(&path, serde_json::to_vec(&f)?)
                    .with_context(|| format!("writing {}", path.display()))?;
                f
            }
        };
        let ff = FlowSim::default().run(&input, cfg)?.flows.context("no flows")?;
        let fs: std::collections::HashMap<u64, u64> = ff.iter().map(|x| (x.id.0, x.fct.0)).collect();
        let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
        let mut s = String::new();
        for p in &pf {
            let f = input
                .workload
                .flows
                .get(p.id.0 as usize)
                .filter(|f| f.id == p.id)
                .context("a flow id is not its workload index")?;
            let cc = cfg.class(p.dscp).context("class")?;
            let ci = input.classes.iter().position(|&d| d == p.dscp).unwrap_or(0);
            let ideal = topo.ideal(f.src, f.dst);
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                i,
                c.regime,
                ci,
                cc.weight,
                cc.ecn_threshold.0,
                cc.init_cwnd.0,
                f.src.0,
                f.dst.0,
                f.start.0,
                f.size.0,
                p.ideal.0,
                p.fct.0,
                fs.get(&p.id.0).copied().unwrap_or(0),
                ideal.base_rtt.0,
                ideal.bottleneck.0,
                cfg.port_buffer.map_or(0, |b| b.0),
            );
        }
        Ok(s)
    })?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(&a.out)?);
    writeln!(
        w,
        "case,regime,class,weight,k,initcwnd,src,dst,start,size,ideal,pkt,fs,rtt,rate,buffer"
    )?;
    for r in rows {
        w.write_all(r.as_bytes())?;
    }
    Ok(())
}
