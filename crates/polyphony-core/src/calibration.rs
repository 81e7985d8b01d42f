//! Per-class calibration of the model (our addition to §4.2): before the objective is taken,
//! each class's predicted ratio is multiplied by how far the model has been off for that class.
//! Pure arithmetic over the admitted samples; no state of its own.
//!
//! The residual GP corrects one number, J. When the model errs differently per class — on the
//! namespace testbed flowsim underestimates the small-flow class AF11 (host overhead it does
//! not model) and overestimates the Hadoop class AF31 — a scalar residual cannot say "trade
//! AF31 for AF11": the model keeps ranking configurations by the wrong class's tail. A per-class
//! factor does: s_i = exp(median_j ln(r_ij / r̂_ij)) over the admitted samples j (measured ratio
//! r_ij, the model's r̂_ij at the same configuration and window), and f = J(s ⊙ r̂). The median
//! of logs keeps one bursty interval from moving it; the factor is bounded to
//! [1/[`MAX_FACTOR`], [`MAX_FACTOR`]]. Classes the model did not see in a sample (NaN) are left
//! out of that sample's term; a class with no usable pair keeps factor 1.

/// The largest correction factor either way: a model more than this far off for a class is
/// not worth calibrating (the residual GP still sees what is left).
pub const MAX_FACTOR: f64 = 20.0;

/// Per-class factors from `(measured ratios, model ratios)` pairs of `n` classes each.
pub fn class_scales<'a>(pairs: impl Iterator<Item = (&'a [f64], &'a [f64])>, n: usize) -> Vec<f64> {
    let mut logs: Vec<Vec<f64>> = vec![Vec::new(); n];
    for (measured, model) in pairs {
        for (i, l) in logs.iter_mut().enumerate() {
            let (Some(&y), Some(&m)) = (measured.get(i), model.get(i)) else {
                continue;
            };
            if y.is_finite() && m.is_finite() && y > 0.0 && m > 0.0 {
                l.push((y / m).ln());
            }
        }
    }
    let bound = MAX_FACTOR.ln();
    logs.into_iter()
        .map(|mut l| {
            if l.is_empty() {
                1.0
            } else {
                crate::denoise::median(&mut l).unwrap_or(0.0).clamp(-bound, bound).exp()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_gets_the_median_of_its_own_misses() {
        // Class 0: the model is 2x low every time, except one bursty interval (10x).
        // Class 1: the model is right. Class 2: 2x high, and absent from one sample.
        let measured = [vec![2.0, 1.0, 0.5], vec![4.0, 2.0, 1.0], vec![20.0, 1.0, 0.5]];
        let model = [vec![1.0, 1.0, 1.0], vec![2.0, 2.0, f64::NAN], vec![2.0, 1.0, 1.0]];
        let s = class_scales(
            measured.iter().map(Vec::as_slice).zip(model.iter().map(Vec::as_slice)),
            3,
        );
        assert!((s[0] - 2.0).abs() < 1e-12, "{s:?}");
        assert!((s[1] - 1.0).abs() < 1e-12, "{s:?}");
        assert!((s[2] - 0.5).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn no_evidence_means_no_correction_and_the_factor_is_bounded() {
        assert_eq!(class_scales(std::iter::empty(), 2), vec![1.0, 1.0]);
        let measured = [1000.0, 1.0];
        let model = [1.0, f64::NAN];
        let s = class_scales(std::iter::once((&measured[..], &model[..])), 2);
        assert!((s[0] - MAX_FACTOR).abs() < 1e-9, "{s:?}");
        assert_eq!(s[1], 1.0);
    }
}
