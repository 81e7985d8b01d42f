//! Per-class calibration of the model (our addition to §4.2): before the objective is taken,
//! each class's predicted ratio is multiplied by how far the model has been off for that class
//! *near the configuration being scored*. Pure arithmetic over the admitted samples.
//!
//! The residual GP corrects one number, J. When the model errs differently per class — on the
//! namespace testbed flowsim underestimates the small-flow class AF11 (host overhead it does
//! not model) and overestimates the Hadoop class AF31 — a scalar residual cannot say "trade
//! AF31 for AF11": the model keeps ranking configurations by the wrong class's tail. A per-class
//! factor does: s_i(x) = exp(m_i(x)), m_i(x) the weighted median of the log misses
//! ln(r_ij / r̂_ij) over the admitted samples j (measured ratio r_ij, the model's r̂_ij at the
//! same configuration and window), sample j weighing exp(−d(x, x_j)² / 2ℓ²) (ℓ =
//! [`crate::ControllerParams::calibration_length`]), plus a pseudo-sample of no miss (log 0) of
//! weight [`PRIOR_WEIGHT`].
//!
//! Local, because the model's error depends on where it is asked: at the scale study's poor
//! start (deep queues, tiny initial windows) flowsim overpredicts every class, by up to 2.4×, at
//! the configurations the controller then moves to it underpredicts; a factor fitted on the
//! warm-up and applied everywhere moves those predictions the wrong way. Near measured
//! configurations the samples outweigh the pseudo-sample and the factor is theirs; far from
//! every measurement the model is taken as it is. The median keeps one bursty interval from
//! moving a factor; each log miss is bounded to ±ln [`MAX_FACTOR`]. Classes the model did not
//! see in a sample (NaN) are left out of that sample's term; a class with no usable pair keeps
//! factor 1.

use crate::space::Space;

/// The largest correction factor either way: a model more than this far off for a class is
/// not worth calibrating (the residual GP still sees what is left).
pub const MAX_FACTOR: f64 = 20.0;

/// Weight of the pseudo-sample "the model is right for this class": as much as one sample
/// measured at the configuration itself, so a single measurement moves a factor halfway (in
/// logs) and only several nearby ones set it.
pub const PRIOR_WEIGHT: f64 = 1.0;

/// The admitted samples' per-class log misses, read at any configuration with [`Calibration::at`].
#[derive(Debug, Clone)]
pub struct Calibration {
    points: Vec<Vec<f64>>,
    /// Per sample, per class: the bounded log miss, NaN where unusable.
    logs: Vec<Vec<f64>>,
    classes: usize,
    length: f64,
}

impl Calibration {
    /// From `(point, measured ratios, model ratios)` triples of `classes` ratios each, read at
    /// length scale `length` (space distance).
    pub fn new<'a>(
        samples: impl Iterator<Item = (&'a [f64], &'a [f64], &'a [f64])>,
        classes: usize,
        length: f64,
    ) -> Calibration {
        let bound = MAX_FACTOR.ln();
        let (mut points, mut logs) = (Vec::new(), Vec::new());
        for (x, measured, model) in samples {
            points.push(x.to_vec());
            logs.push(
                (0..classes)
                    .map(|i| match (measured.get(i), model.get(i)) {
                        (Some(&y), Some(&m)) if y.is_finite() && m.is_finite() && y > 0.0 && m > 0.0 => {
                            (y / m).ln().clamp(-bound, bound)
                        }
                        _ => f64::NAN,
                    })
                    .collect(),
            );
        }
        Calibration {
            points,
            logs,
            classes,
            length,
        }
    }

    /// The per-class factors at `x` (normalised coordinates of `space`).
    pub fn at(&self, space: &Space, x: &[f64]) -> Vec<f64> {
        let w: Vec<f64> = self
            .points
            .iter()
            .map(|p| (-(space.distance(p, x) / self.length).powi(2) / 2.0).exp())
            .collect();
        (0..self.classes)
            .map(|i| {
                let mut v: Vec<(f64, f64)> = self
                    .logs
                    .iter()
                    .zip(&w)
                    .filter(|(l, _)| l[i].is_finite())
                    .map(|(l, &wj)| (l[i], wj))
                    .collect();
                v.push((0.0, PRIOR_WEIGHT));
                weighted_median(&mut v).exp()
            })
            .collect()
    }
}

/// The weighted median of `(value, weight)` pairs: the value at which the cumulative weight
/// reaches half the total, or the midpoint of the two values on either side when it reaches
/// exactly half (as the ordinary median of an even count). `v` must not be empty.
fn weighted_median(v: &mut [(f64, f64)]) -> f64 {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = v.iter().map(|p| p.1).sum::<f64>();
    let half = total / 2.0;
    let mut acc = 0.0;
    for (k, &(x, w)) in v.iter().enumerate() {
        acc += w;
        if (acc - half).abs() <= 1e-12 * total {
            return v.get(k + 1).map_or(x, |next| (x + next.0) / 2.0);
        }
        if acc > half {
            return x;
        }
    }
    v[v.len() - 1].0
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Dscp, KnobSpace};

    fn space() -> Space {
        let d = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
        Space::new(&KnobSpace::per_class_default(&d), None).unwrap()
    }

    fn point(sp: &Space, v: f64) -> Vec<f64> {
        sp.point_of(&vec![v; sp.dim()])
    }

    #[test]
    fn near_its_samples_each_class_gets_the_median_of_its_own_misses() {
        // Three samples at one configuration. Class 0: the model is 2x low every time, except
        // one bursty interval (10x). Class 1: right. Class 2: 2x high, absent from one sample.
        let sp = space();
        let x = point(&sp, 0.3);
        let measured = [vec![2.0, 1.0, 0.5], vec![4.0, 2.0, 1.0], vec![20.0, 1.0, 0.5]];
        let model = [vec![1.0, 1.0, 1.0], vec![2.0, 2.0, f64::NAN], vec![2.0, 1.0, 1.0]];
        let c = Calibration::new(
            measured
                .iter()
                .zip(&model)
                .map(|(y, m)| (x.as_slice(), y.as_slice(), m.as_slice())),
            3,
            0.2,
        );
        let s = c.at(&sp, &x);
        assert!((s[0] - 2.0).abs() < 1e-12, "{s:?}");
        assert!((s[1] - 1.0).abs() < 1e-12, "{s:?}");
        assert!((s[2] - 0.5).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn far_from_every_sample_the_model_is_taken_as_it_is() {
        let sp = space();
        let (near, far) = (point(&sp, 0.0), point(&sp, 1.0));
        let measured = [0.5, 0.5];
        let model = [1.0, 1.0];
        let c = Calibration::new(
            std::iter::repeat_n((near.as_slice(), &measured[..], &model[..]), 4),
            2,
            0.2,
        );
        assert!(sp.distance(&near, &far) > 5.0 * 0.2);
        assert_eq!(c.at(&sp, &far), vec![1.0, 1.0]);
        let s = c.at(&sp, &near);
        assert!((s[0] - 0.5).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn one_sample_alone_moves_the_factor_halfway() {
        // A single measurement at x weighs as much as the pseudo-sample: the factor is their
        // geometric middle.
        let sp = space();
        let x = point(&sp, 0.5);
        let c = Calibration::new(std::iter::once((x.as_slice(), &[4.0][..], &[1.0][..])), 1, 0.2);
        let s = c.at(&sp, &x);
        assert!((s[0] - 2.0).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn the_weighted_median_weighs() {
        assert_eq!(weighted_median(&mut [(3.0, 1.0), (1.0, 1.0), (2.0, 5.0)]), 2.0);
        assert_eq!(weighted_median(&mut [(3.0, 3.0), (1.0, 1.0), (2.0, 1.0)]), 3.0);
        assert_eq!(weighted_median(&mut [(1.0, 1.0), (2.0, 1.0)]), 1.5);
        assert_eq!(weighted_median(&mut [(7.0, 0.5)]), 7.0);
    }

    #[test]
    fn no_evidence_means_no_correction_and_the_factor_is_bounded() {
        let sp = space();
        let x = point(&sp, 0.5);
        let none = Calibration::new(std::iter::empty(), 2, 0.2);
        assert_eq!(none.at(&sp, &x), vec![1.0, 1.0]);
        let measured = [1000.0, 1.0];
        let model = [1.0, f64::NAN];
        let c = Calibration::new(
            std::iter::repeat_n((x.as_slice(), &measured[..], &model[..]), 3),
            2,
            0.2,
        );
        let s = c.at(&sp, &x);
        assert!((s[0] - MAX_FACTOR).abs() < 1e-9, "{s:?}");
        assert_eq!(s[1], 1.0);
    }
}
