//! Fixture of the actuator root tests: builds the minimal real objects of `docs/testbed.md`
//! (namespaces, veths, the HTB tree with bfifo leaves and u32 filters, the pinned ECN threshold
//! map, the senders' fwmark rules and per-class tables) under a private prefix, and removes all
//! of it when dropped, also when an assertion fails. Also holds the test runner that records
//! commands and injects one failure.
#![allow(dead_code)]

use polyphony_actuator::{
    ActuatorError, Command, Output, RollbackOutcome, RunError, Runner, StepFailure, SystemRunner,
};
use polyphony_actuator_iproute::{IprouteConfig, SenderRoute};
use polyphony_actuator_tc::rates::{class_quantum, class_rate, sojourn_threshold};
use polyphony_actuator_tc::{EcnMode, TcConfig};
use polyphony_spec::{BitsPerSec, Bytes, Dscp, NetworkConfig, Packets};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Bottleneck rate of the fixture.
pub const LINK: BitsPerSec = BitsPerSec::from_mbps(100);
/// The reference classes.
pub const CLASSES: [Dscp; 3] = [Dscp::AF11, Dscp::AF21, Dscp::AF31];

/// True when the test may run (root); otherwise prints why it is skipped.
pub fn root_or_skip() -> bool {
    if polyphony_e2e::is_root() {
        return true;
    }
    eprintln!("skipped: needs root");
    false
}

fn htb_class(sw: &str, classid: &str, rate: &str, ceil: &str, quantum: u64) {
    let q = quantum.to_string();
    must(&[
        "tc", "-n", sw, "class", "add", "dev", "rx", "parent", "1:1", "classid", classid, "htb", "rate", rate, "ceil",
        ceil, "quantum", &q,
    ]);
}

/// Runs a command (the testbed's runner); stdout, or the command line with its stderr.
pub fn run(argv: &[&str]) -> Result<String, testbed::TestbedError> {
    testbed::cmd::run(argv[0], &argv[1..])
}

/// Runs a command that must succeed.
pub fn must(argv: &[&str]) -> String {
    match run(argv) {
        Ok(s) => s,
        Err(e) => panic!("fixture command failed: {e}"),
    }
}

/// The configuration the fixture builds: weights 0.5/0.3/0.2, K 30/45/60 kB, 100 kB buffers,
/// initcwnd 10.
pub fn initial_config() -> NetworkConfig {
    let mut c = NetworkConfig::uniform(&CLASSES, Bytes(30_000), Packets(10));
    for (i, (w, k)) in [(0.5, 30_000), (0.3, 45_000), (0.2, 60_000)].iter().enumerate() {
        c.classes[i].weight = *w;
        c.classes[i].ecn_threshold = Bytes(*k);
        c.classes[i].buffer = Some(Bytes(100_000));
    }
    c
}

/// A target different from [`initial_config`] in every knob.
pub fn target_config() -> NetworkConfig {
    let mut c = initial_config();
    for (i, (w, k, n, b)) in [
        (0.2, 20_000, 4, 80_000),
        (0.3, 90_000, 16, 150_000),
        (0.5, 6_000, 32, 60_000),
    ]
    .iter()
    .enumerate()
    {
        c.classes[i].weight = *w;
        c.classes[i].ecn_threshold = Bytes(*k);
        c.classes[i].init_cwnd = Packets(*n);
        c.classes[i].buffer = Some(Bytes(*b));
    }
    c
}

/// One instance of the namespace testbed, removed on drop.
pub struct Bed {
    /// Instance prefix (≤ 4 characters).
    pub prefix: String,
    /// Number of sender namespaces.
    pub senders: usize,
}

impl Bed {
    /// Builds the instance `prefix` with `senders` senders, in the state of [`initial_config`].
    pub fn up(prefix: &str, senders: usize) -> Bed {
        let bed = Bed {
            prefix: prefix.into(),
            senders,
        };
        bed.teardown(); // leftovers of a crashed run
        let sw = bed.ns("sw");
        let rx = bed.ns("rx");
        for ns in [&sw, &rx] {
            must(&["ip", "netns", "add", ns]);
        }
        must(&[
            "ip", "-n", &sw, "link", "add", "rx", "type", "veth", "peer", "name", "eth0", "netns", &rx,
        ]);
        must(&["ip", "-n", &sw, "addr", "add", "198.18.100.1/24", "dev", "rx"]);
        must(&["ip", "-n", &rx, "addr", "add", "198.18.100.2/24", "dev", "eth0"]);
        for (ns, dev) in [(&sw, "rx"), (&sw, "lo"), (&rx, "eth0"), (&rx, "lo")] {
            must(&["ip", "-n", ns, "link", "set", dev, "up"]);
        }
        must(&["ip", "netns", "exec", &sw, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        let init = initial_config();
        for i in 0..senders {
            let h = bed.ns(&format!("h{i}"));
            must(&["ip", "netns", "add", &h]);
            let hdev = format!("h{i}");
            must(&[
                "ip", "-n", &sw, "link", "add", &hdev, "type", "veth", "peer", "name", "eth0", "netns", &h,
            ]);
            let gw = format!("198.18.{}.1", i + 1);
            must(&["ip", "-n", &sw, "addr", "add", &format!("{gw}/24"), "dev", &hdev]);
            must(&[
                "ip",
                "-n",
                &h,
                "addr",
                "add",
                &format!("198.18.{}.2/24", i + 1),
                "dev",
                "eth0",
            ]);
            for (ns, dev) in [(&sw, hdev.as_str()), (&h, "eth0"), (&h, "lo")] {
                must(&["ip", "-n", ns, "link", "set", dev, "up"]);
            }
            must(&["ip", "-n", &h, "route", "add", "default", "via", &gw]);
            for c in &init.classes {
                let d = c.dscp.value() as u32;
                let table = (100 + d).to_string();
                must(&[
                    "ip",
                    "-n",
                    &h,
                    "rule",
                    "add",
                    "fwmark",
                    &format!("{:#x}", 0x100 + d),
                    "lookup",
                    &table,
                ]);
                must(&[
                    "ip",
                    "-n",
                    &h,
                    "route",
                    "add",
                    "198.18.100.0/24",
                    "via",
                    &gw,
                    "dev",
                    "eth0",
                    "table",
                    &table,
                    "initcwnd",
                    &c.init_cwnd.0.to_string(),
                ]);
            }
        }
        // The bottleneck: HTB tree, bfifo leaves, u32 filters.
        let rate = format!("{}bit", LINK.0);
        must(&[
            "tc", "-n", &sw, "qdisc", "add", "dev", "rx", "root", "handle", "1:", "htb", "default", "99",
        ]);
        must(&[
            "tc", "-n", &sw, "class", "add", "dev", "rx", "parent", "1:", "classid", "1:1", "htb", "rate", &rate,
            "ceil", &rate,
        ]);
        htb_class(&sw, "1:99", "1000000bit", &rate, 1514);
        let wmin = init.classes.iter().map(|c| c.weight).fold(1.0, f64::min);
        for c in &init.classes {
            let d = c.dscp.value();
            let cid = format!("1:{d}");
            htb_class(
                &sw,
                &cid,
                &format!("{}bit", class_rate(c.weight, LINK).0),
                &rate,
                class_quantum(c.weight, wmin, 1514),
            );
            let limit = c.buffer.map(|b| b.0).unwrap_or(100_000).to_string();
            must(&[
                "tc",
                "-n",
                &sw,
                "qdisc",
                "add",
                "dev",
                "rx",
                "parent",
                &cid,
                "handle",
                &format!("{d}:"),
                "bfifo",
                "limit",
                &limit,
            ]);
            must(&[
                "tc",
                "-n",
                &sw,
                "filter",
                "add",
                "dev",
                "rx",
                "parent",
                "1:",
                "protocol",
                "ip",
                "prio",
                "1",
                "u32",
                "match",
                "ip",
                "dsfield",
                &format!("{:#04x}", c.dscp.tos()),
                "0xfc",
                "flowid",
                &cid,
            ]);
        }
        // The marker's threshold map.
        if !std::fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .contains(" /sys/fs/bpf bpf ")
        {
            must(&["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"]);
        }
        std::fs::create_dir_all(bed.pin_dir()).expect("create the pin directory");
        let pin = bed.pin();
        must(&[
            "bpftool",
            "map",
            "create",
            &pin,
            "type",
            "hash",
            "key",
            "4",
            "value",
            "8",
            "entries",
            "64",
            "name",
            "ecn_thresh_ns",
        ]);
        for c in &init.classes {
            let key = (c.dscp.value() as u32).to_le_bytes().map(|b| b.to_string());
            let val = sojourn_threshold(c.ecn_threshold, LINK)
                .0
                .to_le_bytes()
                .map(|b| b.to_string());
            let mut argv = vec!["bpftool", "map", "update", "pinned", &pin, "key"];
            argv.extend(key.iter().map(String::as_str));
            argv.push("value");
            argv.extend(val.iter().map(String::as_str));
            must(&argv);
        }
        bed
    }

    /// Namespace of a role (`sw`, `rx`, `h0`, …).
    pub fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.prefix)
    }

    /// The instance's pin directory.
    pub fn pin_dir(&self) -> String {
        format!("/sys/fs/bpf/polyphony/{}", self.prefix)
    }

    /// The threshold map's pin.
    pub fn pin(&self) -> String {
        format!("{}/ecn_thresh_ns", self.pin_dir())
    }

    /// The tc actuator's configuration for this instance (ECN mode `auto`: the probe decides).
    pub fn tc_config(&self) -> TcConfig {
        let mut c = TcConfig::new(Some(self.ns("sw")), "rx", LINK);
        c.ecn = EcnMode::Auto;
        c.ecn_map_pin = Some(self.pin().into());
        c
    }

    /// The iproute actuator's configuration for this instance.
    pub fn iproute_config(&self) -> IprouteConfig {
        IprouteConfig::new(
            "198.18.100.0/24",
            (0..self.senders)
                .map(|i| SenderRoute {
                    namespace: Some(self.ns(&format!("h{i}"))),
                    gateway: Some(format!("198.18.{}.1", i + 1)),
                    device: "eth0".into(),
                })
                .collect(),
        )
    }

    /// Everything the actuators could touch, as text: HTB classes, qdiscs, filters, map
    /// entries (sorted), the senders' routes and rules.
    pub fn snapshot(&self) -> String {
        let sw = self.ns("sw");
        let mut s = String::new();
        s += &must(&["tc", "-n", &sw, "-d", "class", "show", "dev", "rx"]);
        s += &must(&["tc", "-n", &sw, "-j", "qdisc", "show", "dev", "rx"]);
        s += &must(&["tc", "-n", &sw, "filter", "show", "dev", "rx"]);
        let dump: serde_json::Value =
            serde_json::from_str(&must(&["bpftool", "-j", "map", "dump", "pinned", &self.pin()]))
                .expect("map dump is JSON");
        let mut entries: Vec<String> = dump.as_array().expect("array").iter().map(|e| e.to_string()).collect();
        entries.sort();
        s += &entries.join("\n");
        for i in 0..self.senders {
            let h = self.ns(&format!("h{i}"));
            s += &must(&["ip", "-n", &h, "-j", "-4", "route", "show", "table", "all"]);
            s += &must(&["ip", "-n", &h, "rule", "show"]);
        }
        s
    }

    fn teardown(&self) {
        let list = run(&["ip", "netns", "list"]).unwrap_or_default();
        for line in list.lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if name.starts_with(&format!("{}-", self.prefix)) {
                let _ = run(&["ip", "netns", "del", name]);
            }
        }
        let _ = std::fs::remove_dir_all(self.pin_dir());
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Whether a weight read back equals the target to tc's rate precision.
pub fn same_config(got: &NetworkConfig, want: &NetworkConfig) -> Result<(), String> {
    if got.classes.len() != want.classes.len() {
        return Err(format!("{got:?} vs {want:?}"));
    }
    for (g, w) in got.classes.iter().zip(&want.classes) {
        let weight_ok = (g.weight - w.weight).abs() < 1e-5;
        let rest_ok = g.dscp == w.dscp
            && g.ecn_threshold == w.ecn_threshold
            && g.init_cwnd == w.init_cwnd
            && g.buffer == w.buffer;
        if !(weight_ok && rest_ok) {
            return Err(format!("read back {g:?}, wanted {w:?}"));
        }
    }
    Ok(())
}

/// What the injected fault does when the trigger matches.
pub enum Fault {
    /// Never fire: only record.
    None,
    /// Refuse the command without running it.
    Refuse,
    /// First run these real commands (e.g. delete the object the command changes), then run the
    /// command itself, which then fails for a real reason.
    SabotageFirst(Vec<Vec<String>>),
}

/// A runner that runs every command for real and records it, except that the first command
/// matching `trigger` meets `fault`.
pub struct FaultRunner {
    inner: SystemRunner,
    trigger: Box<dyn Fn(&Command) -> bool + Send + Sync>,
    fault: Fault,
    fired: AtomicBool,
    /// Every command asked of the runner, in order.
    pub log: Mutex<Vec<String>>,
}

impl FaultRunner {
    /// A runner that only records.
    pub fn recording() -> FaultRunner {
        FaultRunner::new(|_| false, Fault::None)
    }

    /// A runner whose first command matching `trigger` meets `fault`.
    pub fn new(trigger: impl Fn(&Command) -> bool + Send + Sync + 'static, fault: Fault) -> FaultRunner {
        FaultRunner {
            inner: SystemRunner::default(),
            trigger: Box::new(trigger),
            fault,
            fired: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
        }
    }

    /// The commands asked so far.
    pub fn commands(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Forgets the commands asked so far.
    pub fn clear(&self) {
        if let Ok(mut l) = self.log.lock() {
            l.clear();
        }
    }

    /// Whether the fault fired.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Runner for FaultRunner {
    fn run(&self, cmd: &Command) -> Result<Output, RunError> {
        if let Ok(mut l) = self.log.lock() {
            l.push(cmd.to_string());
        }
        if !matches!(self.fault, Fault::None) && (self.trigger)(cmd) && !self.fired.swap(true, Ordering::SeqCst) {
            match &self.fault {
                Fault::None => {}
                Fault::Refuse => {
                    return Err(RunError::Injected(format!("test refused `{cmd}`")));
                }
                Fault::SabotageFirst(cmds) => {
                    for c in cmds {
                        let argv: Vec<&str> = c.iter().map(String::as_str).collect();
                        must(&argv);
                    }
                }
            }
        }
        self.inner.run(cmd)
    }
}

/// The step failure and the earlier actuators' rollback of a composite apply that failed at
/// one step; panics (with the error) on any other error.
pub fn composite_step_failure(err: &ActuatorError) -> (&StepFailure, &RollbackOutcome) {
    let ActuatorError::Composite { failed, others } = err else {
        panic!("expected a composite failure, got {err}");
    };
    let ActuatorError::Failed(f) = failed.as_ref() else {
        panic!("expected a step failure, got {failed}");
    };
    (f, others)
}

pub mod conn;
pub mod sshd;
