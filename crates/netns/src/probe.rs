//! Base-RTT probe: a TCP ping-pong of one-byte messages (TCP_NODELAY) between a sender and the
//! receiver on an idle testbed. The median round trip is the `base_rtt` of every ideal FCT.

use crate::hosts::{enter, Hosts};
use crate::NetnsError;
use polyphony_spec::Nanos;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Round trips measured (after [`WARMUP`] discarded ones).
pub const ROUNDS: usize = 200;
/// Round trips discarded first.
pub const WARMUP: usize = 20;

/// Median application-level round trip between sender `sender` and the receiver of instance
/// `hosts`. Bounded: at most `ROUNDS + WARMUP` exchanges, 5 s of socket timeouts.
pub fn base_rtt(hosts: &Hosts, sender: u32) -> Result<Nanos, NetnsError> {
    let rx_ns = hosts.receiver_ns();
    let (tx, rx) = std::sync::mpsc::channel::<Result<u16, NetnsError>>();
    let server = std::thread::Builder::new()
        .name("netns-probe-rx".into())
        .spawn(move || -> Result<(), NetnsError> {
            let r = (|| {
                enter(&rx_ns)?;
                let l = TcpListener::bind((Hosts::receiver_addr(), 0))
                    .map_err(|e| NetnsError::socket("probe: bind on the receiver", e))?;
                let port = l
                    .local_addr()
                    .map_err(|e| NetnsError::socket("probe: local_addr", e))?
                    .port();
                Ok((l, port))
            })();
            let l = match r {
                Ok((l, port)) => {
                    let _ = tx.send(Ok(port));
                    l
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return Ok(());
                }
            };
            l.set_nonblocking(false).ok();
            let (mut s, _) = l.accept().map_err(|e| NetnsError::socket("probe: accept", e))?;
            s.set_nodelay(true).ok();
            s.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut b = [0u8; 1];
            for _ in 0..ROUNDS + WARMUP {
                if s.read_exact(&mut b).is_err() || s.write_all(&b).is_err() {
                    break;
                }
            }
            Ok(())
        })
        .map_err(|_| NetnsError::Worker("receiver".into()))?;
    let port = rx
        .recv_timeout(Duration::from_secs(5))
        .map_err(|_| NetnsError::Worker("receiver".into()))??;
    let tx_ns = hosts.sender_ns(sender);
    let client = std::thread::Builder::new()
        .name("netns-probe-tx".into())
        .spawn(move || -> Result<Vec<u64>, NetnsError> {
            enter(&tx_ns)?;
            let addr = SocketAddr::from((Hosts::receiver_addr(), port));
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .map_err(|e| NetnsError::socket(format!("probe: connect to {addr}"), e))?;
            s.set_nodelay(true).ok();
            s.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut rtts = Vec::with_capacity(ROUNDS);
            let mut b = [7u8; 1];
            for i in 0..ROUNDS + WARMUP {
                let t = Instant::now();
                s.write_all(&b)
                    .and_then(|_| s.read_exact(&mut b))
                    .map_err(|e| NetnsError::socket(format!("probe: ping-pong with {addr}"), e))?;
                if i >= WARMUP {
                    rtts.push(t.elapsed().as_nanos() as u64);
                }
            }
            Ok(rtts)
        })
        .map_err(|_| NetnsError::Worker("sender".into()))?;
    let mut rtts = client.join().map_err(|_| NetnsError::Worker("sender".into()))??;
    let _ = server.join();
    rtts.sort_unstable();
    Ok(Nanos(rtts[rtts.len() / 2]))
}
