//! The compiled eBPF object, embedded at build time (or its absence, with the reason).

use thiserror::Error;

/// Why the eBPF object is not in this build.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error(
    "this build of workfeed-ebpf has no eBPF capture program: {reason}. \
     Install the missing piece (Debian: `apt-get install clang llvm libbpf-dev bpftool`) and rebuild; \
     running it then needs root (or CAP_BPF and CAP_PERFMON)"
)]
pub struct ObjectMissing {
    /// What build.rs reported.
    pub reason: String,
}

#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

// The ELF parser reads the object in place, so it must be 8-byte aligned.
static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/workfeed.bpf.o")));
static STATUS: &str = include_str!(concat!(env!("OUT_DIR"), "/workfeed.bpf.status"));

/// The ELF object of the capture program, or why this build has none.
pub fn object() -> Result<&'static [u8], ObjectMissing> {
    if OBJECT.0.is_empty() {
        let reason = if STATUS.is_empty() {
            "the object is empty"
        } else {
            STATUS
        };
        return Err(ObjectMissing {
            reason: reason.to_string(),
        });
    }
    Ok(&OBJECT.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn object_is_elf_or_explains_itself() {
        match super::object() {
            Ok(bytes) => assert_eq!(&bytes[..4], b"\x7fELF"),
            Err(e) => assert!(e.to_string().contains("apt-get install"), "{e}"),
        }
    }
}
