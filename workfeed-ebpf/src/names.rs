//! Names the loader uses to find the program, its tracepoint and its maps in the object.

/// The tracepoint program.
pub const PROGRAM: &str = "wf_set_state";
/// Tracepoint category.
pub const TRACEPOINT_CATEGORY: &str = "sock";
/// Tracepoint name.
pub const TRACEPOINT_NAME: &str = "inet_sock_set_state";
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
/// LRU hash of connections between open and close.
pub const OPEN_FLOWS_MAP: &str = "wf_open_flows";
