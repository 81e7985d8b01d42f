//! Service-level indicators: flow outcomes, slowdown percentiles per class, and the one shared
//! definition of the ideal (unloaded) flow-completion time.
//!
//! # Ideal FCT (the denominator of every slowdown in this project)
//!
//! The FCT of a flow is measured from the sender's `connect()` to the moment the sender learns
//! that the receiver's application has read the last byte (the receiver answers with a one-byte
//! application-level acknowledgement). On an unloaded network that takes
//!
//! ```text
//! ideal = (1 + handshake_rtts) · base_rtt + wire_bytes · 8 / bottleneck_rate
//! wire_bytes = size + ceil(size / mss) · per_packet_overhead
//! ```
//!
//! * `handshake_rtts` (1 for TCP) — SYN / SYN-ACK before the first data byte leaves;
//! * one more `base_rtt` — the last byte's one-way trip plus the application ack's trip back;
//! * serialisation of every data byte and header at the slowest link on the path.
//!
//! `base_rtt` is the round trip of a minimum-size packet on the idle path (propagation plus
//! per-hop forwarding). Slow start is *not* part of the ideal: a flow that needs several round
//! trips because of a small initial window shows a slowdown above 1 even on an idle network,
//! which is exactly what the initial-window knob trades against. Both models and the testbed's
//! generator divide by this value, so a simulated and a measured slowdown mean the same thing.

use crate::{BitsPerSec, Bytes, Dscp, FlowId, Nanos, QueryId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of the ideal FCT. See the module documentation for the formula.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IdealFct {
    /// Round trip of a minimum-size packet on the idle path.
    pub base_rtt: Nanos,
    /// Slowest link rate on the path.
    pub bottleneck: BitsPerSec,
    /// TCP payload bytes per full segment.
    pub mss: Bytes,
    /// Header bytes counted on the wire per segment (Ethernet + IP + TCP with timestamps).
    pub per_packet_overhead: Bytes,
    /// Round trips of connection set-up before data flows (1 for TCP).
    pub handshake_rtts: u32,
}

impl IdealFct {
    /// Linux over Ethernet with TCP timestamps: MSS 1448, 66 header bytes a segment
    /// (14 Ethernet + 20 IPv4 + 32 TCP), one handshake round trip.
    pub fn tcp(base_rtt: Nanos, bottleneck: BitsPerSec) -> IdealFct {
        IdealFct {
            base_rtt,
            bottleneck,
            mss: Bytes(1448),
            per_packet_overhead: Bytes(66),
            handshake_rtts: 1,
        }
    }

    /// Bytes on the wire for `size` payload bytes.
    pub fn wire_bytes(&self, size: Bytes) -> Bytes {
        let mss = self.mss.0.max(1);
        let pkts = size.0.div_ceil(mss).max(1);
        Bytes(size.0 + pkts * self.per_packet_overhead.0)
    }

    /// The ideal FCT of a flow of `size` payload bytes.
    pub fn of(&self, size: Bytes) -> Nanos {
        let rtts = Nanos(self.base_rtt.0.saturating_mul(1 + self.handshake_rtts as u64));
        rtts + self.bottleneck.serialization_time(self.wire_bytes(size))
    }
}

/// What happened to one flow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowOutcome {
    /// Which flow.
    pub id: FlowId,
    /// Its class.
    pub dscp: Dscp,
    /// Payload bytes.
    pub size: Bytes,
    /// Arrival time.
    pub start: Nanos,
    /// Measured or simulated completion time.
    pub fct: Nanos,
    /// Ideal completion time (see [`IdealFct`]).
    pub ideal: Nanos,
    /// The query the flow answers, if it is a partition-aggregate response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryId>,
}

impl FlowOutcome {
    /// FCT over ideal FCT.
    pub fn slowdown(&self) -> f64 {
        self.fct.0 as f64 / self.ideal.0.max(1) as f64
    }
}

/// Nearest-rank percentile of an ascending slice: the smallest value such that at least a
/// fraction `q` of the samples are ≤ it. `None` for an empty slice or `q` outside (0, 1].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(q > 0.0 && q <= 1.0) {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// The median of `v` (sorted in place; the mean of the middle two for an even length; `None`
/// when empty). The workspace's one median: the controller's denoiser, calibration and warm-up,
/// the model's validation and the evaluation's summaries all use it.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// Query-completion-time statistics of one class over one interval.
///
/// A query's completion time (QCT) is the time from its start (the earliest start of its
/// responses; all start together) to the end of its last response: `max(start + fct) −
/// min(start)` over the query's flows. It is computed from per-flow outcomes, so every source
/// of flow outcomes (the models, the testbed's generator) yields it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QctSli {
    /// Queries the statistics cover.
    pub queries: u64,
    /// Median QCT.
    pub p50: Nanos,
    /// 99th percentile QCT.
    pub p99: Nanos,
    /// 99.9th percentile QCT.
    pub p999: Nanos,
}

impl QctSli {
    /// The QCT of every query of class `dscp` among `outcomes` (any order), ascending.
    pub fn qcts(outcomes: &[FlowOutcome], dscp: Dscp) -> Vec<Nanos> {
        let mut span: BTreeMap<QueryId, (Nanos, Nanos)> = BTreeMap::new();
        for o in outcomes.iter().filter(|o| o.dscp == dscp) {
            if let Some(q) = o.query {
                let end = Nanos(o.start.0.saturating_add(o.fct.0));
                let e = span.entry(q).or_insert((o.start, end));
                e.0 = e.0.min(o.start);
                e.1 = e.1.max(end);
            }
        }
        let mut v: Vec<Nanos> = span.values().map(|&(s, e)| e.saturating_sub(s)).collect();
        v.sort();
        v
    }

    /// Statistics of the queries of class `dscp` among `outcomes`; `None` without queries.
    pub fn from_outcomes(outcomes: &[FlowOutcome], dscp: Dscp) -> Option<QctSli> {
        let q = Self::qcts(outcomes, dscp);
        if q.is_empty() {
            return None;
        }
        let at = |p: f64| {
            let rank = (p * q.len() as f64).ceil() as usize;
            q.get(rank.clamp(1, q.len()) - 1).copied()
        };
        Some(QctSli {
            queries: q.len() as u64,
            p50: at(0.5)?,
            p99: at(0.99)?,
            p999: at(0.999)?,
        })
    }
}

/// Slowdown statistics of one class over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassSli {
    /// The class.
    pub dscp: Dscp,
    /// Completed flows the statistics cover.
    pub flows: u64,
    /// Median slowdown.
    pub p50: f64,
    /// 99th percentile slowdown.
    pub p99: f64,
    /// 99.9th percentile slowdown.
    pub p999: f64,
    /// Mean slowdown.
    pub mean: f64,
    /// Query completion times, for a class with partition-aggregate queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qct: Option<QctSli>,
}

impl ClassSli {
    /// Statistics of `slowdowns` (any order). `None` when empty or any value is not finite.
    pub fn from_slowdowns(dscp: Dscp, slowdowns: &mut [f64]) -> Option<ClassSli> {
        if slowdowns.is_empty() || slowdowns.iter().any(|s| !s.is_finite()) {
            return None;
        }
        slowdowns.sort_by(f64::total_cmp);
        Some(ClassSli {
            dscp,
            flows: slowdowns.len() as u64,
            p50: percentile(slowdowns, 0.5)?,
            p99: percentile(slowdowns, 0.99)?,
            p999: percentile(slowdowns, 0.999)?,
            mean: slowdowns.iter().sum::<f64>() / slowdowns.len() as f64,
            qct: None,
        })
    }

    /// The percentiles kept: p50, p99 and p99.9.
    pub const KEPT_PERCENTILES: [f64; 3] = [0.5, 0.99, 0.999];

    /// The statistic an objective with percentile `q` refers to (p50, p99 or p99.9; other
    /// percentiles are not kept and give `None`).
    pub fn at(&self, q: f64) -> Option<f64> {
        let kept = [self.p50, self.p99, self.p999];
        Self::KEPT_PERCENTILES
            .iter()
            .zip(kept)
            .find(|(p, _)| (*p - q).abs() < 1e-9)
            .map(|(_, v)| v)
    }
}

/// SLIs of every class, in class order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SliVector {
    /// One entry per class that completed flows.
    pub classes: Vec<ClassSli>,
}

impl SliVector {
    /// Per-class statistics of `outcomes`, for the classes in `dscps` (in that order), with
    /// query completion times for the classes whose flows answer queries ([`QctSli`]). A class
    /// with no completed flow is left out; callers decide whether that is an error.
    pub fn from_outcomes(outcomes: &[FlowOutcome], dscps: &[Dscp]) -> SliVector {
        let classes = dscps
            .iter()
            .filter_map(|&d| {
                let mut s: Vec<f64> = outcomes
                    .iter()
                    .filter(|o| o.dscp == d)
                    .map(FlowOutcome::slowdown)
                    .collect();
                let mut c = ClassSli::from_slowdowns(d, &mut s)?;
                c.qct = QctSli::from_outcomes(outcomes, d);
                Some(c)
            })
            .collect();
        SliVector { classes }
    }

    /// The statistics of class `dscp`.
    pub fn get(&self, dscp: Dscp) -> Option<&ClassSli> {
        self.classes.iter().find(|c| c.dscp == dscp)
    }

    /// The p99 of every class in `dscps`' order, or the first missing class.
    pub fn p99s(&self, dscps: &[Dscp]) -> Result<Vec<f64>, Dscp> {
        dscps.iter().map(|&d| self.get(d).map(|c| c.p99).ok_or(d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&v, 0.0), None);
    }

    #[test]
    fn ideal_fct_of_one_segment_at_100mbps() {
        let i = IdealFct::tcp(Nanos(20_000), BitsPerSec::from_mbps(100));
        // 1000 B payload + 66 B header = 1066 B = 85.28 µs at 100 Mbit/s, plus 2 RTT.
        assert_eq!(i.of(Bytes(1000)), Nanos(40_000 + 85_280));
    }

    #[test]
    fn qct_is_the_last_response_end_minus_the_query_start() {
        let o = |id: u64, q: Option<u64>, start: u64, fct: u64| FlowOutcome {
            id: FlowId(id),
            dscp: Dscp::AF41,
            size: Bytes(1000),
            start: Nanos(start),
            fct: Nanos(fct),
            ideal: Nanos(100),
            query: q.map(QueryId),
        };
        // Query 1: responses end at 150, 400, 220 → QCT 300. Query 2: one response, 50.
        // The flow without a query counts towards the slowdowns only.
        let outs = [
            o(0, Some(1), 100, 50),
            o(1, Some(1), 100, 300),
            o(2, Some(1), 100, 120),
            o(3, Some(2), 1000, 50),
            o(4, None, 0, 9000),
        ];
        assert_eq!(QctSli::qcts(&outs, Dscp::AF41), vec![Nanos(50), Nanos(300)]);
        let v = SliVector::from_outcomes(&outs, &[Dscp::AF41, Dscp::AF11]);
        assert_eq!(v.classes.len(), 1);
        let c = v.get(Dscp::AF41).unwrap();
        assert_eq!(c.flows, 5);
        let q = c.qct.unwrap();
        assert_eq!((q.queries, q.p50, q.p99), (2, Nanos(50), Nanos(300)));
        // A class without queries has no QCT statistics.
        let plain = SliVector::from_outcomes(&outs[4..], &[Dscp::AF41]);
        assert_eq!(plain.get(Dscp::AF41).unwrap().qct, None);
    }

    #[test]
    fn non_finite_slowdowns_are_refused() {
        assert!(ClassSli::from_slowdowns(Dscp::AF11, &mut [1.0, f64::NAN]).is_none());
    }
}
