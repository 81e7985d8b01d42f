//! End-to-end behaviour of the controller on the shipped reference scenario with a small
//! closed-form model: persistence, regime shifts, bad input, and the baselines.

use polyphony_core::{
    default_initial, Bluefin, BluefinParams, Controller, ControllerParams, CoreError, FixedConfig, ModelError,
    Observation, PerformanceModel, ReasonKind, Tuner, Variant,
};
use polyphony_spec::{NetworkConfig, Scenario, SliVector};

mod common;
use common::{formulas, scenario, step, FormulaModel};

fn small_params() -> ControllerParams {
    ControllerParams {
        acq_random_candidates: 16,
        acq_refine_starts: 1,
        acq_max_iters: 8,
        ..Default::default()
    }
}

/// The full controller after one observation of the default configuration under the formula
/// model: the scenario, the "live" model, the controller and the configuration it observed.
fn observed_once() -> (Scenario, FormulaModel, Controller, NetworkConfig) {
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let cfg = default_initial(&sc.classes);
    c.observe(&Observation {
        config: cfg.clone(),
        slis: truth.slis(&cfg),
        workload: None,
    })
    .expect("observe");
    (sc, truth, c, cfg)
}

/// Warm-up window `w`: `slis` measured at `cfg`; the admission decisions.
fn warm_up_window(
    c: &mut Controller,
    config: NetworkConfig,
    slis: SliVector,
    w: usize,
    model: &FormulaModel,
) -> Vec<polyphony_core::Admission> {
    c.warm_up(
        &Observation {
            config,
            slis,
            workload: Some(w as u64),
        },
        model,
    )
    .expect("warm up")
}

/// The full controller for `sc` with `params`, and its start as a point.
fn full_at_start(sc: &Scenario, params: ControllerParams) -> (Controller, Vec<f64>) {
    let c = Controller::from_scenario(sc, params, Variant::FULL).expect("controller");
    let start = c.space().point_of_config(c.initial()).expect("point");
    (c, start)
}

#[test]
fn a_restored_controller_proposes_exactly_what_the_original_would() {
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.1,
    };
    let model = FormulaModel {
        scenario: sc.clone(),
        scale: 0.9,
    };
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let mut cfg = default_initial(&sc.classes);
    for _ in 0..5 {
        cfg = step(&mut c, &truth, &model, &cfg);
    }
    let saved = c.to_json().expect("serialise");
    let mut restored = Controller::from_json(&saved).expect("restore");
    assert_eq!(restored, c);
    for _ in 0..3 {
        let obs = Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: Some(1),
        };
        let a = c.observe(&obs).expect("observe");
        let b = restored.observe(&obs).expect("observe");
        assert_eq!(a, b);
        let pa = c.propose(&model).expect("propose");
        let pb = restored.propose(&model).expect("propose");
        assert_eq!(pa, pb);
        cfg = pa.config;
    }
    assert!(Controller::from_json("{\"not\": \"a controller\"}").is_err());
}

#[test]
fn propose_before_observe_is_an_error() {
    let sc = scenario();
    let model = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    assert_eq!(c.propose(&model).unwrap_err(), CoreError::NoObservation);
}

#[test]
fn bad_slis_are_rejected_and_leave_the_state_alone() {
    let sc = scenario();
    let model = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let before = c.clone();
    let cfg = default_initial(&sc.classes);
    let mut slis = model.slis(&cfg);
    slis.classes[1].p99 = f64::NAN;
    let e = c
        .observe(&Observation {
            config: cfg,
            slis,
            workload: None,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("AF21") && e.contains("finite"), "{e}");
    assert_eq!(c, before);
}

#[test]
fn a_load_jump_is_reported_as_a_regime_shift_after_k_intervals() {
    let sc = scenario();
    let calm = FormulaModel {
        scenario: sc.clone(),
        scale: 0.8,
    };
    let storm = FormulaModel {
        scenario: sc.clone(),
        scale: 3.0,
    };
    let params = ControllerParams {
        regime_patience: 3,
        ..small_params()
    };
    let mut c = Controller::from_scenario(&sc, params, Variant::FULL).expect("controller");
    let mut cfg = default_initial(&sc.classes);
    for _ in 0..3 {
        cfg = step(&mut c, &calm, &calm, &cfg);
    }
    for i in 0..3 {
        let r = c
            .observe(&Observation {
                config: cfg.clone(),
                slis: storm.slis(&cfg),
                workload: Some(2),
            })
            .expect("observe");
        assert_eq!(r.regime_shift, i == 2, "interval {i}: {r:?}");
        let p = c.propose(&calm).expect("propose");
        assert_eq!(p.reason.kind == ReasonKind::RegimeShift, i == 2, "{:?}", p.reason);
        if i == 2 {
            assert!(p.reason.text.starts_with("regime shift"), "{}", p.reason.text);
        }
        cfg = p.config;
    }
}

#[test]
fn a_failing_model_is_an_error_not_a_panic() {
    struct Broken;
    impl PerformanceModel for Broken {
        fn predict(&self, _: &[NetworkConfig], _: u64) -> Result<Vec<SliVector>, ModelError> {
            Err(ModelError("simulator crashed".into()))
        }
    }
    let (_, truth, mut c, _) = observed_once();
    let e = c.propose(&Broken).unwrap_err().to_string();
    assert!(e.contains("simulator crashed"), "{e}");
    // The observation is still pending: a working model picks it up.
    let p = c.propose(&truth).expect("propose");
    assert_eq!(p.samples, 1);
    // A warm-up measurement the model fails on leaves the controller exactly as it was, so
    // offering it again counts it once.
    let before = c.to_json().expect("json");
    let obs = Observation {
        config: p.config.clone(),
        slis: truth.slis(&p.config),
        workload: Some(3),
    };
    let e = c.warm_up(&obs, &Broken).unwrap_err().to_string();
    assert!(e.contains("simulator crashed"), "{e}");
    assert_eq!(c.to_json().expect("json"), before);
    assert_eq!(c.warm_up(&obs, &truth).expect("warm up").len(), 1);
}

#[test]
fn a_class_missing_from_the_models_window_does_not_stop_the_controller() {
    // The model's window completed no flow of the last class (a light interval): its SLI is
    // absent from every prediction. The controller still proposes, ranking by the classes the
    // model saw, and says which class its measured ratio stood in for.
    struct Partial(FormulaModel);
    impl PerformanceModel for Partial {
        fn predict(&self, configs: &[NetworkConfig], _: u64) -> Result<Vec<SliVector>, ModelError> {
            Ok(configs
                .iter()
                .map(|c| {
                    let mut s = self.0.slis(c);
                    s.classes.pop();
                    s
                })
                .collect())
        }
    }
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let model = Partial(FormulaModel {
        scenario: sc.clone(),
        scale: 0.9,
    });
    let last = sc.classes.last().expect("classes").name.clone();
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let mut cfg = default_initial(&sc.classes);
    for _ in 0..3 {
        c.observe(&Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: None,
        })
        .expect("observe");
        let p = c.propose(&model).expect("a missing class is not an error");
        assert!(
            p.reason.text.contains(&format!("completed no flow of {last}")),
            "{}",
            p.reason.text
        );
        assert!(p.g_hat.is_some_and(f64::is_finite));
        cfg = p.config;
    }
    assert!(c.samples() >= 2, "the samples were admitted: {}", c.samples());
}

#[test]
fn a_model_that_errs_per_class_is_calibrated_per_class() {
    // The model halves the first class's tail and doubles the last one's, everywhere.
    struct Skewed(FormulaModel);
    impl PerformanceModel for Skewed {
        fn predict(&self, configs: &[NetworkConfig], _: u64) -> Result<Vec<SliVector>, ModelError> {
            Ok(configs
                .iter()
                .map(|c| {
                    let mut s = self.0.slis(c);
                    let n = s.classes.len();
                    s.classes[0].p99 *= 0.5;
                    s.classes[n - 1].p99 *= 2.0;
                    s
                })
                .collect())
        }
    }
    let (sc, truth, mut c, _) = observed_once();
    let model = Skewed(FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    });
    let mut p = c.propose(&model).expect("propose");
    let mut last = p.config.clone();
    for _ in 0..3 {
        last = p.config.clone();
        c.observe(&Observation {
            config: last.clone(),
            slis: truth.slis(&last),
            workload: None,
        })
        .expect("observe");
        p = c.propose(&model).expect("propose");
    }
    // The proposal carries the model's ratios at the configuration just measured: there the
    // measured ratio is 2, 1 and 0.5 times the model's.
    let seen = p
        .observed_model_ratios
        .clone()
        .expect("the model's view of the measurement");
    let measured = truth.slis(&last);
    for (i, k) in sc.classes.iter().enumerate() {
        let r = measured.classes[i].p99 / k.slo.threshold();
        assert!(
            (r / seen[i] - [2.0, 1.0, 0.5][i]).abs() < 1e-9,
            "{i}: {r} / {}",
            seen[i]
        );
    }
    // At the configuration just measured the calibration moves towards the samples' miss
    // (all of them missed by the same factors; how far depends on how many lie nearby).
    let at_last = c
        .calibration()
        .expect("calibrated")
        .at(c.space(), &c.space().point_of_config(&last).expect("point"));
    assert_eq!(at_last.len(), sc.classes.len());
    assert!(
        at_last[0] > 1.3
            && at_last[0] <= 2.0 + 1e-9
            && (at_last[1] - 1.0).abs() < 1e-9
            && at_last[2] < 0.8
            && at_last[2] >= 0.5 - 1e-9,
        "{at_last:?}"
    );
    // At the proposal (within a step of the samples) each factor lies between 1 and the
    // samples' miss, and the reason names them when any differs from 1.
    let s = p.model_scale.clone().expect("calibrated");
    assert!(
        (1.0..=2.0 + 1e-9).contains(&s[0]) && (s[1] - 1.0).abs() < 1e-9 && (0.5 - 1e-9..=1.0).contains(&s[2]),
        "{s:?}"
    );
    assert_eq!(
        p.reason.text.contains("model calibrated per class ×"),
        s.iter().any(|v| (v - 1.0).abs() > 0.05),
        "{}",
        p.reason.text
    );
    // Switched off, the model is taken as it is.
    let (_, _, mut off, _) = observed_once();
    off = Controller::from_json(
        &off.to_json()
            .expect("json")
            .replace("\"model_calibration\":true", "\"model_calibration\":false"),
    )
    .expect("json");
    assert_eq!(off.propose(&model).expect("propose").model_scale, None);
    // The open-loop ablation learns nothing from measurements, calibration included.
    let mut open = Controller::from_scenario(&sc, small_params(), Variant::NO_CORRECTION).expect("controller");
    let cfg = default_initial(&sc.classes);
    open.observe(&Observation {
        config: cfg.clone(),
        slis: truth.slis(&cfg),
        workload: None,
    })
    .expect("observe");
    let p = open.propose(&model).expect("propose");
    assert_eq!(p.model_scale, None);
    // It still shows what the model said at the measured configuration.
    assert_eq!(p.observed_model_ratios.map(|r| r.len()), Some(sc.classes.len()));
    // A controller without a model has nothing to show.
    let mut free = Controller::from_scenario(&sc, small_params(), Variant::NO_MODEL).expect("controller");
    free.observe(&Observation {
        config: cfg.clone(),
        slis: truth.slis(&cfg),
        workload: None,
    })
    .expect("observe");
    assert_eq!(free.propose(&model).expect("propose").observed_model_ratios, None);
}

/// `truth`'s SLIs at `cfg` with every p99 scaled by k / J, which puts `c`'s objective near `k`.
fn slis_near(c: &Controller, truth: &FormulaModel, cfg: &NetworkConfig, k: f64) -> SliVector {
    let mut slis = truth.slis(cfg);
    let j0 = c.objective().value(&slis).expect("J");
    for x in &mut slis.classes {
        x.p99 *= k / j0;
    }
    slis
}

#[test]
fn a_region_stalled_at_its_minimum_above_the_slos_is_reopened() {
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let params = ControllerParams {
        trust_radius_init: 0.4,
        trust_radius_min: 0.1,
        trust_shrink_after: 1,
        ..small_params()
    };
    let cfg = default_initial(&sc.classes);
    // The same configuration measured again and again at J scaled by `k` (no improvement).
    let radii = |k: f64, restart: bool| {
        let p = ControllerParams {
            trust_restart: restart,
            ..params.clone()
        };
        let mut c = Controller::from_scenario(&sc, p, Variant::FULL).expect("controller");
        let slis = slis_near(&c, &truth, &cfg, k);
        (0..5)
            .map(|_| {
                c.observe(&Observation {
                    config: cfg.clone(),
                    slis: slis.clone(),
                    workload: None,
                })
                .expect("observe")
                .trust_radius
            })
            .collect::<Vec<f64>>()
    };
    // Above the SLOs: 0.4 → 0.2 → 0.1, then re-opened to 0.4 instead of staying at 0.1.
    assert_eq!(radii(2.5, true), vec![0.4, 0.2, 0.1, 0.4, 0.2]);
    // Switched off, or with every SLO met at the best point, it stays at its minimum.
    assert_eq!(radii(2.5, false), vec![0.4, 0.2, 0.1, 0.1, 0.1]);
    assert_eq!(radii(0.6, true), vec![0.4, 0.2, 0.1, 0.1, 0.1]);
}

#[test]
fn the_region_bounds_a_step_only_once_a_configuration_meets_every_slo() {
    let sc = scenario();
    let model = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let cfg = default_initial(&sc.classes);
    // One observation of `cfg` with J near `k`, then a proposal.
    let propose_after = |k: f64| {
        let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
        let slis = slis_near(&c, &model, &cfg, k);
        c.observe(&Observation {
            config: cfg.clone(),
            slis,
            workload: None,
        })
        .expect("observe");
        let p = c.propose(&model).expect("propose");
        let d = c
            .space()
            .distance(&p.point, &c.space().point_of_config(&cfg).expect("point"));
        (p, d)
    };
    let (above, _) = propose_after(2.5);
    assert!(above.g_best.is_some_and(|g| g > 1.0), "{above:?}");
    assert_eq!(above.trust_radius, None, "{}", above.reason.text);
    assert!(above.reason.text.contains("whole space"), "{}", above.reason.text);
    let (below, d) = propose_after(0.6);
    assert!(below.g_best.is_some_and(|g| g < 1.0), "{below:?}");
    let r = below.trust_radius.expect("a region around the compliant incumbent");
    assert!(d <= r + 1e-6, "step {d} beyond the radius {r}");
}

#[test]
fn a_state_saved_before_the_residual_space_and_warm_up_fields_still_loads() {
    let (_, truth, c, cfg) = observed_once();
    let mut v: serde_json::Value = serde_json::from_str(&c.to_json().expect("json")).expect("value");
    // What a controller saved by an earlier release lacks.
    let params = v["params"].as_object_mut().expect("params");
    assert!(params.remove("residual").is_some() && params.remove("model_calibration").is_some());
    assert!(params.remove("trust_restart").is_some());
    // What it had that the current one does not.
    params.insert("trust_radius_max".into(), serde_json::json!(1.0));
    let state = v["state"].as_object_mut().expect("state");
    assert!(state.remove("warmup_g").is_some() && state.remove("warmup_centre").is_some());
    assert!(state.remove("last_ratios").is_some());
    let pending = state
        .get_mut("pending")
        .and_then(|p| p.as_array_mut())
        .expect("pending");
    assert_eq!(pending.len(), 1, "the observation awaits admission");
    for p in pending {
        assert!(p.as_object_mut().and_then(|p| p.remove("ratios")).is_some());
    }
    let mut old = Controller::from_json(&v.to_string()).expect("an old state loads");
    assert_eq!(old.params().residual, ControllerParams::default().residual);
    assert_eq!(old.samples(), c.samples());
    // And a state saved between two warm-up windows proposes what the original proposes.
    let x = old.space().point_of_config(&cfg).expect("point");
    let design = polyphony_core::warmup::design(old.space(), &x, 0.3, 3, 1);
    let warm = |ctl: &mut Controller, i: usize| {
        let cfg = ctl.space().config_of(&design[i], ctl.initial()).expect("config");
        ctl.warm_up(
            &Observation {
                config: cfg.clone(),
                slis: truth.slis(&cfg),
                workload: Some(i as u64),
            },
            &truth,
        )
        .expect("warm up");
    };
    warm(&mut old, 0);
    let mut restored = Controller::from_json(&old.to_json().expect("json")).expect("restore");
    for ctl in [&mut old, &mut restored] {
        warm(ctl, 1);
        warm(ctl, 2);
    }
    assert_eq!(
        old.propose(&truth).expect("propose"),
        restored.propose(&truth).expect("propose")
    );
}

#[test]
fn proposals_stay_valid_and_carry_their_accounting() {
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.2,
    };
    let model = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let mut cfg = default_initial(&sc.classes);
    for _ in 0..4 {
        c.observe(&Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: None,
        })
        .expect("observe");
        let p = c.propose(&model).expect("propose");
        assert_eq!(p.config.validate(), Ok(()));
        assert!(p.model_evaluations > 0 && p.model_calls >= 2, "{p:?}");
        assert!(p.model_slis.is_some() && p.g_hat.is_some_and(f64::is_finite));
        // A region exactly when a compliant configuration is known.
        assert_eq!(p.trust_radius.is_some(), p.g_best.is_some_and(|g| g < 1.0), "{p:?}");
        cfg = p.config;
    }
}

#[test]
fn baselines_share_the_tuner_interface() {
    let sc = scenario();
    let truth = FormulaModel {
        scenario: sc.clone(),
        scale: 1.0,
    };
    let init = default_initial(&sc.classes);
    let space = polyphony_spec::KnobSpace::per_class_default(&sc.dscps());
    let mut tuners: Vec<Box<dyn Tuner>> = vec![
        Box::new(FixedConfig::new(&sc.classes, init.clone(), 10.0, 0.5).expect("fixed")),
        Box::new(
            Bluefin::new(&sc.classes, &space, init.clone(), 10.0, 0.5, BluefinParams::default()).expect("bluefin"),
        ),
    ];
    for t in &mut tuners {
        let mut cfg = init.clone();
        for _ in 0..4 {
            t.observe(&Observation {
                config: cfg.clone(),
                slis: truth.slis(&cfg),
                workload: None,
            })
            .expect("observe");
            let p = t.propose(&polyphony_core::NoModel).expect("propose");
            assert_eq!(p.config.validate(), Ok(()), "{}", t.name());
            cfg = p.config;
        }
    }
    assert_eq!(tuners[0].propose(&polyphony_core::NoModel).expect("fixed").config, init);
}

#[test]
fn warm_up_samples_are_admitted_and_one_lucky_window_does_not_become_the_centre() {
    let sc = scenario();
    // Every SLO met (J < 1), so that a trust region bounds the first step.
    let (truth, model) = formulas(&sc, 0.5, 0.4);
    // A trust region much smaller than the warm-up design, so where it is centred shows.
    let params = ControllerParams {
        trust_radius_min: 0.05,
        trust_radius_init: 0.05,
        ..small_params()
    };
    let (mut c, start) = full_at_start(&sc, params);
    let design = polyphony_core::warmup::design(c.space(), &start, 0.4, 7, 3);
    // The window farthest from the start is a lucky one: every class 5x faster than usual.
    let lucky = (1..design.len())
        .max_by(|&a, &b| {
            let d = |i: usize| c.space().distance(&design[i], &start);
            d(a).total_cmp(&d(b))
        })
        .expect("design has points besides the start");
    assert!(c.space().distance(&design[lucky], &start) > 0.2, "design spreads");
    let mut gs = Vec::new();
    for (w, x) in design.iter().enumerate() {
        let cfg = c.space().config_of(x, c.initial()).expect("config");
        let mut slis = truth.slis(&cfg);
        if w == lucky {
            for k in &mut slis.classes {
                k.p50 /= 5.0;
                k.p99 /= 5.0;
                k.p999 /= 5.0;
                k.mean /= 5.0;
            }
        }
        gs.push(c.objective().value(&slis).expect("J"));
        let adm = warm_up_window(&mut c, cfg, slis, w, &model);
        assert_eq!(adm.len(), 1, "one decision per warm-up measurement");
    }
    // Spread design points are novel: all admitted before the first proposal (the GP learns
    // from every warm-up window, the lucky one included).
    assert_eq!(c.samples(), design.len());
    let p = c.propose(&model).expect("propose");
    let g_lucky = gs[lucky];
    assert!(
        gs.iter().all(|&g| g >= g_lucky),
        "the lucky window is the warm-up's minimum"
    );
    // g_best is the warm-up's typical level, not the lucky window.
    let g_best = p.g_best.expect("g_best");
    assert!(g_best > g_lucky * 1.5, "g_best {g_best} vs lucky {g_lucky}");
    assert!(g_best < 1.0, "the warm-up meets every SLO: {g_best}");
    // The trust region is centred on the start (the design's centre), not on the lucky point.
    let r = p.trust_radius.expect("trust region");
    assert!(c.space().distance(&p.point, &start) <= r + 1e-6);
    assert!(c.space().distance(&p.point, &design[lucky]) > r + 1e-6);
    // A control observation ends the pool: the next warm-up would start a new one, and a
    // control window below the warm-up's median becomes the rolling best.
    let cfg = p.config.clone();
    let rep = c
        .observe(&Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: Some(99),
        })
        .expect("observe");
    assert!(
        (rep.g_best - rep.g.min(g_best)).abs() < 1e-12,
        "rolling best {} = min(control g {}, pooled warm-up {g_best})",
        rep.g_best,
        rep.g
    );
    assert!(
        rep.g < g_best,
        "the proposal improved on the warm-up: {} vs {g_best}",
        rep.g
    );
    // The next warm-up window starts a new pool; the control observation's entry stays.
    let cfg2 = c.space().config_of(&design[1], c.initial()).expect("config");
    let mut slis2 = truth.slis(&cfg2);
    for k in &mut slis2.classes {
        k.p99 *= 4.0;
    }
    let g2 = c.objective().value(&slis2).expect("J");
    c.warm_up(
        &Observation {
            config: cfg2,
            slis: slis2,
            workload: Some(100),
        },
        &model,
    )
    .expect("warm up");
    let p2 = c.propose(&model).expect("propose");
    assert!(
        g2 > rep.g_best,
        "the new warm-up window is worse: {g2} vs {}",
        rep.g_best
    );
    assert!(
        (p2.g_best.expect("g_best") - rep.g_best).abs() < 1e-12,
        "the control observation's entry was kept: {:?} vs {}",
        p2.g_best,
        rep.g_best
    );
    // The baselines accept warm-up measurements through the trait without changing course.
    let mut fixed = FixedConfig::new(&sc.classes, default_initial(&sc.classes), 10.0, 0.5).expect("fixed");
    Tuner::warm_up(
        &mut fixed,
        &Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: None,
        },
        &model,
    )
    .expect("fixed warm up");
    assert_eq!(
        Tuner::propose(&mut fixed, &model).expect("fixed").config,
        default_initial(&sc.classes)
    );
}

#[test]
fn a_constant_mean_only_controller_never_fits_a_linear_residual_trend() {
    let sc = scenario();
    let (truth, model) = formulas(&sc, 1.2, 0.8);
    let params = ControllerParams {
        gp_nuggets: vec![9.0],
        gp_means: vec![polyphony_core::MeanKind::Constant],
        ..small_params()
    };
    let (mut c, start) = full_at_start(&sc, params);
    // Ten warm-up windows whose measurements are noisy (a factor 0.6-1.5 per window, as the
    // scale study's 50 ms windows), so a trend could be fitted to the noise.
    let noise = [1.0, 1.4, 0.7, 1.2, 0.6, 1.5, 0.9, 1.3, 0.8, 1.1];
    for (w, x) in polyphony_core::warmup::design(c.space(), &start, 0.4, 10, 5)
        .iter()
        .enumerate()
    {
        let cfg = c.space().config_of(x, c.initial()).expect("config");
        let mut slis = truth.slis(&cfg);
        for k in &mut slis.classes {
            k.p99 *= noise[w];
        }
        warm_up_window(&mut c, cfg, slis, w, &model);
    }
    for it in 0..6 {
        let p = c.propose(&model).expect("propose");
        match &p.surrogate {
            polyphony_core::SurrogateStatus::Fitted { hyper, .. } => {
                assert_eq!(hyper.mean, polyphony_core::MeanKind::Constant, "{:?}", p.surrogate);
                assert_eq!(hyper.nugget, 9.0);
            }
            other => panic!("iteration {it}: expected a fitted residual after the warm-up, got {other:?}"),
        }
        c.observe(&Observation {
            slis: truth.slis(&p.config),
            config: p.config,
            workload: Some(10 + it),
        })
        .expect("observe");
    }
}

#[test]
fn new_slo_thresholds_rescale_what_the_controller_learned() {
    use polyphony_spec::Slo;
    let sc = scenario();
    let (truth, model) = formulas(&sc, 1.0, 1.3);
    let mut c = Controller::from_scenario(&sc, small_params(), Variant::FULL).expect("controller");
    let mut cfg = default_initial(&sc.classes);
    // Warm-up windows around the start (each admitted), then control intervals.
    for w in 0..4 {
        let mut x = cfg.clone();
        x.classes[w % 3].weight *= 1.5;
        c.warm_up(
            &Observation {
                config: x.clone(),
                slis: truth.slis(&x),
                workload: Some(1),
            },
            &model,
        )
        .expect("warm-up");
    }
    for _ in 0..4 {
        cfg = step(&mut c, &truth, &model, &cfg);
    }
    // The first class's threshold halved, the third's doubled, the second's weight doubled.
    let factor = [0.5, 1.0, 2.0];
    let mut classes = sc.classes.clone();
    for (cl, k) in classes.iter_mut().zip(factor) {
        if let Slo::FctSlowdown { max_slowdown, .. } = &mut cl.slo {
            *max_slowdown *= k;
        }
    }
    classes[1].weight *= 2.0;
    let r = c.retarget(&classes).expect("same classes, new thresholds");
    let fresh = Controller::from_scenario(
        &Scenario {
            classes: classes.clone(),
            ..sc.clone()
        },
        small_params(),
        Variant::FULL,
    )
    .expect("controller");
    assert_eq!(r.objective(), fresh.objective());
    let (old, new): (Vec<_>, Vec<_>) = (
        c.sample_window().samples().collect(),
        r.sample_window().samples().collect(),
    );
    assert!(old.len() >= 3, "{} samples", old.len());
    assert_eq!(old.len(), new.len());
    for (a, b) in old.iter().zip(&new) {
        assert_eq!((a.iteration, &a.x), (b.iteration, &b.x));
        for (i, k) in factor.iter().enumerate() {
            // r = SLI / threshold: a threshold × k divides the ratio by k.
            assert!((b.ratios[i] - a.ratios[i] / k).abs() < 1e-12, "{a:?} {b:?}");
            assert!((b.model_ratios[i] - a.model_ratios[i] / k).abs() < 1e-12);
        }
        assert_eq!(b.g, r.objective().of_ratios(&b.ratios));
    }
    // What it measured is judged as a controller built for the new SLOs judges it.
    let next = Observation {
        config: cfg.clone(),
        slis: truth.slis(&cfg),
        workload: Some(1),
    };
    let mut r = r;
    let report = r.observe(&next).expect("observe");
    let mut f = fresh;
    assert_eq!(report.ratios, f.observe(&next).expect("observe").ratios);
    r.propose(&model).expect("the retargeted controller proposes");
    // Anything but thresholds and weights is refused: another class, another percentile, fewer.
    let mut other = sc.classes.clone();
    other[0].dscp = polyphony_spec::Dscp::new(46).unwrap();
    let mut pct = sc.classes.clone();
    if let Slo::FctSlowdown { percentile, .. } = &mut pct[2].slo {
        *percentile = 0.5;
    }
    for (bad, needle) in [
        (other, "DSCP 46"),
        (pct, "only thresholds and weights"),
        (sc.classes[..2].to_vec(), "2 classes given for a controller of 3"),
    ] {
        let e = c.retarget(&bad).expect_err("refused");
        assert!(e.to_string().contains(needle), "{e}");
    }
}
