//! flowsim and flowsim-corrected against pktsim on random scenarios × configurations drawn by
//! `polyphony_model::validation` — the measurement a model change is judged by, reported by
//! regime (topology kind × rate band × load band) and in aggregate.
//!
//! Per case, pktsim runs every configuration one at a time and each flow-level model evaluates the
//! whole batch in one call; the thread CPU time of both is summed per case. Reported: the
//! median over (configuration, class) of the per-class p99 slowdown error
//! |p99_flowsim − p99_pktsim| / p99_pktsim, the share of those within 20 %, the median over
//! cases of Spearman's ρ of J across the case's configurations, and the CPU-time ratio.
//!
//! `--windows N` compares each class's median p99 over N draws of the scenario's flows instead
//! of one window's, which removes the part of the error that comes from the draw alone; with
//! `--next` the models see the first window only and are judged on the others, as the
//! controller's predictions for the next interval are.
//!
//! `--set dev` (seeds 0..1 000 000) is for development; `--set validation` (seeds from
//! 1 000 000 000) is for reporting only.
//!
//! ```text
//! cargo run --release -p polyphony-model --example validate -- --set validation --cases 36 --configs 6
//! ```

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use polyphony_model::validation::{case, median, objective, spearman, Case, Regime};
use polyphony_model::{Corrected, Correction, FlowSim, FlowSimOptions, ModelOutput, NetworkModel};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    cases: common::CaseArgs,
    /// Random configurations per case.
    #[arg(long, default_value_t = 6, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    configs: usize,
    /// Worker threads (cases run in parallel).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Write one CSV row per (case, configuration, class) here.
    #[arg(long)]
    csv: Option<String>,
    /// flowsim's standing-queue factor φ (default: the model's).
    #[arg(long)]
    queue_factor: Option<f64>,

    /// Cache pktsim's outputs in this directory (read when present, written when not).
    #[arg(long)]
    pktsim_cache: Option<std::path::PathBuf>,
    /// The corrected model's artifact (default: the one compiled in).
    #[arg(long)]
    correction: Option<std::path::PathBuf>,
    /// Windows per case: the scenario's flows drawn this many times (the first from the case's
    /// own seed); every model and pktsim run each, and each class's p99 is the median over the
    /// windows — the scenario's p99 rather than one draw's.
    #[arg(long, default_value_t = 1)]
    windows: u64,
    /// With `--windows N` (N ≥ 2): the models run the first window only and are compared with
    /// pktsim's median p99 over the other N − 1 — predicting the next windows of a scenario from
    /// this one, as the controller does.
    #[arg(long)]
    next: bool,
    /// Every case's window this many times as long (about 3000 × it flows): the error at the
    /// controller's window lengths. pktsim's cache keeps these under the set name `SET-wX`.
    #[arg(long, default_value_t = 1.0)]
    window_scale: f64,
    /// Print one line per case as it finishes.
    #[arg(long)]
    verbose: bool,
}

/// The models compared with pktsim, by column.
const MODES: [&str; 2] = ["flowsim", "corrected"];

/// The model of column `m`.
fn model(m: usize, a: &Args, correction: &Arc<Correction>) -> Box<dyn NetworkModel> {
    let mut opts = FlowSimOptions::default();
    if let Some(q) = a.queue_factor {
        opts.queue_factor = q;
    }
    match m {
        0 => Box::new(FlowSim::new(opts)),
        _ => Box::new(Corrected::new(correction.clone())),
    }
}

/// What one case gave.
struct CaseResult {
    case: Case,
    flows: usize,
    /// pktsim's outputs, one per configuration.
    pkt: Vec<ModelOutput>,
    /// Per mode: flowsim's outputs, one per configuration.
    fs: Vec<Vec<ModelOutput>>,
    pkt_cpu: f64,
    fs_cpu: Vec<f64>,
}

fn run_case(mut c: Case, a: &Args, correction: &Arc<Correction>) -> Result<CaseResult> {
    let set = if a.window_scale == 1.0 {
        a.cases.set.clone()
    } else {
        c.scenario.interval_s *= a.window_scale;
        format!("{}-w{}", a.cases.set, a.window_scale)
    };
    let mut flows = 0;
    let mut pkt_windows = Vec::new();
    let mut fs_windows: Vec<Vec<Vec<ModelOutput>>> = vec![Vec::new(); MODES.len()];
    let mut pkt_cpu = 0.0;
    let mut fs_cpu = vec![0.0; MODES.len()];
    for w in 0..a.windows.max(1) {
        let (input, pkt, cpu) = common::pktcache::window(&c, w, &set, a.pktsim_cache.as_deref())?;
        if w == 0 {
            flows = input.workload.flows.len();
        }
        pkt_cpu += cpu;
        // With --next the models see the first window only and pktsim's p99s come from the rest.
        if !(a.next && w == 0) {
            pkt_windows.push(pkt);
        }
        if a.next && w > 0 {
            continue;
        }
        for m in 0..MODES.len() {
            let t0 = common::thread_cpu();
            let o = model(m, a, correction)
                .evaluate(&input, &c.configs)
                .into_iter()
                .collect::<Result<Vec<_>, _>>()?;
            fs_cpu[m] += common::thread_cpu() - t0;
            fs_windows[m].push(o);
        }
    }
    let classes = &c.scenario.classes;
    let pkt = common::median_p99(&pkt_windows, classes);
    let fs = fs_windows.iter().map(|w| common::median_p99(w, classes)).collect();
    Ok(CaseResult {
        case: c,
        flows,
        pkt,
        fs,
        pkt_cpu,
        fs_cpu,
    })
}

/// Per-class relative p99 errors of `f` against `p` (classes pktsim completed flows of).
fn errors(r: &CaseResult, f: &[ModelOutput]) -> Vec<f64> {
    let mut e = Vec::new();
    for (fo, po) in f.iter().zip(&r.pkt) {
        for c in &r.case.scenario.classes {
            if let (Some(x), Some(y)) = (fo.sli.get(c.dscp), po.sli.get(c.dscp)) {
                if y.flows > 0 && y.p99 > 0.0 {
                    e.push((x.p99 - y.p99).abs() / y.p99);
                }
            }
        }
    }
    e
}

fn rho(r: &CaseResult, f: &[ModelOutput]) -> f64 {
    let cl = &r.case.scenario.classes;
    let jp: Vec<f64> = r.pkt.iter().map(|o| objective(&o.sli, cl)).collect();
    let jf: Vec<f64> = f.iter().map(|o| objective(&o.sli, cl)).collect();
    spearman(&jf, &jp)
}

#[derive(Default)]
struct Acc {
    cases: usize,
    errs: Vec<Vec<f64>>,
    rhos: Vec<Vec<f64>>,
    pkt_cpu: f64,
    fs_cpu: Vec<f64>,
}

impl Acc {
    fn add(&mut self, r: &CaseResult) {
        if self.errs.is_empty() {
            self.errs = vec![Vec::new(); MODES.len()];
            self.rhos = vec![Vec::new(); MODES.len()];
            self.fs_cpu = vec![0.0; MODES.len()];
        }
        self.cases += 1;
        self.pkt_cpu += r.pkt_cpu;
        for m in 0..MODES.len() {
            self.errs[m].extend(errors(r, &r.fs[m]));
            self.rhos[m].push(rho(r, &r.fs[m]));
            self.fs_cpu[m] += r.fs_cpu[m];
        }
    }
    fn row(&self, label: &str) -> String {
        let mut s = format!("| {label} | {} | {} |", self.cases, self.errs[0].len());
        for m in 0..MODES.len() {
            let within = self.errs[m].iter().filter(|&&e| e <= 0.2).count() as f64 / self.errs[m].len() as f64;
            // pktsim's outputs read from the cache cost nothing: no ratio then.
            let ratio = if self.pkt_cpu > 0.0 {
                format!("{:.0}×", self.pkt_cpu / self.fs_cpu[m])
            } else {
                "cached".to_string()
            };
            s += &format!(
                " {:.1} % | {:.0} % | {:.2} | {ratio} |",
                median(&self.errs[m]) * 100.0,
                within * 100.0,
                median(&self.rhos[m]),
            );
        }
        s
    }
}

fn main() -> Result<()> {
    let a = Args::parse();
    if !(a.window_scale.is_finite() && a.window_scale > 0.0) {
        bail!(
            "--window-scale {} is not a positive factor: give e.g. 3 for windows three times as long",
            a.window_scale
        );
    }
    if a.next && a.windows < 2 {
        bail!("--next judges the first window's predictions on the later ones: give --windows 2 or more");
    }
    let (set, range) = a.cases.range()?;
    let correction = Arc::new(match &a.correction {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            Correction::parse(&bytes).with_context(|| format!("loading {}", path.display()))?
        }
        None => Correction::shipped()?,
    });
    let cases: Vec<Case> = range
        .clone()
        .map(|i| case(set, i, a.configs))
        .collect::<Result<_, _>>()?;
    let results = common::par_map(&cases, a.threads, |c| {
        let r = run_case(c.clone(), &a, &correction)?;
        if a.verbose {
            let e: Vec<String> = (0..MODES.len())
                .map(|m| format!("{:.0} %", median(&errors(&r, &r.fs[m])) * 100.0))
                .collect();
            let rh: Vec<String> = (0..MODES.len()).map(|m| format!("{:.2}", rho(&r, &r.fs[m]))).collect();
            let drops: u64 = r.pkt.iter().map(|o| o.stats.dropped).sum();
            let rtos: u64 = r.pkt.iter().map(|o| o.stats.timeouts).sum();
            eprintln!(
                "case {} [{}] {} classes, {} flows, {:.3} s: median err {:?}, rho {:?}, pktsim {:.1} s, {drops} drops, {rtos} timeouts",
                r.case.seed,
                r.case.regime,
                r.case.scenario.classes.len(),
                r.flows,
                r.case.scenario.interval_s,
                e,
                rh,
                r.pkt_cpu
            );
        }
        Ok(r)
    })?;

    if let Some(path) = &a.csv {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {path}"))?);
        writeln!(
            f,
            "seed,regime,config,class,cdf,load,slo,weight,ecn_k,init_cwnd,flows,pktsim_p99,flowsim_p99,corrected_p99"
        )?;
        for r in &results {
            for (k, po) in r.pkt.iter().enumerate() {
                for (c, m) in r.case.scenario.classes.iter().zip(&r.case.scenario.mix) {
                    let p = |o: &ModelOutput| o.sli.get(c.dscp).map_or(f64::NAN, |x| x.p99);
                    let n = po.sli.get(c.dscp).map_or(0, |x| x.flows);
                    let Some(knobs) = r.case.configs[k].class(c.dscp) else {
                        continue;
                    };
                    writeln!(
                        f,
                        "{},{},{k},{},{},{:.4},{:.4},{:.4},{},{},{n},{:.4},{:.4},{:.4}",
                        r.case.seed,
                        r.case.regime,
                        c.name,
                        m.size_cdf,
                        m.load,
                        c.slo.threshold(),
                        knobs.weight,
                        knobs.ecn_threshold.0,
                        knobs.init_cwnd.0,
                        p(po),
                        p(&r.fs[0][k]),
                        p(&r.fs[1][k])
                    )?;
                }
            }
        }
    }

    let mut by: BTreeMap<Regime, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    for r in &results {
        by.entry(r.case.regime).or_default().add(r);
        all.add(r);
    }
    println!(
        "{} set, cases {}..{}, {} configurations each",
        a.cases.set, range.start, range.end, a.configs
    );
    println!();
    let mut head = "| regime | cases | class p99s |".to_string();
    let mut rule = "|---|---|---|".to_string();
    for name in MODES {
        head += &format!(" {name}: median p99 error | within 20 % | median ρ of J | CPU ratio |");
        rule += "---|---|---|---|";
    }
    println!("{head}\n{rule}");
    for (g, acc) in &by {
        println!("{}", acc.row(&g.to_string()));
    }
    println!("{}", all.row("**all**"));
    Ok(())
}
