//! The command line (clap): every subcommand, its flags and the help text that teaches them.
//!
//! Parsing only; each subcommand's work lives in its own module. Bad arguments become one line
//! naming the flag (see [`one_line`]) and exit code 2.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Polyphony keeps per-class tail-latency objectives (SLOs) in a data-center network.
///
/// Each control iteration it measures every traffic class's p99 flow-completion-time slowdown,
/// asks a fast network model (flowsim) what candidate configurations would do, corrects the
/// model's error with a Gaussian process learned online, and picks the next configuration
/// (scheduling weights, ECN thresholds, initial windows) by Expected Improvement inside a trust
/// region around the best configuration measured so far.
///
/// Start with `polyphony demo`: the closed loop against a built-in packet-level simulated
/// network, no root needed.
#[derive(Debug, Parser)]
#[command(name = "polyphony", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Log filter (tracing env-filter syntax), e.g. `info`, `polyphony=debug`. Overrides RUST_LOG.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller as a long-lived service (what the systemd unit starts).
    ///
    /// Every `interval_s` seconds it gathers per-class SLIs, takes the workload window, asks the
    /// controller for the next configuration (its model: `[model] kind`, flowsim-corrected by
    /// default) and, in `mode = "apply"`, applies it through the configured actuators; in
    /// `mode = "advise"` it only publishes it.
    /// State is kept in `state_dir` and survives restarts (even `kill -9`). Metrics on
    /// `/metrics`, JSON status on `/v1/status` (see docs/operating.md). SIGHUP reloads the
    /// config (an invalid one is refused and the old one kept); SIGTERM stops after the
    /// current iteration.
    Daemon(DaemonArgs),
    /// The closed loop on the reference scenario against a simulated network (no root needed).
    ///
    /// The "live" network is the packet-level simulator (pktsim); the controller's model is
    /// flowsim-corrected. The loop starts from the scenario's `initial` configuration, else a
    /// deliberately poor one (skewed weights, tiny initial windows), prints one line per iteration (per-class p99 vs SLO, objective J, the
    /// prediction ĝ ×÷ e^σ, the controller's reason), reports the iteration from which all SLOs held
    /// for 3 consecutive iterations, and writes a plot.
    Demo(DemoArgs),
    /// Print the per-class SLIs one configuration gives on a scenario, by simulation.
    Simulate(SimulateArgs),
    /// One-shot advice: the configuration the controller would try next, and why. Never applies.
    ///
    /// Either from a daemon's state file (`--state`), or from a daemon config plus past samples,
    /// the SLIs just measured and a workload trace. Prints the measurement it starts from (J and
    /// each class's SLI against its SLO), the configuration, the predicted SLIs, the expected
    /// improvement and the reason; with the actuators of the config it also prints, as a dry
    /// run, the exact commands that would change the network.
    Recommend(RecommendArgs),
    /// Build, inspect or remove the namespace testbed (root): `testbed up|down|status`.
    ///
    /// Three sender namespaces, a switch namespace with an HTB tree and the ECN marker at the
    /// bottleneck, a receiver (docs/testbed.md). Prints JSON.
    Testbed(testbed::TestbedArgs),
    /// Replay a flow trace on the testbed with real TCP flows and measure per-class FCT
    /// slowdowns (root). Prints the per-class summary as JSON.
    Emu(emu::EmuArgs),
    /// Workfeed flow capture: `workfeed agent` (eBPF on a host) or `workfeed aggregator` (per rack).
    Workfeed {
        /// Which part.
        #[command(subcommand)]
        command: workfeed::cli::WorkfeedCommand,
    },
}

/// `polyphony daemon`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// The daemon configuration (TOML; see configs/polyphony.toml).
    #[arg(long, short, value_name = "FILE")]
    pub config: PathBuf,
    /// Validate the configuration, print a summary and exit (0 if valid, 2 if not).
    #[arg(long)]
    pub check: bool,
    /// Stop after this many intervals, each counted whether it completed an iteration, was
    /// skipped or failed (default: run until SIGTERM); at least 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iterations: Option<u64>,
}

/// A network model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// flowsim with the learned correction (the controller's model).
    FlowsimCorrected,
    /// Flow-level model alone, uncorrected.
    FlowsimAggregate,
    /// Packet-level simulator: slower, the reference.
    Pktsim,
}

/// `polyphony demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Control iterations to run at most.
    #[arg(long, short = 'n', default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iterations: u32,
    /// Scenario to run instead of the built-in reference at medium tightness.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Where to write the plot (.svg or .png). A PNG's text is drawn with a TrueType font read
    /// at run time: $POLYPHONY_FONT, else DejaVu Sans (Debian package fonts-dejavu-core) or
    /// another common sans font; without one a PNG is refused before the loop runs. SVG needs none.
    #[arg(long, value_name = "FILE", default_value = "polyphony-demo.svg")]
    pub plot: PathBuf,
    /// Seed of the controller and the simulations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep running after convergence until --iterations (default: stop 3 iterations after).
    #[arg(long)]
    pub full: bool,
    /// Also write every iteration as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seconds of simulated traffic per iteration, in (0, 600]. Default: the scenario's own
    /// `interval_s`; for the built-in reference scenario 60 s (its 12 s interval holds only
    /// ~70 flows of the Hadoop class, so its p99 is nearly its maximum; 60 s gives a steadier
    /// p99 and still runs an iteration in about a second).
    #[arg(long, value_name = "SECONDS")]
    pub measure_s: Option<f64>,
}

/// `polyphony simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Scenario (TOML), e.g. configs/scenarios/reference-medium.toml.
    #[arg(long, value_name = "FILE")]
    pub scenario: PathBuf,
    /// Network configuration (TOML or JSON, a `NetworkConfig`); default: the scenario's
    /// `initial` or equal weights, K = 30 kB, initcwnd 10.
    #[arg(long = "network-config", value_name = "FILE")]
    pub network_config: Option<PathBuf>,
    /// Which model: pktsim, the packet-level reference, by default; the controller's own model
    /// is flowsim-corrected.
    #[arg(long, value_enum, default_value_t = ModelArg::Pktsim)]
    pub model: ModelArg,
    /// Seconds of traffic to simulate (default: the scenario's interval).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Seed of the workload sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Replay this flow trace (written by `--export-trace`) instead of synthesising the
    /// scenario's flows; its topology replaces the scenario's, its configuration is the default.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["duration", "seed"])]
    pub trace: Option<PathBuf>,
    /// Also write the simulated flows, topology and configuration as a replayable trace (the
    /// input of `--trace` and of the ns-3 program in bench/ns3/).
    #[arg(long = "export-trace", value_name = "FILE")]
    pub export_trace: Option<PathBuf>,
}

/// `polyphony recommend`: what it advises from is either a daemon's state (`--state`) or past
/// samples with the SLIs just measured (`--samples` and `--slis`, which need each other).
#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// A daemon state directory or its state.json: advise from everything the daemon learned
    /// (required unless `--samples` and `--slis` are given).
    #[arg(long, value_name = "PATH", required_unless_present_any = ["samples", "slis"])]
    pub state: Option<PathBuf>,
    /// The daemon configuration (classes, SLOs, knobs, model, actuators to dry-run).
    #[arg(long, short, value_name = "FILE")]
    pub config: PathBuf,
    /// Past samples, oldest first (JSON lines, one `{"config": NetworkConfig, "slis": SliVector}`
    /// per line), e.g. `{"config":{"classes":[{"dscp":10,"weight":0.5,"ecn_threshold":30000,
    /// "init_cwnd":10},{"dscp":18,"weight":0.5,"ecn_threshold":30000,"init_cwnd":10}]},
    /// "slis":{"classes":[{"dscp":10,"flows":1200,"p50":1.4,"p99":9.8,"p999":15.0,"mean":2.1},
    /// {"dscp":18,"flows":900,"p50":1.3,"p99":7.5,"p999":12.0,"mean":1.9}]}}` (ecn_threshold
    /// in bytes, init_cwnd in packets, SLIs as p99 FCT slowdowns; a daemon's state.json holds
    /// the same shapes).
    #[arg(long, value_name = "FILE", conflicts_with = "state", requires = "slis")]
    pub samples: Option<PathBuf>,
    /// The SLIs just measured under the last sample's configuration (JSON `SliVector`, the
    /// `slis` shape of `--samples`: `{"classes":[{"dscp":10,"flows":1200,"p50":1.4,"p99":9.8,
    /// "p999":15.0,"mean":2.1}, …]}`).
    #[arg(long, value_name = "FILE", requires = "samples", conflicts_with = "state")]
    pub slis: Option<PathBuf>,
    /// A workload trace (JSON lines, CSV, or a flow trace from `simulate --export-trace`);
    /// default: the config's workload source.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Cli {
    /// Parses `args` (the program name first). A value that looks like a negative number is
    /// taken as the flag's value, so `--iterations -1` is named as a bad value of
    /// `--iterations` rather than reported as an unknown argument `-1`.
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        fn negatives(cmd: clap::Command) -> clap::Command {
            cmd.mut_args(|a| {
                if a.get_action().takes_values() {
                    a.allow_negative_numbers(true)
                } else {
                    a
                }
            })
            .mut_subcommands(negatives)
        }
        let mut cmd = negatives(Cli::command());
        Cli::from_arg_matches_mut(&mut cmd.try_get_matches_from_mut(args)?)
    }
}

/// A clap error as one line: its message with the offending flag, without usage and tips.
pub fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let head: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = head.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg).to_string();
    format!("polyphony: {msg} (see --help)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The JSON examples `recommend --help` gives for `--samples` and `--slis` parse as what
    /// those flags read.
    #[test]
    fn the_recommend_help_examples_parse() {
        let cmd = Cli::command();
        let rec = cmd.find_subcommand("recommend").expect("recommend");
        let example = |flag: &str| -> String {
            let arg = rec.get_arguments().find(|a| a.get_id() == flag).expect("flag");
            let help = arg.get_help().expect("help").to_string();
            let start = help.rfind("`{\"").expect("an example") + 1;
            let len = help[start..].find('`').expect("closing backtick");
            help[start..start + len].replace(
                '…',
                "{\"dscp\":18,\"flows\":900,\"p50\":1.3,\"p99\":7.5,\"p999\":12.0,\"mean\":1.9}",
            )
        };
        let sample: crate::recommend::SampleLine =
            serde_json::from_str(&example("samples")).expect("--samples example");
        sample.config.validate().expect("a valid configuration");
        let slis: polyphony_spec::SliVector = serde_json::from_str(&example("slis")).expect("--slis example");
        assert_eq!(slis, sample.slis);
    }

    #[test]
    fn missing_required_flag_is_named_on_one_line() {
        let e = Cli::try_parse_from(["polyphony", "daemon"]).unwrap_err();
        let l = one_line(&e);
        assert!(l.contains("--config") && !l.contains('\n'), "{l}");
    }

    #[test]
    fn a_negative_number_is_a_bad_value_of_its_flag() {
        let e = Cli::try_parse_args(["polyphony", "demo", "--iterations", "-1"]).unwrap_err();
        let l = one_line(&e);
        assert!(l.contains("--iterations") && l.contains("'-1'"), "{l}");
        // A float flag takes it, for its own range check to name.
        let ok = Cli::try_parse_args(["polyphony", "demo", "--measure-s", "-2"]).unwrap();
        assert!(matches!(ok.command, Command::Demo(d) if d.measure_s == Some(-2.0)));
    }

    #[test]
    fn recommend_names_the_one_flag_missing() {
        let parse = |extra: &[&str]| {
            let base = ["polyphony", "recommend", "-c", "d.toml"];
            Cli::try_parse_from(base.iter().chain(extra))
        };
        let missing = |extra: &[&str]| one_line(&parse(extra).unwrap_err());
        // `--slis` alone lacks only `--samples` (a `--state` would conflict with it).
        let l = missing(&["--slis", "s.json"]);
        assert!(l.contains("--samples") && !l.contains("--state"), "{l}");
        // Neither source: the daemon's state is asked for (`--help` names the alternative).
        let l = missing(&[]);
        assert!(l.contains("--state"), "{l}");
        // `--samples` without the SLIs just measured.
        let l = missing(&["--samples", "p.jsonl"]);
        assert!(l.contains("--slis"), "{l}");
        assert!(parse(&["--state", "/var/lib/polyphony"]).is_ok());
        assert!(parse(&["--samples", "p.jsonl", "--slis", "s.json"]).is_ok());
    }

    #[test]
    fn bad_value_is_named() {
        let e = Cli::try_parse_from(["polyphony", "demo", "--iterations", "zero"]).unwrap_err();
        let l = one_line(&e);
        assert!(l.contains("--iterations") && l.contains("zero"), "{l}");
    }
}
