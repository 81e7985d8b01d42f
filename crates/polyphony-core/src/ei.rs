//! Expected Improvement (§4.3), the trust-region penalty (§4.4), and the normal distribution
//! they need. Pure functions.

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

/// `β·max(0, d − ε)²`.
pub fn trust_penalty(d: f64, epsilon: f64, beta: f64) -> f64 {
    let e = (d - epsilon).max(0.0);
    beta * e * e
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// ∫ max(g − y, 0) φ((y−μ)/σ)/σ dy by the trapezoid rule over μ ± 12σ.
    fn numeric_ei(mu: f64, sigma: f64, g: f64) -> f64 {
        let n = 20_000;
        let (lo, hi) = (mu - 12.0 * sigma, mu + 12.0 * sigma);
        let h = (hi - lo) / n as f64;
        let f = |y: f64| (g - y).max(0.0) * norm_pdf((y - mu) / sigma) / sigma;
        let mut s = 0.5 * (f(lo) + f(hi));
        for i in 1..n {
            s += f(lo + i as f64 * h);
        }
        s * h
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

    proptest! {
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
