//! The categorical block of the knob space (a class's congestion-control algorithm from an
//! allowed set) and the trust-region EI over the mixed space: proposals stay inside the set, the
//! mixed trust region holds the incumbent and bounds categorical moves, a restored controller
//! proposes exactly what the original would.

use polyphony_core::acquire::{acquire, categorical_neighbours, sample_starts, AcqContext};
use polyphony_core::gp::Surrogate;
use polyphony_core::space::{Space, HAMMING_STEP};
use polyphony_core::{default_initial, Controller, ControllerParams, Objective, Observation, SurrogateStatus, Variant};
use polyphony_spec::{CategoricalSpec, CongestionControl, Dscp, KnobSpace, NetworkConfig, Scenario};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

mod common;
use common::{formulas, scenario, step};

fn cc(name: &str) -> CongestionControl {
    CongestionControl::new(name).unwrap()
}

/// The paper's nine knobs plus AF21 ∈ {dctcp, cubic, reno} and AF31 ∈ {dctcp, reno}.
fn mixed_space(sc: &Scenario) -> KnobSpace {
    let mut s = KnobSpace::per_class_default(&sc.dscps());
    s.categorical = vec![
        CategoricalSpec {
            dscp: Dscp::AF21,
            congestion_control: vec![cc("dctcp"), cc("cubic"), cc("reno")],
        },
        CategoricalSpec {
            dscp: Dscp::AF31,
            congestion_control: vec![cc("dctcp"), cc("reno")],
        },
    ];
    s
}

fn params(seed: u64) -> ControllerParams {
    ControllerParams {
        seed,
        acq_random_candidates: 16,
        acq_refine_starts: 2,
        acq_max_iters: 8,
        ..Default::default()
    }
}

fn controller(sc: &Scenario, seed: u64) -> Controller {
    Controller::new(
        &sc.classes,
        &mixed_space(sc),
        default_initial(&sc.classes),
        params(seed),
        Variant::FULL,
    )
    .expect("controller")
}

#[test]
fn categorical_proposals_stay_inside_the_configured_set() {
    let sc = scenario();
    let allowed = |d: Dscp| -> Vec<&'static str> {
        match d {
            Dscp::AF21 => vec!["dctcp", "cubic", "reno"],
            Dscp::AF31 => vec!["dctcp", "reno"],
            _ => vec![],
        }
    };
    let check = |cfg: &NetworkConfig| {
        for c in &cfg.classes {
            let name = c.congestion_control.as_ref().map(|a| a.name());
            match allowed(c.dscp).as_slice() {
                [] => assert_eq!(name, None, "{} has no categorical knob", c.dscp.name()),
                set => assert!(name.is_some_and(|n| set.contains(&n)), "{}: {name:?}", c.dscp.name()),
            }
        }
    };
    // Any optimisation vector, however wild, maps to an allowed choice.
    let space = Space::new(&mixed_space(&sc), None).unwrap();
    let base = default_initial(&sc.classes);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let centre = space.point_of_config(&base).unwrap();
    for r in [None, Some(0.1), Some(0.3), Some(1.0)] {
        for mut z in sample_starts(&space, &centre, r, 200, &mut rng) {
            check(&space.config_of(&space.point_of(&z), &base).unwrap());
            for c in space.categorical() {
                for wild in [-7.0, 2.6, 1e300, f64::NAN, f64::NEG_INFINITY] {
                    z[c.at] = wild;
                    check(&space.config_of(&space.point_of(&z), &base).unwrap());
                }
            }
        }
    }
    // A configuration with an algorithm outside the set is refused, naming the knob.
    let mut outside = base.clone();
    outside.classes[1].congestion_control = Some(cc("bbr"));
    let e = space.point_of_config(&outside).unwrap_err().to_string();
    assert!(e.contains("AF21.congestion_control") && e.contains("bbr"), "{e}");
    // The controller's proposals, over several seeds; and it finds AF21's better algorithm.
    for seed in 1..=3 {
        let (truth, model) = formulas(&sc, 1.1, 0.9);
        let mut c = controller(&sc, seed);
        let mut cfg = default_initial(&sc.classes);
        for _ in 0..10 {
            cfg = step(&mut c, &truth, &model, &cfg);
            check(&cfg);
        }
        let af21 = cfg
            .class(Dscp::AF21)
            .unwrap()
            .congestion_control
            .as_ref()
            .map(|a| a.name());
        let af31 = cfg
            .class(Dscp::AF31)
            .unwrap()
            .congestion_control
            .as_ref()
            .map(|a| a.name());
        assert_eq!((af21, af31), (Some("cubic"), Some("dctcp")), "seed {seed}");
    }
}

#[test]
fn a_trust_region_in_the_mixed_space_contains_the_incumbent_and_bounds_categorical_moves() {
    let sc = scenario();
    let space = Space::new(&mixed_space(&sc), None).unwrap();
    let base = default_initial(&sc.classes);
    let incumbent = space.point_of_config(&base).unwrap();
    assert_eq!(space.distance(&incumbent, &incumbent), 0.0);
    // One categorical change is HAMMING_STEP away, whatever the choices.
    for z in categorical_neighbours(&space, &incumbent, None) {
        let x = space.point_of(&z);
        assert_eq!(space.hamming(&x, &incumbent), 1);
        assert!((space.distance(&x, &incumbent) - HAMMING_STEP).abs() < 1e-12);
    }
    assert_eq!(categorical_neighbours(&space, &incumbent, None).len(), 2 + 1);
    assert!(categorical_neighbours(&space, &incumbent, Some(0.1)).is_empty());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for r in [0.1, 0.2, 0.3, 0.6] {
        let starts = sample_starts(&space, &incumbent, Some(r), 300, &mut rng);
        let mut changed = 0;
        for z in &starts {
            let x = space.point_of(z);
            assert!(
                space.distance(&x, &incumbent) <= r + 1e-9,
                "r {r}: {}",
                space.distance(&x, &incumbent)
            );
            changed += usize::from(space.hamming(&x, &incumbent) > 0);
        }
        // Categorical moves only where one fits; then in about half the draws.
        if r < HAMMING_STEP {
            assert_eq!(changed, 0);
        } else {
            assert!((100..200).contains(&changed), "r {r}: {changed} of 300");
        }
    }
    // The acquisition: the model prefers AF21 on CUBIC; a region too small for a categorical
    // change keeps the incumbent's choice, one large enough takes CUBIC; both stay inside.
    let objective = Objective::new(&sc.classes, 4.0, 0.1).unwrap();
    let (model, _) = formulas(&sc, 1.0, 1.0);
    let surrogate = Surrogate::constant(0.0, 0.05, SurrogateStatus::Disabled);
    let p = params(1);
    for (r, want) in [(0.1, None), (0.3, Some("cubic"))] {
        let ctx = AcqContext {
            space: &space,
            base: &base,
            objective: &objective,
            surrogate: &surrogate,
            model: Some(&model),
            crn_seed: 1,
            centre: &incumbent,
            radius: Some(r),
            g_best: 10.0,
            params: &p,
            known: &[],
            stand_in: None,
            calibration: None,
            safe_sigmas: None,
        };
        let out = acquire(&ctx, &[], &mut Xoshiro256PlusPlus::seed_from_u64(5)).unwrap();
        let d = space.distance(&out.best.x, &incumbent);
        // β = 1e4 makes the penalty a wall: a step beyond ε costs more than EI can gain.
        assert!(d <= r + 0.02, "r {r}: proposal {d} from the incumbent");
        let af21 = out.best.config.class(Dscp::AF21).unwrap().congestion_control.clone();
        assert_eq!(af21.as_ref().map(|a| a.name()).filter(|&n| n != "dctcp"), want, "r {r}");
    }
}

#[test]
fn a_restored_mixed_space_controller_proposes_exactly_what_the_original_would() {
    let sc = scenario();
    let (truth, model) = formulas(&sc, 1.1, 0.9);
    let mut c = controller(&sc, 9);
    let mut cfg = default_initial(&sc.classes);
    for _ in 0..5 {
        cfg = step(&mut c, &truth, &model, &cfg);
    }
    let saved = c.to_json().expect("serialise");
    assert!(saved.contains("\"cubic\""), "the categorical block is in the state");
    let mut restored = Controller::from_json(&saved).expect("restore");
    assert_eq!(restored, c);
    assert_eq!(restored.space().categorical().len(), 2);
    for _ in 0..3 {
        let obs = Observation {
            config: cfg.clone(),
            slis: truth.slis(&cfg),
            workload: Some(1),
        };
        assert_eq!(
            c.observe(&obs).expect("observe"),
            restored.observe(&obs).expect("observe")
        );
        let pa = c.propose(&model).expect("propose");
        let pb = restored.propose(&model).expect("propose");
        assert_eq!(pa, pb);
        cfg = pa.config;
    }
    // And the same seed from scratch gives the same run.
    let mut again = controller(&sc, 9);
    let mut c2 = controller(&sc, 9);
    let mut cfg2 = default_initial(&sc.classes);
    for _ in 0..4 {
        let a = step(&mut again, &truth, &model, &cfg2);
        let b = step(&mut c2, &truth, &model, &cfg2);
        assert_eq!(a, b);
        cfg2 = a;
    }
}
