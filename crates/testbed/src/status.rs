//! What an instance is: its state file (written by `up`: scenario, rate, senders, classes,
//! applied configuration, base RTT) and a live reading of its namespaces, HTB classes and
//! marker counters.

use crate::cmd::run;
use crate::marker::{self, MarkerStats};
use crate::names::{Names, BOTTLENECK_DEV, STATE_ROOT};
use crate::TestbedError;
use polyphony_spec::{BitsPerSec, Dscp, IdealFct, Nanos, NetworkConfig};
use serde::{Deserialize, Serialize};

/// What `up` recorded about an instance (`/run/polyphony/testbed/<P>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceState {
    /// Prefix.
    pub prefix: String,
    /// Scenario name.
    pub scenario: String,
    /// Sender namespaces.
    pub senders: u32,
    /// Bottleneck rate.
    pub rate: BitsPerSec,
    /// Classes: DSCP and name, in scenario order.
    pub classes: Vec<(Dscp, String)>,
    /// The configuration applied at `up`.
    pub config: NetworkConfig,
    /// Median TCP ping-pong RTT sender 0 ↔ receiver on the idle testbed.
    pub base_rtt: Nanos,
}

impl InstanceState {
    /// The ideal-FCT parameters of this instance.
    pub fn ideal(&self) -> IdealFct {
        IdealFct::tcp(self.base_rtt, self.rate)
    }
    /// The ideal-FCT parameters with the fixed [`crate::REFERENCE_BASE_RTT`] instead of the
    /// probe measured at `up`: what calibrated studies divide by, so that slowdowns of two
    /// instances (or of one instance brought up twice) are comparable.
    pub fn reference_ideal(&self) -> IdealFct {
        IdealFct::tcp(crate::REFERENCE_BASE_RTT, self.rate)
    }
    /// The namespaces and addresses of this instance.
    pub fn hosts(&self) -> polyphony_netns::Hosts {
        polyphony_netns::Hosts {
            prefix: self.prefix.clone(),
            senders: self.senders,
        }
    }
    pub(crate) fn write(&self, n: &Names) -> Result<(), TestbedError> {
        std::fs::create_dir_all(STATE_ROOT).map_err(|e| TestbedError::io(STATE_ROOT, e))?;
        let p = n.state_file();
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        std::fs::write(&p, text).map_err(|e| TestbedError::io(&p, e))
    }
    /// Reads instance `n`'s state file.
    pub fn read(n: &Names) -> Result<InstanceState, TestbedError> {
        let p = n.state_file();
        let text = std::fs::read_to_string(&p).map_err(|_| TestbedError::NotUp(n.prefix.clone()))?;
        serde_json::from_str(&text)
            .map_err(|e| TestbedError::invalid(p, "its contents", format!("{e}; run `testbed down` and `up` again")))
    }
}

/// One HTB class as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassStatus {
    /// Class id, e.g. `1:10`.
    pub handle: String,
    /// Guaranteed rate, bit/s.
    pub rate_bps: u64,
    /// Ceiling, bit/s.
    pub ceil_bps: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Bytes queued now.
    pub backlog: u64,
}

/// A live reading of an instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedStatus {
    /// What `up` recorded.
    pub state: InstanceState,
    /// The instance's namespaces that exist.
    pub namespaces: Vec<String>,
    /// HTB classes at the bottleneck.
    pub classes: Vec<ClassStatus>,
    /// Marker counters per DSCP.
    pub marker: Vec<MarkerStats>,
    /// Marker thresholds (DSCP, ns).
    pub thresholds: Vec<(u8, u64)>,
    /// Whether `pp_dctcp` is registered.
    pub dctcp_registered: bool,
}

/// Reads the HTB classes of the bottleneck (`tc -s class show`; this iproute2 prints HTB
/// classes as text even with `-j`).
pub fn htb_classes(n: &Names) -> Result<Vec<ClassStatus>, TestbedError> {
    let out = run("tc", &["-s", "-n", &n.switch(), "class", "show", "dev", BOTTLENECK_DEV])?;
    Ok(parse_htb_classes(&out))
}

/// A tc rate such as `33333Kbit`, `100Mbit`, `1Gbit` or `800bit`, in bit/s.
fn parse_rate(s: &str) -> u64 {
    let (num, mul) = if let Some(x) = s.strip_suffix("Gbit") {
        (x, 1e9)
    } else if let Some(x) = s.strip_suffix("Mbit") {
        (x, 1e6)
    } else if let Some(x) = s.strip_suffix("Kbit") {
        (x, 1e3)
    } else if let Some(x) = s.strip_suffix("bit") {
        (x, 1.0)
    } else {
        (s, 1.0)
    };
    num.parse::<f64>().map(|v| (v * mul).round() as u64).unwrap_or(0)
}

/// Parses `tc -s class show` output of HTB classes.
pub fn parse_htb_classes(text: &str) -> Vec<ClassStatus> {
    let mut v: Vec<ClassStatus> = Vec::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let after = |k: &str| w.iter().position(|x| *x == k).and_then(|i| w.get(i + 1)).copied();
        if w.first() == Some(&"class") && w.get(1) == Some(&"htb") {
            v.push(ClassStatus {
                handle: w.get(2).unwrap_or(&"").to_string(),
                rate_bps: after("rate").map(parse_rate).unwrap_or(0),
                ceil_bps: after("ceil").map(parse_rate).unwrap_or(0),
                bytes: 0,
                packets: 0,
                drops: 0,
                backlog: 0,
            });
        } else if let Some(c) = v.last_mut() {
            let num = |s: &str| {
                s.trim_matches(|ch: char| !ch.is_ascii_digit())
                    .parse::<u64>()
                    .unwrap_or(0)
            };
            if w.first() == Some(&"Sent") {
                c.bytes = w.get(1).map(|s| num(s)).unwrap_or(0);
                c.packets = w.get(3).map(|s| num(s)).unwrap_or(0);
                c.drops = after("(dropped").map(num).unwrap_or(0);
            } else if w.first() == Some(&"backlog") {
                c.backlog = w.get(1).map(|s| num(s)).unwrap_or(0);
            }
        }
    }
    v
}

/// The live status of instance `n`.
pub fn read(n: &Names) -> Result<TestbedStatus, TestbedError> {
    let state = InstanceState::read(n)?;
    let namespaces = crate::net::list_netns().into_iter().filter(|s| n.owns_ns(s)).collect();
    Ok(TestbedStatus {
        state,
        namespaces,
        classes: htb_classes(n).unwrap_or_default(),
        marker: marker::stats(n).unwrap_or_default(),
        thresholds: marker::thresholds(n).unwrap_or_default(),
        dctcp_registered: crate::dctcp::registered(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tc_class_text() {
        let t = "class htb 1:10 parent 1:1 leaf 8002: prio 0 rate 33333Kbit ceil 100Mbit burst 1599b cburst 1600b \n Sent 44162952 bytes 29184 pkt (dropped 7, overlimits 4758 requeues 0) \n backlog 149886b 6p requeues 0\n";
        let c = parse_htb_classes(t);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].handle, "1:10");
        assert_eq!(c[0].rate_bps, 33_333_000);
        assert_eq!(c[0].ceil_bps, 100_000_000);
        assert_eq!(
            (c[0].bytes, c[0].packets, c[0].drops, c[0].backlog),
            (44162952, 29184, 7, 149886)
        );
    }
}
