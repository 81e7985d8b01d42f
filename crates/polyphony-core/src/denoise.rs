//! The adaptive causal Gaussian denoiser of §5.2, applied to the measured objective g.
//!
//! Volatility ν is the median absolute successive difference over the last `window` raw
//! values, divided by √2 (so it estimates the per-sample noise σ for white noise) and by the
//! median |g| (so it is relative). If ν < `off_below`, or fewer than three values are known,
//! the filter is off and returns the raw value. Otherwise the half-Gaussian kernel
//! `K_j = exp(−j²/(2w²))`, j = 0, 1, … ≤ 3w over the past values, has width
//! `w = min(ν / volatility_per_width, max_width)` samples. Causal: only past and present
//! values enter.
//!
//! Our refinement: the controller moves between intervals, and averaging g over *different*
//! configurations would blur the very differences it must learn. Each past value is therefore
//! also weighted by `exp(−d²/(2ρ²))`, d the §4.4 distance between its configuration and the
//! current one, ρ = `config_radius`: the filter averages repeated measurements of (nearly)
//! the same configuration — typically once the controller has converged. Pure state machine;
//! no I/O.

use crate::space::Space;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Output of one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Denoised {
    /// The smoothed value (the raw value when the filter is off).
    pub value: f64,
    /// Kernel width in samples (0 when off).
    pub width: f64,
    /// Estimated relative volatility.
    pub volatility: f64,
}

/// Denoiser settings (copied from [`crate::ControllerParams`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DenoiserSettings {
    /// Whether to smooth at all.
    pub enabled: bool,
    /// Values used to estimate volatility.
    pub window: usize,
    /// Volatility below which the filter is off.
    pub off_below: f64,
    /// Volatility per sample of width.
    pub volatility_per_width: f64,
    /// Widest kernel.
    pub max_width: f64,
    /// Configuration-distance scale ρ of the kernel.
    pub config_radius: f64,
}

/// The denoiser's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Denoiser {
    settings: DenoiserSettings,
    raw: VecDeque<f64>,
    points: VecDeque<Vec<f64>>,
}

impl Denoiser {
    /// An empty denoiser.
    pub fn new(settings: DenoiserSettings) -> Denoiser {
        Denoiser {
            settings,
            raw: VecDeque::new(),
            points: VecDeque::new(),
        }
    }

    /// Forgets the history (after a regime shift, so old levels do not leak into the new one).
    pub fn reset(&mut self) {
        self.raw.clear();
        self.points.clear();
    }

    /// Feeds one raw value measured at point `x`, returns the smoothed one.
    pub fn push(&mut self, g: f64, x: &[f64], space: &Space) -> Denoised {
        let s = self.settings;
        let keep = s.window.max((3.0 * s.max_width).ceil() as usize + 1);
        self.raw.push_back(g);
        self.points.push_back(x.to_vec());
        while self.raw.len() > keep {
            self.raw.pop_front();
            self.points.pop_front();
        }
        let off = Denoised {
            value: g,
            width: 0.0,
            volatility: 0.0,
        };
        if !s.enabled || self.raw.len() < 3 {
            return off;
        }
        let recent: Vec<f64> = self.raw.iter().rev().take(s.window).copied().collect();
        let mut diffs: Vec<f64> = recent.windows(2).map(|w| (w[0] - w[1]).abs()).collect();
        let mut levels: Vec<f64> = recent.iter().map(|v| v.abs()).collect();
        let level = median(&mut levels).unwrap_or(0.0).max(1e-12);
        let volatility = median(&mut diffs).unwrap_or(0.0) / std::f64::consts::SQRT_2 / level;
        if volatility < s.off_below {
            return Denoised { volatility, ..off };
        }
        let width = (volatility / s.volatility_per_width).min(s.max_width);
        if width <= 0.0 {
            return Denoised { volatility, ..off };
        }
        let reach = (3.0 * width).ceil() as usize;
        let (mut num, mut den) = (0.0, 0.0);
        let rho = s.config_radius.max(1e-12);
        for (j, (v, p)) in self.raw.iter().zip(&self.points).rev().take(reach + 1).enumerate() {
            let d = space.distance(p, x);
            let k = (-(j as f64).powi(2) / (2.0 * width * width) - d * d / (2.0 * rho * rho)).exp();
            num += k * v;
            den += k;
        }
        Denoised {
            value: num / den,
            width,
            volatility,
        }
    }
}

pub use polyphony_spec::median;

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> DenoiserSettings {
        DenoiserSettings {
            enabled: true,
            window: 6,
            off_below: 0.02,
            volatility_per_width: 0.05,
            max_width: 2.0,
            config_radius: 0.1,
        }
    }

    fn space() -> Space {
        use polyphony_spec::{Dscp, KnobSpace};
        Space::new(&KnobSpace::per_class_default(&[Dscp::AF11, Dscp::AF21]), None).unwrap()
    }

    const X: [f64; 6] = [0.5; 6];

    #[test]
    fn switches_off_on_a_constant_signal() {
        let mut d = Denoiser::new(settings());
        for _ in 0..20 {
            let o = d.push(1.7, &X, &space());
            assert_eq!(o.value, 1.7);
            assert_eq!(o.width, 0.0);
        }
    }

    #[test]
    fn smooths_a_noisy_signal_and_reduces_its_variance() {
        let mut d = Denoiser::new(settings());
        let sp = space();
        // Deterministic ±10 % alternating jitter around 2.
        let mut raw_dev = 0.0;
        let mut out_dev = 0.0;
        for i in 0..40 {
            let g = 2.0 * (1.0 + if i % 2 == 0 { 0.1 } else { -0.1 } * (1.0 + (i % 3) as f64 * 0.3));
            let o = d.push(g, &X, &sp);
            if i >= 10 {
                assert!(o.width > 0.0);
                raw_dev += (g - 2.0).abs();
                out_dev += (o.value - 2.0).abs();
            }
        }
        assert!(out_dev < 0.5 * raw_dev, "smoothed {out_dev} raw {raw_dev}");
    }

    #[test]
    fn disabled_passes_through() {
        let mut d = Denoiser::new(DenoiserSettings {
            enabled: false,
            ..settings()
        });
        for g in [1.0, 3.0, 1.0, 3.0, 1.0] {
            assert_eq!(d.push(g, &X, &space()).value, g);
        }
    }

    #[test]
    fn does_not_average_across_distant_configurations() {
        let sp = space();
        let mut d = Denoiser::new(settings());
        let far = [0.0, 0.0, 0.0, 0.0, 0.3, 0.7];
        for i in 0..10 {
            d.push(if i % 2 == 0 { 1.1 } else { 0.9 }, &far, &sp);
        }
        let o = d.push(3.0, &X, &sp);
        assert!(o.width > 0.0);
        assert!((o.value - 3.0).abs() < 1e-6, "{o:?}");
    }
}
