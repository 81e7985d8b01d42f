//! The command-line front end (`polyphony emu` / `pp-emu`): clap arguments and a `run_cli`
//! that reads the scenario and trace, probes the base RTT if not given, serves `/metrics`
//! during the run if asked, and runs.

use crate::{run, EmuError, EmuMetrics, EmuOutputs, EmuPlan, MetricsServer, RunSummary};
use polyphony_netns::{base_rtt, Hosts};
use polyphony_spec::{IdealFct, Nanos, Scenario, Workload};
use std::net::SocketAddr;
use std::path::PathBuf;

/// `emu` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct EmuArgs {
    /// The scenario (classes, bottleneck rate, senders, interval).
    #[arg(long)]
    pub scenario: PathBuf,
    /// The flows to replay: JSON lines (`.jsonl`) or CSV (`.csv`) of `polyphony_spec::Flow`.
    #[arg(long)]
    pub trace: PathBuf,
    /// Testbed instance prefix.
    #[arg(long, default_value = "pp")]
    pub prefix: String,
    /// Seconds of arrivals to replay (flows starting later are left out).
    #[arg(long, default_value_t = 12.0)]
    pub duration_s: f64,
    /// Base RTT in µs; measured with a ping-pong when absent.
    #[arg(long)]
    pub base_rtt_us: Option<f64>,
    /// Ground-truth log of every flow (JSON lines).
    #[arg(long)]
    pub flows_out: Option<PathBuf>,
    /// Per-interval summaries (JSON lines).
    #[arg(long)]
    pub intervals_out: Option<PathBuf>,
    /// Prometheus text exposition of the run's metrics, written at the end.
    #[arg(long)]
    pub metrics_out: Option<PathBuf>,
    /// Serve the metrics live on http://ADDR/metrics while the run lasts, for Prometheus to
    /// scrape (e.g. 127.0.0.1:9101; port 0 picks a free one, logged). Stops when the run ends.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}

fn read(p: &PathBuf) -> Result<String, EmuError> {
    std::fs::read_to_string(p).map_err(|e| EmuError::Input {
        path: p.clone(),
        why: e.to_string(),
    })
}

/// Runs `emu` as the CLI does.
pub fn run_cli(a: &EmuArgs) -> Result<RunSummary, EmuError> {
    let sc =
        Scenario::from_toml(&read(&a.scenario)?, &a.scenario.display().to_string()).map_err(|e| EmuError::Input {
            path: a.scenario.clone(),
            why: e.to_string(),
        })?;
    let senders = sc
        .topology
        .dumbbell_senders()
        .ok_or_else(|| EmuError::invalid("topology.kind", "leaf_spine", "the namespace testbed is a dumbbell"))?;
    let text = read(&a.trace)?;
    let name = a.trace.display().to_string();
    let wl = Workload::from_file_text(&text, &name).map_err(|e| EmuError::Input {
        path: a.trace.clone(),
        why: e.to_string(),
    })?;
    if !(a.duration_s.is_finite() && a.duration_s > 0.0) {
        return Err(EmuError::invalid(
            "--duration-s",
            a.duration_s,
            "give a positive number of seconds",
        ));
    }
    let hosts = Hosts {
        prefix: a.prefix.clone(),
        senders,
    };
    let metrics = (a.metrics_out.is_some() || a.metrics_listen.is_some()).then(EmuMetrics::new);
    // Bound before any probe or traffic, so an address in use fails the run at once; dropped
    // (stopped) when this function returns.
    let _server = match (a.metrics_listen, &metrics) {
        (Some(addr), Some(m)) => Some(MetricsServer::start(m.clone(), addr)?),
        _ => None,
    };
    let rtt = match a.base_rtt_us {
        Some(us) if us.is_finite() && us > 0.0 => Nanos::from_secs_f64(us / 1e6),
        Some(us) => return Err(EmuError::invalid("--base-rtt-us", us, "give a positive number of µs")),
        None => base_rtt(&hosts, 0)?,
    };
    let classes = sc.classes.iter().map(|c| (c.dscp, c.name.clone())).collect();
    let plan = EmuPlan::new(
        hosts,
        classes,
        IdealFct::tcp(rtt, sc.topology.reference_rate()),
        sc.interval(),
    );
    let out = EmuOutputs {
        flows: a.flows_out.clone(),
        intervals: a.intervals_out.clone(),
        metrics: metrics.clone(),
        live: None,
    };
    let r = run(&plan, &wl, Nanos::from_secs_f64(a.duration_s), &out)?;
    if let (Some(p), Some(m)) = (&a.metrics_out, metrics) {
        std::fs::write(p, m.encode()).map_err(|source| EmuError::Output {
            path: p.clone(),
            source,
        })?;
    }
    Ok(r.summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use polyphony_spec::{Bytes, Dscp, Flow, FlowId, HostId};

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: EmuArgs,
    }

    fn args(dir: &std::path::Path, listen: &str) -> EmuArgs {
        let trace = dir.join("trace.jsonl");
        let f = Flow {
            id: FlowId(1),
            src: HostId(0),
            dst: HostId(3),
            dscp: Dscp::AF11,
            size: Bytes(1000),
            start: Nanos(0),
            weight: 1.0,
            query: None,
        };
        std::fs::write(&trace, serde_json::to_string(&f).unwrap() + "\n").unwrap();
        let scenario =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/scenarios/reference-medium.toml");
        let scenario = scenario.display().to_string();
        let trace = trace.display().to_string();
        Cli::try_parse_from([
            "emu",
            "--scenario",
            &scenario,
            "--trace",
            &trace,
            // No such testbed: reaching the traffic would fail with a namespace error.
            "--prefix",
            "pphnone",
            "--base-rtt-us",
            "20",
            "--metrics-listen",
            listen,
        ])
        .map(|c| c.args)
        .unwrap()
    }

    #[test]
    fn a_metrics_listen_value_that_is_not_an_address_is_refused_naming_the_flag() {
        let e = Cli::try_parse_from([
            "emu",
            "--scenario",
            "s",
            "--trace",
            "t",
            "--metrics-listen",
            "localhost",
        ])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("--metrics-listen") && e.contains("localhost"), "{e}");
    }

    #[test]
    fn a_metrics_listen_address_in_use_fails_the_run_before_any_traffic() {
        let dir = tempfile::tempdir().unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let e = run_cli(&args(dir.path(), &addr)).err();
        assert!(matches!(e, Some(EmuError::Listen { .. })), "{e:?}");
        let e = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with(&format!("--metrics-listen {addr}: ")), "{e}");
        // With a free port the server starts and the run goes on to the (absent) testbed.
        let e = run_cli(&args(dir.path(), "127.0.0.1:0")).err();
        assert!(matches!(e, Some(EmuError::Netns(_))), "{e:?}");
    }
}
