//! Where each interval's measurement comes from: the per-class SLIs and the workload window.
//!
//! * `simulated`: pktsim replays the interval's workload sample under the configuration in
//!   force (no root; the in-process "live" network).
//! * `prometheus`: one PromQL instant query per class (`{dscp}` substituted).
//! * workload windows: the simulated interval's flows, a fresh sample of the scenario, or a
//!   recorded trace.
//!
//! Talks only to the configured Prometheus URL; reads only the configured trace file.

use crate::config::{DaemonConfig, LoadedConfig, SliSource, WorkloadSource};
use crate::network::{SimulatedNetwork, Traffic};
use crate::prom_query::query_one;
use anyhow::{anyhow, bail, Context, Result};
use polyphony_spec::{ClassSli, NetworkConfig, SliVector, Workload};
use std::sync::Arc;

/// One interval's inputs to the controller.
#[derive(Debug, Clone)]
pub struct Gathered {
    /// Per-class SLIs.
    pub sli: SliVector,
    /// The workload window the model replays.
    pub workload: Arc<Workload>,
}

/// The configured sources, ready to use.
pub enum Sources {
    /// pktsim in-process.
    Simulated(Box<SimulatedNetwork>),
    /// The namespace testbed with emu.
    Emu(Box<EmuSource>),
    /// A Prometheus server plus a workload source.
    Prometheus {
        /// HTTP client.
        client: reqwest::Client,
        /// Base URL.
        url: String,
        /// Query with `{dscp}`.
        query: String,
        /// Workload windows.
        workload: WindowSource,
    },
}

/// The testbed driven by `emu`.
pub struct EmuSource {
    traffic: Traffic,
    plan: emu::EmuPlan,
}

impl EmuSource {
    fn new(traffic: Traffic, prefix: &str, base_rtt_us: Option<f64>) -> Result<EmuSource> {
        let senders = match traffic.scenario.topology {
            polyphony_spec::TopologySpec::Dumbbell { senders, .. } => senders,
            polyphony_spec::TopologySpec::LeafSpine { .. } => {
                bail!("sli.source = \"emu\": the namespace testbed is a dumbbell; the scenario is a leaf-spine")
            }
        };
        let hosts = emu::netns::Hosts {
            prefix: prefix.to_string(),
            senders,
        };
        let rtt = match base_rtt_us {
            Some(us) => polyphony_spec::Nanos::from_secs_f64(us / 1e6),
            None => emu::probe::base_rtt(&hosts, 0).map_err(|e| anyhow!("measuring the testbed's base RTT: {e}"))?,
        };
        let s = &traffic.scenario;
        let plan = emu::EmuPlan::new(
            hosts,
            s.classes.iter().map(|c| (c.dscp, c.name.clone())).collect(),
            polyphony_spec::IdealFct::tcp(rtt, s.topology.reference_rate()),
            s.interval(),
        );
        Ok(EmuSource { traffic, plan })
    }

    fn measure(&self, index: u64, seed: u64) -> Result<Gathered> {
        let w = self.traffic.interval_workload(index, seed)?;
        let r = emu::run(
            &self.plan,
            &w,
            self.traffic.scenario.interval(),
            &emu::EmuOutputs::default(),
        )
        .map_err(|e| anyhow!("emu: {e}"))?;
        Ok(Gathered {
            sli: SliVector {
                classes: r.summary.classes,
            },
            workload: Arc::new(w),
        })
    }
}

/// Where workload windows come from when the SLIs do not bring their own.
pub enum WindowSource {
    /// A fresh sample of the scenario per interval.
    Scenario(Box<Traffic>),
    /// The same recorded trace every interval.
    Trace(Arc<Workload>),
}

impl Sources {
    /// Builds the sources of a loaded configuration.
    pub fn new(loaded: &LoadedConfig) -> Result<Sources> {
        let c = &loaded.config;
        let seed = c.controller.seed;
        let window = || -> Result<WindowSource> {
            match &c.workload {
                WorkloadSource::Scenario { .. } => {
                    let s = loaded
                        .scenario
                        .clone()
                        .ok_or_else(|| anyhow!("workload.scenario was not loaded"))?;
                    Ok(WindowSource::Scenario(Box::new(Traffic::new(s)?)))
                }
                WorkloadSource::Trace { path } => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("workload.path {}: cannot read", path.display()))?;
                    let name = path.display().to_string();
                    let w = if path.extension().is_some_and(|e| e == "csv") {
                        Workload::from_csv(&text, &name)
                    } else {
                        Workload::from_jsonl(&text, &name)
                    }
                    .map_err(|e| anyhow!("workload.path: {e}"))?;
                    Ok(WindowSource::Trace(Arc::new(w)))
                }
                WorkloadSource::Workfeed { .. } => bail!(
                    "workload.source = \"workfeed\" is not wired into the daemon yet; use \"scenario\" or \"trace\""
                ),
            }
        };
        match &c.sli {
            SliSource::Simulated => match window()? {
                WindowSource::Scenario(t) => Ok(Sources::Simulated(Box::new(SimulatedNetwork::new(*t, seed)))),
                WindowSource::Trace(_) => bail!("sli.source = \"simulated\" needs workload.source = \"scenario\""),
            },
            SliSource::Prometheus { url, query } => Ok(Sources::Prometheus {
                client: reqwest::Client::builder()
                    .timeout(std::time::Duration::from_secs(10))
                    .build()
                    .context("building the HTTP client")?,
                url: url.clone(),
                query: query.clone(),
                workload: window()?,
            }),
            SliSource::Emu { prefix, base_rtt_us } => match window()? {
                WindowSource::Scenario(t) => Ok(Sources::Emu(Box::new(EmuSource::new(*t, prefix, *base_rtt_us)?))),
                WindowSource::Trace(_) => bail!("sli.source = \"emu\" needs workload.source = \"scenario\""),
            },
        }
    }

    /// Measures interval `index` (the configuration in force is what a simulated network runs).
    pub async fn gather(&self, config: &DaemonConfig, index: u64, in_force: &NetworkConfig) -> Result<Gathered> {
        match self {
            Sources::Simulated(net) => {
                let net = (**net).clone();
                let cfg = in_force.clone();
                let m = tokio::task::spawn_blocking(move || net.measure(index, &cfg))
                    .await
                    .map_err(|e| anyhow!("simulated network task: {e}"))??;
                Ok(Gathered {
                    sli: m.sli,
                    workload: m.workload,
                })
            }
            Sources::Emu(src) => {
                let seed = config.controller.seed;
                // emu blocks for the interval; the source is rebuilt cheaply for the task.
                let traffic = src.traffic.clone();
                let plan = src.plan.clone();
                tokio::task::spawn_blocking(move || EmuSource { traffic, plan }.measure(index, seed))
                    .await
                    .map_err(|e| anyhow!("emu task: {e}"))?
            }
            Sources::Prometheus {
                client,
                url,
                query,
                workload,
            } => {
                let mut classes = Vec::new();
                for c in &config.classes {
                    let q = query.replace("{dscp}", &c.dscp.value().to_string());
                    let v = query_one(client, url, &q)
                        .await
                        .with_context(|| format!("SLI of class {} (DSCP {})", c.name, c.dscp))?;
                    // The query yields the SLO's percentile; the other statistics are not known.
                    classes.push(ClassSli {
                        dscp: c.dscp,
                        flows: 0,
                        p50: v,
                        p99: v,
                        p999: v,
                        mean: v,
                    });
                }
                let w = match workload {
                    WindowSource::Scenario(t) => {
                        let t = (**t).clone();
                        let seed = config.controller.seed;
                        Arc::new(
                            tokio::task::spawn_blocking(move || t.interval_workload(index, seed))
                                .await
                                .map_err(|e| anyhow!("workload task: {e}"))??,
                        )
                    }
                    WindowSource::Trace(w) => w.clone(),
                };
                Ok(Gathered {
                    sli: SliVector { classes },
                    workload: w,
                })
            }
        }
    }
}
