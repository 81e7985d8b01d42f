//! The aggregator's core: datagrams in, a de-duplicated connection table out. Pure: the caller
//! supplies bytes and times; no sockets, no clock.
//!
//! A datagram is decoded ([`crate::wire::decode`]), checked against its agent's sequence state
//! ([`SeqTracker`]) and then each record is merged into the table. Both sockets of a connection
//! (client and server, possibly reported by different agents) merge into one [`Connection`] when
//! their keys match and their open times are within the merge tolerance (hosts' clocks differ a
//! little; a reused port pair is a new connection). A side reported again is a duplicate.
//! Every rejection increments a counter in [`AggregatorMetrics`], and so do connections that only
//! one side ever reported (a record lost on the way, or a peer without an agent).
//!
//! A flow's class is the DSCP its sender's socket marked its packets with; when only the receiver
//! reported, a marked receiver stands in, and an unmarked one (a passive socket carries no TOS of
//! the client's) is no evidence: the flow is unclassified ([`DscpEvidence::Unknown`]), never
//! silently put in the class of DSCP 0.

use crate::metrics::{AgentLabel, AggregatorMetrics, ReasonLabel, SideLabel};
use crate::record::{ConnKey, FlowRecord};
use crate::sampling::KeepProbability;
use crate::seq::{SeqTracker, Verdict};
use crate::wire::{self, AuthKey};
use polyphony_spec::{Bytes, Dscp, Nanos};
use prometheus_client::metrics::gauge::Gauge;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::net::SocketAddrV4;

/// One connection with whichever of its sockets were reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// Client and server.
    pub key: ConnKey,
    /// The client socket's record.
    pub client: Option<FlowRecord>,
    /// The server socket's record.
    pub server: Option<FlowRecord>,
    /// Probability this connection was kept by sampling.
    pub keep: KeepProbability,
}

/// Which socket a flow's DSCP was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DscpEvidence {
    /// The sender's socket: the marking its packets carried (DSCP 0 included: it sent them
    /// unmarked).
    Sender,
    /// The receiver's socket, which is marked (non-zero DSCP); the sender's was not reported.
    Receiver,
    /// None: the sender's socket was not reported and the receiver's is unmarked (a passive
    /// socket does not carry the client's marking), so the class is unknown.
    Unknown,
}

/// One direction of a connection that carried payload: what the model calls a flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapturedFlow {
    /// The connection.
    pub key: ConnKey,
    /// Sender of the payload.
    pub src: SocketAddrV4,
    /// Receiver of the payload.
    pub dst: SocketAddrV4,
    /// The flow's DSCP, from the socket [`CapturedFlow::dscp_evidence`] names; DSCP 0 stands in
    /// when that is [`DscpEvidence::Unknown`], so use [`CapturedFlow::class`] to classify.
    pub dscp: Dscp,
    /// Where [`CapturedFlow::dscp`] came from.
    pub dscp_evidence: DscpEvidence,
    /// Payload bytes: the sender's acknowledged count, or the receiver's received count when
    /// the sender's socket was not reported.
    pub size: Bytes,
    /// Connection open (the earliest reported side), Unix ns.
    pub start: Nanos,
    /// Connection close (the earliest reported side), Unix ns.
    pub end: Nanos,
    /// Weight 1/p.
    pub weight: f64,
    /// Smoothed RTT reported by the sender (0 when not reported).
    pub srtt: Nanos,
    /// Retransmissions reported by the sender.
    pub retrans: u16,
    /// Whether both sockets were reported.
    pub both_sides: bool,
}

impl CapturedFlow {
    /// The flow's class, `None` when nothing reported tells it ([`DscpEvidence::Unknown`]).
    pub fn class(&self) -> Option<Dscp> {
        (self.dscp_evidence != DscpEvidence::Unknown).then_some(self.dscp)
    }
}

/// The DSCP of the flow `from` → `to` and where it came from: the sender's marking when its
/// socket was reported, else a marked receiver's, else unknown.
pub fn flow_dscp(from: Option<&FlowRecord>, to: Option<&FlowRecord>) -> (Dscp, DscpEvidence) {
    match (from, to) {
        (Some(f), _) => (f.dscp, DscpEvidence::Sender),
        (None, Some(t)) if t.dscp.value() != 0 => (t.dscp, DscpEvidence::Receiver),
        _ => (Dscp::from_tos(0), DscpEvidence::Unknown),
    }
}

impl Connection {
    /// Open time: the earliest reported side's, Unix ns.
    pub fn start(&self) -> Nanos {
        match (&self.client, &self.server) {
            (Some(c), Some(s)) => c.start.min(s.start),
            (Some(r), None) | (None, Some(r)) => r.start,
            (None, None) => Nanos(0),
        }
    }
    /// Close time: the earliest reported side's, Unix ns.
    pub fn end(&self) -> Nanos {
        match (&self.client, &self.server) {
            (Some(c), Some(s)) => c.end.min(s.end),
            (Some(r), None) | (None, Some(r)) => r.end,
            (None, None) => Nanos(0),
        }
    }

    /// Whether exactly one of its sockets was reported.
    pub fn one_sided(&self) -> bool {
        self.client.is_some() != self.server.is_some()
    }

    /// The flows of this connection under `directions`, client→server first.
    pub fn flows(&self, directions: FlowDirections) -> Vec<CapturedFlow> {
        let mut all = self.directions();
        if directions == FlowDirections::Dominant && all.len() == 2 {
            // Ties go to client→server (index 0).
            let keep = usize::from(all[1].size > all[0].size);
            all.swap(0, keep);
            all.truncate(1);
        }
        all
    }

    /// The directions that carried payload, client→server first.
    fn directions(&self) -> Vec<CapturedFlow> {
        let mut out = Vec::with_capacity(2);
        let (start, end) = (self.start(), self.end());
        for (from, to, src, dst) in [
            (&self.client, &self.server, self.key.client, self.key.server),
            (&self.server, &self.client, self.key.server, self.key.client),
        ] {
            // The sender's acknowledged count is authoritative (it excludes SYN and FIN by
            // sequence arithmetic); the receiver's count stands in when the sender is missing.
            let size = match (from, to) {
                (Some(f), _) => f.bytes_sent.0,
                (None, Some(t)) => t.bytes_received.0,
                (None, None) => 0,
            };
            if size == 0 {
                continue;
            }
            let (dscp, dscp_evidence) = flow_dscp(from.as_ref(), to.as_ref());
            out.push(CapturedFlow {
                key: self.key,
                src,
                dst,
                dscp,
                dscp_evidence,
                size: Bytes(size),
                start,
                end,
                weight: self.keep.weight(),
                srtt: from.map_or(Nanos(0), |r| r.srtt),
                retrans: from.map_or(0, |r| r.retrans),
                both_sides: self.client.is_some() && self.server.is_some(),
            });
        }
        out
    }
}

/// Which directions of a connection become flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FlowDirections {
    /// One flow per connection: the direction that carried more payload (a request/response or
    /// an application-level ack does not add a second, tiny flow). The default: it matches a
    /// workload generator's notion of a flow.
    #[default]
    Dominant,
    /// Every direction that carried payload is a flow.
    Both,
}

/// Settings of the collector.
#[derive(Debug, Clone)]
pub struct CollectorConfig {
    /// Require and verify HMAC tags with this key.
    pub key: Option<AuthKey>,
    /// Additional sampling at the aggregator.
    pub sample: KeepProbability,
    /// Two sides of a connection merge when their open times differ by at most this much.
    pub merge_tolerance: Nanos,
}

impl Default for CollectorConfig {
    fn default() -> Self {
        CollectorConfig {
            key: None,
            sample: KeepProbability::ALL,
            merge_tolerance: Nanos::SECOND,
        }
    }
}

/// What an accepted datagram contributed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Accepted {
    /// Records newly merged into the table, with their keep probability (to forward upstream).
    pub records: Vec<(FlowRecord, KeepProbability)>,
}

/// The de-duplicating connection table.
#[derive(Debug)]
pub struct Collector {
    cfg: CollectorConfig,
    seq: SeqTracker,
    /// The connections held, in arrival order (appended to; rebuilt by eviction).
    slab: Vec<Connection>,
    /// Their positions in `slab` by key: nearly every key has one connection (a reused port
    /// pair adds another), so the first is stored inline and the table stays small and dense.
    /// Keys come from the network, so the hasher is seeded per process (foldhash), not a fixed
    /// function an attacker could collide.
    index: HashMap<ConnKey, SmallVec<[u32; 1]>, foldhash::fast::RandomState>,
    /// Each agent's loss gauge, looked up once (a label lookup allocates).
    lost_gauges: HashMap<u32, Gauge>,
    /// No connection held closed before this (a lower bound), so eviction can skip the scan.
    oldest_end: Nanos,
    count: usize,
    one_sided: usize,
    metrics: AggregatorMetrics,
}

impl Collector {
    /// An empty table that counts into `metrics`.
    pub fn new(cfg: CollectorConfig, metrics: AggregatorMetrics) -> Collector {
        Collector {
            cfg,
            seq: SeqTracker::default(),
            slab: Vec::new(),
            index: HashMap::default(),
            lost_gauges: HashMap::new(),
            oldest_end: Nanos(u64::MAX),
            count: 0,
            one_sided: 0,
            metrics,
        }
    }

    /// The counters.
    pub fn metrics(&self) -> &AggregatorMetrics {
        &self.metrics
    }

    fn reject(&self, reason: &str) {
        self.metrics
            .datagrams_rejected
            .get_or_create(&ReasonLabel { reason: reason.into() })
            .inc();
    }
    fn drop_record(&self, reason: &str) {
        self.metrics
            .records_dropped
            .get_or_create(&ReasonLabel { reason: reason.into() })
            .inc();
    }

    /// Takes one datagram. Errors are counted (by reason) and returned; they never panic.
    pub fn ingest(&mut self, datagram: &[u8]) -> Result<Accepted, wire::DecodeError> {
        let batch = match wire::decode(datagram, self.cfg.key.as_ref()) {
            Ok(b) => b,
            Err(e) => {
                self.reject(e.kind());
                return Err(e);
            }
        };
        let verdict = self.seq.observe(batch.agent_id, batch.epoch, batch.seq);
        let metrics = &self.metrics;
        self.lost_gauges
            .entry(batch.agent_id)
            .or_insert_with(|| {
                metrics
                    .agent_lost_datagrams
                    .get_or_create(&AgentLabel {
                        agent: batch.agent_id.to_string(),
                    })
                    .clone()
            })
            .set(i64::try_from(self.seq.lost(batch.agent_id)).unwrap_or(i64::MAX));
        let reason = match verdict {
            Verdict::Accept => None,
            Verdict::Duplicate => Some("duplicate"),
            Verdict::TooOld => Some("too_old"),
            Verdict::StaleEpoch => Some("stale_epoch"),
        };
        if let Some(r) = reason {
            self.reject(r);
            return Ok(Accepted::default());
        }
        self.metrics.datagrams_accepted.inc();
        // Decoding checked the probability, so this cannot fail; fall back to "unsampled".
        let keep = KeepProbability::new(batch.keep_probability).unwrap_or(KeepProbability::ALL);
        let mut out = Accepted::default();
        for r in batch.records {
            if let Some(k) = self.insert(r, keep) {
                out.records.push((r, k));
            }
        }
        Ok(out)
    }

    /// Merges one record; returns its keep probability if it was new.
    pub fn insert(&mut self, r: FlowRecord, keep: KeepProbability) -> Option<KeepProbability> {
        let key = r.key();
        if !self.cfg.sample.keeps(&key) {
            self.drop_record("sampled_out");
            return None;
        }
        let keep = keep.and(self.cfg.sample);
        let tol = self.cfg.merge_tolerance.0;
        let list = self.index.entry(key).or_default();
        let close = |c: &Connection| {
            let s = c.start().0;
            s.abs_diff(r.start.0) <= tol
        };
        if let Some(&i) = list.iter().find(|&&i| close(&self.slab[i as usize])) {
            let c = &mut self.slab[i as usize];
            let side = if r.active { &mut c.client } else { &mut c.server };
            match side {
                Some(existing) if *existing == r => {
                    self.drop_record("duplicate");
                    return None;
                }
                Some(_) => {
                    // The same socket role twice with different content inside the merge window:
                    // keep the first, count the other.
                    self.drop_record("conflict");
                    return None;
                }
                None => {
                    *side = Some(r);
                    c.keep = c.keep.and(keep);
                    self.one_sided -= 1;
                }
            }
        } else {
            let Ok(i) = u32::try_from(self.slab.len()) else {
                self.drop_record("table_full");
                return None;
            };
            list.push(i);
            let (client, server) = if r.active { (Some(r), None) } else { (None, Some(r)) };
            self.slab.push(Connection {
                key,
                client,
                server,
                keep,
            });
            self.count += 1;
            self.one_sided += 1;
            self.metrics.connections.set(self.count as i64);
        }
        self.metrics.one_sided_connections.set(self.one_sided as i64);
        self.metrics.records_accepted.inc();
        self.oldest_end = self.oldest_end.min(r.end);
        Some(keep)
    }

    /// Forgets connections that closed before `t` (Unix ns). Those only one side ever reported
    /// are counted by the missing side in [`AggregatorMetrics::one_sided_evicted`].
    pub fn evict_before(&mut self, t: Nanos) {
        // No connection closed before `oldest_end`: nothing to scan for.
        if t <= self.oldest_end {
            return;
        }
        let mut oldest = Nanos(u64::MAX);
        let (mut removed, mut one_sided) = (0, 0);
        let metrics = &self.metrics;
        self.slab.retain(|c| {
            if c.end() >= t {
                oldest = oldest.min(c.end());
                return true;
            }
            removed += 1;
            if c.one_sided() {
                one_sided += 1;
                let missing = if c.client.is_none() { "client" } else { "server" };
                metrics
                    .one_sided_evicted
                    .get_or_create(&SideLabel {
                        missing: missing.into(),
                    })
                    .inc();
            }
            false
        });
        self.index.clear();
        for (i, c) in self.slab.iter().enumerate() {
            // The slab held at most u32::MAX + 1 entries before, and fewer now.
            self.index.entry(c.key).or_default().push(i as u32);
        }
        self.oldest_end = oldest;
        self.count -= removed;
        self.one_sided -= one_sided;
        self.metrics.connections.set(self.count as i64);
        self.metrics.one_sided_connections.set(self.one_sided as i64);
    }

    /// Every connection held.
    pub fn connections(&self) -> impl Iterator<Item = &Connection> {
        self.slab.iter()
    }

    /// The flows whose connection opened in `[from, to)`, sorted by start then key.
    pub fn flows_between(&self, from: Nanos, to: Nanos, directions: FlowDirections) -> Vec<CapturedFlow> {
        let mut v: Vec<CapturedFlow> = self
            .connections()
            .filter(|c| (from..to).contains(&c.start()))
            .flat_map(|c| c.flows(directions))
            .collect();
        v.sort_by_key(|f| (f.start, f.key, f.src));
        v
    }

    /// Agents seen, with (datagrams accepted in the current epoch, datagrams lost).
    pub fn agents(&self) -> Vec<(u32, u64, u64)> {
        let mut v: Vec<_> = self.seq.agents().collect();
        v.sort_unstable();
        v
    }
}
