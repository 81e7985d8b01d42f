//! SONiC dialect: CONFIG_DB entries written with `sonic-db-cli`, read with `sonic-cfggen`.
//!
//! Per queue q the actuator owns `SCHEDULER|<prefix>.q<q>` (`type DWRR`, `weight` = whole
//! percentage) and `WRED_PROFILE|<prefix>.k<q>` (`ecn ecn_all`, green thresholds in bytes with
//! `max = K + 1` and drop/mark probability 100). Each change is one `sonic-db-cli CONFIG_DB hset`
//! (undo: the previous fields, or `del`); orchagent applies it to the ASIC. SONiC's checkpoint
//! and rollback (`config checkpoint` / `config rollback`) restore the whole CONFIG_DB and would
//! undo unrelated changes made meanwhile, so the actuator undoes its own entries instead. The
//! `QUEUE|<port>|<q>` references are the one-time [`Dialect::setup`] script.

use crate::config::VendorConfig;
use crate::dialect::{Dialect, QueueItem, QueueValue};
use polyphony_actuator::{Command, NativeState};
use polyphony_spec::Bytes;
use serde_json::Value;

/// The SONiC dialect.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sonic;

fn scheduler(cfg: &VendorConfig, q: u8) -> String {
    format!("{}.q{q}", cfg.object_prefix)
}
fn profile(cfg: &VendorConfig, q: u8) -> String {
    format!("{}.k{q}", cfg.object_prefix)
}

fn db(args: &[&str]) -> Command {
    let mut argv = vec!["sonic-db-cli", "CONFIG_DB"];
    argv.extend_from_slice(args);
    Command::new(argv)
}

/// `sonic-db-cli CONFIG_DB hset KEY FIELD VALUE …`: sets the given fields of one entry.
fn hset(key: String, fields: &[(&str, String)]) -> Command {
    let mut argv = vec!["sonic-db-cli".to_string(), "CONFIG_DB".into(), "hset".into(), key];
    for (field, value) in fields {
        argv.extend([field.to_string(), value.clone()]);
    }
    Command::new(argv)
}

fn field_u64(v: &Value, key: &str) -> Option<u64> {
    match v.get(key)? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

impl Dialect for Sonic {
    fn name(&self) -> &'static str {
        "sonic"
    }

    fn thresholds(&self, k: Bytes) -> QueueValue {
        QueueValue::Thresholds {
            min: k,
            max: Bytes(k.0 + 1),
        }
    }

    fn max_threshold(&self) -> Bytes {
        Bytes(u32::MAX as u64 - 1)
    }

    fn set(&self, cfg: &VendorConfig, item: &QueueItem, value: Option<&QueueValue>) -> Command {
        let q = item.queue();
        match (item, value) {
            (QueueItem::Weight { .. }, Some(QueueValue::Percent(p))) => hset(
                format!("SCHEDULER|{}", scheduler(cfg, q)),
                &[("type", "DWRR".into()), ("weight", p.to_string())],
            ),
            (QueueItem::Weight { .. }, _) => db(&["del", &format!("SCHEDULER|{}", scheduler(cfg, q))]),
            (QueueItem::Ecn { .. }, Some(QueueValue::Thresholds { min, max })) => hset(
                format!("WRED_PROFILE|{}", profile(cfg, q)),
                &[
                    ("ecn", "ecn_all".into()),
                    ("wred_green_enable", "true".into()),
                    ("green_min_threshold", min.0.to_string()),
                    ("green_max_threshold", max.0.to_string()),
                    ("green_drop_probability", "100".into()),
                ],
            ),
            (QueueItem::Ecn { .. }, _) => db(&["del", &format!("WRED_PROFILE|{}", profile(cfg, q))]),
        }
    }

    fn read(&self, _cfg: &VendorConfig) -> Vec<Command> {
        ["SCHEDULER", "WRED_PROFILE"]
            .iter()
            .map(|t| Command::new(["sonic-cfggen", "-d", "--var-json", t]))
            .collect()
    }

    fn parse(&self, cfg: &VendorConfig, outputs: &[String]) -> Result<NativeState<QueueItem, QueueValue>, String> {
        let table = |i: usize| -> Result<Value, String> {
            let t = outputs.get(i).map(|s| s.trim()).unwrap_or("");
            if t.is_empty() {
                return Ok(Value::Object(Default::default()));
            }
            serde_json::from_str(t).map_err(|e| format!("output {i} is not JSON: {e}"))
        };
        let sched = table(0)?;
        let wred = table(1)?;
        let mut s = NativeState::new();
        for m in &cfg.queues {
            if let Some(e) = sched.get(scheduler(cfg, m.queue)) {
                if let Some(w) = field_u64(e, "weight") {
                    let p = u8::try_from(w).map_err(|_| format!("weight {w} out of range"))?;
                    s.insert(
                        QueueItem::Weight {
                            queue: m.queue,
                            dscp: m.dscp,
                        },
                        Some(QueueValue::Percent(p)),
                    );
                }
            }
            if let Some(e) = wred.get(profile(cfg, m.queue)) {
                let ecn_on = e.get("ecn").and_then(Value::as_str) == Some("ecn_all");
                if let (true, Some(a), Some(b)) = (
                    ecn_on,
                    field_u64(e, "green_min_threshold"),
                    field_u64(e, "green_max_threshold"),
                ) {
                    s.insert(
                        QueueItem::Ecn {
                            queue: m.queue,
                            dscp: m.dscp,
                        },
                        Some(QueueValue::Thresholds {
                            min: Bytes(a),
                            max: Bytes(b),
                        }),
                    );
                }
            }
        }
        Ok(s)
    }

    fn setup(&self, cfg: &VendorConfig) -> String {
        let mut s = String::new();
        for p in &cfg.ports {
            for m in &cfg.queues {
                s += &format!(
                    "{}\n",
                    db(&[
                        "hset",
                        &format!("QUEUE|{p}|{}", m.queue),
                        "scheduler",
                        &scheduler(cfg, m.queue),
                        "wred_profile",
                        &profile(cfg, m.queue),
                    ])
                );
            }
        }
        s
    }
}
