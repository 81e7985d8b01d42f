//! The rolling sample window W_s and the admission rule of §5.2: a sample is admitted if it is
//! *novel* (farther than the novelty radius from every stored configuration) or *surprising*
//! (the surrogate missed its residual by more than a few σ). A configuration within the
//! duplicate radius of a stored one is never admitted as a new sample; if it is surprising it
//! *refreshes* the stored one (newest measurement wins), so a changed system is not explained
//! with stale values. Pure data structure; no I/O.

use crate::space::Space;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One admitted measurement with its model prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Iteration of the measurement.
    pub iteration: u64,
    /// Point (normalised coordinates) of the measured configuration.
    pub x: Vec<f64>,
    /// Measured (denoised) objective g.
    pub g: f64,
    /// The model's objective f at the same configuration (0 without a model), uncalibrated.
    pub f: f64,
    /// The measured per-class ratios (objective order); empty in states saved before they
    /// were kept.
    #[serde(default)]
    pub ratios: Vec<f64>,
    /// The model's per-class ratios at the same configuration and window (NaN: the model saw
    /// no flow of the class); empty without a model or in older states.
    #[serde(default)]
    pub model_ratios: Vec<f64>,
}

/// What the admission rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// Far from every stored configuration: admitted.
    Novel,
    /// Near a stored one but mispredicted: admitted.
    Surprising,
    /// The same configuration as a stored one and mispredicted: the stored sample was replaced.
    Refreshed,
    /// The same configuration as a stored one: not admitted.
    Duplicate,
    /// Neither novel nor surprising: not admitted.
    Redundant,
}

/// The rolling window of admitted samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleWindow {
    capacity: usize,
    samples: VecDeque<Sample>,
}

impl SampleWindow {
    /// An empty window holding at most `capacity` samples.
    pub fn new(capacity: usize) -> SampleWindow {
        SampleWindow {
            capacity: capacity.max(1),
            samples: VecDeque::new(),
        }
    }

    /// The stored samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter()
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Keeps the samples `f` returns true for, after it has changed them as it likes.
    pub(crate) fn retain_mut(&mut self, f: impl FnMut(&mut Sample) -> bool) {
        self.samples.retain_mut(f);
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.samples.clear();
    }

    /// Distance from `x` to the nearest stored sample, and its index.
    pub fn nearest(&self, space: &Space, x: &[f64]) -> Option<(f64, usize)> {
        self.samples
            .iter()
            .enumerate()
            .map(|(i, s)| (space.distance(&s.x, x), i))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Applies the admission rule to `sample`; `surprising` is the caller's verdict of the
    /// surrogate's miss.
    pub fn consider(
        &mut self,
        space: &Space,
        sample: Sample,
        surprising: bool,
        novelty_radius: f64,
        duplicate_radius: f64,
    ) -> Admission {
        let verdict = match self.nearest(space, &sample.x) {
            None => Admission::Novel,
            Some((d, i)) if d < duplicate_radius => {
                if surprising {
                    self.samples[i] = sample;
                    return Admission::Refreshed;
                }
                return Admission::Duplicate;
            }
            Some((d, _)) if d > novelty_radius => Admission::Novel,
            Some(_) if surprising => Admission::Surprising,
            Some(_) => return Admission::Redundant,
        };
        self.samples.push_back(sample);
        while self.samples.len() > self.capacity {
            self.samples.pop_front();
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Dscp, KnobSpace};

    fn space() -> Space {
        Space::new(&KnobSpace::per_class_default(&[Dscp::AF11, Dscp::AF21]), None).unwrap()
    }

    fn s(x: Vec<f64>, g: f64) -> Sample {
        Sample {
            iteration: 0,
            x,
            g,
            f: 0.0,
            ratios: Vec::new(),
            model_ratios: Vec::new(),
        }
    }

    #[test]
    fn duplicates_are_never_admitted() {
        let sp = space();
        let mut w = SampleWindow::new(10);
        let x = vec![0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
        assert_eq!(w.consider(&sp, s(x.clone(), 1.0), false, 0.05, 1e-6), Admission::Novel);
        for _ in 0..5 {
            assert_eq!(
                w.consider(&sp, s(x.clone(), 1.0), false, 0.05, 1e-6),
                Admission::Duplicate
            );
        }
        assert_eq!(w.len(), 1);
        // A surprising duplicate replaces the stored value instead of adding a row.
        assert_eq!(
            w.consider(&sp, s(x.clone(), 2.0), true, 0.05, 1e-6),
            Admission::Refreshed
        );
        assert_eq!(w.len(), 1);
        assert_eq!(w.samples().next().map(|s| s.g), Some(2.0));
    }

    #[test]
    fn near_points_need_a_surprise_far_points_do_not() {
        let sp = space();
        let mut w = SampleWindow::new(2);
        let x = vec![0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
        w.consider(&sp, s(x.clone(), 1.0), false, 0.05, 1e-6);
        let mut near = x.clone();
        near[0] += 0.01;
        assert_eq!(
            w.consider(&sp, s(near.clone(), 1.0), false, 0.05, 1e-6),
            Admission::Redundant
        );
        assert_eq!(w.consider(&sp, s(near, 1.0), true, 0.05, 1e-6), Admission::Surprising);
        let mut far = x;
        far[0] = 0.9;
        assert_eq!(w.consider(&sp, s(far, 1.0), false, 0.05, 1e-6), Admission::Novel);
        assert_eq!(w.len(), 2, "the window rolls");
    }
}
