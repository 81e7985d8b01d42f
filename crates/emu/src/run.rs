//! One bounded run of the generator: a sink in the receiver's namespace, one sender thread per
//! sender namespace (each with a single-threaded tokio runtime), and a collector in the calling
//! thread that writes the ground-truth log, the per-interval summaries and the metrics.
//!
//! Every flow is open loop: it starts at its scheduled time whether or not earlier flows
//! finished (up to [`EmuPlan::max_open_per_sender`] open flows per sender; beyond that a flow is
//! skipped and counted). FCT = CLOCK_MONOTONIC from just before `connect()` to the arrival of
//! the receiver's one-byte application acknowledgement, which the sink sends after reading the
//! last byte (end of stream). Nothing runs past `duration + drain`.
//!
//! **Queries (incast).** Flows that carry a query id are the responses of partition-aggregate
//! queries. A requester thread in the receiver's namespace sends, at each query's scheduled
//! time, one request (a UDP datagram: the response's flow id and the request's
//! CLOCK_MONOTONIC time) to every responder's sender namespace (port `port + 1`); each
//! responder answers at once by opening its response flow to the sink as any flow. The sink's
//! acknowledgement carries the time it read the response's last byte, so each response is
//! timed at the requester (request sent → last byte read) and a query's completion time is the
//! last of its responses ([`FlowRecord::outcome`]). Only complete queries (every response
//! finished) count towards QCT statistics. Requests go only to the instance's own namespaces;
//! one request per scheduled response, none after the deadline.

use crate::metrics::EmuMetrics;
use crate::record::{FlowRecord, IntervalSummary, RunSummary};
use crate::sock::{mark_class, monotonic_ns, raise_nofile, snd_cwnd};
use crate::EmuError;
use polyphony_netns::{enter, Hosts};
use polyphony_spec::{Bytes, ClassSli, Dscp, Flow, FlowId, FlowOutcome, IdealFct, Nanos, QctSli, QueryId, Workload};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Port the sink listens on inside the receiver's namespace (each instance has its own).
pub const DEFAULT_PORT: u16 = 7100;

/// What to run against.
#[derive(Debug, Clone)]
pub struct EmuPlan {
    /// The testbed instance.
    pub hosts: Hosts,
    /// Class names by DSCP (flows of other DSCPs are rejected).
    pub classes: Vec<(Dscp, String)>,
    /// The ideal-FCT parameters slowdowns divide by.
    pub ideal: IdealFct,
    /// Length of one summary interval.
    pub interval: Nanos,
    /// Sink port.
    pub port: u16,
    /// Open flows a sender may have at once.
    pub max_open_per_sender: usize,
    /// Time after the measurement window during which started flows may still finish.
    pub drain: Nanos,
}

impl EmuPlan {
    /// A plan with the defaults: port 7100, 512 open flows per sender, 5 s drain.
    pub fn new(hosts: Hosts, classes: Vec<(Dscp, String)>, ideal: IdealFct, interval: Nanos) -> EmuPlan {
        EmuPlan {
            hosts,
            classes,
            ideal,
            interval,
            port: DEFAULT_PORT,
            max_open_per_sender: 512,
            drain: Nanos::from_secs_f64(5.0),
        }
    }
}

/// Where the results go. Everything is optional; the returned [`RunSummary`] always comes back.
#[derive(Default)]
pub struct EmuOutputs {
    /// Ground-truth log of every flow (JSON lines of [`FlowRecord`]).
    pub flows: Option<PathBuf>,
    /// Per-interval summaries (JSON lines of [`IntervalSummary`]).
    pub intervals: Option<PathBuf>,
    /// Prometheus metrics to update as each flow ends (every class's series is created at zero
    /// when the run starts).
    pub metrics: Option<EmuMetrics>,
    /// Receives each interval summary as soon as the interval closes.
    pub live: Option<mpsc::Sender<IntervalSummary>>,
}

/// The records of a run, for callers that want every flow in memory.
pub struct RunResult {
    /// The summary.
    pub summary: RunSummary,
    /// Every flow's record, in completion order.
    pub records: Vec<FlowRecord>,
    /// Every interval's summary.
    pub intervals: Vec<IntervalSummary>,
}

enum Msg {
    Flow(Box<FlowRecord>),
    Skipped,
}

/// Replays the flows of `workload` that start before `duration` on the testbed, and measures
/// them. Flows are `src` = sender index, `dst` = the receiver (`senders`).
pub fn run(plan: &EmuPlan, workload: &Workload, duration: Nanos, out: &EmuOutputs) -> Result<RunResult, EmuError> {
    validate(plan, workload, duration)?;
    if let Some(m) = &out.metrics {
        m.declare_classes(&plan.classes);
    }
    raise_nofile();
    let wall0 = monotonic_ns();
    let flows: Vec<Flow> = workload.flows.iter().filter(|f| f.start < duration).copied().collect();
    // Queries: their start and responders (flow id, sender), and how many responses each has.
    let mut queries: BTreeMap<QueryId, (Nanos, Vec<(FlowId, u32)>)> = BTreeMap::new();
    for f in &flows {
        if let Some(q) = f.query {
            let e = queries.entry(q).or_insert((f.start, Vec::new()));
            e.0 = e.0.min(f.start);
            e.1.push((f.id, f.src.0));
        }
    }
    let fan_in: HashMap<QueryId, usize> = queries.iter().map(|(q, (_, r))| (*q, r.len())).collect();
    let deadline_rel = duration.0 + plan.drain.0;
    // The sink first; senders only start once it listens.
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), EmuError>>();
    let rx_ns = plan.hosts.receiver_ns();
    let port = plan.port;
    // The sink stops a little after the last sender gave up.
    let sink_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = sink_stop.clone();
    let sink = std::thread::Builder::new()
        .name("emu-sink".into())
        .spawn(move || sink_thread(rx_ns, port, ready_tx, stop2))
        .map_err(|_| EmuError::Worker("sink".into()))?;
    match ready_rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = sink.join();
            return Err(e);
        }
        Err(_) => return Err(EmuError::Worker("sink".into())),
    }
    // Time zero a little ahead, so every sender thread is ready.
    let t0 = monotonic_ns() + 200_000_000;
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut senders = Vec::new();
    for i in 0..plan.hosts.senders {
        let mine: Vec<Flow> = flows
            .iter()
            .filter(|f| f.src.0 == i && f.query.is_none())
            .copied()
            .collect();
        let responses: HashMap<FlowId, Flow> = flows
            .iter()
            .filter(|f| f.src.0 == i && f.query.is_some())
            .map(|f| (f.id, *f))
            .collect();
        let ctx = SenderCtx {
            ns: plan.hosts.sender_ns(i),
            host: i,
            port,
            t0,
            deadline: t0 + deadline_rel,
            max_open: plan.max_open_per_sender,
            ideal: plan.ideal,
            names: plan.classes.clone(),
            tx: tx.clone(),
        };
        senders.push(
            std::thread::Builder::new()
                .name(format!("emu-h{i}"))
                .spawn(move || sender_thread(ctx, mine, responses))
                .map_err(|_| EmuError::Worker(format!("sender {i}")))?,
        );
    }
    drop(tx);
    let requester = if queries.is_empty() {
        None
    } else {
        let (ns, port, deadline) = (plan.hosts.receiver_ns(), plan.port, t0 + deadline_rel);
        let list: Vec<(Nanos, Vec<(FlowId, u32)>)> = {
            let mut v: Vec<_> = queries.into_values().collect();
            v.sort_by_key(|q| q.0);
            v
        };
        Some(
            std::thread::Builder::new()
                .name("emu-requester".into())
                .spawn(move || requester_thread(ns, port, t0, deadline, list))
                .map_err(|_| EmuError::Worker("requester".into()))?,
        )
    };
    let collected = collect(plan, out, rx, t0, &fan_in);
    if let Some(r) = requester {
        match r.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err_requester(&e);
            }
            Err(_) => tracing::warn!("emu requester thread panicked"),
        }
    }
    let mut first_err = None;
    for (i, s) in senders.into_iter().enumerate() {
        match s.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(EmuError::Worker(format!("sender {i}")));
            }
        }
    }
    sink_stop.store(true, Ordering::SeqCst);
    let _ = sink.join();
    if let Some(e) = first_err {
        return Err(e);
    }
    let (records, intervals, skipped) = collected?;
    let dscps: Vec<Dscp> = plan.classes.iter().map(|c| c.0).collect();
    let outcomes: Vec<_> = records.iter().filter_map(FlowRecord::outcome).collect();
    let mut sli = polyphony_spec::SliVector::from_outcomes(&outcomes, &dscps);
    let complete = complete_queries(&records, &fan_in, 0, u64::MAX);
    for c in &mut sli.classes {
        c.qct = QctSli::from_outcomes(&complete, c.dscp);
    }
    let finished = outcomes.len() as u64;
    let summary = RunSummary {
        classes: sli.classes,
        scheduled: flows.len() as u64,
        finished,
        failed: records.len() as u64 - finished,
        skipped,
        base_rtt: plan.ideal.base_rtt,
        wall: Nanos(monotonic_ns() - wall0),
    };
    Ok(RunResult {
        summary,
        records,
        intervals,
    })
}

fn validate(plan: &EmuPlan, workload: &Workload, duration: Nanos) -> Result<(), EmuError> {
    if duration.0 == 0 || duration > Nanos::from_secs_f64(3600.0) {
        return Err(EmuError::invalid(
            "duration",
            duration,
            "a run lasts between 1 ns and 1 h",
        ));
    }
    if plan.interval.0 == 0 {
        return Err(EmuError::invalid(
            "interval",
            plan.interval,
            "the summary interval must be positive",
        ));
    }
    if plan.hosts.senders == 0 {
        return Err(EmuError::invalid("senders", 0, "the testbed needs at least one sender"));
    }
    let rx = plan.hosts.senders;
    for f in &workload.flows {
        if f.src.0 >= rx {
            return Err(EmuError::invalid(
                format!("flow {}.src", f.id.0),
                f.src.0,
                format!("the testbed has senders 0..{rx}"),
            ));
        }
        if f.dst.0 != rx {
            return Err(EmuError::invalid(
                format!("flow {}.dst", f.id.0),
                f.dst.0,
                format!("the testbed's receiver is host {rx}"),
            ));
        }
        if !plan.classes.iter().any(|c| c.0 == f.dscp) {
            return Err(EmuError::invalid(
                format!("flow {}.dscp", f.id.0),
                f.dscp,
                "no class of the scenario has this DSCP",
            ));
        }
    }
    Ok(())
}

type Collected = (Vec<FlowRecord>, Vec<IntervalSummary>, u64);

fn collect(
    plan: &EmuPlan,
    out: &EmuOutputs,
    rx: mpsc::Receiver<Msg>,
    t0: u64,
    fan_in: &HashMap<QueryId, usize>,
) -> Result<Collected, EmuError> {
    let open = |p: &Option<PathBuf>| -> Result<Option<std::io::BufWriter<std::fs::File>>, EmuError> {
        p.as_ref()
            .map(|p| {
                std::fs::File::create(p)
                    .map(std::io::BufWriter::new)
                    .map_err(|source| EmuError::Output {
                        path: p.clone(),
                        source,
                    })
            })
            .transpose()
    };
    let mut flows_w = open(&out.flows)?;
    let mut int_w = open(&out.intervals)?;
    let ivl = plan.interval.0;
    let dscps: Vec<Dscp> = plan.classes.iter().map(|c| c.0).collect();
    let mut records: Vec<FlowRecord> = Vec::new();
    let mut intervals = Vec::new();
    let mut next_interval = 0u64; // the first interval not yet emitted
    let mut skipped = 0u64;
    let mut emit = |k: u64, records: &[FlowRecord], intervals: &mut Vec<IntervalSummary>| -> Result<(), EmuError> {
        let (s, e) = (t0 + k * ivl, t0 + (k + 1) * ivl);
        let mut per: Vec<Vec<f64>> = vec![Vec::new(); dscps.len()];
        let mut failed = 0;
        for r in records {
            match (r.end_ns, r.slowdown) {
                (Some(end), Some(sd)) if end >= s && end < e => {
                    if let Some(i) = dscps.iter().position(|&d| d == r.dscp) {
                        per[i].push(sd);
                    }
                }
                (None, _) if t0 + r.sched_ns >= s && t0 + r.sched_ns < e => failed += 1,
                _ => {}
            }
        }
        // Queries whose last response was read in this interval.
        let complete = complete_queries(records, fan_in, s, e);
        let classes: Vec<ClassSli> = dscps
            .iter()
            .zip(per.iter_mut())
            .filter_map(|(&d, v)| {
                let mut c = ClassSli::from_slowdowns(d, v)?;
                c.qct = QctSli::from_outcomes(&complete, d);
                Some(c)
            })
            .collect();
        let sum = IntervalSummary {
            interval: k,
            start_ns: s,
            end_ns: e,
            classes,
            failed,
        };
        if let Some(w) = int_w.as_mut() {
            let line = serde_json::to_string(&sum).unwrap_or_default();
            writeln!(w, "{line}").map_err(|source| EmuError::Output {
                path: out.intervals.clone().unwrap_or_default(),
                source,
            })?;
            let _ = w.flush();
        }
        if let Some(l) = &out.live {
            let _ = l.send(sum.clone());
        }
        intervals.push(sum);
        Ok(())
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Flow(r)) => {
                if let Some(m) = &out.metrics {
                    m.observe(&r);
                }
                if let Some(w) = flows_w.as_mut() {
                    let line = serde_json::to_string(&r).unwrap_or_default();
                    writeln!(w, "{line}").map_err(|source| EmuError::Output {
                        path: out.flows.clone().unwrap_or_default(),
                        source,
                    })?;
                }
                records.push(*r);
            }
            Ok(Msg::Skipped) => skipped += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // Close intervals whose end passed (records arrive within µs of their end time).
        let now = monotonic_ns();
        while now > t0 + (next_interval + 1) * ivl + 20_000_000 {
            emit(next_interval, &records, &mut intervals)?;
            next_interval += 1;
        }
    }
    let last_end = records
        .iter()
        .filter_map(|r| r.end_ns)
        .max()
        .unwrap_or(t0)
        .max(records.iter().map(|r| t0 + r.sched_ns).max().unwrap_or(t0));
    while t0 + next_interval * ivl <= last_end {
        emit(next_interval, &records, &mut intervals)?;
        next_interval += 1;
    }
    if let Some(w) = flows_w.as_mut() {
        w.flush().map_err(|source| EmuError::Output {
            path: out.flows.clone().unwrap_or_default(),
            source,
        })?;
    }
    Ok((records, intervals, skipped))
}

/// The requester-timed outcomes of every query whose responses all finished, the last one read
/// (CLOCK_MONOTONIC) in `[from, until)`.
fn complete_queries(
    records: &[FlowRecord],
    fan_in: &HashMap<QueryId, usize>,
    from: u64,
    until: u64,
) -> Vec<FlowOutcome> {
    let mut by: HashMap<QueryId, (Vec<FlowOutcome>, u64)> = HashMap::new();
    for r in records {
        if let (Some(q), Some(o), Some(got)) = (r.query, r.outcome(), r.received_ns) {
            let e = by.entry(q).or_default();
            e.0.push(o);
            e.1 = e.1.max(got);
        }
    }
    by.into_iter()
        .filter(|(q, (v, last))| fan_in.get(q) == Some(&v.len()) && (from..until).contains(last))
        .flat_map(|(_, (v, _))| v)
        .collect()
}

fn first_err_requester(e: &EmuError) {
    tracing::warn!("emu requester: {e}; queries after the failure were not requested");
}

/// Bytes of a request datagram: the response's flow id and the request's CLOCK_MONOTONIC time
/// (both little endian).
const REQUEST_BYTES: usize = 16;

/// Sends each query's requests at its scheduled time (from the receiver's namespace) until the
/// deadline.
fn requester_thread(
    ns: String,
    port: u16,
    t0: u64,
    deadline: u64,
    queries: Vec<(Nanos, Vec<(FlowId, u32)>)>,
) -> Result<(), EmuError> {
    enter(&ns)?;
    let sock = std::net::UdpSocket::bind((Hosts::receiver_addr(), 0))
        .map_err(|e| EmuError::socket(format!("requester: bind a UDP socket in {ns}"), e))?;
    for (start, responders) in queries {
        let when = t0 + start.0;
        let now = monotonic_ns();
        if when >= deadline || now >= deadline {
            break;
        }
        if when > now {
            std::thread::sleep(Duration::from_nanos(when - now));
        }
        let sent = monotonic_ns();
        for (id, host) in responders {
            let mut d = [0u8; REQUEST_BYTES];
            d[..8].copy_from_slice(&id.0.to_le_bytes());
            d[8..].copy_from_slice(&sent.to_le_bytes());
            if let Err(e) = sock.send_to(&d, (Hosts::sender_addr(host), port + 1)) {
                tracing::warn!("request for flow {} to sender {host}: {e}", id.0);
            }
        }
    }
    Ok(())
}

/// Answers requests: each datagram names one of this sender's responses, which starts at once
/// (a response is sent at most once; unknown ids are ignored). Stops at the deadline.
async fn responder(
    ctx: Arc<SenderCtx>,
    sock: tokio::net::UdpSocket,
    mut responses: HashMap<FlowId, Flow>,
    open: Arc<AtomicUsize>,
) {
    let mut set = tokio::task::JoinSet::new();
    let mut buf = [0u8; 64];
    while !responses.is_empty() {
        let got = tokio::time::timeout_at(at(ctx.deadline), sock.recv_from(&mut buf)).await;
        let n = match got {
            Ok(Ok((n, _))) => n,
            Ok(Err(e)) => {
                tracing::warn!("responder {}: {e}", ctx.host);
                continue;
            }
            Err(_) => break,
        };
        if n != REQUEST_BYTES {
            continue;
        }
        let id = FlowId(u64::from_le_bytes(buf[..8].try_into().unwrap_or_default()));
        let sent = u64::from_le_bytes(buf[8..16].try_into().unwrap_or_default());
        let Some(f) = responses.remove(&id) else { continue };
        start_flow(&mut set, &ctx, &open, f, Some(sent));
    }
    drain(set, &ctx).await;
}

/// Starts flow `f` (a response when `request` holds its request's time) unless the sender
/// already has its maximum of open flows (then it is skipped and counted).
fn start_flow(
    set: &mut tokio::task::JoinSet<()>,
    ctx: &Arc<SenderCtx>,
    open: &Arc<AtomicUsize>,
    f: Flow,
    request: Option<u64>,
) {
    if open.load(Ordering::Relaxed) >= ctx.max_open {
        let _ = ctx.tx.send(Msg::Skipped);
        return;
    }
    open.fetch_add(1, Ordering::Relaxed);
    let (c, o) = (ctx.clone(), open.clone());
    set.spawn(async move {
        let mut r = one_flow(&c, f).await;
        r.request_ns = request;
        o.fetch_sub(1, Ordering::Relaxed);
        let _ = c.tx.send(Msg::Flow(Box::new(r)));
    });
    // Reap finished tasks so the set does not grow with the run.
    while set.try_join_next().is_some() {}
}

/// Waits for the set's flows until a second past the deadline, then aborts the rest.
async fn drain(mut set: tokio::task::JoinSet<()>, ctx: &SenderCtx) {
    let _ = tokio::time::timeout_at(at(ctx.deadline + 1_000_000_000), async {
        while set.join_next().await.is_some() {}
    })
    .await;
    set.abort_all();
}

struct SenderCtx {
    ns: String,
    host: u32,
    port: u16,
    t0: u64,
    deadline: u64,
    max_open: usize,
    ideal: IdealFct,
    names: Vec<(Dscp, String)>,
    tx: mpsc::Sender<Msg>,
}

fn runtime() -> Result<tokio::runtime::Runtime, EmuError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EmuError::socket("building the sender's tokio runtime", e))
}

/// tokio instant of a CLOCK_MONOTONIC time.
fn at(mono: u64) -> tokio::time::Instant {
    let now_m = monotonic_ns();
    let now_i = tokio::time::Instant::now();
    if mono >= now_m {
        now_i + Duration::from_nanos(mono - now_m)
    } else {
        now_i.checked_sub(Duration::from_nanos(now_m - mono)).unwrap_or(now_i)
    }
}

fn sender_thread(ctx: SenderCtx, flows: Vec<Flow>, responses: HashMap<FlowId, Flow>) -> Result<(), EmuError> {
    enter(&ctx.ns)?;
    let rt = runtime()?;
    let ctx = Arc::new(ctx);
    // The responder's socket, bound before time zero so that no request is missed.
    let udp = if responses.is_empty() {
        None
    } else {
        let addr = SocketAddr::from((Hosts::sender_addr(ctx.host), ctx.port + 1));
        let s = rt
            .block_on(async { tokio::net::UdpSocket::bind(addr).await })
            .map_err(|e| EmuError::socket(format!("responder: bind {addr} in {}", ctx.ns), e))?;
        Some(s)
    };
    rt.block_on(async move {
        let open = Arc::new(AtomicUsize::new(0));
        let mut set = tokio::task::JoinSet::new();
        if let Some(sock) = udp {
            set.spawn(responder(ctx.clone(), sock, responses, open.clone()));
        }
        for f in flows {
            tokio::time::sleep_until(at(ctx.t0 + f.start.0)).await;
            if monotonic_ns() >= ctx.deadline {
                break;
            }
            start_flow(&mut set, &ctx, &open, f, None);
        }
        drain(set, &ctx).await;
    });
    Ok(())
}

static ZEROS: [u8; 65536] = [0u8; 65536];

async fn one_flow(c: &SenderCtx, f: Flow) -> FlowRecord {
    let name = c
        .names
        .iter()
        .find(|n| n.0 == f.dscp)
        .map(|n| n.1.clone())
        .unwrap_or_else(|| f.dscp.name());
    let dst = SocketAddr::from((Hosts::receiver_addr(), c.port));
    let mut rec = FlowRecord {
        id: f.id,
        dscp: f.dscp,
        class: name,
        size: f.size.0,
        src_host: c.host,
        src_addr: Hosts::sender_addr(c.host).to_string(),
        src_port: 0,
        dst_addr: dst.ip().to_string(),
        dst_port: dst.port(),
        sched_ns: f.start.0,
        start_ns: monotonic_ns(),
        end_ns: None,
        fct_ns: None,
        ideal_ns: c.ideal.of(Bytes(f.size.0)).0,
        slowdown: None,
        init_cwnd: None,
        error: None,
        query: f.query,
        request_ns: None,
        received_ns: None,
    };
    let deadline = at(c.deadline);
    let r = tokio::time::timeout_at(deadline, transfer(&mut rec, dst, f)).await;
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => rec.error = Some(e),
        Err(_) => rec.error = Some("not finished before the run's deadline".into()),
    }
    rec
}

async fn transfer(rec: &mut FlowRecord, dst: SocketAddr, f: Flow) -> Result<(), String> {
    let sock = tokio::net::TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    mark_class(sock.as_raw_fd(), f.dscp.tos(), Hosts::fwmark(f.dscp)).map_err(|e| format!("IP_TOS/SO_MARK: {e}"))?;
    sock.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
    rec.start_ns = monotonic_ns();
    let mut s = sock.connect(dst).await.map_err(|e| format!("connect to {dst}: {e}"))?;
    rec.init_cwnd = snd_cwnd(s.as_raw_fd()).ok();
    rec.src_port = s.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut left = f.size.0 as usize;
    while left > 0 {
        let n = left.min(ZEROS.len());
        s.write_all(&ZEROS[..n]).await.map_err(|e| format!("send: {e}"))?;
        left -= n;
    }
    s.shutdown().await.map_err(|e| format!("shutdown: {e}"))?;
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack)
        .await
        .map_err(|e| format!("waiting for the application ack: {e}"))?;
    let end = monotonic_ns();
    rec.end_ns = Some(end);
    let fct = end - rec.start_ns;
    rec.fct_ns = Some(fct);
    rec.slowdown = Some(fct as f64 / rec.ideal_ns.max(1) as f64);
    // The ack's second part: when the sink read the last byte (sent in the same write).
    let mut read_at = [0u8; 8];
    s.read_exact(&mut read_at)
        .await
        .map_err(|e| format!("reading the sink's read-time: {e}"))?;
    if rec.query.is_some() {
        rec.received_ns = Some(u64::from_le_bytes(read_at));
    }
    Ok(())
}

fn sink_thread(
    ns: String,
    port: u16,
    ready: mpsc::Sender<Result<(), EmuError>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let setup = (|| -> Result<(tokio::runtime::Runtime, tokio::net::TcpListener), EmuError> {
        enter(&ns)?;
        let rt = runtime()?;
        let addr = SocketAddr::from((Hosts::receiver_addr(), port));
        let l = rt.block_on(async {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.set_reuseaddr(true)?;
            s.bind(addr)?;
            s.listen(4096)
        });
        let l = l.map_err(|e| {
            EmuError::socket(
                format!("sink: listen on {addr} in {ns} (another emu run on this instance?)"),
                e,
            )
        })?;
        Ok((rt, l))
    })();
    let (rt, l) = match setup {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            x
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    rt.block_on(async move {
        loop {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            match tokio::time::timeout(Duration::from_millis(100), l.accept()).await {
                Ok(Ok((s, _))) => {
                    tokio::spawn(sink_conn(s));
                }
                Ok(Err(e)) => tracing::warn!("sink accept: {e}"),
                Err(_) => {}
            }
        }
    });
}

async fn sink_conn(mut s: tokio::net::TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = vec![0u8; 16384];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => return,
        }
    }
    // The one-byte application ack, then when the last byte was read (a query's response is
    // timed at the requester by it), in one write: one segment.
    let mut ack = [1u8; 9];
    ack[1..].copy_from_slice(&monotonic_ns().to_le_bytes());
    let _ = s.write_all(&ack).await;
    let _ = s.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{BitsPerSec, FlowId, HostId};

    fn plan() -> EmuPlan {
        EmuPlan::new(
            Hosts {
                prefix: "ppt".into(),
                senders: 3,
            },
            vec![(Dscp::AF11, "AF11".into())],
            IdealFct::tcp(Nanos(20_000), BitsPerSec::from_mbps(100)),
            Nanos::SECOND,
        )
    }

    fn wl(src: u32, dst: u32, dscp: Dscp) -> Workload {
        let f = Flow {
            id: FlowId(7),
            src: HostId(src),
            dst: HostId(dst),
            dscp,
            size: Bytes(1000),
            start: Nanos(0),
            weight: 1.0,
            query: None,
        };
        Workload::new(vec![f], Nanos(0)).unwrap()
    }

    #[test]
    fn flows_the_testbed_cannot_carry_are_refused_before_any_traffic() {
        let d = Nanos::SECOND;
        let o = EmuOutputs::default();
        let e = run(&plan(), &wl(5, 3, Dscp::AF11), d, &o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("flow 7.src = 5"), "{e}");
        let e = run(&plan(), &wl(0, 1, Dscp::AF11), d, &o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("flow 7.dst = 1"), "{e}");
        let e = run(&plan(), &wl(0, 3, Dscp::AF21), d, &o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("flow 7.dscp = 18"), "{e}");
        let e = run(&plan(), &wl(0, 3, Dscp::AF11), Nanos(0), &o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("duration"), "{e}");
    }
}
