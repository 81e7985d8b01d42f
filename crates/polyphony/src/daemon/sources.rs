//! Where each interval's measurement comes from: the per-class SLIs and the workload window.
//!
//! * `simulated`: pktsim replays the interval's workload sample under the configuration in
//!   force (no root; the in-process "live" network).
//! * `emu`: the namespace testbed replays a sample of the scenario (root).
//! * `prometheus`: one PromQL instant query per class and percentile (`{dscp}`, `{quantile}`
//!   substituted).
//! * `workfeed`: slowdowns of the flows the embedded Workfeed aggregator captured ([`super::feed`]).
//! * workload windows: the simulated interval's flows, a fresh sample of the scenario, a
//!   recorded trace, or the flows Workfeed captured in the last `window_s`.
//!
//! Talks only to the configured Prometheus URL and the Workfeed listen socket; reads only the
//! configured trace and key files.

use super::feed::{nats_input, Feed, IpfixInput, LeftOut};
use crate::config::{DaemonConfig, LoadedConfig, ResolvedQueries, SliSource, WorkloadSource};
use crate::prom_query::query_one;
use anyhow::{anyhow, bail, Context, Result};
use polyphony_model::Topology;
use polyphony_model::{SimulatedNetwork, Traffic};
use polyphony_spec::{ClassSli, Dscp, Nanos, NetworkConfig, SliVector, Workload};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use workfeed::ipfix::DOCUMENTATION_PEN;

/// One interval's inputs to the controller.
#[derive(Debug, Clone)]
pub struct Gathered {
    /// Per-class SLIs.
    pub sli: SliVector,
    /// The workload window the model replays.
    pub workload: Arc<Workload>,
    /// Captured flows left out of a Workfeed window, by reason.
    pub left_out: Option<LeftOut>,
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
        /// Query templates with `{dscp}`, per statistic.
        queries: ResolvedQueries,
        /// Workload windows.
        workload: WindowSource,
    },
    /// Workfeed's captured flows: the window and the SLIs of the same flows.
    Workfeed {
        /// The window.
        window: WorkfeedWindow,
        /// The model's topology (ideal FCTs).
        topology: Arc<Topology>,
        /// Base RTT replacing the topology's in the ideal FCT.
        base_rtt: Option<Nanos>,
        /// Fewest flows a class needs for its SLI.
        min_flows: u64,
    },
}

/// Windows of the embedded Workfeed aggregator.
pub struct WorkfeedWindow {
    feed: Arc<Feed>,
    window_s: f64,
    hosts: BTreeMap<Ipv4Addr, u32>,
}

impl WorkfeedWindow {
    fn take(&self, classes: &[Dscp]) -> Result<super::feed::CapturedWindow> {
        self.feed.window(self.window_s, &self.hosts, classes)
    }
}

/// The testbed driven by `emu`.
pub struct EmuSource {
    traffic: Traffic,
    plan: emu::EmuPlan,
}

impl EmuSource {
    fn new(traffic: Traffic, prefix: &str, base_rtt_us: Option<f64>) -> Result<EmuSource> {
        let Some(senders) = traffic.scenario.topology.dumbbell_senders() else {
            bail!("sli.source = \"emu\": the namespace testbed is a dumbbell; the scenario is a leaf-spine")
        };
        let hosts = polyphony_netns::Hosts {
            prefix: prefix.to_string(),
            senders,
        };
        let rtt = match base_rtt_us {
            Some(us) => polyphony_spec::Nanos::from_secs_f64(us / 1e6),
            None => {
                polyphony_netns::base_rtt(&hosts, 0).map_err(|e| anyhow!("measuring the testbed's base RTT: {e}"))?
            }
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
            left_out: None,
        })
    }
}

/// Where workload windows come from when the SLIs do not bring their own.
pub enum WindowSource {
    /// A fresh sample of the scenario per interval.
    Scenario(Box<Traffic>),
    /// The same recorded trace every interval.
    Trace(Arc<Workload>),
    /// The flows Workfeed captured.
    Workfeed(WorkfeedWindow),
}

impl Sources {
    /// Builds the sources of a loaded configuration. A Workfeed aggregator is bound unless
    /// `reuse` (the running one, on a reload) already serves the configured address and key.
    pub async fn new(loaded: &LoadedConfig, reuse: Option<Arc<Feed>>) -> Result<Sources> {
        let c = &loaded.config;
        let seed = c.controller.seed;
        let window = match &c.workload {
            WorkloadSource::Scenario { .. } => {
                let s = loaded
                    .scenario
                    .clone()
                    .ok_or_else(|| anyhow!("workload.scenario was not loaded"))?;
                WindowSource::Scenario(Box::new(Traffic::new(s)?))
            }
            WorkloadSource::Trace { path } => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("workload.path {}: cannot read", path.display()))?;
                let name = path.display().to_string();
                let w = Workload::from_file_text(&text, &name).map_err(|e| anyhow!("workload.path: {e}"))?;
                WindowSource::Trace(Arc::new(w))
            }
            w @ WorkloadSource::Workfeed {
                listen,
                window_s,
                key_file,
                hosts,
                ipfix_listen,
                ipfix_enterprise,
            } => {
                let feed = match reuse.filter(|f| f.serves(w)) {
                    Some(f) => f,
                    None => {
                        let ipfix = ipfix_listen.map(|listen| IpfixInput {
                            listen,
                            enterprise: ipfix_enterprise.unwrap_or(DOCUMENTATION_PEN),
                        });
                        Arc::new(Feed::bind(*listen, *window_s, key_file.as_ref(), ipfix).await?)
                    }
                };
                WindowSource::Workfeed(WorkfeedWindow {
                    feed,
                    window_s: *window_s,
                    hosts: hosts.clone(),
                })
            }
            w @ WorkloadSource::Nats {
                window_s,
                key_file,
                hosts,
                ..
            } => {
                let feed = match reuse.filter(|f| f.serves(w)) {
                    Some(f) => f,
                    None => {
                        let input = nats_input(w, &c.state_dir)
                            .ok_or_else(|| anyhow!("workload: a NATS credential file could not be read"))?;
                        Arc::new(Feed::nats(input, *window_s, key_file.as_ref()).await?)
                    }
                };
                WindowSource::Workfeed(WorkfeedWindow {
                    feed,
                    window_s: *window_s,
                    hosts: hosts.clone(),
                })
            }
        };
        match &c.sli {
            SliSource::Simulated => match window {
                WindowSource::Scenario(t) => Ok(Sources::Simulated(Box::new(SimulatedNetwork::new(*t, seed)))),
                _ => bail!("sli.source = \"simulated\" needs workload.source = \"scenario\""),
            },
            SliSource::Prometheus { url, query, queries } => Ok(Sources::Prometheus {
                client: reqwest::Client::builder()
                    .timeout(std::time::Duration::from_secs(10))
                    .build()
                    .context("building the HTTP client")?,
                url: url.clone(),
                queries: queries.resolve(query.as_deref())?,
                workload: window,
            }),
            SliSource::Emu { prefix, base_rtt_us } => match window {
                WindowSource::Scenario(t) => Ok(Sources::Emu(Box::new(EmuSource::new(*t, prefix, *base_rtt_us)?))),
                _ => bail!("sli.source = \"emu\" needs workload.source = \"scenario\""),
            },
            SliSource::Workfeed { base_rtt_us, min_flows } => match window {
                WindowSource::Workfeed(window) => Ok(Sources::Workfeed {
                    window,
                    topology: Arc::new(Topology::from_spec(&c.topology).map_err(|e| anyhow!("topology: {e}"))?),
                    base_rtt: base_rtt_us.map(|us| Nanos::from_secs_f64(us / 1e6)),
                    min_flows: *min_flows,
                }),
                _ => bail!("sli.source = \"workfeed\" needs workload.source = \"workfeed\""),
            },
        }
    }

    /// The embedded Workfeed aggregator, if one is configured.
    pub fn feed(&self) -> Option<Arc<Feed>> {
        match self {
            Sources::Workfeed { window, .. }
            | Sources::Prometheus {
                workload: WindowSource::Workfeed(window),
                ..
            } => Some(window.feed.clone()),
            _ => None,
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
                    left_out: None,
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
                queries,
                workload,
            } => {
                let mut classes = Vec::new();
                for c in &config.classes {
                    let dscp = c.dscp.value().to_string();
                    let ask = |template: &str| {
                        let q = template.replace("{dscp}", &dscp);
                        async move {
                            query_one(client, url, &q)
                                .await
                                .with_context(|| format!("SLI of class {} (DSCP {})", c.name, c.dscp))
                        }
                    };
                    let [p50, p99, p999] = &queries.percentiles;
                    let (p50, p99, p999) = (ask(p50).await?, ask(p99).await?, ask(p999).await?);
                    let mean = match &queries.mean {
                        Some(m) => ask(m).await?,
                        None => p50,
                    };
                    classes.push(ClassSli {
                        dscp: c.dscp,
                        flows: 0,
                        p50,
                        p99,
                        p999,
                        mean,
                        qct: None,
                    });
                }
                let (w, left_out) = match workload {
                    WindowSource::Scenario(t) => {
                        let t = (**t).clone();
                        let seed = config.controller.seed;
                        let w = tokio::task::spawn_blocking(move || t.interval_workload(index, seed))
                            .await
                            .map_err(|e| anyhow!("workload task: {e}"))??;
                        (Arc::new(w), None)
                    }
                    WindowSource::Trace(w) => (w.clone(), None),
                    WindowSource::Workfeed(f) => {
                        let cw = f.take(&config.dscps())?;
                        (Arc::new(cw.workload), Some(cw.left_out))
                    }
                };
                Ok(Gathered {
                    sli: SliVector { classes },
                    workload: w,
                    left_out,
                })
            }
            Sources::Workfeed {
                window,
                topology,
                base_rtt,
                min_flows,
            } => {
                let dscps = config.dscps();
                let cw = window.take(&dscps)?;
                let sli = cw.slis(topology, *base_rtt, &dscps, *min_flows);
                Ok(Gathered {
                    sli,
                    workload: Arc::new(cw.workload),
                    left_out: Some(cw.left_out),
                })
            }
        }
    }
}
