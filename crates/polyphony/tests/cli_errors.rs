//! Bad command-line arguments and bad configuration files: the binary prints exactly one line
//! naming the flag or the key (and the bad value), exits with code 2, and applies nothing (the
//! state directory is never created).

mod common;

use common::{scenario, simulated_config, workfeed_config, BIN};
use std::path::Path;
use std::process::Command;

/// A categorical knob for AF21 and an iproute actuator that may set only DCTCP.
const CATEGORICAL: &str = r#"[knobs]
[[knobs.simplexes]]
name = "weights"
classes = [10, 18, 26]
[[knobs.categorical]]
dscp = 18
congestion_control = ["dctcp", "cubic"]
[actuators.iproute]
destination = "198.18.100.0/24"
senders = [{ namespace = "pp-h0", gateway = "198.18.1.1", device = "eth0" }]
congestion_controls = ["dctcp"]
"#;

/// The reference scenario with its first size CDF misspelt ("meta-cach"), written in `dir`.
fn typo_cdf_scenario(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("typo-cdf.toml");
    let text = std::fs::read_to_string(scenario()).unwrap();
    std::fs::write(
        &path,
        text.replacen("size_cdf = \"meta-cache\"", "size_cdf = \"meta-cach\"", 1),
    )
    .unwrap();
    path
}

fn good_config(state: &Path) -> String {
    simulated_config(state, "advise", 1.5, "")
}

/// Runs the binary; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run polyphony");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_one_line_usage_error(args: &[&str], needles: &[&str]) {
    let (code, _out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: exit code {code}, stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} not in {err:?}");
    }
}

#[test]
fn the_shipped_configs_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for f in [
        "polyphony.toml",
        "daemon/simulated.toml",
        "daemon/workfeed.toml",
        "daemon/prometheus.toml",
    ] {
        let p = root.join(f);
        let (code, out, err) = run(&["daemon", "--config", p.to_str().unwrap(), "--check"]);
        assert_eq!(code, 0, "{f}: {err}");
        assert!(out.contains("valid"), "{out}");
    }
}

#[test]
fn bad_config_values_name_the_key_exit_2_and_apply_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let good = good_config(&state);
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            good.replace("interval_s = 1.5", "intervl_s = 1.5"),
            vec!["intervl_s", ":2:"],
        ),
        (
            good.replace("interval_s = 1.5", "interval_s = -1.0"),
            vec!["interval_s = -1"],
        ),
        (
            good.replace("max_slowdown = 15.0", "max_slowdown = 0.5"),
            vec!["classes[1].slo.max_slowdown = 0.5"],
        ),
        // A QCT objective needs queries in the workload, and an SLI source that sees them.
        (
            good.replace("max_slowdown = 15.0", "kind = \"qct_p99\", max_qct_us = 5000"),
            vec![
                "classes[1].slo.kind = \"qct_p99\"",
                "gives it no queries",
                "[mix.incast]",
            ],
        ),
        (
            good.replace("max_slowdown = 15.0", "kind = \"qct_p99\", max_qct_us = 5000")
                .replace(
                    "source = \"simulated\"",
                    "source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nquery = \"q{quantile}{dscp}\"",
                ),
            vec!["classes[1].slo.kind = \"qct_p99\"", "cannot measure", "\"emu\""],
        ),
        (
            good.replace(
                "slo = { max_slowdown = 15.0 }",
                "slo = { kind = \"qct\", max_qct_us = 5000 }",
            ),
            vec!["slo.kind = \"qct\" of class \"AF21\"", "unknown SLO kind"],
        ),
        (good.replace("dscp = 18", "dscp = 10"), vec!["classes[1].dscp = 10"]),
        (good.replace("dscp = 26", "dscp = 99"), vec!["99"]),
        (
            good.replace("seed = 5", "seed = 5\ntrust_radius_init = -1.0"),
            vec!["controller.trust_radius_init = -1"],
        ),
        (good.replace("seed = 5", "seed = 5\nbeta = 5"), vec!["beta"]),
        // The method's variant switches are the evaluation harness's, not the operator's.
        (
            good.replace("seed = 5", "seed = 5\nresidual = \"additive\""),
            vec!["residual"],
        ),
        (good.replace("mode = \"advise\"", "mode = \"yolo\""), vec!["yolo"]),
        // Nine classes (a scenario with nine): more than the models take, so every iteration
        // would fail on them.
        {
            let dscps = [10, 18, 26, 0, 8, 12, 14, 20, 22];
            let scen = dir.path().join("nine.toml");
            let mut text = String::from(
                "name = \"nine\"\ninterval_s = 1.0\n[topology]\nkind = \"dumbbell\"\nsenders = 3\nrate_mbps = 100\nlink_delay_us = 2.5\n",
            );
            for (i, d) in dscps.iter().enumerate() {
                text += &format!("[[classes]]\nname = \"C{i}\"\ndscp = {d}\nslo = {{ max_slowdown = 20.0 }}\n");
            }
            for d in dscps {
                text += &format!("[[mix]]\ndscp = {d}\nsize_cdf = \"websearch\"\nload = 0.05\n");
            }
            std::fs::write(&scen, text).unwrap();
            let extra: String = dscps[3..]
                .iter()
                .enumerate()
                .map(|(i, d)| format!("[[classes]]\nname = \"X{i}\"\ndscp = {d}\nslo = {{ max_slowdown = 20.0 }}\n"))
                .collect();
            (
                format!(
                    "{}\n{extra}",
                    good.replace(&scenario().display().to_string(), &scen.display().to_string())
                ),
                vec!["classes = 9 classes", "at most 8"],
            )
        },
        // A knob that may put a class on CUBIC beside others without a buffer of its own:
        // flowsim cannot evaluate such proposals, so every decision would fail.
        (
            format!(
                "{good}\n[knobs]\nsimplexes = [{{ name = \"weights\", classes = [10, 18, 26], floor = 0.05 }}]\n\
                 categorical = [{{ dscp = 26, congestion_control = [\"dctcp\", \"cubic\"] }}]\n"
            ),
            vec![
                "knobs.categorical[0].congestion_control[1] = \"cubic\"",
                "flowsim-corrected",
                "own buffer limit",
            ],
        ),
        (
            good.replace(
                "source = \"simulated\"",
                "source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nquery = \"emu_p99\"",
            ),
            vec!["sli.query"],
        ),
        (
            good.replace(
                "source = \"simulated\"",
                "source = \"prometheus\"\nurl = \"ftp://x\"\nquery = \"q{dscp}\"",
            ),
            vec!["sli.url", "ftp://x"],
        ),
        (
            good.replace("reference-medium.toml", "no-such.toml"),
            vec!["workload.scenario", "no-such.toml"],
        ),
        // A scenario whose size CDF is not shipped, and one whose class has no traffic (it
        // could never be measured): refused at load, naming the mix entry or the class.
        (
            good.replace(
                &scenario().display().to_string(),
                &typo_cdf_scenario(dir.path()).display().to_string(),
            ),
            vec!["mix[0].size_cdf = meta-cach", "meta-cache"],
        ),
        {
            let scen = dir.path().join("idle-class.toml");
            let text = std::fs::read_to_string(scenario()).unwrap();
            let (head, _) = text.rsplit_once("[[mix]]").unwrap();
            std::fs::write(&scen, head).unwrap();
            (
                good.replace(&scenario().display().to_string(), &scen.display().to_string()),
                vec!["classes[2] = AF31", "no [[mix]] entry"],
            )
        },
        // A start for other classes than the config's: the missing and the extra are named.
        (
            format!(
                "{good}\n[initial]\nclasses = [{{ dscp = 10, weight = 0.5, ecn_threshold = 30000, init_cwnd = 10 }}, \
                 {{ dscp = 18, weight = 0.25, ecn_threshold = 30000, init_cwnd = 10 }}, \
                 {{ dscp = 34, weight = 0.25, ecn_threshold = 30000, init_cwnd = 10 }}]\n"
            ),
            vec![
                "initial.classes",
                "missing AF31 (DSCP 26)",
                "not a class here: AF41 (DSCP 34)",
            ],
        ),
        (
            good.replace("listen = \"127.0.0.1:0\"", "listen = \"127.0.0.1:99999\""),
            vec!["invalid socket address", "127.0.0.1:99999"],
        ),
        // A state_dir that is a file could never hold the state: refused by --check too.
        {
            let file = dir.path().join("a-file");
            std::fs::write(&file, "").unwrap();
            (
                good.replace(&state.display().to_string(), &file.display().to_string()),
                vec!["state_dir", "a-file", "is not a directory"],
            )
        },
        (good.replace("senders = 3", "senders = 0"), vec!["topology.senders = 0"]),
        // The model runs on [topology], the scenario's traffic on its own: one network.
        (
            good.replace("rate_mbps = 100", "rate_mbps = 1000"),
            vec![
                "topology = \"dumbbell",
                "1000 Mbit/s",
                "differs from the topology of the scenario",
            ],
        ),
        (
            good.replace(
                "listen = \"127.0.0.1:0\"",
                "listen = \"127.0.0.1:0\"\ntoken_file = \"/nonexistent/token\"",
            ),
            vec!["http.token_file"],
        ),
        (
            good.replace("mode = \"advise\"", "mode = \"apply\"").replace(
                "source = \"simulated\"",
                "source = \"prometheus\"\nurl = \"http://127.0.0.1:1\"\nquery = \"q{dscp}{quantile}\"",
            ),
            vec!["mode", "actuators"],
        ),
        (
            good.replace("max_objective = 1000000.0", "max_objective = 0.0"),
            vec!["guard.max_objective = 0"],
        ),
        (
            good.replace("mode = \"advise\"", "mode = \"advise\"\non_exit = \"rollback\""),
            vec!["on_exit = \"rollback\"", "\"keep\"", "\"revert\""],
        ),
        (
            good.replace(
                "mode = \"advise\"",
                "mode = \"advise\"\nstages = [{ actuators = [\"leaf1\"] }]",
            ),
            vec!["stages[0].actuators = \"leaf1\"", "no configured actuator"],
        ),
        (
            format!("{good}\n{CATEGORICAL}"),
            vec![
                "knobs.categorical[0].congestion_control[1] = cubic",
                "actuators.iproute.congestion_controls",
            ],
        ),
        (
            format!("{good}\n{CATEGORICAL}").replace("[\"dctcp\", \"cubic\"]\n[actuators", "[\"dctcp\"]\n[actuators"),
            vec!["knobs.categorical[0].congestion_control", "at least two"],
        ),
    ];
    // A trace workload (with Prometheus SLIs) from another network, and one with a flow of a
    // class the config does not have: refused at load, naming the flow.
    let trace = |name: &str, text: &str| {
        let path = dir.path().join(name);
        if !text.is_empty() {
            std::fs::write(&path, text).unwrap();
        }
        good.replace(
            "source = \"simulated\"",
            "source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nquery = \"q{quantile}{dscp}\"",
        )
        .replace(
            &format!("source = \"scenario\"\nscenario = \"{}\"", scenario().display()),
            &format!("source = \"trace\"\npath = \"{}\"", path.display()),
        )
    };
    let cases = cases.into_iter().chain([
        (
            trace(
                "foreign.jsonl",
                "{\"id\":0,\"src\":0,\"dst\":3,\"dscp\":10,\"size\":1000,\"start\":0}\n\
                 {\"id\":1,\"src\":7,\"dst\":3,\"dscp\":18,\"size\":1000,\"start\":5}\n",
            ),
            vec!["workload.path", "foreign.jsonl", "flow 1", "host 7", "hosts 0..3"],
        ),
        (
            trace(
                "classless.jsonl",
                "{\"id\":0,\"src\":0,\"dst\":3,\"dscp\":46,\"size\":1000,\"start\":0}\n",
            ),
            vec!["workload.path", "classless.jsonl", "flow 0", "DSCP 46", "[[classes]]"],
        ),
        (
            trace(
                "huge.jsonl",
                "{\"id\":0,\"src\":0,\"dst\":3,\"dscp\":10,\"size\":1000,\"start\":0}\n\
                 {\"id\":1,\"src\":1,\"dst\":3,\"dscp\":18,\"size\":99000000000000,\"start\":5}\n",
            ),
            vec![
                "workload.path",
                "huge.jsonl",
                "flow 1.size",
                "the models handle flows up to",
            ],
        ),
        (
            trace("missing-dir/none.jsonl", ""),
            vec!["workload.path", "none.jsonl", "cannot read the trace"],
        ),
    ]);
    let cases = cases.chain(sli_and_workfeed_cases(&good, dir.path()));
    for (i, (text, needles)) in cases.enumerate() {
        let p = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&p, text).unwrap();
        for check in [true, false] {
            let mut args = vec!["daemon", "--config", p.to_str().unwrap()];
            if check {
                args.push("--check");
            }
            let mut n = needles.clone();
            n.push(p.to_str().unwrap());
            assert_one_line_usage_error(&args, &n);
            assert!(!state.exists(), "case {i}: the state directory was created");
        }
    }
}

/// Bad Prometheus query templates and bad `[workload] source = "workfeed"` sections.
fn sli_and_workfeed_cases(good: &str, dir: &Path) -> Vec<(String, Vec<&'static str>)> {
    let prom = |sli: &str| good.replace("source = \"simulated\"", sli);
    let scenario_section = format!("source = \"scenario\"\nscenario = \"{}\"", scenario().display());
    let short_key = dir.join("short.key");
    std::fs::write(&short_key, "tooshort\n").unwrap();
    let good_key = dir.join("good.key");
    std::fs::write(&good_key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let hosts = "hosts = { \"198.18.1.2\" = 0, \"198.18.100.2\" = 3 }";
    let wf = |sli: &str, workload: &str| {
        good.replace("source = \"simulated\"", sli)
            .replace(&scenario_section, workload)
    };
    let wf_sli = "source = \"workfeed\"";
    vec![
        (
            prom("source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nquery = \"q{dscp}\""),
            vec!["sli.query", "{quantile}", "p50"],
        ),
        (
            prom("source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nqueries = { p50 = \"a{dscp}\", p99 = \"b\", p999 = \"c{dscp}\" }"),
            vec!["sli.queries.p99", "{dscp}"],
        ),
        (
            prom("source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nqueries = { p50 = \"a{dscp}\", p99 = \"b{dscp}\" }"),
            vec!["sli.queries.p999", "missing"],
        ),
        (
            prom("source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nqueries = { p50 = \"a{dscp}\", p99 = \"b{dscp}\", p999 = \"c{dscp}\", p42 = \"d\" }"),
            vec!["p42"],
        ),
        (prom(wf_sli), vec!["sli.source", "[workload] source = \"workfeed\""]),
        (
            wf(wf_sli, &format!("source = \"nats\"\nurl = \"http://127.0.0.1:4222\"\nwindow_s = 10\n{hosts}")),
            vec!["workload.url", "nats://"],
        ),
        (
            wf(
                wf_sli,
                &format!(
                    "source = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nwindow_s = 10\nuser = \"u\"\npassword_file = \"{k}\"\ntoken_file = \"{k}\"\n{hosts}",
                    k = good_key.display()
                ),
            ),
            vec!["workload.token_file", "one way to authenticate"],
        ),
        (
            wf(
                wf_sli,
                &format!("source = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nconsumer = \"a.b\"\nwindow_s = 10\n{hosts}"),
            ),
            vec!["workload.consumer", "\"a.b\""],
        ),
        (
            wf(
                "source = \"prometheus\"\nurl = \"http://127.0.0.1:9090\"\nquery = \"q{dscp}{quantile}\"",
                "source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 10\nhosts = {}",
            ),
            vec!["workload.hosts"],
        ),
        (
            wf(
                wf_sli,
                "source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 10\nhosts = { \"198.18.9.9\" = 4 }",
            ),
            vec!["workload.hosts.\"198.18.9.9\" = 4", "4 hosts"],
        ),
        (
            wf(wf_sli, &format!("source = \"workfeed\"\nlisten = \"0.0.0.0:7447\"\nwindow_s = 10\n{hosts}")),
            vec!["workload.key_file", "loopback"],
        ),
        (
            wf(
                wf_sli,
                &format!(
                    "source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 10\nkey_file = \"{}\"\n{hosts}",
                    short_key.display()
                ),
            ),
            vec!["workload.key_file", "short.key"],
        ),
        (
            wf(
                wf_sli,
                &format!(
                    "source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 0\nkey_file = \"{}\"\n{hosts}",
                    good_key.display()
                ),
            ),
            vec!["workload.window_s = 0"],
        ),
        (
            wf(
                "source = \"workfeed\"\nmin_flows = 0",
                &format!("source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 10\n{hosts}"),
            ),
            vec!["sli.min_flows = 0"],
        ),
        (
            wf(
                wf_sli,
                "source = \"workfeed\"\nlisten = \"127.0.0.1:0\"\nwindow_s = 10\nhosts = { \"198.18.1\" = 0 }",
            ),
            vec!["198.18.1"],
        ),
    ]
}

/// A state the daemon cannot resume from stops the start with exit 2 (the unit does not
/// restart into it), in one line naming the file and what to do, and writes nothing.
#[test]
fn a_state_the_daemon_cannot_resume_stops_the_start_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // state.json gone, its previous copy left: starting afresh would write over the copy.
    let state = dir.path().join("only-prev");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("state.json.prev"), "{").unwrap();
    let cfg = dir.path().join("only-prev.toml");
    std::fs::write(&cfg, good_config(&state)).unwrap();
    let args = ["daemon", "--config", cfg.to_str().unwrap(), "--max-iterations", "1"];
    assert_one_line_usage_error(&args, &["state.json is missing", "state.json.prev", "move it away"]);
    assert!(!state.join("state.json").exists());
    assert_eq!(std::fs::read(state.join("state.json.prev")).unwrap(), b"{");
    // A state.json that is a directory: named once, with its OS error.
    let state = dir.path().join("dir-state");
    std::fs::create_dir_all(state.join("state.json")).unwrap();
    let cfg = dir.path().join("dir-state.toml");
    std::fs::write(&cfg, good_config(&state)).unwrap();
    let args = ["daemon", "--config", cfg.to_str().unwrap(), "--max-iterations", "1"];
    assert_one_line_usage_error(&args, &["state.json: read: ", "a readable file"]);
    let (_, _, err) = run(&args);
    assert_eq!(err.matches("os error").count(), 1, "{err}");
}

#[test]
fn a_missing_config_file_is_named() {
    assert_one_line_usage_error(
        &["daemon", "--config", "/nonexistent/polyphony.toml"],
        &["/nonexistent/polyphony.toml", "cannot read"],
    );
}

#[test]
fn bad_arguments_name_the_flag() {
    assert_one_line_usage_error(&["daemon"], &["--config"]);
    assert_one_line_usage_error(&["demo", "--iterations", "0"], &["--iterations", "0"]);
    assert_one_line_usage_error(&["demo", "--iterations", "many"], &["--iterations", "many"]);
    assert_one_line_usage_error(&["demo", "--plot", "out.jpg"], &["--plot", "out.jpg"]);
    // Found out before the loop, not after it.
    assert_one_line_usage_error(
        &["demo", "--plot", "/nonexistent/p.svg"],
        &["--plot /nonexistent/p.svg", "cannot write"],
    );
    assert_one_line_usage_error(&["demo", "--frobnicate"], &["--frobnicate"]);
    assert_one_line_usage_error(&["demo", "--measure-s", "0"], &["--measure-s", "0"]);
    // A negative number is the flag's bad value, not an unknown argument.
    assert_one_line_usage_error(&["demo", "--iterations", "-1"], &["--iterations", "'-1'"]);
    assert_one_line_usage_error(&["demo", "--measure-s", "-2"], &["--measure-s -2"]);
    assert_one_line_usage_error(
        &["workfeed", "aggregator", "--retention-s", "-5"],
        &["--retention-s", "'-5'"],
    );
    assert_one_line_usage_error(&["frobnicate"], &["frobnicate"]);
    assert_one_line_usage_error(
        &["daemon", "--config", "x.toml", "--max-iterations", "0"],
        &["--max-iterations", "'0'"],
    );
    // A scenario file whose size CDF is not shipped: a usage error naming the mix entry.
    let dir = tempfile::tempdir().unwrap();
    let typo = typo_cdf_scenario(dir.path());
    for cmd in ["simulate", "demo"] {
        assert_one_line_usage_error(
            &[cmd, "--scenario", typo.to_str().unwrap()],
            &["--scenario", "mix[0].size_cdf = meta-cach", "meta-cache"],
        );
    }
    assert_one_line_usage_error(
        &["simulate", "--scenario", scenario().to_str().unwrap(), "--model", "ns3"],
        &["--model", "ns3"],
    );
    assert_one_line_usage_error(
        &["simulate", "--scenario", "/nonexistent.toml"],
        &["--scenario", "/nonexistent.toml"],
    );
}

#[test]
fn help_teaches_and_exits_0() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("demo") && out.contains("daemon") && out.contains("recommend"),
        "{out}"
    );
    let (code, out, _) = run(&["daemon", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("SIGHUP") && out.contains("--config"), "{out}");
}

#[test]
fn emu_on_an_unusable_metrics_listen_address_names_the_flag_and_exits_2() {
    use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId, Nanos, Workload};
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("one.jsonl");
    let w = Workload::new(
        vec![Flow {
            id: FlowId(0),
            src: HostId(0),
            dst: HostId(3),
            dscp: Dscp::new(10).unwrap(),
            size: Bytes(1000),
            start: Nanos(0),
            weight: 1.0,
            query: None,
        }],
        Nanos(1_000_000),
    )
    .unwrap();
    std::fs::write(&trace, w.to_jsonl()).unwrap();
    // An address someone else already listens on: emu must refuse it before any probe or
    // traffic (so no testbed is needed), as a bad argument.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let sc = scenario();
    let args = [
        "emu",
        "--scenario",
        sc.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--prefix",
        "ppnone",
        "--metrics-listen",
        &addr,
    ];
    assert_one_line_usage_error(&args, &["--metrics-listen", &addr]);
    // Not a local address at all (TEST-NET-3): the same.
    let mut args = args;
    args[8] = "203.0.113.7:9101";
    assert_one_line_usage_error(&args, &["--metrics-listen", "203.0.113.7:9101"]);
    drop(taken);
}

/// `simulate --export-trace` writes a trace that `simulate --trace` replays to the same SLIs;
/// bad traces (truncated line, unknown host, negative size, non-monotonic starts) give one
/// line naming the file and the line, exit 2.
#[test]
fn exported_traces_replay_and_bad_traces_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    let sc = scenario();
    let sc = sc.to_str().unwrap();
    let t = trace.to_str().unwrap();
    let common = ["simulate", "--scenario", sc, "--json"];
    let (code, direct, err) = run(&[&common[..], &["--duration", "0.1", "--export-trace", t]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, replayed, err) = run(&[&common[..], &["--trace", t]].concat());
    assert_eq!(code, 0, "{err}");
    let classes = |out: &str| serde_json::from_str::<serde_json::Value>(out).unwrap()["classes"].clone();
    assert_eq!(classes(&replayed), classes(&direct));
    let text = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    let first_row = rows.iter().position(|l| l.starts_with("id,")).unwrap() + 1;
    let with_row = |row: &str| {
        let mut r = rows.clone();
        r.insert(first_row + 1, row);
        r.join("\n")
    };
    let line = format!(":{}:", first_row + 2);
    let cases = [
        (with_row("999,0,3,10,1500"), "fields"),
        (with_row("999,0,17,10,1500,999999999"), "unknown host"),
        (with_row("999,0,3,10,-1500,999999999"), "size"),
        (with_row("999,0,3,10,1500,0"), "earlier than the previous row"),
    ];
    for (i, (body, needle)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("bad{i}.trace"));
        std::fs::write(&p, body).unwrap();
        let pp = p.to_str().unwrap();
        assert_one_line_usage_error(&["simulate", "--scenario", sc, "--trace", pp], &[pp, &line, needle]);
    }
}

/// `recommend --state` names the path it was given when that is no state directory or state
/// file, and a state file it cannot read once, with one piece of advice.
#[test]
fn recommend_names_a_bad_state_path() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, good_config(&dir.path().join("state"))).unwrap();
    let cfg = cfg.to_str().unwrap();
    let missing = dir.path().join("no-such-state");
    let missing = missing.to_str().unwrap();
    assert_one_line_usage_error(
        &["recommend", "--config", cfg, "--state", missing],
        &["--state", missing],
    );
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{}").unwrap();
    let other = other.to_str().unwrap();
    assert_one_line_usage_error(&["recommend", "--config", cfg, "--state", other], &["--state", other]);
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("state.json"), "{\"x\": 1}").unwrap();
    let (code, _, err) = run(&["recommend", "--config", cfg, "--state", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a polyphony state file"), "{err}");
    assert_eq!(err.matches("start fresh").count(), 1, "{err}");
}

#[test]
fn recommend_names_a_workload_from_another_network() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, good_config(&dir.path().join("state"))).unwrap();
    let classes = [10, 18, 26];
    let config = serde_json::json!({"classes": classes.iter().map(|d| serde_json::json!(
        {"dscp": d, "weight": 1.0 / 3.0, "ecn_threshold": 30000, "init_cwnd": 10})).collect::<Vec<_>>()});
    let slis = serde_json::json!({"classes": classes.iter().map(|d| serde_json::json!(
        {"dscp": d, "flows": 100, "p50": 1.5, "p99": 9.0, "p999": 12.0, "mean": 2.0})).collect::<Vec<_>>()});
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(
        &samples,
        format!("{}\n", serde_json::json!({"config": config, "slis": slis})),
    )
    .unwrap();
    let slis_file = dir.path().join("slis.json");
    std::fs::write(&slis_file, slis.to_string()).unwrap();
    let (s, w) = (samples.to_str().unwrap(), slis_file.to_str().unwrap());
    let refused = |name: &str, text: &str, needles: &[&str]| {
        let trace = dir.path().join(name);
        std::fs::write(&trace, text).unwrap();
        let t = trace.to_str().unwrap();
        let args = [
            "recommend",
            "--config",
            cfg.to_str().unwrap(),
            "--samples",
            s,
            "--slis",
            w,
            "--workload",
            t,
        ];
        let mut n = vec!["--workload", t];
        n.extend_from_slice(needles);
        assert_one_line_usage_error(&args, &n);
    };
    // The reference dumbbell has hosts 0..3; this trace comes from a larger network.
    refused(
        "other.jsonl",
        "{\"id\":0,\"src\":0,\"dst\":3,\"dscp\":10,\"size\":1000,\"start\":0}\n\
         {\"id\":1,\"src\":7,\"dst\":3,\"dscp\":18,\"size\":1000,\"start\":5}\n",
        &["flow 1", "host 7", "hosts 0..3"],
    );
    // A flow past the models' size limit fails every candidate: named up front instead.
    refused(
        "huge.jsonl",
        "{\"id\":0,\"src\":0,\"dst\":3,\"dscp\":10,\"size\":1000,\"start\":0}\n\
         {\"id\":1,\"src\":1,\"dst\":3,\"dscp\":18,\"size\":99000000000000,\"start\":5}\n",
        &["flow 1.size", "the models handle flows up to"],
    );
    // A config whose workload comes from Workfeed needs a trace to advise on: a usage error.
    let key = dir.path().join("wf.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").unwrap();
    let wf = dir.path().join("workfeed.toml");
    std::fs::write(&wf, workfeed_config(&dir.path().join("wf-state"), &key, 1.0)).unwrap();
    assert_one_line_usage_error(
        &[
            "recommend",
            "--config",
            wf.to_str().unwrap(),
            "--samples",
            s,
            "--slis",
            w,
        ],
        &["--workload", "Workfeed"],
    );
}

/// `simulate` with a model says where the scenario lies outside the model's validated space:
/// a warning naming the key and a JSON list; pktsim (the reference) and a scenario inside the
/// space get neither.
#[test]
fn simulate_names_where_a_scenario_lies_outside_the_validated_space() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/scenarios");
    let outside = scenarios.join("reference-medium.toml"); // 100 Mbit/s with 2.5 µs links
    let inside = scenarios.join("dc-10g-dumbbell.toml");
    let listed = |sc: &Path, model: &str| {
        let (code, out, err) = run(&[
            "simulate",
            "--scenario",
            sc.to_str().unwrap(),
            "--model",
            model,
            "--duration",
            "0.05",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (v["outside_validated_space"].as_array().unwrap().len(), err)
    };
    let (n, err) = listed(&outside, "flowsim-corrected");
    assert_eq!(n, 1, "{err}");
    assert!(
        err.contains("outside the space the model was validated on") && err.contains("2.5 µs"),
        "{err}"
    );
    // stderr is a pipe here, as under systemd: the log line carries no terminal colour codes.
    assert!(!err.contains('\x1b'), "escape codes in {err:?}");
    let (n, err) = listed(&outside, "pktsim");
    assert_eq!(n, 0);
    assert!(!err.contains("validated on"), "{err}");
    let (n, err) = listed(&inside, "flowsim-corrected");
    assert_eq!(n, 0);
    assert!(!err.contains("validated on"), "{err}");
}
