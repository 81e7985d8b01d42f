//! `polyphony simulate`: the per-class SLIs of a scenario under one configuration, by either
//! model (the model crate's `simulate`). Reads the scenario, the configuration file and,
//! with `--trace`, a flow trace to replay; writes to stdout and, with `--export-trace`, the
//! replayable trace of the simulated flows.

use crate::cli::{ModelArg, SimulateArgs};
use crate::network::load_scenario;
use crate::Failure;
use anyhow::anyhow;
use polyphony_model::validation::scenario_outside_space;
use polyphony_model::{scenario_trace, simulate, ModelKind, SimulateRequest};
use polyphony_spec::{Dscp, FlowTrace, Nanos, NetworkConfig};
use std::path::Path;
use std::time::Instant;

/// Reads a `NetworkConfig` for the classes `dscps` from TOML or JSON (by extension; `.json` is
/// JSON, anything else TOML) and validates it. Errors name the file, the line (TOML) and the key.
pub fn read_network_config(path: &Path, dscps: &[Dscp]) -> Result<NetworkConfig, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let cfg: NetworkConfig = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).map_err(|e| format!("{shown}:{}: {e}", e.line()))?
    } else {
        toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|r| crate::config::line_of(&text, r.start)).unwrap_or(0);
            format!("{shown}:{line}: {}", e.message().trim())
        })?
    };
    // The classes first: a missing class also breaks the weights' sum, the lesser symptom.
    cfg.check_classes(dscps, "classes")
        .map_err(|e| format!("{shown}: {e}"))?;
    cfg.validate().map_err(|e| format!("{shown}: {e}"))?;
    Ok(cfg)
}

/// Runs the command.
pub fn main(args: SimulateArgs) -> Result<(), Failure> {
    let scenario = load_scenario(&args.scenario).map_err(|e| Failure::Usage(format!("--scenario: {e:#}")))?;
    let config = match &args.network_config {
        Some(p) => {
            let c = read_network_config(p, &scenario.dscps())
                .map_err(|e| Failure::Usage(format!("--network-config: {e}")))?;
            Some(c)
        }
        None => None,
    };
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0 && d <= 3600.0) {
            return Err(Failure::Usage(format!("--duration {d}: seconds in (0, 3600]")));
        }
    }
    let mut req = SimulateRequest::new(
        scenario,
        match args.model {
            ModelArg::FlowsimCorrected => ModelKind::FlowSimCorrected,
            ModelArg::FlowsimAggregate => ModelKind::FlowSimAggregate,
            ModelArg::Pktsim => ModelKind::PktSim,
        },
    );
    req.config = config;
    req.duration = args.duration.map(Nanos::from_secs_f64);
    req.seed = Some(args.seed);
    if let Some(p) = &args.trace {
        let shown = p.display().to_string();
        let text =
            std::fs::read_to_string(p).map_err(|e| Failure::Usage(format!("--trace: {shown}: cannot read: {e}")))?;
        let trace = FlowTrace::parse(&text, &shown).map_err(|e| Failure::Usage(format!("--trace: {e}")))?;
        let missing: Vec<&str> = req
            .scenario
            .classes
            .iter()
            .filter(|c| trace.config.class(c.dscp).is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !missing.is_empty() || trace.config.classes.len() != req.scenario.classes.len() {
            return Err(Failure::Usage(format!(
                "--trace: {shown}: its classes ({}) are not the scenario's (missing: {}); use the scenario the trace was exported from",
                trace.config.classes.iter().map(|c| c.dscp.name()).collect::<Vec<_>>().join(", "),
                missing.join(", ")
            )));
        }
        req.scenario.topology = trace.topology.clone();
        req.trace = Some(trace);
    }
    let outside = if req.model == ModelKind::PktSim {
        Vec::new()
    } else {
        scenario_outside_space(&req.scenario)
    };
    if let Some(p) = &args.export_trace {
        let trace = scenario_trace(&req, &req.effective_config()).map_err(|e| Failure::Runtime(anyhow!("{e}")))?;
        std::fs::write(p, trace.to_text())
            .map_err(|e| Failure::Runtime(anyhow!("--export-trace: cannot write {}: {e}", p.display())))?;
    }
    let t0 = Instant::now();
    let report = simulate(&req).map_err(|e| Failure::Runtime(anyhow!("{e}")))?;
    let wall = t0.elapsed().as_secs_f64();
    // After the run, so that a usage error stays one line.
    crate::warn_outside_space(&format!("scenario {}", req.scenario.name), &outside);
    if args.json {
        let classes: Vec<_> = report
            .scenario
            .classes
            .iter()
            .map(|c| {
                let s = report.output.sli.get(c.dscp);
                serde_json::json!({
                    "class": c.name, "dscp": c.dscp.value(), "slo": c.slo.threshold(),
                    "slo_kind": c.slo.kind().name(), "unit": c.slo.kind().unit(),
                    "sli": s.and_then(|s| c.slo.sli(s)),
                    "stats": s,
                })
            })
            .collect();
        let j = serde_json::json!({
            "scenario": report.scenario.name, "model": report.model, "config": report.config,
            "flows": report.output.stats.flows, "measured": report.output.stats.measured,
            "unfinished": report.output.stats.unfinished, "wall_seconds": wall,
            "classes": classes,
            "outside_validated_space": outside.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        println!("{j}");
    } else {
        print!("{report}");
        println!("synthesis and model run: {wall:.3} s");
    }
    Ok(())
}
