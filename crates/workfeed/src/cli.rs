//! Command-line and TOML configuration of `workfeed agent` and `workfeed aggregator`, and the run
//! functions the `polyphony` binary mounts as `polyphony workfeed agent|aggregator`.
//!
//! Every flag can also come from a TOML file (`--config`), with the same names in snake_case;
//! a flag given on the command line wins over the file. Touches what the agent and aggregator
//! touch, plus the files named by the flags (read only, except `--trace-out`).

use crate::agent::{run_agent, AgentConfig, AgentError};
use crate::aggregator::{Aggregator, AggregatorConfig, AggregatorError, UpstreamConfig};
use crate::collector::FlowDirections;
use crate::hosts::HostMap;
use crate::ipfix::{IpfixExporterConfig, DOCUMENTATION_PEN};
use crate::ipfix_udp::IpfixExportConfig;
use crate::jetstream::{NatsAuth, NatsTarget};
use crate::loader::{LoadError, ProbeFilter};
use crate::metrics::{AgentMetrics, AggregatorMetrics};
use crate::sampling::{BadProbability, KeepProbability};
use crate::wire::{AuthKey, KeyError};
use clap::{Args, Subcommand};
use prometheus_client::registry::Registry;
use serde::Deserialize;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// `workfeed agent|aggregator`.
#[derive(Debug, Clone, Subcommand)]
pub enum WorkfeedCommand {
    /// Capture this host's TCP flows with eBPF and send them to an aggregator.
    Agent(Box<AgentArgs>),
    /// Receive flow records from agents, de-duplicate, serve workload windows, forward upstream.
    Aggregator(Box<AggregatorArgs>),
}

/// Flags of `workfeed agent`.
#[derive(Debug, Clone, Default, Args, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentArgs {
    /// TOML file with any of these settings (flags win).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Aggregator address, e.g. 10.0.0.1:7447.
    #[arg(long)]
    pub aggregator: Option<SocketAddr>,
    /// This agent's id (default: derived from the host name).
    #[arg(long, allow_negative_numbers = true)]
    pub agent_id: Option<u32>,
    /// Keep probability of hash-based sampling, in (0, 1].
    #[arg(long, allow_negative_numbers = true)]
    pub sample: Option<f64>,
    /// Records per datagram (1..=1300; default 24, a tagged datagram under a 1500-byte MTU).
    #[arg(long, allow_negative_numbers = true)]
    pub batch_records: Option<usize>,
    /// Longest a record waits before it is sent, milliseconds (default 200).
    #[arg(long, allow_negative_numbers = true)]
    pub flush_ms: Option<u64>,
    /// File holding the shared HMAC-SHA256 key (≥ 16 bytes).
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Capture only connections to these server ports (repeatable).
    #[arg(long = "port", allow_negative_numbers = true)]
    pub ports: Vec<u16>,
    /// Capture only sockets in these network namespaces, given as files such as
    /// /run/netns/NAME (repeatable).
    #[arg(long = "netns")]
    pub netns: Vec<PathBuf>,
    /// Also export every kept record as IPFIX (RFC 7011) to this collector, e.g. an nfcapd
    /// on 127.0.0.1:4739 (repeatable).
    #[arg(long = "ipfix-export")]
    pub ipfix_export: Vec<SocketAddr>,
    /// Private enterprise number of Workfeed's own IPFIX elements (default 32473, the number
    /// reserved for documentation).
    #[arg(long, allow_negative_numbers = true)]
    pub ipfix_enterprise: Option<u32>,
    /// Also (or, without --aggregator, only) publish every datagram to this NATS JetStream
    /// server, e.g. nats://10.0.0.5:4222.
    #[arg(long)]
    pub nats_url: Option<String>,
    /// The JetStream stream (default WORKFEED; created with subjects `<prefix>.>` if absent).
    #[arg(long)]
    pub nats_stream: Option<String>,
    /// Subject prefix (default workfeed); datagrams go to `<prefix>.<source>`.
    #[arg(long)]
    pub nats_subject_prefix: Option<String>,
    /// This publisher's subject token, e.g. the rack (default: `agent-<agent id>`).
    #[arg(long)]
    pub nats_source: Option<String>,
    /// NATS user (with --nats-password-file).
    #[arg(long)]
    pub nats_user: Option<String>,
    /// File holding the NATS user's password.
    #[arg(long)]
    pub nats_password_file: Option<PathBuf>,
    /// File holding a NATS token.
    #[arg(long)]
    pub nats_token_file: Option<PathBuf>,
    /// A NATS credentials file (user JWT and nkey seed).
    #[arg(long)]
    pub nats_credentials_file: Option<PathBuf>,
}

/// Flags of `workfeed aggregator`.
#[derive(Debug, Clone, Default, Args, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AggregatorArgs {
    /// TOML file with any of these settings (flags win).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address to listen on (default 0.0.0.0:7447).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// File holding the shared HMAC-SHA256 key; untagged datagrams are then dropped.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// Further keep probability applied here, in (0, 1].
    #[arg(long, allow_negative_numbers = true)]
    pub sample: Option<f64>,
    /// Keep closed connections this many seconds (default 600).
    #[arg(long, allow_negative_numbers = true)]
    pub retention_s: Option<u64>,
    /// TOML file mapping addresses to host ids (`"198.18.1.2" = 0`).
    #[arg(long)]
    pub hosts: Option<PathBuf>,
    /// Which directions of a connection become flows: `dominant` (one per connection, the
    /// default) or `both`.
    #[arg(long, value_enum)]
    pub directions: Option<FlowDirections>,
    /// Forward accepted records to this upstream aggregator.
    #[arg(long)]
    pub upstream: Option<SocketAddr>,
    /// This aggregator's agent id towards the upstream.
    #[arg(long, allow_negative_numbers = true)]
    pub upstream_id: Option<u32>,
    /// Key file for tagging forwarded datagrams.
    #[arg(long)]
    pub upstream_key_file: Option<PathBuf>,
    /// Every this many seconds, log per-class summaries of the last window (default 10).
    #[arg(long, allow_negative_numbers = true)]
    pub report_s: Option<u64>,
    /// Window length for reports and `--trace-out`, seconds (default 60).
    #[arg(long, allow_negative_numbers = true)]
    pub window_s: Option<u64>,
    /// Rewrite this file with the last window's flows (JSON lines) at every report.
    #[arg(long)]
    pub trace_out: Option<PathBuf>,
    /// Also read IPFIX (RFC 7011) from exporters on this UDP address, e.g. 0.0.0.0:4739.
    #[arg(long)]
    pub ipfix_listen: Option<SocketAddr>,
    /// Export every newly accepted record as IPFIX to this collector (repeatable).
    #[arg(long = "ipfix-export")]
    pub ipfix_export: Vec<SocketAddr>,
    /// Private enterprise number of Workfeed's own IPFIX elements, read and written (default
    /// 32473, the number reserved for documentation).
    #[arg(long, allow_negative_numbers = true)]
    pub ipfix_enterprise: Option<u32>,
}

/// The IPFIX export settings of `destinations` (none: no export).
fn ipfix_export(destinations: &[SocketAddr], domain: u32, enterprise: Option<u32>) -> Option<IpfixExportConfig> {
    (!destinations.is_empty()).then(|| IpfixExportConfig {
        destinations: destinations.to_vec(),
        exporter: IpfixExporterConfig {
            enterprise: enterprise.unwrap_or(DOCUMENTATION_PEN),
            ..IpfixExporterConfig::new(domain)
        },
    })
}

/// A configuration or start-up problem.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file named by an option (the config, the host map, a credential) could not be read or
    /// parsed.
    #[error("{what} {path}: {why}")]
    Config {
        /// Which file it is, e.g. `--hosts file`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// A required setting is missing.
    #[error("missing setting `{0}`: give --{1} or set it in the --config file")]
    Missing(&'static str, &'static str),
    /// A setting (flag or `--config` key) has a value it cannot take.
    #[error("{flag} {value}: {why}")]
    Bad {
        /// The flag, e.g. `--sample`.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what to give instead.
        why: String,
    },
    /// A socket named by a flag could not be bound.
    #[error("{flag} {addr}: cannot listen there: {source}; give a free local address and port (port 0 picks one)")]
    Listen {
        /// The flag, e.g. `--listen`.
        flag: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// Probe / netns problem.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The agent failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The aggregator failed.
    #[error(transparent)]
    Aggregator(#[from] AggregatorError),
    /// Writing the trace failed.
    #[error("writing {0}: {1}")]
    Write(PathBuf, String),
}

fn read_toml<T: for<'de> Deserialize<'de>>(path: &Path, what: &'static str) -> Result<T, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Config {
        what,
        path: path.into(),
        why: e.to_string(),
    })?;
    toml::from_str(&text).map_err(|e| CliError::Config {
        what,
        path: path.into(),
        why: e.to_string(),
    })
}

/// The key in the file `flag` names, if it names one.
fn key(path: Option<&PathBuf>, flag: &'static str) -> Result<Option<AuthKey>, CliError> {
    path.map(|p| {
        AuthKey::from_file(p).map_err(|e: KeyError| CliError::Config {
            what: flag,
            path: p.clone(),
            why: e.to_string(),
        })
    })
    .transpose()
}

/// `p` as a keep probability, or the error naming `flag`.
fn probability(p: f64, flag: &'static str) -> Result<KeepProbability, CliError> {
    KeepProbability::new(p).map_err(|e: BadProbability| CliError::Bad {
        flag,
        value: p.to_string(),
        why: e.to_string(),
    })
}

/// `v` if it is at least 1, or the error naming `flag` and its unit.
fn positive(v: u64, flag: &'static str, unit: &str) -> Result<u64, CliError> {
    if v >= 1 {
        Ok(v)
    } else {
        Err(CliError::Bad {
            flag,
            value: v.to_string(),
            why: format!("give at least 1 {unit}"),
        })
    }
}

impl CliError {
    /// Whether the settings are at fault (exit code 2: nothing ran) rather than the run.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            CliError::Config { .. } | CliError::Missing(..) | CliError::Bad { .. } | CliError::Listen { .. }
        )
    }
}

fn host_agent_id() -> u32 {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    name.trim()
        .bytes()
        .fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

impl AgentArgs {
    /// Merges the `--config` file under the flags.
    pub fn resolve(self) -> Result<AgentArgs, CliError> {
        let Some(path) = self.config.clone() else {
            return Ok(self);
        };
        let file: AgentArgs = read_toml(&path, "--config file")?;
        Ok(AgentArgs {
            config: Some(path),
            aggregator: self.aggregator.or(file.aggregator),
            agent_id: self.agent_id.or(file.agent_id),
            sample: self.sample.or(file.sample),
            batch_records: self.batch_records.or(file.batch_records),
            flush_ms: self.flush_ms.or(file.flush_ms),
            key_file: self.key_file.or(file.key_file),
            ports: if self.ports.is_empty() { file.ports } else { self.ports },
            netns: if self.netns.is_empty() { file.netns } else { self.netns },
            ipfix_export: if self.ipfix_export.is_empty() {
                file.ipfix_export
            } else {
                self.ipfix_export
            },
            ipfix_enterprise: self.ipfix_enterprise.or(file.ipfix_enterprise),
            nats_url: self.nats_url.or(file.nats_url),
            nats_stream: self.nats_stream.or(file.nats_stream),
            nats_subject_prefix: self.nats_subject_prefix.or(file.nats_subject_prefix),
            nats_source: self.nats_source.or(file.nats_source),
            nats_user: self.nats_user.or(file.nats_user),
            nats_password_file: self.nats_password_file.or(file.nats_password_file),
            nats_token_file: self.nats_token_file.or(file.nats_token_file),
            nats_credentials_file: self.nats_credentials_file.or(file.nats_credentials_file),
        })
    }

    /// The JetStream target these settings describe, if any.
    fn nats(&self, agent_id: u32) -> Result<Option<(NatsTarget, String)>, CliError> {
        let Some(url) = &self.nats_url else {
            return Ok(None);
        };
        let first_line = |p: &PathBuf| {
            std::fs::read_to_string(p)
                .map(|t| t.lines().next().unwrap_or("").trim().to_string())
                .map_err(|e| CliError::Config {
                    what: "NATS credential file",
                    path: p.clone(),
                    why: e.to_string(),
                })
        };
        let auth = match (
            &self.nats_user,
            &self.nats_password_file,
            &self.nats_token_file,
            &self.nats_credentials_file,
        ) {
            (Some(user), Some(p), None, None) => NatsAuth::UserPassword {
                user: user.clone(),
                password: first_line(p)?,
            },
            (None, None, Some(t), None) => NatsAuth::Token(first_line(t)?),
            (None, None, None, Some(c)) => NatsAuth::CredentialsFile(c.clone()),
            (None, None, None, None) => NatsAuth::None,
            _ => {
                return Err(CliError::Missing(
                    "one NATS authentication",
                    "nats-user with --nats-password-file, or --nats-token-file, or --nats-credentials-file,",
                ))
            }
        };
        let mut t = NatsTarget::new(url.clone());
        t.auth = auth;
        if let Some(s) = &self.nats_stream {
            t.stream = s.clone();
        }
        if let Some(p) = &self.nats_subject_prefix {
            t.prefix = p.clone();
        }
        let source = self.nats_source.clone().unwrap_or_else(|| format!("agent-{agent_id}"));
        Ok(Some((t, source)))
    }

    /// The agent configuration and probe filter these settings describe.
    pub fn to_config(&self) -> Result<(AgentConfig, ProbeFilter), CliError> {
        let agent_id = self.agent_id.unwrap_or_else(host_agent_id);
        let nats = self.nats(agent_id)?;
        let aggregator = match (self.aggregator, &nats) {
            (None, None) => return Err(CliError::Missing("aggregator", "aggregator (or --nats-url)")),
            (a, _) => a,
        };
        let mut cfg = AgentConfig::new(agent_id, SocketAddr::from(([127, 0, 0, 1], 0)));
        cfg.aggregator = aggregator;
        cfg.jetstream = nats;
        if let Some(p) = self.sample {
            cfg.sample = probability(p, "--sample")?;
        }
        if let Some(n) = self.batch_records {
            if !(1..=crate::wire::MAX_RECORDS).contains(&n) {
                return Err(CliError::Bad {
                    flag: "--batch-records",
                    value: n.to_string(),
                    why: format!("a datagram holds 1..={} records", crate::wire::MAX_RECORDS),
                });
            }
            cfg.batch_records = n;
        }
        if let Some(ms) = self.flush_ms {
            cfg.flush_interval = Duration::from_millis(positive(ms, "--flush-ms", "millisecond")?);
        }
        cfg.key = key(self.key_file.as_ref(), "--key-file")?;
        cfg.ipfix = ipfix_export(&self.ipfix_export, cfg.agent_id, self.ipfix_enterprise);
        let netns_inodes = self
            .netns
            .iter()
            .map(|p| ProbeFilter::netns_inode(p))
            .collect::<Result<_, _>>()?;
        Ok((
            cfg,
            ProbeFilter {
                server_ports: self.ports.clone(),
                netns_inodes,
            },
        ))
    }
}

impl AggregatorArgs {
    /// Merges the `--config` file under the flags.
    pub fn resolve(self) -> Result<AggregatorArgs, CliError> {
        let Some(path) = self.config.clone() else {
            return Ok(self);
        };
        let f: AggregatorArgs = read_toml(&path, "--config file")?;
        Ok(AggregatorArgs {
            config: Some(path),
            listen: self.listen.or(f.listen),
            key_file: self.key_file.or(f.key_file),
            sample: self.sample.or(f.sample),
            retention_s: self.retention_s.or(f.retention_s),
            hosts: self.hosts.or(f.hosts),
            directions: self.directions.or(f.directions),
            upstream: self.upstream.or(f.upstream),
            upstream_id: self.upstream_id.or(f.upstream_id),
            upstream_key_file: self.upstream_key_file.or(f.upstream_key_file),
            report_s: self.report_s.or(f.report_s),
            window_s: self.window_s.or(f.window_s),
            trace_out: self.trace_out.or(f.trace_out),
            ipfix_listen: self.ipfix_listen.or(f.ipfix_listen),
            ipfix_export: if self.ipfix_export.is_empty() {
                f.ipfix_export
            } else {
                self.ipfix_export
            },
            ipfix_enterprise: self.ipfix_enterprise.or(f.ipfix_enterprise),
        })
    }

    /// The aggregator configuration these settings describe.
    pub fn to_config(&self) -> Result<AggregatorConfig, CliError> {
        let listen = self.listen.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 7447)));
        let mut cfg = AggregatorConfig::new(listen);
        cfg.key = key(self.key_file.as_ref(), "--key-file")?;
        if let Some(p) = self.sample {
            cfg.sample = probability(p, "--sample")?;
        }
        if let Some(s) = self.retention_s {
            cfg.retention = Duration::from_secs(positive(s, "--retention-s", "second")?);
        }
        for (v, flag) in [(self.report_s, "--report-s"), (self.window_s, "--window-s")] {
            if let Some(v) = v {
                positive(v, flag, "second")?;
            }
        }
        if let Some(h) = &self.hosts {
            cfg.hosts = read_toml::<HostMap>(h, "--hosts file")?;
        }
        if let Some(d) = self.directions {
            cfg.directions = d;
        }
        if let Some(addr) = self.upstream {
            cfg.upstream = Some(UpstreamConfig {
                addr,
                id: self.upstream_id.unwrap_or_else(host_agent_id),
                key: key(self.upstream_key_file.as_ref(), "--upstream-key-file")?,
            });
        }
        cfg.ipfix_listen = self.ipfix_listen;
        if let Some(e) = self.ipfix_enterprise {
            cfg.ipfix_enterprise = e;
        }
        cfg.ipfix_export = ipfix_export(
            &self.ipfix_export,
            self.upstream_id.unwrap_or_else(host_agent_id),
            self.ipfix_enterprise,
        );
        Ok(cfg)
    }
}

/// Runs `workfeed agent` until `shutdown`; its counters go into `registry`.
pub async fn run_agent_command(
    args: AgentArgs,
    registry: &mut Registry,
    shutdown: impl Future<Output = ()>,
) -> Result<(), CliError> {
    let (cfg, filter) = args.resolve()?.to_config()?;
    let metrics = AgentMetrics::default();
    metrics.register(registry);
    run_agent(cfg, filter, metrics, shutdown).await?;
    Ok(())
}

/// Binds `workfeed aggregator` (so the caller can query windows through the returned handle)
/// and returns it with the future that serves until `shutdown`.
pub async fn start_aggregator_command(
    args: AggregatorArgs,
    registry: &mut Registry,
) -> Result<(Aggregator, AggregatorArgs), CliError> {
    let args = args.resolve()?;
    let cfg = args.to_config()?;
    let metrics = AggregatorMetrics::default();
    metrics.register(registry);
    // The trace is written at every report: find out now if it cannot be, not at the first.
    if let Some(p) = &args.trace_out {
        std::fs::write(p, "").map_err(|e| CliError::Bad {
            flag: "--trace-out",
            value: p.display().to_string(),
            why: format!("cannot write it: {e}; name a file in a writable directory"),
        })?;
    }
    let (listen, ipfix) = (cfg.listen, cfg.ipfix_listen);
    let agg = Aggregator::bind(cfg, metrics).await.map_err(|e| match e {
        AggregatorError::Io { addr, source } if addr == listen || Some(addr) == ipfix => CliError::Listen {
            flag: if addr == listen { "--listen" } else { "--ipfix-listen" },
            addr,
            source,
        },
        other => CliError::Aggregator(other),
    })?;
    Ok((agg, args))
}

/// Runs `workfeed aggregator` until `shutdown`, logging per-class summaries every `report_s`
/// and rewriting `trace_out` with the last window.
pub async fn run_aggregator_command(
    args: AggregatorArgs,
    registry: &mut Registry,
    shutdown: impl Future<Output = ()>,
) -> Result<(), CliError> {
    let (agg, args) = start_aggregator_command(args, registry).await?;
    tracing::info!(listen = ?agg.local_addr().ok(), "Workfeed aggregator listening");
    if let Some(addr) = agg.ipfix_addr() {
        tracing::info!(listen = ?addr.ok(), "reading IPFIX from exporters");
    }
    let report = Duration::from_secs(args.report_s.unwrap_or(10).max(1));
    let window = Duration::from_secs(args.window_s.unwrap_or(60).max(1));
    let reporter = {
        let agg = agg.clone();
        let out = args.trace_out.clone();
        async move {
            let mut tick = tokio::time::interval(report);
            tick.tick().await;
            loop {
                tick.tick().await;
                match agg.window(window) {
                    Ok(w) => {
                        for c in &w.classes {
                            tracing::info!(
                                dscp = c.dscp.value(),
                                flows = c.flows,
                                arrivals_per_s = c.arrival_rate_per_s,
                                load_mbps = c.load.as_mbps(),
                                mean_size = c.mean_size,
                                "workload window"
                            );
                        }
                        if let Some(p) = &out {
                            if let Err(e) = std::fs::write(p, w.workload.to_jsonl()) {
                                return Err::<(), _>(CliError::Write(p.clone(), e.to_string()));
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "building the workload window failed"),
                }
            }
        }
    };
    tokio::pin!(shutdown);
    tokio::select! {
        r = agg.serve(&mut shutdown) => r?,
        r = reporter => r?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: WorkfeedCommand,
    }

    fn parse(args: &[&str]) -> WorkfeedCommand {
        Cli::try_parse_from(std::iter::once("workfeed").chain(args.iter().copied()))
            .unwrap()
            .cmd
    }

    #[test]
    fn flags_win_over_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.toml");
        std::fs::write(&file, "aggregator = \"10.0.0.1:7447\"\nsample = 0.5\nports = [7100]\n").unwrap();
        let WorkfeedCommand::Agent(a) = parse(&["agent", "--config", file.to_str().unwrap(), "--sample", "0.25"])
        else {
            panic!("agent expected")
        };
        let (cfg, filter) = a.resolve().unwrap().to_config().unwrap();
        assert_eq!(cfg.aggregator, Some("10.0.0.1:7447".parse().unwrap()));
        assert_eq!(cfg.sample.get(), 0.25);
        assert_eq!(filter.server_ports, vec![7100]);
    }

    #[test]
    fn bad_settings_say_what_to_do() {
        let WorkfeedCommand::Agent(a) = parse(&["agent"]) else {
            panic!()
        };
        let e = a.resolve().unwrap().to_config().unwrap_err().to_string();
        assert!(e.contains("--aggregator"), "{e}");
        let WorkfeedCommand::Agent(a) = parse(&["agent", "--aggregator", "127.0.0.1:1", "--sample", "2"]) else {
            panic!()
        };
        let e = a.to_config().unwrap_err().to_string();
        assert!(e.contains("outside (0, 1]"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agg.toml");
        std::fs::write(&file, "listen = \"0.0.0.0:7447\"\nretention = 5\n").unwrap();
        let WorkfeedCommand::Aggregator(g) = parse(&["aggregator", "--config", file.to_str().unwrap()]) else {
            panic!()
        };
        let e = g.resolve().unwrap_err().to_string();
        assert!(e.contains("agg.toml") && e.contains("retention"), "{e}");
        let key = dir.path().join("key");
        std::fs::write(&key, "short").unwrap();
        let WorkfeedCommand::Aggregator(g) = parse(&["aggregator", "--key-file", key.to_str().unwrap()]) else {
            panic!()
        };
        let e = g.to_config().unwrap_err();
        assert!(e.is_usage(), "{e}");
        let e = e.to_string();
        assert!(e.starts_with("--key-file ") && e.contains("at least 16"), "{e}");
        // Each file is named as the option that gave it.
        let WorkfeedCommand::Aggregator(g) = parse(&["aggregator", "--config", file.to_str().unwrap()]) else {
            panic!()
        };
        let e = g.resolve().unwrap_err().to_string();
        assert!(e.starts_with("--config file ") && e.contains("agg.toml"), "{e}");
        let hosts = dir.path().join("hosts.txt");
        std::fs::write(&hosts, "bogus").unwrap();
        let WorkfeedCommand::Aggregator(g) = parse(&["aggregator", "--hosts", hosts.to_str().unwrap()]) else {
            panic!()
        };
        let e = g.to_config().unwrap_err().to_string();
        assert!(e.starts_with("--hosts file ") && e.contains("hosts.txt"), "{e}");
    }

    #[test]
    fn a_value_a_setting_cannot_take_is_named_with_its_flag() {
        for (args, start) in [
            (
                &["agent", "--aggregator", "127.0.0.1:1", "--sample", "0"][..],
                "--sample 0:",
            ),
            (
                &["agent", "--aggregator", "127.0.0.1:1", "--batch-records", "0"],
                "--batch-records 0:",
            ),
            (
                &["agent", "--aggregator", "127.0.0.1:1", "--batch-records", "5000"],
                "--batch-records 5000:",
            ),
            (
                &["agent", "--aggregator", "127.0.0.1:1", "--flush-ms", "0"],
                "--flush-ms 0:",
            ),
        ] {
            let WorkfeedCommand::Agent(a) = parse(args) else {
                panic!("agent expected")
            };
            let e = a.to_config().unwrap_err();
            assert!(e.is_usage() && e.to_string().starts_with(start), "{args:?}: {e}");
        }
        for (args, start) in [
            (&["aggregator", "--retention-s", "0"][..], "--retention-s 0:"),
            (&["aggregator", "--report-s", "0"], "--report-s 0:"),
            (&["aggregator", "--window-s", "0"], "--window-s 0:"),
        ] {
            let WorkfeedCommand::Aggregator(g) = parse(args) else {
                panic!("aggregator expected")
            };
            let e = g.to_config().unwrap_err();
            assert!(e.is_usage() && e.to_string().starts_with(start), "{args:?}: {e}");
        }
    }

    #[tokio::test]
    async fn a_socket_that_cannot_be_bound_or_a_trace_that_cannot_be_written_names_its_flag() {
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        for (args, start) in [
            (vec!["aggregator", "--listen", addr.as_str()], "--listen "),
            (
                vec!["aggregator", "--listen", "127.0.0.1:0", "--ipfix-listen", addr.as_str()],
                "--ipfix-listen ",
            ),
            (
                vec![
                    "aggregator",
                    "--listen",
                    "127.0.0.1:0",
                    "--trace-out",
                    "/nonexistent/t.jsonl",
                ],
                "--trace-out /nonexistent/t.jsonl: cannot write it",
            ),
        ] {
            let WorkfeedCommand::Aggregator(g) = parse(&args) else {
                panic!("aggregator expected")
            };
            let e = start_aggregator_command(*g, &mut Registry::default())
                .await
                .unwrap_err();
            assert!(e.is_usage() && e.to_string().starts_with(start), "{args:?}: {e}");
        }
    }

    #[test]
    fn a_negative_number_is_named_as_its_flags_bad_value() {
        for (args, flag) in [
            (["aggregator", "--retention-s", "-5"], "--retention-s"),
            (["agent", "--flush-ms", "-1"], "--flush-ms"),
        ] {
            let e = Cli::try_parse_from(std::iter::once("workfeed").chain(args))
                .err()
                .expect("refused");
            let e = e.to_string();
            assert!(
                e.contains(flag) && e.contains(args[2]) && !e.contains("unexpected argument"),
                "{e}"
            );
        }
    }
}
