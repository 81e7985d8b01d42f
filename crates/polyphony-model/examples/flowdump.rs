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
//! (bytes, 0: pktsim's default); then flowsim's FCT without the standing-queue term
//! (`fs_noq`) and without it and the slow-start rounds (`fs_ps`: ideal + sharing + incast) —
//! flowsim's state does not depend on either term, so `fs − fs_noq` is the flow's k·Q/ρ and
//! `fs_noq − fs_ps` its (k − 1)·RTT — and pktsim's queue of the flow's class on the port where
//! that class's time-averaged queue is longest: time average and maximum (bytes; cached as
//! `ports-<seed>.json`); what the flow's first data segment met at the first switch port: its
//! class's queue ahead of it (bytes) and its wait there (ns), and its SYN's wait there (ns; −1:
//! never got there; cached as `first-<seed>.json`); then the round-level replay's
//! (`common/replay.rs`): its class queue ahead of the flow's first data round and of its SYN at
//! the first switch port (bytes), the waits it charged the flow in all (ns), its FCT and the
//! same flow's FCT replayed alone (ns) — `tools/flow-tails/burstq.py FILE [dumbbell|leaf-spine]`
//! compares them with pktsim's. `--stride 2` from an even `--first` takes the dumbbell cases
//! only, from an odd one the leaf-spines. `--timing` prints pktsim's, flowsim's and the
//! replay's (ACK-clocked and with fixed rounds) CPU time per case instead.
mod common;

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_model::validation::{case, SeedSet};
use polyphony_model::{FirstSegment, FlowSim, FlowSimOptions, PktSim};
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
    /// Take every this many case indices (2 from an even `--first`: the dumbbells).
    #[arg(long, default_value_t = 1)]
    stride: u64,
    /// flowsim's standing queue in units of K (`FlowSimOptions::queue_factor`; default: flowsim's).
    #[arg(long)]
    queue_factor: Option<f64>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Instead of the CSV: per case, the CPU time of pktsim, of flowsim and of the round-level
    /// replay (with each flow's replay alone) on the first configuration, and their medians.
    #[arg(long)]
    timing: bool,
    /// pktsim's per-flow outcomes are read from / written to this directory.
    #[arg(long)]
    cache: std::path::PathBuf,
    /// The CSV to write.
    #[arg(long)]
    out: std::path::PathBuf,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let idx: Vec<u64> = (a.first..a.first + a.cases).step_by(a.stride.max(1) as usize).collect();
    if a.timing {
        return timing(&idx, a.configs);
    }
    let rows = common::par_map(&idx, a.threads, |&i| -> Result<String> {
        let c = case(SeedSet::Development, i, a.configs)?;
        let mut input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
        input.keep_flows = true;
        let cfg = &c.configs[0];
        let path = a.cache.join(format!("flows-{}.json", c.seed));
        let ppath = a.cache.join(format!("ports-{}.json", c.seed));
        let fpath = a.cache.join(format!("first-{}.json", c.seed));
        let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
        type Cached = (Vec<polyphony_spec::FlowOutcome>, Vec<(f64, u64)>, Vec<FirstSegment>);
        let (pf, queues, first): Cached = match (read(&path), read(&ppath), read(&fpath)) {
            (Some(f), Some(q), Some(w)) => (
                serde_json::from_str(&f)?,
                serde_json::from_str(&q)?,
                serde_json::from_str(&w)?,
            ),
            _ => {
                let pkt = PktSim::new(polyphony_model::PktSimOptions {
                    first_segment: true,
                    ..Default::default()
                });
                let o = pkt.run(&input, cfg)?;
                let f = o.output.flows.context("no flows")?;
                // Per class: its longest time-averaged queue over the ports, and that port's maximum.
                let q: Vec<(f64, u64)> = (0..input.classes.len())
                    .map(|c| {
                        o.ports
                            .iter()
                            .map(|p| (p.avg_queue[c], p.max_queue[c]))
                            .fold((0.0, 0), |m, x| if x.0 > m.0 { x } else { m })
                    })
                    .collect();
                for (p, v) in [
                    (&path, serde_json::to_vec(&f)?),
                    (&ppath, serde_json::to_vec(&q)?),
                    (&fpath, serde_json::to_vec(&o.first_segment)?),
                ] {
                    std::fs::write(p, v).with_context(|| format!("writing {}", p.display()))?;
                }
                (f, q, o.first_segment)
            }
        };
        let fcts = |o: FlowSimOptions| -> Result<std::collections::HashMap<u64, u64>> {
            let ff = FlowSim::new(o).run(&input, cfg)?.flows.context("no flows")?;
            Ok(ff.iter().map(|x| (x.id.0, x.fct.0)).collect())
        };
        let mut all = FlowSimOptions::default();
        if let Some(q) = a.queue_factor {
            all.queue_factor = q;
        }
        let fs = fcts(all)?;
        let noq = fcts(FlowSimOptions {
            standing_queue: false,
            ..all
        })?;
        let ps = fcts(FlowSimOptions {
            standing_queue: false,
            slow_start: false,
            ..all
        })?;
        let topo = input.topology.as_ref().clone().with_ecmp_salt(input.seed);
        // The round-level replay, and each flow replayed alone.
        let charges = common::replay::replay_input(&input, cfg, true)?;
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
            let w = first.get(p.id.0 as usize).copied().unwrap_or_default();
            let seen = |x: Option<u64>| x.map_or(-1, |x| x as i64);
            let (bw, idle) = charges.as_ref().map_or(
                (
                    common::replay::Charge {
                        fct: -1.0,
                        ..Default::default()
                    },
                    -1.0,
                ),
                |(w, idle)| (w[p.id.0 as usize], idle[p.id.0 as usize]),
            );
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0},{},{},{},{},{:.0},{:.0},{:.0},{:.0},{:.0}\n",
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
                noq.get(&p.id.0).copied().unwrap_or(0),
                ps.get(&p.id.0).copied().unwrap_or(0),
                queues[ci].0,
                queues[ci].1,
                seen(w.queue_ahead.map(|b| b.0)),
                seen(w.wait.map(|t| t.0)),
                seen(w.syn_wait.map(|t| t.0)),
                bw.first,
                bw.syn,
                bw.wait,
                bw.fct,
                idle,
            );
        }
        Ok(s)
    })?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(&a.out)?);
    writeln!(
        w,
        "case,regime,class,weight,k,initcwnd,src,dst,start,size,ideal,pkt,fs,rtt,rate,buffer,fs_noq,fs_ps,q_avg,q_max,q_first,w_first,w_syn,bq_first,bq_syn,bq_wait,bq_fct,bq_idle"
    )?;
    for r in rows {
        w.write_all(r.as_bytes())?;
    }
    Ok(())
}

/// `--timing`: CPU seconds of pktsim, flowsim and the replay (ACK-clocked, then with rounds one
/// base RTT apart) per case, one thread.
fn timing(idx: &[u64], configs: usize) -> Result<()> {
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for &i in idx {
        let c = case(SeedSet::Development, i, configs)?;
        let input = polyphony_model::scenario_input(&c.scenario, c.duration(), c.seed)?;
        let cfg = &c.configs[0];
        let t0 = common::thread_cpu();
        PktSim::default().run(&input, cfg)?;
        let t1 = common::thread_cpu();
        FlowSim::default().run(&input, cfg)?;
        let t2 = common::thread_cpu();
        let r = common::replay::replay_input(&input, cfg, true)?;
        let t3 = common::thread_cpu();
        common::replay::replay_input(&input, cfg, false)?;
        let t4 = common::thread_cpu();
        let rounds = r.map_or([0, 0], |(c, _)| {
            c.iter().fold([0, 0], |a, x| [a[0] + x.rounds[0], a[1] + x.rounds[1]])
        });
        for (v, x) in t.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3]) {
            v.push(x);
        }
        println!(
            "case {i}: pktsim {:.4} s, flowsim {:.5} s, replay {:.5} s, fixed rounds {:.5} s, {} flows, rounds in slow start {} and after {}",
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            input.workload.flows.len(),
            rounds[0],
            rounds[1]
        );
    }
    let med = |v: &mut Vec<f64>| polyphony_spec::median(v).unwrap_or(f64::NAN);
    let (p, f, r, x) = (med(&mut t[0]), med(&mut t[1]), med(&mut t[2]), med(&mut t[3]));
    println!(
        "median over {} cases: pktsim {p:.4} s, flowsim {f:.5} s ({:.0}x), replay {r:.5} s ({:.0}x), fixed rounds {x:.5} s ({:.0}x)",
        t[0].len(),
        p / f,
        p / r,
        p / x
    );
    Ok(())
}
