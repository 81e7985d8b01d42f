//! `polyphony demo`: the closed loop on a scenario (the reference scenario at medium SLO
//! tightness, time-scaled for simulation, embedded) against the in-process simulated network —
//! pktsim plays the live network, flowsim-corrected is the controller's model — starting from the
//! scenario's `initial` configuration, else a deliberately poor one. Each iteration measures one
//! interval of the scenario's traffic (its `interval_s`; 60 s on the built-in scenario;
//! `--measure-s` overrides both). One line per iteration, the convergence iteration (polyphony-core's
//! definition: the first iteration from which all SLOs hold for 3 consecutive iterations), and a
//! plot. Writes only the plot and the optional JSON-lines file.

use crate::cli::DemoArgs;
use crate::network::{demo_scenario, load_scenario, model_clock};
use crate::plot::{self, ClassSeries};
use crate::Failure;
use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressStyle};
use polyphony_core::{
    convergence_iteration, evaluate_run, ControlStep, Controller, ControllerParams, RunEvaluation, StepInput,
    StepPolicy, Variant,
};
use polyphony_model::{pool, poor_config, ModelKind, SimulatedNetwork, Traffic, WindowModel};
use polyphony_spec::{NetworkConfig, Scenario, SliVector};
use std::io::Write;
use std::time::{Duration, Instant};

/// Seconds of traffic per iteration on the built-in reference scenario (`--measure-s`).
const BUILT_IN_MEASURE_S: f64 = 60.0;

/// Most seconds of traffic `--measure-s` accepts.
const MAX_MEASURE_S: f64 = 600.0;

/// Consecutive compliant iterations that count as converged (DESIGN.md, paper §8.1).
pub const CONVERGENCE_K: usize = 3;

/// One iteration of the demo, as printed and as written to `--json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DemoIteration {
    /// 1-based.
    pub iteration: usize,
    /// Configuration measured.
    pub config: NetworkConfig,
    /// Measured SLIs.
    pub slis: SliVector,
    /// Ratios per class.
    pub ratios: Vec<f64>,
    /// Measured objective J.
    pub objective: f64,
    /// Prediction for the next configuration.
    pub next_g_hat: Option<f64>,
    /// Its σ (of ln J: the demo runs the default log residual).
    pub next_sigma: Option<f64>,
    /// EI of the next configuration.
    pub next_ei: Option<f64>,
    /// Reason.
    pub reason: String,
    /// Seconds: live network, model, whole iteration.
    pub seconds: (f64, f64, f64),
}

/// Runs the demo.
pub fn main(args: DemoArgs) -> Result<(), Failure> {
    let ext = args
        .plot
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("svg" | "png")) {
        return Err(Failure::Usage(format!(
            "--plot {}: use a .svg or .png file name",
            args.plot.display()
        )));
    }
    // A plot that cannot be written (no such directory, a PNG without a font): find out before
    // the loop runs, not after.
    plot::check(&args.plot).map_err(|e| Failure::Usage(format!("{e:#}")))?;
    let mut scenario = match &args.scenario {
        Some(p) => load_scenario(p).map_err(|e| Failure::Usage(format!("--scenario: {e:#}")))?,
        None => {
            let mut s = demo_scenario()?;
            s.interval_s = BUILT_IN_MEASURE_S;
            s
        }
    };
    if let Some(m) = args.measure_s {
        if !(m.is_finite() && m > 0.0 && m <= MAX_MEASURE_S) {
            return Err(Failure::Usage(format!(
                "--measure-s {m}: seconds of traffic per iteration, in (0, {MAX_MEASURE_S}]"
            )));
        }
        scenario.interval_s = m;
    }
    // A knob space the controller's model cannot evaluate everywhere would fail every proposal.
    let start = demo_start(&scenario);
    let dscps: Vec<_> = scenario.classes.iter().map(|c| c.dscp).collect();
    let model = ModelKind::default();
    model.check_space(&dscps, &scenario.knob_space(), &start).map_err(|e| {
        Failure::Usage(format!(
            "--scenario: {} (the controller's model) cannot evaluate {e}",
            model.as_str()
        ))
    })?;
    // After every check of the arguments, so that a usage error stays one line.
    crate::warn_outside_space(
        &format!("scenario {}", scenario.name),
        &polyphony_model::validation::scenario_outside_space(&scenario),
    );
    run(&scenario, &args).map_err(Failure::Runtime)
}

/// The scenario's own starting configuration (e.g. the hosts' congestion control of a
/// categorical scenario, an unset algorithm read as its knob's first choice), else a
/// deliberately poor one.
fn demo_start(scenario: &Scenario) -> NetworkConfig {
    let cfg = scenario.initial.clone().unwrap_or_else(|| poor_config(scenario));
    scenario.knob_space().resolve_unset(&cfg)
}

fn run(scenario: &Scenario, args: &DemoArgs) -> anyhow::Result<()> {
    let traffic = Traffic::new(scenario.clone())?;
    let network = SimulatedNetwork::new(traffic.clone(), args.seed);
    let params = ControllerParams {
        seed: args.seed,
        ..ControllerParams::default()
    };
    let space = scenario.knob_space();
    let start = demo_start(scenario);
    let controller = Controller::new(&scenario.classes, &space, start.clone(), params, Variant::FULL)
        .map_err(|e| anyhow!("controller: {e}"))?;
    // The one control step the daemon and the evaluation harness run too; the demo has no
    // guard and no warm-up.
    let mut step = ControlStep::new(controller, StepPolicy { guard: None }, start.clone(), Vec::new());
    let flowsim = ModelKind::default().model()?;
    let threads = pool(0);
    let mut out = std::io::stdout().lock();
    let mut json = match &args.json {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("--json {}", p.display()))?,
        )),
        None => None,
    };
    let names: Vec<String> = scenario.classes.iter().map(|c| c.name.clone()).collect();
    writeln!(
        out,
        "polyphony demo: scenario {:?} ({}), {} classes, SLOs {}",
        scenario.name,
        scenario.description,
        names.len(),
        scenario
            .classes
            .iter()
            .map(|c| format!("{} {}", c.name, c.slo.describe()))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(
        out,
        "live network: pktsim ({} s of traffic per iteration); controller model: {} on {} threads; start: {}",
        scenario.interval_s,
        flowsim.name(),
        threads.current_num_threads(),
        describe(&start)
    )?;
    let bar = ProgressBar::new(u64::from(args.iterations));
    bar.set_style(
        ProgressStyle::with_template("{spinner} iteration {pos}/{len} {msg} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));

    let mut config = start;
    let mut ratios_hist: Vec<Vec<f64>> = Vec::new();
    let mut objectives: Vec<f64> = Vec::new();
    let mut p99s: Vec<Vec<f64>> = vec![Vec::new(); scenario.classes.len()];
    let mut converged = None;
    let t_run = Instant::now();
    for t in 0..u64::from(args.iterations) {
        let t0 = Instant::now();
        bar.set_position(t + 1);
        bar.set_message("measuring the live network (pktsim)");
        let m = network.measure(t, &config)?;
        let t_live = t0.elapsed().as_secs_f64();
        bar.set_message("choosing the next configuration (model + GP + EI)");
        let model = WindowModel::new(
            flowsim.clone(),
            traffic.context.clone(),
            m.workload.clone(),
            threads.clone(),
        )
        .with_clock(model_clock());
        let d = step
            .step(
                &StepInput {
                    config: &config,
                    slis: &m.sli,
                    window: Some(&m.workload),
                    workload: Some(t),
                },
                &model,
            )
            .map_err(|e| anyhow!("iteration {}: {e}", t + 1))?;
        if let Some(skip) = &d.record.skipped {
            // Nothing to judge a class by: the configuration stays, and the iteration counts as
            // not compliant.
            bar.suspend(|| writeln!(out, "it {:>2} | {}", t + 1, skip.detail))?;
            ratios_hist.push(vec![f64::INFINITY]);
            objectives.push(f64::NAN);
            for (i, c) in scenario.classes.iter().enumerate() {
                p99s[i].push(m.sli.get(c.dscp).and_then(|s| c.slo.sli(s)).unwrap_or(f64::NAN));
            }
            continue;
        }
        if let Some(e) = &d.record.error {
            return Err(anyhow!("iteration {}: propose: {e}", t + 1));
        }
        let ratios = d.record.ratios.clone().unwrap_or_default();
        let objective = d.record.objective.unwrap_or(f64::NAN);
        let proposal = d.record.proposal.as_ref();
        let it = DemoIteration {
            iteration: t as usize + 1,
            config: config.clone(),
            slis: m.sli.clone(),
            ratios: ratios.clone(),
            objective,
            next_g_hat: proposal.and_then(|p| p.g_hat),
            next_sigma: proposal.and_then(|p| p.sigma),
            next_ei: proposal.and_then(|p| p.expected_improvement),
            reason: d.reason.text.clone(),
            seconds: (t_live, model.seconds(), t0.elapsed().as_secs_f64()),
        };
        for (i, c) in scenario.classes.iter().enumerate() {
            p99s[i].push(m.sli.get(c.dscp).and_then(|s| c.slo.sli(s)).unwrap_or(f64::NAN));
        }
        ratios_hist.push(ratios);
        objectives.push(objective);
        bar.suspend(|| writeln!(out, "{}", line(scenario, &it)))?;
        if let Some(j) = json.as_mut() {
            serde_json::to_writer(&mut *j, &it)?;
            writeln!(j)?;
        }
        config = d.next;
        converged = convergence_iteration(&ratios_hist, CONVERGENCE_K);
        if converged.is_some() && !args.full {
            break;
        }
    }
    bar.finish_and_clear();
    if let Some(mut j) = json {
        j.flush()?;
    }
    // Skipped iterations count as not compliant and are left out of the other scores.
    let metrics = evaluate_run(&ratios_hist, &objectives, None);
    let series: Vec<ClassSeries> = scenario
        .classes
        .iter()
        .zip(p99s)
        .map(|(c, p99)| ClassSeries {
            name: c.name.clone(),
            unit: c.slo.kind().unit(),
            slo: c.slo.threshold(),
            p99,
        })
        .collect();
    plot::write(&args.plot, &series, &objectives, converged.map(|t| t + 1))?;
    match converged {
        Some(t) => writeln!(
            out,
            "converged at iteration {}: all SLOs held from iteration {} for {} consecutive iterations",
            t + 1,
            t + 1,
            CONVERGENCE_K
        )?,
        None => writeln!(
            out,
            "not converged within {} iterations (all SLOs never held for {} consecutive iterations); rerun with --iterations N",
            objectives.len(),
            CONVERGENCE_K
        )?,
    }
    let fairness = final_fairness(&metrics, ratios_hist.len());
    writeln!(
        out,
        "final objective J = {:.3}, fairness min r / max r = {} (r = SLI / SLO), hindsight regret Σ(J_t − min J) = {:.2}, {} iterations in {:.1} s",
        metrics.final_objective,
        fairness,
        metrics.regret,
        objectives.len(),
        t_run.elapsed().as_secs_f64()
    )?;
    writeln!(out, "final configuration: {}", describe(&config))?;
    writeln!(out, "plot: {}", args.plot.display())?;
    Ok(())
}

/// The run's fairness, naming its iteration when that is not the last of the `iterations`
/// (the last was skipped).
fn final_fairness(m: &RunEvaluation, iterations: usize) -> String {
    match m.fairness_iteration {
        Some(i) if i + 1 == iterations => format!("{:.2}", m.fairness),
        Some(i) => format!("{:.2} (iteration {}, the last measured)", m.fairness, i + 1),
        None => "– (no iteration measured every class)".to_string(),
    }
}

/// `w=0.10/0.45/0.45 K=300/300/300kB iw=2/2/2`, then ` B=–/–/24kB` when a class has a buffer
/// of its own and the algorithms when a class sets one.
pub fn describe(c: &NetworkConfig) -> String {
    let w: Vec<String> = c.classes.iter().map(|c| format!("{:.2}", c.weight)).collect();
    let kb = |b: u64| format!("{:.0}", b as f64 / 1000.0);
    let k: Vec<String> = c.classes.iter().map(|c| kb(c.ecn_threshold.0)).collect();
    let iw: Vec<String> = c.classes.iter().map(|c| c.init_cwnd.0.to_string()).collect();
    let mut out = format!("w={} K={}kB iw={}", w.join("/"), k.join("/"), iw.join("/"));
    if c.classes.iter().any(|c| c.buffer.is_some()) {
        let b: Vec<String> = c
            .classes
            .iter()
            .map(|c| c.buffer.map_or("–".into(), |b| kb(b.0)))
            .collect();
        out += &format!(" B={}kB", b.join("/"));
    }
    if c.classes.iter().any(|c| c.congestion_control.is_some()) {
        let a: Vec<&str> = c
            .classes
            .iter()
            .map(|c| c.congestion_control.as_ref().map_or("–", |a| a.name()))
            .collect();
        out += &format!(" cc={}", a.join("/"));
    }
    out
}

fn line(scenario: &Scenario, it: &DemoIteration) -> String {
    let classes: Vec<String> = scenario
        .classes
        .iter()
        .map(|c| {
            let v = it.slis.get(c.dscp).and_then(|s| c.slo.sli(s)).unwrap_or(f64::NAN);
            let mark = if v <= c.slo.threshold() { "✓" } else { "✗" };
            let unit = c.slo.kind().unit();
            format!("{} {:5.1}/{:<4}{unit}{}", c.name, v, c.slo.threshold(), mark)
        })
        .collect();
    let pred = match (it.next_g_hat, it.next_sigma) {
        // The default log residual: σ is of ln J, so the prediction is ĝ ×÷ e^σ.
        (Some(g), Some(s)) => format!("ĝ={g:.3}×÷{:.2}", s.exp()),
        (Some(g), None) => format!("ĝ={g:.3}"),
        _ => "ĝ=–".into(),
    };
    format!(
        "it {:>2} | {} | J={:.3} | next {} | {} | {:.1}s",
        it.iteration,
        classes.join("  "),
        it.objective,
        pred,
        it.reason,
        it.seconds.2
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Bytes, Dscp, Packets};

    #[test]
    fn the_final_fairness_skips_an_unmeasured_last_iteration() {
        let measured = vec![0.5, 1.0];
        let skipped = vec![f64::INFINITY];
        let shown = |run: &[Vec<f64>]| {
            let j: Vec<f64> = run.iter().map(|r| if r.len() > 1 { 1.0 } else { f64::NAN }).collect();
            final_fairness(&evaluate_run(run, &j, None), run.len())
        };
        assert_eq!(shown(&[skipped.clone(), measured.clone()]), "0.50");
        assert_eq!(
            shown(&[measured, skipped.clone()]),
            "0.50 (iteration 1, the last measured)"
        );
        assert_eq!(shown(&[skipped]), "– (no iteration measured every class)");
    }

    #[test]
    fn describe_names_buffers_and_algorithms_only_when_set() {
        let mut c = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF41], Bytes(30_000), Packets(10));
        assert_eq!(describe(&c), "w=0.50/0.50 K=30/30kB iw=10/10");
        c.classes[1].buffer = Some(Bytes(24_000));
        assert_eq!(describe(&c), "w=0.50/0.50 K=30/30kB iw=10/10 B=–/24kB");
    }
}
