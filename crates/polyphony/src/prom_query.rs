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

/// The answer's data: its result type, and the result read once the type says it is a vector
/// or a scalar (range vectors and strings are refused unread).
#[derive(Debug, Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
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
    let Some(data) = a.data else {
        bail!("{url}: query {promql:?} answered without data");
    };
    let shape =
        |e: serde_json::Error| anyhow!("{url}: the {} result of {promql:?} is malformed: {e}", data.result_type);
    match data.result_type.as_str() {
        "vector" => serde_json::from_value::<Vec<VectorSample>>(data.result.clone())
            .map_err(shape)?
            .into_iter()
            .map(|s| {
                Ok(Sample {
                    labels: s.metric,
                    value: parse(&s.value.1)?,
                })
            })
            .collect(),
        "scalar" => {
            let (_, v) = serde_json::from_value::<(f64, String)>(data.result.clone()).map_err(shape)?;
            Ok(vec![Sample {
                labels: Default::default(),
                value: parse(&v)?,
            }])
        }
        other => bail!("{url}: query {promql:?} returned a {other}, not a vector or scalar"),
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
