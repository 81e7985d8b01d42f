//! Workfeed's IPFIX export read by a real collector: nfcapd (Debian's `nfdump` package) listens
//! on loopback, the encoder's messages of a known trace are sent to it over UDP, and `nfdump`
//! must read back every flow with its 5-tuple, bytes and DSCP.
//!
//! Needs the `nfcapd` and `nfdump` binaries (`scripts/test.sh` installs them). Without them the
//! test says so and passes, except under CI (`CI` set), where a missing collector is a failure.

use polyphony_spec::{Bytes, Dscp, Nanos};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use workfeed::ipfix::{IpfixEncoder, IpfixExporterConfig};
use workfeed::{FlowRecord, KeepProbability};

fn binary(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The known trace: 400 flows over four classes, distinct 5-tuples, sizes over five decades.
fn trace() -> Vec<FlowRecord> {
    let t0 = 1_764_000_000_000_000_000u64;
    (0..400u32)
        .map(|i| {
            let dscp = [0u8, 10, 18, 26][i as usize % 4];
            FlowRecord {
                local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1 + (i % 7) as u8, 2), 30_000 + i as u16),
                remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2 + (i % 3) as u8), 5001 + (i % 5) as u16),
                dscp: Dscp::new(dscp).expect("valid DSCP"),
                active: true,
                fin_sent: true,
                peer_fin: true,
                bytes_sent: Bytes(100 + u64::from(i).pow(3) * 13),
                bytes_received: Bytes(1),
                srtt: Nanos(25_000),
                retrans: 0,
                start: Nanos(t0 + u64::from(i) * 3_000_000),
                end: Nanos(t0 + u64::from(i) * 3_000_000 + 1_500_000),
            }
        })
        .collect()
}

struct Collector {
    child: Child,
    dir: tempfile::TempDir,
}

impl Drop for Collector {
    fn drop(&mut self) {
        // Only the process this test started, by its id.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_udp_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind an ephemeral UDP port");
    s.local_addr().expect("local address").port()
}

fn start_nfcapd(nfcapd: &Path, port: u16) -> Collector {
    let dir = tempfile::tempdir().expect("temporary directory");
    let child = Command::new(nfcapd)
        .args(["-b", "127.0.0.1", "-p", &port.to_string(), "-t", "3600", "-w"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nfcapd");
    let c = Collector { child, dir };
    // nfcapd opens its current file once it listens.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !files(c.dir.path()).iter().any(|f| f.contains("current")) {
        assert!(Instant::now() < deadline, "nfcapd did not start within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    c
}

fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn ipfix_export_is_read_back_by_nfdump() {
    let (Some(nfcapd), Some(nfdump)) = (binary("nfcapd"), binary("nfdump")) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "nfcapd/nfdump missing under CI: scripts/test.sh installs Debian's nfdump"
        );
        eprintln!("SKIPPED: nfcapd/nfdump not installed (apt-get install nfdump)");
        return;
    };
    let port = free_udp_port();
    let mut collector = start_nfcapd(&nfcapd, port);

    let flows = trace();
    let mut enc = IpfixEncoder::new(IpfixExporterConfig::new(42)).expect("default exporter settings");
    let tagged: Vec<_> = flows.iter().map(|f| (*f, KeepProbability::ALL)).collect();
    let msgs = enc.encode(&tagged, Nanos(1_764_000_010_000_000_000));
    assert!(msgs.len() > 10, "the trace spans many messages ({})", msgs.len());
    let sock = UdpSocket::bind("127.0.0.1:0").expect("sender socket");
    for m in &msgs {
        sock.send_to(m, ("127.0.0.1", port)).expect("send to nfcapd");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(500));

    // SIGTERM makes nfcapd flush and close its file.
    let pid = collector.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill -TERM");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while collector.child.try_wait().expect("wait for nfcapd").is_none() {
        assert!(Instant::now() < deadline, "nfcapd did not stop within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = Command::new(nfdump)
        .arg("-R")
        .arg(collector.dir.path())
        .args(["-N", "-q", "-o", "fmt:%sa,%da,%sp,%dp,%pr,%byt,%stos"])
        .output()
        .expect("run nfdump");
    assert!(out.status.success(), "nfdump: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let got: BTreeSet<(String, String, u16, u16, u64, u8)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split(',').map(str::trim).collect();
            assert_eq!(c.len(), 7, "unexpected nfdump line {l:?}");
            assert!(c[4] == "6" || c[4] == "TCP", "protocol in {l:?}");
            (
                c[0].to_string(),
                c[1].to_string(),
                c[2].parse().expect("source port"),
                c[3].parse().expect("destination port"),
                c[5].parse().expect("bytes"),
                c[6].parse().expect("tos"),
            )
        })
        .collect();
    let want: BTreeSet<_> = flows
        .iter()
        .map(|f| {
            (
                f.local.ip().to_string(),
                f.remote.ip().to_string(),
                f.local.port(),
                f.remote.port(),
                f.bytes_sent.0,
                f.dscp.tos(),
            )
        })
        .collect();
    assert_eq!(
        got.len(),
        text.lines().filter(|l| !l.trim().is_empty()).count(),
        "duplicate flows"
    );
    assert_eq!(got, want, "nfdump output:\n{text}");
}
