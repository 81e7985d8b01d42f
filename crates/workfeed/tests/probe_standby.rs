//! The probe's standby programs in the kernel (needs root; prints "skipped: needs root"
//! otherwise). The kernel skips a raw tracepoint program that is already running on the CPU; each
//! hook's standby takes exactly the events of such moments, told by the main program's per-CPU
//! running flag. That moment cannot be produced on demand, so this test attaches the two standbys
//! alone and sets the flags by hand:
//!
//! - flags clear (no main program running): a loopback connection leaves no record and no
//!   counter moves — the standby returns at once;
//! - flags set on every CPU (as if each event had interrupted the main program): the standbys
//!   record the connection's two sockets exactly, as the main program would, and count every event
//!   they handled in `standby_events`;
//! - flags clear again: nothing more.
//!
//! The programs are detached when the `Ebpf` is dropped (nothing is pinned), also when an
//! assertion fails. A port filter (this test's own listener) keeps other tests' connections out
//! of the records.

use aya::maps::{Array, HashMap as BpfHashMap, PerCpuArray, PerCpuValues, RingBuf};
use aya::programs::RawTracePoint;
use aya::Ebpf;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use workfeed_ebpf::{names, RawRecord, Stat, CFG_PORTS, FLAG_ACTIVE, HOOK_DESTROY, HOOK_SET_STATE, RECORD_SIZE};

/// One connection: the client sends `up` bytes, the server answers `down` bytes.
fn exchange(server: &TcpListener, up: usize, down: usize) {
    let addr = server.local_addr().expect("addr");
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            let (mut s, _) = server.accept().expect("accept");
            let mut got = Vec::new();
            s.read_to_end(&mut got).expect("server read");
            s.write_all(&vec![7u8; down]).expect("server write");
            got.len()
        });
        let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect");
        c.write_all(&vec![1u8; up]).expect("client write");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let mut back = Vec::new();
        c.read_to_end(&mut back).expect("client read");
        assert_eq!(back.len(), down);
        assert_eq!(h.join().expect("server thread"), up);
    });
}

fn set_running(ebpf: &mut Ebpf, on: bool) {
    let ncpus = aya::util::nr_cpus().expect("number of CPUs");
    let m = ebpf.map_mut(names::RUNNING_MAP).expect("running map");
    let mut running: PerCpuArray<_, u32> = PerCpuArray::try_from(m).expect("per-CPU array");
    for hook in [HOOK_SET_STATE, HOOK_DESTROY] {
        let values = PerCpuValues::try_from(vec![u32::from(on); ncpus]).expect("values");
        running.set(hook, values, 0).expect("set running flags");
    }
}

fn stats(ebpf: &Ebpf) -> HashMap<Stat, u64> {
    let m = ebpf.map(names::STATS_MAP).expect("stats map");
    let arr: PerCpuArray<_, u64> = PerCpuArray::try_from(m).expect("per-CPU array");
    Stat::ALL
        .iter()
        .map(|&s| (s, arr.get(&(s as u32), 0).expect("stat").iter().sum()))
        .collect()
}

/// Reads records until `want` arrived or 2 s passed, then waits 200 ms for any extra one.
fn drain(rb: &mut RingBuf<aya::maps::MapData>, want: usize) -> Vec<RawRecord> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut extra_until = None;
    loop {
        while let Some(item) = rb.next() {
            assert_eq!(item.len(), RECORD_SIZE);
            out.push(RawRecord::from_ne_bytes(&item).expect("record"));
        }
        let now = Instant::now();
        if out.len() >= want && extra_until.is_none() {
            extra_until = Some(now + Duration::from_millis(200));
        }
        if extra_until.is_some_and(|t| now >= t) || now >= deadline {
            return out;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn standby_programs_act_only_while_the_main_program_is_marked_running() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root");
        return;
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let mut ebpf = Ebpf::load(workfeed_ebpf::object().expect("probe object")).expect("load object");
    {
        let m = ebpf.map_mut(names::PORTS_MAP).expect("ports map");
        let mut ports: BpfHashMap<_, u16, u8> = BpfHashMap::try_from(m).expect("hash");
        ports.insert(port, 1, 0).expect("port filter");
        let m = ebpf.map_mut(names::CONFIG_MAP).expect("config map");
        let mut cfg: Array<_, u32> = Array::try_from(m).expect("array");
        cfg.set(0, CFG_PORTS, 0).expect("config");
    }
    for (program, tracepoint) in [
        (names::DESTROY_STANDBY_PROGRAM, names::DESTROY_TRACEPOINT_NAME),
        (names::STANDBY_PROGRAM, names::TRACEPOINT_NAME),
    ] {
        let prog: &mut RawTracePoint = ebpf
            .program_mut(program)
            .expect("standby program")
            .try_into()
            .expect("raw tracepoint");
        prog.load().expect("verifier accepts the standby");
        prog.attach(tracepoint).expect("attach");
    }
    let mut rb = RingBuf::try_from(ebpf.take_map(names::RECORDS_MAP).expect("ring buffer")).expect("ring buffer");

    // Flags clear: the standbys return before touching anything.
    exchange(&listener, 5_000, 300);
    let recs = drain(&mut rb, 0);
    let s = stats(&ebpf);
    assert!(
        recs.is_empty(),
        "standby recorded with its main program not running: {recs:#?}"
    );
    assert!(
        s.values().all(|&v| v == 0),
        "standby acted with its main program not running: {s:?}"
    );

    // Flags set everywhere: every event is one the main program "was skipped for".
    set_running(&mut ebpf, true);
    exchange(&listener, 123_456, 789);
    // The server socket's last ACK and both destructions may land a little after the exchange.
    std::thread::sleep(Duration::from_millis(200));
    set_running(&mut ebpf, false);
    let recs = drain(&mut rb, 2);
    let s = stats(&ebpf);
    assert_eq!(recs.len(), 2, "one record per socket: {recs:#?} {s:?}");
    let client = recs.iter().find(|r| r.flags & FLAG_ACTIVE != 0).expect("client record");
    let server = recs.iter().find(|r| r.flags & FLAG_ACTIVE == 0).expect("server record");
    assert_eq!((client.dport, server.sport), (port, port));
    assert_eq!((client.bytes_acked, client.bytes_received), (123_456, 789));
    assert_eq!((server.bytes_acked, server.bytes_received), (789, 123_456));
    assert!(client.start_ns <= server.start_ns && client.start_ns < client.end_ns);
    // Open, established, FIN states and close of two sockets: at least 8 state changes.
    assert!(s[&Stat::Events] >= 8, "{s:?}");
    assert!(
        s[&Stat::StandbyEvents] >= s[&Stat::Events],
        "every event handled was counted as the standby's: {s:?}"
    );
    assert_eq!((s[&Stat::Emitted], s[&Stat::UntrackedClose]), (2, 0), "{s:?}");

    // Flags clear again: nothing more.
    exchange(&listener, 1_000, 10);
    let recs = drain(&mut rb, 0);
    assert!(
        recs.is_empty(),
        "standby recorded after the flags were cleared: {recs:#?}"
    );
    assert_eq!(stats(&ebpf)[&Stat::Emitted], 2);
    drop(ebpf);
}
