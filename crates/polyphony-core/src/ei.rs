//! Expected Improvement (§4.3) — plain, and for a surrogate censored at the objective's lower
//! bound — the trust-region penalty (§4.4), and the normal distribution they need. Pure
//! functions.

/// Complementary error function; fractional error below 1.2e-7 everywhere (the Chebyshev
/// fit of Press et al., *Numerical Recipes*, §6.2).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Standard normal CDF Φ.
pub fn norm_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// Standard normal density φ.
pub fn norm_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// EI of minimisation: `E[max(g_best − Y, 0)]` for `Y ~ N(mu, sigma²)`:
/// `(g_best − μ)Φ(z) + σφ(z)`, `z = (g_best − μ)/σ`; `max(g_best − μ, 0)` when σ = 0.
pub fn expected_improvement(mu: f64, sigma: f64, g_best: f64) -> f64 {
    let d = g_best - mu;
    if sigma.is_nan() || sigma <= 1e-12 {
        return d.max(0.0);
    }
    let z = d / sigma;
    (d * norm_cdf(z) + sigma * norm_pdf(z)).max(0.0)
}

/// EI when the objective cannot fall below `floor`: `E[max(g_best − max(Y, floor), 0)]` for
/// `Y ~ N(mu, sigma²)` — the surrogate censored at the floor (J ≥ ln(N)/c). Since
/// `E[(g − Z)⁺] = ∫_{−∞}^{g} P(Z ≤ t) dt` and `P(max(Y, L) ≤ t)` is 0 below L and `Φ((t − μ)/σ)`
/// from L on, it equals `EI(μ, σ; g_best) − EI(μ, σ; floor)` for `floor ≤ g_best` (0
/// otherwise). Never above `g_best − floor`, the most J can improve; still decreasing in μ, so
/// candidates predicted below the floor keep their order (a confident low prediction beats an
/// uncertain one) instead of all tying, as clamping μ alone would make them; equal to the plain
/// EI when μ is many σ above the floor; `g_best − max(μ, floor)` (if positive) when σ = 0.
pub fn expected_improvement_above(mu: f64, sigma: f64, g_best: f64, floor: f64) -> f64 {
    if floor == f64::NEG_INFINITY {
        // No floor (ln of a zero bound, one class): the plain EI.
        return expected_improvement(mu, sigma, g_best);
    }
    if g_best <= floor {
        return 0.0;
    }
    (expected_improvement(mu, sigma, g_best) - expected_improvement(mu, sigma, floor)).clamp(0.0, g_best - floor)
}

/// The mean of the surrogate censored at `floor`: `E[max(Y, floor)] = μ + EI(μ, σ; floor)`
/// `= floor + E[(Y − floor)⁺]` for `Y ~ N(mu, sigma²)`. At least `floor` and at least μ;
/// `max(μ, floor)` when σ = 0.
pub fn censored_mean(mu: f64, sigma: f64, floor: f64) -> f64 {
    if floor == f64::NEG_INFINITY {
        return mu;
    }
    if sigma.is_nan() || sigma <= 1e-12 {
        return mu.max(floor);
    }
    // floor + E[(Y − floor)⁺], computed without cancelling μ against EI.
    floor + expected_improvement(-mu, sigma, -floor)
}

/// `β·max(0, d − ε)²`.
pub fn trust_penalty(d: f64, epsilon: f64, beta: f64) -> f64 {
    let e = (d - epsilon).max(0.0);
    beta * e * e
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Plain EI by quadrature: the censored integral with no floor.
    fn numeric_ei(mu: f64, sigma: f64, g: f64) -> f64 {
        numeric_censored_ei(mu, sigma, g, f64::NEG_INFINITY)
    }

    #[test]
    fn ei_closed_form_special_cases() {
        // At μ = g_best, EI = σ/√(2π).
        let e = expected_improvement(1.0, 0.3, 1.0);
        assert!((e - 0.3 / (2.0 * std::f64::consts::PI).sqrt()).abs() < 1e-9);
        // No uncertainty: plain improvement.
        assert!((expected_improvement(0.7, 0.0, 1.0) - 0.3).abs() < 1e-12);
        assert_eq!(expected_improvement(1.3, 0.0, 1.0), 0.0);
        assert!((norm_cdf(1.959_963_985) - 0.975).abs() < 1e-7);
    }

    /// ∫ max(g − max(y, L), 0) φ((y−μ)/σ)/σ dy by the trapezoid rule over μ ± 12σ.
    fn numeric_censored_ei(mu: f64, sigma: f64, g: f64, floor: f64) -> f64 {
        let n = 40_000;
        let (lo, hi) = (mu - 12.0 * sigma, mu + 12.0 * sigma);
        let h = (hi - lo) / n as f64;
        let f = |y: f64| (g - y.max(floor)).max(0.0) * norm_pdf((y - mu) / sigma) / sigma;
        let mut s = 0.5 * (f(lo) + f(hi));
        for i in 1..n {
            s += f(lo + i as f64 * h);
        }
        s * h
    }

    #[test]
    fn censored_ei_never_promises_more_than_j_can_improve() {
        let (g, floor) = (0.9, 0.11);
        // Far below the floor, confidently: exactly the improvement down to the floor.
        assert!((expected_improvement_above(-50.0, 0.2, g, floor) - (g - floor)).abs() < 1e-12);
        assert!(expected_improvement(-50.0, 0.2, g) > 50.0);
        // σ = 0: the clamped improvement.
        assert!((expected_improvement_above(-3.0, 0.0, g, floor) - (g - floor)).abs() < 1e-12);
        assert!((expected_improvement_above(0.5, 0.0, g, floor) - 0.4).abs() < 1e-12);
        // Below the floor the order is kept, and a confident prediction beats an uncertain one.
        let a = expected_improvement_above(-1.0, 2.0, g, floor);
        let b = expected_improvement_above(0.0, 2.0, g, floor);
        let c = expected_improvement_above(-1.0, 8.0, g, floor);
        assert!(a > b && a > c && a < g - floor, "{a} {b} {c}");
        // Far above the floor it is the plain EI.
        assert!((expected_improvement_above(5.0, 0.3, 6.0, 0.11) - expected_improvement(5.0, 0.3, 6.0)).abs() < 1e-12);
        assert_eq!(expected_improvement_above(0.0, 1.0, 0.1, 0.11), 0.0);
        // The censored mean.
        assert_eq!(censored_mean(-4.0, 0.0, floor), floor);
        assert_eq!(censored_mean(0.7, 0.0, floor), 0.7);
        assert!(censored_mean(-4.0, 1.0, floor) > floor && censored_mean(-4.0, 1.0, floor) < floor + 1e-3);
    }

    proptest! {
        #[test]
        fn censored_ei_matches_numeric_integral(mu in -3.0f64..3.0, sigma in 0.01f64..2.0, g in 0.2f64..3.0, floor in 0.0f64..0.2) {
            let a = expected_improvement_above(mu, sigma, g, floor);
            let b = numeric_censored_ei(mu, sigma, g, floor);
            prop_assert!((a - b).abs() < 1e-5 * (1.0 + b), "closed {a} numeric {b}");
            prop_assert!(a <= g - floor + 1e-12);
        }

        #[test]
        fn ei_matches_numeric_integral(mu in -3.0f64..3.0, sigma in 0.01f64..2.0, g in -3.0f64..3.0) {
            let a = expected_improvement(mu, sigma, g);
            let b = numeric_ei(mu, sigma, g);
            prop_assert!((a - b).abs() < 1e-6 * (1.0 + b), "closed {a} numeric {b}");
        }

        #[test]
        fn penalty_zero_inside_positive_outside(d in 0.0f64..5.0, eps in 0.01f64..2.0) {
            let p = trust_penalty(d, eps, 1e4);
            if d <= eps { prop_assert_eq!(p, 0.0); } else { prop_assert!(p > 0.0); }
        }
    }
}
