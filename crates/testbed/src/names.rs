//! The names, addresses and handles of one instance, exactly as `docs/testbed.md` fixes them.
//! Pure functions; nothing here touches the system.

use crate::TestbedError;
use polyphony_spec::{BitsPerSec, Bytes, Dscp, Nanos};

/// Root of every instance's BPF pins.
pub const BPF_ROOT: &str = "/sys/fs/bpf/polyphony";
/// Root of the instances' state files.
pub const STATE_ROOT: &str = "/run/polyphony/testbed";
/// Parent of the instances' cgroups.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup/polyphony";
/// Interface of every host namespace.
pub const HOST_DEV: &str = "eth0";
/// The switch's bottleneck port (towards the receiver).
pub const BOTTLENECK_DEV: &str = "rx";
/// HTB default class minor.
pub const DEFAULT_CLASS: &str = "1:99";

/// Checks an instance prefix: 1–4 characters of `[a-z0-9]`, starting with a letter.
pub fn check_prefix(p: &str) -> Result<(), TestbedError> {
    let ok = (1..=4).contains(&p.len())
        && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && p.starts_with(|c: char| c.is_ascii_lowercase());
    if ok {
        Ok(())
    } else {
        Err(TestbedError::invalid(
            "prefix",
            format!("{p:?}"),
            "use 1–4 characters of [a-z0-9] starting with a letter, e.g. \"pp\" or \"ppt\"",
        ))
    }
}

/// The names of instance `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The prefix.
    pub prefix: String,
}

impl Names {
    /// Names of instance `prefix` (checked).
    pub fn new(prefix: &str) -> Result<Names, TestbedError> {
        check_prefix(prefix)?;
        Ok(Names { prefix: prefix.into() })
    }
    /// Sender namespace `i`.
    pub fn sender(&self, i: u32) -> String {
        format!("{}-h{i}", self.prefix)
    }
    /// Receiver namespace.
    pub fn receiver(&self) -> String {
        format!("{}-rx", self.prefix)
    }
    /// Switch namespace.
    pub fn switch(&self) -> String {
        format!("{}-sw", self.prefix)
    }
    /// Whether a namespace name belongs to this instance.
    pub fn owns_ns(&self, ns: &str) -> bool {
        ns.strip_prefix(&self.prefix)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|r| r == "sw" || r == "rx" || (r.starts_with('h') && r[1..].parse::<u32>().is_ok()))
    }
    /// The instance's BPF pin directory.
    pub fn pin_dir(&self) -> String {
        format!("{BPF_ROOT}/{}", self.prefix)
    }
    /// The pinned threshold map.
    pub fn thresh_map(&self) -> String {
        format!("{}/{}", self.pin_dir(), testbed_ebpf::THRESH_MAP)
    }
    /// The pinned statistics map.
    pub fn stats_map(&self) -> String {
        format!("{}/{}", self.pin_dir(), testbed_ebpf::STATS_MAP)
    }
    /// Pinned program `name`.
    pub fn prog(&self, name: &str) -> String {
        format!("{}/progs/{name}", self.pin_dir())
    }
    /// The instance's state file.
    pub fn state_file(&self) -> String {
        format!("{STATE_ROOT}/{}.json", self.prefix)
    }
    /// The instance's cgroup.
    pub fn cgroup(&self) -> String {
        format!("{CGROUP_ROOT}/{}", self.prefix)
    }
}

/// Sender `i`'s address with prefix length.
pub fn sender_cidr(i: u32) -> String {
    format!("198.18.{}.2/24", i + 1)
}
/// The switch's address towards sender `i`.
pub fn sender_gw(i: u32) -> String {
    format!("198.18.{}.1", i + 1)
}
/// The receiver's subnet.
pub const RX_NET: &str = "198.18.100.0/24";
/// The receiver's address with prefix length.
pub const RX_CIDR: &str = "198.18.100.2/24";
/// The switch's address towards the receiver.
pub const RX_GW: &str = "198.18.100.1";

/// HTB class id of class `d` (`1:<d in decimal>`; tc reads the minor as hex).
pub fn class_id(d: Dscp) -> String {
    format!("1:{}", d.value())
}
/// The u32 match on the TOS byte for class `d`.
pub fn dsfield(d: Dscp) -> String {
    format!("0x{:02x}", d.tos())
}
/// The fwmark of class `d`.
pub fn fwmark(d: Dscp) -> u32 {
    0x100 + d.value() as u32
}
/// The routing table of class `d`.
pub fn table(d: Dscp) -> u32 {
    100 + d.value() as u32
}
/// The rule priority of class `d`'s fwmark rule.
pub fn rule_pref(d: Dscp) -> u32 {
    1000 + d.value() as u32
}
/// Sojourn-time threshold for K bytes at link rate C: K·8/C.
pub fn sojourn_threshold(k: Bytes, rate: BitsPerSec) -> Nanos {
    rate.serialization_time(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_names() {
        let n = Names::new("ppt").unwrap();
        assert_eq!(n.sender(1), "ppt-h1");
        assert_eq!(n.thresh_map(), "/sys/fs/bpf/polyphony/ppt/ecn_thresh_ns");
        assert_eq!(class_id(Dscp::AF21), "1:18");
        assert_eq!(dsfield(Dscp::AF11), "0x28");
        assert_eq!(fwmark(Dscp::AF31), 0x11a);
        assert_eq!(table(Dscp::AF31), 126);
        assert_eq!(sender_cidr(2), "198.18.3.2/24");
    }

    #[test]
    fn ownership_is_exact() {
        let n = Names::new("pp").unwrap();
        assert!(n.owns_ns("pp-h0") && n.owns_ns("pp-sw") && n.owns_ns("pp-rx"));
        assert!(!n.owns_ns("ppt-h0") && !n.owns_ns("pp-hx") && !n.owns_ns("pp-other"));
    }

    #[test]
    fn bad_prefixes_are_refused() {
        for p in ["", "toolong", "PP", "p-p", "1pp"] {
            let e = Names::new(p).unwrap_err().to_string();
            assert!(e.starts_with("prefix"), "{e}");
        }
    }

    #[test]
    fn threshold_of_30kb_at_100mbps_is_2_4ms() {
        assert_eq!(
            sojourn_threshold(Bytes(30_000), BitsPerSec::from_mbps(100)),
            Nanos(2_400_000)
        );
    }
}
