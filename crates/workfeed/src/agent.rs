//! The host agent: probe records → wall-clock [`FlowRecord`]s → sampling → batches → UDP.
//!
//! Touches: one UDP socket (sending only) and, in [`run_agent`], the probe ([`crate::loader`]).
//! The [`Sender`] half is independent of the probe so it can be driven by any record source
//! (the benchmark feeds it synthetic records). Every datagram gets the next sequence number of
//! this agent's epoch (the agent's start time), so the aggregator counts loss exactly.

use crate::ipfix_udp::{IpfixExportConfig, IpfixExportError, IpfixExporter};
use crate::jetstream::{JetStreamPublisher, NatsError, NatsTarget};
use crate::loader::{LoadError, Probe, ProbeFilter, RecordReader};
use crate::metrics::{AgentMetrics, ProbeLabel, MISSED_EVENTS};
use crate::record::FlowRecord;
use crate::sampling::KeepProbability;
use crate::wire::{self, AuthKey, Batch, MAX_RECORDS};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;
use tokio::net::UdpSocket;
use workfeed_ebpf::RawRecord;

/// Settings of an agent.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// This agent's id (unique among the aggregator's agents).
    pub agent_id: u32,
    /// The aggregator to send datagrams to over UDP (none: only to the other destinations).
    pub aggregator: Option<SocketAddr>,
    /// Keep probability for hash-based sampling.
    pub sample: KeepProbability,
    /// Records per datagram (1..=[`MAX_RECORDS`]); 24 keeps a tagged datagram under 1 500 bytes.
    pub batch_records: usize,
    /// Longest a record waits before its datagram is sent.
    pub flush_interval: Duration,
    /// Tag datagrams with HMAC-SHA256 under this key.
    pub key: Option<AuthKey>,
    /// Also export every kept record as IPFIX to these collectors.
    pub ipfix: Option<IpfixExportConfig>,
    /// Also publish every datagram to this JetStream stream, under `<prefix>.<source>`.
    pub jetstream: Option<(NatsTarget, String)>,
}

impl AgentConfig {
    /// Defaults for everything but the destination.
    pub fn new(agent_id: u32, aggregator: SocketAddr) -> AgentConfig {
        AgentConfig {
            agent_id,
            aggregator: Some(aggregator),
            sample: KeepProbability::ALL,
            batch_records: 24,
            flush_interval: Duration::from_millis(200),
            key: None,
            ipfix: None,
            jetstream: None,
        }
    }
}

/// Why the agent stopped.
#[derive(Debug, Error)]
pub enum AgentError {
    /// The probe failed.
    #[error(transparent)]
    Probe(#[from] LoadError),
    /// The socket failed.
    #[error("agent socket: {0}")]
    Io(#[from] std::io::Error),
    /// A setting is out of range.
    #[error("batch_records = {0}: use 1..={MAX_RECORDS}")]
    BadBatch(usize),
    /// The IPFIX exporter could not start.
    #[error("IPFIX export")]
    Ipfix(#[from] IpfixExportError),
    /// The JetStream publisher could not start.
    #[error("JetStream publishing")]
    JetStream(#[from] NatsError),
    /// Nowhere to send.
    #[error("the agent has no destination: give an aggregator, a NATS server or both")]
    NoDestination,
}

/// Nanoseconds to add to a CLOCK_MONOTONIC reading to get Unix time, now.
pub fn monotonic_to_unix_offset() -> i128 {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: ts is a valid timespec to write into.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    };
    let (m0, r, m1) = (
        read(libc::CLOCK_MONOTONIC),
        read(libc::CLOCK_REALTIME),
        read(libc::CLOCK_MONOTONIC),
    );
    r - (m0 + m1) / 2
}

/// Longest one flush waits for JetStream's acknowledgements (what is not acknowledged by then
/// stays queued for the next flush).
const JETSTREAM_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// The sending half: sampling, batching, sequence numbers, UDP.
#[derive(Debug)]
pub struct Sender {
    cfg: AgentConfig,
    socket: UdpSocket,
    epoch: u64,
    seq: u64,
    pending: Vec<FlowRecord>,
    ipfix: Option<IpfixExporter>,
    jetstream: Option<JetStreamPublisher>,
    metrics: AgentMetrics,
}

impl Sender {
    /// Binds an ephemeral UDP socket of the aggregator's address family, and connects to the
    /// JetStream server if one is configured.
    pub async fn new(cfg: AgentConfig, metrics: AgentMetrics) -> Result<Sender, AgentError> {
        if cfg.batch_records == 0 || cfg.batch_records > MAX_RECORDS {
            return Err(AgentError::BadBatch(cfg.batch_records));
        }
        if cfg.aggregator.is_none() && cfg.jetstream.is_none() {
            return Err(AgentError::NoDestination);
        }
        let jetstream = match &cfg.jetstream {
            Some((t, source)) => Some(JetStreamPublisher::connect(t, source).await?),
            None => None,
        };
        let bind: SocketAddr = if cfg.aggregator.is_none_or(|a| a.is_ipv4()) {
            "0.0.0.0:0".parse().map_err(std::io::Error::other)?
        } else {
            "[::]:0".parse().map_err(std::io::Error::other)?
        };
        let socket = UdpSocket::bind(bind).await?;
        let ipfix = match &cfg.ipfix {
            Some(c) => Some(IpfixExporter::new(c.clone(), metrics.ipfix_export.clone()).await?),
            None => None,
        };
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Ok(Sender {
            pending: Vec::with_capacity(cfg.batch_records),
            cfg,
            socket,
            epoch,
            seq: 0,
            ipfix,
            jetstream,
            metrics,
        })
    }

    /// The next sequence number.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Queues a record (unless sampled out); sends a datagram when the batch is full.
    pub async fn push(&mut self, r: FlowRecord) {
        self.metrics.records_captured.inc();
        if !self.cfg.sample.keeps(&r.key()) {
            self.metrics.records_sampled_out.inc();
            return;
        }
        self.pending.push(r);
        if let Some(x) = self.ipfix.as_mut() {
            x.push(r, self.cfg.sample);
        }
        if self.pending.len() >= self.cfg.batch_records {
            self.flush().await;
        }
    }

    /// Sends what is queued, if anything, to the aggregator and to the IPFIX collectors (which
    /// also get a due template refresh when nothing is queued). A failed send is counted; its
    /// sequence number is still used, so the aggregator sees the gap.
    pub async fn flush(&mut self) {
        if let Some(x) = self.ipfix.as_mut() {
            x.flush(crate::aggregator::unix_now()).await;
        }
        if let Some(js) = self.jetstream.as_mut().filter(|j| j.queued() > 0) {
            js.flush(JETSTREAM_FLUSH_TIMEOUT).await;
        }
        if self.pending.is_empty() {
            return;
        }
        let batch = Batch {
            agent_id: self.cfg.agent_id,
            epoch: self.epoch,
            seq: self.seq,
            keep_probability: self.cfg.sample.get(),
            records: std::mem::take(&mut self.pending),
        };
        self.seq += 1;
        let bytes = wire::encode(&batch, self.cfg.key.as_ref());
        if let Some(js) = self.jetstream.as_mut() {
            js.queue(
                format!("{}-{}-{}", batch.agent_id, batch.epoch, batch.seq),
                bytes.clone(),
            );
            js.flush(JETSTREAM_FLUSH_TIMEOUT).await;
        }
        let sent = match self.cfg.aggregator {
            None => Ok(()),
            Some(to) => self.socket.send_to(&bytes, to).await.map(|_| ()).inspect_err(|e| {
                tracing::warn!(error = %e, %to, "sending a Workfeed datagram failed");
            }),
        };
        match sent {
            Ok(()) => {
                self.metrics.datagrams_sent.inc();
                self.metrics.records_sent.inc_by(batch.records.len() as u64);
            }
            Err(_) => {
                self.metrics.send_errors.inc();
            }
        }
        self.pending = batch.records;
        self.pending.clear();
    }

    /// The flush interval.
    pub fn flush_interval(&self) -> Duration {
        self.cfg.flush_interval
    }
}

fn publish_probe_stats(probe: &Probe, metrics: &AgentMetrics) {
    let set = |name: &str, v: u64| {
        metrics
            .probe
            .get_or_create(&ProbeLabel { counter: name.into() })
            .set(i64::try_from(v).unwrap_or(i64::MAX));
    };
    match probe.stats() {
        Ok(stats) => stats.into_iter().for_each(|(s, v)| set(s.name(), v)),
        Err(e) => tracing::warn!(error = %e, "reading the probe's counters failed"),
    }
    match probe.missed_events() {
        Ok(v) => set(MISSED_EVENTS, v),
        Err(e) => tracing::warn!(error = %e, "reading the probe programs' missed events failed"),
    }
}

/// A running agent: the attached probe, its ring-buffer reader and the sender.
#[derive(Debug)]
pub struct Agent {
    probe: Probe,
    reader: RecordReader,
    sender: Sender,
    metrics: AgentMetrics,
}

impl Agent {
    /// Loads and attaches the probe with `filter` and binds the sending socket. Capture starts
    /// here: connections opened after this returns are recorded. Needs a tokio runtime.
    pub async fn start(cfg: AgentConfig, filter: &ProbeFilter, metrics: AgentMetrics) -> Result<Agent, AgentError> {
        let mut probe = Probe::load(filter)?;
        let reader = probe
            .take_records()?
            .ok_or(LoadError::MissingPart(workfeed_ebpf::names::RECORDS_MAP))?;
        let sender = Sender::new(cfg, metrics.clone()).await?;
        tracing::info!(filter = ?filter, "Workfeed probe attached to the raw tracepoints inet_sock_set_state and tcp_destroy_sock");
        Ok(Agent {
            probe,
            reader,
            sender,
            metrics,
        })
    }

    /// The probe (for its counters or to change filters).
    pub fn probe_mut(&mut self) -> &mut Probe {
        &mut self.probe
    }

    /// Forwards records until `shutdown` completes; then drains the ring buffer, sends what is
    /// left and detaches the probe.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), AgentError> {
        let mut tick = tokio::time::interval(self.sender.flush_interval());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut raw: Vec<RawRecord> = Vec::with_capacity(1024);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tick.tick() => {
                    // The probe wakes us only for full batches: collect the stragglers here.
                    while self.reader.try_read(&mut raw, 1024).records > 0 {
                        self.forward(&mut raw).await;
                    }
                    self.sender.flush().await;
                    publish_probe_stats(&self.probe, &self.metrics);
                }
                got = self.reader.read(&mut raw, 1024) => {
                    let n = got?;
                    if n.skipped > 0 {
                        tracing::warn!(skipped = n.skipped, "ring-buffer items of the wrong size");
                    }
                    self.forward(&mut raw).await;
                }
            }
        }
        // Drain what the kernel already wrote, then send it. Bounded in time: while traffic
        // continues the ring buffer never empties.
        let until = tokio::time::Instant::now() + Duration::from_millis(200);
        while tokio::time::Instant::now() < until && self.reader.try_read(&mut raw, 1024).records > 0 {
            self.forward(&mut raw).await;
        }
        self.sender.flush().await;
        publish_probe_stats(&self.probe, &self.metrics);
        Ok(())
    }

    async fn forward(&mut self, raw: &mut Vec<RawRecord>) {
        let offset = monotonic_to_unix_offset();
        for r in raw.drain(..) {
            self.sender.push(FlowRecord::from_raw(&r, offset)).await;
        }
    }
}

/// Loads the probe with `filter` and runs the agent until `shutdown` completes; then flushes.
pub async fn run_agent(
    cfg: AgentConfig,
    filter: ProbeFilter,
    metrics: AgentMetrics,
    shutdown: impl Future<Output = ()>,
) -> Result<(), AgentError> {
    Agent::start(cfg, &filter, metrics).await?.run(shutdown).await
}
