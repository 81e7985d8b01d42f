//! The formulas of the controller's objective J (the paper's §4.1) over per-class ratios
//! r_i = SLI_i / SLO_i: a smooth maximum (log-sum-exp of sharpness c) plus λ times the ratios'
//! mean absolute deviation. The controller's `Objective` and the model's validation both
//! compute J with these.

/// `(1/c)·ln Σ exp(c·r_i)`, computed stably.
pub fn lse(r: &[f64], c: f64) -> f64 {
    weighted_lse(r, &vec![1.0; r.len()], c)
}

/// `(1/c)·ln((1/N) Σ ω_i exp(c·r_i)) + ln(N)/c`, computed stably.
pub fn weighted_lse(r: &[f64], w: &[f64], c: f64) -> f64 {
    let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = r.iter().zip(w).map(|(ri, wi)| wi * (c * (ri - m)).exp()).sum();
    m + s.ln() / c
}

/// `(1/N) Σ ω_i |r_i − r̄|` with `r̄ = (1/N) Σ ω_i r_i`.
pub fn fairness(r: &[f64], w: &[f64]) -> f64 {
    let n = r.len() as f64;
    let mean = r.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / n;
    r.iter().zip(w).map(|(a, b)| b * (a - mean).abs()).sum::<f64>() / n
}
