//! Flows and workloads, and the captured-trace formats (JSON lines, CSV).

use crate::{Bytes, Dscp, Nanos, SpecError};
use serde::{Deserialize, Serialize};

/// A flow's identifier, unique within a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FlowId(pub u64);

/// A partition-aggregate query's identifier, unique within a workload: the flows of one query
/// are its responses, which start together towards one requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueryId(pub u64);

/// A host's index in a topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HostId(pub u32);

/// One flow: a transfer of `size` bytes from `src` to `dst` in class `dscp`, starting at `start`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Identifier.
    pub id: FlowId,
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Traffic class.
    pub dscp: Dscp,
    /// Bytes of application payload.
    pub size: Bytes,
    /// Arrival time, relative to the start of the workload.
    pub start: Nanos,
    /// Statistical weight of this record (1 unless the trace was downsampled: a flow kept with
    /// probability p carries weight 1/p).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
    /// The query this flow answers (a partition-aggregate response), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<QueryId>,
}

impl Flow {
    /// A flow of weight 1 (a record that was not downsampled).
    pub fn new(id: FlowId, src: HostId, dst: HostId, dscp: Dscp, size: Bytes, start: Nanos) -> Flow {
        Flow {
            id,
            src,
            dst,
            dscp,
            size,
            start,
            weight: 1.0,
            query: None,
        }
    }
}

fn one() -> f64 {
    1.0
}
fn is_one(w: &f64) -> bool {
    *w == 1.0
}

/// A workload: flows sorted by start time, over a span of time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Workload {
    /// Flows, sorted by `start`.
    pub flows: Vec<Flow>,
    /// The span the flows were drawn over (≥ the last start).
    pub duration: Nanos,
}

impl Workload {
    /// Builds a workload: sorts by start, checks sizes and endpoints and weights, and sets
    /// `duration` to at least the last start.
    pub fn new(mut flows: Vec<Flow>, duration: Nanos) -> Result<Workload, SpecError> {
        for f in &flows {
            if f.size.0 == 0 {
                return Err(SpecError::invalid(
                    format!("flow {}.size", f.id.0),
                    0,
                    "a flow carries at least one byte",
                ));
            }
            if f.src == f.dst {
                return Err(SpecError::invalid(
                    format!("flow {}.dst", f.id.0),
                    f.dst.0,
                    "source and destination are the same host",
                ));
            }
            if !(f.weight.is_finite() && f.weight > 0.0) {
                return Err(SpecError::invalid(
                    format!("flow {}.weight", f.id.0),
                    f.weight,
                    "weights are positive",
                ));
            }
        }
        flows.sort_by_key(|f| (f.start, f.id));
        let last = flows.last().map(|f| f.start).unwrap_or_default();
        Ok(Workload {
            duration: duration.max(last),
            flows,
        })
    }

    /// Parses a trace in JSON lines, one [`Flow`] object a line (blank lines and lines starting
    /// with `#` are skipped). Errors give the 1-based line number.
    pub fn from_jsonl(text: &str, source_name: &str) -> Result<Workload, SpecError> {
        let mut flows = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let f: Flow = serde_json::from_str(l).map_err(|e| SpecError::Parse {
                source_name: source_name.into(),
                line: i + 1,
                why: e.to_string(),
            })?;
            flows.push(f);
        }
        Workload::new(flows, Nanos(0))
    }

    /// Renders the workload as JSON lines (the inverse of [`Workload::from_jsonl`]).
    pub fn to_jsonl(&self) -> String {
        let mut s = String::new();
        for f in &self.flows {
            // A Flow always serialises: it holds only numbers.
            if let Ok(l) = serde_json::to_string(f) {
                s.push_str(&l);
                s.push('\n');
            }
        }
        s
    }

    /// Parses a CSV trace with the header `id,src,dst,dscp,size,start[,weight]` (sizes in bytes,
    /// start in ns). Errors give the 1-based line number.
    pub fn from_csv(text: &str, source_name: &str) -> Result<Workload, SpecError> {
        let rows = parse_csv_flows(text.lines().enumerate().map(|(i, l)| (i + 1, l)), source_name)?;
        Workload::new(rows.into_iter().map(|(_, f)| f).collect(), Nanos(0))
    }

    /// Parses a workload file of any format the tools write, told apart by its content and
    /// name: a flow trace (first line [`crate::TRACE_MAGIC`], as `polyphony simulate
    /// --export-trace` writes it; its flows only — the topology and configuration it records
    /// are the caller's to check), CSV when `source_name` ends in `.csv` ([`Workload::from_csv`]),
    /// otherwise JSON lines ([`Workload::from_jsonl`]).
    pub fn from_file_text(text: &str, source_name: &str) -> Result<Workload, SpecError> {
        if text.lines().next().is_some_and(|l| l.trim_end() == crate::TRACE_MAGIC) {
            Ok(crate::FlowTrace::parse(text, source_name)?.workload)
        } else if source_name.ends_with(".csv") {
            Workload::from_csv(text, source_name)
        } else {
            Workload::from_jsonl(text, source_name)
        }
    }

    /// Whether any flow answers a query (the workload has partition-aggregate traffic).
    pub fn has_queries(&self) -> bool {
        self.flows.iter().any(|f| f.query.is_some())
    }

    /// Offered load of class `dscp` in bits per second over `duration` (weights applied).
    pub fn offered_bps(&self, dscp: Dscp) -> f64 {
        if self.duration.0 == 0 {
            return 0.0;
        }
        let bytes: f64 = self
            .flows
            .iter()
            .filter(|f| f.dscp == dscp)
            .map(|f| f.size.0 as f64 * f.weight)
            .sum();
        bytes * 8.0 / self.duration.as_secs_f64()
    }
}

/// Parses CSV flow rows: the header `id,src,dst,dscp,size,start[,weight]`, then one flow a line.
/// `lines` yields (1-based line number, text); blank lines and lines starting with `#` are
/// skipped. Returns every flow with its line number, in file order. Errors give the line number.
pub(crate) fn parse_csv_flows<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    source_name: &str,
) -> Result<Vec<(usize, Flow)>, SpecError> {
    let perr = |line: usize, why: String| SpecError::Parse {
        source_name: source_name.into(),
        line,
        why,
    };
    let mut lines = lines.filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let (hl, header) = lines
        .next()
        .ok_or_else(|| perr(1, "empty trace: expected a header line".into()))?;
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let expected = ["id", "src", "dst", "dscp", "size", "start"];
    if cols.len() < 6 || cols[..6] != expected || (cols.len() == 7 && cols[6] != "weight") || cols.len() > 7 {
        return Err(perr(
            hl,
            format!("header is {header:?}; expected \"id,src,dst,dscp,size,start[,weight]\""),
        ));
    }
    let mut flows = Vec::new();
    for (ln, l) in lines {
        let v: Vec<&str> = l.split(',').map(str::trim).collect();
        if v.len() != cols.len() {
            return Err(perr(
                ln,
                format!("{} fields, expected {} (truncated line?)", v.len(), cols.len()),
            ));
        }
        let num = |k: usize| -> Result<u64, SpecError> {
            v[k].parse::<u64>()
                .map_err(|e| perr(ln, format!("{} = {:?}: {e} (a non-negative integer)", cols[k], v[k])))
        };
        let dscp_raw = num(3)?;
        let dscp = u8::try_from(dscp_raw)
            .ok()
            .and_then(|d| Dscp::new(d).ok())
            .ok_or_else(|| perr(ln, format!("dscp = {dscp_raw}: use 0..=63")))?;
        let weight = if cols.len() == 7 {
            v[6].parse::<f64>()
                .map_err(|e| perr(ln, format!("weight = {:?}: {e}", v[6])))?
        } else {
            1.0
        };
        let host = |k: usize| -> Result<HostId, SpecError> {
            let n = num(k)?;
            u32::try_from(n)
                .map(HostId)
                .map_err(|_| perr(ln, format!("{} = {n}: too large", cols[k])))
        };
        let size = num(4)?;
        if size == 0 {
            return Err(perr(ln, "size = 0: a flow carries at least one byte".into()));
        }
        flows.push((
            ln,
            Flow {
                id: FlowId(num(0)?),
                src: host(1)?,
                dst: host(2)?,
                dscp,
                size: Bytes(size),
                start: Nanos(num(5)?),
                weight,
                query: None,
            },
        ));
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u64, start: u64) -> Flow {
        Flow {
            id: FlowId(id),
            src: HostId(0),
            dst: HostId(3),
            dscp: Dscp::AF11,
            size: Bytes(1000),
            start: Nanos(start),
            weight: 1.0,
            query: None,
        }
    }

    #[test]
    fn jsonl_round_trip_and_sorting() {
        let w = Workload::new(vec![flow(2, 50), flow(1, 10)], Nanos(100)).unwrap();
        assert_eq!(w.flows[0].id, FlowId(1));
        let back = Workload::from_jsonl(&w.to_jsonl(), "t").unwrap();
        assert_eq!(back.flows, w.flows);
    }

    #[test]
    fn query_ids_survive_jsonl_and_plain_flows_do_not_mention_them() {
        let mut q = flow(1, 10);
        q.query = Some(QueryId(7));
        let w = Workload::new(vec![q, flow(2, 20)], Nanos(100)).unwrap();
        let text = w.to_jsonl();
        assert!(text.lines().next().unwrap().contains("\"query\":7"), "{text}");
        assert!(!text.lines().nth(1).unwrap().contains("query"), "{text}");
        assert_eq!(Workload::from_jsonl(&text, "t").unwrap().flows, w.flows);
        assert!(w.has_queries() && !Workload::new(vec![flow(2, 20)], Nanos(0)).unwrap().has_queries());
    }

    #[test]
    fn jsonl_error_names_line() {
        let text = "{\"id\":1,\"src\":0,\"dst\":1,\"dscp\":10,\"size\":5,\"start\":0}\n{\"id\":2}\n";
        let e = Workload::from_jsonl(text, "trace.jsonl").unwrap_err().to_string();
        assert!(e.starts_with("trace.jsonl:2:"), "{e}");
    }

    #[test]
    fn csv_parses_and_rejects_bad_dscp() {
        let ok = "id,src,dst,dscp,size,start\n1,0,3,10,1500,0\n2,1,3,18,3000,100\n";
        let w = Workload::from_csv(ok, "t.csv").unwrap();
        assert_eq!(w.flows.len(), 2);
        let bad = "id,src,dst,dscp,size,start\n1,0,3,99,1500,0\n";
        let e = Workload::from_csv(bad, "t.csv").unwrap_err().to_string();
        assert!(e.contains("t.csv:2") && e.contains("dscp = 99"), "{e}");
    }

    #[test]
    fn zero_size_is_rejected() {
        let mut f = flow(1, 0);
        f.size = Bytes(0);
        assert!(Workload::new(vec![f], Nanos(0)).is_err());
    }
}
