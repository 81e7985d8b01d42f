//! `[sli] source = "prometheus"` with one query per percentile: a real Prometheus server
//! (Debian's `/usr/bin/prometheus`, started here) scrapes an exposition of per-class,
//! per-quantile slowdowns served by this test; the daemon asks Prometheus for p50, p99 and p99.9
//! of every class through one `{dscp}`/`{quantile}` template, and its iteration record carries
//! the three different values of each class.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// (dscp, p50, p99, p99.9) served for each class.
const SERVED: [(u8, f64, f64, f64); 3] = [(10, 1.5, 7.25, 13.5), (18, 2.0, 9.75, 21.0), (26, 3.25, 17.5, 40.0)];

/// A loopback HTTP server answering every request with the exposition text; stops when dropped.
struct Exposition {
    addr: String,
    _thread: Background,
}

impl Exposition {
    fn start() -> Exposition {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let mut text =
            String::from("# HELP app_fct_slowdown FCT slowdown quantiles per class\n# TYPE app_fct_slowdown gauge\n");
        for (d, p50, p99, p999) in SERVED {
            for (q, v) in [("0.5", p50), ("0.99", p99), ("0.999", p999)] {
                text.push_str(&format!("app_fct_slowdown{{dscp=\"{d}\",quantile=\"{q}\"}} {v}\n"));
            }
        }
        let thread = Background::spawn(move |stop| {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).ok();
                        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
                        let mut buf = [0u8; 4096];
                        let _ = s.read(&mut buf);
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                            text.len(),
                            text
                        );
                        let _ = s.write_all(resp.as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Exposition { addr, _thread: thread }
    }
}

#[test]
fn prometheus_sli_has_one_query_per_percentile() {
    if !have_prometheus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let expo = Exposition::start();

    let (mut prom, prom_addr) = start_prometheus(dir.path(), "app", &expo.addr);

    let query = r#"app_fct_slowdown{dscp="{dscp}",quantile="{quantile}"}"#;
    let (mut daemon, addr) = start_prometheus_sli_daemon(dir.path(), &prom_addr, query);
    let record = iteration_with_classes(&addr, 3);
    for (k, (dscp, p50, p99, p999)) in record["classes"].as_array().unwrap().iter().zip(SERVED) {
        assert_eq!(k["dscp"], dscp, "{k}");
        let m = &k["measured"];
        let got = [m["p50"].as_f64(), m["p99"].as_f64(), m["p999"].as_f64()];
        assert_eq!(got, [Some(p50), Some(p99), Some(p999)], "class {dscp}: {k}");
        let sli = k["sli"].as_f64().unwrap();
        assert!((sli - p99).abs() < 1e-9, "the SLO is on p99: {k}");
    }

    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
    prom.signal(libc::SIGTERM);
    assert!(prom.wait(Duration::from_secs(30)).is_some(), "prometheus did not stop");
}

/// An SLI source that cannot be reached fails the iteration: logged, and counted on
/// `polyphony_iteration_failures_total` (what the shipped `PolyphonyIterationsFailing` alert
/// watches); the daemon keeps running.
#[test]
fn an_unreachable_sli_source_counts_failed_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let nobody = format!("127.0.0.1:{}", free_port());
    let (mut daemon, addr) =
        start_prometheus_sli_daemon(dir.path(), &nobody, "q{dscp=\"{dscp}\",quantile=\"{quantile}\"}");
    let failures = poll(Duration::from_secs(120), || {
        let (c, b) = http(&addr, "GET", "/metrics", &[], "");
        let n: f64 = b
            .lines()
            .find_map(|l| l.strip_prefix("polyphony_iteration_failures_total "))?
            .trim()
            .parse()
            .ok()?;
        (c == 200 && n >= 2.0).then_some(n)
    })
    .expect("no failed iteration counted");
    assert!(failures >= 2.0);
    let (_, b) = http(&addr, "GET", "/metrics", &[], "");
    assert!(b.contains("polyphony_iterations_total 0"), "{b}");
    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
}
