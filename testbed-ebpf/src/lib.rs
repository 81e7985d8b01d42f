//! The testbed's eBPF programs, compiled from C by this crate's `build.rs` and embedded here:
//!
//! * [`ecn_marker`] — the sojourn-time ECN marker (`bpf/ecn_marker.bpf.c`): `pp_stamp` (tc egress
//!   of the switch's bottleneck port, before HTB) and `pp_judge` (tc ingress of the receiver),
//!   sharing the maps `ecn_thresh_ns` (DSCP → threshold in ns) and `ecn_stats`.
//! * [`pp_dctcp`] — DCTCP as a BPF struct_ops congestion control named `pp_dctcp`
//!   (`bpf/pp_dctcp.bpf.c`).
//!
//! When clang, bpftool or the kernel's BTF is missing at build time the crate still builds;
//! the accessors then return [`BpfMissing`] naming what to install. This crate performs no I/O.
#![warn(missing_docs)]

use std::fmt;

/// The BPF objects were not built into this binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfMissing {
    /// Why the build left them out (from `build.rs`).
    pub reason: &'static str,
}

impl fmt::Display for BpfMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the testbed's BPF programs were not compiled into this binary ({}); install the Debian \
             packages `clang llvm libbpf-dev bpftool` on a kernel with BTF and rebuild",
            self.reason.trim()
        )
    }
}

impl std::error::Error for BpfMissing {}

#[cfg(not(pp_bpf_built))]
const MISSING_REASON: &str = include_str!(concat!(env!("OUT_DIR"), "/bpf_missing_reason.txt"));

/// The ECN marker object file (ELF), ready for `bpftool prog loadall`.
pub fn ecn_marker() -> Result<&'static [u8], BpfMissing> {
    #[cfg(pp_bpf_built)]
    {
        Ok(include_bytes!(concat!(env!("OUT_DIR"), "/ecn_marker.bpf.o")))
    }
    #[cfg(not(pp_bpf_built))]
    {
        Err(BpfMissing { reason: MISSING_REASON })
    }
}

/// The `pp_dctcp` struct_ops object file (ELF), ready for `bpftool struct_ops register`.
pub fn pp_dctcp() -> Result<&'static [u8], BpfMissing> {
    #[cfg(pp_bpf_built)]
    {
        Ok(include_bytes!(concat!(env!("OUT_DIR"), "/pp_dctcp.bpf.o")))
    }
    #[cfg(not(pp_bpf_built))]
    {
        Err(BpfMissing { reason: MISSING_REASON })
    }
}

/// Name under which `pp_dctcp` registers (what `net.ipv4.tcp_congestion_control` is set to).
pub const DCTCP_NAME: &str = "pp_dctcp";
/// Program (pin) names in the ECN marker object.
pub const STAMP_PROG: &str = "pp_stamp";
/// The judging program's name.
pub const JUDGE_PROG: &str = "pp_judge";
/// The threshold map: key `u32` DSCP, value `u64` sojourn threshold in ns.
pub const THRESH_MAP: &str = "ecn_thresh_ns";
/// The per-DSCP statistics array: key `u32` DSCP, value five `u64`s
/// (packets, marked, sojourn_sum_ns, sojourn_max_ns, unstamped).
pub const STATS_MAP: &str = "ecn_stats";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_elf_or_the_reason_is_named() {
        for r in [ecn_marker(), pp_dctcp()] {
            match r {
                Ok(b) => assert_eq!(&b[..4], b"\x7fELF"),
                Err(e) => assert!(!e.reason.trim().is_empty(), "missing without a reason"),
            }
        }
    }
}
