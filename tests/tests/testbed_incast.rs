//! Issue 19: emu's incast queries on the namespace testbed. A requester in the receiver's
//! namespace sends one request per response; the responders in the sender namespaces answer at
//! once; every response is timed at the requester and each query's completion time (the last
//! response read − the request) reaches the run summary and the interval summaries.

mod testbed_common;
use testbed_common::*;

use emu::EmuOutputs;
use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId, Nanos, QueryId, Workload};

const PREFIX: &str = "ppq1";

#[test]
fn incast_queries_are_requested_answered_and_timed_at_the_requester() {
    if !can_run() {
        return;
    }
    let _s = serial();
    let sc = scenario("categorical-incast");
    let _guard = Guard(PREFIX.into());
    let tb = testbed::up(&sc, &testbed::TestbedOptions::new(PREFIX)).expect("testbed up");
    // 20 queries 150 ms apart, 6 responses of 16 kB each (two per sender host), plus one plain
    // AF11 flow per query.
    let mut flows = Vec::new();
    for q in 0..20u64 {
        let start = Nanos(q * 150_000_000);
        for k in 0..6u64 {
            let mut f = Flow::new(
                FlowId(q * 10 + k),
                HostId((k % 3) as u32),
                HostId(3),
                Dscp::AF41,
                Bytes(16_000),
                start,
            );
            f.query = Some(QueryId(q));
            flows.push(f);
        }
        flows.push(Flow::new(
            FlowId(q * 10 + 9),
            HostId(0),
            HostId(3),
            Dscp::AF11,
            Bytes(5_000),
            start,
        ));
    }
    let wl = Workload::new(flows, Nanos::from_secs_f64(3.0)).expect("workload");
    let r = emu::run(&plan(&tb, 1.0), &wl, Nanos::from_secs_f64(3.0), &EmuOutputs::default()).expect("emu run");
    let s = &r.summary;
    println!("{}", serde_json::to_string(s).unwrap_or_default());
    assert_eq!(
        (s.scheduled, s.finished, s.failed, s.skipped),
        (140, 140, 0, 0),
        "{s:?}"
    );
    let responses: Vec<_> = r.records.iter().filter(|x| x.query.is_some()).collect();
    assert_eq!(responses.len(), 120);
    for x in &responses {
        let (req, got, end) = (x.request_ns.unwrap(), x.received_ns.unwrap(), x.end_ns.unwrap());
        // The responder connects after the request was sent; the requester reads the last byte
        // before the sender sees the acknowledgement.
        assert!(req <= x.start_ns && x.start_ns < got && got <= end, "{x:?}");
    }
    assert!(r
        .records
        .iter()
        .filter(|x| x.query.is_none())
        .all(|x| x.request_ns.is_none()));
    // QCT: every query complete; at least the six responses' serialisation through the
    // 100 Mbit/s bottleneck (7.7 ms of payload); the same statistics as from the records.
    let agg = s.classes.iter().find(|c| c.dscp == Dscp::AF41).expect("AF41 on record");
    let q = agg.qct.expect("AF41 has QCTs");
    assert_eq!(q.queries, 20, "{q:?}");
    assert!(q.p50 >= Nanos(7_700_000) && q.p50 <= q.p99, "{q:?}");
    let outcomes: Vec<_> = r.records.iter().filter_map(emu::FlowRecord::outcome).collect();
    assert_eq!(polyphony_spec::QctSli::from_outcomes(&outcomes, Dscp::AF41), Some(q));
    assert!(s
        .classes
        .iter()
        .find(|c| c.dscp == Dscp::AF11)
        .is_some_and(|c| c.qct.is_none()));
    // The interval summaries count each query once, in the interval its last response was read.
    let per_interval: u64 = r
        .intervals
        .iter()
        .flat_map(|i| i.classes.iter())
        .filter_map(|c| c.qct.map(|q| q.queries))
        .sum();
    assert_eq!(per_interval, 20, "{:?}", r.intervals);
}
