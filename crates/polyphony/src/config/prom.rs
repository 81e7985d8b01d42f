//! The Prometheus SLI source's PromQL templates: one query per percentile, either given per
//! percentile (`[sli.queries]`) or from one template with a `{quantile}` placeholder
//! (`sli.query`); every template needs a `{dscp}` placeholder so one query per class can be made.

use super::{InvalidValue, PromQueries};

/// The query templates of a Prometheus SLI source, one per statistic.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedQueries {
    /// p50, p99, p99.9 templates (with `{dscp}`; `{quantile}` already substituted).
    pub percentiles: [String; 3],
    /// Mean template, if configured.
    pub mean: Option<String>,
}

/// The quantile strings substituted for `{quantile}`, in [`ResolvedQueries::percentiles`] order.
pub const QUANTILES: [&str; 3] = ["0.5", "0.99", "0.999"];

impl PromQueries {
    /// The template for each percentile (`queries.pXX`, else `query` with `{quantile}`
    /// substituted), or the key that is missing or wrong with its value and why.
    pub fn resolve(&self, query: Option<&str>) -> Result<ResolvedQueries, InvalidValue> {
        let own = [&self.p50, &self.p99, &self.p999];
        let names = ["p50", "p99", "p999"];
        let mut out: Vec<String> = Vec::with_capacity(3);
        for i in 0..3 {
            let (key, q) =
                match (own[i], query) {
                    (Some(q), _) => (format!("sli.queries.{}", names[i]), q.clone()),
                    (None, Some(q)) => {
                        if !q.contains("{quantile}") {
                            return Err(InvalidValue::new(
                                "sli.query",
                                format!("{q:?}"),
                                format!(
                                "no query for {}: put a {{quantile}} placeholder in sli.query or give sli.queries.{}",
                                names[i], names[i]
                            ),
                            ));
                        }
                        ("sli.query".to_string(), q.replace("{quantile}", QUANTILES[i]))
                    }
                    (None, None) => return Err(InvalidValue::new(
                        format!("sli.queries.{}", names[i]),
                        "(missing)",
                        "give sli.query with {dscp} and {quantile} placeholders, or sli.queries.p50, .p99 and .p999",
                    )),
                };
            check_template(&key, &q)?;
            out.push(q);
        }
        if let Some(m) = &self.mean {
            check_template("sli.queries.mean", m)?;
        }
        let percentiles: [String; 3] = [out[0].clone(), out[1].clone(), out[2].clone()];
        Ok(ResolvedQueries {
            percentiles,
            mean: self.mean.clone(),
        })
    }
}

fn check_template(key: &str, q: &str) -> Result<(), InvalidValue> {
    if q.trim().is_empty() || !q.contains("{dscp}") {
        return Err(InvalidValue::new(
            key,
            format!("{q:?}"),
            "the query needs a {dscp} placeholder so one query per class can be made",
        ));
    }
    Ok(())
}
