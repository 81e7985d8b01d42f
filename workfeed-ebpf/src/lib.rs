//! Workfeed's eBPF flow-capture program (C, built with clang) embedded for the loader.
//!
//! `src/bpf/workfeed.bpf.c` is compiled by `build.rs` at build time. This crate exposes the
//! compiled object ([`object`]), the names of its program and maps ([`names`]), the indices of its
//! counters ([`Stat`]) and the 48-byte record it emits ([`RawRecord`]). It performs no I/O and
//! does not load anything: `crates/workfeed` does that with aya.
#![warn(missing_docs)]

pub mod names;
mod object;
mod record;

pub use object::{object, ObjectMissing};
pub use record::{
    RawRecord, Stat, CFG_NETNS, CFG_PORTS, FLAGS_KNOWN, FLAG_ACTIVE, FLAG_ESTABLISHED, FLAG_FIN_SENT, FLAG_PEER_FIN,
    HOOK_DESTROY, HOOK_SET_STATE, MAX_FILTER_ENTRIES, RECORD_SIZE,
};
