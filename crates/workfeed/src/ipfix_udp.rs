//! IPFIX over UDP: the socket side of [`crate::ipfix`], shared by the agent and the aggregator.
//!
//! [`IpfixExporter`] owns one ephemeral UDP socket and an [`IpfixEncoder`]; it queues records,
//! and on [`IpfixExporter::flush`] sends the messages that carry them to every destination (a
//! due template refresh goes out even when nothing is queued). [`IpfixImporter`] keeps one
//! [`IpfixDecoder`] per exporter address, since templates belong to an exporter's stream, and
//! at most [`MAX_EXPORTERS`] of them, since the addresses are untrusted.
//!
//! Touches: the exporter's UDP socket (send only). The importer is pure: the caller passes
//! datagrams and their source.

use crate::ipfix::{ExportConfigError, Imported, IpfixDecoder, IpfixEncoder, IpfixExporterConfig};
use crate::metrics::{AggregatorMetrics, IpfixExportMetrics, ReasonLabel};
use crate::record::FlowRecord;
use crate::sampling::KeepProbability;
use polyphony_spec::Nanos;
use std::collections::HashMap;
use std::net::SocketAddr;
use thiserror::Error;
use tokio::net::UdpSocket;

/// Most exporter streams an importer keeps templates for.
pub const MAX_EXPORTERS: usize = 4096;

/// Where and how to export IPFIX.
#[derive(Debug, Clone, PartialEq)]
pub struct IpfixExportConfig {
    /// The collectors (e.g. nfcapd, pmacct) to send every message to.
    pub destinations: Vec<SocketAddr>,
    /// Numbering, enterprise number, template refresh and message size.
    pub exporter: IpfixExporterConfig,
}

/// The exporter could not start.
#[derive(Debug, Error)]
pub enum IpfixExportError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ExportConfigError),
    /// No destination was given.
    #[error("IPFIX export needs at least one destination (e.g. --ipfix-export 127.0.0.1:4739)")]
    NoDestination,
    /// Destinations of both address families.
    #[error("IPFIX destinations {0} and {1} are of different address families; use one exporter per family")]
    MixedFamilies(SocketAddr, SocketAddr),
    /// The socket could not be bound.
    #[error("binding the IPFIX export socket")]
    Bind(#[source] std::io::Error),
}

/// Sends flow records as IPFIX to a set of collectors.
#[derive(Debug)]
pub struct IpfixExporter {
    destinations: Vec<SocketAddr>,
    encoder: IpfixEncoder,
    socket: UdpSocket,
    pending: Vec<(FlowRecord, KeepProbability)>,
    metrics: IpfixExportMetrics,
}

impl IpfixExporter {
    /// Binds an ephemeral socket of the destinations' address family.
    pub async fn new(cfg: IpfixExportConfig, metrics: IpfixExportMetrics) -> Result<IpfixExporter, IpfixExportError> {
        let first = *cfg.destinations.first().ok_or(IpfixExportError::NoDestination)?;
        if let Some(other) = cfg.destinations.iter().find(|d| d.is_ipv4() != first.is_ipv4()) {
            return Err(IpfixExportError::MixedFamilies(first, *other));
        }
        let encoder = IpfixEncoder::new(cfg.exporter)?;
        let bind = if first.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let socket = UdpSocket::bind(bind).await.map_err(IpfixExportError::Bind)?;
        Ok(IpfixExporter {
            destinations: cfg.destinations,
            encoder,
            socket,
            pending: Vec::new(),
            metrics,
        })
    }

    /// Queues a record with its keep probability.
    pub fn push(&mut self, r: FlowRecord, keep: KeepProbability) {
        self.pending.push((r, keep));
    }

    /// Records queued and not yet sent.
    pub fn queued(&self) -> usize {
        self.pending.len()
    }

    /// Sends what is queued (and a due template refresh) to every destination, at Unix time
    /// `now`. A failed send is counted and logged; the records of that message are lost for
    /// that destination, which the collector sees as a gap in the sequence numbers.
    pub async fn flush(&mut self, now: Nanos) {
        let records = std::mem::take(&mut self.pending);
        let msgs = self.encoder.encode(&records, now);
        for m in &msgs {
            for d in &self.destinations {
                match self.socket.send_to(m, d).await {
                    Ok(_) => {
                        self.metrics.messages_sent.inc();
                        self.metrics.records_sent.inc_by(crate::ipfix::data_records(m) as u64);
                    }
                    Err(e) => {
                        self.metrics.send_errors.inc();
                        tracing::warn!(error = %e, to = %d, "sending an IPFIX message failed");
                    }
                }
            }
        }
        self.pending = records;
        self.pending.clear();
    }
}

/// Decodes IPFIX datagrams from many exporters, counting what it rejects.
#[derive(Debug)]
pub struct IpfixImporter {
    enterprise: u32,
    decoders: HashMap<SocketAddr, IpfixDecoder>,
}

impl IpfixImporter {
    /// An importer that reads Workfeed's own elements under `enterprise`.
    pub fn new(enterprise: u32) -> IpfixImporter {
        IpfixImporter {
            enterprise,
            decoders: HashMap::new(),
        }
    }

    /// Decodes one datagram from `from`; rejections are counted in `metrics` by reason.
    pub fn import(&mut self, from: SocketAddr, datagram: &[u8], metrics: &AggregatorMetrics) -> Imported {
        metrics.ipfix_messages.inc();
        let count = |reason: &str| {
            metrics
                .ipfix_rejected
                .get_or_create(&ReasonLabel { reason: reason.into() })
                .inc()
        };
        if !self.decoders.contains_key(&from) && self.decoders.len() >= MAX_EXPORTERS {
            count("too_many_exporters");
            return Imported::default();
        }
        let enterprise = self.enterprise;
        let got = self
            .decoders
            .entry(from)
            .or_insert_with(|| IpfixDecoder::new(enterprise))
            .decode(datagram);
        for e in &got.rejected {
            count(e.kind());
        }
        got
    }
}
