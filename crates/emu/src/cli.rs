//! The command-line front end (`polyphony emu` / `pp-emu`): clap arguments and a `run_cli`
//! that reads the scenario and trace, probes the base RTT if not given, and runs.

use crate::netns::Hosts;
use crate::probe::base_rtt;
use crate::{run, EmuError, EmuMetrics, EmuOutputs, EmuPlan, RunSummary};
use polyphony_spec::{IdealFct, Nanos, Scenario, TopologySpec, Workload};
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
    let senders = match sc.topology {
        TopologySpec::Dumbbell { senders, .. } => senders,
        TopologySpec::LeafSpine { .. } => {
            return Err(EmuError::invalid(
                "topology.kind",
                "leaf_spine",
                "the namespace testbed is a dumbbell",
            ))
        }
    };
    let text = read(&a.trace)?;
    let name = a.trace.display().to_string();
    let wl = if a.trace.extension().is_some_and(|e| e == "csv") {
        Workload::from_csv(&text, &name)
    } else {
        Workload::from_jsonl(&text, &name)
    }
    .map_err(|e| EmuError::Input {
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
    let metrics = a.metrics_out.as_ref().map(|_| EmuMetrics::new());
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
