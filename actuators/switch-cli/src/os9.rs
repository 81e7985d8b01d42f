//! Dell Networking OS9 (FTOS) dialect, e.g. the S4048-ON.
//!
//! Per queue q the actuator owns `qos-policy-output <prefix>-q<q>` (with
//! `bandwidth-percentage`, `wred green <prefix>-k<q>` and `wred ecn`) and
//! `wred-profile <prefix>-k<q>` (with `threshold min … max … max-drop-rate 100`). Thresholds are
//! in kilobytes (1 KB = 1024 B assumed; K is rounded up to a whole KB, and `max` is one KB
//! above `min`, so marking is a step at K as DCTCP wants). Each change is one CLI session
//! (`configure` … `end`) fed on the SSH session's input; OS9 applies it at once (no commit).
//! Read back parses `show running-config`. The attachment of the policies to the ports
//! (`policy-map-output`, `service-queue`, `service-policy output`) is the one-time
//! [`Dialect::setup`] script.

use crate::config::VendorConfig;
use crate::dialect::{Dialect, QueueItem, QueueValue};
use polyphony_actuator::{Command, NativeState};
use polyphony_spec::Bytes;
use std::collections::BTreeMap;

const KB: u64 = 1024;

/// The OS9 dialect.
#[derive(Debug, Clone, Copy, Default)]
pub struct DellOs9;

fn policy(cfg: &VendorConfig, q: u8) -> String {
    format!("{}-q{q}", cfg.object_prefix)
}
fn profile(cfg: &VendorConfig, q: u8) -> String {
    format!("{}-k{q}", cfg.object_prefix)
}

fn session(lines: &[String]) -> Command {
    let mut s = String::from("configure\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("end\n");
    Command::new(Vec::<String>::new()).with_stdin(s)
}

impl Dialect for DellOs9 {
    fn name(&self) -> &'static str {
        "dell-os9"
    }

    fn thresholds(&self, k: Bytes) -> QueueValue {
        let kb = k.0.div_ceil(KB).max(1);
        QueueValue::Thresholds {
            min: Bytes(kb * KB),
            max: Bytes((kb + 1) * KB),
        }
    }

    fn max_threshold(&self) -> Bytes {
        // The S4048-ON's packet buffer is 12 MB.
        Bytes(12 * 1024 * 1024)
    }

    fn set(&self, cfg: &VendorConfig, item: &QueueItem, value: Option<&QueueValue>) -> Command {
        let q = item.queue();
        let (pol, prof) = (policy(cfg, q), profile(cfg, q));
        match (item, value) {
            (QueueItem::Weight { .. }, Some(QueueValue::Percent(p))) => {
                session(&[format!("qos-policy-output {pol}"), format!(" bandwidth-percentage {p}")])
            }
            (QueueItem::Weight { .. }, _) => {
                session(&[format!("qos-policy-output {pol}"), " no bandwidth-percentage".into()])
            }
            (QueueItem::Ecn { .. }, Some(QueueValue::Thresholds { min, max })) => session(&[
                format!("wred-profile {prof}"),
                format!(" threshold min {} max {} max-drop-rate 100", min.0 / KB, max.0 / KB),
                " exit".into(),
                format!("qos-policy-output {pol}"),
                format!(" wred green {prof}"),
                " wred ecn".into(),
            ]),
            (QueueItem::Ecn { .. }, _) => session(&[
                format!("qos-policy-output {pol}"),
                " no wred ecn".into(),
                " no wred green".into(),
                " exit".into(),
                format!("no wred-profile {prof}"),
            ]),
        }
    }

    fn read(&self, _cfg: &VendorConfig) -> Vec<Command> {
        vec![Command::new(Vec::<String>::new()).with_stdin("terminal length 0\nshow running-config\nexit\n")]
    }

    fn parse(&self, cfg: &VendorConfig, outputs: &[String]) -> Result<NativeState<QueueItem, QueueValue>, String> {
        let text = outputs.first().ok_or("no output from show running-config")?;
        // Blocks: a line at column 0 opens one; indented lines belong to it.
        let mut blocks: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            let l = line.trim_end();
            if l.is_empty() || l.starts_with('!') {
                current = None;
                continue;
            }
            if l.starts_with(' ') {
                if let Some(c) = &current {
                    blocks.entry(c.clone()).or_default().push(l.trim().to_string());
                }
            } else {
                current = Some(l.to_string());
                blocks.entry(l.to_string()).or_default();
            }
        }
        let mut s = NativeState::new();
        for m in &cfg.queues {
            let (pol, prof) = (policy(cfg, m.queue), profile(cfg, m.queue));
            let pol_lines = blocks.get(&format!("qos-policy-output {pol}"));
            let pct = pol_lines.and_then(|ls| {
                ls.iter()
                    .find_map(|l| l.strip_prefix("bandwidth-percentage "))
                    .and_then(|v| v.trim().parse::<u8>().ok())
            });
            if let Some(p) = pct {
                s.insert(
                    QueueItem::Weight {
                        queue: m.queue,
                        dscp: m.dscp,
                    },
                    Some(QueueValue::Percent(p)),
                );
            }
            let attached = pol_lines.is_some_and(|ls| {
                ls.iter().any(|l| l == "wred ecn") && ls.iter().any(|l| *l == format!("wred green {prof}"))
            });
            let thr = blocks.get(&format!("wred-profile {prof}")).and_then(|ls| {
                ls.iter().find_map(|l| {
                    let t: Vec<&str> = l.split_whitespace().collect();
                    match t.as_slice() {
                        ["threshold", "min", a, "max", b, ..] => Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)),
                        _ => None,
                    }
                })
            });
            if let (true, Some((a, b))) = (attached, thr) {
                s.insert(
                    QueueItem::Ecn {
                        queue: m.queue,
                        dscp: m.dscp,
                    },
                    Some(QueueValue::Thresholds {
                        min: Bytes(a * KB),
                        max: Bytes(b * KB),
                    }),
                );
            }
        }
        Ok(s)
    }

    fn setup(&self, cfg: &VendorConfig) -> String {
        let map = format!("{}-out", cfg.object_prefix);
        let mut s = String::from("configure\n");
        for m in &cfg.queues {
            s += &format!("qos-policy-output {}\n exit\n", policy(cfg, m.queue));
        }
        s += &format!("policy-map-output {map}\n");
        for m in &cfg.queues {
            s += &format!(" service-queue {} qos-policy {}\n", m.queue, policy(cfg, m.queue));
        }
        s += " exit\n";
        for p in &cfg.ports {
            s += &format!("interface {p}\n service-policy output {map}\n exit\n");
        }
        s += "end\n";
        s
    }
}
