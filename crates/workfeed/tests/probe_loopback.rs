//! The probe on real sockets (needs root; prints "skipped: needs root" otherwise): loopback
//! connections to a filtered server port are recorded once per socket with exact payload sizes,
//! the DSCP and the client/server roles; connections to another port are filtered out and counted,
//! and their closes are not counted as lost records; changing the filter at run time takes effect.
//! The probe is detached when dropped (nothing is pinned), also when an assertion fails.
//!
//! Other engineers' tests may open connections at the same time; the port filter (ports of this
//! test's own listeners) keeps them out.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;
use workfeed::loader::{Probe, ProbeFilter};
use workfeed_ebpf::{RawRecord, Stat};

/// One connection: the client sends `up` bytes with TOS `tos`, the server answers `down` bytes.
fn exchange(server: &TcpListener, up: usize, down: usize, tos: u8) {
    let addr = server.local_addr().unwrap();
    let t = std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            let (mut s, _) = server.accept().unwrap();
            let mut buf = vec![0u8; 65536];
            let mut got = 0;
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got += n;
            }
            s.write_all(&vec![7u8; down]).unwrap();
            got
        });
        let c = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        let v = libc::c_int::from(tos);
        // SAFETY: valid fd and option value.
        unsafe {
            libc::setsockopt(
                c.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_TOS,
                (&v as *const libc::c_int).cast(),
                4,
            )
        };
        let mut c = c;
        c.write_all(&vec![1u8; up]).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), down);
        h.join().unwrap()
    });
    assert_eq!(t, up);
}

fn collect(reader: &mut workfeed::loader::RecordReader, rt: &tokio::runtime::Runtime, want: usize) -> Vec<RawRecord> {
    let mut out = Vec::new();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while out.len() < want && tokio::time::Instant::now() < deadline {
            if reader.try_read(&mut out, 1024).records == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        // Anything beyond `want` would be a duplicate or a leak through the filter.
        tokio::time::sleep(Duration::from_millis(200)).await;
        reader.try_read(&mut out, 1024);
    });
    out
}

#[test]
fn loopback_connections_are_recorded_exactly_and_filters_apply() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root");
        return;
    }
    let wanted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let other = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = wanted.local_addr().unwrap().port();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _enter = rt.enter();
    let mut probe = Probe::load(&ProbeFilter {
        server_ports: vec![port],
        netns_inodes: vec![],
    })
    .expect("probe loads");
    let mut reader = probe.take_records().unwrap().unwrap();

    exchange(&wanted, 123_456, 789, 26 << 2);
    exchange(&other, 1000, 10, 0);
    let recs = collect(&mut reader, &rt, 2);
    assert_eq!(recs.len(), 2, "{recs:#?}");
    let client = recs.iter().find(|r| r.flags & workfeed_ebpf::FLAG_ACTIVE != 0).unwrap();
    let server = recs.iter().find(|r| r.flags & workfeed_ebpf::FLAG_ACTIVE == 0).unwrap();
    let stats: std::collections::HashMap<Stat, u64> = probe.stats().unwrap().into_iter().collect();
    assert_eq!((client.dport, server.sport), (port, port), "{recs:#?} {stats:?}");
    assert_eq!((client.bytes_acked, client.bytes_received), (123_456, 789));
    assert_eq!((server.bytes_acked, server.bytes_received), (789, 123_456));
    assert_eq!(client.dscp, 26);
    assert!(client.end_ns >= client.start_ns && client.start_ns <= server.start_ns);
    assert!(
        stats[&Stat::Filtered] >= 2,
        "the other port's two sockets were filtered: {stats:?}"
    );
    assert!(
        stats[&Stat::Emitted] >= 2 && stats[&Stat::RingbufFull] == 0,
        "{stats:?}"
    );
    assert_eq!(
        (stats[&Stat::UntrackedClose], stats[&Stat::OpenFailed]),
        (0, 0),
        "the filtered sockets' closes are not counted as lost records: {stats:?}"
    );

    // Switch the filter to the other port: now only its connections are recorded.
    let other_port = other.local_addr().unwrap().port();
    probe
        .set_filter(&ProbeFilter {
            server_ports: vec![other_port],
            netns_inodes: vec![],
        })
        .unwrap();
    exchange(&wanted, 10, 1, 0);
    exchange(&other, 4321, 0, 0);
    let recs = collect(&mut reader, &rt, 2);
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert!(recs.iter().all(|r| r.dport == other_port || r.sport == other_port));
    let sent: u64 = recs.iter().map(|r| r.bytes_acked).sum();
    assert_eq!(sent, 4321);
    drop(probe);
}
