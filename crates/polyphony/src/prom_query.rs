//! SLIs from a Prometheus server: one instant PromQL query per class over the HTTP API
//! (`GET <url>/api/v1/query?query=...`), with `{dscp}` in the configured query replaced by the
//! class's DSCP. Each answer must be a vector or scalar with exactly one finite sample.
//!
//! Talks HTTP to the configured URL only.

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
enum Data {
    Vector(Vec<VectorSample>),
    Scalar((f64, String)),
    // Range vectors and strings are refused; their content is never looked at.
    #[allow(dead_code)]
    Matrix(serde::de::IgnoredAny),
    #[allow(dead_code)]
    String(serde::de::IgnoredAny),
}

#[derive(Debug, Deserialize)]
struct VectorSample {
    #[serde(default)]
    metric: serde_json::Map<String, serde_json::Value>,
    value: (f64, String),
}

/// One sample of an instant-query answer: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label set.
    pub labels: serde_json::Map<String, serde_json::Value>,
    /// Value.
    pub value: f64,
}

/// Runs an instant query and returns every sample of the answer.
pub async fn query(client: &reqwest::Client, base: &str, promql: &str) -> Result<Vec<Sample>> {
    let url = format!("{}/api/v1/query", base.trim_end_matches('/'));
    let resp = client
        .get(&url)
        .query(&[("query", promql)])
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let status = resp.status();
    let body = resp
        .text()
        .await
        .with_context(|| format!("reading the answer of {url}"))?;
    let a: Answer = serde_json::from_str(&body)
        .with_context(|| format!("{url} answered {status} with something that is not a Prometheus API answer"))?;
    if a.status != "success" {
        bail!("{url}: query {promql:?} failed: {}", a.error.unwrap_or_default());
    }
    let parse = |s: &str| {
        s.parse::<f64>()
            .map_err(|_| anyhow!("{url}: sample value {s:?} is not a number"))
    };
    match a.data {
        Some(Data::Vector(v)) => v
            .into_iter()
            .map(|s| {
                Ok(Sample {
                    labels: s.metric,
                    value: parse(&s.value.1)?,
                })
            })
            .collect(),
        Some(Data::Scalar((_, v))) => Ok(vec![Sample {
            labels: Default::default(),
            value: parse(&v)?,
        }]),
        Some(_) | None => bail!("{url}: query {promql:?} did not return a vector or scalar"),
    }
}

/// Runs an instant query that must give exactly one finite value.
pub async fn query_one(client: &reqwest::Client, base: &str, promql: &str) -> Result<f64> {
    let samples = query(client, base, promql).await?;
    match samples.as_slice() {
        [s] if s.value.is_finite() => Ok(s.value),
        [s] => bail!("query {promql:?} returned {}: not a finite SLI", s.value),
        [] => bail!("query {promql:?} returned no sample (no data yet for this class?)"),
        more => bail!(
            "query {promql:?} returned {} samples; aggregate it to one (e.g. max by () (...))",
            more.len()
        ),
    }
}
