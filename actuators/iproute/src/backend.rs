//! The iproute backend: one route per (sender, class table), its `initcwnd`, the commands that
//! replace or delete it, and the parser of `ip -j route show table all`.

use crate::config::{IprouteConfig, SenderRoute};
use polyphony_actuator::{ActuatorError, Backend, Command, Knobs, NativeState, PartialConfig, Runner, Transport};
use polyphony_spec::{Dscp, NetworkConfig, Packets};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The route to the destination in one sender's table for one class.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouteItem {
    /// The class.
    pub dscp: Dscp,
    /// Index of the sender in the configuration.
    pub sender: usize,
    /// The sender's namespace (for rendering).
    pub namespace: Option<String>,
    /// Routing table.
    pub table: u32,
}

impl fmt::Display for RouteItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} route in {} table {}",
            self.dscp.name(),
            self.namespace.as_deref().unwrap_or("(current netns)"),
            self.table
        )
    }
}

/// The route's next hop and initial window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteValue {
    /// Next hop, if any.
    pub gateway: Option<String>,
    /// Outgoing device.
    pub device: String,
    /// `initcwnd` metric; `None` = the kernel default (10 segments).
    pub init_cwnd: Option<u32>,
}

impl fmt::Display for RouteValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.gateway {
            write!(f, "via {g} ")?;
        }
        write!(f, "dev {}", self.device)?;
        match self.init_cwnd {
            Some(n) => write!(f, " initcwnd {n}"),
            None => write!(f, " (default initcwnd)"),
        }
    }
}

/// Reads and changes per-class routes in the senders' namespaces.
#[derive(Debug)]
pub struct IprouteBackend {
    cfg: IprouteConfig,
    transport: Arc<dyn Transport>,
}

impl IprouteBackend {
    /// Checks `cfg`.
    pub fn new(cfg: IprouteConfig, transport: Arc<dyn Transport>) -> Result<Self, ActuatorError> {
        let bad = |why: String| ActuatorError::Config {
            actuator: cfg.name.clone(),
            why,
        };
        if cfg.senders.is_empty() {
            return Err(bad("`senders` is empty: list at least one sender".into()));
        }
        if !cfg.destination.contains('/') {
            return Err(bad(format!(
                "destination = \"{}\": give a prefix with its length, e.g. 198.18.100.0/24",
                cfg.destination
            )));
        }
        if cfg.table_base == 0 || cfg.table_base.checked_add(63).is_none() {
            return Err(bad(format!("table_base = {}: use 1..", cfg.table_base)));
        }
        if let Some(s) = cfg.senders.iter().find(|s| s.device.is_empty()) {
            return Err(bad(format!("sender {:?} has an empty device", s.namespace)));
        }
        Ok(IprouteBackend { cfg, transport })
    }

    /// The routing table of class `dscp`.
    pub fn table(&self, dscp: Dscp) -> u32 {
        self.cfg.table_base + dscp.value() as u32
    }

    fn ip(&self, sender: &SenderRoute, args: Vec<String>) -> Command {
        let mut argv = vec![self.cfg.ip.clone()];
        if let Some(ns) = &sender.namespace {
            argv.push("-n".into());
            argv.push(ns.clone());
        }
        argv.extend(args);
        self.transport.wrap(Command { argv, stdin: None })
    }

    fn item(&self, dscp: Dscp, sender: usize) -> RouteItem {
        RouteItem {
            dscp,
            sender,
            namespace: self.cfg.senders[sender].namespace.clone(),
            table: self.table(dscp),
        }
    }

    fn routes_of(&self, json: &str) -> Result<BTreeMap<u32, RouteValue>, String> {
        let v: Value = serde_json::from_str(json.trim()).map_err(|e| format!("not JSON: {e}"))?;
        let arr = v.as_array().ok_or("expected a JSON array of routes")?;
        let mut out = BTreeMap::new();
        for r in arr {
            if r.get("dst").and_then(Value::as_str) != Some(self.cfg.destination.as_str()) {
                continue;
            }
            let Some(table) = r
                .get("table")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<u32>().ok())
            else {
                continue;
            };
            if table < self.cfg.table_base || table > self.cfg.table_base + 63 {
                continue;
            }
            let init_cwnd = r
                .get("metrics")
                .and_then(Value::as_array)
                .and_then(|m| m.iter().find_map(|x| x.get("initcwnd").and_then(Value::as_u64)))
                .map(|n| n.min(u32::MAX as u64) as u32);
            out.insert(
                table,
                RouteValue {
                    gateway: r.get("gateway").and_then(Value::as_str).map(String::from),
                    device: r.get("dev").and_then(Value::as_str).unwrap_or("").to_string(),
                    init_cwnd,
                },
            );
        }
        Ok(out)
    }
}

impl Backend for IprouteBackend {
    type Item = RouteItem;
    type Value = RouteValue;

    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn owns(&self) -> Knobs {
        Knobs {
            init_cwnd: true,
            ..Knobs::default()
        }
    }

    fn check(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        for c in &target.classes {
            if c.init_cwnd.0 > self.cfg.max_init_cwnd {
                return Err(ActuatorError::Invalid {
                    actuator: self.cfg.name.clone(),
                    field: format!("class {} (DSCP {}).init_cwnd", c.dscp.name(), c.dscp),
                    value: c.init_cwnd.to_string(),
                    why: format!(
                        "above this actuator's max_init_cwnd = {}; lower it or raise the limit",
                        self.cfg.max_init_cwnd
                    ),
                });
            }
        }
        Ok(())
    }

    fn desired(&self, cfg: &NetworkConfig) -> Result<NativeState<RouteItem, RouteValue>, ActuatorError> {
        let mut s = NativeState::new();
        for c in &cfg.classes {
            for (i, snd) in self.cfg.senders.iter().enumerate() {
                s.insert(
                    self.item(c.dscp, i),
                    Some(RouteValue {
                        gateway: snd.gateway.clone(),
                        device: snd.device.clone(),
                        init_cwnd: Some(c.init_cwnd.0),
                    }),
                );
            }
        }
        Ok(s)
    }

    fn read_state(&self, runner: &dyn Runner) -> Result<NativeState<RouteItem, RouteValue>, ActuatorError> {
        let mut s = NativeState::new();
        for (i, snd) in self.cfg.senders.iter().enumerate() {
            let cmd = self.ip(
                snd,
                ["-j", "-4", "route", "show", "table", "all"].map(String::from).to_vec(),
            );
            let out = runner.run(&cmd).map_err(|error| ActuatorError::Read {
                actuator: self.cfg.name.clone(),
                command: cmd.to_string(),
                error,
            })?;
            let routes = self.routes_of(&out.stdout).map_err(|why| ActuatorError::Parse {
                actuator: self.cfg.name.clone(),
                command: cmd.to_string(),
                why,
            })?;
            for (table, v) in routes {
                let Ok(dscp) = Dscp::new((table - self.cfg.table_base) as u8) else {
                    continue;
                };
                s.insert(self.item(dscp, i), Some(v));
            }
        }
        Ok(s)
    }

    fn command(&self, item: &RouteItem, value: Option<&RouteValue>) -> Result<Command, ActuatorError> {
        let snd = &self.cfg.senders[item.sender];
        let table = item.table.to_string();
        let mut args: Vec<String> = vec!["route".into()];
        match value {
            Some(v) => {
                args.push("replace".into());
                args.push(self.cfg.destination.clone());
                if let Some(g) = &v.gateway {
                    args.push("via".into());
                    args.push(g.clone());
                }
                args.extend(["dev".into(), v.device.clone(), "table".into(), table]);
                if let Some(n) = v.init_cwnd {
                    args.push("initcwnd".into());
                    args.push(n.to_string());
                }
            }
            None => {
                args.extend(["del".into(), self.cfg.destination.clone(), "table".into(), table]);
            }
        }
        Ok(self.ip(snd, args))
    }

    fn to_partial(&self, state: &NativeState<RouteItem, RouteValue>) -> PartialConfig {
        // A class's window is known when every sender's route agrees on it.
        let mut per_class: BTreeMap<Dscp, Vec<Option<u32>>> = BTreeMap::new();
        for (item, v) in state {
            per_class
                .entry(item.dscp)
                .or_default()
                .push(v.as_ref().and_then(|v| v.init_cwnd));
        }
        let mut p = PartialConfig::default();
        for (dscp, vals) in per_class {
            let first = vals[0];
            let agreed = vals.len() == self.cfg.senders.len() && vals.iter().all(|v| *v == first);
            let c = p.class_mut(dscp);
            if agreed {
                c.init_cwnd = first.map(Packets);
            } else {
                tracing::warn!(actuator = %self.cfg.name, class = %dscp.name(), ?vals, "senders disagree on initcwnd");
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_actuator::Local;

    fn backend() -> IprouteBackend {
        let cfg = IprouteConfig::new(
            "198.18.100.0/24",
            vec![SenderRoute {
                namespace: Some("pp-h0".into()),
                gateway: Some("198.18.1.1".into()),
                device: "eth0".into(),
            }],
        );
        IprouteBackend::new(cfg, Arc::new(Local)).unwrap()
    }

    #[test]
    fn parses_only_class_tables_to_the_destination() {
        let j = r#"[{"dst":"198.18.100.0/24","gateway":"198.18.1.1","dev":"eth0","table":"110","flags":[],"metrics":[{"initcwnd":20}]},
{"dst":"198.18.100.0/24","dev":"eth0","table":"118","flags":[]},
{"dst":"198.18.100.0/24","dev":"eth0","table":"main","flags":[]},
{"dst":"10.0.0.0/8","dev":"eth0","table":"126","flags":[]}]"#;
        let r = backend().routes_of(j).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[&110].init_cwnd, Some(20));
        assert_eq!(r[&118].init_cwnd, None);
        assert!(backend().routes_of("nope").is_err());
    }

    #[test]
    fn replace_and_delete_commands_follow_the_contract() {
        let b = backend();
        let item = b.item(Dscp::AF11, 0);
        let v = RouteValue {
            gateway: Some("198.18.1.1".into()),
            device: "eth0".into(),
            init_cwnd: Some(32),
        };
        assert_eq!(
            b.command(&item, Some(&v)).unwrap().to_string(),
            "ip -n pp-h0 route replace 198.18.100.0/24 via 198.18.1.1 dev eth0 table 110 initcwnd 32"
        );
        assert_eq!(
            b.command(&item, None).unwrap().to_string(),
            "ip -n pp-h0 route del 198.18.100.0/24 table 110"
        );
    }
}
