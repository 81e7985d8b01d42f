//! Live TCP connections of one class through the fixture: a bounded receiver in the receiver
//! namespace, marked connections from a sender namespace, and the algorithm `ss -ti` reports
//! for each.

use super::{must, Bed};
use polyphony_spec::Dscp;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::time::Duration;

pub const PORT: u16 = 5201;

/// A TCP connection from the current namespace to the receiver carrying `mark` (SO_MARK, so
/// the sender's `fwmark 0x100+d` rule picks class d's routing table).
pub fn connect_marked(mark: u32) -> TcpStream {
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
pub fn algorithm_of(ns: &str, local: SocketAddrV4) -> String {
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
pub fn new_connection_runs(bed: &Bed, dscp: Dscp) -> String {
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

/// A connection of class `dscp` from sender h0, kept open, and the local address `ss` names it by.
pub struct Live {
    /// The socket (closed on drop).
    pub stream: TcpStream,
    /// Its local address.
    pub local: SocketAddrV4,
}

/// Opens a connection of class `dscp` from sender h0 and keeps it open.
pub fn open(bed: &Bed, dscp: Dscp) -> Live {
    let ns = bed.ns("h0");
    std::thread::spawn(move || {
        polyphony_netns::enter(&ns).expect("enter the sender's namespace");
        let stream = connect_marked(0x100 + dscp.value() as u32);
        let std::net::SocketAddr::V4(local) = stream.local_addr().expect("local address") else {
            panic!("not IPv4")
        };
        Live { stream, local }
    })
    .join()
    .expect("client thread")
}

/// The algorithm a kept-open connection from sender h0 runs now.
pub fn runs(bed: &Bed, live: &Live) -> String {
    algorithm_of(&bed.ns("h0"), live.local)
}

/// Starts the receiver: routes it back to the senders through the switch, listens on
/// 198.18.100.2:[`PORT`] and accepts `n` connections (for at most 60 s), each read until its
/// sender closes or 10 s pass. Returns once it listens; join the handle after the last connection.
pub fn receiver(bed: &Bed, n: usize) -> std::thread::JoinHandle<()> {
    let rx = bed.ns("rx");
    must(&["ip", "-n", &rx, "route", "add", "198.18.0.0/16", "via", "198.18.100.1"]);
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        polyphony_netns::enter(&rx).expect("enter the receiver's namespace");
        let l = TcpListener::bind((Ipv4Addr::new(198, 18, 100, 2), PORT)).expect("listen");
        bound_tx.send(()).expect("signal");
        // Bounded: n connections or 60 s, whichever comes first.
        l.set_nonblocking(true).expect("nonblocking listener");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut accepted = 0;
        while accepted < n && std::time::Instant::now() < deadline {
            let mut s = match l.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                Err(_) => break,
            };
            accepted += 1;
            s.set_nonblocking(false).expect("blocking socket");
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
    server
}

/// The senders' default algorithm (h0's `tcp_congestion_control`) and another one this kernel
/// both offers and allows (`tcp_available_congestion_control`, `tcp_allowed_congestion_control`),
/// if there is one.
pub fn default_and_other(bed: &Bed) -> (String, Option<String>) {
    let h0 = bed.ns("h0");
    let sysctl = |key: &str| must(&["ip", "netns", "exec", &h0, "cat", &format!("/proc/sys/net/ipv4/{key}")]);
    let default = sysctl("tcp_congestion_control").trim().to_string();
    let (avail, allowed) = (
        sysctl("tcp_available_congestion_control"),
        sysctl("tcp_allowed_congestion_control"),
    );
    let has = |list: &str, a: &str| list.split_whitespace().any(|x| x == a);
    let other = ["bbr", "cubic", "reno"]
        .into_iter()
        .find(|a| *a != default && has(&avail, a) && has(&allowed, a))
        .map(String::from);
    (default, other)
}
