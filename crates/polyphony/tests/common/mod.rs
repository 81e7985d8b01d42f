//! Helpers shared by the daemon's integration tests: a config writer, a child-process guard that
//! kills by PID on drop, a stoppable helper thread, a loopback HTTP GET/POST, and polling.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_polyphony");

pub fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/scenarios/reference-medium.toml")
}

/// The reference scenario's classes (medium tightness) and dumbbell, as daemon-config TOML.
pub const CLASSES_AND_TOPOLOGY: &str = r#"[[classes]]
name = "AF11"
dscp = 10
slo = { max_slowdown = 11.0 }

[[classes]]
name = "AF21"
dscp = 18
slo = { max_slowdown = 15.0 }

[[classes]]
name = "AF31"
dscp = 26
slo = { max_slowdown = 20.0 }

[topology]
kind = "dumbbell"
senders = 3
rate_mbps = 100
link_delay_us = 2.5
"#;

/// Controller settings cheap enough for debug builds.
pub const CHEAP_CONTROLLER: &str = r#"[controller]
seed = 5
acq_random_candidates = 12
acq_refine_starts = 1
acq_max_iters = 4
gp_max_eval = 25
"#;

/// A simulated-network daemon config with cheap controller settings (debug builds are slow).
pub fn simulated_config(state: &Path, mode: &str, interval_s: f64, extra_http: &str) -> String {
    format!(
        r#"mode = "{mode}"
interval_s = {interval_s}
state_dir = "{state}"

{CHEAP_CONTROLLER}
{CLASSES_AND_TOPOLOGY}
[sli]
source = "simulated"

[workload]
source = "scenario"
scenario = "{scenario}"

[http]
listen = "127.0.0.1:0"
{extra_http}

[guard]
max_objective = 1000000.0
"#,
        state = state.display(),
        scenario = scenario().display(),
        CLASSES_AND_TOPOLOGY = CLASSES_AND_TOPOLOGY,
    )
}

/// An advise-mode daemon config whose workload and SLIs come from its embedded Workfeed
/// aggregator on a free loopback port, keyed with `key_file`, with the testbed's host map.
pub fn workfeed_config(state: &Path, key_file: &Path, window_s: f64) -> String {
    format!(
        r#"mode = "advise"
interval_s = 1.0
state_dir = "{state}"

{CHEAP_CONTROLLER}
{CLASSES_AND_TOPOLOGY}
[sli]
source = "workfeed"
min_flows = 5

[workload]
source = "workfeed"
listen = "127.0.0.1:0"
window_s = {window_s}
key_file = "{key}"
hosts = {{ "198.18.1.2" = 0, "198.18.2.2" = 1, "198.18.3.2" = 2, "198.18.100.2" = 3 }}

[http]
listen = "127.0.0.1:0"

[guard]
max_objective = 1000000.0
"#,
        state = state.display(),
        key = key_file.display(),
    )
}

/// Debian's Prometheus binary.
pub const PROMETHEUS: &str = "/usr/bin/prometheus";

/// Whether Debian's Prometheus is installed; prints the skip line when not.
pub fn have_prometheus() -> bool {
    let ok = Path::new(PROMETHEUS).exists();
    if !ok {
        eprintln!("skipped: needs {PROMETHEUS} (Debian package prometheus; scripts/test.sh installs it)");
    }
    ok
}

/// Starts Prometheus scraping `target` every second, its data under `dir`; returns it and its
/// `host:port`.
pub fn start_prometheus(dir: &Path, job: &str, target: &str) -> (ChildGuard, String) {
    start_prometheus_with_rules(dir, job, target, None)
}

/// [`start_prometheus`], evaluating the rule file `rules` every second.
pub fn start_prometheus_with_rules(dir: &Path, job: &str, target: &str, rules: Option<&Path>) -> (ChildGuard, String) {
    let port = free_port();
    let cfg = dir.join("prometheus.yml");
    let rule_files = rules.map_or(String::new(), |r| format!("rule_files:\n  - \"{}\"\n", r.display()));
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{rule_files}scrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: [\"{target}\"]\n"
        ),
    )
    .expect("prometheus.yml");
    let mut cmd = Command::new(PROMETHEUS);
    cmd.arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn");
    (ChildGuard::spawn(&mut cmd), format!("127.0.0.1:{port}"))
}

/// The address after `scheme` (e.g. `udp://`) in a log line.
pub fn address_after(line: &str, scheme: &str) -> String {
    line.split(scheme)
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .map(|s| s.trim_end_matches(|c: char| !c.is_ascii_digit()).to_string())
        .unwrap_or_else(|| panic!("no {scheme} address in {line:?}"))
}

/// A child process killed (SIGKILL, by PID) when dropped, with its stderr lines forwarded to a
/// channel (and to the test's output).
pub struct ChildGuard {
    pub child: Option<Child>,
    pub lines: mpsc::Receiver<String>,
}

impl ChildGuard {
    pub fn spawn(cmd: &mut Command) -> ChildGuard {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("[child] {l}");
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        ChildGuard {
            child: Some(child),
            lines: rx,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Sends a signal to the child's PID.
    pub fn signal(&self, sig: i32) {
        let pid = self.pid();
        if pid > 0 {
            // SAFETY: kill(2) on the PID of a child we spawned and have not reaped.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    }

    /// Waits for the child to exit, up to `timeout`; returns its exit code (None on timeout or
    /// death by signal).
    pub fn wait(&mut self, timeout: Duration) -> Option<i32> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    self.child = None;
                    return st.code();
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Waits for a stderr line containing `needle`; returns it.
    pub fn wait_line(&self, needle: &str, timeout: Duration) -> Option<String> {
        let end = Instant::now() + timeout;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return Some(l),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: as in `signal`.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGKILL);
            }
            let _ = c.wait();
        }
    }
}

/// Starts `polyphony daemon --config FILE [args]` and returns it with its HTTP address.
pub fn start_daemon(config: &Path, args: &[&str]) -> (ChildGuard, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["--log", "info", "daemon", "--config"]).arg(config).args(args);
    let g = ChildGuard::spawn(&mut cmd);
    let line = g
        .wait_line("/metrics on http://", Duration::from_secs(60))
        .expect("the daemon did not report its HTTP address");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("address")
        .to_string();
    (g, addr)
}

/// Starts an advise-mode daemon (the simulated config, 1 s interval, state under `dir`) whose
/// SLIs come from the Prometheus at `prom_addr` through the query template `query`; returns it
/// with its HTTP address.
pub fn start_prometheus_sli_daemon(dir: &Path, prom_addr: &str, query: &str) -> (ChildGuard, String) {
    let sli = format!(
        "source = \"prometheus\"\nurl = \"http://{prom_addr}\"\nquery = {}",
        toml::Value::String(query.to_string())
    );
    let text = simulated_config(&dir.join("state"), "advise", 1.0, "").replace("source = \"simulated\"", &sli);
    let cfg = dir.join("daemon.toml");
    std::fs::write(&cfg, &text).expect("daemon.toml");
    start_daemon(&cfg, &[])
}

/// The daemon's last iteration record once it carries `classes` classes (polls the status API
/// for up to 300 s; panics if none comes).
pub fn iteration_with_classes(addr: &str, classes: usize) -> serde_json::Value {
    poll(Duration::from_secs(300), || {
        let (c, b) = http(addr, "GET", "/v1/status", &[], "");
        let s: serde_json::Value = serde_json::from_str(&b).ok()?;
        let it = s["last_iteration"].clone();
        (c == 200 && it["classes"].as_array().is_some_and(|a| a.len() == classes)).then_some(it)
    })
    .unwrap_or_else(|| panic!("no iteration with SLIs of {classes} classes from http://{addr}"))
}

/// A minimal HTTP/1.1 request over loopback; returns (status, body). Panics if it cannot connect.
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    try_http(addr, method, path, headers, body).unwrap_or_else(|| panic!("{method} http://{addr}{path} failed"))
}

/// Like [`http`], `None` when the connection or the exchange fails.
pub fn try_http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    let body = if text.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(&body)
    } else {
        body
    };
    Some((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Polls `f` every 200 ms until it returns Some, up to `timeout`.
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The state file as JSON, if it exists and parses.
pub fn read_state(state_dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(state_dir.join("state.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// A free loopback port (bound and released; the caller uses it right away).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A helper thread that runs until told to stop: `Background::spawn(|stop| …)` gives the body a
/// flag to poll; dropping the guard sets it and joins the thread (also when an assertion fails).
pub struct Background {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub fn spawn(body: impl FnOnce(&std::sync::atomic::AtomicBool) + Send + 'static) -> Background {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || body(&flag));
        Background {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Unix time now, in ns.
pub fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as u64
}

/// `n` finished client-side records of connections from hosts 198.18.{1,2,3}.2 (round robin,
/// ports from `port0`) to 198.18.100.2:5001 in classes AF11, AF21, AF31 (round robin), each
/// `spacing` ns after the last from `start`, open 2 ms, of `size(k)` bytes.
pub fn client_records(
    n: usize,
    port0: u16,
    start: u64,
    spacing: u64,
    size: impl Fn(usize) -> u64,
) -> Vec<workfeed::FlowRecord> {
    use polyphony_spec::{Bytes, Dscp, Nanos};
    use std::net::{Ipv4Addr, SocketAddrV4};
    (0..n)
        .map(|k| workfeed::FlowRecord {
            local: SocketAddrV4::new(Ipv4Addr::new(198, 18, (k % 3) as u8 + 1, 2), port0 + k as u16),
            remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 5001),
            dscp: Dscp::new([10u8, 18, 26][k % 3]).expect("valid DSCP"),
            active: true,
            fin_sent: true,
            peer_fin: true,
            bytes_sent: Bytes(size(k)),
            bytes_received: Bytes(1),
            srtt: Nanos(30_000),
            retrans: 0,
            start: Nanos(start + k as u64 * spacing),
            end: Nanos(start + k as u64 * spacing + 2_000_000),
        })
        .collect()
}
