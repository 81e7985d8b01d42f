//! Adapting to a changing g (§5.1): the rolling best over the last W_g measurements and the
//! regime-shift detector (k consecutive g > φ·g_best). Pure state machines.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One measured (denoised) value and where it was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Iteration number of the measurement.
    pub iteration: u64,
    /// Denoised objective.
    pub g: f64,
    /// The point it was measured at.
    pub x: Vec<f64>,
}

/// The last W_g measurements and their minimum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollingBest {
    capacity: usize,
    window: VecDeque<Measured>,
}

impl RollingBest {
    /// An empty window of `capacity` (≥ 1) measurements.
    pub fn new(capacity: usize) -> RollingBest {
        RollingBest {
            capacity: capacity.max(1),
            window: VecDeque::new(),
        }
    }
    /// Adds a measurement, dropping the oldest beyond the capacity.
    pub fn push(&mut self, m: Measured) {
        self.window.push_back(m);
        while self.window.len() > self.capacity {
            self.window.pop_front();
        }
    }
    /// Removes and returns the newest measurement.
    pub fn pop_last(&mut self) -> Option<Measured> {
        self.window.pop_back()
    }
    /// Forgets everything.
    pub fn reset(&mut self) {
        self.window.clear();
    }
    /// The best (lowest g) measurement in the window; the earliest on ties.
    pub fn best(&self) -> Option<&Measured> {
        self.window.iter().fold(None, |b: Option<&Measured>, m| match b {
            Some(b) if b.g <= m.g => Some(b),
            _ => Some(m),
        })
    }
    /// Number of measurements held.
    pub fn len(&self) -> usize {
        self.window.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }
}

/// Counts consecutive exceedances g > φ·g_best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegimeDetector {
    factor: f64,
    patience: u32,
    streak: u32,
}

impl RegimeDetector {
    /// A detector with factor φ and patience k.
    pub fn new(factor: f64, patience: u32) -> RegimeDetector {
        RegimeDetector {
            factor,
            patience: patience.max(1),
            streak: 0,
        }
    }
    /// Feeds one measurement against the rolling best *before* it is added; true when this is
    /// the k-th consecutive exceedance (the streak then restarts).
    pub fn update(&mut self, g: f64, g_best: Option<f64>) -> bool {
        match g_best {
            Some(b) if g > self.factor * b => {
                self.streak += 1;
                if self.streak >= self.patience {
                    self.streak = 0;
                    return true;
                }
                false
            }
            _ => {
                self.streak = 0;
                false
            }
        }
    }
    /// Current number of consecutive exceedances.
    pub fn streak(&self) -> u32 {
        self.streak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(i: u64, g: f64) -> Measured {
        Measured {
            iteration: i,
            g,
            x: vec![i as f64],
        }
    }

    #[test]
    fn rolling_best_forgets_old_minima() {
        let mut w = RollingBest::new(3);
        w.push(m(0, 1.0));
        w.push(m(1, 2.0));
        w.push(m(2, 3.0));
        assert_eq!(w.best().map(|b| b.g), Some(1.0));
        w.push(m(3, 2.5));
        assert_eq!(w.best().map(|b| b.g), Some(2.0));
    }

    #[test]
    fn regime_shift_after_k_exceedances_and_not_before() {
        let mut d = RegimeDetector::new(1.5, 3);
        assert!(!d.update(2.0, Some(1.0)));
        assert!(!d.update(2.0, Some(1.0)));
        assert!(d.update(2.0, Some(1.0)));
        // An interruption restarts the count.
        let mut d = RegimeDetector::new(1.5, 3);
        assert!(!d.update(2.0, Some(1.0)));
        assert!(!d.update(2.0, Some(1.0)));
        assert!(!d.update(1.2, Some(1.0)));
        assert!(!d.update(2.0, Some(1.0)));
        assert!(!d.update(2.0, Some(1.0)));
        assert!(d.update(2.0, Some(1.0)));
        // Exactly φ·g_best is not an exceedance.
        let mut d = RegimeDetector::new(1.5, 1);
        assert!(!d.update(1.5, Some(1.0)));
    }
}
