//! Prints a scenario's per-class SLIs under a configuration with either model.
//!
//! ```text
//! cargo run --release -p polyphony-model --example simulate -- \
//!     --scenario configs/scenarios/reference-medium.toml --model pktsim \
//!     --weights 0.3,0.3,0.4 --k 3000,30000,100000 --initcwnd 10,10,10
//! ```
//! Without knobs the scenario's `initial` configuration is used, else equal weights, K = 30 kB,
//! initcwnd 10. `--config FILE` reads a `NetworkConfig` as TOML instead.

use anyhow::{bail, Context, Result};
use clap::Parser;
use polyphony_model::{simulate, ModelKind, SimulateRequest};
use polyphony_spec::{Bytes, ClassConfig, Nanos, NetworkConfig, Packets, Scenario};

#[derive(Parser)]
struct Args {
    /// Scenario TOML file.
    #[arg(long)]
    scenario: String,
    /// flowsim-corrected, flowsim-aggregate or pktsim.
    #[arg(long, default_value = "flowsim-corrected")]
    model: String,
    /// A NetworkConfig in TOML.
    #[arg(long)]
    config: Option<String>,
    /// Per-class weights, comma separated, in class order.
    #[arg(long)]
    weights: Option<String>,
    /// Per-class ECN thresholds K in bytes.
    #[arg(long)]
    k: Option<String>,
    /// Per-class initial windows in packets.
    #[arg(long)]
    initcwnd: Option<String>,
    /// Seconds of network time (default: the scenario's interval).
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of warm-up left out of the SLIs.
    #[arg(long, default_value_t = 0.0)]
    warmup: f64,
    /// Workload seed (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
}

fn list<T: std::str::FromStr>(s: &str, what: &str, n: usize) -> Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let v: Vec<T> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<T>()
                .map_err(|e| anyhow::anyhow!("--{what} {x:?}: {e}"))
        })
        .collect::<Result<_>>()?;
    if v.len() != n {
        bail!("--{what}: {} values for {n} classes", v.len());
    }
    Ok(v)
}

fn main() -> Result<()> {
    let a = Args::parse();
    let text = std::fs::read_to_string(&a.scenario).with_context(|| format!("reading {}", a.scenario))?;
    let scenario = Scenario::from_toml(&text, &a.scenario)?;
    let n = scenario.classes.len();
    let mut config = match &a.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).with_context(|| format!("reading {p}"))?;
            Some(toml::from_str::<NetworkConfig>(&t).with_context(|| format!("parsing {p}"))?)
        }
        None => None,
    };
    if a.weights.is_some() || a.k.is_some() || a.initcwnd.is_some() {
        let w: Vec<f64> = a
            .weights
            .as_deref()
            .map_or(Ok(vec![1.0 / n as f64; n]), |s| list(s, "weights", n))?;
        let k: Vec<u64> = a.k.as_deref().map_or(Ok(vec![30_000; n]), |s| list(s, "k", n))?;
        let iw: Vec<u32> = a
            .initcwnd
            .as_deref()
            .map_or(Ok(vec![10; n]), |s| list(s, "initcwnd", n))?;
        config = Some(NetworkConfig {
            classes: scenario
                .classes
                .iter()
                .enumerate()
                .map(|(i, c)| ClassConfig::new(c.dscp, w[i], Bytes(k[i]), Packets(iw[i])))
                .collect(),
            port_buffer: None,
        });
    }
    let mut req = SimulateRequest::new(scenario, ModelKind::parse(&a.model)?);
    req.config = config;
    req.duration = a.duration.map(Nanos::from_secs_f64);
    req.warmup = Nanos::from_secs_f64(a.warmup);
    req.seed = a.seed;
    print!("{}", simulate(&req)?);
    Ok(())
}
