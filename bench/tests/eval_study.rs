//! The evaluation harness end to end on pktsim, kept small: the same seeds give the same
//! iterations, different seeds different traffic, and bad command lines are refused with a
//! message that says what was wrong.

use polyphony_bench::eval::{run_study, EvalOptions, GroundKind};
use polyphony_bench::report::{iterations_csv, slos_met};
use polyphony_bench::scale::{self, ScaleOptions, SloBasis};
use polyphony_bench::studies::{plan, Start, Study, StudyOptions, Tightness};
use polyphony_core::ControllerParams;
use std::path::PathBuf;
use std::process::Command;

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs/scenarios")
}

/// The ablation scenario on the 1500 µs dumbbell with 3 s intervals (quick to simulate).
fn slow_ablation() -> Vec<polyphony_bench::studies::Planned> {
    plan(
        Study::Ablation,
        &StudyOptions {
            scenario_dir: scenario_dir(),
            scenario_prefix: "reference".into(),
            delay_us: Some(1500.0),
            tightness: vec![],
            phase_iterations: 1,
            interval_s: Some(3.0),
            categorical: String::new(),
        },
    )
    .expect("plan")
}

fn options(seeds: u64) -> EvalOptions {
    EvalOptions {
        study: Study::Convergence,
        ground: GroundKind::Pktsim,
        seeds,
        first_seed: 0,
        iterations: 4,
        warmup: 0,
        tuners: vec!["polyphony".into(), "no-model".into(), "bluefin".into()],
        params: ControllerParams {
            acq_random_candidates: 16,
            acq_refine_starts: 1,
            acq_max_iters: 8,
            ..ControllerParams::default()
        },
        jobs: 2,
        prefix: "ppe".into(),
    }
}

/// The CSV without its last four columns, the times (decision wall and CPU, the model's and
/// pktsim's CPU): the only ones that are not deterministic.
fn without_timing(csv: &str) -> Vec<String> {
    let drop_last = |l: &str| l.rsplit_once(',').map_or(l, |x| x.0).to_string();
    csv.lines()
        .map(|l| {
            assert!(
                !l.starts_with("scenario,") || l.ends_with(",decide_wall_s,decide_cpu_s,model_cpu_s,pktsim_cpu_s"),
                "the time columns are not the last four: {l}"
            );
            (0..4).fold(l.to_string(), |l, _| drop_last(&l))
        })
        .collect()
}

#[test]
fn same_seeds_give_the_same_runs_and_other_seeds_other_traffic() {
    let planned = plan(
        Study::Convergence,
        &StudyOptions {
            scenario_dir: scenario_dir(),
            scenario_prefix: "reference".into(),
            delay_us: Some(1500.0),
            tightness: vec![Tightness::Medium],
            phase_iterations: 1,
            interval_s: Some(3.0),
            categorical: String::new(),
        },
    )
    .expect("plan");
    let a = run_study(&planned, &options(2), &|| {}).expect("first run");
    let b = run_study(&planned, &options(2), &|| {}).expect("second run");
    let (ca, cb) = (iterations_csv(&a[0]), iterations_csv(&b[0]));
    assert_eq!(ca.lines().count(), 1 + 3 * 2 * 4);
    assert_eq!(without_timing(&ca), without_timing(&cb));
    // Seed 0 and seed 1 of one tuner measure different traffic from the first interval on.
    let p99 = |seed: &str| {
        ca.lines()
            .find(|l| l.starts_with(&format!("medium,bluefin,{seed},0,")))
            .map(|l| l.split(',').nth(5).unwrap_or("").to_string())
    };
    assert_ne!(p99("0"), p99("1"));
    // Every tuner of one seed starts at the same configuration on the same traffic.
    let first: Vec<&str> = ca.lines().filter(|l| l.contains(",0,0,0.000,")).collect();
    assert_eq!(first.len(), 3);
    // The measured SLIs and the knobs (not the model's view, which tuners without a model lack).
    let header: Vec<&str> = ca.lines().next().unwrap_or("").split(',').collect();
    let body = |l: &str| {
        l.split(',')
            .zip(&header)
            .filter(|(_, h)| {
                ["p99_", "ratio_", "weight_", "ecn_bytes_", "initcwnd_"]
                    .iter()
                    .any(|p| h.starts_with(p))
            })
            .map(|(v, _)| v.to_string())
            .collect::<Vec<_>>()
    };
    assert!(first.iter().all(|l| body(l) == body(first[0])), "{first:?}");
    // Development seeds: first_seed 1 runs exactly seed 1 of the two-seed study.
    let later = EvalOptions {
        first_seed: 1,
        ..options(1)
    };
    let c = iterations_csv(&run_study(&planned, &later, &|| {}).expect("seed 1 alone")[0]);
    let seed1 = |csv: &str| {
        without_timing(csv)
            .into_iter()
            .filter(|l| l.split(',').nth(2) == Some("1"))
            .collect::<Vec<_>>()
    };
    assert_eq!(c.lines().count(), 1 + 3 * 4);
    assert_eq!(seed1(&c), seed1(&ca));
}

fn eval(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_eval"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("run eval");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs eval with `args` and checks that it refuses them (exit 2) with every one of `needles`
/// in its message.
fn refused(args: &[&str], needles: &[&str]) {
    let (code, err) = eval(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
    }
}

#[test]
fn bad_command_lines_are_refused_with_what_to_do() {
    let cases: [(&[&str], &[&str]); 10] = [
        (
            &["convergence", "--tuners", "polyphony,magic", "--quiet"],
            &["magic", "whole-space-bo"],
        ),
        (&["convergence", "--seeds", "0", "--quiet"], &["--seeds 0"]),
        (&["scale", "--ground", "testbed", "--quiet"], &["dumbbell"]),
        // One parameter set: studies take no parameter overrides.
        (&["convergence", "--params", "p.json", "--quiet"], &["--params"]),
        (&["sideways"], &["convergence"]),
        (
            &["convergence", "--scenario-dir", "/nonexistent", "--quiet"],
            &["--scenario-dir"],
        ),
        (
            &["convergence", "--scenario-prefix", "nosuch", "--quiet"],
            &["nosuch-low.toml", "--scenario-prefix"],
        ),
        (
            &["adaptation", "--phase-iterations", "0", "--quiet"],
            &["--phase-iterations 0"],
        ),
        // Fewer intervals than the four phases would report phases that never ran.
        (
            &["adaptation", "--iterations", "2", "--quiet"],
            &["--iterations 2", "--phase-iterations"],
        ),
        (
            &["categorical", "--categorical", "nosuch", "--quiet"],
            &["--categorical nosuch", "incast"],
        ),
    ];
    for (args, needles) in cases {
        refused(args, needles);
    }

    // An --out that cannot be a directory is refused before any interval runs (a study
    // would otherwise lose its results at the end).
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    refused(
        &["convergence", "--iterations", "1000", "--out", file.to_str().unwrap()],
        &["--out", "a-file"],
    );
}

#[test]
fn poor_start_puts_every_tuner_on_the_demo_poor_configuration() {
    let mut planned = slow_ablation();
    assert_eq!(Study::Ablation.default_start(), Start::Poor);
    assert_eq!(Study::Adaptation.default_start(), Start::Default);
    Start::Poor.apply(&mut planned);
    let poor = polyphony_model::poor_config(&planned[0].scenario);
    assert_eq!(planned[0].start, poor);
    let mut o = options(1);
    o.study = Study::Ablation;
    o.iterations = 2;
    o.tuners = vec!["polyphony".into(), "fixed".into()];
    let r = run_study(&planned, &o, &|| {}).expect("run");
    for t in &r[0].traces {
        assert_eq!(t.records[0].config, poor, "{} did not start poor", t.tuner);
    }
    // The poor start misses an SLO on this scenario: the fixed tuner never leaves it.
    let fixed = r[0].traces.iter().find(|t| t.tuner == "fixed").expect("fixed ran");
    let judged = fixed.judged_ratios();
    assert!(judged.iter().all(|r| !slos_met(r)), "{judged:?}");
    Start::Default.apply(&mut planned);
    assert_ne!(planned[0].start, poor);
}

#[test]
fn a_class_without_flows_has_no_slo_to_miss() {
    assert!(slos_met(&[0.9, 0.5]));
    assert!(!slos_met(&[0.9, 1.2]));
    // Nothing measured is no evidence of compliance.
    assert!(!slos_met(&[]));
}

#[test]
fn the_scenario_prefix_selects_the_testbed_files_and_a_missing_one_is_named() {
    let opts = |prefix: &str| StudyOptions {
        scenario_dir: scenario_dir(),
        scenario_prefix: prefix.into(),
        delay_us: None,
        tightness: vec![Tightness::Low, Tightness::High],
        phase_iterations: 1,
        interval_s: None,
        categorical: String::new(),
    };
    let read = |f: &str| polyphony_bench::load_scenario(&scenario_dir().join(f)).expect("shipped scenario loads");
    let testbed = plan(Study::Convergence, &opts("testbed")).expect("testbed plan");
    assert_eq!(testbed.len(), 2);
    assert_eq!(testbed[0].scenario, read("testbed-low.toml"));
    assert_eq!(testbed[1].scenario, read("testbed-high.toml"));
    let ablation = plan(Study::Ablation, &opts("testbed")).expect("testbed ablation");
    assert_eq!(ablation[0].scenario, read("testbed-high.toml"));
    let reference = plan(Study::Convergence, &opts("reference")).expect("reference plan");
    assert_eq!(reference[1].scenario, read("reference-high.toml"));
    assert_ne!(reference[1].scenario, testbed[1].scenario);
    let e = plan(Study::Convergence, &opts("lab"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("lab-low.toml") && e.contains("does not exist"), "{e}");
}

#[test]
fn warm_up_windows_precede_the_control_loop_and_shift_it_in_time() {
    let planned = slow_ablation();
    let mut o = options(1);
    o.study = Study::Ablation;
    o.tuners = vec!["polyphony".into(), "fixed".into()];
    o.iterations = 3;
    let plain = run_study(&planned, &o, &|| {}).expect("no warm-up");
    o.warmup = 2;
    o.iterations = 1;
    let warm = run_study(&planned, &o, &|| {}).expect("warm-up");
    let get = |r: &[polyphony_bench::report::ScenarioResult], t: &str| {
        r[0].traces.iter().find(|x| x.tuner == t).cloned().expect("ran")
    };
    let (pp, pw) = (get(&plain, "polyphony"), get(&warm, "polyphony"));
    let (fp, fw) = (get(&plain, "fixed"), get(&warm, "fixed"));
    assert!(pp.warmup.is_empty());
    assert_eq!((pw.warmup.len(), pw.records.len()), (2, 1));
    // Polyphony's warm-up: the start, then a different design point; fixed keeps its start.
    let start = &planned[0].start;
    assert_eq!(&pw.warmup[0].config, start);
    assert_ne!(&pw.warmup[1].config, start);
    assert!(fw.warmup.iter().all(|r| &r.config == start));
    assert!(pw.warmup.iter().all(|r| r.reason.starts_with("warm-up")));
    // Control iteration 0 after two warm-up windows measures the traffic of window 2: the fixed
    // tuner sees there exactly what it saw at iteration 2 without warm-up.
    assert_eq!(fw.records[0].p99, fp.records[2].p99);
    assert_eq!(fw.records[0].iteration, 0);
    // The CSV lists the warm-up windows with negative iterations before the control ones.
    let csv = iterations_csv(&warm[0]);
    assert!(csv.lines().any(|l| l.starts_with("high,polyphony,0,-2,")), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("high,polyphony,0,0,")), "{csv}");
}

#[test]
fn near_optimal_holds_the_scale_reference_and_is_refused_where_there_is_none() {
    let so = ScaleOptions {
        racks: 4,
        hosts_per_rack: 2,
        candidates: 4,
        baseline_windows: 3,
        slo_basis: SloBasis::WindowMedian,
        cells: 1,
        ..ScaleOptions::default()
    };
    let mut planned = scale::plan(&so, 0, &|_| {}).expect("scale plan");
    Start::Poor.apply(&mut planned);
    let reference = planned[0]
        .reference
        .clone()
        .expect("the scale plan keeps its reference");
    assert_ne!(reference, planned[0].start);
    let mut o = options(1);
    o.study = Study::Scale;
    o.tuners = vec!["near-optimal".into(), "fixed".into()];
    o.warmup = 2;
    o.iterations = 3;
    let r = run_study(&planned[..1], &o, &|| {}).expect("run");
    let get = |t: &str| r[0].traces.iter().find(|x| x.tuner == t).expect("ran");
    // Warm-up and control windows alike measure the reference: no design points around the start.
    let near = get("near-optimal");
    assert_eq!((near.warmup.len(), near.records.len()), (2, 3));
    assert!(near.warmup.iter().chain(&near.records).all(|x| x.config == reference));
    let fixed = get("fixed");
    assert!(fixed.records.iter().all(|x| x.config == planned[0].start));

    // A dumbbell study measured no reference: refused before anything runs, saying what to do.
    let mut o = options(1);
    o.tuners = vec!["polyphony".into(), "near-optimal".into()];
    let e = run_study(&slow_ablation(), &o, &|| {})
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("near-optimal") && e.contains("scale study"), "{e}");
    refused(
        &["convergence", "--tuners", "near-optimal", "--quiet"],
        &["no reference configuration", "--tuners"],
    );
    refused(
        &["scale", "--slo-basis", "p99", "--quiet"],
        &["window-median", "run-p99"],
    );
}

#[test]
fn the_categorical_study_runs_its_scenario_from_its_start_and_numeric_only_keeps_the_algorithm() {
    let opts = |name: &str| StudyOptions {
        scenario_dir: scenario_dir(),
        scenario_prefix: "reference".into(),
        delay_us: None,
        tightness: vec![],
        phase_iterations: 1,
        interval_s: Some(3.0),
        categorical: name.into(),
    };
    let mut planned = plan(Study::Categorical, &opts("bulk-tight")).expect("plan");
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0].scenario.name, "categorical-bulk-tight");
    assert_eq!(Study::Categorical.default_start(), Start::Default);
    Start::Default.apply(&mut planned);
    let cubic = |c: &polyphony_spec::NetworkConfig| {
        c.class(polyphony_spec::Dscp::AF31)
            .and_then(|k| k.congestion_control.as_ref())
            .map(|a| a.name().to_string())
    };
    // The start keeps the scenario's AF31 algorithm and buffer (poor_config would drop them).
    assert_eq!(cubic(&planned[0].start).as_deref(), Some("cubic"));
    let mut o = options(1);
    o.study = Study::Categorical;
    o.iterations = 3;
    o.tuners = vec!["polyphony".into(), "numeric-only".into()];
    let r = run_study(&planned, &o, &|| {}).expect("run");
    let numeric = r[0].traces.iter().find(|t| t.tuner == "numeric-only").expect("ran");
    assert!(numeric
        .records
        .iter()
        .all(|x| cubic(&x.config).as_deref() == Some("cubic")));
    let csv = iterations_csv(&r[0]);
    assert!(csv.lines().next().is_some_and(|h| h.contains(",cc_AF31,")), "{csv}");
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.contains(",cubic,") || l.contains(",dctcp,")),
        "{csv}"
    );
    let md = polyphony_bench::report::categorical_markdown(&r[0]);
    assert!(md.contains("| numeric-only | AF31 cubic: 1 | never |"), "{md}");
    // A scenario without a categorical block is refused, naming it.
    let e = plan(Study::Categorical, &opts("nosuch"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("categorical-nosuch.toml"), "{e}");
}
