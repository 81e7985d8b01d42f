//! The studies of the paper's §8 as scenarios: convergence (Table 2: the reference scenario at
//! three SLO tightnesses), ablation (§8.4: high tightness), adaptation (Table 3: four load
//! phases, uniform SLO 13.5, phase lengths scaled to a number of intervals) and the scale study
//! (§8.5, built in [`crate::scale`]). Reads the scenario TOML files it is pointed at
//! (`<prefix>-{low,medium,high}.toml`, `adaptation.toml`); nothing else.

use crate::load_scenario;
use crate::tuners;
use crate::EvalError;
use polyphony_core::default_initial;
use polyphony_model::poor_config;
use polyphony_model::TrafficMatrix;
use polyphony_spec::{KnobSpace, NetworkConfig, Scenario, TopologySpec};
use std::path::PathBuf;

/// Which study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Study {
    /// Table 2: every tuner at low, medium and high SLO tightness.
    Convergence,
    /// Table 3: four load phases with a uniform SLO.
    Adaptation,
    /// §8.4: the full controller against one ablation per component, high tightness.
    Ablation,
    /// §8.5: 24 leaf-spine scenarios.
    Scale,
    /// Beyond the paper: scenarios drawn from the model's validation space, SLOs set as the
    /// scale study sets them (`crate::fresh`).
    Fresh,
    /// Beyond the paper: a scenario whose SLOs need a non-default congestion-control choice; the
    /// controller on the mixed space against the numeric-only one and Bluefin on the mixed
    /// space.
    Categorical,
}

impl Study {
    /// Its name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Study::Convergence => "convergence",
            Study::Adaptation => "adaptation",
            Study::Ablation => "ablation",
            Study::Scale => "scale",
            Study::Fresh => "fresh",
            Study::Categorical => "categorical",
        }
    }

    /// Where the tuners start when the user does not say (`--start`): the deliberately poor
    /// configuration for convergence, ablation and scale — so that reaching the SLOs is the
    /// tuner's work, not the start's luck — and the default for adaptation, whose Table 3
    /// measures the reaction to load shifts (phases II–IV), not the first convergence that
    /// the convergence study already measures. The categorical study starts at its
    /// scenario's `initial`: the poor numeric start with the hosts' algorithms and class
    /// buffers, which `poor_config` would drop.
    pub fn default_start(self) -> Start {
        match self {
            Study::Adaptation | Study::Categorical => Start::Default,
            Study::Convergence | Study::Ablation | Study::Scale | Study::Fresh => Start::Poor,
        }
    }

    /// The tuners run when the user names none.
    pub fn default_tuners(self) -> Vec<String> {
        let v: &[&str] = match self {
            Study::Convergence | Study::Adaptation => &tuners::ALL,
            Study::Ablation => &tuners::ABLATION,
            Study::Scale => &["polyphony", "fixed"],
            Study::Fresh => &["polyphony", "near-optimal"],
            Study::Categorical => &["polyphony", tuners::NUMERIC_ONLY, "bluefin"],
        };
        v.iter().map(|s| s.to_string()).collect()
    }
}

/// The configuration every tuner of a study starts from (the fixed baseline keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Start {
    /// `polyphony_model::poor_config`: the tightest class gets the smallest weight share,
    /// every class initcwnd 2 and a 300 kB ECN threshold.
    Poor,
    /// The scenario's `initial`, else equal weights, K = 30 kB, initcwnd 10.
    Default,
}

impl Start {
    /// `poor` or `default`.
    pub fn name(self) -> &'static str {
        match self {
            Start::Poor => "poor",
            Start::Default => "default",
        }
    }

    /// Sets the start of every planned scenario.
    pub fn apply(self, planned: &mut [Planned]) {
        for p in planned {
            p.start = match self {
                Start::Poor => p.knobs.resolve_unset(&poor_config(&p.scenario)),
                Start::Default => default_start(&p.scenario),
            };
        }
    }
}

fn default_start(scenario: &Scenario) -> NetworkConfig {
    let cfg = scenario
        .initial
        .clone()
        .unwrap_or_else(|| default_initial(&scenario.classes));
    scenario.knob_space().resolve_unset(&cfg)
}

/// SLO tightness: which of `<prefix>-{low,medium,high}.toml` (the SLOs are the files'; the
/// paper's (AF11, AF21, AF31) are 12/16/22, 11/15/20 and 10/13/17, which `reference-10g` scales
/// by 5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tightness {
    /// The loosest SLOs (`<prefix>-low.toml`).
    Low,
    /// `<prefix>-medium.toml`.
    Medium,
    /// The tightest SLOs (`<prefix>-high.toml`).
    High,
}

impl Tightness {
    /// `low`, `medium` or `high`.
    pub fn name(self) -> &'static str {
        match self {
            Tightness::Low => "low",
            Tightness::Medium => "medium",
            Tightness::High => "high",
        }
    }
}

/// How to build a study's scenarios.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    /// Where `<prefix>-{low,medium,high}.toml` and `adaptation.toml` live.
    pub scenario_dir: PathBuf,
    /// File-name prefix of the tightness scenarios: `reference-10g` (the paper's dumbbell at
    /// 10 Gbit/s), `reference` (100 Mbit/s), `reference-sim` (time-scaled) or `testbed` (SLOs
    /// calibrated on the namespace testbed).
    pub scenario_prefix: String,
    /// Override of the dumbbell's one-way link delay (µs); `None` keeps the files' value.
    pub delay_us: Option<f64>,
    /// Tightness levels of the convergence study.
    pub tightness: Vec<Tightness>,
    /// Intervals per load phase of the adaptation study.
    pub phase_iterations: usize,
    /// Override of the control interval (s).
    pub interval_s: Option<f64>,
    /// The categorical study's scenario: `<scenario_dir>/categorical-<name>.toml`.
    pub categorical: String,
}

/// One scenario of a study, ready to run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Label in tables and file names.
    pub label: String,
    /// The scenario as run.
    pub scenario: Scenario,
    /// Leaf-spine traffic matrix.
    pub matrix: TrafficMatrix,
    /// Where every tuner starts.
    pub start: NetworkConfig,
    /// The knob space.
    pub knobs: KnobSpace,
    /// The near-optimal configuration the scenario's SLOs were measured from, set by
    /// [`crate::scale::plan`]; what the `near-optimal` tuner holds. `None` for the dumbbell
    /// studies, whose SLOs come from the paper.
    pub reference: Option<NetworkConfig>,
}

impl Planned {
    /// A scenario with its default start (the scenario's `initial`, else equal weights,
    /// K = 30 kB, initcwnd 10) and its knob space (its own, else the per-class default).
    pub fn new(label: &str, scenario: Scenario, matrix: TrafficMatrix) -> Planned {
        let start = default_start(&scenario);
        let knobs = scenario.knob_space();
        Planned {
            label: label.into(),
            scenario,
            matrix,
            start,
            knobs,
            reference: None,
        }
    }
}

/// Which flags name the scenario file a study reads, for an error that says what to change.
#[derive(Clone, Copy)]
enum Chosen {
    /// `<prefix>-<tightness>.toml`.
    Prefix,
    /// `adaptation.toml`.
    Adaptation,
    /// `categorical-<name>.toml`.
    Categorical,
}

/// The `categorical-<name>.toml` files of `dir`, by name.
fn categorical_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_prefix("categorical-")
                        .and_then(|r| r.strip_suffix(".toml"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn load(opts: &StudyOptions, file: &str, chosen: Chosen) -> Result<Scenario, EvalError> {
    let path = opts.scenario_dir.join(file);
    if !path.is_file() {
        let dir = opts.scenario_dir.display();
        let how = match chosen {
            Chosen::Prefix => format!(
                "--scenario-dir {dir} with --scenario-prefix {p} reads {p}-{{low,medium,high}}.toml; point them at an existing set, e.g. configs/scenarios with reference-10g, reference or testbed",
                p = opts.scenario_prefix
            ),
            Chosen::Adaptation => {
                format!("--scenario-dir {dir} must hold adaptation.toml; point it at configs/scenarios")
            }
            Chosen::Categorical => format!(
                "--categorical {} reads {dir}/categorical-{}.toml; {dir} has: {}",
                opts.categorical,
                opts.categorical,
                match categorical_names(&opts.scenario_dir) {
                    n if n.is_empty() => "none (point --scenario-dir at configs/scenarios)".to_string(),
                    n => n.join(", "),
                }
            ),
        };
        return Err(EvalError::Usage(format!(
            "scenario file {} does not exist: {how}",
            path.display()
        )));
    }
    let mut s = load_scenario(&path).map_err(|e| {
        EvalError::Usage(format!(
            "{e:#} (point --scenario-dir at the directory holding {file}, e.g. configs/scenarios)"
        ))
    })?;
    if let Some(d) = opts.delay_us {
        match &mut s.topology {
            TopologySpec::Dumbbell { link_delay_us, .. } => *link_delay_us = d,
            TopologySpec::LeafSpine(ls) => ls.link_delay_us = d,
        }
        s.name = format!("{}-delay{d}us", s.name);
    }
    if let Some(i) = opts.interval_s {
        s.interval_s = i;
    }
    s.validate()
        .map_err(|e| EvalError::Usage(format!("{}: {e}", path.display())))?;
    Ok(s)
}

/// The dumbbell scenarios of `study` (the scale study is planned by [`crate::scale::plan`]).
pub fn plan(study: Study, opts: &StudyOptions) -> Result<Vec<Planned>, EvalError> {
    match study {
        Study::Convergence => opts
            .tightness
            .iter()
            .map(|t| {
                let s = load(
                    opts,
                    &format!("{}-{}.toml", opts.scenario_prefix, t.name()),
                    Chosen::Prefix,
                )?;
                Ok(Planned::new(t.name(), s, TrafficMatrix::default()))
            })
            .collect(),
        Study::Ablation => {
            let s = load(opts, &format!("{}-high.toml", opts.scenario_prefix), Chosen::Prefix)?;
            Ok(vec![Planned::new("high", s, TrafficMatrix::default())])
        }
        Study::Adaptation => {
            let mut s = load(opts, "adaptation.toml", Chosen::Adaptation)?;
            if opts.phase_iterations == 0 {
                return Err(EvalError::Usage("--phase-iterations 0: give at least 1".into()));
            }
            let len = opts.phase_iterations as f64 * s.interval_s;
            for p in &mut s.phases {
                p.duration_s = len;
            }
            Ok(vec![Planned::new("phases", s, TrafficMatrix::default())])
        }
        Study::Categorical => {
            let file = format!("categorical-{}.toml", opts.categorical);
            let s = load(opts, &file, Chosen::Categorical)?;
            if s.knob_space().categorical.is_empty() {
                return Err(EvalError::Usage(format!(
                    "{file} has no [[knobs.categorical]] block: the categorical study compares the mixed space with the numeric one; name a categorical-*.toml scenario that has one"
                )));
            }
            Ok(vec![Planned::new(&opts.categorical, s, TrafficMatrix::default())])
        }
        Study::Scale => Err(EvalError::Usage(
            "the scale study builds its scenarios itself (crate::scale::plan)".into(),
        )),
        Study::Fresh => Err(EvalError::Usage(
            "the fresh study draws its scenarios itself (crate::fresh::plan)".into(),
        )),
    }
}
