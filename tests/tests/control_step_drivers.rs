//! The daemon and the evaluation harness drive the same control step: one observation sequence
//! through the daemon's driver (`polyphony::daemon::decide`, its step from the daemon's
//! configuration) and the bench's driver (`polyphony_bench::closed_loop::decide`, its step from
//! a study setup with the same classes, knobs, start, parameters, warm-up and guard) gives
//! identical decisions, interval by interval. The sequence is measured by pktsim under the
//! configurations the drivers decide, with two disturbances both must treat alike: an interval
//! whose SLIs are inflated tenfold (the guard reverts) and one missing a class's SLI (skipped).
//! Touches nothing outside the process.

use polyphony::config::DaemonConfig;
use polyphony_bench::closed_loop::{self, LoopSetup};
use polyphony_bench::ground::Interval;
use polyphony_core::{Action, Decision, Phase, SkipKind};
use polyphony_model::{pool, ModelContext, ModelKind, SimulatedNetwork, Traffic, WindowModel};
use polyphony_spec::SliVector;
use std::path::Path;

/// Controller settings cheap enough for a debug build.
fn controller() -> serde_json::Value {
    serde_json::json!({
        "seed": 5,
        "acq_random_candidates": 12,
        "acq_refine_starts": 1,
        "acq_max_iters": 4,
        "gp_max_eval": 25,
    })
}

/// Interval whose SLIs are inflated (a control interval after the warm-up's proposal).
const INFLATED: u64 = 4;
/// Interval that loses a class's SLI.
const MISSING: u64 = 6;
const INTERVALS: u64 = 8;

fn inflate(s: &SliVector) -> SliVector {
    let mut s = s.clone();
    for c in &mut s.classes {
        c.p50 *= 10.0;
        c.p99 *= 10.0;
        c.p999 *= 10.0;
    }
    s
}

#[test]
fn daemon_and_bench_drivers_decide_identically_on_one_observation_sequence() {
    // A daemon configuration with the reference scenario's classes and topology, its traffic
    // simulated, a warm-up of two windows and a guard at J = 50.
    let scenario_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/scenarios/reference-medium.toml");
    let reference = polyphony::network::load_scenario(&scenario_file).unwrap();
    let c: DaemonConfig = serde_json::from_value(serde_json::json!({
        "mode": "apply",
        "interval_s": 1.0,
        "state_dir": "/nonexistent/never-written",
        "warmup_intervals": 2,
        "controller": controller(),
        "classes": reference.classes,
        "topology": reference.topology,
        "sli": { "source": "simulated" },
        "workload": { "source": "scenario", "scenario": scenario_file },
        "guard": { "max_objective": 50.0 },
    }))
    .unwrap();
    let scenario = c
        .validate("the test's configuration")
        .unwrap()
        .expect("the scenario is loaded");

    // The daemon's step, as a fresh daemon builds it.
    let mut daemon = polyphony::daemon::fresh_step(&c).unwrap();
    // The bench's step, as a study run builds it from the same classes, knobs, start,
    // parameters (seed included), warm-up and guard.
    let context = ModelContext::new(&c.topology, c.dscps()).unwrap();
    let mut study = scenario.clone();
    study.classes = c.classes.clone();
    let setup = LoopSetup {
        scenario: study,
        knobs: c.knob_space(),
        start: c.initial_config(),
        reference: None,
        params: c.controller_params(),
        iterations: (INTERVALS - 2) as usize,
        warmup: c.warmup_intervals,
        guard: Some(c.guard.max_objective),
        model: ModelKind::default().model().unwrap(),
        context: context.clone(),
    };
    let (mut bench, start) = closed_loop::make_step("polyphony", c.controller.seed, &setup).unwrap();
    assert_eq!(start, c.initial_config());
    assert_eq!(
        bench.first_config(&start),
        daemon.first_config(&start),
        "the warm-up starts at the same design point"
    );

    let network = SimulatedNetwork::new(Traffic::new(scenario).unwrap(), c.controller.seed);
    let threads = pool(1);
    let mut config = daemon.first_config(&start);
    let mut seen: Vec<Decision> = Vec::new();
    for index in 0..INTERVALS {
        let m = network.measure(index, &config).unwrap();
        let mut sli = m.sli.clone();
        if index == INFLATED {
            sli = inflate(&sli);
        }
        if index == MISSING {
            sli.classes.retain(|k| k.dscp != c.classes[1].dscp);
        }
        let window_model = |w| {
            WindowModel::new(
                ModelKind::default().model().unwrap(),
                context.clone(),
                w,
                threads.clone(),
            )
        };
        let d = polyphony::daemon::decide(
            &mut daemon,
            &config,
            &sli,
            &m.workload,
            index,
            &window_model(m.workload.clone()),
        )
        .unwrap();
        let interval = Interval {
            sli,
            workload: m.workload.clone(),
            sim_cpu_s: f64::NAN,
        };
        let (b, _time) =
            closed_loop::decide(&mut bench, &config, &interval, index, &window_model(m.workload.clone())).unwrap();
        assert_eq!(d, b, "interval {index}: the drivers decided differently");
        config = d.next.clone();
        seen.push(d);
    }
    assert_eq!(daemon.state(), bench.state(), "the steps end in the same state");

    // The sequence exercised what a driver could get wrong on its own.
    let phases: Vec<Phase> = seen.iter().map(|d| d.record.phase).collect();
    assert_eq!(phases[0], Phase::WarmUp { window: 0, of: 2 });
    assert_eq!(phases[1], Phase::WarmUp { window: 1, of: 2 });
    assert!(phases[2..].iter().all(|p| *p == Phase::Control));
    let inflated = &seen[INFLATED as usize];
    assert_eq!(
        inflated.action,
        Action::Revert,
        "an inflated interval away from the last good configuration reverts: {inflated:?}"
    );
    assert!(inflated.record.proposal.is_none(), "no proposal after a broken guard");
    assert_eq!(
        seen[MISSING as usize].record.skipped.as_ref().map(|s| s.kind),
        Some(SkipKind::MissingSli)
    );
    assert!(
        seen.iter().filter(|d| d.record.proposal.is_some()).count() >= 3,
        "the controller proposed"
    );
}
