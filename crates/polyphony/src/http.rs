//! The HTTP API (axum): `/metrics` for Prometheus and a small JSON status API.
//!
//! | method | path | token | answer |
//! |---|---|---|---|
//! | GET | `/metrics` | no | OpenMetrics text |
//! | GET | `/healthz` | no | `ok` |
//! | GET | `/v1/status` | no | mode, iteration, configuration in force, last known good, last iteration |
//! | GET | `/v1/iterations?limit=N` | no | the last N iteration records (default 50) |
//! | GET | `/v1/samples` | no | the samples the controller admitted |
//! | GET | `/v1/workload` | no | the last workload window given to the model (404 before the first); `?format=jsonl`: the window alone as a JSON-lines trace |
//! | POST | `/v1/reload` | yes | re-read the config file (as SIGHUP) |
//! | POST | `/v1/mode` | yes | body `{"mode": "advise"}` or `{"mode": "apply"}` |
//! | POST | `/v1/rollback` | yes | return to the last known good configuration now |
//! | POST | `/v1/resume` | yes | body `{"device": "tc"}` (or `{}`: every device): actuate a device stood aside from again, taking what it holds as the new baseline; also ends a hold after a failed stage |
//!
//! State-changing endpoints need `Authorization: Bearer <token>` (the token from
//! `[http] token_file`); without a configured token they answer 403. The API listens on
//! loopback unless the config says otherwise. This module only reads the shared snapshot and
//! forwards commands to the daemon loop over a channel.

use crate::config::Mode;
use crate::metrics::Metrics;
use crate::state::{IterationRecord, Skip, StoodAside};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use polyphony_spec::{NetworkConfig, Workload};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;

/// What the daemon publishes for the API to read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Snapshot {
    /// `advise` or `apply`.
    pub mode: String,
    /// Iterations completed.
    pub iteration: u64,
    /// Configuration in force.
    pub config_in_force: Option<NetworkConfig>,
    /// Last known good configuration.
    pub last_good: Option<NetworkConfig>,
    /// Its own latest measurement broke the guard: no configuration is known to pass it (the
    /// guard reverts nowhere until one does; a rollback still returns to `last_good`).
    pub last_good_failed: bool,
    /// Samples the GP holds.
    pub gp_samples: usize,
    /// Recent iterations (oldest first).
    pub history: Vec<IterationRecord>,
    /// The admitted samples, as the controller reports them.
    pub samples: serde_json::Value,
    /// The config file in use.
    pub config_path: String,
    /// Intervals skipped so far.
    pub skipped_intervals: u64,
    /// The last skipped interval.
    pub last_skip: Option<Skip>,
    /// Devices changed by hand that the daemon does not actuate.
    pub stood_aside: Vec<StoodAside>,
    /// Why the daemon holds (a failed stage), if it does.
    pub held: Option<String>,
    /// The staged apply in progress, if any.
    pub rollout: Option<serde_json::Value>,
    /// The last workload window given to the model, with what was left out of it.
    #[serde(skip)]
    pub window: Option<Arc<WindowReport>>,
}

/// The last workload window, as `/v1/workload` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WindowReport {
    /// The iteration (1-based) or skipped interval the window belongs to.
    pub iteration: u64,
    /// Unix time in seconds when it was taken.
    pub unix_time: f64,
    /// Flows in the window.
    pub flows: usize,
    /// Captured flows left out, by reason (Workfeed windows only).
    pub left_out: Option<serde_json::Value>,
    /// The window itself (starts relative to its beginning).
    pub workload: Workload,
}

/// A request the API forwards to the daemon loop.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiCommand {
    /// Reload the config file.
    Reload,
    /// Switch mode.
    SetMode(Mode),
    /// Return to the last known good configuration.
    Rollback,
    /// Resume actuating a device (all when `None`) and end a hold.
    Resume(Option<String>),
}

/// Shared between the API and the loop.
pub struct ApiState {
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The snapshot.
    pub snapshot: Arc<RwLock<Snapshot>>,
    /// The bearer token, if configured.
    pub token: RwLock<Option<String>>,
    /// Where commands go.
    pub commands: mpsc::Sender<ApiCommand>,
}

/// The router.
pub fn router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/v1/status", get(status))
        .route("/v1/iterations", get(iterations))
        .route("/v1/samples", get(samples))
        .route("/v1/workload", get(workload))
        .route("/v1/reload", post(reload))
        .route("/v1/mode", post(set_mode))
        .route("/v1/rollback", post(rollback))
        .route("/v1/resume", post(resume))
        .fallback(|m: axum::http::Method, u: axum::http::Uri| async move {
            (
                StatusCode::NOT_FOUND,
                format!("no endpoint {m} {}; {ENDPOINTS}\n", u.path()),
            )
        })
        .method_not_allowed_fallback(|m: axum::http::Method, u: axum::http::Uri| async move {
            (
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} does not take {m}; {ENDPOINTS}\n", u.path()),
            )
        })
        .with_state(state)
}

/// The endpoints, for the answer to a request that matches none.
const ENDPOINTS: &str = "the API: GET /metrics, /healthz, /v1/status, /v1/iterations, /v1/samples, /v1/workload; \
                         POST /v1/reload, /v1/mode, /v1/rollback, /v1/resume";

async fn metrics(State(s): State<Arc<ApiState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
}

fn read_snapshot(s: &ApiState) -> Snapshot {
    match s.snapshot.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

async fn status(State(s): State<Arc<ApiState>>) -> Json<serde_json::Value> {
    let snap = read_snapshot(&s);
    Json(serde_json::json!({
        "mode": snap.mode,
        "iteration": snap.iteration,
        "config_in_force": snap.config_in_force,
        "last_good": snap.last_good,
        "last_good_failed": snap.last_good_failed,
        "gp_samples": snap.gp_samples,
        "last_iteration": snap.history.last(),
        "config_path": snap.config_path,
        "skipped_intervals": snap.skipped_intervals,
        "last_skip": snap.last_skip,
        "stood_aside": snap.stood_aside,
        "held": snap.held,
        "rollout": snap.rollout,
    }))
}

/// `?limit=N`.
#[derive(Debug, Deserialize)]
struct Limit {
    limit: Option<usize>,
}

async fn iterations(State(s): State<Arc<ApiState>>, Query(q): Query<Limit>) -> Json<Vec<IterationRecord>> {
    let snap = read_snapshot(&s);
    let n = q.limit.unwrap_or(50).min(snap.history.len());
    Json(snap.history[snap.history.len() - n..].to_vec())
}

async fn samples(State(s): State<Arc<ApiState>>) -> Json<serde_json::Value> {
    Json(read_snapshot(&s).samples)
}

/// `?format=jsonl`.
#[derive(Debug, Deserialize)]
struct Format {
    format: Option<String>,
}

async fn workload(State(s): State<Arc<ApiState>>, Query(q): Query<Format>) -> Response {
    let Some(w) = read_snapshot(&s).window else {
        return (StatusCode::NOT_FOUND, "no workload window taken yet\n").into_response();
    };
    match q.format.as_deref() {
        None | Some("json") => Json(w.as_ref().clone()).into_response(),
        // The trace form `polyphony recommend --workload` and `[workload] source = "trace"` read.
        Some("jsonl") => (
            [(header::CONTENT_TYPE, "application/jsonl; charset=utf-8")],
            w.workload.to_jsonl(),
        )
            .into_response(),
        Some(other) => (
            StatusCode::BAD_REQUEST,
            format!("format={other}: use json (default) or jsonl\n"),
        )
            .into_response(),
    }
}

fn authorised(s: &ApiState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let token = match s.token.read() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    };
    let Some(token) = token else {
        return Err(Box::new(
            (
                StatusCode::FORBIDDEN,
                "state-changing endpoints are disabled: set [http] token_file in the config\n",
            )
                .into_response(),
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        Ok(())
    } else {
        Err(Box::new(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token\n",
            )
                .into_response(),
        ))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn send(s: &ApiState, c: ApiCommand) -> Response {
    match s.commands.send(c).await {
        Ok(()) => (StatusCode::ACCEPTED, "accepted\n").into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping\n").into_response(),
    }
}

async fn reload(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorised(&s, &headers) {
        return *r;
    }
    send(&s, ApiCommand::Reload).await
}

/// Body of `POST /v1/mode`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: Mode,
}

async fn set_mode(State(s): State<Arc<ApiState>>, headers: HeaderMap, body: String) -> Response {
    if let Err(r) = authorised(&s, &headers) {
        return *r;
    }
    match parse_mode(&body) {
        Ok(m) => send(&s, ApiCommand::SetMode(m)).await,
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

async fn rollback(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorised(&s, &headers) {
        return *r;
    }
    send(&s, ApiCommand::Rollback).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeBody {
    #[serde(default)]
    device: Option<String>,
}

/// The body of `POST /v1/resume`: `{"device": NAME}`, `{}` or nothing (every device).
pub fn parse_resume(body: &str) -> Result<Option<String>, String> {
    if body.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str::<ResumeBody>(body)
        .map(|b| b.device)
        .map_err(|e| format!("body must be {{\"device\": NAME}} or {{}}: {e}"))
}

/// The body of `POST /v1/mode`.
pub fn parse_mode(body: &str) -> Result<Mode, String> {
    serde_json::from_str::<ModeBody>(body)
        .map(|b| b.mode)
        .map_err(|e| format!("body must be {{\"mode\": \"advise\"|\"apply\"}}: {e}"))
}

async fn resume(State(s): State<Arc<ApiState>>, headers: HeaderMap, body: String) -> Response {
    if let Err(r) = authorised(&s, &headers) {
        return *r;
    }
    match parse_resume(&body) {
        Ok(d) => send(&s, ApiCommand::Resume(d)).await,
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!constant_time_eq(b"abc", b"abcdef"));
    }
}
