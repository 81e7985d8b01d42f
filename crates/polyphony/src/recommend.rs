//! `polyphony recommend`: one-shot advice. Builds the controller either from a daemon's state
//! file or from the given samples and current SLIs, runs one proposal with the configured model
//! on a workload window (a trace, or the configuration's workload source), and prints the
//! measurement it starts from (the daemon's last interval, or `--slis`: J and each class's SLI
//! against its SLO; from a state, the configuration in force is named apart from the one that
//! measurement was taken under when the daemon has applied another since), the workload window
//! it advises on, the next configuration, the model's per-class SLIs there, ĝ ± σ, the expected improvement and the
//! reason — plus, when actuators are configured, the dry run of the commands that would change
//! the network. Never applies anything and never writes the state.

use crate::actuation;
use crate::cli::RecommendArgs;
use crate::config::{DaemonConfig, LoadedConfig, WorkloadSource};
use crate::daemon::SavedController;
use crate::demo::describe;
use crate::state::{PersistedState, StateDir, STATE_FILE};
use crate::Failure;
use anyhow::{anyhow, Context};
use polyphony_core::{Controller, Observation, ResidualSpace, Variant};
use polyphony_model::{pool, ModelContext, Traffic, WindowModel};
use polyphony_spec::{NetworkConfig, SliVector, Workload};
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

/// One line of `--samples`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleLine {
    /// The configuration in force during the measurement.
    pub config: NetworkConfig,
    /// What was measured.
    pub slis: SliVector,
}

/// The measurement the advice starts from: the daemon's last interval, or `--slis`.
struct Measured {
    /// Where it comes from (`"iteration 7"`, `"--slis"`).
    source: String,
    /// J of the measurement.
    objective: f64,
    /// J after the controller's denoiser (`--slis` only; the state keeps the raw one).
    denoised: Option<f64>,
    /// Per class: name, SLI, r = SLI / SLO.
    classes: Vec<(String, f64, f64)>,
    /// The configuration it was measured under.
    config: NetworkConfig,
}

impl Measured {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "source": self.source,
            "config": self.config,
            "objective": self.objective,
            "objective_denoised": self.denoised,
            "classes": self.classes.iter().map(|(name, sli, r)| serde_json::json!({
                "class": name, "sli": sli, "ratio": r, "met": *r <= 1.0,
            })).collect::<Vec<_>>(),
        })
    }

    /// The measurement on one line; `under` names its configuration (when it is not the one
    /// printed as in force).
    fn line(&self, under: bool) -> String {
        let under = if under {
            format!(" under {}", describe(&self.config))
        } else {
            String::new()
        };
        let denoised = self.denoised.map_or(String::new(), |d| format!(" (denoised {d:.3})"));
        let classes: Vec<String> = self
            .classes
            .iter()
            .map(|(name, sli, r)| format!("{name} {sli:.2} {} r {r:.2}", if *r <= 1.0 { "✓" } else { "✗" }))
            .collect();
        format!(
            "measured:    J = {:.3}{denoised} at {}{under} — {}",
            self.objective,
            self.source,
            classes.join(", ")
        )
    }
}

fn usage(flag: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Usage(format!("{flag}: {e}"))
}

fn read_json<T: serde::de::DeserializeOwned>(flag: &str, path: &Path) -> Result<T, Failure> {
    let text =
        std::fs::read_to_string(path).map_err(|e| usage(flag, format!("{}: cannot read: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| usage(flag, format!("{}:{}: {e}", path.display(), e.line())))
}

fn read_samples(path: &Path) -> Result<Vec<SampleLine>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage("--samples", format!("{}: cannot read: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let s: SampleLine =
            serde_json::from_str(line).map_err(|e| usage("--samples", format!("{}:{}: {e}", path.display(), i + 1)))?;
        s.config
            .validate()
            .map_err(|e| usage("--samples", format!("{}:{}: config: {e}", path.display(), i + 1)))?;
        out.push(s);
    }
    if out.is_empty() {
        return Err(usage("--samples", format!("{}: no samples", path.display())));
    }
    Ok(out)
}

fn read_workload(path: &Path) -> Result<Workload, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage("--workload", format!("{}: cannot read: {e}", path.display())))?;
    let name = path.display().to_string();
    Workload::from_file_text(&text, &name).map_err(|e| usage("--workload", e))
}

/// Runs the command.
pub fn main(args: RecommendArgs) -> Result<(), Failure> {
    let loaded = DaemonConfig::load(&args.config)?;
    let c = &loaded.config;
    // The controller and the configuration the advice starts from.
    let (mut controller, current, window, measured) = match (&args.state, &args.samples) {
        (Some(p), _) => {
            // A state directory, or the state file in one; anything else is not a state.
            let dir = if p.is_dir() {
                p.clone()
            } else if p.is_file() && p.file_name().is_some_and(|n| n == STATE_FILE) {
                p.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                return Err(usage(
                    "--state",
                    format!("{}: neither a daemon state directory nor its {STATE_FILE}", p.display()),
                ));
            };
            let state: PersistedState = StateDir::open_existing(&dir)
                .and_then(|d| d.load())
                .map_err(|e| usage("--state", format!("{:#}", anyhow::Error::from(e))))?
                .ok_or_else(|| usage("--state", format!("{}: no state.json there", dir.display())))?;
            let ctl =
                Controller::from_json(&serde_json::to_string(&state.controller).map_err(|e| usage("--state", e))?)
                    .map_err(|e| usage("--state", e))?;
            let ctl = match crate::daemon::saved_controller(c, &ctl).map_err(Failure::Runtime)? {
                SavedController::Fits => ctl,
                SavedController::Retargeted { controller, change } => {
                    eprintln!("the saved controller continues under the new SLOs: {change}");
                    *controller
                }
                SavedController::Mismatch(why) => return Err(usage("--state", format!("{}: {why}", dir.display()))),
            };
            // Judged by the controller's objective, under the SLOs in force now (a retarget may
            // have changed them since); a record without its measured SLIs keeps its own ratios.
            let measured = state.history.last().map(|r| {
                let slis = SliVector {
                    classes: r.classes.iter().filter_map(|x| x.measured).collect(),
                };
                let (ratios, objective) = match ctl.objective().ratios(&slis) {
                    Ok(ratios) => {
                        let j = ctl.objective().of_ratios(&ratios);
                        (ratios, j)
                    }
                    Err(_) => (r.classes.iter().map(|x| x.ratio).collect(), r.g),
                };
                Measured {
                    source: format!("iteration {}", r.iteration),
                    config: r.measured_config.clone(),
                    objective,
                    denoised: None,
                    classes: r
                        .classes
                        .iter()
                        .zip(ratios)
                        .map(|(x, ratio)| (x.name.clone(), x.sli, ratio))
                        .collect(),
                }
            });
            (ctl, state.config_in_force, state.intervals, measured)
        }
        (None, Some(samples)) => {
            let samples = read_samples(samples)?;
            let slis_path = args
                .slis
                .as_ref()
                .ok_or_else(|| usage("--slis", "required with --samples"))?;
            let slis: SliVector = read_json("--slis", slis_path)?;
            let current = samples
                .last()
                .map(|s| s.config.clone())
                .unwrap_or_else(|| c.initial_config());
            let mut ctl = Controller::new(
                &c.classes,
                &c.knob_space(),
                c.initial_config(),
                c.controller_params(),
                Variant::FULL,
            )
            .map_err(|e| Failure::Usage(format!("{}: {e}", loaded.path.display())))?;
            let n = samples.len() as u64;
            for (i, s) in samples.iter().enumerate() {
                ctl.observe(&Observation {
                    config: s.config.clone(),
                    slis: s.slis.clone(),
                    workload: Some(n),
                })
                .map_err(|e| usage("--samples", format!("line {}: {e}", i + 1)))?;
            }
            let report = ctl
                .observe(&Observation {
                    config: current.clone(),
                    slis: slis.clone(),
                    workload: Some(n),
                })
                .map_err(|e| usage("--slis", e))?;
            let measured = Measured {
                source: "--slis".into(),
                config: current.clone(),
                objective: report.g_raw,
                denoised: Some(report.g),
                classes: c
                    .classes
                    .iter()
                    .zip(&report.ratios)
                    .map(|(k, &r)| {
                        let sli = slis.get(k.dscp).and_then(|x| k.slo.sli(x)).unwrap_or(f64::NAN);
                        (k.name.clone(), sli, r)
                    })
                    .collect(),
            };
            (ctl, current, n, Some(measured))
        }
        (None, None) => return Err(usage("--state", "give --state, or --samples with --slis")),
    };
    let (workload, workload_source) = match &args.workload {
        Some(p) => (read_workload(p)?, p.display().to_string()),
        None => (
            config_window(&loaded, window)?,
            match &c.workload {
                WorkloadSource::Scenario { .. } => format!("interval {window}'s sample of the scenario (the next one)"),
                WorkloadSource::Trace { path } => format!("the config's trace {}", path.display()),
                _ => "the config's workload source".to_string(),
            },
        ),
    };
    let context = ModelContext::new(&c.topology, c.dscps()).map_err(|e| Failure::Runtime(e.into()))?;
    if let Some(p) = &args.workload {
        // A trace from another network: say so here, naming the file, not inside the model.
        let topo = &context.topology;
        let foreign = workload.flows.iter().try_for_each(|f| {
            topo.check_host(f.id.0, f.src)?;
            topo.check_host(f.id.0, f.dst)
        });
        if let Err(e) = foreign {
            return Err(usage(
                "--workload",
                format!(
                    "{}: {e}; [topology] ({}) has hosts 0..{}: give a trace of this network",
                    p.display(),
                    c.topology,
                    topo.hosts() - 1
                ),
            ));
        }
        // Classes, sizes and start times: what the model would refuse on every candidate.
        polyphony_model::check_workload(topo, &c.dscps(), &workload)
            .map_err(|e| usage("--workload", format!("{}: {e}", p.display())))?;
    }
    // After every check of the input, so that a usage error stays one line.
    crate::warn_network_outside_space(c);
    let model_flows = workload.flows.len();
    let model = WindowModel::new(
        c.model.kind.model().map_err(|e| Failure::Runtime(e.into()))?,
        context,
        Arc::new(workload),
        pool(c.model.threads),
    );
    let p = controller
        .propose(&model)
        .map_err(|e| Failure::Runtime(anyhow!("the controller could not propose: {e}")))?;
    let dry = match actuation::build(&c.actuators) {
        Ok(Some(a)) => Some(actuation::dry_run(&a, &current, &p.config).map(|plan| plan.to_string())),
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    };
    if args.json {
        let j = serde_json::json!({
            "current": current,
            "measured": measured.as_ref().map(Measured::json),
            "config": p.config,
            "predicted_slis": p.model_slis,
            "g_hat": p.g_hat,
            "sigma": p.sigma,
            "residual": controller.params().residual,
            "model_scale": p.model_scale,
            "expected_improvement": p.expected_improvement,
            "g_best": p.g_best,
            "trust_radius": p.trust_radius,
            "reason": p.reason,
            "samples": p.samples,
            "dry_run": dry.as_ref().map(|d| match d {
                Ok(text) => serde_json::json!({"commands": text}),
                Err(e) => serde_json::json!({"error": format!("{e:#}")}),
            }),
        });
        println!("{j}");
        return Ok(());
    }
    // A daemon's state holds the configuration it applied after its last measurement, which
    // has not been measured yet: say so rather than pair it with that measurement.
    match measured.as_ref().filter(|m| m.config != current) {
        Some(m) => {
            println!(
                "in force:    {} (chosen after {}; not measured yet)",
                describe(&current),
                m.source
            );
            println!("{}", m.line(true));
        }
        None => {
            println!("current:     {}", describe(&current));
            if let Some(m) = &measured {
                println!("{}", m.line(false));
            }
        }
    }
    println!("workload:    {} flows, {workload_source}", model_flows);
    println!("recommended: {}", describe(&p.config));
    let num = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
    let spread = match controller.params().residual {
        ResidualSpace::Additive => format!("± {}", num(p.sigma)),
        ResidualSpace::Log => format!("×÷ {} (σ of ln J {})", num(p.sigma.map(f64::exp)), num(p.sigma)),
    };
    println!(
        "predicted objective ĝ = {} {spread}, expected improvement {} over g_best = {}, the best denoised objective measured ({} samples)",
        num(p.g_hat),
        num(p.expected_improvement),
        num(p.g_best),
        p.samples
    );
    println!("reason: {}", p.reason.text);
    if let Some(s) = &p.model_slis {
        // The controller's surrogate starts from the model's SLIs times each class's calibration
        // factor (measured over modelled ratio), so print both.
        let scale = p.model_scale.as_deref();
        match scale {
            Some(_) => println!(
                "model ({}) per-class SLI at the recommended configuration, × the class's calibration to this network's measurements (ĝ adds the residual on top):",
                c.model.kind.as_str()
            ),
            None => println!(
                "model ({}) per-class SLI at the recommended configuration:",
                c.model.kind.as_str()
            ),
        }
        for (i, k) in c.classes.iter().enumerate() {
            let unit = k.slo.kind().unit();
            let v = s.get(k.dscp).and_then(|x| k.slo.sli(x));
            let show = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2}{unit}"));
            let expected = match scale.and_then(|f| f.get(i)) {
                Some(f) => format!(" × {f:.2} = {:>8}", show(v.map(|v| v * f))),
                None => String::new(),
            };
            println!("  {:<6} {:>8}{expected}  SLO {}", k.name, show(v), k.slo.describe());
        }
    }
    match dry {
        None => println!("dry run: no actuators configured"),
        Some(Ok(text)) if text.trim().is_empty() => println!("dry run: nothing to change"),
        Some(Ok(text)) => println!("dry run (not applied):\n{text}"),
        Some(Err(e)) => println!("dry run unavailable: {e:#}"),
    }
    Ok(())
}

/// A workload window from the configuration's source (a trace, or interval `window`'s sample of
/// the scenario); a live source is a usage error (`--workload` is needed).
fn config_window(loaded: &LoadedConfig, window: u64) -> Result<Workload, Failure> {
    match &loaded.config.workload {
        WorkloadSource::Scenario { .. } => {
            let s = loaded
                .scenario
                .clone()
                .ok_or_else(|| Failure::Runtime(anyhow!("the scenario was not loaded")))?;
            Traffic::new(s)
                .and_then(|t| t.interval_workload(window, loaded.config.controller.seed))
                .map_err(|e| Failure::Runtime(e.into()))
        }
        WorkloadSource::Trace { path } => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}", path.display()))
                .map_err(Failure::Runtime)?;
            let name = path.display().to_string();
            Workload::from_file_text(&text, &name).map_err(|e| Failure::Runtime(anyhow!("{e}")))
        }
        WorkloadSource::Workfeed { .. } | WorkloadSource::Nats { .. } => Err(usage(
            "--workload",
            "the config's workload comes from Workfeed, which a one-shot command cannot listen to: pass --workload TRACE \
             (a running daemon serves its last window as one: curl 'http://127.0.0.1:9464/v1/workload?format=jsonl')",
        )),
    }
}
