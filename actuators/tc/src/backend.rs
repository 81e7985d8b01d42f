//! The tc backend: native settings (HTB classes, leaves, threshold-map entries), how to read
//! them and the `tc`/`bpftool` commands that change them. Commands go through the configured
//! transport; reads are `tc -d class show`, `tc -j qdisc show`, `bpftool -j map dump`.

use crate::config::{EcnMode, TcConfig};
use crate::parse::{self, Qdisc};
use crate::probe::{probe_red, RedProbe};
use crate::rates::{class_quantum, class_rate, is_exact_rate, sojourn_threshold, threshold_bytes};
use polyphony_actuator::{ActuatorError, Backend, Command, Knobs, NativeState, PartialConfig, Runner, Transport};
use polyphony_spec::{BitsPerSec, Bytes, ClassConfig, Dscp, Nanos, NetworkConfig};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// HTB prints a warning above this quantum and it starves fairness; the ratio of the largest
/// to the smallest weight is limited so that `MTU · w_max / w_min` stays below it.
pub const MAX_QUANTUM: u64 = 200_000;

/// The ECN mechanism in use after the capability probe.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ecn {
    Map(PathBuf),
    Red,
    Off,
}

/// One native setting.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum TcItem {
    /// The HTB class of a DSCP (rate, ceil, quantum).
    Htb {
        /// The class.
        dscp: Dscp,
        /// Its class id, e.g. `1:10`.
        classid: String,
    },
    /// The class's `bfifo` leaf (limit).
    Leaf {
        /// The class.
        dscp: Dscp,
        /// Its class id.
        classid: String,
    },
    /// The class's `red … ecn` leaf (limit, min, max).
    Red {
        /// The class.
        dscp: Dscp,
        /// Its class id.
        classid: String,
    },
    /// The class's entry in the marker's threshold map.
    Ecn {
        /// The class.
        dscp: Dscp,
    },
}

impl fmt::Display for TcItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcItem::Htb { dscp, classid } => write!(f, "{} htb class {classid}", dscp.name()),
            TcItem::Leaf { dscp, classid } => {
                write!(f, "{} bfifo leaf of {classid}", dscp.name())
            }
            TcItem::Red { dscp, classid } => write!(f, "{} red leaf of {classid}", dscp.name()),
            TcItem::Ecn { dscp } => write!(f, "{} ecn_thresh_ns[{dscp}]", dscp.name()),
        }
    }
}

/// A native setting's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcValue {
    /// HTB class parameters.
    Htb {
        /// Guaranteed rate.
        rate: BitsPerSec,
        /// Ceiling.
        ceil: BitsPerSec,
        /// Quantum, bytes.
        quantum: u64,
    },
    /// A `bfifo` limit.
    Limit(Bytes),
    /// A sojourn-time threshold.
    Sojourn(Nanos),
    /// A `red` leaf.
    Red {
        /// Queue limit.
        limit: Bytes,
        /// Marking starts (K).
        min: Bytes,
        /// Marking probability reaches 1.
        max: Bytes,
    },
}

impl fmt::Display for TcValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcValue::Htb { rate, ceil, quantum } => {
                write!(f, "rate {}bit ceil {}bit quantum {quantum}", rate.0, ceil.0)
            }
            TcValue::Limit(b) => write!(f, "limit {}", b.0),
            TcValue::Sojourn(t) => write!(f, "{} ns", t.0),
            TcValue::Red { limit, min, max } => {
                write!(f, "limit {} min {} max {}", limit.0, min.0, max.0)
            }
        }
    }
}

/// Reads and changes one HTB tree and its threshold map.
#[derive(Debug)]
pub struct TcBackend {
    cfg: TcConfig,
    transport: Arc<dyn Transport>,
    ecn: Ecn,
    major: String,
    probe: Option<RedProbe>,
}

fn who(dscp: Dscp) -> String {
    format!("class {} (DSCP {dscp})", dscp.name())
}

impl TcBackend {
    /// Checks `cfg` and resolves the ECN mechanism (running the `red` probe through
    /// `transport` for `ecn = "auto"` and `"red"`).
    pub fn new(cfg: TcConfig, transport: Arc<dyn Transport>, runner: &dyn Runner) -> Result<TcBackend, ActuatorError> {
        let bad = |why: String| ActuatorError::Config {
            actuator: cfg.name.clone(),
            why,
        };
        if cfg.device.is_empty() {
            return Err(bad("`device` is empty: name the bottleneck device (e.g. \"rx\")".into()));
        }
        if cfg.link_rate.0 == 0 || !is_exact_rate(cfg.link_rate) {
            return Err(bad(format!(
                "link_rate = {} bit/s: use a positive rate tc prints exactly (e.g. 100000000)",
                cfg.link_rate.0
            )));
        }
        if cfg.mtu < 68 {
            return Err(bad(format!("mtu = {}: at least 68 bytes", cfg.mtu)));
        }
        if cfg.min_quantum < 64 || cfg.min_quantum as u64 > MAX_QUANTUM {
            return Err(bad(format!(
                "min_quantum = {}: use 64..={MAX_QUANTUM} bytes (one full frame, 1514, is usual)",
                cfg.min_quantum
            )));
        }
        let major = match cfg.parent.split_once(':') {
            Some((maj, min)) if !maj.is_empty() && !min.is_empty() => maj.to_string(),
            _ => {
                return Err(bad(format!(
                    "parent = \"{}\": expected a class id like \"1:1\"",
                    cfg.parent
                )))
            }
        };
        let mut probe = None;
        let ecn = match cfg.ecn {
            EcnMode::None => Ecn::Off,
            EcnMode::BpfMap => match &cfg.ecn_map_pin {
                Some(p) => Ecn::Map(p.clone()),
                None => return Err(bad("ecn = \"bpf_map\" needs ecn_map_pin".into())),
            },
            EcnMode::Red | EcnMode::Auto => {
                let p = probe_red(runner, transport.as_ref(), &cfg.tc).map_err(|e| {
                    bad(format!(
                        "the sch_red capability probe `{}` could not run: {e}",
                        transport.wrap(crate::probe::probe_command(&cfg.tc))
                    ))
                })?;
                tracing::info!(actuator = %cfg.name, available = p.available, detail = %p.detail, "red probe");
                let red = p.available;
                let detail = p.detail.clone();
                probe = Some(p);
                match (cfg.ecn, red, &cfg.ecn_map_pin) {
                    (_, true, _) => Ecn::Red,
                    (EcnMode::Red, false, _) => {
                        return Err(bad(format!("ecn = \"red\" but {detail}; use ecn = \"bpf_map\"")))
                    }
                    (_, false, Some(pin)) => Ecn::Map(pin.clone()),
                    (_, false, None) => {
                        return Err(bad(format!(
                        "ecn = \"auto\": {detail}, and no ecn_map_pin is configured; set ecn_map_pin or ecn = \"none\""
                    )))
                    }
                }
            }
        };
        Ok(TcBackend {
            cfg,
            transport,
            ecn,
            major,
            probe,
        })
    }

    /// The ECN mechanism in use: `bpf_map <pin>`, `red` or `none`.
    pub fn ecn_mechanism(&self) -> String {
        match &self.ecn {
            Ecn::Map(p) => format!("bpf_map {}", p.display()),
            Ecn::Red => "red".into(),
            Ecn::Off => "none".into(),
        }
    }

    /// The `red` capability probe's answer, when it ran.
    pub fn red_probe(&self) -> Option<&RedProbe> {
        self.probe.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &TcConfig {
        &self.cfg
    }

    /// The HTB class id of a DSCP: `<major>:<d in decimal>`.
    pub fn classid(&self, dscp: Dscp) -> String {
        format!("{}:{}", self.major, dscp.value())
    }

    fn dscp_of(&self, handle: &str) -> Option<Dscp> {
        if handle == self.cfg.parent {
            return None;
        }
        let (maj, min) = handle.split_once(':')?;
        if maj != self.major || min.is_empty() || !min.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let d = Dscp::new(min.parse().ok()?).ok()?;
        (self.cfg.classes.is_empty() || self.cfg.classes.contains(&d)).then_some(d)
    }

    fn tc(&self, args: &[&str]) -> Command {
        let mut argv = vec![self.cfg.tc.clone()];
        if let Some(ns) = &self.cfg.namespace {
            argv.push("-n".into());
            argv.push(ns.clone());
        }
        argv.extend(args.iter().map(|s| s.to_string()));
        self.transport.wrap(Command { argv, stdin: None })
    }

    fn bpftool(&self, args: Vec<String>) -> Command {
        let mut argv = vec![self.cfg.bpftool.clone()];
        argv.extend(args);
        self.transport.wrap(Command { argv, stdin: None })
    }

    fn read(&self, runner: &dyn Runner, cmd: Command) -> Result<String, ActuatorError> {
        runner.run(&cmd).map(|o| o.stdout).map_err(|error| ActuatorError::Read {
            actuator: self.cfg.name.clone(),
            command: cmd.to_string(),
            error,
        })
    }

    fn parse_err(&self, cmd: &Command, why: String) -> ActuatorError {
        ActuatorError::Parse {
            actuator: self.cfg.name.clone(),
            command: cmd.to_string(),
            why,
        }
    }

    fn red_value(&self, c: &ClassConfig) -> TcValue {
        let k = c.ecn_threshold;
        let limit = c.buffer.unwrap_or(Bytes((4 * k.0).max(k.0 + 64 * self.cfg.mtu as u64)));
        TcValue::Red {
            limit,
            min: k,
            max: Bytes(k.0 + 1),
        }
    }

    fn invalid(&self, field: String, value: impl ToString, why: String) -> ActuatorError {
        ActuatorError::Invalid {
            actuator: self.cfg.name.clone(),
            field,
            value: value.to_string(),
            why,
        }
    }
}

impl Backend for TcBackend {
    type Item = TcItem;
    type Value = TcValue;

    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn owns(&self) -> Knobs {
        Knobs {
            weight: true,
            ecn_threshold: self.ecn != Ecn::Off,
            init_cwnd: false,
            buffer: self.cfg.manage_buffers || self.ecn == Ecn::Red,
            congestion_control: false,
        }
    }

    fn check(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        let c_rate = self.cfg.link_rate;
        let wmin = target.classes.iter().map(|c| c.weight).fold(f64::INFINITY, f64::min);
        for c in &target.classes {
            let w = who(c.dscp);
            if !self.cfg.classes.is_empty() && !self.cfg.classes.contains(&c.dscp) {
                return Err(self.invalid(
                    format!("{w}.weight"),
                    c.weight,
                    format!(
                        "this tc actuator manages only DSCP {:?}; add the class to `classes`",
                        self.cfg.classes.iter().map(|d| d.value()).collect::<Vec<_>>()
                    ),
                ));
            }
            if class_rate(c.weight, c_rate).0 == 0 {
                return Err(self.invalid(
                    format!("{w}.weight"),
                    c.weight,
                    format!("gives a zero HTB rate at link rate {c_rate}; raise the weight"),
                ));
            }
            let q = class_quantum(c.weight, wmin, self.cfg.min_quantum);
            if q > MAX_QUANTUM {
                return Err(self.invalid(
                    format!("{w}.weight"),
                    c.weight,
                    format!(
                        "needs an HTB quantum of {q} B (> {MAX_QUANTUM} B) because the smallest weight is {wmin}; keep the largest/smallest weight ratio below {}",
                        MAX_QUANTUM / self.cfg.min_quantum as u64
                    ),
                ));
            }
            match self.ecn {
                Ecn::Map(_) if sojourn_threshold(c.ecn_threshold, c_rate).0 == 0 => {
                    return Err(self.invalid(
                        format!("{w}.ecn_threshold"),
                        c.ecn_threshold,
                        format!("is below 1 ns of queueing at {c_rate}; raise K"),
                    ))
                }
                Ecn::Red if c.ecn_threshold.0 >= u32::MAX as u64 / 2 => {
                    return Err(self.invalid(
                        format!("{w}.ecn_threshold"),
                        c.ecn_threshold,
                        "red thresholds are 32-bit byte counts; lower K".into(),
                    ))
                }
                _ => {}
            }
            if let Some(b) = c.buffer {
                if b.0 < self.cfg.mtu as u64 || b.0 > u32::MAX as u64 {
                    return Err(self.invalid(
                        format!("{w}.buffer"),
                        b,
                        format!(
                            "a class buffer holds at least one MTU ({} B) and at most {} B",
                            self.cfg.mtu,
                            u32::MAX
                        ),
                    ));
                }
                if self.ecn == Ecn::Red && b.0 <= c.ecn_threshold.0 + 1 {
                    return Err(self.invalid(
                        format!("{w}.buffer"),
                        b,
                        format!("red needs a buffer above K + 1 = {} B", c.ecn_threshold.0 + 1),
                    ));
                }
            }
        }
        Ok(())
    }

    fn desired(&self, cfg: &NetworkConfig) -> Result<NativeState<TcItem, TcValue>, ActuatorError> {
        let c_rate = self.cfg.link_rate;
        let wmin = cfg.classes.iter().map(|c| c.weight).fold(f64::INFINITY, f64::min);
        let mut s = NativeState::new();
        for c in &cfg.classes {
            let classid = self.classid(c.dscp);
            s.insert(
                TcItem::Htb {
                    dscp: c.dscp,
                    classid: classid.clone(),
                },
                Some(TcValue::Htb {
                    rate: class_rate(c.weight, c_rate),
                    ceil: c_rate,
                    quantum: class_quantum(c.weight, wmin, self.cfg.min_quantum),
                }),
            );
            match &self.ecn {
                Ecn::Map(_) => {
                    s.insert(
                        TcItem::Ecn { dscp: c.dscp },
                        Some(TcValue::Sojourn(sojourn_threshold(c.ecn_threshold, c_rate))),
                    );
                }
                Ecn::Red => {
                    s.insert(
                        TcItem::Red {
                            dscp: c.dscp,
                            classid: classid.clone(),
                        },
                        Some(self.red_value(c)),
                    );
                }
                Ecn::Off => {}
            }
            if self.cfg.manage_buffers && self.ecn != Ecn::Red {
                if let Some(b) = c.buffer {
                    s.insert(TcItem::Leaf { dscp: c.dscp, classid }, Some(TcValue::Limit(b)));
                }
            }
        }
        Ok(s)
    }

    fn read_state(&self, runner: &dyn Runner) -> Result<NativeState<TcItem, TcValue>, ActuatorError> {
        let mut s = NativeState::new();
        let dev = self.cfg.device.as_str();
        let cmd = self.tc(&["-d", "class", "show", "dev", dev]);
        let text = self.read(runner, cmd.clone())?;
        for c in parse::htb_classes(&text).map_err(|w| self.parse_err(&cmd, w))? {
            if let Some(dscp) = self.dscp_of(&c.handle) {
                s.insert(
                    TcItem::Htb {
                        dscp,
                        classid: c.handle.clone(),
                    },
                    Some(TcValue::Htb {
                        rate: c.rate,
                        ceil: c.ceil,
                        quantum: c.quantum.unwrap_or(0),
                    }),
                );
            }
        }
        if self.cfg.manage_buffers || self.ecn == Ecn::Red {
            let cmd = self.tc(&["-j", "qdisc", "show", "dev", dev]);
            let json = self.read(runner, cmd.clone())?;
            let qs: Vec<Qdisc> = parse::qdiscs(&json).map_err(|w| self.parse_err(&cmd, w))?;
            for q in &qs {
                let Some(parent) = q.parent.as_deref() else { continue };
                let Some(dscp) = self.dscp_of(parent) else { continue };
                let classid = parent.to_string();
                match (q.kind.as_str(), &self.ecn) {
                    ("bfifo", e) if *e != Ecn::Red => {
                        if let Some(l) = parse::bfifo_limit(q) {
                            s.insert(TcItem::Leaf { dscp, classid }, Some(TcValue::Limit(l)));
                        }
                    }
                    ("red", Ecn::Red) => {
                        let v = (q.option_u64("limit"), q.option_u64("min"), q.option_u64("max"));
                        if let (Some(limit), Some(min), Some(max)) = v {
                            s.insert(
                                TcItem::Red { dscp, classid },
                                Some(TcValue::Red {
                                    limit: Bytes(limit),
                                    min: Bytes(min),
                                    max: Bytes(max),
                                }),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Ecn::Map(pin) = &self.ecn {
            let cmd = self.bpftool(vec![
                "-j".into(),
                "map".into(),
                "dump".into(),
                "pinned".into(),
                pin.display().to_string(),
            ]);
            let json = self.read(runner, cmd.clone())?;
            for (k, v) in parse::u32_u64_entries(&json).map_err(|w| self.parse_err(&cmd, w))? {
                let Ok(d) = u8::try_from(k) else { continue };
                let Ok(dscp) = Dscp::new(d) else { continue };
                if self.cfg.classes.is_empty() || self.cfg.classes.contains(&dscp) {
                    s.insert(TcItem::Ecn { dscp }, Some(TcValue::Sojourn(Nanos(v))));
                }
            }
        }
        Ok(s)
    }

    fn command(&self, item: &TcItem, value: Option<&TcValue>) -> Result<Command, ActuatorError> {
        let dev = self.cfg.device.as_str();
        let mismatch = || ActuatorError::Unsupported {
            actuator: self.cfg.name.clone(),
            why: format!("{item} cannot take the value {value:?}"),
        };
        Ok(match (item, value) {
            (
                TcItem::Htb { classid, .. },
                Some(TcValue::Htb {
                    rate,
                    ceil,
                    quantum,
                }),
            ) => self.tc(&[
                "class",
                "change",
                "dev",
                dev,
                "parent",
                &self.cfg.parent,
                "classid",
                classid,
                "htb",
                "rate",
                &format!("{}bit", rate.0),
                "ceil",
                &format!("{}bit", ceil.0),
                "quantum",
                &quantum.to_string(),
            ]),
            (TcItem::Htb { classid, .. }, None) => {
                return Err(ActuatorError::Unsupported {
                    actuator: self.cfg.name.clone(),
                    why: format!(
                        "HTB class {classid} does not exist on {dev}; the testbed (or the operator) builds the class tree, this actuator only changes it"
                    ),
                })
            }
            (TcItem::Leaf { classid, .. }, Some(TcValue::Limit(l))) => self.tc(&[
                "qdisc", "replace", "dev", dev, "parent", classid, "bfifo", "limit",
                &l.0.to_string(),
            ]),
            (TcItem::Leaf { classid, .. } | TcItem::Red { classid, .. }, None) => {
                self.tc(&["qdisc", "del", "dev", dev, "parent", classid])
            }
            (TcItem::Red { classid, .. }, Some(TcValue::Red { limit, min, max })) => {
                let avpkt = self.cfg.mtu as u64;
                let burst = (2 * min.0 + max.0).div_ceil(3 * avpkt) + 1;
                self.tc(&[
                    "qdisc",
                    "replace",
                    "dev",
                    dev,
                    "parent",
                    classid,
                    "red",
                    "limit",
                    &limit.0.to_string(),
                    "min",
                    &min.0.to_string(),
                    "max",
                    &max.0.to_string(),
                    "avpkt",
                    &avpkt.to_string(),
                    "burst",
                    &burst.to_string(),
                    "bandwidth",
                    &format!("{}bit", self.cfg.link_rate.0),
                    "probability",
                    "1",
                    "ecn",
                ])
            }
            (TcItem::Ecn { dscp }, v) => {
                let Ecn::Map(pin) = &self.ecn else {
                    return Err(mismatch());
                };
                let mut args: Vec<String> = vec!["map".into()];
                args.push(if v.is_some() { "update" } else { "delete" }.into());
                args.push("pinned".into());
                args.push(pin.display().to_string());
                args.push("key".into());
                args.extend(parse::key_args(dscp.value() as u32));
                match v {
                    Some(TcValue::Sojourn(t)) => {
                        args.push("value".into());
                        args.extend(parse::value_args(t.0));
                        args.push("any".into());
                    }
                    None => {}
                    Some(_) => return Err(mismatch()),
                }
                self.bpftool(args)
            }
            _ => return Err(mismatch()),
        })
    }

    fn to_partial(&self, state: &NativeState<TcItem, TcValue>) -> PartialConfig {
        let mut p = PartialConfig::default();
        let c_rate = self.cfg.link_rate;
        for (item, value) in state {
            let Some(value) = value else { continue };
            match (item, value) {
                (TcItem::Htb { dscp, .. }, TcValue::Htb { rate, .. }) => {
                    p.class_mut(*dscp).weight = Some(rate.0 as f64 / c_rate.0 as f64);
                }
                (TcItem::Leaf { dscp, .. }, TcValue::Limit(l)) => {
                    p.class_mut(*dscp).buffer = Some(*l);
                }
                (TcItem::Red { dscp, .. }, TcValue::Red { limit, min, .. }) => {
                    let c = p.class_mut(*dscp);
                    c.ecn_threshold = Some(*min);
                    c.buffer = Some(*limit);
                }
                (TcItem::Ecn { dscp }, TcValue::Sojourn(t)) => {
                    p.class_mut(*dscp).ecn_threshold = Some(threshold_bytes(*t, c_rate));
                }
                _ => {}
            }
        }
        p
    }
}
