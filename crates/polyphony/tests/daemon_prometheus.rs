//! A real Prometheus server (Debian's `/usr/bin/prometheus`) scrapes a daemon running against
//! the simulated network; a PromQL query over Prometheus' HTTP API returns the per-class ratio
//! series, and it evaluates the shipped alerting rules (`dashboards/polyphony-alerts.yml`,
//! checked by `promtool` first) without error. Also: the status API, the token on
//! state-changing endpoints, SIGHUP with an invalid config (refused, daemon keeps running), and
//! a graceful SIGTERM.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TOKEN: &str = "test-token-0123456789abcdef";

#[test]
fn prometheus_scrapes_the_per_class_ratio() {
    if !have_prometheus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let cfg = dir.path().join("daemon.toml");
    let text = simulated_config(
        &state_dir,
        "advise",
        0.2,
        &format!("token_file = \"{}\"", token.display()),
    );
    std::fs::write(&cfg, &text).unwrap();
    let (mut daemon, addr) = start_daemon(&cfg, &[]);

    // The daemon's own endpoints.
    let (code, body) = http(&addr, "GET", "/healthz", &[], "");
    assert_eq!((code, body.trim()), (200, "ok"));
    // A path or method the API does not have is answered with what it does have.
    let (code, body) = http(&addr, "GET", "/v1/nothing", &[], "");
    assert_eq!(code, 404, "{body}");
    assert!(
        body.contains("no endpoint GET /v1/nothing") && body.contains("/v1/status"),
        "{body}"
    );
    let (code, body) = http(&addr, "DELETE", "/v1/status", &[], "");
    assert_eq!(code, 405, "{body}");
    assert!(
        body.contains("/v1/status does not take DELETE") && body.contains("POST /v1/reload"),
        "{body}"
    );
    let first = poll(Duration::from_secs(300), || {
        let (c, b) = http(&addr, "GET", "/metrics", &[], "");
        (c == 200 && b.contains("polyphony_class_ratio{")).then_some(b)
    })
    .expect("no per-class ratio on /metrics");
    assert!(first.contains("polyphony_iteration_seconds_bucket"), "{first}");
    assert!(first.contains("polyphony_knob{"), "{first}");
    assert!(first.contains("polyphony_class_sli_model{"), "{first}");
    assert!(first.contains("polyphony_class_model_calibration{"), "{first}");
    let (code, status) = http(&addr, "GET", "/v1/status", &[], "");
    assert_eq!(code, 200);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["mode"], "advise");
    assert_eq!(status["last_good_failed"], false, "{status}");
    assert!(
        status["config_in_force"]["classes"]
            .as_array()
            .is_some_and(|c| c.len() == 3),
        "{status}"
    );

    // State-changing endpoints: no token → 401, wrong token → 401, right token → 202.
    let body = r#"{"mode": "advise"}"#;
    assert_eq!(http(&addr, "POST", "/v1/mode", &[], body).0, 401);
    assert_eq!(
        http(&addr, "POST", "/v1/mode", &[("Authorization", "Bearer wrong")], body).0,
        401
    );
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(
        http(&addr, "POST", "/v1/mode", &[("Authorization", &auth)], body).0,
        202
    );
    assert_eq!(
        http(
            &addr,
            "POST",
            "/v1/mode",
            &[("Authorization", &auth)],
            r#"{"mode": "yolo"}"#
        )
        .0,
        400
    );

    // The shipped alerting rules pass promtool's check (syntax, templates) ...
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dashboards/polyphony-alerts.yml");
    let alerts = std::fs::read_to_string(&rules).unwrap().matches("- alert:").count();
    let out = Command::new("/usr/bin/promtool")
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
        .expect("promtool (Debian package prometheus)");
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.contains(&format!("SUCCESS: {alerts} rules found")),
        "{said}"
    );
    // ... and a real Prometheus scraping the daemon every second evaluates each without error.
    let (mut prom, prom_addr) = start_prometheus_with_rules(dir.path(), "polyphony", &addr, Some(&rules));
    let series = poll(Duration::from_secs(120), || {
        let (c, b) = try_http(&prom_addr, "GET", "/api/v1/query?query=polyphony_class_ratio", &[], "")?;
        if c != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&b).ok()?;
        let r = v.pointer("/data/result")?.as_array()?.clone();
        (r.len() == 3).then_some(r)
    })
    .expect("Prometheus never returned the three per-class ratio series");
    let mut classes: Vec<String> = series
        .iter()
        .map(|s| s["metric"]["class"].as_str().unwrap_or("").to_string())
        .collect();
    classes.sort();
    assert_eq!(classes, ["AF11", "AF21", "AF31"]);
    for s in &series {
        let v: f64 = s["value"][1].as_str().unwrap().parse().unwrap();
        assert!(v.is_finite() && v > 0.0, "{s}");
        assert_eq!(s["metric"]["job"], "polyphony");
    }
    let evaluated = poll(Duration::from_secs(60), || {
        let (c, b) = try_http(&prom_addr, "GET", "/api/v1/rules", &[], "")?;
        let v: serde_json::Value = serde_json::from_str(&b).ok()?;
        let rules: Vec<serde_json::Value> = v
            .pointer("/data/groups")?
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let done = rules
            .iter()
            .all(|r| r["health"] != "unknown" && r["lastEvaluation"].as_str().is_some_and(|t| !t.starts_with("0001")));
        (c == 200 && rules.len() == alerts && done).then_some(rules)
    })
    .expect("Prometheus never evaluated every shipped alerting rule");
    for r in &evaluated {
        assert_eq!(r["health"], "ok", "{r}");
        // The first evaluation may predate the first scrape; evaluate each expression now,
        // with the daemon's series in, as the rule will be.
        let q = r["query"].as_str().expect("query");
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (c, b) = http(&prom_addr, "GET", &format!("/api/v1/query?query={enc}"), &[], "");
        assert!(c == 200 && b.contains("\"status\":\"success\""), "{q}: {c} {b}");
    }
    prom.signal(libc::SIGTERM);
    assert!(prom.wait(Duration::from_secs(30)).is_some(), "prometheus did not stop");

    // SIGHUP with an invalid file: refused, still serving.
    std::fs::write(&cfg, text.replace("interval_s = 0.2", "interval_s = -3")).unwrap();
    daemon.signal(libc::SIGHUP);
    let refused = daemon
        .wait_line("reload refused", Duration::from_secs(120))
        .expect("no refusal logged");
    assert!(refused.contains("interval_s = -3"), "{refused}");
    assert_eq!(http(&addr, "GET", "/healthz", &[], "").0, 200);

    // SIGTERM: graceful exit 0.
    daemon.signal(libc::SIGTERM);
    assert_eq!(daemon.wait(Duration::from_secs(300)), Some(0));
}
