//! An append-only, fsynced journal of accepted flow records, so that a consumer of a durable
//! stream (NATS JetStream, [`crate::jetstream`]) can acknowledge records only once they are on
//! disk and rebuild its connection table after a crash.
//!
//! File format: a sequence of entries, each a 4-byte little-endian length followed by that many
//! bytes of one Workfeed datagram ([`crate::wire`], untagged, agent id 0) holding up to
//! [`MAX_RECORDS`] records that share one keep probability. [`Journal::append`] writes and
//! `fdatasync`s before it returns. [`Journal::open`] reads every complete entry; a torn last
//! entry (a crash mid-write — never acknowledged, so the stream redelivers it) is cut off and
//! reported, and so is anything after the first entry that does not decode. [`Journal::compact`]
//! rewrites the file with only the records a caller still needs, through a temporary file that
//! is fsynced and renamed over the old one, so a crash leaves the old or the new file, never a
//! torn one.

use crate::record::FlowRecord;
use crate::sampling::KeepProbability;
use crate::wire::{self, Batch, MAX_RECORDS};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A journal problem, naming the file.
#[derive(Debug, Error)]
pub enum JournalError {
    /// Reading, writing or syncing failed.
    #[error("workfeed journal {path}: {op}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What [`Journal::open`] found.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Every record of every complete entry, in order, with its keep probability.
    pub records: Vec<(FlowRecord, KeepProbability)>,
    /// Bytes cut off the end: a torn or undecodable tail (0 for a clean file).
    pub discarded_bytes: u64,
}

/// The open journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// Encodes records as journal entries (length-prefixed datagrams).
fn entries(records: &[(FlowRecord, KeepProbability)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < records.len() {
        let keep = records[i].1;
        let mut j = i;
        while j < records.len() && j - i < MAX_RECORDS && records[j].1 == keep {
            j += 1;
        }
        let d = wire::encode(
            &Batch {
                agent_id: 0,
                epoch: 0,
                seq: 0,
                keep_probability: keep.get(),
                records: records[i..j].iter().map(|(r, _)| *r).collect(),
            },
            None,
        );
        out.extend_from_slice(&(d.len() as u32).to_le_bytes());
        out.extend_from_slice(&d);
        i = j;
    }
    out
}

/// Decodes entries up to the first one that is torn or bad.
fn decode(bytes: &[u8]) -> Replayed {
    let mut out = Replayed::default();
    let mut at = 0usize;
    while at + 4 <= bytes.len() {
        let len = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        let Some(d) = bytes.get(at + 4..at + 4 + len) else {
            break;
        };
        let Ok(b) = wire::decode(d, None) else {
            break;
        };
        let Ok(keep) = KeepProbability::new(b.keep_probability) else {
            break;
        };
        out.records.extend(b.records.into_iter().map(|r| (r, keep)));
        at += 4 + len;
    }
    out.discarded_bytes = (bytes.len() - at) as u64;
    out
}

impl Journal {
    /// Opens (creating if absent) the journal at `path` and replays it. A torn or bad tail is
    /// cut off (the file is truncated to its last good entry) and its size reported.
    pub fn open(path: &Path) -> Result<(Journal, Replayed), JournalError> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io(path, "open"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io(path, "read"))?;
        let replayed = decode(&bytes);
        if replayed.discarded_bytes > 0 {
            let good = bytes.len() as u64 - replayed.discarded_bytes;
            file.set_len(good).map_err(io(path, "truncate the torn tail"))?;
            file.sync_all().map_err(io(path, "sync"))?;
        }
        Ok((
            Journal {
                path: path.to_path_buf(),
                file,
            },
            replayed,
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `records` and makes them durable (`fdatasync`) before returning.
    pub fn append(&mut self, records: &[(FlowRecord, KeepProbability)]) -> Result<(), JournalError> {
        if records.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        self.file.write_all(&entries(records)).map_err(io(&path, "append"))?;
        self.file.sync_data().map_err(io(&path, "sync"))
    }

    /// Replaces the journal by one holding only `keep` (temporary file, fsync, rename, directory
    /// fsync), and continues appending to it.
    pub fn compact(&mut self, keep: &[(FlowRecord, KeepProbability)]) -> Result<(), JournalError> {
        let path = self.path.clone();
        let tmp = path.with_extension("compacting");
        {
            let mut f = File::create(&tmp).map_err(io(&tmp, "create"))?;
            f.write_all(&entries(keep)).map_err(io(&tmp, "write"))?;
            f.sync_all().map_err(io(&tmp, "sync"))?;
        }
        std::fs::rename(&tmp, &path).map_err(io(&path, "rename the compacted file"))?;
        if let Some(dir) = path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir, "sync the directory"))?;
        }
        self.file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io(&path, "reopen"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Bytes, Dscp, Nanos};
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn rec(i: u16) -> FlowRecord {
        FlowRecord {
            local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1, 2), 1000 + i),
            remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 5001),
            dscp: Dscp::AF11,
            active: true,
            fin_sent: true,
            peer_fin: true,
            bytes_sent: Bytes(u64::from(i) * 10),
            bytes_received: Bytes(1),
            srtt: Nanos(1000),
            retrans: 0,
            start: Nanos(1_700_000_000_000_000_000 + u64::from(i)),
            end: Nanos(1_700_000_000_100_000_000 + u64::from(i)),
        }
    }

    #[test]
    fn appended_records_replay_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.bin");
        let half = KeepProbability::new(0.5).unwrap();
        let a: Vec<_> = (0..1500).map(|i| (rec(i), KeepProbability::ALL)).collect();
        let b: Vec<_> = (1500..1510).map(|i| (rec(i), half)).collect();
        {
            let (mut j, r) = Journal::open(&p).unwrap();
            assert!(r.records.is_empty());
            j.append(&a).unwrap();
            j.append(&b).unwrap();
        }
        // A crash mid-write leaves part of an entry.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&[200, 0, 0, 0, b'W', b'K']).unwrap();
        drop(f);
        let (mut j, r) = Journal::open(&p).unwrap();
        assert_eq!(r.discarded_bytes, 6);
        assert_eq!(r.records, [a.clone(), b.clone()].concat());
        j.compact(&b).unwrap();
        j.append(&a[..3]).unwrap();
        drop(j);
        let (_, r) = Journal::open(&p).unwrap();
        assert_eq!(r.discarded_bytes, 0);
        assert_eq!(r.records, [b, a[..3].to_vec()].concat());
    }

    #[test]
    fn an_unreadable_directory_is_an_error_naming_the_file() {
        let e = Journal::open(Path::new("/nonexistent-dir/j.bin"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent-dir/j.bin") && e.contains("open"), "{e}");
    }
}
