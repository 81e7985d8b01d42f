//! The rack aggregator: a UDP server in front of a [`Collector`], an upstream forwarder, and the
//! workload-window query the controller calls.
//!
//! Touches: one UDP socket bound to `listen` (receive) and, with an upstream, one ephemeral UDP
//! socket (send). [`Aggregator`] is a cheap clonable handle: one clone runs [`Aggregator::serve`],
//! others call [`Aggregator::window`]. Forwarding re-sends every newly accepted record, with its
//! keep probability, as this aggregator's own agent stream (own id, epoch and sequence numbers),
//! so the upstream de-duplicates and counts loss exactly as it does for agents.
//!
//! IPFIX (RFC 7011, [`crate::ipfix`]): with `ipfix_listen` the aggregator also reads IPFIX
//! messages from existing exporters (switches, hosts' flow exporters, other Workfeed agents
//! exporting IPFIX) on a second UDP socket into the same connection table; with `ipfix_export`
//! it sends every newly accepted record, from either input, to IPFIX collectors.

use crate::agent::{AgentConfig, Sender};
use crate::collector::{Collector, CollectorConfig, Connection, FlowDirections};
use crate::hosts::HostMap;
use crate::ipfix::DOCUMENTATION_PEN;
use crate::ipfix_udp::{IpfixExportConfig, IpfixExporter, IpfixImporter};
use crate::metrics::{AgentMetrics, AggregatorMetrics};
use crate::record::FlowRecord;
use crate::sampling::KeepProbability;
use crate::window::WorkloadWindow;
use crate::wire::AuthKey;
use polyphony_spec::{Nanos, SpecError};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use thiserror::Error;
use tokio::net::UdpSocket;

/// Settings of an aggregator.
#[derive(Debug, Clone)]
pub struct AggregatorConfig {
    /// Address to receive agents' datagrams on.
    pub listen: SocketAddr,
    /// Verify HMAC tags with this key (untagged datagrams are then dropped).
    pub key: Option<AuthKey>,
    /// Further sampling here (nested with the agents').
    pub sample: KeepProbability,
    /// How far apart two sides' open times may be and still merge.
    pub merge_tolerance: Duration,
    /// How long closed connections are kept for windows.
    pub retention: Duration,
    /// Socket receive buffer to request, bytes (root may exceed `net.core.rmem_max`).
    pub recv_buffer: usize,
    /// Address → host id for windows.
    pub hosts: HostMap,
    /// Which directions of a connection become flows in windows.
    pub directions: FlowDirections,
    /// Forward accepted records here.
    pub upstream: Option<UpstreamConfig>,
    /// Also read IPFIX messages from exporters on this UDP address.
    pub ipfix_listen: Option<SocketAddr>,
    /// The private enterprise number under which imported IPFIX carries Workfeed's own
    /// elements ([`crate::ipfix`]).
    pub ipfix_enterprise: u32,
    /// Export every newly accepted record as IPFIX to these collectors.
    pub ipfix_export: Option<IpfixExportConfig>,
}

/// Where and how to forward.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// The upstream aggregator.
    pub addr: SocketAddr,
    /// This aggregator's agent id towards the upstream.
    pub id: u32,
    /// Tag forwarded datagrams with this key.
    pub key: Option<AuthKey>,
}

impl AggregatorConfig {
    /// Defaults for everything but the address.
    pub fn new(listen: SocketAddr) -> AggregatorConfig {
        AggregatorConfig {
            listen,
            key: None,
            sample: KeepProbability::ALL,
            merge_tolerance: Duration::from_secs(1),
            retention: Duration::from_secs(600),
            recv_buffer: 8 << 20,
            hosts: HostMap::default(),
            directions: FlowDirections::default(),
            upstream: None,
            ipfix_listen: None,
            ipfix_enterprise: DOCUMENTATION_PEN,
            ipfix_export: None,
        }
    }
}

/// Why the aggregator stopped or a window could not be built.
#[derive(Debug, Error)]
pub enum AggregatorError {
    /// Socket trouble.
    #[error("aggregator socket {addr}: {source}")]
    Io {
        /// The address involved.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The forwarder could not start.
    #[error("upstream forwarder: {0}")]
    Upstream(#[from] crate::agent::AgentError),
    /// The IPFIX exporter could not start.
    #[error("IPFIX export")]
    IpfixExport(#[from] crate::ipfix_udp::IpfixExportError),
    /// The aggregator was built without a socket ([`Aggregator::detached`]).
    #[error("this aggregator has no socket: it is fed through Aggregator::ingest")]
    NoSocket,
    /// The captured flows do not form a valid workload.
    #[error("building the workload window: {0}")]
    Window(#[from] SpecError),
}

/// How often the serving loop forgets connections past retention (each time it scans the whole
/// table, when anything in it is old enough).
const EVICT_EVERY: Duration = Duration::from_secs(5);

/// Unix time now.
pub fn unix_now() -> Nanos {
    Nanos(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    )
}

/// A handle on a running (or about to run) aggregator.
#[derive(Debug, Clone)]
pub struct Aggregator {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cfg: AggregatorConfig,
    collector: Mutex<Collector>,
    socket: Option<UdpSocket>,
    ipfix_socket: Option<UdpSocket>,
    metrics: AggregatorMetrics,
}

fn set_recv_buffer(socket: &UdpSocket, bytes: usize) {
    use std::os::fd::AsRawFd;
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a valid socket fd and a pointer to a c_int of the stated size.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return;
        }
    }
    tracing::warn!(
        bytes,
        "could not set the aggregator's receive buffer; bursts may be lost"
    );
}

impl Aggregator {
    /// Binds the listening socket. `metrics` receives every count (register it beforehand or
    /// after, it is shared).
    pub async fn bind(cfg: AggregatorConfig, metrics: AggregatorMetrics) -> Result<Aggregator, AggregatorError> {
        let socket = UdpSocket::bind(cfg.listen)
            .await
            .map_err(|source| AggregatorError::Io {
                addr: cfg.listen,
                source,
            })?;
        set_recv_buffer(&socket, cfg.recv_buffer);
        let socket = Some(socket);
        let ipfix_socket = match cfg.ipfix_listen {
            None => None,
            Some(addr) => {
                let s = UdpSocket::bind(addr)
                    .await
                    .map_err(|source| AggregatorError::Io { addr, source })?;
                set_recv_buffer(&s, cfg.recv_buffer);
                Some(s)
            }
        };
        let collector = collector_for(&cfg, &metrics);
        Ok(Aggregator {
            inner: Arc::new(Inner {
                cfg,
                collector: Mutex::new(collector),
                socket,
                ipfix_socket,
                metrics,
            }),
        })
    }

    /// An aggregator without sockets, fed by the caller through [`Aggregator::ingest`] and
    /// [`Aggregator::restore`] (e.g. from a JetStream consumer); `listen`, `ipfix_listen`,
    /// `upstream` and `ipfix_export` of `cfg` are not used.
    pub fn detached(cfg: AggregatorConfig, metrics: AggregatorMetrics) -> Aggregator {
        let collector = collector_for(&cfg, &metrics);
        Aggregator {
            inner: Arc::new(Inner {
                cfg,
                collector: Mutex::new(collector),
                socket: None,
                ipfix_socket: None,
                metrics,
            }),
        }
    }

    /// Takes one Workfeed datagram as if it had arrived on the socket (verified, de-duplicated,
    /// counted); returns the records it newly added.
    pub fn ingest(&self, datagram: &[u8]) -> Result<crate::collector::Accepted, crate::wire::DecodeError> {
        self.collector().ingest(datagram)
    }

    /// Puts back records taken earlier (e.g. replayed from a journal), without sequence checks;
    /// records already held are dropped as duplicates.
    pub fn restore(&self, records: &[(FlowRecord, KeepProbability)]) {
        let mut c = self.collector();
        for (r, k) in records {
            c.insert(*r, *k);
        }
    }

    /// Every record held, with its connection's keep probability (for a journal's compaction).
    pub fn records(&self) -> Vec<(FlowRecord, KeepProbability)> {
        self.collector()
            .connections()
            .flat_map(|c| [c.client, c.server].into_iter().flatten().map(move |r| (r, c.keep)))
            .collect()
    }

    /// Forgets connections that closed before `t` (Unix ns); the serving loop does this by
    /// itself, a detached aggregator's owner calls it.
    pub fn evict_before(&self, t: Nanos) {
        self.collector().evict_before(t);
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, AggregatorError> {
        let socket = self.inner.socket.as_ref().ok_or(AggregatorError::NoSocket)?;
        socket.local_addr().map_err(|source| AggregatorError::Io {
            addr: self.inner.cfg.listen,
            source,
        })
    }

    /// The bound IPFIX address, if it reads IPFIX (useful with port 0).
    pub fn ipfix_addr(&self) -> Option<Result<SocketAddr, AggregatorError>> {
        let s = self.inner.ipfix_socket.as_ref()?;
        let addr = self.inner.cfg.ipfix_listen.unwrap_or(self.inner.cfg.listen);
        Some(s.local_addr().map_err(|source| AggregatorError::Io { addr, source }))
    }

    /// The counters.
    pub fn metrics(&self) -> &AggregatorMetrics {
        &self.inner.metrics
    }

    fn collector(&self) -> MutexGuard<'_, Collector> {
        // A panic while holding the lock cannot leave the table half-updated in a way that
        // matters for counting; keep serving.
        self.inner.collector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The workload of connections opened in the last `span`, up to now.
    pub fn window(&self, span: Duration) -> Result<WorkloadWindow, AggregatorError> {
        let to = unix_now();
        self.window_between(to.saturating_sub(Nanos(span.as_nanos() as u64)), to)
    }

    /// The workload of connections opened in `[from, to)` (Unix ns).
    pub fn window_between(&self, from: Nanos, to: Nanos) -> Result<WorkloadWindow, AggregatorError> {
        let flows = self.collector().flows_between(from, to, self.inner.cfg.directions);
        let w = WorkloadWindow::build(from, to, flows, &self.inner.cfg.hosts)?;
        self.inner.metrics.window_unclassified.set(w.unclassified as i64);
        if w.unclassified > 0 {
            tracing::debug!(
                unclassified = w.unclassified,
                "flows left out of the window: only their receiver reported, unmarked, so their class is unknown"
            );
        }
        Ok(w)
    }

    /// The connections (both sides' records) that opened in `[from, to)` (Unix ns).
    pub fn connections_between(&self, from: Nanos, to: Nanos) -> Vec<Connection> {
        self.collector()
            .connections()
            .filter(|c| (from..to).contains(&c.start()))
            .cloned()
            .collect()
    }

    /// Agents seen, with (datagrams accepted in their current epoch, datagrams lost).
    pub fn agents(&self) -> Vec<(u32, u64, u64)> {
        self.collector().agents()
    }

    /// Receives until `shutdown` completes.
    pub async fn serve(&self, shutdown: impl Future<Output = ()>) -> Result<(), AggregatorError> {
        let mut forward = match &self.inner.cfg.upstream {
            None => None,
            Some(u) => {
                let mut c = AgentConfig::new(u.id, u.addr);
                c.key = u.key.clone();
                c.batch_records = 24;
                Some(Forwarder::new(c).await?)
            }
        };
        let mut export = match &self.inner.cfg.ipfix_export {
            None => None,
            Some(c) => Some(IpfixExporter::new(c.clone(), self.inner.metrics.ipfix_export.clone()).await?),
        };
        let mut importer = IpfixImporter::new(self.inner.cfg.ipfix_enterprise);
        let mut buf = vec![0u8; 65_536];
        let mut ipfix_buf = vec![0u8; 65_536];
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let retention = Nanos(self.inner.cfg.retention.as_nanos() as u64);
        let mut evicted = tokio::time::Instant::now();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tick.tick() => {
                    if evicted.elapsed() >= EVICT_EVERY {
                        self.collector().evict_before(unix_now().saturating_sub(retention));
                        evicted = tokio::time::Instant::now();
                    }
                    if let Some(f) = forward.as_mut() {
                        f.flush(&self.inner.metrics).await;
                    }
                    if let Some(x) = export.as_mut() {
                        x.flush(unix_now()).await;
                    }
                }
                got = recv_optional(self.inner.socket.as_ref(), &mut buf) => {
                    let (n, from) = got.map_err(|source| AggregatorError::Io { addr: self.inner.cfg.listen, source })?;
                    let accepted = self.collector().ingest(&buf[..n]);
                    match accepted {
                        Ok(a) => self.pass_on(a.records, &mut forward, &mut export).await,
                        Err(e) => tracing::debug!(%from, error = %e, "rejected a datagram"),
                    }
                }
                got = recv_optional(self.inner.ipfix_socket.as_ref(), &mut ipfix_buf) => {
                    let addr = self.inner.cfg.ipfix_listen.unwrap_or(self.inner.cfg.listen);
                    let (n, from) = got.map_err(|source| AggregatorError::Io { addr, source })?;
                    let imported = importer.import(from, &ipfix_buf[..n], &self.inner.metrics);
                    if let Some(e) = imported.rejected.first() {
                        tracing::debug!(%from, error = %e, rejected = imported.rejected.len(), "IPFIX not imported");
                    }
                    let fresh: Vec<_> = {
                        let mut c = self.collector();
                        imported
                            .records
                            .into_iter()
                            .filter_map(|(r, k)| c.insert(r, k).map(|k| (r, k)))
                            .collect()
                    };
                    self.pass_on(fresh, &mut forward, &mut export).await;
                }
            }
        }
        if let Some(f) = forward.as_mut() {
            f.flush(&self.inner.metrics).await;
        }
        if let Some(x) = export.as_mut() {
            x.flush(unix_now()).await;
        }
        Ok(())
    }

    /// Sends newly accepted records upstream and to the IPFIX collectors.
    async fn pass_on(
        &self,
        records: Vec<(FlowRecord, KeepProbability)>,
        forward: &mut Option<Forwarder>,
        export: &mut Option<IpfixExporter>,
    ) {
        if let Some(x) = export.as_mut() {
            for (r, k) in &records {
                x.push(*r, *k);
            }
        }
        if let Some(f) = forward.as_mut() {
            for (r, k) in records {
                f.push(r, k, &self.inner.metrics).await;
            }
        }
    }
}

/// The connection table an aggregator with `cfg` keeps.
fn collector_for(cfg: &AggregatorConfig, metrics: &AggregatorMetrics) -> Collector {
    Collector::new(
        CollectorConfig {
            key: cfg.key.clone(),
            sample: cfg.sample,
            merge_tolerance: Nanos(cfg.merge_tolerance.as_nanos() as u64),
        },
        metrics.clone(),
    )
}

/// Receives on `socket`, or never when there is none.
async fn recv_optional(socket: Option<&UdpSocket>, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
    match socket {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

/// One sender per keep probability (a datagram carries one probability).
struct Forwarder {
    base: AgentConfig,
    senders: Vec<(KeepProbability, Sender)>,
    counts: AgentMetrics,
}

impl Forwarder {
    async fn new(base: AgentConfig) -> Result<Forwarder, AggregatorError> {
        Ok(Forwarder {
            base,
            senders: Vec::new(),
            counts: AgentMetrics::default(),
        })
    }

    async fn push(&mut self, r: FlowRecord, keep: KeepProbability, metrics: &AggregatorMetrics) {
        let i = match self.senders.iter().position(|(k, _)| *k == keep) {
            Some(i) => i,
            None => {
                let mut c = self.base.clone();
                c.sample = keep;
                // Streams with different probabilities need distinct ids towards the upstream.
                c.agent_id = self.base.agent_id.wrapping_add(self.senders.len() as u32);
                match Sender::new(c, self.counts.clone()).await {
                    Ok(s) => self.senders.push((keep, s)),
                    Err(e) => {
                        self.counts.send_errors.inc();
                        metrics.forward_errors.inc();
                        tracing::warn!(error = %e, "cannot open the upstream socket");
                        return;
                    }
                }
                self.senders.len() - 1
            }
        };
        let s = &mut self.senders[i].1;
        let before = s.next_seq();
        s.push(r).await;
        self.account(before, i, metrics);
    }

    fn account(&self, seq_before: u64, i: usize, metrics: &AggregatorMetrics) {
        let sent = self.senders[i].1.next_seq() - seq_before;
        let errors = self.counts.send_errors.get() - metrics.forward_errors.get().min(self.counts.send_errors.get());
        metrics.forward_errors.inc_by(errors);
        metrics.forwarded_datagrams.inc_by(sent.saturating_sub(errors));
    }

    async fn flush(&mut self, metrics: &AggregatorMetrics) {
        for i in 0..self.senders.len() {
            let before = self.senders[i].1.next_seq();
            self.senders[i].1.flush().await;
            self.account(before, i, metrics);
        }
    }
}
