//! Entering the testbed's network namespaces from a thread (`setns(2)` on
//! `/var/run/netns/<name>`), and the names and addresses of the testbed contract
//! (`docs/testbed.md`).
//!
//! Only the calling thread changes namespace; sockets keep the namespace they were created in.

use crate::NetnsError;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Where `ip netns` keeps the namespace handles.
pub const NETNS_DIR: &str = "/var/run/netns";

/// The path of namespace `name`.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// Moves the calling thread into network namespace `name`.
pub fn enter(name: &str) -> Result<(), NetnsError> {
    let path = netns_path(name);
    let f = std::fs::File::open(&path).map_err(|source| NetnsError::Enter {
        name: name.into(),
        path: path.clone(),
        source,
    })?;
    // SAFETY: setns on a valid namespace fd affects only this thread.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(NetnsError::Enter {
            name: name.into(),
            path,
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Names and addresses of one testbed instance, as fixed in `docs/testbed.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts {
    /// Instance prefix (`pp`, `ppt`, ...).
    pub prefix: String,
    /// Number of sender namespaces.
    pub senders: u32,
}

impl Hosts {
    /// Namespace of sender `i`.
    pub fn sender_ns(&self, i: u32) -> String {
        format!("{}-h{i}", self.prefix)
    }
    /// Namespace of the receiver.
    pub fn receiver_ns(&self) -> String {
        format!("{}-rx", self.prefix)
    }
    /// Namespace of the switch.
    pub fn switch_ns(&self) -> String {
        format!("{}-sw", self.prefix)
    }
    /// Address of sender `i` (`198.18.<i+1>.2`).
    pub fn sender_addr(i: u32) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, (i + 1) as u8, 2)
    }
    /// Address of the receiver (`198.18.100.2`).
    pub fn receiver_addr() -> Ipv4Addr {
        Ipv4Addr::new(198, 18, 100, 2)
    }
    /// The fwmark of class `dscp` (`0x100 + dscp`).
    pub fn fwmark(dscp: polyphony_spec::Dscp) -> u32 {
        0x100 + dscp.value() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::Dscp;

    #[test]
    fn names_follow_the_contract() {
        let h = Hosts {
            prefix: "ppt".into(),
            senders: 3,
        };
        assert_eq!(h.sender_ns(2), "ppt-h2");
        assert_eq!(h.receiver_ns(), "ppt-rx");
        assert_eq!(Hosts::sender_addr(0).to_string(), "198.18.1.2");
        assert_eq!(Hosts::fwmark(Dscp::AF21), 0x112);
    }

    #[test]
    fn missing_namespace_is_named() {
        let e = enter("ppt-no-such-ns").unwrap_err().to_string();
        assert!(e.contains("ppt-no-such-ns"), "{e}");
    }
}
