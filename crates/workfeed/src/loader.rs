//! Loads the capture probe with aya, attaches it, sets its filters, reads its ring buffer and its
//! counters.
//!
//! Touches the kernel: loading BPF programs and maps (root or CAP_BPF + CAP_PERFMON) and attaching
//! them to the raw tracepoints `inet_sock_set_state` and `tcp_destroy_sock`; reading the programs'
//! kernel statistics (`BPF_OBJ_GET_INFO_BY_FD`). Nothing is pinned: the programs stay attached
//! while the [`Probe`] lives and are detached when it is dropped or the process exits, so a crash
//! leaves nothing behind.
//!
//! The tracepoints are machine-wide; filters restrict capture to server ports and/or network
//! namespaces (by inode, e.g. of `/run/netns/NAME`).

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::RawTracePoint;
use aya::Ebpf;
use aya_obj::generated::{bpf_cmd, bpf_prog_info};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use thiserror::Error;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use workfeed_ebpf::{names, RawRecord, Stat, CFG_NETNS, CFG_PORTS, MAX_FILTER_ENTRIES, RECORD_SIZE};

/// What to capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeFilter {
    /// Capture only connections whose server (listening) port is one of these; empty = all.
    pub server_ports: Vec<u16>,
    /// Capture only sockets in these network namespaces (inode numbers); empty = all.
    pub netns_inodes: Vec<u32>,
}

impl ProbeFilter {
    /// The inode of a network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`).
    pub fn netns_inode(path: &Path) -> Result<u32, LoadError> {
        let md = std::fs::metadata(path).map_err(|e| LoadError::Netns(path.to_path_buf(), e.to_string()))?;
        u32::try_from(md.ino())
            .map_err(|_| LoadError::Netns(path.to_path_buf(), format!("inode {} exceeds 32 bits", md.ino())))
    }
}

/// Why the probe could not be loaded or driven.
#[derive(Debug, Error)]
pub enum LoadError {
    /// This build has no compiled probe.
    #[error(transparent)]
    Missing(#[from] workfeed_ebpf::ObjectMissing),
    /// Not root.
    #[error("loading eBPF needs root (or CAP_BPF and CAP_PERFMON); run as root")]
    NotRoot,
    /// The kernel or aya refused the object.
    #[error("loading the Workfeed probe failed: {0}")]
    Load(String),
    /// The object lacks a program or map this loader expects (a mismatched build).
    #[error("the probe object has no program or map {0}: workfeed and workfeed-ebpf are out of step; rebuild both")]
    MissingPart(&'static str),
    /// A map operation failed.
    #[error("probe map {map}: {why}")]
    Map {
        /// The map.
        map: &'static str,
        /// The error.
        why: String,
    },
    /// Too many filter entries.
    #[error("{what}: {n} entries, the probe holds at most {MAX_FILTER_ENTRIES}")]
    TooManyFilters {
        /// Which filter.
        what: &'static str,
        /// How many were given.
        n: usize,
    },
    /// A namespace file could not be read.
    #[error("network namespace {0}: {1}")]
    Netns(PathBuf, String),
    /// Reading the ring buffer failed.
    #[error("ring buffer: {0}")]
    Io(#[from] std::io::Error),
}

fn map_err(map: &'static str) -> impl Fn(aya::maps::MapError) -> LoadError {
    move |e| LoadError::Map {
        map,
        why: e.to_string(),
    }
}

/// The loaded and attached probe.
pub struct Probe {
    ebpf: Ebpf,
    records: Option<RingBuf<MapData>>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe").finish_non_exhaustive()
    }
}

impl Probe {
    /// Loads the embedded probe, applies `filter` and attaches its programs to the raw
    /// tracepoints `inet_sock_set_state` and `tcp_destroy_sock`.
    pub fn load(filter: &ProbeFilter) -> Result<Probe, LoadError> {
        let object = workfeed_ebpf::object()?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LoadError::NotRoot);
        }
        let mut ebpf = Ebpf::load(object).map_err(|e| LoadError::Load(format!("{e} ({e:?})")))?;
        // Filters go in before the programs are attached, so nothing unwanted is captured. The
        // destruction hook goes first: it only acts on entries the state hook creates. Each
        // standby goes in before its main program, so no event the main program is skipped for
        // goes unhandled.
        apply_filter(&mut ebpf, filter)?;
        for (program, tracepoint) in [
            (names::DESTROY_STANDBY_PROGRAM, names::DESTROY_TRACEPOINT_NAME),
            (names::DESTROY_PROGRAM, names::DESTROY_TRACEPOINT_NAME),
            (names::STANDBY_PROGRAM, names::TRACEPOINT_NAME),
            (names::PROGRAM, names::TRACEPOINT_NAME),
        ] {
            let prog = raw_tracepoint(&mut ebpf, program)?;
            prog.load()
                .map_err(|e| LoadError::Load(format!("{program}: {e} ({e:?})")))?;
            prog.attach(tracepoint)
                .map_err(|e| LoadError::Load(format!("attaching {program} to raw tracepoint {tracepoint}: {e}")))?;
        }
        let map = ebpf
            .take_map(names::RECORDS_MAP)
            .ok_or(LoadError::MissingPart(names::RECORDS_MAP))?;
        let records = RingBuf::try_from(map).map_err(map_err(names::RECORDS_MAP))?;
        Ok(Probe {
            ebpf,
            records: Some(records),
        })
    }

    /// Replaces the filters (takes effect for connections opened from now on).
    pub fn set_filter(&mut self, filter: &ProbeFilter) -> Result<(), LoadError> {
        apply_filter(&mut self.ebpf, filter)
    }

    /// The probe's counters, summed over CPUs, in [`Stat::ALL`] order.
    pub fn stats(&self) -> Result<Vec<(Stat, u64)>, LoadError> {
        let m = self
            .ebpf
            .map(names::STATS_MAP)
            .ok_or(LoadError::MissingPart(names::STATS_MAP))?;
        let arr: PerCpuArray<_, u64> = PerCpuArray::try_from(m).map_err(map_err(names::STATS_MAP))?;
        Stat::ALL
            .iter()
            .map(|&s| {
                let v = arr.get(&(s as u32), 0).map_err(map_err(names::STATS_MAP))?;
                Ok((s, v.iter().sum()))
            })
            .collect()
    }

    /// Events no program of the probe handled: the kernel skips a raw tracepoint program that is
    /// already running on the same CPU (e.g. interrupted by a softirq that changes another
    /// socket's state) and counts the skip (`recursion_misses`); the main programs' skips, summed,
    /// less the events their standbys handled ([`Stat::StandbyEvents`]), leave the events neither
    /// saw. (A standby's own skips are not losses: a standby runs its handler only inside a
    /// softirq that interrupted its main program, and otherwise returns at once, while the main
    /// program, not running, takes the event.) A missed open loses that socket's record (counted
    /// again as `untracked_close` when it closes) unless a later state recovers it
    /// (`opened_late`); a missed close is recovered at the socket's destruction
    /// (`closed_at_destroy`).
    ///
    /// The standbys' count is read first: a skip between the two reads is then counted as
    /// missed for that one reading, never hidden.
    pub fn missed_events(&self) -> Result<u64, LoadError> {
        let covered = self
            .stats()?
            .into_iter()
            .find(|&(s, _)| s == Stat::StandbyEvents)
            .map_or(0, |(_, v)| v);
        let mut skipped = 0;
        for name in [names::PROGRAM, names::DESTROY_PROGRAM] {
            let prog = self.ebpf.program(name).ok_or(LoadError::MissingPart(name))?;
            let fd = prog.fd().map_err(|e| LoadError::Load(format!("{name}: {e}")))?;
            skipped += prog_info(fd.as_fd())
                .map_err(|e| LoadError::Load(format!("reading the kernel statistics of {name}: {e}")))?
                .recursion_misses;
        }
        Ok(skipped.saturating_sub(covered))
    }

    /// Takes the ring-buffer reader (once; later calls return `None`). Needs a tokio runtime.
    pub fn take_records(&mut self) -> Result<Option<RecordReader>, LoadError> {
        match self.records.take() {
            None => Ok(None),
            Some(rb) => {
                // SAFETY: the RingBuf owns its map fd, which stays open and unchanged until the
                // RingBuf (owned by the AsyncFd) is dropped.
                let fd = unsafe { AsyncFd::register_with_interest(rb, Interest::READABLE) }
                    .map_err(|e| LoadError::Io(std::io::Error::other(e.to_string())))?;
                Ok(Some(RecordReader { fd }))
            }
        }
    }
}

fn raw_tracepoint<'a>(ebpf: &'a mut Ebpf, name: &'static str) -> Result<&'a mut RawTracePoint, LoadError> {
    ebpf.program_mut(name)
        .ok_or(LoadError::MissingPart(name))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| LoadError::Load(format!("{name}: {e}")))
}

/// The kernel's `bpf_prog_info` of a loaded program (aya 0.14 does not expose `recursion_misses`).
fn prog_info(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<bpf_prog_info> {
    // SAFETY: bpf_prog_info is plain old data; all-zero is a valid value.
    let mut info: bpf_prog_info = unsafe { std::mem::zeroed() };
    #[repr(C)]
    struct InfoAttr {
        bpf_fd: u32,
        info_len: u32,
        info: u64,
    }
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<bpf_prog_info>() as u32,
        info: (&mut info as *mut bpf_prog_info) as u64,
    };
    // SAFETY: attr is a valid BPF_OBJ_GET_INFO_BY_FD attribute whose `info` points to a writable
    // buffer of `info_len` bytes that outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            bpf_cmd::BPF_OBJ_GET_INFO_BY_FD as libc::c_long,
            &mut attr as *mut InfoAttr,
            std::mem::size_of::<InfoAttr>(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(info)
}

fn apply_filter(ebpf: &mut Ebpf, filter: &ProbeFilter) -> Result<(), LoadError> {
    for (what, n) in [
        ("server_ports", filter.server_ports.len()),
        ("netns", filter.netns_inodes.len()),
    ] {
        if n > MAX_FILTER_ENTRIES {
            return Err(LoadError::TooManyFilters { what, n });
        }
    }
    let mut bits = 0;
    if replace_set(ebpf, names::PORTS_MAP, &filter.server_ports)? {
        bits |= CFG_PORTS;
    }
    if replace_set(ebpf, names::NETNS_MAP, &filter.netns_inodes)? {
        bits |= CFG_NETNS;
    }
    let m = ebpf
        .map_mut(names::CONFIG_MAP)
        .ok_or(LoadError::MissingPart(names::CONFIG_MAP))?;
    let mut cfg: Array<_, u32> = Array::try_from(m).map_err(map_err(names::CONFIG_MAP))?;
    cfg.set(0, bits, 0).map_err(map_err(names::CONFIG_MAP))?;
    Ok(())
}

/// Makes the hash map `name` hold exactly `keys`; returns whether it is non-empty.
fn replace_set<K: aya::Pod + Eq>(ebpf: &mut Ebpf, name: &'static str, keys: &[K]) -> Result<bool, LoadError> {
    let m = ebpf.map_mut(name).ok_or(LoadError::MissingPart(name))?;
    let mut set: BpfHashMap<_, K, u8> = BpfHashMap::try_from(m).map_err(map_err(name))?;
    let old: Vec<K> = set.keys().filter_map(Result::ok).collect();
    for k in old.iter().filter(|k| !keys.contains(k)) {
        set.remove(k).map_err(map_err(name))?;
    }
    for k in keys {
        set.insert(k, 1, 0).map_err(map_err(name))?;
    }
    Ok(!keys.is_empty())
}

/// Reads probe records from the ring buffer on tokio.
pub struct RecordReader {
    fd: AsyncFd<RingBuf<MapData>>,
}

impl std::fmt::Debug for RecordReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader").finish_non_exhaustive()
    }
}

impl RecordReader {
    /// Waits until records are available, then appends up to `max` of them to `out`; returns how
    /// many were appended. Items of the wrong size (a mismatched build) are skipped and counted in
    /// the returned `skipped`.
    pub async fn read(&mut self, out: &mut Vec<RawRecord>, max: usize) -> Result<ReadCount, LoadError> {
        loop {
            let mut guard = self.fd.readable_mut().await?;
            let n = drain(guard.get_inner_mut(), out, max);
            if n.records == 0 && n.skipped == 0 {
                guard.clear_ready();
                continue;
            }
            return Ok(n);
        }
    }

    /// Appends up to `max` records already in the ring buffer to `out`, without waiting. The
    /// probe wakes readers only once a batch has accumulated, so callers also drain on a timer.
    pub fn try_read(&mut self, out: &mut Vec<RawRecord>, max: usize) -> ReadCount {
        drain(self.fd.get_mut(), out, max)
    }
}

fn drain(rb: &mut RingBuf<MapData>, out: &mut Vec<RawRecord>, max: usize) -> ReadCount {
    let mut n = ReadCount::default();
    while n.records < max {
        let Some(item) = rb.next() else { break };
        match (item.len() == RECORD_SIZE)
            .then(|| RawRecord::from_ne_bytes(&item))
            .flatten()
        {
            Some(r) => {
                out.push(r);
                n.records += 1;
            }
            None => n.skipped += 1,
        }
    }
    n
}

/// What one [`RecordReader::read`] call returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCount {
    /// Records appended.
    pub records: usize,
    /// Items skipped because their size was not 48 bytes.
    pub skipped: usize,
}
