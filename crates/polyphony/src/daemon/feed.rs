//! The daemon's embedded Workfeed aggregator (`[workload] source = "workfeed"`), and the two
//! things the loop takes from it each interval: the model's workload window and, with
//! `[sli] source = "workfeed"`, per-class slowdowns of the captured flows.
//!
//! Receiving, authenticating, de-duplicating and merging records is the `workfeed` crate's
//! [`Aggregator`]; this module only binds it, serves it on a task, and turns its
//! [`WorkloadWindow`] into what the controller needs:
//!
//! * flows whose endpoints are not both in `workload.hosts`, whose DSCP has no `[[classes]]`
//!   entry, whose two endpoints map to one host, or whose class nothing reported tells (only
//!   their receiver's socket reached the aggregator, unmarked: docs/workfeed.md) are left out,
//!   counted per reason ([`LeftOut::reasons`]);
//! * kept flows only one of whose sockets was reported are counted
//!   ([`CapturedWindow::one_sided`]): a record was lost on the way, or a peer has no agent;
//! * the kept flows, renumbered in start order, are the model's [`Workload`];
//! * a kept flow's slowdown is its captured duration (open to close) over the ideal FCT of its
//!   path in the model's topology ([`polyphony_model::Topology::ideal`], docs/models.md),
//!   optionally with a configured base RTT.
//!
//! The receive loop runs under [`super::supervise`]: if the socket fails it is restarted with
//! backoff (1 s doubling to 60 s), logged and counted.
//!
//! With `workload.ipfix_listen` the aggregator also reads IPFIX (RFC 7011) from exporters on a
//! second socket into the same connection table (the workfeed crate's `ipfix` module).
//!
//! Touches: one UDP socket (receive only) on `workload.listen`, and one on
//! `workload.ipfix_listen` when set.

use super::supervise::{supervise, Backoff};
use crate::config::WorkloadSource;
use anyhow::{anyhow, Context, Result};
use polyphony_model::Topology;
use polyphony_spec::{Dscp, Flow, FlowId, FlowOutcome, HostId, Nanos, SliVector, Workload};
use prometheus_client::metrics::counter::Counter;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::{debug, info, warn};
use workfeed::aggregator::{unix_now, Aggregator, AggregatorConfig};
use workfeed::ipfix::DOCUMENTATION_PEN;
use workfeed::jetstream::{JetStreamSource, NatsAuth, NatsTarget, SourceConfig};
use workfeed::journal::Journal;
use workfeed::metrics::AggregatorMetrics;
use workfeed::wire::AuthKey;
use workfeed::{CapturedFlow, WorkloadWindow};

/// Closed connections are kept at least this long (the workfeed crate's default).
const MIN_RETENTION: Duration = Duration::from_secs(600);

/// Where the embedded aggregator reads IPFIX, and under which enterprise number it finds
/// Workfeed's own elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpfixInput {
    /// UDP address to read IPFIX on.
    pub listen: SocketAddr,
    /// Private enterprise number of Workfeed's elements.
    pub enterprise: u32,
}

/// Where a feed's records come from (what a reload must keep to reuse it).
#[derive(Debug, Clone, PartialEq)]
enum Input {
    /// Workfeed datagrams (and optionally IPFIX) on UDP.
    Udp {
        listen: SocketAddr,
        ipfix: Option<IpfixInput>,
    },
    /// A JetStream durable consumer, journalled in a file.
    Nats { source: SourceConfig, journal: PathBuf },
}

/// The `[workload] source = "nats"` settings a feed needs.
#[derive(Debug, Clone, PartialEq)]
pub struct NatsInput {
    /// Server, stream, consumer, credentials.
    pub source: SourceConfig,
    /// The journal of accepted records (in the state directory).
    pub journal: PathBuf,
}

/// How often the NATS feed forgets old connections and compacts its journal.
const COMPACT_EVERY: Duration = Duration::from_secs(60);

/// A bound, serving aggregator.
pub struct Feed {
    agg: Aggregator,
    input: Input,
    key_file: Option<PathBuf>,
    retention: Duration,
    task: tokio::task::JoinHandle<()>,
    restarts: Counter,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Feed {
    /// Binds the aggregator of a `[workload] source = "workfeed"` section and starts serving it.
    /// Needs a tokio runtime.
    pub async fn bind(
        listen: SocketAddr,
        window_s: f64,
        key_file: Option<&PathBuf>,
        ipfix: Option<IpfixInput>,
    ) -> Result<Feed> {
        let mut cfg = aggregator_config(listen, window_s, key_file)?;
        if let Some(i) = ipfix {
            cfg.ipfix_listen = Some(i.listen);
            cfg.ipfix_enterprise = i.enterprise;
        }
        let retention = cfg.retention;
        let agg = Aggregator::bind(cfg, AggregatorMetrics::default())
            .await
            .with_context(|| format!("workload.listen {listen}: cannot listen"))?;
        let addr = agg.local_addr().map_err(|e| anyhow!("{e}"))?;
        if key_file.is_none() {
            info!("Workfeed aggregator accepts untagged datagrams (no workload.key_file; loopback only)");
        }
        info!("Workfeed aggregator listening on udp://{addr}");
        if let Some(a) = agg.ipfix_addr() {
            let a = a.map_err(|e| anyhow!("{e}"))?;
            info!("Workfeed aggregator reading IPFIX on udp://{a} (unauthenticated: exporters' network only)");
        }
        let served = agg.clone();
        let restarts = Counter::default();
        // The receive loop ends only on a socket error; it is restarted with backoff, counted
        // in `polyphony_workfeed_aggregator_restarts_total`, and each restart logged.
        let task = supervise(
            "the Workfeed aggregator's receive loop",
            move || {
                let a = served.clone();
                async move { a.serve(std::future::pending::<()>()).await }
            },
            Backoff::DEFAULT,
            restarts.clone(),
        );
        Ok(Feed {
            agg,
            input: Input::Udp { listen, ipfix },
            key_file: key_file.cloned(),
            retention,
            task,
            restarts,
        })
    }

    /// Reads a `[workload] source = "nats"` stream: replays the journal into a socketless
    /// aggregator, then consumes the durable consumer on a task — each pulled batch is ingested,
    /// its new records appended to the journal (fsynced), and only then acknowledged. A consumer
    /// that fails (server down, connection lost) is reopened with backoff; what it had not
    /// acknowledged is redelivered by the server and dropped as duplicates.
    pub async fn nats(input: NatsInput, window_s: f64, key_file: Option<&PathBuf>) -> Result<Feed> {
        // A detached aggregator binds nothing; the address is not used.
        let cfg = aggregator_config(SocketAddr::from(([127, 0, 0, 1], 0)), window_s, key_file)?;
        let retention = cfg.retention;
        let agg = Aggregator::detached(cfg, AggregatorMetrics::default());
        let (mut journal, replayed) = Journal::open(&input.journal)?;
        if replayed.discarded_bytes > 0 {
            warn!(
                journal = %input.journal.display(),
                bytes = replayed.discarded_bytes,
                "cut a torn tail off the Workfeed journal (records not yet acknowledged; the stream redelivers them)"
            );
        }
        agg.restore(&replayed.records);
        agg.evict_before(unix_now().saturating_sub(Nanos(retention.as_nanos() as u64)));
        journal.compact(&agg.records())?;
        info!(
            journal = %input.journal.display(),
            records = agg.records().len(),
            "Workfeed journal replayed; consuming JetStream stream {} as {} from {}",
            input.source.target.stream,
            input.source.consumer,
            input.source.target.url
        );
        let journal = Arc::new(Mutex::new(journal));
        let restarts = Counter::default();
        let (a, src) = (agg.clone(), input.source.clone());
        let task = supervise(
            "the Workfeed JetStream consumer",
            move || consume(a.clone(), src.clone(), journal.clone(), retention),
            Backoff::DEFAULT,
            restarts.clone(),
        );
        Ok(Feed {
            agg,
            input: Input::Nats {
                source: input.source,
                journal: input.journal,
            },
            key_file: key_file.cloned(),
            retention,
            task,
            restarts,
        })
    }

    /// Whether this feed serves `source` as it is (same address and key file, and a window
    /// within what it retains), so a reload can keep it.
    pub fn serves(&self, source: &WorkloadSource) -> bool {
        let retained = |window_s: f64| Duration::from_secs_f64(2.0 * window_s) <= self.retention;
        match (source, &self.input) {
            (WorkloadSource::Nats { window_s, key_file, .. }, Input::Nats { source: s, .. }) => {
                nats_input(source, Path::new("")).is_some_and(|n| n.source == *s)
                    && key_file.as_ref() == self.key_file.as_ref()
                    && retained(*window_s)
            }
            (
                WorkloadSource::Workfeed {
                    listen,
                    window_s,
                    key_file,
                    ipfix_listen,
                    ipfix_enterprise,
                    ..
                },
                Input::Udp { listen: l, ipfix },
            ) => {
                *listen == *l
                    && *ipfix_listen == ipfix.map(|i| i.listen)
                    && ipfix_enterprise.unwrap_or(DOCUMENTATION_PEN)
                        == ipfix.map_or(DOCUMENTATION_PEN, |i| i.enterprise)
                    && key_file.as_ref() == self.key_file.as_ref()
                    && retained(*window_s)
            }
            _ => false,
        }
    }

    /// The aggregator's counters (datagrams accepted and rejected by reason, records, loss).
    pub fn metrics(&self) -> &AggregatorMetrics {
        self.agg.metrics()
    }

    /// Restarts of the receive loop after a socket error (or a panic).
    pub fn restarts(&self) -> Counter {
        self.restarts.clone()
    }

    /// The flows whose connection opened in the last `window_s` seconds and has closed.
    pub fn window(&self, window_s: f64, hosts: &BTreeMap<Ipv4Addr, u32>, classes: &[Dscp]) -> Result<CapturedWindow> {
        let w = self
            .agg
            .window(Duration::from_secs_f64(window_s))
            .map_err(|e| anyhow!("Workfeed window: {e}"))?;
        let cw = CapturedWindow::build(w, hosts, classes)?;
        if cw.left_out.unclassified > 0 {
            let left_out: Vec<String> = cw.left_out.reasons().iter().map(|(r, n)| format!("{r} {n}")).collect();
            warn!(
                unclassified = cw.left_out.unclassified,
                one_sided = cw.one_sided,
                left_out = left_out.join(", "),
                "Workfeed window: flows left out as unclassified (only their receiver's socket was reported, \
                 unmarked, so their class is unknown): a record lost between a probe and this aggregator, or a \
                 sender without an agent. Check the agents' probe counters (workfeed_agent_probe) and \
                 workfeed_aggregator_one_sided_evicted"
            );
        } else if cw.one_sided > 0 {
            // Kept, with size and class from the one socket reported; routine when some hosts
            // run no agent, so not a warning.
            debug!(
                one_sided = cw.one_sided,
                "Workfeed window: flows only one of whose sockets was reported"
            );
        }
        Ok(cw)
    }
}

/// The embedded aggregator's settings: the agents' key, and closed connections kept
/// max(600 s, 2 · `window_s`).
fn aggregator_config(listen: SocketAddr, window_s: f64, key_file: Option<&PathBuf>) -> Result<AggregatorConfig> {
    let mut cfg = AggregatorConfig::new(listen);
    cfg.key = key_file
        .map(|p| AuthKey::from_file(p))
        .transpose()
        .map_err(|e| anyhow!("workload.key_file: {e}"))?;
    cfg.retention = MIN_RETENTION.max(Duration::from_secs_f64(2.0 * window_s));
    Ok(cfg)
}

/// The NATS settings of a `[workload] source = "nats"` section (with credentials read from
/// their files), the journal under `state_dir`; `None` for another source or an unreadable
/// credential file (validation reports those).
pub fn nats_input(source: &WorkloadSource, state_dir: &Path) -> Option<NatsInput> {
    let WorkloadSource::Nats {
        url,
        stream,
        subject_prefix,
        consumer,
        ack_wait_s,
        user,
        password_file,
        token_file,
        credentials_file,
        ..
    } = source
    else {
        return None;
    };
    let first_line = |p: &PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .map(|t| t.lines().next().unwrap_or("").trim().to_string())
    };
    let auth = match (user, password_file, token_file, credentials_file) {
        (Some(u), Some(p), _, _) => NatsAuth::UserPassword {
            user: u.clone(),
            password: first_line(p)?,
        },
        (_, _, Some(t), _) => NatsAuth::Token(first_line(t)?),
        (_, _, _, Some(c)) => NatsAuth::CredentialsFile(c.clone()),
        _ => NatsAuth::None,
    };
    Some(NatsInput {
        source: SourceConfig {
            target: NatsTarget {
                url: url.clone(),
                auth,
                stream: stream.clone(),
                prefix: subject_prefix.clone(),
            },
            consumer: consumer.clone(),
            ack_wait: Duration::from_secs_f64(*ack_wait_s),
        },
        journal: state_dir.join(format!("workfeed-{consumer}.journal")),
    })
}

/// One run of the JetStream consumer: pull, ingest, journal, acknowledge; compact now and then.
/// Returns only on an error (the supervisor reopens it).
async fn consume(agg: Aggregator, src: SourceConfig, journal: Arc<Mutex<Journal>>, retention: Duration) -> Result<()> {
    let source = JetStreamSource::open(&src).await?;
    let mut compacted = tokio::time::Instant::now();
    loop {
        let deliveries = source.pull(1024, Duration::from_secs(1)).await?;
        let mut fresh = Vec::new();
        for d in &deliveries {
            match agg.ingest(&d.payload) {
                Ok(a) => fresh.extend(a.records),
                Err(e) => debug!(error = %e, "rejected a JetStream datagram"),
            }
        }
        {
            let mut j = journal.lock().unwrap_or_else(|p| p.into_inner());
            j.append(&fresh)?;
            if compacted.elapsed() >= COMPACT_EVERY {
                agg.evict_before(unix_now().saturating_sub(Nanos(retention.as_nanos() as u64)));
                j.compact(&agg.records())?;
                compacted = tokio::time::Instant::now();
            }
        }
        for d in &deliveries {
            if let Err(e) = d.ack().await {
                // Redelivered after ack_wait; its records are then duplicates.
                debug!(error = %e, "acknowledging a JetStream message failed");
            }
        }
    }
}

/// Why a captured flow was left out of the model's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// An endpoint is not in `workload.hosts`.
    pub unmapped_host: usize,
    /// Its DSCP has no `[[classes]]` entry.
    pub unknown_class: usize,
    /// Both endpoints are one host.
    pub same_host: usize,
    /// Nothing reported tells its class: only the receiver's socket was reported and it is
    /// unmarked ([`WorkloadWindow::unclassified`]).
    pub unclassified: usize,
}

impl LeftOut {
    /// Every reason with its count, under the names of `workfeed_window_left_out{reason}`. (The
    /// daemon's publisher, `note_window` in `daemon/mod.rs`, still lists the first three itself,
    /// so `unclassified` reaches the log of [`Feed::window`] and the aggregator's gauge
    /// `workfeed_aggregator_window_unclassified` but not that metric yet.)
    pub fn reasons(&self) -> [(&'static str, usize); 4] {
        [
            ("unmapped_host", self.unmapped_host),
            ("unknown_class", self.unknown_class),
            ("same_host", self.same_host),
            ("unclassified", self.unclassified),
        ]
    }
}

/// One interval's captured flows, as the model and the SLI computation take them.
#[derive(Debug, Clone)]
pub struct CapturedWindow {
    /// The model's window (starts relative to the window's beginning).
    pub workload: Workload,
    /// The captured flows behind `workload.flows`, index for index.
    pub captured: Vec<CapturedFlow>,
    /// Flows left out.
    pub left_out: LeftOut,
    /// Flows in `captured` only one of whose sockets was reported (their size and class come
    /// from that socket).
    pub one_sided: usize,
}

impl CapturedWindow {
    /// Keeps the flows of `w` both of whose endpoints are mapped (to distinct hosts) and whose
    /// DSCP is a class, renumbered in start order.
    pub fn build(w: WorkloadWindow, hosts: &BTreeMap<Ipv4Addr, u32>, classes: &[Dscp]) -> Result<CapturedWindow> {
        let mut left_out = LeftOut {
            same_host: w.same_host,
            unclassified: w.unclassified,
            ..LeftOut::default()
        };
        let mut flows = Vec::with_capacity(w.captured.len());
        let mut kept = Vec::with_capacity(w.captured.len());
        for (f, c) in w.workload.flows.iter().zip(w.captured) {
            let (Some(&src), Some(&dst)) = (hosts.get(c.src.ip()), hosts.get(c.dst.ip())) else {
                left_out.unmapped_host += 1;
                continue;
            };
            if !classes.contains(&c.dscp) {
                left_out.unknown_class += 1;
                continue;
            }
            if src == dst {
                left_out.same_host += 1;
                continue;
            }
            flows.push(Flow {
                id: FlowId(flows.len() as u64),
                src: HostId(src),
                dst: HostId(dst),
                ..*f
            });
            kept.push(c);
        }
        let workload = Workload::new(flows, w.workload.duration).map_err(|e| anyhow!("Workfeed window: {e}"))?;
        let one_sided = kept.iter().filter(|c| !c.both_sides).count();
        Ok(CapturedWindow {
            workload,
            captured: kept,
            left_out,
            one_sided,
        })
    }

    /// Per-class slowdown statistics of the captured flows: duration (open to close) over the
    /// ideal FCT of the flow's path in `topology` (base RTT replaced by `base_rtt` if given).
    /// Classes with fewer than `min_flows` flows are left out of the result.
    pub fn slis(&self, topology: &Topology, base_rtt: Option<Nanos>, classes: &[Dscp], min_flows: u64) -> SliVector {
        let outcomes: Vec<FlowOutcome> = self
            .workload
            .flows
            .iter()
            .zip(&self.captured)
            .map(|(f, c)| {
                let mut ideal = topology.ideal(f.src, f.dst);
                if let Some(rtt) = base_rtt {
                    ideal.base_rtt = rtt;
                }
                FlowOutcome {
                    id: f.id,
                    dscp: f.dscp,
                    size: f.size,
                    start: f.start,
                    fct: c.end.saturating_sub(c.start),
                    ideal: ideal.of(f.size),
                    query: f.query,
                }
            })
            .collect();
        let mut v = SliVector::from_outcomes(&outcomes, classes);
        v.classes.retain(|c| c.flows >= min_flows);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::Bytes;
    use std::net::SocketAddrV4;
    use workfeed::collector::{Connection, DscpEvidence, FlowDirections};
    use workfeed::{ConnKey, FlowRecord, HostMap, KeepProbability};

    const SENDER: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
    const RECEIVER: Ipv4Addr = Ipv4Addr::new(198, 18, 100, 2);

    /// One socket's record of a connection `client_port` → receiver:5001 that carried `size`
    /// bytes to the receiver, opened at `start` s.
    fn side(client: bool, client_port: u16, dscp: Dscp, size: u64, start: u64) -> FlowRecord {
        let (c, s) = (
            SocketAddrV4::new(SENDER, client_port),
            SocketAddrV4::new(RECEIVER, 5001),
        );
        let (local, remote) = if client { (c, s) } else { (s, c) };
        FlowRecord {
            local,
            remote,
            dscp,
            active: client,
            fin_sent: true,
            peer_fin: true,
            bytes_sent: Bytes(if client { size } else { 1 }),
            bytes_received: Bytes(if client { 1 } else { size }),
            srtt: Nanos(100_000),
            retrans: 0,
            start: Nanos(start * 1_000_000_000),
            end: Nanos(start * 1_000_000_000 + 5_000_000),
        }
    }

    fn connection(client: Option<FlowRecord>, server: Option<FlowRecord>) -> Connection {
        let r = client.or(server).expect("one side");
        let (c, s) = if r.active {
            (r.local, r.remote)
        } else {
            (r.remote, r.local)
        };
        Connection {
            key: ConnKey { client: c, server: s },
            client,
            server,
            keep: KeepProbability::ALL,
        }
    }

    /// A connection whose client record was lost and whose server socket is unmarked has no
    /// class: the daemon's window leaves it out and says so (`unclassified`) instead of the flow
    /// vanishing from every count; a connection reported by its client only is kept and counted
    /// as one-sided.
    #[test]
    fn unclassified_flows_are_counted_among_the_left_out_and_one_sided_ones_among_the_kept() {
        let af11 = Dscp::AF11;
        let both = connection(
            Some(side(true, 40000, af11, 10_000, 1)),
            Some(side(false, 40000, Dscp::from_tos(0), 10_000, 1)),
        );
        let server_only = connection(None, Some(side(false, 40001, Dscp::from_tos(0), 5_000, 2)));
        let client_only = connection(Some(side(true, 40002, af11, 7_000, 3)), None);
        let flows: Vec<CapturedFlow> = [&both, &server_only, &client_only]
            .iter()
            .flat_map(|c| c.flows(FlowDirections::Dominant))
            .collect();
        assert_eq!(flows[1].dscp_evidence, DscpEvidence::Unknown, "{flows:?}");
        let hosts = BTreeMap::from([(SENDER, 0), (RECEIVER, 1)]);
        let host_map = HostMap::new(hosts.iter().map(|(a, h)| (*a, HostId(*h))));
        let w = WorkloadWindow::build(Nanos(0), Nanos(10_000_000_000), flows, &host_map).expect("window");

        let cw = CapturedWindow::build(w, &hosts, &[af11]).expect("captured window");

        assert_eq!(cw.workload.flows.len(), 2, "{:?}", cw.workload.flows);
        assert_eq!(
            cw.left_out,
            LeftOut {
                unclassified: 1,
                ..LeftOut::default()
            }
        );
        assert!(
            cw.left_out.reasons().contains(&("unclassified", 1)),
            "{:?}",
            cw.left_out.reasons()
        );
        assert_eq!(cw.one_sided, 1);
        assert_eq!(
            cw.captured.iter().map(|c| c.size.0).collect::<Vec<_>>(),
            [10_000, 7_000]
        );
    }
}
