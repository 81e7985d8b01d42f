//! The scalar objective J of §4.1: per-class ratios r_i = y_i / v_i, a weighted smooth maximum
//! (LogSumExp with sharpness c) plus λ times the weighted mean absolute deviation of the ratios.
//!
//! With class weights ω_i normalised to mean 1 (all 1 by default):
//! `LSE = (1/c)·ln( (1/N) Σ ω_i·exp(c·r_i) ) + ln(N)/c`, which is the paper's
//! `(1/c)·ln Σ exp(c·r_i)` when every ω_i = 1; `r̄ = (1/N) Σ ω_i r_i`;
//! `fairness = (1/N) Σ ω_i |r_i − r̄|`; `J = LSE + λ·fairness`. Lower is better; every SLO is
//! met iff max r_i ≤ 1. Pure; no I/O.
//!
//! **SLO kinds.** y_i and v_i are in the unit of the class's SLO ([`polyphony_spec::Slo`]):
//! an FCT slowdown at the SLO's percentile, or the p99 query completion time in µs. The ratio
//! is unitless either way, and nothing else in the controller depends on the kind.
//!
//! **Lower bound.** J ≥ ln(N)/c whenever every r_i ≥ 0 (always: slowdowns and SLOs are
//! positive). The weights ω_i/N are non-negative and sum to 1, so Jensen's inequality for the
//! concave ln gives `ln((1/N) Σ ω_i exp(c·r_i)) ≥ (c/N) Σ ω_i r_i = c·r̄`, hence
//! `LSE ≥ r̄ + ln(N)/c ≥ ln(N)/c`, and the fairness term is ≥ 0. The bound is attained in the
//! limit r → 0, so no larger constant holds for every configuration. (A slowdown is ≥ 1 in
//! theory, which would raise it to `(1/N) Σ ω_i/v_i + ln(N)/c`, but measured slowdowns can fall
//! below 1 when the ideal FCT uses a reference RTT, so the core does not assume it.)
//! [`Objective::lower_bound`] returns it; the acquisition censors its surrogate there
//! (`crate::acquire`).

use crate::CoreError;
use polyphony_spec::{Dscp, SliVector, Slo, SloKind, TrafficClass};
use serde::{Deserialize, Serialize};

/// Why a class's SLI is unusable when it is absent.
const MISSING: &str = "missing: no SLI was reported for this class (no completed flows?)";

/// One class's target inside the objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassTarget {
    /// Class name (for errors).
    pub name: String,
    /// The class.
    pub dscp: Dscp,
    /// The objective: which SLI (slowdown at a percentile, or p99 QCT) and the threshold v_i.
    /// Flattened, so that a state saved before SLOs had kinds (`percentile`, `max_slowdown`
    /// beside `name`) reads back as the slowdown objective it was.
    #[serde(flatten)]
    pub slo: Slo,
    /// Normalised weight ω_i (mean 1 over the classes).
    pub weight: f64,
}

/// The objective of a set of traffic classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    targets: Vec<ClassTarget>,
    sharpness: f64,
    fairness_weight: f64,
}

impl ClassTarget {
    /// r = y / v at this class's percentile; an error names the class and what is wrong.
    pub fn ratio(&self, slis: &SliVector) -> Result<f64, CoreError> {
        let s = slis.get(self.dscp).ok_or_else(|| CoreError::InvalidSli {
            class: self.name.clone(),
            why: MISSING.into(),
        })?;
        let y = self.slo.sli(s).ok_or_else(|| CoreError::InvalidSli {
            class: self.name.clone(),
            why: match self.slo.kind() {
                SloKind::FctSlowdownP99 => format!("percentile {} is not carried by the SLI", self.slo.percentile()),
                SloKind::QctP99 => "no query completion times: no query of this class completed in the interval".into(),
            },
        })?;
        if !(y.is_finite() && y > 0.0) {
            return Err(CoreError::InvalidSli {
                class: self.name.clone(),
                why: format!(
                    "{} = {y}{}: must be a finite positive number; drop this interval's measurement",
                    match self.slo.kind() {
                        SloKind::FctSlowdownP99 => format!("p{} slowdown", self.slo.percentile() * 100.0),
                        SloKind::QctP99 => "p99 QCT".into(),
                    },
                    self.slo.kind().unit()
                ),
            });
        }
        Ok(y / self.slo.threshold())
    }
}

impl Objective {
    /// The objective of `classes` (their SLOs and weights) with sharpness `c` and fairness
    /// weight `lambda`.
    pub fn new(classes: &[TrafficClass], c: f64, lambda: f64) -> Result<Objective, CoreError> {
        if classes.is_empty() {
            return Err(CoreError::InvalidObjective(
                "no traffic classes: declare at least one class with an SLO".into(),
            ));
        }
        for cl in classes {
            cl.slo
                .validate(&cl.name)
                .map_err(|e| CoreError::InvalidObjective(e.to_string()))?;
            if !(cl.weight.is_finite() && cl.weight > 0.0) {
                return Err(CoreError::InvalidObjective(format!(
                    "class {} weight = {}: a class weight is a positive number",
                    cl.name, cl.weight
                )));
            }
            if ![0.5, 0.99, 0.999]
                .iter()
                .any(|p| (p - cl.slo.percentile()).abs() < 1e-9)
            {
                return Err(CoreError::InvalidObjective(format!(
                    "class {} percentile = {}: SLIs carry p50, p99 and p99.9 only",
                    cl.name,
                    cl.slo.percentile()
                )));
            }
        }
        if !(c.is_finite() && c > 0.0 && lambda.is_finite() && lambda >= 0.0) {
            return Err(CoreError::InvalidObjective(format!(
                "sharpness c = {c} must be > 0 and λ = {lambda} must be ≥ 0"
            )));
        }
        let mean_w = classes.iter().map(|c| c.weight).sum::<f64>() / classes.len() as f64;
        Ok(Objective {
            targets: classes
                .iter()
                .map(|cl| ClassTarget {
                    name: cl.name.clone(),
                    dscp: cl.dscp,
                    slo: cl.slo,
                    weight: cl.weight / mean_w,
                })
                .collect(),
            sharpness: c,
            fairness_weight: lambda,
        })
    }

    /// The classes, in ratio order.
    pub fn targets(&self) -> &[ClassTarget] {
        &self.targets
    }

    /// The ratios r_i = y_i / v_i, each at its class's SLO percentile. Errors name the class
    /// whose SLI is missing, not finite or not positive.
    pub fn ratios(&self, slis: &SliVector) -> Result<Vec<f64>, CoreError> {
        self.targets.iter().map(|t| t.ratio(slis)).collect()
    }

    /// The ratio of every class that has a usable SLI, NaN for the others (for records of an
    /// interval that [`Objective::ratios`] refuses).
    pub fn partial_ratios(&self, slis: &SliVector) -> Vec<f64> {
        self.targets.iter().map(|t| t.ratio(slis).unwrap_or(f64::NAN)).collect()
    }

    /// The smallest value J can take for non-negative ratios: `ln(N)/c` (module docs derive
    /// it). A prediction below it is impossible.
    pub fn lower_bound(&self) -> f64 {
        (self.targets.len() as f64).ln() / self.sharpness
    }

    /// J of the given ratios.
    pub fn of_ratios(&self, r: &[f64]) -> f64 {
        let w: Vec<f64> = self.targets.iter().map(|t| t.weight).collect();
        weighted_lse(r, &w, self.sharpness) + self.fairness_weight * fairness(r, &w)
    }

    /// J of an SLI vector.
    pub fn value(&self, slis: &SliVector) -> Result<f64, CoreError> {
        Ok(self.of_ratios(&self.ratios(slis)?))
    }

    /// The ratios of a model's prediction, in objective order, with NaN for a class that has
    /// no SLI at all (none of its flows completed in the model's window — a light interval).
    /// A class that is present but unusable (non-finite or non-positive, or without the SLO's
    /// percentile) is the error [`Objective::ratios`] gives.
    pub fn model_ratios(&self, slis: &SliVector) -> Result<Vec<f64>, CoreError> {
        let mut present = SliVector { classes: Vec::new() };
        let mut kept = Vec::new();
        for t in &self.targets {
            if let Some(c) = slis.get(t.dscp) {
                present.classes.push(*c);
                kept.push(t.clone());
            }
        }
        let partial = Objective {
            targets: kept,
            ..self.clone()
        };
        let mut got = partial.ratios(&present)?.into_iter();
        Ok(self
            .targets
            .iter()
            .map(|t| match slis.get(t.dscp) {
                Some(_) => got.next().unwrap_or(f64::NAN),
                None => f64::NAN,
            })
            .collect())
    }

    /// J of model ratios `r` (from [`Objective::model_ratios`]), each multiplied by its class's
    /// `scale` (the model's calibration; `None` = 1), where an absent class (NaN) takes
    /// `stand_in[i]`, its measured ratio, unscaled — the same value for every candidate, so the
    /// model ranks candidates by the classes it did see. Returns J and the names of the classes
    /// stood in for; an absent class without a stand-in is an error naming it.
    pub fn model_value(
        &self,
        r: &[f64],
        scale: Option<&[f64]>,
        stand_in: Option<&[f64]>,
    ) -> Result<(f64, Vec<String>), CoreError> {
        let mut out = Vec::with_capacity(self.targets.len());
        let mut absent = Vec::new();
        for (i, t) in self.targets.iter().enumerate() {
            let ri = r.get(i).copied().unwrap_or(f64::NAN);
            if ri.is_nan() {
                match stand_in.and_then(|s| s.get(i)) {
                    Some(&v) if v.is_finite() && v >= 0.0 => {
                        out.push(v);
                        absent.push(t.name.clone());
                    }
                    _ => {
                        return Err(CoreError::InvalidSli {
                            class: t.name.clone(),
                            why: MISSING.into(),
                        })
                    }
                }
            } else {
                out.push(ri * scale.and_then(|s| s.get(i)).copied().unwrap_or(1.0));
            }
        }
        Ok((self.of_ratios(&out), absent))
    }
}

pub use polyphony_spec::objective::{fairness, lse, weighted_lse};

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::ClassSli;
    use proptest::prelude::*;

    fn classes() -> Vec<TrafficClass> {
        vec![
            TrafficClass::new("AF11", Dscp::AF11, 10.0),
            TrafficClass::new("AF21", Dscp::AF21, 13.0),
            TrafficClass::new("AF31", Dscp::AF31, 17.0),
        ]
    }

    fn sli(d: Dscp, p99: f64) -> ClassSli {
        ClassSli {
            dscp: d,
            flows: 100,
            p50: 1.0,
            p99,
            p999: p99,
            mean: 1.0,
            qct: None,
        }
    }

    #[test]
    fn ratios_divide_by_the_slo() {
        let o = Objective::new(&classes(), 10.0, 0.5).unwrap();
        let s = SliVector {
            classes: vec![sli(Dscp::AF11, 5.0), sli(Dscp::AF21, 13.0), sli(Dscp::AF31, 34.0)],
        };
        assert_eq!(o.ratios(&s).unwrap(), vec![0.5, 1.0, 2.0]);
    }

    #[test]
    fn a_qct_slo_divides_the_p99_qct_by_its_threshold() {
        use polyphony_spec::{Nanos, QctSli, Slo};
        let mut cls = classes();
        cls.push(TrafficClass {
            name: "agg".into(),
            dscp: Dscp::AF41,
            slo: Slo::qct_p99(Nanos(2_000_000)),
            weight: 1.0,
        });
        let o = Objective::new(&cls, 10.0, 0.5).unwrap();
        // The QCT class's slowdown is far above anything; only its p99 QCT counts.
        let mut agg = sli(Dscp::AF41, 500.0);
        agg.qct = Some(QctSli {
            queries: 40,
            p50: Nanos(900_000),
            p99: Nanos(3_000_000),
            p999: Nanos(3_500_000),
        });
        let s = SliVector {
            classes: vec![sli(Dscp::AF11, 5.0), sli(Dscp::AF21, 13.0), sli(Dscp::AF31, 34.0), agg],
        };
        assert_eq!(o.ratios(&s).unwrap(), vec![0.5, 1.0, 2.0, 1.5]);
        // Without completed queries the class has no QCT SLI: an error naming it.
        let mut none = s.clone();
        none.classes[3].qct = None;
        let e = o.ratios(&none).unwrap_err().to_string();
        assert!(e.contains("agg") && e.contains("no query"), "{e}");
    }

    #[test]
    fn a_target_saved_before_slo_kinds_reads_back() {
        let old = r#"{"name":"AF11","dscp":10,"percentile":0.99,"max_slowdown":11.0,"weight":1.0}"#;
        let t: ClassTarget = serde_json::from_str(old).unwrap();
        assert_eq!(t.slo, polyphony_spec::Slo::p99(11.0));
        let q = ClassTarget {
            slo: polyphony_spec::Slo::qct_p99(polyphony_spec::Nanos(2_000_000)),
            ..t.clone()
        };
        let json = serde_json::to_string(&q).unwrap();
        assert!(json.contains(r#""kind":"qct_p99","max_qct_us":2000.0"#), "{json}");
        assert_eq!(serde_json::from_str::<ClassTarget>(&json).unwrap(), q);
        assert_eq!(
            serde_json::from_str::<ClassTarget>(&serde_json::to_string(&t).unwrap()).unwrap(),
            t
        );
    }

    #[test]
    fn bad_slis_are_rejected_by_class() {
        let o = Objective::new(&classes(), 10.0, 0.5).unwrap();
        for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            let s = SliVector {
                classes: vec![sli(Dscp::AF11, 5.0), sli(Dscp::AF21, bad), sli(Dscp::AF31, 3.0)],
            };
            let e = o.value(&s).unwrap_err().to_string();
            assert!(e.starts_with("SLI of class AF21"), "{e}");
        }
        let s = SliVector {
            classes: vec![sli(Dscp::AF11, 5.0)],
        };
        let e = o.value(&s).unwrap_err().to_string();
        assert!(e.contains("AF21") && e.contains("missing"), "{e}");
    }

    #[test]
    fn a_class_the_model_did_not_see_takes_its_measured_ratio() {
        let o = Objective::new(&classes(), 10.0, 0.5).unwrap();
        let model = SliVector {
            classes: vec![sli(Dscp::AF11, 5.0), sli(Dscp::AF21, 13.0)],
        };
        // Without a stand-in the missing class is the usual error.
        let e = o
            .model_ratios(&model)
            .and_then(|r| o.model_value(&r, None, None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("AF31") && e.contains("missing"), "{e}");
        // With one, J is that of the measured ratio in AF31's place.
        let (j, absent) = o
            .model_ratios(&model)
            .and_then(|r| o.model_value(&r, None, Some(&[9.0, 9.0, 1.5])))
            .unwrap();
        assert_eq!(absent, vec!["AF31".to_string()]);
        assert!((j - o.of_ratios(&[0.5, 1.0, 1.5])).abs() < 1e-12, "{j}");
        // A class that is present but broken is still an error, stand-in or not.
        let broken = SliVector {
            classes: vec![sli(Dscp::AF11, f64::NAN), sli(Dscp::AF21, 13.0)],
        };
        let e = o.model_ratios(&broken).unwrap_err().to_string();
        assert!(e.starts_with("SLI of class AF11"), "{e}");
        // Everything present: the plain value.
        let all = SliVector {
            classes: vec![sli(Dscp::AF11, 5.0), sli(Dscp::AF21, 13.0), sli(Dscp::AF31, 34.0)],
        };
        assert_eq!(
            o.model_ratios(&all)
                .and_then(|r| o.model_value(&r, None, Some(&[9.0; 3])))
                .unwrap(),
            (o.value(&all).unwrap(), vec![])
        );
    }

    #[test]
    fn equal_weights_give_the_papers_lse() {
        let r = [0.3, 1.2, 0.8];
        let direct = (r.iter().map(|v: &f64| (10.0 * v).exp()).sum::<f64>()).ln() / 10.0;
        assert!((lse(&r, 10.0) - direct).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn lse_bounds(r in prop::collection::vec(0.0f64..50.0, 1..8), c in 0.1f64..100.0) {
            let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let v = lse(&r, c);
            prop_assert!(m <= v + 1e-12);
            prop_assert!(v <= m + (r.len() as f64).ln() / c + 1e-12);
        }

        #[test]
        fn no_non_negative_ratios_give_j_below_the_lower_bound(
            r in prop::collection::vec(0.0f64..5.0, 3),
            w in prop::collection::vec(0.1f64..4.0, 3),
            c in 0.5f64..50.0,
            lambda in 0.0f64..2.0,
        ) {
            let mut cl = classes();
            for (k, wk) in cl.iter_mut().zip(&w) {
                k.weight = *wk;
            }
            let o = Objective::new(&cl, c, lambda).unwrap();
            let j = o.of_ratios(&r);
            prop_assert!(j >= o.lower_bound() - 1e-12, "J {} < bound {}", j, o.lower_bound());
            // Attained in the limit of zero ratios.
            prop_assert!((o.of_ratios(&[0.0; 3]) - o.lower_bound()).abs() < 1e-12);
        }

        #[test]
        fn fairness_is_zero_iff_equal_and_objective_is_monotone(r in 0.1f64..5.0, bump in 0.01f64..2.0) {
            let o = Objective::new(&classes(), 10.0, 0.5).unwrap();
            prop_assert!(fairness(&[r, r, r], &[1.0; 3]) < 1e-12);
            prop_assert!(o.of_ratios(&[r, r, r + bump]) > o.of_ratios(&[r, r, r]));
        }
    }
}
