//! Prometheus counters for the agent and the aggregator (everything accepted, everything dropped).
//!
//! Each set registers into a caller-provided [`Registry`] under `workfeed_agent_*` or
//! `workfeed_aggregator_*`. The counters are atomics shared with the tasks that update them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Label naming why a datagram or record was dropped.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// The reason (e.g. `bad_tag`, `duplicate`).
    pub reason: String,
}

/// Label naming the socket a one-sided connection lacks (`client` or `server`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SideLabel {
    /// The side never reported.
    pub missing: String,
}

/// Label naming an agent.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AgentLabel {
    /// Agent id.
    pub agent: String,
}

/// The [`AgentMetrics::probe`] label of the count of state changes no program of the probe
/// handled ([`crate::loader::Probe::missed_events`]).
pub const MISSED_EVENTS: &str = "missed_events";

/// Label naming a probe counter.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProbeLabel {
    /// Counter name from [`workfeed_ebpf::Stat::name`], or [`MISSED_EVENTS`].
    pub counter: String,
}

/// The aggregator's counters.
#[derive(Debug, Clone, Default)]
pub struct AggregatorMetrics {
    /// Datagrams accepted.
    pub datagrams_accepted: Counter,
    /// Datagrams rejected, by reason (decode errors, `duplicate`, `too_old`, `stale_epoch`).
    pub datagrams_rejected: Family<ReasonLabel, Counter>,
    /// Records accepted into the connection table.
    pub records_accepted: Counter,
    /// Records dropped, by reason (`duplicate`, `conflict`, `sampled_out`, `same_host`).
    pub records_dropped: Family<ReasonLabel, Counter>,
    /// Datagrams known lost per agent (sequence gaps not filled).
    pub agent_lost_datagrams: Family<AgentLabel, Gauge>,
    /// Datagrams forwarded upstream.
    pub forwarded_datagrams: Counter,
    /// Upstream sends that failed.
    pub forward_errors: Counter,
    /// Connections currently held.
    pub connections: Gauge,
    /// Connections currently held that only one socket reported so far.
    pub one_sided_connections: Gauge,
    /// Connections forgotten with one socket never reported, by the missing side: a record lost
    /// between the probe and here (see the agents' probe counters), or a peer without an agent.
    pub one_sided_evicted: Family<SideLabel, Counter>,
    /// Flows of the last window left out because nothing reported tells their class.
    pub window_unclassified: Gauge,
    /// IPFIX messages received on the IPFIX listener.
    pub ipfix_messages: Counter,
    /// IPFIX data records, sets or messages not imported, by reason (`malformed`,
    /// `missing_element`, `no_template`, `bad_probability`, `bad_time`, `too_many_exporters`).
    pub ipfix_rejected: Family<ReasonLabel, Counter>,
    /// IPFIX export: messages sent and sends that failed.
    pub ipfix_export: IpfixExportMetrics,
}

/// Counters of one IPFIX exporter (agent or aggregator).
#[derive(Debug, Clone, Default)]
pub struct IpfixExportMetrics {
    /// Messages sent (each to every destination counts once per destination).
    pub messages_sent: Counter,
    /// Data records sent (per destination).
    pub records_sent: Counter,
    /// Sends that failed.
    pub send_errors: Counter,
}

/// Registers each `field: "help"` of `owner` in `r` under the field's name.
macro_rules! register_fields {
    ($r:expr, $owner:expr; $($field:ident: $help:literal,)*) => {
        $($r.register(stringify!($field), $help, $owner.$field.clone());)*
    };
}

impl IpfixExportMetrics {
    fn register(&self, r: &mut Registry) {
        r.register(
            "ipfix_messages_sent",
            "IPFIX messages sent, per destination",
            self.messages_sent.clone(),
        );
        r.register(
            "ipfix_records_sent",
            "IPFIX data records sent, per destination",
            self.records_sent.clone(),
        );
        r.register("ipfix_send_errors", "IPFIX sends that failed", self.send_errors.clone());
    }
}

impl AggregatorMetrics {
    /// Registers every counter under `workfeed_aggregator_*`.
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("workfeed_aggregator");
        register_fields! { r, self;
            datagrams_accepted: "Datagrams accepted",
            datagrams_rejected: "Datagrams rejected, by reason",
            records_accepted: "Flow records accepted",
            records_dropped: "Flow records dropped, by reason",
            agent_lost_datagrams: "Datagrams known lost per agent (sequence gaps)",
            forwarded_datagrams: "Datagrams forwarded upstream",
            forward_errors: "Failed upstream sends",
            connections: "Connections held in the window",
            one_sided_connections: "Connections held that only one socket reported so far",
            one_sided_evicted: "Connections forgotten with one socket never reported, by the missing side",
            window_unclassified: "Flows of the last window left out as unclassified (no DSCP evidence)",
            ipfix_messages: "IPFIX messages received",
            ipfix_rejected: "IPFIX records, sets or messages not imported, by reason",
        }
        self.ipfix_export.register(r);
    }

    /// Count of rejected datagrams for one reason.
    pub fn rejected(&self, reason: &str) -> u64 {
        self.datagrams_rejected
            .get_or_create(&ReasonLabel { reason: reason.into() })
            .get()
    }

    /// Count of dropped records for one reason.
    pub fn dropped(&self, reason: &str) -> u64 {
        self.records_dropped
            .get_or_create(&ReasonLabel { reason: reason.into() })
            .get()
    }
}

/// The agent's counters.
#[derive(Debug, Clone, Default)]
pub struct AgentMetrics {
    /// Records read from the ring buffer.
    pub records_captured: Counter,
    /// Records dropped by sampling.
    pub records_sampled_out: Counter,
    /// Records sent.
    pub records_sent: Counter,
    /// Datagrams sent.
    pub datagrams_sent: Counter,
    /// Sends that failed (the records in them are lost; the aggregator sees the gap).
    pub send_errors: Counter,
    /// The probe's own counters (totals over CPUs), e.g. `ringbuf_full`, and [`MISSED_EVENTS`].
    pub probe: Family<ProbeLabel, Gauge>,
    /// IPFIX export: messages sent and sends that failed.
    pub ipfix_export: IpfixExportMetrics,
}

impl AgentMetrics {
    /// Registers every counter under `workfeed_agent_*`.
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("workfeed_agent");
        register_fields! { r, self;
            records_captured: "Records read from the ring buffer",
            records_sampled_out: "Records dropped by sampling",
            records_sent: "Records sent to the aggregator",
            datagrams_sent: "Datagrams sent to the aggregator",
            send_errors: "Failed datagram sends",
            probe: "The eBPF probe's counters (records lost in the kernel: ringbuf_full, open_failed, untracked_close; missed_events = state changes no probe program handled; standby_events = skips of a main program its standby covered)",
        }
        self.ipfix_export.register(r);
    }

    /// The probe's counters as last published: [`workfeed_ebpf::Stat::ALL`] in order, then
    /// [`MISSED_EVENTS`] (0 for a counter not published yet).
    pub fn probe_counters(&self) -> Vec<(&'static str, i64)> {
        let names = workfeed_ebpf::Stat::ALL.iter().map(|s| s.name()).chain([MISSED_EVENTS]);
        names
            .map(|name| {
                let v = self.probe.get_or_create(&ProbeLabel { counter: name.into() }).get();
                (name, v)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_counters_appear_in_the_exposition() {
        let m = AggregatorMetrics::default();
        m.datagrams_rejected
            .get_or_create(&ReasonLabel {
                reason: "bad_tag".into(),
            })
            .inc();
        let mut reg = Registry::default();
        m.register(&mut reg);
        AgentMetrics::default().register(&mut reg);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
        assert!(
            text.contains("workfeed_aggregator_datagrams_rejected_total{reason=\"bad_tag\"} 1"),
            "{text}"
        );
        assert!(text.contains("workfeed_agent_records_sent_total 0"), "{text}");
    }
}
