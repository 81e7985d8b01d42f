//! Root test of per-class congestion control through the iproute actuator (fixture
//! `actuators_fixture`, prefix `ppa9`): after an apply that gives AF21 an algorithm other than
//! the senders' default (e.g. `bbr` where the default is CUBIC), a new AF21 connection runs it
//! while a new AF11 connection keeps the default, as `ss -ti` shows on the live sockets; a failure injected halfway through the next apply leaves every
//! route as it was, and a rollback returns AF21's new connections to the default.

mod actuators_fixture;

use actuators_fixture::{initial_config, must, root_or_skip, Bed, Fault, FaultRunner};
use polyphony_actuator::{Actuator, Local};
use polyphony_actuator_iproute::iproute_actuator_with;
use polyphony_spec::{CongestionControl, Dscp};
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::Duration;

const PORT: u16 = 5201;

/// A TCP connection from the current namespace to the receiver carrying `mark` (SO_MARK, so
/// the sender's `fwmark 0x100+d` rule picks class d's routing table).
fn connect_marked(mark: u32) -> TcpStream {
    // SAFETY: plain socket calls on a descriptor this function owns until it hands it to
    // TcpStream, which then owns and closes it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let rc = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_MARK,
            (&mark as *const u32).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "SO_MARK: {}", std::io::Error::last_os_error());
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PORT.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(Ipv4Addr::new(198, 18, 100, 2)).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        stream
    }
}

/// The congestion-control algorithm `ss -ti` reports for the sender's connection from `local`.
fn algorithm_of(ns: &str, local: SocketAddrV4) -> String {
    let out = must(&["ip", "netns", "exec", ns, "ss", "-tin", "state", "established"]);
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        if l.split_whitespace().any(|w| w == local.to_string()) {
            let info = lines.next().unwrap_or("");
            for alg in ["bbr", "cubic", "reno", "dctcp"] {
                if info.split_whitespace().any(|w| w == alg) {
                    return alg.into();
                }
            }
            panic!("no algorithm in ss's line for {local}: {info}");
        }
    }
    panic!("{local} not in ss -tin:\n{out}");
}

/// Opens one connection of class `dscp` from sender h0 (on a thread inside its namespace) and
/// returns the algorithm it runs; the connection is closed afterwards.
fn new_connection_runs(bed: &Bed, dscp: Dscp) -> String {
    let h0 = bed.ns("h0");
    let ns = h0.clone();
    std::thread::spawn(move || {
        polyphony_netns::enter(&ns).expect("enter the sender's namespace");
        let s = connect_marked(0x100 + dscp.value() as u32);
        let std::net::SocketAddr::V4(local) = s.local_addr().expect("local address") else {
            panic!("not IPv4")
        };
        algorithm_of(&ns, local)
    })
    .join()
    .expect("client thread")
}

#[test]
fn per_class_congestion_control_reaches_new_connections_of_that_class_only_and_rolls_back() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppa9", 2);
    let h0 = bed.ns("h0");
    let sysctl = |key: &str| must(&["ip", "netns", "exec", &h0, "cat", &format!("/proc/sys/net/ipv4/{key}")]);
    let default = sysctl("tcp_congestion_control").trim().to_string();
    let avail = sysctl("tcp_available_congestion_control");
    let Some(other) = ["bbr", "cubic", "reno"]
        .into_iter()
        .find(|a| *a != default && avail.split_whitespace().any(|x| x == *a))
    else {
        println!("skipped: one congestion-control algorithm available ({avail:?})");
        return;
    };
    println!("senders' default {default}, AF21 gets {other}");
    // The receiver answers the senders through the switch.
    let rx = bed.ns("rx");
    must(&["ip", "-n", &rx, "route", "add", "198.18.0.0/16", "via", "198.18.100.1"]);
    // It accepts the test's four connections, each read until its sender closes (bounded).
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        polyphony_netns::enter(&rx).expect("enter the receiver's namespace");
        let l = TcpListener::bind((Ipv4Addr::new(198, 18, 100, 2), PORT)).expect("listen");
        bound_tx.send(()).expect("signal");
        for _ in 0..4 {
            let Ok((mut s, _)) = l.accept() else { break };
            s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    bound_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the receiver listens");

    let mut cfg = bed.iproute_config();
    cfg.congestion_controls = vec![CongestionControl::new(other).expect("name")];
    // Halfway through the first apply (after both senders' AF21 routes), the first sender's
    // AF31 route change is refused; every other command runs for real.
    let runner = Arc::new(FaultRunner::new(
        move |c| c.argv.contains(&h0) && c.argv.iter().any(|a| a == "126"),
        Fault::Refuse,
    ));
    let mut ip = iproute_actuator_with(cfg, Arc::new(Local), runner.clone()).expect("iproute");
    assert!(ip.owns().congestion_control);
    let initial = initial_config();
    let mut target = initial.clone();
    target.classes[1].congestion_control = Some(CongestionControl::new(other).expect("name"));
    target.classes[2].init_cwnd = polyphony_spec::Packets(20);
    let before = bed.snapshot();

    let plan = ip.plan_live(&target).expect("plan");
    println!("{plan}");
    assert!(plan.to_string().contains(&format!("congctl {other}")), "{plan}");
    let err = ip
        .apply(&plan)
        .expect_err("the refused route change must fail the apply");
    println!("{err}");
    assert!(runner.fired());
    assert_eq!(bed.snapshot(), before, "a failed apply left routes changed");
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);

    ip.apply(&plan).expect("apply");
    let back = ip.read_back().expect("read back").overlay(&initial);
    assert_eq!(back.classes[1].congestion_control, target.classes[1].congestion_control);
    assert_eq!(back.classes[0].congestion_control, None);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), other);
    assert_eq!(new_connection_runs(&bed, Dscp::AF11), default);

    ip.rollback().expect("rollback");
    assert_eq!(bed.snapshot(), before);
    assert_eq!(new_connection_runs(&bed, Dscp::AF21), default);
    server.join().expect("server thread");
}
