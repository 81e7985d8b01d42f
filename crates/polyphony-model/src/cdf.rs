//! Flow-size distributions: parsing, validating and sampling the CDF files under `models/cdf/`.
//!
//! # File format (`models/cdf/<name>.cdf`)
//!
//! ```text
//! # source: <paper, venue, figure>          (at least one `# source:` line is required)
//! # any other comment line
//! <size in bytes> <cumulative probability>   (one point per line, whitespace separated)
//! ```
//!
//! Sizes are positive integers and strictly increase; probabilities lie in (0, 1], never
//! decrease, and the last one is exactly 1. Sampling is by inverse transform with linear
//! interpolation of the size between consecutive points; the first point is an atom (all
//! probability mass up to its probability sits at its size).
//!
//! The CDFs of `models/cdf/` are compiled into the crate ([`SizeCdf::shipped`]), so the models run
//! from any directory; this module reads no file. A caller with its own CDF parses its text with
//! [`SizeCdf::parse`].

use crate::error::ModelError;
use rand::Rng;
use std::path::Path;

/// The CDFs shipped in `models/cdf/`, by name, compiled in.
const SHIPPED: [(&str, &str); 5] = [
    ("datamining", include_str!("../../../models/cdf/datamining.cdf")),
    ("meta-cache", include_str!("../../../models/cdf/meta-cache.cdf")),
    ("meta-hadoop", include_str!("../../../models/cdf/meta-hadoop.cdf")),
    ("meta-web", include_str!("../../../models/cdf/meta-web.cdf")),
    ("websearch", include_str!("../../../models/cdf/websearch.cdf")),
];

/// A validated piecewise-linear flow-size CDF.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeCdf {
    name: String,
    source: String,
    sizes: Vec<f64>,
    probs: Vec<f64>,
}

impl SizeCdf {
    /// Parses CDF text. `source_name` names the text in errors (e.g. the file path).
    pub fn parse(text: &str, source_name: &str) -> Result<SizeCdf, ModelError> {
        let err = |line: usize, why: String| ModelError::Cdf {
            source_name: source_name.to_string(),
            line,
            why,
        };
        let mut source = Vec::new();
        let mut sizes: Vec<f64> = Vec::new();
        let mut probs: Vec<f64> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let ln = i + 1;
            let l = raw.trim();
            if l.is_empty() {
                continue;
            }
            if let Some(c) = l.strip_prefix('#') {
                if let Some(s) = c.trim().strip_prefix("source:") {
                    source.push(s.trim().to_string());
                }
                continue;
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 2 {
                return Err(err(
                    ln,
                    format!("{l:?}: expected two fields \"<size bytes> <cumulative probability>\""),
                ));
            }
            let size: f64 = f[0]
                .parse()
                .map_err(|e| err(ln, format!("size {:?} is not a number: {e}", f[0])))?;
            let p: f64 = f[1]
                .parse()
                .map_err(|e| err(ln, format!("probability {:?} is not a number: {e}", f[1])))?;
            if !size.is_finite() || size <= 0.0 {
                return Err(err(ln, format!("size {size} must be a positive number of bytes")));
            }
            if !(p.is_finite() && p > 0.0 && p <= 1.0) {
                return Err(err(ln, format!("probability {p} must lie in (0, 1]")));
            }
            if let (Some(&ps), Some(&pp)) = (sizes.last(), probs.last()) {
                if size <= ps {
                    return Err(err(
                        ln,
                        format!("size {size} does not increase (previous point {ps}): sort the points by size"),
                    ));
                }
                if p < pp {
                    return Err(err(
                        ln,
                        format!("probability {p} decreases (previous point {pp}): a CDF never decreases"),
                    ));
                }
            }
            sizes.push(size);
            probs.push(p);
            last_line = ln;
        }
        if sizes.is_empty() {
            return Err(err(
                0,
                "no data points: add lines \"<size bytes> <cumulative probability>\"".into(),
            ));
        }
        if let Some(&p) = probs.last() {
            if (p - 1.0).abs() > 1e-9 {
                return Err(err(
                    last_line,
                    format!("the CDF ends at {p}, not at 1: the last point must have probability 1"),
                ));
            }
        }
        if source.is_empty() {
            return Err(err(
                0,
                "no \"# source: ...\" header line: name the published source (paper, figure)".into(),
            ));
        }
        let name = Path::new(source_name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| source_name.to_string());
        Ok(SizeCdf {
            name,
            source: source.join("; "),
            sizes,
            probs,
        })
    }

    /// A point mass: every flow has `bytes` bytes (an incast class's fixed response size).
    pub fn fixed(bytes: u64) -> SizeCdf {
        SizeCdf {
            name: format!("fixed-{bytes}"),
            source: "scenario: fixed response size".into(),
            sizes: vec![bytes.max(1) as f64],
            probs: vec![1.0],
        }
    }

    /// The names of the shipped CDFs (`models/cdf/<name>.cdf`), sorted.
    pub fn shipped_names() -> impl Iterator<Item = &'static str> {
        SHIPPED.iter().map(|(n, _)| *n)
    }

    /// The shipped CDF called `name` (`models/cdf/<name>.cdf`, compiled in).
    pub fn shipped(name: &str) -> Result<SizeCdf, ModelError> {
        match SHIPPED.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => SizeCdf::parse(text, &format!("models/cdf/{n}.cdf")),
            None => Err(ModelError::invalid(
                "size_cdf",
                name,
                format!(
                    "name one of the shipped CDFs: {}",
                    SizeCdf::shipped_names().collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }

    /// The CDF's name (the file stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The published source named in the file's header.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Mean flow size in bytes under the interpolated distribution.
    pub fn mean(&self) -> f64 {
        let mut m = self.probs[0] * self.sizes[0];
        for i in 1..self.sizes.len() {
            m += (self.probs[i] - self.probs[i - 1]) * (self.sizes[i - 1] + self.sizes[i]) / 2.0;
        }
        m
    }

    /// The size at cumulative probability `u` in [0, 1] (inverse CDF, linear interpolation).
    pub fn quantile(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let i = self.probs.partition_point(|&p| p < u);
        if i == 0 {
            return self.sizes[0];
        }
        if i >= self.sizes.len() {
            return self.sizes[self.sizes.len() - 1];
        }
        let (p0, p1) = (self.probs[i - 1], self.probs[i]);
        let (x0, x1) = (self.sizes[i - 1], self.sizes[i]);
        if p1 <= p0 {
            return x1;
        }
        x0 + (x1 - x0) * (u - p0) / (p1 - p0)
    }

    /// Draws one flow size in whole bytes (at least 1).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        (self.quantile(u).round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "# source: test\n100 0.5\n1000 1\n";

    #[test]
    fn a_fixed_size_is_a_point_mass() {
        let c = SizeCdf::fixed(20_000);
        assert_eq!(
            (c.mean(), c.quantile(0.0), c.quantile(0.7), c.quantile(1.0)),
            (20e3, 20e3, 20e3, 20e3)
        );
        assert_eq!(c.sample(&mut rand::thread_rng()), 20_000);
    }

    #[test]
    fn parses_and_interpolates() {
        let c = SizeCdf::parse(OK, "t.cdf").unwrap();
        assert_eq!(c.quantile(0.25), 100.0);
        assert_eq!(c.quantile(0.75), 550.0);
        assert_eq!(c.quantile(1.0), 1000.0);
        assert!((c.mean() - (50.0 + 0.5 * 550.0)).abs() < 1e-9);
        assert_eq!(c.name(), "t");
    }

    #[test]
    fn non_monotone_probability_names_line() {
        let e = SizeCdf::parse("# source: x\n100 0.5\n200 0.4\n300 1\n", "bad.cdf")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.cdf:3:") && e.contains("decreases"), "{e}");
    }

    #[test]
    fn non_increasing_size_names_line() {
        let e = SizeCdf::parse("# source: x\n100 0.5\n100 1\n", "bad.cdf")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.cdf:3:") && e.contains("does not increase"), "{e}");
    }

    #[test]
    fn not_ending_at_one_names_last_line() {
        let e = SizeCdf::parse("# source: x\n100 0.5\n200 0.9\n\n", "bad.cdf")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.cdf:3:") && e.contains("not at 1"), "{e}");
    }

    #[test]
    fn negative_size_names_line() {
        let e = SizeCdf::parse("# source: x\n# c\n-5 0.5\n200 1\n", "bad.cdf")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.cdf:3:") && e.contains("positive"), "{e}");
    }

    #[test]
    fn missing_source_is_rejected() {
        let e = SizeCdf::parse("100 1\n", "bad.cdf").unwrap_err().to_string();
        assert!(e.contains("source"), "{e}");
    }

    #[test]
    fn garbage_is_rejected_with_line() {
        let e = SizeCdf::parse("# source: x\n100 abc\n", "bad.cdf")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.cdf:2:"), "{e}");
    }

    #[test]
    fn an_unknown_cdf_names_the_shipped_ones() {
        let e = SizeCdf::shipped("websurf").unwrap_err().to_string();
        assert!(e.contains("websurf") && e.contains("websearch"), "{e}");
    }
}
