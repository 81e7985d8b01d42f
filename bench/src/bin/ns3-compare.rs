//! pktsim against ns-3 on identical flows: runs the 16-case matrix of [`polyphony_bench::ns3`]
//! through ns-3 (the replay program of bench/ns3/, built on first use by bench/ns3/build.sh),
//! pktsim, flowsim-corrected (the controller's model, with the correction compiled into this
//! build) and flowsim (uncorrected) on the same exported traces, and writes
//! `docs/results/pktsim-vs-ns3/cases.csv`, `models.csv` and `summary.md`.
//!
//! `cargo run --release -p polyphony-bench --bin ns3-compare`

use anyhow::{Context, Result};
use clap::Parser;
use polyphony_bench::ns3::{
    at_or_above_p99, case_trace, col, explain, log_count, matrix, median, rel_err, run_case, spearman, CaseResult,
    ClassNumbers, CLASSES, FAR, JITTER_DRAWS, NS3_JITTER_DRAWS,
};
use polyphony_model::{PktSim, PktSimOptions};
use polyphony_spec::Nanos;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

#[derive(Parser, Debug)]
#[command(about = "pktsim against ns-3 on identical flows (docs/results/pktsim-vs-ns3/)")]
struct Args {
    /// Flows per case (the span of each trace is scaled to hold about this many).
    #[arg(long, default_value_t = 2000)]
    flows: usize,
    /// Workload seed of every case.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Only the cases whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Where the CSV and summary go.
    #[arg(long, default_value = "docs/results/pktsim-vs-ns3")]
    out: PathBuf,
    /// Where traces and ns-3's outputs go.
    #[arg(long, default_value = "target/ns3-compare")]
    work: PathBuf,
    /// The ns-3 replay program (built with bench/ns3/build.sh when absent or older than replay.cc).
    #[arg(long, default_value = "target/ns3/polyphony-ns3-replay")]
    ns3: PathBuf,
    /// pktsim's TCP-small-queues window in µs (its default: 1000).
    #[arg(long)]
    pktsim_tsq_us: Option<f64>,
    /// Seconds one ns-3 run may take.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !(1..=60_000).contains(&args.flows) {
        anyhow::bail!("--flows {}: use 1..=60000 (ns-3 gives every flow a port)", args.flows);
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ns3/replay.cc");
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // Built when absent, and rebuilt when replay.cc is newer than the program (a stale replay
    // program would compare pktsim against last week's ns-3 setup without a word).
    if !args.ns3.exists() || modified(&source) > modified(&args.ns3) {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ns3/build.sh");
        let st = Command::new(&script)
            .arg(&args.ns3)
            .status()
            .with_context(|| format!("running {}", script.display()))?;
        anyhow::ensure!(st.success(), "{} failed ({st})", script.display());
    }
    std::fs::create_dir_all(&args.work).with_context(|| format!("creating {}", args.work.display()))?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut opts = PktSimOptions::default();
    if let Some(us) = args.pktsim_tsq_us {
        opts.tsq_window = Nanos::from_secs_f64(us * 1e-6);
    }
    let pktsim = PktSim::new(opts);
    let mut results: Vec<CaseResult> = Vec::new();
    for case in matrix() {
        if args.only.as_ref().is_some_and(|o| !case.name.contains(o.as_str())) {
            continue;
        }
        let trace = case_trace(&case, args.flows, args.seed)?;
        let r = run_case(&case, &trace, &args.ns3, &args.work, args.timeout, &pktsim)?;
        eprintln!(
            "{:<32} {:>5} flows  ns-3 {:>7.2} s  pktsim {:>6.3} s ({} drops, {} timeouts, {} fast retransmits)  p99 ns-3/pktsim {}  [{}]",
            r.case,
            r.flows,
            r.ns3_wall_s,
            r.pktsim_wall_s,
            r.pktsim_drops,
            r.pktsim_timeouts,
            r.pktsim_fast_retransmits,
            r.classes
                .iter()
                .map(|c| format!("{:.2}/{:.2}", c[0].p99, c[1].p99))
                .collect::<Vec<_>>()
                .join(" "),
            r.ns3_log
        );
        results.push(r);
    }
    std::fs::write(args.out.join("cases.csv"), cases_csv(&results))?;
    std::fs::write(args.out.join("models.csv"), models_csv(&results))?;
    let summary = summary_md(&results, &args);
    std::fs::write(args.out.join("summary.md"), &summary)?;
    print!("{summary}");
    Ok(())
}

/// How the comparison is set up and what was found and fixed (true of the setup, not of one
/// run's numbers; the rows of a run are explained by [`explain`] in the summary).
const SETUP: &str = "
## Setup

* The trace of each case is exported once (`polyphony_spec::FlowTrace`, the format of
  `polyphony simulate --export-trace`) and replayed by ns-3 (`bench/ns3/replay.cc`), pktsim and
  the flow-level models; slowdowns of all of them are computed by the model crate's code
  (`IdealFct`, the same measurement window, unfinished flows counted with their running time).
* Topologies: the dumbbell has 3 senders and 1 receiver; the leaf-spine 4 racks × 4 hosts and
  2 spines, fabric links at twice the host rate, ECMP by pktsim's hash (ns-3 routes each flow
  through the spine pktsim picks). 10 Gbit/s with 1 µs per link, or 100 Mbit/s with 1.5 ms.
* Size mixes (AF11, AF21, AF31): `meta` = Meta cache, web, Hadoop; `websearch` = WebSearch,
  Meta Hadoop, Meta cache. Configurations: `default` = equal weights, K = 30 kB, initcwnd 10;
  `skewed` = weights 0.6 / 0.3 / 0.1, K = 10 / 60 / 200 kB, initcwnd 4 / 10 / 20.
* ns-3 side: DCTCP (g = 1/16; the window halved on a loss, never below two segments), MSS 1448
  with timestamps, no SACK, NewReno recovery, no limited transmit, an ACK per segment, RTO =
  srtt + max(4 rttvar, 200 ms) as Linux, SYN timeout 1 s; per-class DRR with step marking at K
  as the point-to-point device's own queue (the next packet is chosen when the wire falls idle,
  as in pktsim), 1 MB shared buffer per switch port, unlimited host NIC queues without marking
  and TCP small queues as pktsim and Linux (at most 1 ms of line rate of a sender's data at its
  NIC, the window grown only while it limits the sender). Known differences left: ns-3's frames carry a
  2-byte PPP header where pktsim serialises 14 bytes of Ethernet (a full segment is 0.8 %
  shorter on ns-3's wire), and ns-3 sends the handshake's third ACK and FINs, which pktsim
  does not model.

## Mechanisms found and fixed

Found by comparing flows one by one (`target/ns3-compare/<case>.flows.csv` holds both
slowdowns of every flow), tracing single flows (`POLYPHONY_NS3_DEBUG_FLOW=<id>` prints a flow's
window, state and the per-class queue at each port it crosses) and reading ns-3.37's and Linux's
TCP code:

1. ns-3.37's `TcpDctcp` cut a two-segment window below one segment and stalled until an RTO;
   it also used cwnd × (1 − α/2) after a loss where RFC 8257 §3.3 and Linux halve. The program's
   `TcpDctcpFloor` keeps two segments and halves on loss, as Linux and pktsim.
2. ns-3.37's TCP sends data with DSCP 0 once ECN is negotiated, so every class went through
   AF11's queue; the program classifies packets by their flow's port.
3. ns-3's rto = max(srtt + 4 rttvar, 200 ms) fired up to 200 ms before Linux's srtt +
   max(4 rttvar, 200 ms) under deep queues; a 200 ms clock granularity gives Linux's formula.
4. ns-3's queue disc sat in front of a one-packet device queue, so its scheduler committed one
   packet ahead: a packet of another class waited up to one more packet time at every port
   (1.2 µs at 10 Gbit/s, a quarter of the base RTT). The scheduler is now the device's queue
   (`--qdisc` restores the old arrangement).
5. pktsim grew the window in the round after an ECN cut; Linux (CWR) and ns-3 (`CA_CWR`) hold
   it. pktsim's NewReno lacked window inflation, allowed a fast retransmit in the window of an
   earlier timeout, restarted the timer on duplicate ACKs and cut again on ECE in recovery; it
   now follows RFC 6582 and Linux.
6. ns-3.37 has no TCP small queues: a flow whose host's NIC was its bottleneck, never marked
   there, grew its window into MBs of NIC queue (2.4 MB seen on a 100 Mbit/s host), and every
   later flow of its class from that host waited behind them for up to 0.5 s. The program's
   sender socket (`TsqTcpSocket`) holds back new data beyond 1 ms of line rate at its NIC and
   grows its window only while the window limits it, as pktsim and Linux (`--no-tsq` restores
   ns-3's sockets).

## What is left, by explanation

* **Chance** — a tail set by which flows collide. At 10 Gbit/s a large flow that shares its
  host's NIC with another class's flow queues its window there, unmarked, when the switch's
  class queue sits just below K (a few hundred bytes decide it), grows to hundreds of kB, and
  later empties into the switch queue, where every small flow of its class that arrives in the
  next few hundred µs waits behind it. Whether that happens in one simulator and not the other
  depends on sub-packet timing. The harness measures this: pktsim reruns the trace with every
  arrival moved by less than one packet time (JITTER draws) and, in a case with a row beyond
  30 %, ns-3 reruns the first NS3JITTER of those copies; a row where the two simulators' p99
  ranges overlap is within what chance alone moves them.
* **RTO in the tail** — where the flow at a class's p99 rank took a 200 ms timeout, the p99 is
  200 ms / the ideal FCT of whichever flow ranks there, and counts a handful of rare events.
* **p99 not resolved** — the order statistics of a class's n flows give a distribution-free
  confidence interval of at least 95 % for its p99 (ranks l, u with P(B ≥ l) ≥ 0.975 and
  P(B < u) ≥ 0.975 for B ~ Binomial(n, 0.99); Le Boudec, Performance Evaluation of Computer and
  Communication Systems, Thm. 2.1). Below 368 flows no flow bounds it from above, and at 117
  flows it starts at the fifth slowest. When each simulator's p99 lies inside the other's
  interval, the row's flows cannot tell the two apart: the tail is one or two flows. Traced on
  seed 4242's 10 Gbit/s WebSearch dumbbell (AF21, 117 flows): the p99 flow (1.4 kB) found the
  class queue a 5.2 MB flow's slow start had built, 133 kB in ns-3; that flow's first round
  trip ended 16 µs later in ns-3 than in pktsim and its window peaked at 294 against 320
  segments.
";

/// `lo–hi` of a p99 interval, `lo–∞` when unbounded above.
fn interval((lo, hi): (f64, f64)) -> String {
    if hi.is_finite() {
        format!("{lo:.2}–{hi:.2}")
    } else {
        format!("{lo:.2}–∞")
    }
}

fn cases_csv(results: &[CaseResult]) -> String {
    let mut s =
        String::from("case,class,flows,ns3_p50,ns3_p99,pktsim_p50,pktsim_p99,flowsim_p99,ns3_wall_s,pktsim_wall_s\n");
    for r in results {
        for (d, c) in CLASSES.iter().zip(&r.classes) {
            let _ = writeln!(
                s,
                "{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.3},{:.4}",
                r.case,
                d.name(),
                c[col::NS3].flows,
                c[col::NS3].p50,
                c[col::NS3].p99,
                c[col::PKTSIM].p50,
                c[col::PKTSIM].p99,
                c[col::FLOWSIM].p99,
                r.ns3_wall_s,
                r.pktsim_wall_s
            );
        }
    }
    s
}

/// Every model's p99 per row, for the model-accuracy table against ns-3.
fn models_csv(results: &[CaseResult]) -> String {
    let mut s = String::from("case,class,flows,ns3_p99,pktsim_p99,flowsim_corrected_p99,flowsim_p99\n");
    for r in results {
        for (d, c) in CLASSES.iter().zip(&r.classes) {
            let _ = writeln!(
                s,
                "{},{},{},{:.4},{:.4},{:.4},{:.4}",
                r.case,
                d.name(),
                c[col::NS3].flows,
                c[col::NS3].p99,
                c[col::PKTSIM].p99,
                c[col::CORRECTED].p99,
                c[col::FLOWSIM].p99
            );
        }
    }
    s
}

/// The header lines of the correction artifact this build compiled in (what it was trained on).
fn artifact_header() -> String {
    String::from_utf8_lossy(polyphony_model::Correction::shipped_bytes())
        .lines()
        .take_while(|l| l.starts_with('#'))
        .filter(|l| l.starts_with("# command:") || l.starts_with("# data:"))
        .map(|l| format!("`{}`", l.trim_start_matches("# ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Rows with data from both ns-3 and pktsim, with their case and class.
fn rows(results: &[CaseResult]) -> Vec<(&CaseResult, usize, &[ClassNumbers; col::N])> {
    results
        .iter()
        .flat_map(|r| r.classes.iter().enumerate().map(move |(i, c)| (r, i, c)))
        .filter(|(_, _, c)| c[col::NS3].flows > 0 && c[col::PKTSIM].flows > 0)
        .collect()
}

fn summary_md(results: &[CaseResult], args: &Args) -> String {
    let all = rows(results);
    let p99 = |rs: &[(&CaseResult, usize, &[ClassNumbers; col::N])], k: usize| -> Vec<f64> {
        rs.iter().map(|(_, _, c)| c[k].p99).collect()
    };
    // Median relative p99 error of column k against column reference over rows rs.
    let med = |rs: &[(&CaseResult, usize, &[ClassNumbers; col::N])], k: usize, reference: usize| {
        let e: Vec<f64> = rs.iter().map(|(_, _, c)| rel_err(c[k].p99, c[reference].p99)).collect();
        median(&e)
    };
    let ns3_wall: f64 = results.iter().map(|r| r.ns3_wall_s).sum();
    let pkt_wall: f64 = results.iter().map(|r| r.pktsim_wall_s).sum();
    let flows: usize = results.iter().map(|r| r.flows).sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# pktsim and the controller's models against ns-3 on identical flows\n"
    );
    let mut extra = String::new();
    if args.flows != 2000 {
        let _ = write!(extra, " --flows {}", args.flows);
    }
    if args.seed != 1 {
        let _ = write!(extra, " --seed {}", args.seed);
    }
    if let Some(o) = &args.only {
        let _ = write!(extra, " --only {o}");
    }
    if args.out != std::path::Path::new("docs/results/pktsim-vs-ns3") {
        let _ = write!(extra, " --out {}", args.out.display());
    }
    let mut cmd = String::from("cargo run --release -p polyphony-bench --bin ns3-compare");
    if !extra.is_empty() {
        let _ = write!(cmd, " --{extra}");
    }
    let _ = writeln!(
        s,
        "Regenerate: `{cmd}` (builds `bench/ns3/` with `bench/ns3/build.sh` on first use). \
         Writes `cases.csv`, `models.csv` (every model's p99 per row) and this file.\n"
    );
    let _ = writeln!(
        s,
        "{} cases, {} flows in all (about {} a case, seed {}), 3 classes at 20 % load each (σ = 2). \
         Every case's trace goes through ns-3.37, pktsim, flowsim-corrected (the controller's \
         default model) and flowsim (uncorrected). Errors are |model − reference| / reference of the \
         per-class p99 slowdown over {} case × class rows; ρ is Spearman's over the rows. \
         flowsim-corrected's correction: {}.\n",
        results.len(),
        flows,
        args.flows,
        args.seed,
        all.len(),
        artifact_header()
    );
    let _ = writeln!(
        s,
        "| model | vs ns-3: median p99 error | worst | ρ | vs pktsim: median p99 error | ρ |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for (name, k) in [
        ("pktsim", col::PKTSIM),
        ("flowsim-corrected (default)", col::CORRECTED),
        ("flowsim (uncorrected)", col::FLOWSIM),
    ] {
        let worst = all
            .iter()
            .map(|(_, _, c)| rel_err(c[k].p99, c[col::NS3].p99))
            .fold(0.0, f64::max);
        let vs_pkt = if k == col::PKTSIM {
            "– | –".to_string()
        } else {
            format!(
                "{:.1} % | {:.3}",
                100.0 * med(&all, k, col::PKTSIM),
                spearman(&p99(&all, k), &p99(&all, col::PKTSIM))
            )
        };
        let _ = writeln!(
            s,
            "| {name} | {:.1} % | {:.1} % | {:.3} | {vs_pkt} |",
            100.0 * med(&all, k, col::NS3),
            100.0 * worst,
            spearman(&p99(&all, k), &p99(&all, col::NS3))
        );
    }
    let p50_err: Vec<f64> = all
        .iter()
        .map(|(_, _, c)| rel_err(c[col::PKTSIM].p50, c[col::NS3].p50))
        .collect();
    let _ = writeln!(
        s,
        "\npktsim's median p50 error against ns-3: {:.1} %.\n",
        100.0 * median(&p50_err)
    );
    let _ = writeln!(
        s,
        "Speed, measured side by side in this run: ns-3 {:.1} s of wall time in all, pktsim {:.2} s: \
         pktsim is {:.0}× faster (ns-3's time is its whole process: parsing, building, simulating).\n",
        ns3_wall,
        pkt_wall,
        ns3_wall / pkt_wall.max(1e-9)
    );
    let _ = writeln!(s, "Median p99 error by regime (rows):\n");
    let _ = writeln!(
        s,
        "| regime | rows | pktsim vs ns-3 | flowsim-corrected vs ns-3 | flowsim vs ns-3 | flowsim-corrected vs pktsim | flowsim vs pktsim |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for (name, topo, rate) in [
        ("dumbbell, 10 Gbit/s", "dumbbell-", "-10g-"),
        ("dumbbell, 100 Mbit/s", "dumbbell-", "-100m-"),
        ("leaf-spine, 10 Gbit/s", "leafspine-", "-10g-"),
        ("leaf-spine, 100 Mbit/s", "leafspine-", "-100m-"),
        ("all", "", ""),
    ] {
        let rs: Vec<_> = all
            .iter()
            .filter(|(r, _, _)| r.case.contains(topo) && r.case.contains(rate))
            .copied()
            .collect();
        if rs.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "| {name} | {} | {:.1} % | {:.1} % | {:.1} % | {:.1} % | {:.1} % |",
            rs.len(),
            100.0 * med(&rs, col::PKTSIM, col::NS3),
            100.0 * med(&rs, col::CORRECTED, col::NS3),
            100.0 * med(&rs, col::FLOWSIM, col::NS3),
            100.0 * med(&rs, col::CORRECTED, col::PKTSIM),
            100.0 * med(&rs, col::FLOWSIM, col::PKTSIM)
        );
    }
    // Rows beyond 30 %, each with what the run shows about it.
    let far: Vec<_> = all
        .iter()
        .filter(|(_, _, c)| rel_err(c[col::PKTSIM].p99, c[col::NS3].p99) > FAR)
        .collect();
    let mut unexplained = 0;
    let _ = writeln!(
        s,
        "\n## Rows where pktsim is more than 30 % from ns-3: {} of {}\n",
        far.len(),
        all.len()
    );
    if !far.is_empty() {
        let _ = writeln!(
            s,
            "Explanations are computed from this run (see \"What is left\" below): pktsim's p99 range \
             over the trace and {JITTER_DRAWS} copies with arrivals moved by less than one packet time \
             overlapping ns-3's over the trace and the first {NS3_JITTER_DRAWS} of those copies (ns-3 is rerun only in cases with a row beyond 30 %); \
             a timeout at the p99 rank in a simulator with enough timeouts in the case to reach that rank; \
             each p99 inside the other simulator's 95 % confidence interval of its p99 (order statistics of its own flows). \
             `tail` = flows at or above the p99 rank; † the p99 is one of the class's two slowest flows.\n"
        );
        let _ = writeln!(
            s,
            "| case | class | flows | tail | ns-3 p99 | pktsim p99 | error | ns-3 jitter range | pktsim jitter range | ns-3 p99 95 % interval | pktsim p99 95 % interval | explanation |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (r, i, c) in &far {
            let timeouts = (r.ns3_timeouts.unwrap_or(0), r.pktsim_timeouts);
            let jit = r.pktsim_jitter_p99[*i];
            let ns3_jit = r.ns3_jitter_p99[*i];
            let ex = explain(c, [ns3_jit, jit], timeouts);
            if ex.is_empty() {
                unexplained += 1;
            }
            let label = if ex.is_empty() {
                "unexplained".to_string()
            } else {
                ex.iter().map(|e| e.label()).collect::<Vec<_>>().join("; ")
            };
            let _ = writeln!(
                s,
                "| {} | {} | {}{} | {} | {:.2} | {:.2} | {:+.1} % | {:.2}–{:.2} | {:.2}–{:.2} | {} | {} | {label} |",
                r.case,
                CLASSES[*i].name(),
                c[col::NS3].flows,
                if at_or_above_p99(c[col::NS3].flows) <= 2 {
                    " †"
                } else {
                    ""
                },
                at_or_above_p99(c[col::NS3].flows),
                c[col::NS3].p99,
                c[col::PKTSIM].p99,
                100.0 * (c[col::PKTSIM].p99 - c[col::NS3].p99) / c[col::NS3].p99,
                ns3_jit.0,
                ns3_jit.1,
                jit.0,
                jit.1,
                interval(c[col::NS3].p99_interval),
                interval(c[col::PKTSIM].p99_interval)
            );
        }
        let _ = writeln!(s, "\nUnexplained: {unexplained} of {} rows.", far.len());
    }
    let _ = writeln!(
        s,
        "\n## Every row\n\n`flows` = measured flows of the class (†: fewer than 200, so the nearest-rank p99 \
         is one of its two slowest flows).\n"
    );
    let _ = writeln!(
        s,
        "| case | class | flows | ns-3 p99 | pktsim p99 | error | flowsim-corrected | flowsim |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for r in results {
        for (d, c) in CLASSES.iter().zip(&r.classes) {
            let _ = writeln!(
                s,
                "| {} | {} | {}{} | {:.2} | {:.2} | {:+.1} % | {:.2} | {:.2} |",
                r.case,
                d.name(),
                c[col::NS3].flows,
                if at_or_above_p99(c[col::NS3].flows) <= 2 {
                    " †"
                } else {
                    ""
                },
                c[col::NS3].p99,
                c[col::PKTSIM].p99,
                100.0 * (c[col::PKTSIM].p99 - c[col::NS3].p99) / c[col::NS3].p99,
                c[col::CORRECTED].p99,
                c[col::FLOWSIM].p99
            );
        }
    }
    let _ = writeln!(
        s,
        "\nLosses per case (drops at switch ports; retransmission timeouts of data, SYNs included for \
         pktsim; fast retransmits / recoveries on three duplicate ACKs):\n"
    );
    let _ = writeln!(
        s,
        "| case | ns-3 drops | pktsim drops | ns-3 RTOs | pktsim RTOs | ns-3 fast recoveries | pktsim fast retransmits |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let count = |r: &CaseResult, k: &str| log_count(&r.ns3_log, k).map_or("?".to_string(), |n| n.to_string());
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.case,
            count(r, "switch_drops"),
            r.pktsim_drops,
            count(r, "rtos"),
            r.pktsim_timeouts,
            count(r, "fast_recoveries"),
            r.pktsim_fast_retransmits
        );
    }
    let unfinished: Vec<String> = results
        .iter()
        .filter(|r| r.ns3_unfinished + r.pktsim_unfinished > 0)
        .map(|r| format!("{} (ns-3 {}, pktsim {})", r.case, r.ns3_unfinished, r.pktsim_unfinished))
        .collect();
    if !unfinished.is_empty() {
        let _ = writeln!(
            s,
            "\nUnfinished flows (counted with their running time): {}.",
            unfinished.join(", ")
        );
    }
    s.push_str(
        &SETUP
            .replace("NS3JITTER", &NS3_JITTER_DRAWS.to_string())
            .replace("JITTER", &JITTER_DRAWS.to_string()),
    );
    s
}
