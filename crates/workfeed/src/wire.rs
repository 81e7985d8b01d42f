//! The agent → aggregator datagram: versioned, length-checked, optionally HMAC-SHA256 tagged.
//!
//! Layout (little-endian; docs/workfeed.md has the table):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"WKFD"` |
//! | 4 | 1 | version (1) |
//! | 5 | 1 | flags: bit 0 = a 32-byte HMAC-SHA256 tag follows the records |
//! | 6 | 2 | record count n (1..=[`MAX_RECORDS`]) |
//! | 8 | 4 | agent id |
//! | 12 | 4 | payload length = 48·n |
//! | 16 | 8 | epoch (the agent's start time, Unix ns; a new epoch restarts sequence numbering) |
//! | 24 | 8 | sequence number (0, 1, 2, … per agent and epoch) |
//! | 32 | 8 | keep probability p ∈ (0, 1] of every record (f64; weight = 1/p) |
//! | 40 | 48·n | records ([`workfeed_ebpf::RawRecord`] layout, Unix-epoch times) |
//! | 40+48n | 32 | HMAC-SHA256 over bytes 0..40+48n, with the shared key (when flag bit 0) |
//!
//! Decoding is total: every malformed datagram is an [`DecodeError`], never a panic. Pure: no
//! sockets, no clock.

use crate::record::FlowRecord;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;
use workfeed_ebpf::{RawRecord, FLAG_ESTABLISHED, RECORD_SIZE};

/// First four bytes of every datagram.
pub const MAGIC: [u8; 4] = *b"WKFD";
/// The only version this build speaks.
pub const VERSION: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 40;
/// HMAC-SHA256 tag length.
pub const TAG_LEN: usize = 32;
/// Most records in one datagram (a 65 507-byte UDP payload holds 1363).
pub const MAX_RECORDS: usize = 1300;
const FLAG_TAGGED: u8 = 1;

/// A shared HMAC-SHA256 key (kept as a keyed MAC, cloned per datagram).
#[derive(Clone)]
pub struct AuthKey {
    mac: Hmac<Sha256>,
    len: usize,
}

impl AuthKey {
    /// A key from raw bytes. Fails when shorter than 16 bytes.
    pub fn new(bytes: Vec<u8>) -> Result<AuthKey, KeyError> {
        if bytes.len() < 16 {
            return Err(KeyError::TooShort(bytes.len()));
        }
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(&bytes).map_err(|_| KeyError::TooShort(bytes.len()))?;
        Ok(AuthKey { mac, len: bytes.len() })
    }

    /// Reads a key file (its bytes, trailing whitespace trimmed).
    pub fn from_file(path: &std::path::Path) -> Result<AuthKey, KeyError> {
        let mut b = std::fs::read(path).map_err(|e| KeyError::Read(path.display().to_string(), e.to_string()))?;
        while b.last().is_some_and(|c| c.is_ascii_whitespace()) {
            b.pop();
        }
        AuthKey::new(b)
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.mac.clone()
    }
}

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthKey(<{} bytes>)", self.len)
    }
}

/// A bad shared key.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// Too short to be a secret.
    #[error("HMAC key is {0} bytes; use at least 16 random bytes (e.g. `head -c 32 /dev/urandom > key`)")]
    TooShort(usize),
    /// The key file could not be read.
    #[error("cannot read HMAC key file {0}: {1}")]
    Read(String, String),
}

/// One datagram's content.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The sending agent.
    pub agent_id: u32,
    /// The sender's epoch (its start time, Unix ns).
    pub epoch: u64,
    /// Sequence number within the epoch.
    pub seq: u64,
    /// Probability with which each record was kept by sampling (1 = not sampled).
    pub keep_probability: f64,
    /// The records.
    pub records: Vec<FlowRecord>,
}

/// Why a datagram was rejected. [`DecodeError::kind`] names the counter it increments.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DecodeError {
    /// Shorter than a header.
    #[error("datagram of {0} bytes is shorter than the {HEADER_LEN}-byte header")]
    Truncated(usize),
    /// Not a Workfeed datagram.
    #[error("bad magic {0:02x?}: not a Workfeed datagram")]
    BadMagic([u8; 4]),
    /// A version this build does not speak.
    #[error("version {0}; this build speaks version {VERSION}: upgrade the older side")]
    WrongVersion(u8),
    /// Zero or more than [`MAX_RECORDS`] records.
    #[error("record count {0} outside 1..={MAX_RECORDS}")]
    BadCount(u16),
    /// Header lengths disagree with each other or with the datagram size.
    #[error("count {count} and payload length {payload_len} do not match a {len}-byte datagram")]
    BadLength {
        /// Record count from the header.
        count: u16,
        /// Payload length from the header.
        payload_len: u32,
        /// Bytes received.
        len: usize,
    },
    /// The aggregator requires a tag and the datagram has none.
    #[error("datagram carries no HMAC tag, and this receiver requires one")]
    MissingTag,
    /// The tag does not verify with the shared key.
    #[error("HMAC tag does not verify: the sender uses another key, or the datagram was altered")]
    BadTag,
    /// Keep probability outside (0, 1].
    #[error("keep probability {0} outside (0, 1]")]
    BadProbability(f64),
    /// A record that cannot describe a connection.
    #[error("record {index}: {why}")]
    BadRecord {
        /// 0-based record index.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },
}

impl DecodeError {
    /// A short label for the rejection counter.
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::Truncated(_) => "truncated",
            DecodeError::BadMagic(_) => "bad_magic",
            DecodeError::WrongVersion(_) => "wrong_version",
            DecodeError::BadCount(_) => "bad_count",
            DecodeError::BadLength { .. } => "bad_length",
            DecodeError::MissingTag => "missing_tag",
            DecodeError::BadTag => "bad_tag",
            DecodeError::BadProbability(_) => "bad_probability",
            DecodeError::BadRecord { .. } => "bad_record",
        }
    }
}

/// Encodes a batch; tags it when `key` is given. The caller keeps `records.len()` within
/// 1..=[`MAX_RECORDS`] (more are truncated to [`MAX_RECORDS`]).
pub fn encode(batch: &Batch, key: Option<&AuthKey>) -> Vec<u8> {
    let n = batch.records.len().min(MAX_RECORDS);
    let mut b = Vec::with_capacity(HEADER_LEN + n * RECORD_SIZE + TAG_LEN);
    b.extend_from_slice(&MAGIC);
    b.push(VERSION);
    b.push(if key.is_some() { FLAG_TAGGED } else { 0 });
    b.extend_from_slice(&(n as u16).to_le_bytes());
    b.extend_from_slice(&batch.agent_id.to_le_bytes());
    b.extend_from_slice(&((n * RECORD_SIZE) as u32).to_le_bytes());
    b.extend_from_slice(&batch.epoch.to_le_bytes());
    b.extend_from_slice(&batch.seq.to_le_bytes());
    b.extend_from_slice(&batch.keep_probability.to_le_bytes());
    for r in &batch.records[..n] {
        b.extend_from_slice(&r.to_raw().to_le_bytes());
    }
    if let Some(k) = key {
        let mut m = k.mac();
        m.update(&b);
        b.extend_from_slice(&m.finalize().into_bytes());
    }
    b
}

fn le_u16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn le_u32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le_u64(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}

/// Decodes and verifies a datagram. With `key = Some`, untagged datagrams are rejected
/// ([`DecodeError::MissingTag`]); with `None`, a tag is ignored.
pub fn decode(buf: &[u8], key: Option<&AuthKey>) -> Result<Batch, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::Truncated(buf.len()));
    }
    let magic = [buf[0], buf[1], buf[2], buf[3]];
    if magic != MAGIC {
        return Err(DecodeError::BadMagic(magic));
    }
    if buf[4] != VERSION {
        return Err(DecodeError::WrongVersion(buf[4]));
    }
    let tagged = buf[5] & FLAG_TAGGED != 0;
    let count = le_u16(buf, 6);
    if count == 0 || usize::from(count) > MAX_RECORDS {
        return Err(DecodeError::BadCount(count));
    }
    let payload_len = le_u32(buf, 12);
    let payload = usize::from(count) * RECORD_SIZE;
    let expected = HEADER_LEN + payload + if tagged { TAG_LEN } else { 0 };
    if payload_len as usize != payload || buf.len() != expected || buf[5] & !FLAG_TAGGED != 0 {
        return Err(DecodeError::BadLength {
            count,
            payload_len,
            len: buf.len(),
        });
    }
    let body_end = HEADER_LEN + payload;
    match (key, tagged) {
        (Some(_), false) => return Err(DecodeError::MissingTag),
        (Some(k), true) => {
            let mut m = k.mac();
            m.update(&buf[..body_end]);
            m.verify_slice(&buf[body_end..]).map_err(|_| DecodeError::BadTag)?;
        }
        (None, _) => {}
    }
    let keep_probability = f64::from_le_bytes(buf[32..40].try_into().map_err(|_| DecodeError::Truncated(buf.len()))?);
    if !(keep_probability > 0.0 && keep_probability <= 1.0) {
        return Err(DecodeError::BadProbability(keep_probability));
    }
    let mut records = Vec::with_capacity(usize::from(count));
    for (index, chunk) in buf[HEADER_LEN..body_end].chunks_exact(RECORD_SIZE).enumerate() {
        let raw = RawRecord::from_le_bytes(chunk).ok_or(DecodeError::BadRecord {
            index,
            why: "short record",
        })?;
        if raw.flags & FLAG_ESTABLISHED == 0 {
            return Err(DecodeError::BadRecord {
                index,
                why: "connection never established",
            });
        }
        if raw.end_ns < raw.start_ns {
            return Err(DecodeError::BadRecord {
                index,
                why: "closes before it opens",
            });
        }
        if raw.dscp > 63 || raw.flags & !workfeed_ebpf::FLAGS_KNOWN != 0 {
            return Err(DecodeError::BadRecord {
                index,
                why: "unknown flag bits",
            });
        }
        records.push(FlowRecord::from_raw(&raw, 0));
    }
    Ok(Batch {
        agent_id: le_u32(buf, 8),
        epoch: le_u64(buf, 16),
        seq: le_u64(buf, 24),
        keep_probability,
        records,
    })
}
