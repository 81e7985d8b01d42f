//! Loads the capture probe with aya, attaches it, sets its filters, reads its ring buffer.
//!
//! Touches the kernel: loading BPF programs and maps (root or CAP_BPF + CAP_PERFMON), mounting
//! tracefs at `/sys/kernel/tracing` when it is absent (aya finds tracepoints there). Nothing is
//! pinned: the program stays attached while the [`Probe`] lives and is detached when it is dropped
//! or the process exits, so a crash leaves nothing behind.
//!
//! The tracepoint is machine-wide; filters restrict capture to server ports and/or network
//! namespaces (by inode, e.g. of `/run/netns/NAME`).

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::TracePoint;
use aya::Ebpf;
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
    /// tracefs is absent and could not be mounted.
    #[error("tracefs is not mounted at /sys/kernel/tracing and mounting it failed: {0}")]
    Tracefs(String),
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

fn ensure_tracefs() -> Result<(), LoadError> {
    let dir = Path::new("/sys/kernel/tracing");
    let populated = |p: &Path| std::fs::read_dir(p).map(|mut d| d.next().is_some()).unwrap_or(false);
    if populated(dir) || populated(Path::new("/sys/kernel/debug/tracing")) {
        return Ok(());
    }
    let c = |s: &str| std::ffi::CString::new(s).map_err(|e| LoadError::Tracefs(e.to_string()));
    let (src, target, fstype) = (c("tracefs")?, c("/sys/kernel/tracing")?, c("tracefs")?);
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 && !populated(dir) {
        return Err(LoadError::Tracefs(std::io::Error::last_os_error().to_string()));
    }
    Ok(())
}

impl Probe {
    /// Loads the embedded probe, applies `filter` and attaches it to `sock:inet_sock_set_state`.
    pub fn load(filter: &ProbeFilter) -> Result<Probe, LoadError> {
        let object = workfeed_ebpf::object()?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LoadError::NotRoot);
        }
        ensure_tracefs()?;
        let mut ebpf = Ebpf::load(object).map_err(|e| LoadError::Load(e.to_string()))?;
        // Filters go in before the program is attached, so nothing unwanted is captured.
        apply_filter(&mut ebpf, filter)?;
        let prog: &mut TracePoint = ebpf
            .program_mut(names::PROGRAM)
            .ok_or(LoadError::MissingPart(names::PROGRAM))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| LoadError::Load(e.to_string()))?;
        prog.load().map_err(|e| LoadError::Load(format!("{e} ({e:?})")))?;
        prog.attach(names::TRACEPOINT_CATEGORY, names::TRACEPOINT_NAME)
            .map_err(|e| LoadError::Load(format!("attaching to sock:inet_sock_set_state: {e}")))?;
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
