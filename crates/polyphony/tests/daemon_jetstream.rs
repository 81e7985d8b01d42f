//! `[workload] source = "nats"`: agents publish Workfeed datagrams to a real NATS JetStream
//! server (Debian's `nats-server -js`, started here on loopback with a user and password), and
//! the daemon consumes them through its durable consumer. Across a `kill -9` of the daemon and a
//! restart of the NATS server in the middle of the stream, the daemon's window must end up
//! holding every published record exactly once.
//!
//! Needs `/usr/sbin/nats-server` (`scripts/test.sh` installs Debian's nats-server). Without it
//! the test says so and passes, except under CI (`CI` set), where that is a failure.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use workfeed::agent::{AgentConfig, Sender};
use workfeed::jetstream::{NatsAuth, NatsTarget};
use workfeed::metrics::AgentMetrics;
use workfeed::FlowRecord;

const USER: &str = "workfeed";
const PASSWORD: &str = "jetstream-test-password-0123";

fn nats_server() -> Option<PathBuf> {
    ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn start_nats(bin: &Path, port: u16, store: &Path) -> ChildGuard {
    let mut cmd = Command::new(bin);
    cmd.args([
        "-js",
        "-a",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--user",
        USER,
        "--pass",
        PASSWORD,
        "-sd",
    ])
    .arg(store);
    let g = ChildGuard::spawn(&mut cmd);
    g.wait_line("Server is ready", Duration::from_secs(30))
        .expect("nats-server did not become ready");
    g
}

/// `n` finished client records from port `port0` on, three classes.
fn flows(n: usize, port0: u16, start: u64) -> Vec<FlowRecord> {
    client_records(n, port0, start, 10_000_000, |k| {
        5_000 + u64::from(port0) * 7 + k as u64 * 131
    })
}

/// An agent's sender publishing only to JetStream (no UDP aggregator), subject `workfeed.rack1`.
async fn publisher(url: &str) -> Sender {
    let mut t = NatsTarget::new(url);
    t.auth = NatsAuth::UserPassword {
        user: USER.into(),
        password: PASSWORD.into(),
    };
    let mut c = AgentConfig::new(11, "127.0.0.1:9".parse().unwrap());
    c.aggregator = None;
    c.batch_records = 8;
    c.jetstream = Some((t, "rack1".into()));
    Sender::new(c, AgentMetrics::default())
        .await
        .expect("connect the publisher")
}

async fn publish(s: &mut Sender, records: &[FlowRecord]) {
    for r in records {
        s.push(*r).await;
    }
    s.flush().await;
}

fn sizes(addr: &str) -> Option<Vec<u64>> {
    let (code, body) = http(addr, "GET", "/v1/workload", &[], "");
    let w: Value = serde_json::from_str(&body).ok()?;
    (code == 200).then_some(())?;
    let mut v: Vec<u64> = w["workload"]["flows"]
        .as_array()?
        .iter()
        .map(|f| f["size"].as_u64().unwrap())
        .collect();
    v.sort_unstable();
    Some(v)
}

fn start(cfg: &Path) -> (ChildGuard, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["--log", "info", "daemon", "--config"]).arg(cfg);
    let g = ChildGuard::spawn(&mut cmd);
    let line = g
        .wait_line("/metrics on http://", Duration::from_secs(60))
        .expect("the daemon did not report its HTTP address");
    let addr = address_after(&line, "http://");
    (g, addr)
}

#[test]
fn jetstream_window_holds_every_record_once_across_daemon_kill_and_server_restart() {
    let Some(bin) = nats_server() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "nats-server missing under CI: scripts/test.sh installs Debian's nats-server"
        );
        eprintln!("SKIPPED: nats-server not installed (apt-get install nats-server)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("jetstream");
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let mut server = start_nats(&bin, port, &store);

    let password_file = dir.path().join("nats.password");
    std::fs::write(&password_file, format!("{PASSWORD}\n")).unwrap();
    let state = dir.path().join("state");
    let key_file = dir.path().join("unused.key");
    std::fs::write(&key_file, "unused-key-0123456789\n").unwrap();
    let base = workfeed_config(&state, &key_file, 300.0);
    let start_ws = base.find("[workload]").unwrap();
    let end_ws = base[start_ws..].find("\n[http]").unwrap() + start_ws;
    let cfg_text = format!(
        "{}[workload]\nsource = \"nats\"\nurl = \"{url}\"\nconsumer = \"daemon-test\"\nack_wait_s = 2.0\nwindow_s = 300.0\n\
         user = \"{USER}\"\npassword_file = \"{}\"\n\
         hosts = {{ \"198.18.1.2\" = 0, \"198.18.2.2\" = 1, \"198.18.3.2\" = 2, \"198.18.100.2\" = 3 }}\n{}",
        &base[..start_ws],
        password_file.display(),
        &base[end_ws..]
    );
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, cfg_text).unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let t0 = unix_now_ns() - 120_000_000_000;
    let a = flows(60, 20_000, t0);
    let b = flows(45, 21_000, t0 + 10_000_000_000);
    let c = flows(30, 22_000, t0 + 20_000_000_000);
    let mut sender = rt.block_on(publisher(&url));

    // 1. The daemon consumes the first part.
    rt.block_on(publish(&mut sender, &a));
    let (mut daemon, addr) = start(&cfg);
    let want_a: Vec<u64> = {
        let mut v: Vec<u64> = a.iter().map(|r| r.bytes_sent.0).collect();
        v.sort_unstable();
        v
    };
    poll(Duration::from_secs(60), || sizes(&addr).filter(|s| *s == want_a))
        .unwrap_or_else(|| panic!("the daemon's window never held the first part: {:?}", sizes(&addr)));

    // 2. kill -9 the daemon; the second part is published while it is down.
    daemon.signal(libc::SIGKILL);
    daemon.wait(Duration::from_secs(10));
    rt.block_on(publish(&mut sender, &b));

    // 3. The server restarts in the middle of the third part: half before, half while it is
    // down (queued by the publisher), and the publisher catches up after it is back.
    rt.block_on(publish(&mut sender, &c[..15]));
    server.signal(libc::SIGTERM);
    server.wait(Duration::from_secs(20));
    rt.block_on(publish(&mut sender, &c[15..]));
    server = start_nats(&bin, port, &store);
    rt.block_on(async {
        // The client reconnects by itself; each flush publishes what is still queued.
        for _ in 0..30 {
            sender.flush().await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });

    // 4. The daemon restarts from its state directory: journal plus redelivery.
    let (_daemon, addr) = start(&cfg);
    let mut want: Vec<u64> = a.iter().chain(&b).chain(&c).map(|r| r.bytes_sent.0).collect();
    want.sort_unstable();
    let got = poll(Duration::from_secs(90), || {
        sizes(&addr).filter(|s| s.len() >= want.len())
    });
    let got = got.unwrap_or_else(|| panic!("the window never held all {} records: {:?}", want.len(), sizes(&addr)));
    // Give redeliveries (ack_wait 2 s) time to arrive and be dropped as duplicates.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        sizes(&addr),
        Some(want.clone()),
        "not every record exactly once (first full view {got:?})"
    );
    drop(server);
}
