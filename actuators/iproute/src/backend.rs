//! The iproute backend: one route per (sender, class table), its `initcwnd` and `congctl`, the
//! commands that replace or delete it, and the parser of `ip -j route show table all`.

use crate::config::{IprouteConfig, SenderRoute};
use polyphony_actuator::{ActuatorError, Backend, Command, Knobs, NativeState, PartialConfig, Runner, Transport};
use polyphony_spec::{CongestionControl, Dscp, NetworkConfig, Packets};
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

/// The route's next hop, initial window and congestion control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteValue {
    /// Next hop, if any.
    pub gateway: Option<String>,
    /// Outgoing device.
    pub device: String,
    /// `initcwnd` metric; `None` = the kernel default (10 segments).
    pub init_cwnd: Option<u32>,
    /// `congctl` metric; `None` = the host's default algorithm.
    pub congctl: Option<String>,
    /// `features ecn`: connections on the route negotiate ECN whatever `net.ipv4.tcp_ecn` says
    /// (set with an ECN algorithm such as DCTCP).
    pub ecn: bool,
}

impl fmt::Display for RouteValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.gateway {
            write!(f, "via {g} ")?;
        }
        write!(f, "dev {}", self.device)?;
        match self.init_cwnd {
            Some(n) => write!(f, " initcwnd {n}")?,
            None => write!(f, " (default initcwnd)")?,
        }
        if let Some(cc) = &self.congctl {
            write!(f, " congctl {cc}")?;
        }
        if self.ecn {
            write!(f, " features ecn")?;
        }
        Ok(())
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

    /// Checks that every sender's kernel offers each algorithm of `congestion_controls`
    /// (`/proc/sys/net/ipv4/tcp_available_congestion_control`, where `ip route … congctl` finds
    /// it) and allows it (`tcp_allowed_congestion_control`, what a process may select for its
    /// own sockets). One command per sender (`cat` of both files, in its namespace); an
    /// algorithm missing from either is an error naming the sender, the algorithm and the
    /// sysctl that lacks it. Nothing to check when no algorithm is configured.
    pub fn check_congestion_controls(&self, runner: &dyn Runner) -> Result<(), ActuatorError> {
        if self.cfg.congestion_controls.is_empty() {
            return Ok(());
        }
        const DIR: &str = "/proc/sys/net/ipv4/";
        const FILES: [&str; 2] = ["tcp_available_congestion_control", "tcp_allowed_congestion_control"];
        for snd in &self.cfg.senders {
            let mut argv: Vec<String> = match &snd.namespace {
                Some(ns) => vec![self.cfg.ip.clone(), "netns".into(), "exec".into(), ns.clone()],
                None => Vec::new(),
            };
            argv.push("cat".into());
            argv.extend(FILES.iter().map(|f| format!("{DIR}{f}")));
            let cmd = self.transport.wrap(Command { argv, stdin: None });
            let out = runner.run(&cmd).map_err(|error| ActuatorError::Read {
                actuator: self.cfg.name.clone(),
                command: cmd.to_string(),
                error,
            })?;
            let lines: Vec<&str> = out.stdout.lines().collect();
            let [available, allowed] = lines[..] else {
                return Err(ActuatorError::Parse {
                    actuator: self.cfg.name.clone(),
                    command: cmd.to_string(),
                    why: format!("expected two lines (available, allowed), got {}", lines.len()),
                });
            };
            let sender = snd.namespace.as_deref().unwrap_or("the sender");
            for cc in &self.cfg.congestion_controls {
                for (file, list) in FILES.iter().zip([available, allowed]) {
                    if !list.split_whitespace().any(|a| a == cc.name()) {
                        return Err(ActuatorError::Unsupported {
                            actuator: self.cfg.name.clone(),
                            why: format!(
                                "congestion_controls lists {cc}, but {sender}'s net.ipv4.{file} does not ({:?}); {}",
                                list.trim(),
                                if *file == FILES[0] {
                                    format!("load it on that host (modprobe tcp_{cc}, or register the BPF struct_ops) or drop it from congestion_controls")
                                } else {
                                    format!("add it there (sysctl -w net.ipv4.{file}=\"{} {cc}\") or drop it from congestion_controls", list.trim())
                                }
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
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
            let metrics = r.get("metrics").and_then(Value::as_array);
            let metric = |key: &str| metrics.and_then(|m| m.iter().find_map(|x| x.get(key)));
            let init_cwnd = metric("initcwnd")
                .and_then(Value::as_u64)
                .map(|n| n.min(u32::MAX as u64) as u32);
            // `ip -j` prints `congctl` as "congestion" and `features ecn` as `"ecn": null`.
            let congctl = metric("congestion").and_then(Value::as_str).map(String::from);
            let ecn = metrics.is_some_and(|m| m.iter().any(|x| x.get("ecn").is_some()));
            out.insert(
                table,
                RouteValue {
                    gateway: r.get("gateway").and_then(Value::as_str).map(String::from),
                    device: r.get("dev").and_then(Value::as_str).unwrap_or("").to_string(),
                    init_cwnd,
                    congctl,
                    ecn,
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
            congestion_control: true,
            ..Knobs::default()
        }
    }

    fn check(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        for c in &target.classes {
            if let Some(cc) = c
                .congestion_control
                .as_ref()
                .filter(|cc| !self.cfg.congestion_controls.contains(cc))
            {
                let offered: Vec<&str> = self.cfg.congestion_controls.iter().map(|c| c.name()).collect();
                return Err(ActuatorError::Invalid {
                    actuator: self.cfg.name.clone(),
                    field: format!("class {} (DSCP {}).congestion_control", c.dscp.name(), c.dscp),
                    value: cc.to_string(),
                    why: format!(
                        "not in this actuator's congestion_controls = {offered:?}; list it there once every \
                         sender's kernel offers it (tcp_available_congestion_control)"
                    ),
                });
            }
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
                        congctl: c.congestion_control.as_ref().map(|cc| cc.name().to_string()),
                        ecn: c.congestion_control.as_ref().is_some_and(CongestionControl::ecn),
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
                if let Some(cc) = &v.congctl {
                    args.push("congctl".into());
                    args.push(cc.clone());
                }
                if v.ecn {
                    args.extend(["features".into(), "ecn".into()]);
                }
            }
            None => {
                args.extend(["del".into(), self.cfg.destination.clone(), "table".into(), table]);
            }
        }
        Ok(self.ip(snd, args))
    }

    fn to_partial(&self, state: &NativeState<RouteItem, RouteValue>) -> PartialConfig {
        // A class's window (algorithm) is known when every sender's route agrees on it.
        type Seen = (Option<u32>, Option<String>);
        let mut per_class: BTreeMap<Dscp, Vec<Seen>> = BTreeMap::new();
        for (item, v) in state {
            per_class.entry(item.dscp).or_default().push(match v {
                Some(v) => (v.init_cwnd, v.congctl.clone()),
                None => (None, None),
            });
        }
        let mut p = PartialConfig::default();
        for (dscp, vals) in per_class {
            let all = vals.len() == self.cfg.senders.len();
            let c = p.class_mut(dscp);
            if all && vals.iter().all(|v| v.0 == vals[0].0) {
                c.init_cwnd = vals[0].0.map(Packets);
            } else {
                tracing::warn!(actuator = %self.cfg.name, class = %dscp.name(), ?vals, "senders disagree on initcwnd");
            }
            if all && vals.iter().all(|v| v.1 == vals[0].1) {
                // A name the kernel printed that is no valid algorithm name cannot be ours.
                c.congestion_control = vals[0].1.as_deref().and_then(|n| CongestionControl::new(n).ok());
            } else {
                tracing::warn!(actuator = %self.cfg.name, class = %dscp.name(), ?vals, "senders disagree on congctl");
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
            congctl: None,
            ecn: false,
        };
        assert_eq!(
            b.command(&item, Some(&v)).unwrap().to_string(),
            "ip -n pp-h0 route replace 198.18.100.0/24 via 198.18.1.1 dev eth0 table 110 initcwnd 32"
        );
        assert_eq!(
            b.command(&item, None).unwrap().to_string(),
            "ip -n pp-h0 route del 198.18.100.0/24 table 110"
        );
        let dctcp = RouteValue {
            congctl: Some("dctcp".into()),
            ecn: true,
            ..v
        };
        assert_eq!(
            b.command(&item, Some(&dctcp)).unwrap().to_string(),
            "ip -n pp-h0 route replace 198.18.100.0/24 via 198.18.1.1 dev eth0 table 110 initcwnd 32 congctl dctcp features ecn"
        );
    }

    /// Answers every command with the two sysctl lines `available` and `allowed`, recording
    /// the commands (the root test `actuators_cc_buffer` reads the real kernel's).
    struct Sysctls(&'static str, &'static str, std::sync::Mutex<Vec<String>>);

    impl Runner for Sysctls {
        fn run(&self, cmd: &Command) -> Result<polyphony_actuator::Output, polyphony_actuator::RunError> {
            self.2.lock().unwrap().push(cmd.to_string());
            Ok(polyphony_actuator::Output {
                stdout: format!("{}\n{}\n", self.0, self.1),
                stderr: String::new(),
            })
        }
    }

    #[test]
    fn a_configured_algorithm_the_kernel_lacks_or_disallows_is_named_with_its_sysctl() {
        let with = |names: &[&str]| {
            let mut cfg = backend().cfg;
            cfg.congestion_controls = names.iter().map(|n| CongestionControl::new(*n).unwrap()).collect();
            IprouteBackend::new(cfg, Arc::new(Local)).unwrap()
        };
        let kernel = Sysctls("reno bbr cubic", "reno bbr", Default::default());
        with(&["reno", "bbr"]).check_congestion_controls(&kernel).unwrap();
        assert_eq!(
            kernel.2.lock().unwrap().as_slice(),
            ["ip netns exec pp-h0 cat /proc/sys/net/ipv4/tcp_available_congestion_control /proc/sys/net/ipv4/tcp_allowed_congestion_control"]
        );
        let e = with(&["reno", "cubic"])
            .check_congestion_controls(&kernel)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cubic")
                && e.contains("pp-h0")
                && e.contains("net.ipv4.tcp_allowed_congestion_control")
                && e.contains("\"reno bbr cubic\""),
            "{e}"
        );
        let e = with(&["dctcp"])
            .check_congestion_controls(&kernel)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dctcp") && e.contains("tcp_available_congestion_control") && e.contains("modprobe"),
            "{e}"
        );
        // No algorithm configured: nothing is run.
        let quiet = Sysctls("", "", Default::default());
        backend().check_congestion_controls(&quiet).unwrap();
        assert!(quiet.2.lock().unwrap().is_empty());
    }

    #[test]
    fn congestion_control_is_read_back_and_only_a_configured_one_is_accepted() {
        // As `ip -j -4 route show table all` prints `congctl cubic features ecn` (iproute2 6.1).
        let j = r#"[{"dst":"198.18.100.0/24","dev":"eth0","table":"110","flags":[],"metrics":[{"initcwnd":20,"ecn":null,"congestion":"cubic"}]},
{"dst":"198.18.100.0/24","dev":"eth0","table":"118","flags":[],"metrics":[{"congestion":"bbr"}]}]"#;
        let r = backend().routes_of(j).unwrap();
        assert_eq!((r[&110].congctl.as_deref(), r[&110].ecn), (Some("cubic"), true));
        assert_eq!((r[&118].congctl.as_deref(), r[&118].ecn), (Some("bbr"), false));

        let mut target = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], polyphony_spec::Bytes(30_000), Packets(10));
        target.classes[1].congestion_control = Some(CongestionControl::new("cubic").unwrap());
        let e = backend().check(&target).unwrap_err().to_string();
        assert!(
            e.contains("class AF21 (DSCP 18).congestion_control") && e.contains("cubic"),
            "{e}"
        );
        let mut cfg = backend().cfg;
        cfg.congestion_controls = vec![CongestionControl::new("cubic").unwrap()];
        let b = IprouteBackend::new(cfg, Arc::new(Local)).unwrap();
        b.check(&target).unwrap();
        let want = b.desired(&target).unwrap();
        let af21 = want[&b.item(Dscp::AF21, 0)].as_ref().unwrap();
        assert_eq!((af21.congctl.as_deref(), af21.ecn), (Some("cubic"), false));
        let p = b.to_partial(&want);
        assert_eq!(
            p.class(Dscp::AF21).unwrap().congestion_control,
            target.classes[1].congestion_control
        );
        assert_eq!(p.class(Dscp::AF11).unwrap().congestion_control, None);
    }
}
