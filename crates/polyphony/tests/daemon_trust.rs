//! Root tests of what lets an operator trust the daemon in apply mode, each against real
//! namespaces, a real HTB tree (the tc actuator) and real per-class routes (the iproute
//! actuator), with the daemon binary on a simulated network's SLIs:
//! * `on_exit_*`: SIGTERM leaves the applied configuration in force by default, and restores
//!   the configuration found at start with `on_exit = "revert"`;
//! * `staged_*`: a two-stage apply whose second stage fails leaves the first rolled back and the
//!   daemon holding, the failure named;
//! * `stand_aside_*`: a weight changed by hand with `tc class change` between iterations makes
//!   the daemon stop actuating that device, say so (log, metric, status), keep advising, and
//!   resume only after the authenticated `POST /v1/resume`.
//!
//! Needs root (namespaces, tc); prints "skipped: needs root" otherwise. Prefixes `ppt1`–`ppt4`,
//! torn down on drop, also when an assertion fails.

mod common;

use common::*;
use polyphony::actuation;
use polyphony::config::DaemonConfig;
use polyphony_actuator::Actuator;
use polyphony_actuator_tc::rates::{class_quantum, class_rate};
use polyphony_spec::{BitsPerSec, NetworkConfig};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LINK: BitsPerSec = BitsPerSec::from_mbps(100);
/// The weights the fixture's HTB tree starts with (the configuration "found at start").
const FOUND: [(u8, f64); 3] = [(10, 0.5), (18, 0.3), (26, 0.2)];

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn root_or_skip() -> bool {
    if !is_root() {
        eprintln!("skipped: needs root");
    }
    is_root()
}

fn run(argv: &[&str]) -> Result<String, testbed::TestbedError> {
    testbed::cmd::run(argv[0], &argv[1..])
}

fn must(argv: &[&str]) -> String {
    run(argv).unwrap_or_else(|e| panic!("fixture command failed: {e}"))
}

/// A switch namespace `<p>-sw` whose device `rx` (a veth) carries the HTB tree of the testbed
/// contract (classes `1:<dscp>` under `1:1`), and a sender namespace `<p>-h0` with one route per
/// class in table 100 + DSCP (initcwnd 10). Removed on drop.
struct Bed {
    p: String,
}

impl Bed {
    fn up(p: &str) -> Bed {
        let bed = Bed { p: p.into() };
        bed.down();
        let (sw, h0) = (bed.sw(), format!("{p}-h0"));
        for ns in [&sw, &h0] {
            must(&["ip", "netns", "add", ns]);
        }
        // veth pairs inside one namespace: this kernel has no dummy devices.
        must(&[
            "ip", "-n", &sw, "link", "add", "rx", "type", "veth", "peer", "name", "rxp",
        ]);
        for dev in ["rx", "rxp"] {
            must(&["ip", "-n", &sw, "link", "set", dev, "up"]);
        }
        let rate = format!("{}bit", LINK.0);
        must(&[
            "tc", "-n", &sw, "qdisc", "add", "dev", "rx", "root", "handle", "1:", "htb", "default", "99",
        ]);
        let class = |parent: &str, id: &str, rate: &str, extra: &[&str]| {
            let mut argv = vec![
                "tc", "-n", &sw, "class", "add", "dev", "rx", "parent", parent, "classid", id,
            ];
            argv.extend(["htb", "rate", rate]);
            argv.extend(extra);
            must(&argv);
        };
        class("1:", "1:1", &rate, &["ceil", &rate]);
        class("1:1", "1:99", "1000000bit", &["ceil", &rate]);
        for (d, w) in FOUND {
            let r = format!("{}bit", class_rate(w, LINK).0);
            let q = class_quantum(w, 0.2, 1514).to_string();
            class("1:1", &format!("1:{d}"), &r, &["ceil", &rate, "quantum", &q]);
        }
        must(&[
            "ip", "-n", &h0, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p",
        ]);
        must(&["ip", "-n", &h0, "addr", "add", "198.18.1.2/24", "dev", "eth0"]);
        for dev in ["eth0", "eth0p"] {
            must(&["ip", "-n", &h0, "link", "set", dev, "up"]);
        }
        for (d, _) in FOUND {
            must(&[
                "ip",
                "-n",
                &h0,
                "route",
                "add",
                "198.18.100.0/24",
                "via",
                "198.18.1.1",
                "dev",
                "eth0",
                "table",
                &(100 + d as u32).to_string(),
                "initcwnd",
                "10",
            ]);
        }
        bed
    }

    fn sw(&self) -> String {
        format!("{}-sw", self.p)
    }

    fn down(&self) {
        for ns in [self.sw(), format!("{}-h0", self.p)] {
            let _ = run(&["ip", "netns", "del", &ns]);
        }
    }

    /// The HTB class `1:<dscp>` as `tc class show` prints it.
    fn class(&self, dscp: u8) -> String {
        let out = must(&["tc", "-n", &self.sw(), "class", "show", "dev", "rx"]);
        out.lines()
            .find(|l| l.contains(&format!("htb 1:{dscp} ")))
            .unwrap_or_else(|| panic!("no class 1:{dscp} in {out}"))
            .to_string()
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.down();
    }
}

/// An apply-mode daemon config on the bed: the tc actuator (weights), optionally the iproute
/// actuator with the `ip` binary `ip`, a token file, and `extra` top-level lines.
fn config(dir: &Path, bed: &Bed, interval_s: f64, iproute_ip: Option<&Path>, extra: &str) -> std::path::PathBuf {
    let token = dir.join("token");
    std::fs::write(&token, "trust-test-token-0123456789\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut text = format!(
        "{extra}\n{}",
        simulated_config(
            &dir.join("state"),
            "apply",
            interval_s,
            &format!("token_file = \"{}\"", token.display())
        )
    );
    text.push_str(&format!(
        r#"
[actuators.tc]
namespace = "{sw}"
device = "rx"
link_rate = 100000000
ecn = "none"
manage_buffers = false
"#,
        sw = bed.sw()
    ));
    if let Some(ip) = iproute_ip {
        text.push_str(&format!(
            r#"
[actuators.iproute]
destination = "198.18.100.0/24"
senders = [{{ namespace = "{p}-h0", gateway = "198.18.1.1", device = "eth0" }}]
ip = "{ip}"
"#,
            p = bed.p,
            ip = ip.display()
        ));
    }
    let cfg = dir.join("daemon.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// Whether the devices hold `config` (the actuators' live plan towards it is empty).
fn holds(cfg: &Path, config: &Value) -> Result<(), String> {
    let loaded = DaemonConfig::load(cfg).unwrap();
    let acts = actuation::build(&loaded.config.actuators).unwrap().unwrap();
    let target: NetworkConfig = serde_json::from_value(config.clone()).unwrap();
    let plan = acts.plan_live(&target).map_err(|e| e.to_string())?;
    if plan.is_empty() {
        Ok(())
    } else {
        Err(plan.to_string())
    }
}

fn weights(c: &Value) -> Vec<f64> {
    c["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["weight"].as_f64().unwrap())
        .collect()
}

fn status(addr: &str) -> Value {
    let (code, body) = http(addr, "GET", "/v1/status", &[], "");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits until the daemon has completed `n` iterations (status API).
fn iterations(addr: &str, n: u64) -> Value {
    poll(Duration::from_secs(300), || {
        let s = status(addr);
        (s["iteration"].as_u64().unwrap_or(0) >= n).then_some(s)
    })
    .unwrap_or_else(|| panic!("the daemon did not complete {n} iterations"))
}

/// Runs the daemon until it applied the controller's first proposal, then SIGTERMs it; returns
/// the state file after exit.
fn apply_then_sigterm(cfg: &Path, dir: &Path) -> Value {
    let (mut d, addr) = start_daemon(cfg, &[]);
    let s = iterations(&addr, 1);
    assert_eq!(s["last_iteration"]["action"], "applied", "{s}");
    d.signal(libc::SIGTERM);
    assert_eq!(d.wait(Duration::from_secs(60)), Some(0), "SIGTERM is a clean stop");
    read_state(&dir.join("state")).expect("state after exit")
}

#[test]
fn on_exit_default_keeps_the_applied_configuration_in_force() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppt1");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &bed, 1.0, None, "");
    let state = apply_then_sigterm(&cfg, dir.path());
    let found = state["found_at_start"].clone();
    let w = weights(&found);
    assert!((w[0] - 0.5).abs() < 1e-3 && (w[2] - 0.2).abs() < 1e-3, "found {w:?}");
    holds(&cfg, &state["config_in_force"]).expect("the applied configuration stays in force");
    assert!(
        holds(&cfg, &found).is_err(),
        "the configuration found at start is not back"
    );
}

#[test]
fn on_exit_revert_restores_the_configuration_found_at_start() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppt2");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &bed, 1.0, None, "on_exit = \"revert\"");
    let state = apply_then_sigterm(&cfg, dir.path());
    let found = state["found_at_start"].clone();
    holds(&cfg, &found).expect("the configuration found at start is back");
    assert_eq!(state["config_in_force"], found);
    // And a misspelt policy is refused on load, naming the key.
    std::fs::write(
        &cfg,
        std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("on_exit = \"revert\"", "on_exit = \"rollback\""),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["daemon", "--config"])
        .arg(&cfg)
        .arg("--check")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("on_exit = \"rollback\"") && err.contains("\"revert\""),
        "{err}"
    );
}

#[test]
fn staged_apply_whose_second_stage_fails_rolls_the_first_back_and_holds() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppt3");
    let dir = tempfile::tempdir().unwrap();
    // The iproute stage's `ip` refuses every route change, as a sender refusing a route would.
    let ip = dir.path().join("ip-refusing-changes");
    std::fs::write(
        &ip,
        "#!/bin/sh\ncase \" $* \" in *\" route replace \"*) echo 'RTNETLINK answers: Operation not permitted (injected)' >&2; exit 2;; esac\nexec ip \"$@\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ip, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let stages = "[[stages]]\nactuators = [\"tc\"]\nclasses = [\"AF11\"]\n\n[[stages]]\nactuators = [\"iproute\"]\n";
    let cfg = config(dir.path(), &bed, 2.0, Some(&ip), "");
    std::fs::write(&cfg, format!("{}\n{stages}", std::fs::read_to_string(&cfg).unwrap())).unwrap();
    let (d, addr) = start_daemon(&cfg, &[]);
    d.wait_line("applied through the actuators", Duration::from_secs(60))
        .expect("the start configuration applied");
    let before = status(&addr)["config_in_force"].clone();
    holds(&cfg, &before).expect("the start configuration in force");
    // Stage 1 (tc) goes in force alone ...
    d.wait_line("stage 1 of 2 (tc) in force", Duration::from_secs(300))
        .expect("stage 1 applied");
    let s = status(&addr);
    assert_eq!(s["rollout"]["stage"], 1, "{s}");
    let target = s["rollout"]["target"].clone();
    assert_ne!(weights(&target), weights(&before));
    // ... the devices hold the target's weights and the start's initial windows ...
    let mut mixed = before.clone();
    for (i, c) in mixed["classes"].as_array_mut().unwrap().iter_mut().enumerate() {
        c["weight"] = target["classes"][i]["weight"].clone();
    }
    holds(&cfg, &mixed).expect("stage 1 in force, stage 2 not yet");
    // ... and when stage 2 (iproute) fails, stage 1 is rolled back and the daemon holds.
    let line = d
        .wait_line("staged apply failed", Duration::from_secs(300))
        .expect("the failure is logged");
    assert!(
        line.contains("stage 2 of 2 (iproute) failed to apply") && line.contains("injected"),
        "{line}"
    );
    let s = poll(Duration::from_secs(30), || {
        let s = status(&addr);
        s["held"].is_string().then_some(s)
    })
    .expect("the hold is published");
    assert!(
        s["held"].as_str().is_some_and(|h| h.contains("stage 2 of 2 (iproute)")),
        "{s}"
    );
    assert_eq!(s["config_in_force"], before, "{s}");
    holds(&cfg, &before).expect("stage 1 rolled back: the start configuration in force");
    // Holding: the loop goes on advising and touches nothing.
    let it = s["iteration"].as_u64().unwrap();
    let s = iterations(&addr, it + 2);
    assert_eq!(s["last_iteration"]["action"], "advised", "{s}");
    assert!(s["rollout"].is_null(), "{s}");
    holds(&cfg, &before).expect("nothing applied while holding");
}

#[test]
fn stand_aside_from_a_weight_changed_by_hand_until_the_authenticated_resume() {
    if !root_or_skip() {
        return;
    }
    let bed = Bed::up("ppt4");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &bed, 2.0, None, "");
    let (d, addr) = start_daemon(&cfg, &[]);
    iterations(&addr, 1);
    // An operator changes AF11's weight by hand between iterations.
    must(&[
        "tc",
        "-n",
        &bed.sw(),
        "class",
        "change",
        "dev",
        "rx",
        "parent",
        "1:1",
        "classid",
        "1:10",
        "htb",
        "rate",
        "20Mbit",
        "ceil",
        "100Mbit",
        "quantum",
        "1514",
    ]);
    let manual = bed.class(10);
    let line = d
        .wait_line("standing aside", Duration::from_secs(120))
        .expect("the change is noticed and logged");
    assert!(line.contains("1:10") && line.contains("rate 20000000bit"), "{line}");
    let s = poll(Duration::from_secs(30), || {
        let s = status(&addr);
        s["stood_aside"][0].is_object().then_some(s)
    })
    .expect("the status shows it");
    let aside = &s["stood_aside"][0];
    assert_eq!(aside["device"], "tc", "{s}");
    assert!(aside["knobs"][0]["knob"].as_str().unwrap().contains("1:10"), "{s}");
    let (_, metrics) = http(&addr, "GET", "/metrics", &[], "");
    let series = metrics
        .lines()
        .find(|l| l.starts_with("polyphony_stood_aside{") && l.contains("device=\"tc\"") && l.contains("1:10"))
        .unwrap_or_else(|| panic!("no polyphony_stood_aside series:\n{metrics}"));
    assert!(series.ends_with(" 1.0") || series.ends_with(" 1"), "{series}");
    // The daemon keeps advising (iterations go on with a next configuration) and leaves the
    // device alone.
    let it = s["iteration"].as_u64().unwrap();
    let s = iterations(&addr, it + 2);
    assert!(s["last_iteration"]["next_config"].is_object(), "{s}");
    assert_eq!(s["last_iteration"]["action"], "advised", "{s}");
    assert_eq!(
        bed.class(10),
        manual,
        "the daemon touched a device it stands aside from"
    );
    // Resuming needs the token.
    let (code, _) = http(&addr, "POST", "/v1/resume", &[], "{\"device\": \"tc\"}");
    assert_eq!(code, 401);
    assert_eq!(status(&addr)["stood_aside"].as_array().map(Vec::len), Some(1));
    let auth = [("Authorization", "Bearer trust-test-token-0123456789")];
    let (code, body) = http(&addr, "POST", "/v1/resume", &auth, "{\"device\": \"tc\"}");
    assert_eq!(code, 202, "{body}");
    let s = poll(Duration::from_secs(30), || {
        let s = status(&addr);
        (s["stood_aside"].as_array().is_some_and(Vec::is_empty)).then_some(s)
    })
    .expect("the resume is taken");
    // The manual value is the new baseline: the configuration in force splits the port between
    // AF11 and AF21 as the HTB classes now do (weights are shares, rescaled onto the simplex).
    let w = weights(&s["config_in_force"]);
    let (r10, r18) = (rate_bps(&bed.class(10)), rate_bps(&bed.class(18)));
    assert_eq!(r10, 20e6);
    assert!(
        ((w[0] / w[1]) / (r10 / r18) - 1.0).abs() < 1e-3,
        "baseline weights {w:?}, rates {r10} {r18}"
    );
    assert!(!metrics_after(&addr).contains("polyphony_stood_aside{"));
    // And the daemon actuates the device again.
    poll(Duration::from_secs(120), || (bed.class(10) != manual).then_some(()))
        .expect("the daemon did not actuate the device again after the resume");
}

/// The `rate` of a `tc class show` line, bit/s.
fn rate_bps(line: &str) -> f64 {
    let word = line
        .split_whitespace()
        .skip_while(|w| *w != "rate")
        .nth(1)
        .unwrap_or_else(|| panic!("no rate in {line}"));
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &word[digits.len()..];
    let n: f64 = digits.parse().unwrap_or_else(|_| panic!("rate {word}"));
    n * match unit {
        "bit" => 1.0,
        "Kbit" => 1e3,
        "Mbit" => 1e6,
        "Gbit" => 1e9,
        other => panic!("unit {other} in {line}"),
    }
}

fn metrics_after(addr: &str) -> String {
    http(addr, "GET", "/metrics", &[], "").1
}
