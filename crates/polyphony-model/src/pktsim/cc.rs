//! CUBIC's window arithmetic (RFC 9438), apart from the event loop so it can be checked
//! against the RFC's formulas on its own. Windows are in segments, time in nanoseconds.
//!
//! * **Congestion event** (fast retransmit or RTO, §4.6–§4.8): with fast convergence (§4.7),
//!   `W_max = cwnd·(1+β)/2` when the window did not regain the previous `W_max`, else
//!   `W_max = cwnd`; `ssthresh = max(β·cwnd, 2)` with β = 0.7 (Linux, like this, uses cwnd
//!   where the RFC writes flight size). The congestion-avoidance epoch ends.
//! * **Congestion avoidance** (§4.2–§4.4): an epoch starts at the first ACK after the reduction
//!   with `K = ∛((W_max − cwnd)/C)` (C = 0.4, t in seconds), or `K = 0` from the current window
//!   when it is above `W_max`; `W_cubic(t) = C·(t − K)³ + W_max`. Per ACK the Reno-friendly
//!   estimate grows by `α·acked/cwnd` (α = 3(1−β)/(1+β), 1 once it reaches `W_max`, §4.3); when
//!   `W_cubic(t) < W_est` the window is `W_est`, else it moves towards
//!   `target = clamp(W_cubic(t + RTT), cwnd, 1.5·cwnd)` by `(target − cwnd)/cwnd` per segment.
//! * Not modelled: HyStart (slow start runs to the first loss, as RFC 5681) and the idle-restart
//!   of the epoch (Linux's `CA_EVENT_TX_START`); the simulated flows do not idle mid-transfer.

/// β: the multiplicative decrease factor.
pub(crate) const BETA: f64 = 0.7;
/// C: the cubic growth constant (segments / s³).
pub(crate) const C: f64 = 0.4;

/// CUBIC's per-connection state besides cwnd and ssthresh.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cubic {
    /// Window just before the last reduction (after fast convergence); 0 before any loss.
    pub w_max: f64,
    /// Start of the current congestion-avoidance epoch; `None` until the first ACK after a
    /// reduction (or ever).
    epoch: Option<u64>,
    /// Seconds from the epoch's start until the curve reaches its plateau.
    k: f64,
    /// The plateau of the current curve (`W_max`, or the window at the epoch's start if above).
    origin: f64,
    /// The Reno-friendly estimate `W_est`.
    w_est: f64,
}

impl Cubic {
    /// A congestion event at window `cwnd`: updates `W_max` and returns the new ssthresh.
    pub fn on_loss(&mut self, cwnd: f64) -> f64 {
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.epoch = None;
        (cwnd * BETA).max(2.0)
    }

    /// The window after `acked` new segments are acknowledged at `now` in congestion avoidance,
    /// with smoothed RTT `rtt` (ns), from window `cwnd`.
    pub fn on_ack(&mut self, cwnd: f64, acked: f64, now: u64, rtt: u64) -> f64 {
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                self.epoch = Some(now);
                if cwnd < self.w_max {
                    self.k = ((self.w_max - cwnd) / C).cbrt();
                    self.origin = self.w_max;
                } else {
                    self.k = 0.0;
                    self.origin = cwnd;
                }
                self.w_est = cwnd;
                now
            }
        };
        let t = now.saturating_sub(epoch) as f64 * 1e-9;
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        };
        self.w_est += alpha * acked / cwnd;
        if self.w_cubic(t) < self.w_est {
            return self.w_est.max(cwnd);
        }
        let target = self.w_cubic(t + rtt as f64 * 1e-9).clamp(cwnd, 1.5 * cwnd);
        cwnd + (target - cwnd) / cwnd * acked
    }

    /// `W_cubic(t)` of the current epoch, `t` in seconds since its start.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives congestion avoidance with one ACK per segment, a window's worth per RTT.
    fn run(c: &mut Cubic, mut cwnd: f64, from: u64, until: u64, rtt: u64) -> Vec<(u64, f64)> {
        let mut t = from;
        let mut out = Vec::new();
        while t < until {
            let n = cwnd.floor().max(1.0) as u64;
            for i in 0..n {
                cwnd = c.on_ack(cwnd, 1.0, t + i * rtt / n, rtt);
            }
            t += rtt;
            out.push((t, cwnd));
        }
        out
    }

    #[test]
    fn after_a_loss_the_window_is_beta_w_max_then_follows_the_cubic_curve() {
        let mut c = Cubic::default();
        let ss = c.on_loss(1000.0);
        assert_eq!((c.w_max, ss), (1000.0, 700.0));
        // A long RTT (100 ms) keeps the Reno-friendly estimate below the curve.
        let rtt = 100_000_000;
        let trace = run(&mut c, ss, 0, 20_000_000_000, rtt);
        let k = (1000.0f64 * (1.0 - BETA) / C).cbrt();
        assert!((c.k - k).abs() < 1e-9, "K = {} vs {k}", c.k);
        for &(t, w) in &trace {
            let s = t as f64 * 1e-9;
            let curve = C * (s - k).powi(3) + 1000.0;
            // The window aims one RTT ahead and moves a fraction of the way per ACK: it stays
            // within a couple of segments of the curve (a loose 2 % bound at the plateau).
            assert!(
                (w - curve).abs() <= 0.02 * curve + 2.0,
                "t = {s:.1} s: cwnd {w:.1} vs W_cubic {curve:.1}"
            );
        }
        // Concave below W_max, plateau at K, convex beyond.
        let at = |s: f64| trace.iter().find(|&&(t, _)| t as f64 * 1e-9 >= s).unwrap().1;
        assert!(at(k / 2.0) > 700.0 + 0.5 * 300.0, "concave: {}", at(k / 2.0));
        assert!((at(k) - 1000.0).abs() < 10.0, "plateau: {}", at(k));
        assert!(at(k + 4.0) > 1000.0 + 0.4 * 64.0 * 0.9, "convex: {}", at(k + 4.0));
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_did_not_recover() {
        let mut c = Cubic::default();
        c.on_loss(1000.0);
        let ss = c.on_loss(800.0);
        assert!((c.w_max - 800.0 * 1.7 / 2.0).abs() < 1e-9);
        assert!((ss - 560.0).abs() < 1e-9);
        assert_eq!(Cubic::default().on_loss(2.0), 2.0, "ssthresh floor of two segments");
    }

    #[test]
    fn at_a_short_rtt_the_window_grows_like_reno_with_alpha_cubic() {
        // 100 µs RTT: the curve barely moves in a few hundred RTTs; W_est governs, growing by
        // α = 3(1−β)/(1+β) ≈ 0.53 segments per RTT (RFC 9438 §4.3).
        let mut c = Cubic::default();
        let ss = c.on_loss(100.0);
        let trace = run(&mut c, ss, 0, 20_000_000, 100_000);
        let alpha = 3.0 * 0.3 / 1.7;
        let (_, w) = trace[49];
        assert!((w - (70.0 + 50.0 * alpha)).abs() < 2.0, "cwnd {w:.1} after 50 RTTs");
        assert!(w > c.w_cubic(0.005), "Reno-friendly region");
        // Beyond W_max the estimate grows by one segment per RTT.
        let (_, w1) = trace[99];
        let (_, w2) = trace[149];
        assert!((w2 - w1 - 50.0).abs() < 3.0, "{w1:.1} → {w2:.1} in 50 RTTs");
    }
}
