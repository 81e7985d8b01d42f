//! `eval`: regenerates the paper's §8 studies on pktsim or the namespace testbed — every tuner
//! on the same scenarios and seeds — and writes tables, CSV and SVG plots (docs/evaluation.md).
//!
//! `cargo run --release -p polyphony-bench --bin eval -- convergence --ground pktsim --seeds 3 --out docs/results/convergence`

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use polyphony_bench::eval::{run_study, write_outputs, EvalOptions, GroundKind};
use polyphony_bench::fresh::{self, FreshOptions};
use polyphony_bench::scale::{self, ScaleArgs};
use polyphony_bench::studies::{self, Start, Study, StudyOptions, Tightness};
use polyphony_bench::EvalError;
use polyphony_core::{ControllerParams, OperatorParams};
use polyphony_model::validation::SeedSet;
use polyphony_model::{Correction, ModelKind};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "Run every tuner on the paper's §8 studies and write tables, CSV and plots")]
struct Args {
    /// The study.
    #[arg(value_enum)]
    study: Study,
    /// The live network the runs are measured on.
    #[arg(long, value_enum, default_value = "pktsim")]
    ground: GroundKind,
    /// Seeds per tuner and scenario (F..F+N with --first-seed F).
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Measured intervals per run (default: 30; adaptation: 4 × --phase-iterations; scale, fresh: 10).
    #[arg(long)]
    iterations: Option<usize>,
    /// Comma-separated tuners (default: the study's set).
    #[arg(long, value_delimiter = ',')]
    tuners: Vec<String>,
    /// Output directory (default docs/results/<study>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Directory of <prefix>-{low,medium,high}.toml and adaptation.toml.
    #[arg(long, default_value = "configs/scenarios")]
    scenario_dir: PathBuf,
    /// File-name prefix of the tightness scenarios (convergence, ablation): `reference-10g`
    /// (the paper's dumbbell at 10 Gbit/s, §1–§2 of docs/evaluation.md), `reference` (100
    /// Mbit/s; `--delay-us 1500` gives §3's time-scaled dumbbell), `reference-sim` or `testbed`
    /// (SLOs calibrated on the namespace testbed).
    #[arg(long, default_value = "reference")]
    scenario_prefix: String,
    /// Warm-up windows before the control loop: they measure design points around the start
    /// (fixed: its configuration), feed the tuners, and count in no metric (default: scale, fresh 10,
    /// i.e. the paper's 500 ms at 50 ms windows; other studies 0).
    #[arg(long)]
    warmup_windows: Option<usize>,
    /// Override the dumbbell's one-way link delay in µs (the files say 2.5).
    #[arg(long)]
    delay_us: Option<f64>,
    /// Override the control interval in seconds (dumbbell studies).
    #[arg(long)]
    interval_s: Option<f64>,
    /// Operator parameters replacing the core's defaults, as a TOML table of the daemon's
    /// `[controller]` keys (e.g. `fairness_weight = 1.5`): for parameter sweeps on development
    /// seeds; the summary names the file and its values.
    #[arg(long)]
    controller: Option<PathBuf>,
    /// Tightness levels of the convergence study.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "low,medium,high")]
    tightness: Vec<Tightness>,
    /// Where every tuner starts: `poor` (polyphony_model::poor_config) or `default` (equal
    /// weights, K = 30 kB, initcwnd 10). Default: poor, except adaptation: default.
    #[arg(long, value_enum)]
    start: Option<Start>,
    /// The categorical study's scenario: `<scenario-dir>/categorical-<NAME>.toml`.
    #[arg(long, default_value = "bulk-tight")]
    categorical: String,
    /// Intervals per load phase of the adaptation study.
    #[arg(long, default_value_t = 10)]
    phase_iterations: usize,
    #[command(flatten)]
    scale: ScaleArgs,
    /// Fresh study: how many cases of the validation space (two scenarios each, high and low;
    /// case i has regime i mod 18, so 18 consecutive cases cover every regime once). The
    /// baseline that sets their SLOs takes --baseline-windows, --slo-basis and, as its seed,
    /// --scenario-seed.
    #[arg(long, default_value_t = 18)]
    cases: u64,
    /// Fresh study: the first case index.
    #[arg(long, default_value_t = 1000)]
    first_case: u64,
    /// Fresh study: the seeds the cases come from — `validation` (reported runs; no development
    /// decision looks at them) or `dev` (development).
    #[arg(long, value_enum, default_value = "validation")]
    case_set: CaseSet,
    /// First seed: runs use seeds F..F+N. Reported studies use 0; investigating or choosing
    /// anything uses seeds no reported study runs (docs/evaluation.md names them).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Runs in parallel (pktsim).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Testbed instance prefix.
    #[arg(long, default_value = "ppe")]
    prefix: String,
    /// Skip the plots.
    #[arg(long)]
    no_plots: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The seed sets of `--case-set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CaseSet {
    /// Development seeds (0..1 000 000).
    Dev,
    /// Validation seeds (from 1 000 000 000).
    Validation,
}

impl CaseSet {
    /// The model crate's seed set.
    fn set(self) -> SeedSet {
        match self {
            CaseSet::Dev => SeedSet::Development,
            CaseSet::Validation => SeedSet::Validation,
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("eval: {e:#}");
        std::process::exit(polyphony_bench::exit_code(&e));
    }
}

/// One sentence naming where the studied scenarios lie outside the model's validated space
/// (empty when none does): there its validation numbers do not describe its error.
fn outside_space(planned: &[studies::Planned]) -> String {
    let mut keys: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for p in planned {
        for o in polyphony_model::validation::scenario_outside_space(&p.scenario) {
            *keys.entry(o.to_string()).or_default() += 1;
        }
    }
    if keys.is_empty() {
        return String::new();
    }
    let list = keys
        .iter()
        .map(|(o, n)| format!("{o}, {n} of {} scenarios", planned.len()))
        .collect::<Vec<_>>()
        .join("; ");
    format!(" The scenarios lie outside the model's validated space (docs/models.md, validation): {list}.")
}

/// `git rev-parse HEAD` of the working directory, with `-dirty` when tracked files outside
/// `docs/` differ from it (what a run executes; `docs/` holds the outputs of earlier studies, so a
/// chain of studies on one commit names that commit); `unknown` when git is not available.
fn git_commit() -> String {
    let git = |args: &[&str]| std::process::Command::new("git").args(args).output().ok();
    let Some(head) = git(&["rev-parse", "HEAD"]).filter(|o| o.status.success()) else {
        return "unknown".into();
    };
    let hash = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let dirty =
        git(&["diff", "--quiet", "HEAD", "--", ":/", ":(top,exclude)docs"]).is_some_and(|o| o.status.code() == Some(1));
    if dirty {
        format!("{hash}-dirty")
    } else {
        hash
    }
}

/// The git blob id of the correction artifact this binary compiled in (`git hash-object
/// --stdin` on [`Correction::shipped_bytes`]), so a summary names the model it ran with even
/// when the file in the tree has changed since the build; `unknown` when git is not available.
fn correction_blob() -> String {
    use std::io::Write;
    let child = std::process::Command::new("git")
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return "unknown".into();
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(Correction::shipped_bytes()).is_ok());
    match child.wait_with_output() {
        Ok(o) if written && o.status.success() => String::from_utf8_lossy(&o.stdout).trim().chars().take(12).collect(),
        _ => "unknown".into(),
    }
}

fn run() -> Result<()> {
    let a = Args::parse();
    // One parameter set for every study: the operator defaults of the core (what the daemon
    // and the demo run); the ablations differ only in the component they remove.
    let (params, swept) = match &a.controller {
        None => (ControllerParams::from(OperatorParams::default()), None),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| EvalError::Usage(format!("--controller {}: cannot read: {e}", p.display())))?;
            let op: OperatorParams =
                toml::from_str(&text).map_err(|e| EvalError::Usage(format!("--controller {}: {e}", p.display())))?;
            let params = ControllerParams::from(op);
            params
                .validate()
                .map_err(|e| EvalError::Usage(format!("--controller {}: {e}", p.display())))?;
            let values = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("; ");
            (params, Some(format!("`{}` (`--controller`: {values})", p.display())))
        }
    };
    if a.study == Study::Adaptation && a.phase_iterations == 0 {
        return Err(EvalError::Usage("--phase-iterations 0: give at least 1 interval per load phase".into()).into());
    }
    if let (Study::Adaptation, Some(n)) = (a.study, a.iterations) {
        let phases = 4 * a.phase_iterations;
        if n < phases {
            return Err(EvalError::Usage(format!(
                "--iterations {n}: the adaptation study's four load phases take 4 × --phase-iterations = {phases} intervals; set --phase-iterations instead (a shorter run would report phases it never ran)"
            ))
            .into());
        }
    }
    let iterations = a.iterations.unwrap_or(match a.study {
        Study::Adaptation => 4 * a.phase_iterations,
        Study::Scale | Study::Fresh => 10,
        _ => 30,
    });
    let warmup = a.warmup_windows.unwrap_or(match a.study {
        Study::Scale | Study::Fresh => 10,
        _ => 0,
    });
    let opts = EvalOptions {
        study: a.study,
        ground: a.ground,
        seeds: a.seeds,
        first_seed: a.first_seed,
        iterations,
        warmup,
        tuners: if a.tuners.is_empty() {
            a.study.default_tuners()
        } else {
            a.tuners.clone()
        },
        params,
        jobs: if a.ground == GroundKind::Testbed { 1 } else { a.jobs },
        prefix: a.prefix.clone(),
    };
    opts.validate()?;
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len} intervals [{elapsed_precise} < {eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let start = a.start.unwrap_or(a.study.default_start());
    // The tree the runs start from (HEAD may move while a long study runs).
    let commit = git_commit();
    let mut left_out: Vec<fresh::Skipped> = Vec::new();
    let mut planned = match a.study {
        Study::Scale => {
            let so = a.scale.options();
            scale::plan(&so, a.scale.scenario_seed, &|name| {
                bar.set_message(format!("baseline SLOs of {name}"))
            })?
        }
        Study::Fresh => {
            let fo = FreshOptions {
                set: a.case_set.set(),
                first: a.first_case,
                cases: a.cases,
                baseline: a.scale.options(),
            };
            let (planned, skipped) = fresh::plan(&fo, a.scale.scenario_seed, &|name| {
                bar.set_message(format!("baseline SLOs of {name}"))
            })?;
            for s in &skipped {
                eprintln!("eval: case {} left out: {}", s.index, s.why);
            }
            left_out = skipped;
            planned
        }
        s => studies::plan(
            s,
            &StudyOptions {
                scenario_dir: a.scenario_dir.clone(),
                scenario_prefix: a.scenario_prefix.clone(),
                delay_us: a.delay_us,
                tightness: a.tightness.clone(),
                phase_iterations: a.phase_iterations,
                interval_s: a.interval_s,
                categorical: a.categorical.clone(),
            },
        )?,
    };
    start.apply(&mut planned);
    let total = planned.len() as u64 * opts.tuners.len() as u64 * opts.seeds * (opts.warmup + opts.iterations) as u64;
    bar.set_length(total);
    bar.set_message(format!("{} on {:?}", a.study.name(), a.ground));
    // Where the results go is checked before the runs, not after them.
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("docs/results").join(a.study.name()));
    std::fs::create_dir_all(&out).map_err(|e| {
        EvalError::Usage(format!(
            "--out {}: cannot create the directory: {e}; name a directory to write the results to",
            out.display()
        ))
    })?;
    let results = run_study(&planned, &opts, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let command = format!(
        "cargo run --release -p polyphony-bench --bin eval -- {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let mut provenance = format!(
        "Run at commit `{}` with the model `{}` (its compiled-in correction, git blob `{}`) and {}; every tuner \
starts from the {} configuration (`--start`).",
        commit,
        ModelKind::default().as_str(),
        correction_blob(),
        swept
            .as_deref()
            .map_or("the core's default operator parameters".to_string(), |s| format!(
                "the operator parameters of {s}, not the defaults"
            )),
        start.name()
    );
    if a.study == Study::Scale {
        provenance += " ";
        provenance += &a.scale.provenance();
    }
    if a.study == Study::Fresh {
        provenance += &format!(
            " Cases {}–{} of the {} seeds (`--first-case`, `--cases`, `--case-set`); SLO basis `{}` over {} baseline interval(s), baseline seed {} (`--scenario-seed`).",
            a.first_case,
            a.first_case.saturating_add(a.cases.saturating_sub(1)),
            a.case_set.set().name(),
            a.scale.slo_basis.name(),
            a.scale.baseline_windows,
            a.scale.scenario_seed
        );
        for s in &left_out {
            provenance += &format!(" Case {} left out: {}.", s.index, s.why);
        }
    }
    provenance += &outside_space(&planned);
    let plots = !a.no_plots;
    let scale = matches!(a.study, Study::Scale | Study::Fresh);
    write_outputs(&out, &opts, &results, &command, &provenance, &|i| {
        plots && (!scale || i < 2)
    })
    .with_context(|| format!("--out {}", out.display()))?;
    print!(
        "{}",
        std::fs::read_to_string(out.join("summary.md")).unwrap_or_default()
    );
    eprintln!("wrote {}", out.display());
    Ok(())
}
