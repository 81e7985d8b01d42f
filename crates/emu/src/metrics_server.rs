//! The live Prometheus endpoint of a run (`--metrics-listen ADDR`): `GET /metrics` answers the
//! current [`EmuMetrics`] exposition (prometheus-client's OpenMetrics text), so a Prometheus
//! server can scrape the per-class slowdown histograms while flows finish.
//!
//! It runs an axum server on one dedicated thread with its own single-threaded tokio runtime,
//! so it never competes with the sender threads' runtimes. It binds only the address it is
//! given, serves only `/metrics`, reads the registry and nothing else, and stops when the
//! [`MetricsServer`] is dropped (open connections get a short grace, then are closed).

use crate::{EmuError, EmuMetrics};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::oneshot;

/// The `Content-Type` of `/metrics`: prometheus-client writes OpenMetrics 1.0 text.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How long open connections (e.g. a scraper's keep-alive) may take to finish once stopping.
const GRACE: Duration = Duration::from_secs(1);

/// A running `/metrics` endpoint; stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `listen` (port 0 picks a free port) and serves `metrics` on `/metrics` until the
    /// returned server is dropped. The bind happens before this returns, so an address in use
    /// or not local is reported here ([`EmuError::Listen`]).
    pub fn start(metrics: EmuMetrics, listen: SocketAddr) -> Result<MetricsServer, EmuError> {
        let listen_err = |source| EmuError::Listen { addr: listen, source };
        let std_listener = std::net::TcpListener::bind(listen).map_err(listen_err)?;
        std_listener.set_nonblocking(true).map_err(listen_err)?;
        let addr = std_listener.local_addr().map_err(listen_err)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EmuError::socket("building the /metrics server's tokio runtime", e))?;
        let listener = {
            let _guard = rt.enter();
            tokio::net::TcpListener::from_std(std_listener).map_err(listen_err)?
        };
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let body = metrics.encode();
                async move { ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], body).into_response() }
            }),
        );
        let thread = std::thread::Builder::new()
            .name("emu-metrics".into())
            .spawn(move || serve(rt, listener, app, stop_rx))
            .map_err(|_| EmuError::Worker("/metrics server".into()))?;
        tracing::info!("emu: serving /metrics on http://{addr}");
        Ok(MetricsServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port chosen when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

fn serve(rt: tokio::runtime::Runtime, listener: tokio::net::TcpListener, app: Router, stop: oneshot::Receiver<()>) {
    rt.block_on(async move {
        let (graceful_tx, graceful_rx) = oneshot::channel::<()>();
        let server = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = graceful_rx.await;
        });
        let deadline = async move {
            // Dropped sender or explicit stop: both mean the run is over.
            let _ = stop.await;
            let _ = graceful_tx.send(());
            tokio::time::sleep(GRACE).await;
        };
        tokio::select! {
            r = server => {
                if let Err(e) = r {
                    tracing::warn!("emu /metrics server: {e}");
                }
            }
            _ = deadline => {}
        }
    });
    // Dropping the runtime cancels connections still open after the grace.
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        tracing::debug!("emu: /metrics on http://{} stopped", self.addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowRecord;
    use polyphony_spec::{Dscp, FlowId};
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    fn finished(dscp: Dscp, class: &str, slowdown: f64) -> FlowRecord {
        FlowRecord {
            id: FlowId(1),
            dscp,
            class: class.into(),
            size: 10_000,
            src_host: 0,
            src_addr: "198.18.1.2".into(),
            src_port: 40000,
            dst_addr: "198.18.100.2".into(),
            dst_port: 7100,
            sched_ns: 0,
            start_ns: 1_000,
            end_ns: Some(1_000 + (slowdown * 100_000.0) as u64),
            fct_ns: Some((slowdown * 100_000.0) as u64),
            ideal_ns: 100_000,
            slowdown: Some(slowdown),
            init_cwnd: Some(10),
            error: None,
            query: None,
            request_ns: None,
            received_ns: None,
        }
    }

    fn count_line(text: &str) -> Option<String> {
        text.lines()
            .find(|l| l.starts_with("emu_flow_slowdown_count{"))
            .map(str::to_string)
    }

    #[test]
    fn metrics_are_served_live_with_the_openmetrics_content_type_and_stop_with_the_server() {
        let m = EmuMetrics::new();
        m.declare_classes(&[(Dscp::AF11, "AF11".into())]);
        let srv = MetricsServer::start(m.clone(), "127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = srv.local_addr();
        assert_ne!(addr.port(), 0);

        let first = get(addr, "/metrics").unwrap();
        assert!(first.starts_with("HTTP/1.1 200"), "{first}");
        assert!(
            first
                .to_ascii_lowercase()
                .contains(&format!("content-type: {METRICS_CONTENT_TYPE}")),
            "{first}"
        );
        // Declared classes are there from the start, at zero.
        let c = count_line(&first).unwrap_or_default();
        assert!(c.contains("dscp=\"10\"") && c.ends_with(" 0"), "{c}");
        assert!(first.trim_end().ends_with("# EOF"), "{first}");

        // A flow that finishes while serving shows up in the next scrape.
        m.observe(&finished(Dscp::AF11, "AF11", 1.7));
        m.observe(&finished(Dscp::AF11, "AF11", 3.0));
        let second = get(addr, "/metrics").unwrap();
        let c = count_line(&second).unwrap_or_default();
        assert!(c.ends_with(" 2"), "{c}");
        let le = |b: &str| {
            second
                .lines()
                .find(|l| l.starts_with("emu_flow_slowdown_bucket{") && l.contains(&format!("le=\"{b}\"")))
                .map(str::to_string)
                .unwrap_or_default()
        };
        assert!(le("1.5").ends_with(" 0") && le("2.25").ends_with(" 1"), "{second}");
        assert!(le("3.375").ends_with(" 2"), "{second}");
        assert!(
            second.contains("emu_flows_finished_total{class=\"AF11\",dscp=\"10\"} 2"),
            "{second}"
        );

        // Only /metrics is served.
        let other = get(addr, "/").unwrap();
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");

        drop(srv);
        assert!(get(addr, "/metrics").is_err(), "still serving after the run ended");
    }

    #[test]
    fn an_address_in_use_is_an_error_naming_the_flag_and_the_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let e = MetricsServer::start(EmuMetrics::new(), addr)
            .err()
            .map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(e.contains("--metrics-listen") && e.contains(&addr.to_string()), "{e}");
    }
}
