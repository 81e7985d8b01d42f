//! Capture overhead: a TCP flow generator's throughput and CPU with and without Workfeed
//! attached, side by side in one run.
//!
//! Needs root (prints "skipped: needs root" otherwise). Creates two namespaces `ppw-b<pid>a` and
//! `ppw-b<pid>b` joined by a veth pair (198.18.250.1/30 ↔ .2), a sink in `b` and client threads
//! in `a` that each open a connection, send `size` bytes, read the sink's 1-byte ack and close —
//! back to back. Phases alternate off / on / off / on … (each `PHASE` long, 3 pairs), where "on"
//! means the whole capture path runs in this process: the probe (filtered to the two
//! namespaces), the agent reading the ring buffer, and an aggregator on loopback. Per phase:
//! flows/s, Mbit/s and this process's CPU time (user + system, which includes the veth/TCP work
//! done in its threads' syscalls) per 1000 flows. Everything is torn down by a guard, also on
//! panic. Bounded: 6 phases × 3 s.
//!
//! Run: `cargo bench -p workfeed --bench capture_overhead` (optional argument: flow size in
//! bytes, default 10000).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workfeed::agent::{Agent, AgentConfig};
use workfeed::aggregator::{Aggregator, AggregatorConfig};
use workfeed::loader::ProbeFilter;
use workfeed::metrics::{AgentMetrics, AggregatorMetrics};

const PHASE: Duration = Duration::from_secs(3);
const CLIENTS: usize = 4;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Netns {
    a: String,
    b: String,
}

impl Netns {
    fn create() -> Netns {
        let id = std::process::id();
        let n = Netns {
            a: format!("ppw-b{id}a"),
            b: format!("ppw-b{id}b"),
        };
        ip(&["netns", "add", &n.a]);
        ip(&["netns", "add", &n.b]);
        let (va, vb) = (format!("ppwb{id}a"), format!("ppwb{id}b"));
        let (va, vb) = (&va[..va.len().min(15)], &vb[..vb.len().min(15)]);
        ip(&[
            "link", "add", va, "netns", &n.a, "type", "veth", "peer", "name", vb, "netns", &n.b,
        ]);
        for (ns, dev, addr) in [(&n.a, va, "198.18.250.1/30"), (&n.b, vb, "198.18.250.2/30")] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        // Back-to-back short flows leave the client's ports in TIME_WAIT: allow their reuse so
        // the generator's rate does not decay as the port range fills.
        for kv in ["net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000"] {
            ip(&["netns", "exec", &n.a, "sysctl", "-q", "-w", kv]);
        }
        n
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Moves the calling thread into namespace `name`.
fn enter(name: &str) {
    let f = std::fs::File::open(format!("/run/netns/{name}")).expect("open netns");
    // SAFETY: a valid namespace fd; affects only the calling thread.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the provided struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root");
        return;
    }
    let size: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let ns = Netns::create();
    let server: SocketAddr = "198.18.250.2:7200".parse().expect("addr");
    let stop = Arc::new(AtomicBool::new(false));
    let flows = Arc::new(AtomicU64::new(0));

    let sink = {
        let (b, stop) = (ns.b.clone(), stop.clone());
        std::thread::spawn(move || {
            enter(&b);
            let l = TcpListener::bind(server).expect("bind sink");
            l.set_nonblocking(true).expect("nonblocking");
            while !stop.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.set_nonblocking(false);
                        std::thread::spawn(move || {
                            let mut buf = [0u8; 65536];
                            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                            let _ = s.write_all(&[1]);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_micros(200)),
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (a, stop, flows) = (ns.a.clone(), stop.clone(), flows.clone());
            std::thread::spawn(move || {
                enter(&a);
                let data = vec![0u8; size];
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect_timeout(&server, Duration::from_secs(1)) else {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    let _ = s.set_nodelay(true);
                    if s.write_all(&data).is_err() || s.shutdown(std::net::Shutdown::Write).is_err() {
                        continue;
                    }
                    let mut ack = [0u8; 1];
                    if s.read_exact(&mut ack).is_ok() {
                        flows.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let filter = ProbeFilter {
        server_ports: vec![],
        netns_inodes: [&ns.a, &ns.b]
            .iter()
            .map(|n| ProbeFilter::netns_inode(std::path::Path::new(&format!("/run/netns/{n}"))).expect("inode"))
            .collect(),
    };
    println!("flow generator: {CLIENTS} clients, {size}-byte flows, veth between two namespaces; {PHASE:?} phases");
    println!(
        "{:>8} {:>10} {:>10} {:>12} {:>12}",
        "capture", "flows/s", "Mbit/s", "CPU s/phase", "CPU ms/1k fl"
    );
    let mut sums = [(0.0, 0.0, 0u32); 2];
    for phase in 0..6 {
        let on = phase % 2 == 1;
        let capture = on.then(|| {
            rt.block_on(async {
                let agg = Aggregator::bind(
                    AggregatorConfig::new("127.0.0.1:0".parse().expect("addr")),
                    AggregatorMetrics::default(),
                )
                .await
                .expect("aggregator");
                let cfg = AgentConfig::new(1, agg.local_addr().expect("addr"));
                let metrics = AgentMetrics::default();
                let agent = Agent::start(cfg, &filter, metrics.clone()).await.expect("probe load");
                let (tx, rx) = tokio::sync::watch::channel(false);
                let (mut r1, mut r2) = (rx.clone(), rx);
                let a2 = agg.clone();
                let h1 = tokio::spawn(async move {
                    a2.serve(async move {
                        let _ = r1.wait_for(|s| *s).await;
                    })
                    .await
                });
                let h2 = tokio::spawn(async move {
                    agent
                        .run(async move {
                            let _ = r2.wait_for(|s| *s).await;
                        })
                        .await
                });
                (agg, metrics, tx, h1, h2)
            })
        });
        let (f0, c0, t0) = (flows.load(Ordering::Relaxed), cpu_seconds(), Instant::now());
        std::thread::sleep(PHASE);
        let (f1, c1, el) = (flows.load(Ordering::Relaxed), cpu_seconds(), t0.elapsed().as_secs_f64());
        let captured = capture.map(|(agg, metrics, tx, h1, h2)| {
            let _ = tx.send(true);
            rt.block_on(async {
                let _ = h2.await;
                let _ = h1.await;
            });
            (agg.metrics().records_accepted.get(), metrics.probe_counters())
        });
        let n = (f1 - f0) as f64;
        let (fps, mbps, cpu) = (n / el, n * size as f64 * 8.0 / el / 1e6, c1 - c0);
        println!(
            "{:>8} {:>10.0} {:>10.1} {:>12.2} {:>12.1}{}",
            if on { "on" } else { "off" },
            fps,
            mbps,
            cpu,
            cpu * 1e6 / n.max(1.0),
            captured
                .as_ref()
                .map_or(String::new(), |(c, _)| format!("   ({c} records captured)"))
        );
        if let Some((_, probe)) = &captured {
            // The counters that tell whether anything was lost (and what the standbys covered).
            let shown = [
                "opened",
                "emitted",
                "untracked_close",
                "standby_events",
                "missed_events",
            ];
            let line: Vec<String> = probe
                .iter()
                .filter(|(name, _)| shown.contains(name))
                .map(|(name, v)| format!("{name} {v}"))
                .collect();
            println!("{:>8} probe: {}", "", line.join(", "));
        }
        let s = &mut sums[usize::from(on)];
        s.0 += fps;
        s.1 += cpu * 1e6 / n.max(1.0);
        s.2 += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        let _ = c.join();
    }
    let _ = sink.join();
    let mean = |i: usize| (sums[i].0 / f64::from(sums[i].2), sums[i].1 / f64::from(sums[i].2));
    let (off, on) = (mean(0), mean(1));
    println!(
        "mean: off {:.0} flows/s, {:.1} CPU ms/1k flows; on {:.0} flows/s ({:+.1} %), {:.1} CPU ms/1k flows ({:+.1} %)",
        off.0,
        off.1,
        on.0,
        100.0 * (on.0 - off.0) / off.0,
        on.1,
        100.0 * (on.1 - off.1) / off.1
    );
    drop(ns);
}
