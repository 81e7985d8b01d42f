//! Per-flow dump of pktsim and flowsim on development cases (first configuration), for
//! diagnosing where flowsim's tail differs from pktsim's. pktsim's per-flow outcomes are cached
//! under `--cache`.
mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::validation::{case, SeedSet};
use polyphony_model::{FlowSim, FlowSimOptions, PktSim};
use std::io::Write;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 0)]
    first: u64,
    #[arg(long, default_value_t = 36)]
    cases: u64,
    #[arg(long, default_value_t = 4)]
    configs: usize,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long)]
    cache: std::path::PathBuf,
    #[arg(long)]
    out: std::path::PathBuf,
    #[arg(long, default_value_t = 0.0)]
    reverse_waits: f64,
    #[arg(long, default_value_t = 1e6)]
    reverse_cap: f64,
    #[arg(long, default_value_t = 0.0)]
    pipe_factor: f64,
    #[arg(long, default_value_t = 0.0)]
    syn_waits: f64,
    #[arg(long, default_value_t = 0.0)]
    mix: f64,
    #[arg(long, default_value_t = 1.0)]
    burst_factor: f64,
    #[arg(long)]
    keep_dominated: bool,
    #[arg(long, default_value_t = 0.0)]
    nic_tsq_ns: f64,
    #[arg(long)]
    reverse_nic_only: bool,
    #[arg(long)]
    reverse_per_class: bool,
    #[arg(long, default_value_t = 0.0)]
    reverse_weight_exp: f64,
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
                std::fs::write(&path, serde_json::to_vec(&f)?)?;
                f
            }
        };
        let ff = FlowSim::new(FlowSimOptions {
            reverse_waits: a.reverse_waits,
            reverse_cap: a.reverse_cap,
            pipe_factor: a.pipe_factor,
            syn_waits: a.syn_waits,
            queue_share_mix: a.mix,
            burst_factor: a.burst_factor,
            keep_dominated: a.keep_dominated,
            nic_tsq_ns: a.nic_tsq_ns,
            reverse_nic_only: a.reverse_nic_only,
            reverse_per_class: a.reverse_per_class,
            reverse_weight_exp: a.reverse_weight_exp,
            ..Default::default()
        })
        .run(&input, cfg)?
        .flows
        .context("no flows")?;
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
