//! A flow trace that any simulator can replay: the topology, the configuration, the ECMP salt
//! and every flow (src host, dst host, class, size, start). `polyphony simulate --export-trace`
//! writes it, `polyphony simulate --trace` replays it through `pktsim` or `flowsim`, and the
//! ns-3 program in `bench/ns3/` reads the same file, so every simulator sees identical arrivals.
//!
//! # Format (text, version 1)
//! ```text
//! # polyphony-trace 1
//! # topology dumbbell senders=3 rate_mbps=10000 link_delay_us=1
//! # ecmp_salt 1
//! # port_buffer_bytes 1000000
//! # class dscp=10 weight=0.5 ecn_threshold_bytes=30000 init_cwnd=10
//! # class dscp=18 weight=0.5 ecn_threshold_bytes=30000 init_cwnd=10 buffer_bytes=200000 congestion_control=cubic
//! id,src,dst,dscp,size,start
//! 0,0,3,10,1448,0
//! ```
//! The first line names the format. Then directive lines (`# key …`, `key=value` tokens):
//! exactly one `topology` (`dumbbell senders= rate_mbps= link_delay_us=` or `leaf_spine racks=
//! hosts_per_rack= spines= host_rate_mbps= fabric_rate_mbps= link_delay_us=`, the fields of
//! [`TopologySpec`]), optional `ecmp_salt` (default 0) and `port_buffer_bytes`, and one `class`
//! per class in objective order. Then the CSV of [`Workload::from_csv`] (sizes in bytes, starts
//! in ns), rows in non-decreasing start order. Every error names the line.

use crate::flow::parse_csv_flows;
use crate::{
    Bytes, ClassConfig, Dscp, LeafSpineSpec, Nanos, NetworkConfig, Packets, SpecError, TopologySpec, Workload,
};
use std::fmt::Write as _;

/// The first line of a version-1 trace.
pub const TRACE_MAGIC: &str = "# polyphony-trace 1";

/// A replayable flow trace (see the module documentation for the text format).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowTrace {
    /// The network.
    pub topology: TopologySpec,
    /// The configuration the flows ran under; its class order is the objective order.
    pub config: NetworkConfig,
    /// The ECMP hash salt (the models' seed) that fixes each flow's path.
    pub ecmp_salt: u64,
    /// The flows.
    pub workload: Workload,
}

impl FlowTrace {
    /// Renders the trace as text (the inverse of [`FlowTrace::parse`]).
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(64 + 32 * self.workload.flows.len());
        // Writing into a String cannot fail.
        let _ = writeln!(s, "{TRACE_MAGIC}");
        let _ = match &self.topology {
            TopologySpec::Dumbbell {
                senders,
                rate_mbps,
                link_delay_us,
            } => writeln!(
                s,
                "# topology dumbbell senders={senders} rate_mbps={rate_mbps} link_delay_us={link_delay_us}"
            ),
            TopologySpec::LeafSpine(ls) => writeln!(
                s,
                "# topology leaf_spine racks={} hosts_per_rack={} spines={} host_rate_mbps={} \
                 fabric_rate_mbps={} link_delay_us={}",
                ls.racks, ls.hosts_per_rack, ls.spines, ls.host_rate_mbps, ls.fabric_rate_mbps, ls.link_delay_us
            ),
        };
        let _ = writeln!(s, "# ecmp_salt {}", self.ecmp_salt);
        if let Some(b) = self.config.port_buffer {
            let _ = writeln!(s, "# port_buffer_bytes {}", b.0);
        }
        for c in &self.config.classes {
            let _ = write!(
                s,
                "# class dscp={} weight={} ecn_threshold_bytes={} init_cwnd={}",
                c.dscp.value(),
                c.weight,
                c.ecn_threshold.0,
                c.init_cwnd.0
            );
            if let Some(b) = c.buffer {
                let _ = write!(s, " buffer_bytes={}", b.0);
            }
            if let Some(cc) = &c.congestion_control {
                let _ = write!(s, " congestion_control={cc}");
            }
            s.push('\n');
        }
        s.push_str("id,src,dst,dscp,size,start\n");
        for f in &self.workload.flows {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{}",
                f.id.0,
                f.src.0,
                f.dst.0,
                f.dscp.value(),
                f.size.0,
                f.start.0
            );
        }
        s
    }

    /// Parses a trace. Every error is one line naming `source_name` and the 1-based line:
    /// a malformed directive or row, a truncated row, a negative or zero size, a host the
    /// topology does not have, a class the configuration does not have, a start time earlier
    /// than the row before.
    pub fn parse(text: &str, source_name: &str) -> Result<FlowTrace, SpecError> {
        let perr = |line: usize, why: String| SpecError::Parse {
            source_name: source_name.into(),
            line,
            why,
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).peekable();
        match lines.next() {
            Some((_, l)) if l.trim() == TRACE_MAGIC => {}
            Some((_, l)) => {
                return Err(perr(
                    1,
                    format!("first line is {l:?}; a trace starts with {TRACE_MAGIC:?}"),
                ));
            }
            None => return Err(perr(1, "empty trace".into())),
        }
        let mut topology = None;
        let mut ecmp_salt = 0;
        let mut port_buffer = None;
        let mut classes = Vec::new();
        let mut last_directive = 1;
        while let Some(&(ln, l)) = lines.peek() {
            let Some(d) = l.strip_prefix('#') else { break };
            lines.next();
            last_directive = ln;
            let mut words = d.split_whitespace();
            let Some(key) = words.next() else { continue };
            let rest: Vec<&str> = words.collect();
            match key {
                "topology" => {
                    if topology.is_some() {
                        return Err(perr(ln, "a second topology line: a trace has one topology".into()));
                    }
                    let t = parse_topology(&rest).map_err(|why| perr(ln, why))?;
                    t.validate().map_err(|e| perr(ln, e.to_string()))?;
                    topology = Some(t);
                }
                "ecmp_salt" => ecmp_salt = one_number(&rest).map_err(|why| perr(ln, format!("ecmp_salt: {why}")))?,
                "port_buffer_bytes" => {
                    port_buffer = Some(Bytes(
                        one_number(&rest).map_err(|why| perr(ln, format!("port_buffer_bytes: {why}")))?,
                    ));
                }
                "class" => classes.push(parse_class(&rest).map_err(|why| perr(ln, why))?),
                other => {
                    return Err(perr(
                        ln,
                        format!("unknown directive {other:?}: use topology, ecmp_salt, port_buffer_bytes or class"),
                    ));
                }
            }
        }
        let topology =
            topology.ok_or_else(|| perr(last_directive, "no `# topology …` line before the flows".into()))?;
        let config = NetworkConfig { classes, port_buffer };
        config
            .validate()
            .map_err(|e| perr(last_directive, format!("the class lines: {e}")))?;
        let rows = parse_csv_flows(lines, source_name)?;
        let hosts = topology.hosts();
        let mut prev = Nanos(0);
        for (ln, f) in &rows {
            for (what, h) in [("src", f.src), ("dst", f.dst)] {
                if h.0 >= hosts {
                    return Err(perr(
                        *ln,
                        format!("{what} = {}: unknown host (the topology has hosts 0..{hosts})", h.0),
                    ));
                }
            }
            if f.src == f.dst {
                return Err(perr(*ln, format!("src = dst = {}: a flow needs two hosts", f.src.0)));
            }
            if config.class(f.dscp).is_none() {
                return Err(perr(
                    *ln,
                    format!("dscp = {}: no `# class` line for it", f.dscp.value()),
                ));
            }
            if f.start < prev {
                return Err(perr(
                    *ln,
                    format!(
                        "start = {} ns is earlier than the previous row's {} ns: rows are in start order",
                        f.start.0, prev.0
                    ),
                ));
            }
            prev = f.start;
        }
        let workload =
            Workload::new(rows.into_iter().map(|(_, f)| f).collect(), Nanos(0)).map_err(|e| perr(0, e.to_string()))?;
        Ok(FlowTrace {
            topology,
            config,
            ecmp_salt,
            workload,
        })
    }
}

/// `key=value` tokens in order, rejecting anything else.
fn pairs<'a>(words: &[&'a str]) -> Result<Vec<(&'a str, &'a str)>, String> {
    words
        .iter()
        .map(|w| w.split_once('=').ok_or_else(|| format!("{w:?} is not key=value")))
        .collect()
}

fn one_number<T: std::str::FromStr>(words: &[&str]) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    match words {
        [w] => w.parse::<T>().map_err(|e| format!("{w:?}: {e}")),
        _ => Err(format!("expected one number, got {words:?}")),
    }
}

/// Looks up `key` among the pairs and parses it; `Ok(None)` when absent.
fn field<T: std::str::FromStr>(kv: &[(&str, &str)], key: &str) -> Result<Option<T>, String>
where
    T::Err: std::fmt::Display,
{
    kv.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.parse::<T>().map_err(|e| format!("{key} = {v:?}: {e}")))
        .transpose()
}

fn required<T: std::str::FromStr>(kv: &[(&str, &str)], key: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    field(kv, key)?.ok_or_else(|| format!("missing {key}="))
}

fn only_known(kv: &[(&str, &str)], known: &[&str]) -> Result<(), String> {
    match kv.iter().find(|(k, _)| !known.contains(k)) {
        Some((k, _)) => Err(format!("unknown field {k:?}: use {}", known.join(", "))),
        None => Ok(()),
    }
}

fn parse_topology(words: &[&str]) -> Result<TopologySpec, String> {
    let (kind, rest) = words
        .split_first()
        .ok_or("topology: name a kind (dumbbell or leaf_spine)")?;
    let kv = pairs(rest)?;
    match *kind {
        "dumbbell" => {
            only_known(&kv, &["senders", "rate_mbps", "link_delay_us"])?;
            Ok(TopologySpec::Dumbbell {
                senders: required(&kv, "senders")?,
                rate_mbps: required(&kv, "rate_mbps")?,
                link_delay_us: required(&kv, "link_delay_us")?,
            })
        }
        "leaf_spine" => {
            only_known(
                &kv,
                &[
                    "racks",
                    "hosts_per_rack",
                    "spines",
                    "host_rate_mbps",
                    "fabric_rate_mbps",
                    "link_delay_us",
                ],
            )?;
            Ok(TopologySpec::LeafSpine(LeafSpineSpec {
                racks: required(&kv, "racks")?,
                hosts_per_rack: required(&kv, "hosts_per_rack")?,
                spines: required(&kv, "spines")?,
                host_rate_mbps: required(&kv, "host_rate_mbps")?,
                fabric_rate_mbps: required(&kv, "fabric_rate_mbps")?,
                link_delay_us: required(&kv, "link_delay_us")?,
            }))
        }
        other => Err(format!("topology kind {other:?}: use dumbbell or leaf_spine")),
    }
}

fn parse_class(words: &[&str]) -> Result<ClassConfig, String> {
    let kv = pairs(words)?;
    only_known(
        &kv,
        &[
            "dscp",
            "weight",
            "ecn_threshold_bytes",
            "init_cwnd",
            "buffer_bytes",
            "congestion_control",
        ],
    )?;
    let d: u8 = required(&kv, "dscp")?;
    let dscp = Dscp::new(d).map_err(|e| e.to_string())?;
    Ok(ClassConfig {
        dscp,
        weight: required(&kv, "weight")?,
        ecn_threshold: Bytes(required(&kv, "ecn_threshold_bytes")?),
        init_cwnd: Packets(required(&kv, "init_cwnd")?),
        buffer: field::<u64>(&kv, "buffer_bytes")?.map(Bytes),
        congestion_control: field(&kv, "congestion_control")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "# polyphony-trace 1\n\
        # topology dumbbell senders=3 rate_mbps=10000 link_delay_us=1\n\
        # ecmp_salt 7\n\
        # class dscp=10 weight=0.5 ecn_threshold_bytes=30000 init_cwnd=10\n\
        # class dscp=18 weight=0.5 ecn_threshold_bytes=60000 init_cwnd=4 buffer_bytes=200000 congestion_control=cubic\n\
        id,src,dst,dscp,size,start\n";

    fn parse(body: &str) -> Result<FlowTrace, String> {
        FlowTrace::parse(&format!("{HEAD}{body}"), "t.trace").map_err(|e| e.to_string())
    }

    #[test]
    fn round_trip() {
        let t = parse("0,0,3,10,1448,0\n1,1,3,18,5000,100\n2,2,3,10,1,100\n").unwrap();
        assert_eq!(t.ecmp_salt, 7);
        assert_eq!(t.workload.flows.len(), 3);
        assert_eq!(t.config.classes[1].buffer, Some(Bytes(200_000)));
        assert_eq!(
            t.config.classes[1].congestion_control.as_ref().map(|c| c.name()),
            Some("cubic")
        );
        assert_eq!(t.config.classes[0].congestion_control, None);
        let again = FlowTrace::parse(&t.to_text(), "again").unwrap();
        assert_eq!(again, t);
        assert_eq!(again.to_text(), t.to_text());
    }

    /// A workload file is read by its content: a flow trace's flows, CSV by name, else JSON
    /// lines — the same flows each way.
    #[test]
    fn a_workload_file_may_be_a_flow_trace() {
        let t = parse("0,0,3,10,1448,0\n1,1,3,18,5000,100\n").unwrap();
        let w = &t.workload;
        assert_eq!(&Workload::from_file_text(&t.to_text(), "x.trace").unwrap(), w);
        assert_eq!(&Workload::from_file_text(&w.to_jsonl(), "x.jsonl").unwrap(), w);
        let csv = "id,src,dst,dscp,size,start\n0,0,3,10,1448,0\n1,1,3,18,5000,100\n";
        assert_eq!(Workload::from_file_text(csv, "x.csv").unwrap().flows, w.flows);
        // A bad flow trace row is named by its line, as FlowTrace::parse names it.
        let bad = format!("{HEAD}0,0,3,10,1448\n");
        let e = Workload::from_file_text(&bad, "x.trace").unwrap_err().to_string();
        assert!(e.contains("x.trace:7"), "{e}");
    }

    // The header is 6 lines, so the first flow row is line 7.
    #[test]
    fn truncated_line_is_named() {
        let e = parse("0,0,3,10,1448,0\n1,1,3,18,50\n").unwrap_err();
        assert_eq!(e, "t.trace:8: 5 fields, expected 6 (truncated line?)");
    }

    #[test]
    fn a_file_cut_inside_its_last_row_is_named() {
        // No trailing newline: the cut row is still read, and refused by line.
        let e = parse("0,0,3,10,1448,0\n1,1,3,1").unwrap_err();
        assert_eq!(e, "t.trace:8: 4 fields, expected 6 (truncated line?)");
        // A number cut into another row's digits overflows rather than wraps.
        let e = parse("0,0,3,10,1448,184467440737095516150\n").unwrap_err();
        assert!(e.starts_with("t.trace:7: start = \"184467440737095516150\""), "{e}");
    }

    #[test]
    fn unknown_host_is_named() {
        let e = parse("0,0,3,10,1448,0\n1,9,3,18,5000,10\n").unwrap_err();
        assert_eq!(e, "t.trace:8: src = 9: unknown host (the topology has hosts 0..4)");
    }

    #[test]
    fn negative_size_is_named() {
        let e = parse("0,0,3,10,-1448,0\n").unwrap_err();
        assert!(e.starts_with("t.trace:7: size = \"-1448\""), "{e}");
    }

    #[test]
    fn non_monotonic_times_are_named() {
        let e = parse("0,0,3,10,1448,500\n1,1,3,18,5000,499\n").unwrap_err();
        assert_eq!(
            e,
            "t.trace:8: start = 499 ns is earlier than the previous row's 500 ns: rows are in start order"
        );
    }

    #[test]
    fn other_bad_input_is_named_not_panicked() {
        let bad: [(&str, &str); 4] = [
            ("0,0,3,12,1448,0\n", "t.trace:7: dscp = 12: no `# class` line"),
            ("0,3,3,10,1448,0\n", "t.trace:7: src = dst = 3"),
            ("0,0,3,10,0,0\n", "t.trace:7: size = 0"),
            ("0,0,3,10,1448,\n", "t.trace:7: start = \"\""),
        ];
        for (body, want) in bad {
            let e = parse(body).unwrap_err();
            assert!(e.starts_with(want), "{e} (want {want})");
        }
        let header_errors: [(&str, &str); 4] = [
            ("id,src\n", "x:1: first line"),
            (
                "# polyphony-trace 1\n# topology ring n=3\n",
                "x:2: topology kind \"ring\"",
            ),
            (
                "# polyphony-trace 1\n# topology dumbbell senders=3 rate_mbps=fast link_delay_us=1\n",
                "x:2: rate_mbps = \"fast\"",
            ),
            (
                "# polyphony-trace 1\n# topology dumbbell senders=3 rate_mbps=10 link_delay_us=1\n# colour blue\n",
                "x:3: unknown directive \"colour\"",
            ),
        ];
        for (text, want) in header_errors {
            let e = FlowTrace::parse(text, "x").unwrap_err().to_string();
            assert!(e.starts_with(want), "{e} (want {want})");
        }
    }
}
