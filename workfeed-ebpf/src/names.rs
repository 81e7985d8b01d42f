//! Names the loader uses to find the programs, their raw tracepoints and the maps in the object.

/// The raw-tracepoint program on every TCP state change.
pub const PROGRAM: &str = "wf_set_state";
/// The raw tracepoint [`PROGRAM`] attaches to.
pub const TRACEPOINT_NAME: &str = "inet_sock_set_state";
/// The raw-tracepoint program that records a tracked socket destroyed without a close event.
pub const DESTROY_PROGRAM: &str = "wf_destroy";
/// The raw tracepoint [`DESTROY_PROGRAM`] attaches to.
pub const DESTROY_TRACEPOINT_NAME: &str = "tcp_destroy_sock";
/// The ring buffer of [`crate::RawRecord`]s.
pub const RECORDS_MAP: &str = "wf_records";
/// Array of one `u32`: the filter switches ([`crate::CFG_PORTS`], [`crate::CFG_NETNS`]).
pub const CONFIG_MAP: &str = "wf_config";
/// Hash `u16` server port → `u8`.
pub const PORTS_MAP: &str = "wf_ports";
/// Hash `u32` network-namespace inode → `u8`.
pub const NETNS_MAP: &str = "wf_netns";
/// Per-CPU array of `u64` counters indexed by [`crate::Stat`].
pub const STATS_MAP: &str = "wf_stats";
/// Hash of connections between open and close (a full map is counted, never evicted).
pub const OPEN_FLOWS_MAP: &str = "wf_open_flows";
