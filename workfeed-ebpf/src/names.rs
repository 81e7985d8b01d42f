//! Names the loader uses to find the programs, their raw tracepoints and the maps in the object.

/// The raw-tracepoint program on every TCP state change.
pub const PROGRAM: &str = "wf_set_state";
/// [`PROGRAM`]'s standby on the same tracepoint: handles the events the kernel skips for
/// [`PROGRAM`] because it is already running on that CPU.
pub const STANDBY_PROGRAM: &str = "wf_set_state_standby";
/// The raw tracepoint [`PROGRAM`] and [`STANDBY_PROGRAM`] attach to.
pub const TRACEPOINT_NAME: &str = "inet_sock_set_state";
/// The raw-tracepoint program that records a tracked socket destroyed without a close event.
pub const DESTROY_PROGRAM: &str = "wf_destroy";
/// [`DESTROY_PROGRAM`]'s standby on the same tracepoint.
pub const DESTROY_STANDBY_PROGRAM: &str = "wf_destroy_standby";
/// The raw tracepoint [`DESTROY_PROGRAM`] and [`DESTROY_STANDBY_PROGRAM`] attach to.
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
/// Per-CPU array of `u32`, one slot per hook ([`crate::HOOK_SET_STATE`], [`crate::HOOK_DESTROY`]):
/// 1 while that hook's main program runs on the CPU. Its standby acts only while it is set.
pub const RUNNING_MAP: &str = "wf_running";
