//! Control quality on scenarios nobody chose: the closed loop on scenarios drawn from the space
//! the model is validated on ([`polyphony_model::validation::case`]: dumbbells and leaf-spines,
//! 100 Mbit/s to 100 Gbit/s, loads 20–85 %, 2–8 classes with the shipped size CDFs), one scenario
//! per case index, its regime (topology kind × rate band × load band) the index modulo 18.
//!
//! The case's own SLOs (drawn log-uniform, often out of reach) are replaced as the scale study
//! sets them ([`crate::scale`]): per class 1.25× (high) / 1.5× (low) the p99 of a near-optimal
//! configuration (flowsim's best of random configurations, measured by pktsim) over
//! interval-long windows, so every scenario is known to be reachable by a configuration held
//! from the start, which the `near-optimal` tuner holds. The interval is the case's window
//! (about 3000 flows). Reported runs draw cases from the validation seeds, which no development
//! decision looks at; development uses the development seeds (`--case-set dev`).
//!
//! Pure computation (pktsim, flowsim); no I/O.

use crate::scale::{self, ScaleOptions};
use crate::studies::Planned;
use crate::EvalError;
use polyphony_model::validation::{self, Regime, SeedSet};
use polyphony_model::TrafficMatrix;

/// Which cases to draw and how to set their SLOs.
#[derive(Debug, Clone, PartialEq)]
pub struct FreshOptions {
    /// The seed set the cases come from.
    pub set: SeedSet,
    /// The first case index.
    pub first: u64,
    /// How many cases (each gives a high and a low scenario).
    pub cases: u64,
    /// The baseline's search: random candidates, finalists, windows and SLO basis (the scale
    /// study's; its fabric fields are unused).
    pub baseline: ScaleOptions,
}

/// The regime of a scenario labelled `case-<index>-<tightness>`; `None` for any other label.
pub fn regime_of_label(label: &str) -> Option<Regime> {
    let rest = label.strip_prefix("case-")?;
    let index: u64 = rest.split('-').next()?.parse().ok()?;
    Some(Regime::of_index(index))
}

/// A case left out of the study, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The case index.
    pub index: u64,
    /// Why (the baseline's error).
    pub why: String,
}

/// The scenarios of `opts.cases` cases from `opts.first` (two per case: high, low), their SLOs
/// set from each case's near-optimal baseline with `seed`; `progress` is called once per case.
/// A case with a class that finished no flow in any baseline window has no SLO for it and is
/// left out, listed in the second value; an error if every case is.
pub fn plan(
    opts: &FreshOptions,
    seed: u64,
    progress: &dyn Fn(&str),
) -> Result<(Vec<Planned>, Vec<Skipped>), EvalError> {
    if opts.cases == 0 {
        return Err(EvalError::Usage("--cases 0: give at least 1 case".into()));
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for index in opts.first..opts.first.saturating_add(opts.cases) {
        let case = validation::case(opts.set, index, 0).map_err(|e| EvalError::Scenario(e.to_string()))?;
        let name = format!("case-{index}");
        progress(&name);
        let mut sc = case.scenario;
        sc.name = name;
        let (base, reference) = match scale::baseline(&sc, TrafficMatrix::default(), &opts.baseline, seed) {
            Ok(b) => b,
            Err(e @ EvalError::NoBaseline { .. }) => {
                skipped.push(Skipped {
                    index,
                    why: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let what = format!("{} ({} case, seed {})", case.regime, opts.set.name(), case.seed);
        out.extend(scale::tightened(
            &sc,
            &sc.name,
            &what,
            &base,
            &reference,
            TrafficMatrix::default(),
            opts.baseline.slo_basis,
        ));
    }
    if out.is_empty() {
        return Err(EvalError::Usage(format!(
            "no case of {}..{} could be planned: {}; draw other cases (--first-case) or more baseline windows",
            opts.first,
            opts.first.saturating_add(opts.cases),
            skipped.iter().map(|s| s.why.as_str()).collect::<Vec<_>>().join("; ")
        )));
    }
    Ok((out, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_gives_a_high_and_a_low_scenario_from_one_baseline() {
        // Case 0 is a time-scaled dumbbell (regime 0): quick to simulate in a debug build.
        let opts = FreshOptions {
            set: SeedSet::Development,
            first: 0,
            cases: 1,
            baseline: ScaleOptions {
                candidates: 2,
                finalists: 1,
                baseline_windows: 3,
                ..ScaleOptions::default()
            },
        };
        let (planned, skipped) = plan(&opts, 7, &|_| {}).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(planned.len(), 2);
        assert_eq!(planned[0].label, "case-0-high");
        assert_eq!(planned[1].label, "case-0-low");
        assert_eq!(regime_of_label(&planned[1].label), Some(Regime::of_index(0)));
        let case = validation::case(SeedSet::Development, 0, 0).unwrap();
        assert_eq!(planned[0].scenario.topology, case.scenario.topology);
        assert_eq!(planned[0].scenario.interval_s, case.scenario.interval_s);
        // The same baseline under both: low's SLOs are 1.5 / 1.25 of high's (both above the
        // 1.0 floor here), and both hold the same reference configuration.
        for (h, l) in planned[0].scenario.classes.iter().zip(&planned[1].scenario.classes) {
            let (h, l) = (h.slo.threshold(), l.slo.threshold());
            assert!(h > 1.0 && (l / h - 1.2).abs() < 1e-9, "{h} {l}");
        }
        assert!(planned[0].reference.is_some() && planned[0].reference == planned[1].reference);
        assert!(plan(
            &FreshOptions {
                cases: 0,
                ..opts.clone()
            },
            7,
            &|_| {}
        )
        .is_err());
        // One baseline window: case 0's rarest class finishes no flow in it, so the case is left
        // out, and with nothing left the plan is an error naming the class.
        let one = FreshOptions {
            baseline: ScaleOptions {
                baseline_windows: 1,
                ..opts.baseline.clone()
            },
            ..opts
        };
        let e = plan(&one, 7, &|_| {}).unwrap_err().to_string();
        assert!(e.contains("case-0: class c3 finished no flow"), "{e}");
        assert_eq!(regime_of_label("websearch-s1-web-high"), None);
    }
}
