//! Workspace-level integration and end-to-end tests live in `tests/tests/`; this library holds
//! only helpers they share (root detection, cleanup guards).
#![warn(missing_docs)]

/// Whether the tests run as root (namespace, tc and eBPF tests need it). Tests that need root
/// call this first and, when it is false, print why they are skipped and return.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}
