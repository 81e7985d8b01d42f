//! One call from a scenario to per-class SLIs: synthesise the scenario's workload (or replay a
//! [`FlowTrace`]), build its topology, run the chosen model under a configuration and report
//! (what `polyphony simulate` prints). Also [`scenario_input`], the model input a scenario's
//! synthetic window gives, [`trace_input`] / [`scenario_trace`] (the replayable trace both ways),
//! and the serde-named [`ModelKind`] every front end selects a model by.
//!
//! Reads no file and no clock: the CDFs are the shipped ones, and the caller times the run.

use crate::correction::Corrected;
use crate::error::ModelError;
use crate::flowsim::FlowSim;
use crate::model::{ModelInput, ModelOutput, NetworkModel};
use crate::pktsim::PktSim;
use crate::synth::{mix_cdfs, synthesize, SynthesisOptions};
use crate::topology::Topology;
use polyphony_spec::{
    Bytes, ClassMix, ClassSli, Dscp, FlowTrace, KnobKind, KnobSpace, LeafSpineSpec, Nanos, NetworkConfig, Packets,
    Scenario, SloKind, TopologySpec, TrafficClass,
};
use std::fmt;
use std::sync::Arc;

/// Which model to run, by the name configs and command lines use (`"flowsim-corrected"`,
/// `"flowsim-aggregate"`, `"pktsim"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum ModelKind {
    /// flowsim with the learned correction compiled into the crate
    /// ([`Corrected`]): the controller's default.
    #[default]
    #[serde(rename = "flowsim-corrected")]
    FlowSimCorrected,
    /// The flow-level model alone (per-class fluid backlogs, uncorrected).
    #[serde(rename = "flowsim-aggregate")]
    FlowSimAggregate,
    /// The packet-level simulator.
    #[serde(rename = "pktsim")]
    PktSim,
}

impl ModelKind {
    /// Every model, in the order names are listed.
    pub const ALL: [ModelKind; 3] = [
        ModelKind::FlowSimCorrected,
        ModelKind::FlowSimAggregate,
        ModelKind::PktSim,
    ];

    /// Parses a model's name ([`ModelKind::as_str`]).
    pub fn parse(s: &str) -> Result<ModelKind, ModelError> {
        ModelKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            ModelError::invalid(
                "model",
                s,
                "use \"flowsim-corrected\", \"flowsim-aggregate\" or \"pktsim\" (flowsim's per-flow mode, \"flowsim\", was retired: flowsim-corrected is more accurate and faster)",
            )
        })
    }
    /// `"flowsim-corrected"`, `"flowsim-aggregate"` or `"pktsim"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::FlowSimCorrected => "flowsim-corrected",
            ModelKind::FlowSimAggregate => "flowsim-aggregate",
            ModelKind::PktSim => "pktsim",
        }
    }

    /// Checks that this model evaluates every configuration a controller may propose from
    /// `start` in `space` for `classes` (objective order): the start itself, and each algorithm
    /// a categorical knob may give its class. Numeric knobs stay inside ranges the spec has
    /// validated; what a model may refuse is an algorithm — one it does not simulate, or (flowsim)
    /// a loss-based one in a class that shares the port buffer with others. A class's own
    /// buffer counts when `start` sets it or a buffer knob tunes it. Run it at load, so such a
    /// space is a configuration error rather than a failed proposal every interval.
    pub fn check_space(self, classes: &[Dscp], space: &KnobSpace, start: &NetworkConfig) -> Result<(), SpaceError> {
        let check = |cfg: &NetworkConfig| -> Result<(), ModelError> {
            match self {
                ModelKind::FlowSimCorrected | ModelKind::FlowSimAggregate => {
                    crate::flowsim::flowsim_params(classes, cfg, &crate::FlowSimOptions::default()).map(|_| ())
                }
                ModelKind::PktSim => crate::model::class_params(classes, cfg).map(|_| ()),
            }
        };
        check(start).map_err(SpaceError::Start)?;
        for (knob, cat) in space.categorical.iter().enumerate() {
            for (choice, algorithm) in cat.congestion_control.iter().enumerate() {
                let mut cfg = start.clone();
                let Some(class) = cfg.classes.iter_mut().find(|c| c.dscp == cat.dscp) else {
                    continue;
                };
                class.congestion_control = Some(algorithm.clone());
                if let Some(b) = space
                    .knobs
                    .iter()
                    .find(|k| k.dscp == cat.dscp && k.kind == KnobKind::Buffer)
                {
                    class.buffer = Some(Bytes(b.min.max(1.0) as u64));
                }
                check(&cfg).map_err(|source| SpaceError::Choice {
                    knob,
                    choice,
                    algorithm: algorithm.name().to_string(),
                    source,
                })?;
            }
        }
        Ok(())
    }

    /// The model itself, with its default options; the corrected model's compiled-in artifact
    /// is parsed here, and a bad one is an error ([`ModelError::Artifact`]).
    pub fn model(self) -> Result<Arc<dyn NetworkModel>, ModelError> {
        Ok(match self {
            ModelKind::FlowSimCorrected => Arc::new(Corrected::shipped()?),
            ModelKind::FlowSimAggregate => Arc::new(FlowSim::default()),
            ModelKind::PktSim => Arc::new(PktSim::default()),
        })
    }
}

/// A configuration a controller may propose that the model refuses ([`ModelKind::check_space`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SpaceError {
    /// The start configuration itself.
    #[error("the start configuration: {0}")]
    Start(#[source] ModelError),
    /// One algorithm a categorical knob may give its class.
    #[error("knobs.categorical[{knob}].congestion_control[{choice}] = {algorithm:?}: {source}")]
    Choice {
        /// Index of the categorical knob in the space.
        knob: usize,
        /// Index of the refused algorithm in the knob's list.
        choice: usize,
        /// The algorithm's kernel name.
        algorithm: String,
        /// The model's refusal.
        #[source]
        source: ModelError,
    },
}

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimulateRequest {
    /// The scenario (topology, classes, mix, phases).
    pub scenario: Scenario,
    /// The configuration; `None` takes the scenario's `initial`, else [`default_config`].
    pub config: Option<NetworkConfig>,
    /// The model.
    pub model: ModelKind,
    /// Network time to draw flows over (`None`: the scenario's interval).
    pub duration: Option<Nanos>,
    /// Flows starting before this are warm-up, left out of the SLIs.
    pub warmup: Nanos,
    /// Workload seed (`None`: the scenario's seed).
    pub seed: Option<u64>,
    /// Keep per-flow outcomes.
    pub keep_flows: bool,
    /// Replay these flows (on the trace's topology, with the trace's ECMP salt) instead of
    /// synthesising the scenario's; the configuration defaults to the trace's.
    pub trace: Option<FlowTrace>,
}

impl SimulateRequest {
    /// A request with every default.
    pub fn new(scenario: Scenario, model: ModelKind) -> SimulateRequest {
        SimulateRequest {
            scenario,
            config: None,
            model,
            duration: None,
            warmup: Nanos(0),
            seed: None,
            keep_flows: false,
            trace: None,
        }
    }

    /// The configuration this request simulates: the explicit one, else the trace's, else the
    /// scenario's `initial`, else [`default_config`].
    pub fn effective_config(&self) -> NetworkConfig {
        let s = &self.scenario;
        self.config
            .clone()
            .or_else(|| self.trace.as_ref().map(|t| t.config.clone()))
            .or_else(|| s.initial.clone())
            .unwrap_or_else(|| default_config(s))
    }

    /// The model input this request simulates (before the measurement window and per-flow
    /// settings): the trace's, else the scenario's synthetic window.
    pub fn input(&self) -> Result<ModelInput, ModelError> {
        let s = &self.scenario;
        match &self.trace {
            Some(t) => trace_input(t),
            None => scenario_input(s, self.duration.unwrap_or(s.interval()), self.seed.unwrap_or(s.seed)),
        }
    }
}

/// The result of [`simulate`]; `Display` renders a per-class table against the SLOs.
#[derive(Debug, Clone)]
pub struct SimulateReport {
    /// Scenario name.
    pub scenario: Scenario,
    /// Model name.
    pub model: &'static str,
    /// The configuration that was simulated.
    pub config: NetworkConfig,
    /// SLIs and counters.
    pub output: ModelOutput,
}

/// Equal weights, K = 30 kB, initcwnd 10 for every class of `scenario` (Linux's initial window;
/// K about 20 packets).
pub fn default_config(scenario: &Scenario) -> NetworkConfig {
    NetworkConfig::uniform(&scenario.dscps(), Bytes(30_000), Packets(10))
}

/// A deliberately poor starting configuration for `scenario`: K = 300 kB and initcwnd 2 for every
/// class, and the class with the tightest objective starved to weight 0.1 (the rest share 0.9
/// equally). The demo and the studies start here so that there is something to repair.
pub fn poor_config(scenario: &Scenario) -> NetworkConfig {
    let dscps = scenario.dscps();
    let n = dscps.len();
    let mut cfg = NetworkConfig::uniform(&dscps, Bytes(300_000), Packets(2));
    if n >= 2 {
        let tight = scenario
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.slo.kind() == SloKind::FctSlowdownP99)
            .min_by(|a, b| a.1.slo.threshold().total_cmp(&b.1.slo.threshold()))
            .map_or(0, |(i, _)| i);
        let small = 0.1;
        for (i, c) in cfg.classes.iter_mut().enumerate() {
            c.weight = if i == tight {
                small
            } else {
                (1.0 - small) / (n - 1) as f64
            };
        }
    }
    cfg
}

/// The model input for `scenario` over `[0, duration)` drawn with `seed` from the shipped CDFs.
pub fn scenario_input(scenario: &Scenario, duration: Nanos, seed: u64) -> Result<ModelInput, ModelError> {
    let topo = Topology::from_spec(&scenario.topology)?;
    let cdfs = mix_cdfs(scenario)?;
    let w = synthesize(scenario, &topo, &cdfs, &SynthesisOptions::new(duration, seed))?;
    let mut input = ModelInput::new(Arc::new(w), Arc::new(topo), scenario.dscps());
    input.seed = seed;
    Ok(input)
}

/// The model input that replays `trace`: its flows on its topology, its classes in the
/// configuration's order, its ECMP salt as the seed.
pub fn trace_input(trace: &FlowTrace) -> Result<ModelInput, ModelError> {
    let topo = Topology::from_spec(&trace.topology)?;
    let classes = trace.config.classes.iter().map(|c| c.dscp).collect();
    let mut input = ModelInput::new(Arc::new(trace.workload.clone()), Arc::new(topo), classes);
    input.seed = trace.ecmp_salt;
    Ok(input)
}

/// The replayable trace of `req`'s workload under `cfg`: the flows the model would see, the
/// scenario's topology and the ECMP salt (the workload seed, as in [`scenario_input`]).
pub fn scenario_trace(req: &SimulateRequest, cfg: &NetworkConfig) -> Result<FlowTrace, ModelError> {
    if let Some(t) = &req.trace {
        return Ok(FlowTrace {
            config: cfg.clone(),
            ..t.clone()
        });
    }
    let input = req.input()?;
    Ok(FlowTrace {
        topology: req.scenario.topology.clone(),
        config: cfg.clone(),
        ecmp_salt: input.seed,
        workload: input.workload.as_ref().clone(),
    })
}

/// Runs `req`: the scenario's per-class SLIs under the configuration with the chosen model.
pub fn simulate(req: &SimulateRequest) -> Result<SimulateReport, ModelError> {
    let s = &req.scenario;
    let cfg = req.effective_config();
    let mut input = req.input()?;
    input.measure_from = req.warmup;
    input.keep_flows = req.keep_flows;
    let model = req.model.model()?;
    let out = model
        .evaluate(&input, std::slice::from_ref(&cfg))
        .pop()
        .unwrap_or_else(|| Err(ModelError::invalid("configs", 0, "the model returned no result")))?;
    Ok(SimulateReport {
        scenario: s.clone(),
        model: model.name(),
        config: cfg,
        output: out,
    })
}

impl fmt::Display for SimulateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = &self.output.stats;
        writeln!(
            f,
            "scenario {} · model {} · {} flows ({} measured, {} unfinished) · last flow done at {}",
            self.scenario.name, self.model, st.flows, st.measured, st.unfinished, st.sim_time,
        )?;
        // The class column fits the longest class name, so the columns stay aligned.
        let w = self
            .scenario
            .classes
            .iter()
            .map(|c| c.name.chars().count())
            .fold(6, usize::max);
        writeln!(
            f,
            "{:<w$} {:>6} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}",
            "class", "weight", "K", "initcwnd", "flows", "p50", "p99", "p99.9", "SLO", "met"
        )?;
        for c in &self.scenario.classes {
            let k = self.config.class(c.dscp);
            let sli = self.output.sli.get(c.dscp);
            let v = sli.and_then(|x| c.slo.sli(x));
            // A class without measured flows has no quantiles: "-", as in the last column.
            let q = |pick: fn(&ClassSli) -> f64| sli.map_or("-".to_string(), |x| format!("{:.2}", pick(x)));
            // The columns are slowdowns: a QCT objective is given on the class's queries line.
            let slo = match c.slo.kind() {
                SloKind::FctSlowdownP99 => format!("{:.1}", c.slo.threshold()),
                SloKind::QctP99 => "QCT".to_string(),
            };
            writeln!(
                f,
                "{:<w$} {:>6.3} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}",
                c.name,
                k.map_or(f64::NAN, |k| k.weight),
                k.map_or(0, |k| k.ecn_threshold.0),
                k.map_or(0, |k| k.init_cwnd.0),
                sli.map_or(0, |x| x.flows),
                q(|x| x.p50),
                q(|x| x.p99),
                q(|x| x.p999),
                slo,
                match v {
                    Some(v) if v <= c.slo.threshold() => "yes",
                    Some(_) => "NO",
                    None => "-",
                }
            )?;
        }
        for c in &self.scenario.classes {
            if let Some(q) = self.output.sli.get(c.dscp).and_then(|x| x.qct) {
                writeln!(
                    f,
                    "{:<w$} queries {} · QCT p50 {:.0} µs · p99 {:.0} µs · p99.9 {:.0} µs · SLO {}",
                    c.name,
                    q.queries,
                    q.p50.0 as f64 / 1e3,
                    q.p99.0 as f64 / 1e3,
                    q.p999.0 as f64 / 1e3,
                    c.slo.describe()
                )?;
            }
        }
        if st.packets > 0 {
            writeln!(
                f,
                "packets {} · marked {} · dropped {} · retransmission timeouts {}",
                st.packets, st.marked, st.dropped, st.timeouts
            )?;
        }
        Ok(())
    }
}

/// A scenario with the paper's three classes AF11, AF21, AF31, each at 20 % load with σ = 2,
/// sizes from the named CDFs and p99 objectives `slos`, on `topology`.
pub fn three_class_scenario(
    name: &str,
    topology: TopologySpec,
    sizes: [&str; 3],
    slos: [f64; 3],
    interval_s: f64,
) -> Scenario {
    let dscps = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
    Scenario {
        name: name.into(),
        description: String::new(),
        seed: 1,
        interval_s,
        topology,
        classes: dscps
            .iter()
            .zip(slos)
            .map(|(&d, v)| TrafficClass::new(d.name(), d, v))
            .collect(),
        mix: dscps
            .iter()
            .zip(sizes)
            .map(|(&dscp, cdf)| ClassMix {
                dscp,
                size_cdf: cdf.into(),
                load: 0.2,
                sigma: 2.0,
                incast: None,
            })
            .collect(),
        phases: vec![],
        initial: None,
        knobs: None,
    }
}

/// The scale study's fabric (the paper's §8.5): 32 racks × 8 hosts, 4 spines, 1 Gbit/s host
/// links and 10 Gbit/s fabric links (no oversubscription), 1 µs per link; WebSearch, Hadoop and
/// cache sizes at 20 % each (60 % load of every host link), σ = 2, each class with its service's
/// rack-to-rack pattern.
pub fn scale_scenario() -> Scenario {
    let topology = TopologySpec::LeafSpine(LeafSpineSpec {
        racks: 32,
        hosts_per_rack: 8,
        spines: 4,
        host_rate_mbps: 1000.0,
        fabric_rate_mbps: 10000.0,
        link_delay_us: 1.0,
    });
    three_class_scenario(
        "scale-32x8",
        topology,
        ["websearch", "meta-hadoop", "meta-cache"],
        [10.0; 3],
        1.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace written and read back replays exactly the synthesised window: same flows, same
    /// paths (ECMP salt), same SLIs from pktsim, on a leaf-spine where the salt matters.
    #[test]
    fn exported_trace_replays_identically() {
        let topology = TopologySpec::LeafSpine(LeafSpineSpec {
            racks: 2,
            hosts_per_rack: 2,
            spines: 2,
            host_rate_mbps: 1000.0,
            fabric_rate_mbps: 1000.0,
            link_delay_us: 2.0,
        });
        let sc = three_class_scenario(
            "t",
            topology,
            ["websearch", "meta-hadoop", "meta-cache"],
            [10.0; 3],
            0.02,
        );
        let mut req = SimulateRequest::new(sc, ModelKind::PktSim);
        req.seed = Some(5);
        let cfg = req.effective_config();
        let direct = simulate(&req).unwrap();
        let text = scenario_trace(&req, &cfg).unwrap().to_text();
        let trace = FlowTrace::parse(&text, "exported").unwrap();
        assert_eq!(trace.ecmp_salt, 5);
        req.trace = Some(trace);
        let replayed = simulate(&req).unwrap();
        assert!(direct.output.stats.flows > 10, "{:?}", direct.output.stats);
        assert_eq!(replayed.output, direct.output);
    }

    /// flowsim refuses a space that may put a class on CUBIC beside others without a buffer
    /// of its own, naming the knob and choice; a start buffer or a buffer knob makes it
    /// modellable, and pktsim simulates it either way.
    #[test]
    fn a_loss_based_choice_needs_a_class_buffer_for_flowsim() {
        use polyphony_spec::{CategoricalSpec, ClassConfig, CongestionControl, KnobSpec, Scale};
        let dscps = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
        let start = NetworkConfig {
            classes: dscps
                .iter()
                .map(|&d| ClassConfig::new(d, 1.0 / 3.0, Bytes(30_000), Packets(10)))
                .collect(),
            port_buffer: None,
        };
        let mut space = KnobSpace::per_class_default(&dscps);
        space.categorical.push(CategoricalSpec {
            dscp: Dscp::AF31,
            congestion_control: vec![
                CongestionControl::new("dctcp").unwrap(),
                CongestionControl::new("cubic").unwrap(),
            ],
        });
        let refused = ModelKind::FlowSimCorrected
            .check_space(&dscps, &space, &start)
            .unwrap_err();
        assert!(
            matches!(&refused, SpaceError::Choice { knob: 0, choice: 1, algorithm, .. } if algorithm == "cubic"),
            "{refused:?}"
        );
        let text = refused.to_string();
        assert!(
            text.contains("categorical[0].congestion_control[1]") && text.contains("own buffer"),
            "{text}"
        );
        assert!(ModelKind::PktSim.check_space(&dscps, &space, &start).is_ok());
        let mut with_buffer = start.clone();
        with_buffer.classes[2].buffer = Some(Bytes(200_000));
        assert!(ModelKind::FlowSimAggregate
            .check_space(&dscps, &space, &with_buffer)
            .is_ok());
        let mut tuned = space.clone();
        tuned.knobs.push(KnobSpec {
            kind: KnobKind::Buffer,
            dscp: Dscp::AF31,
            min: 50_000.0,
            max: 500_000.0,
            scale: Scale::Log,
        });
        assert!(ModelKind::FlowSimCorrected.check_space(&dscps, &tuned, &start).is_ok());
        // The start itself: CUBIC without a buffer, no categorical knob at all.
        let mut cubic = start.clone();
        cubic.classes[0].congestion_control = Some(CongestionControl::new("cubic").unwrap());
        let plain = KnobSpace::per_class_default(&dscps);
        assert!(matches!(
            ModelKind::FlowSimCorrected.check_space(&dscps, &plain, &cubic),
            Err(SpaceError::Start(_))
        ));
    }

    /// Three classes on a 2-sender 1 Gbit/s dumbbell, 10 ms.
    fn small_dumbbell() -> Scenario {
        let topology = TopologySpec::Dumbbell {
            senders: 2,
            rate_mbps: 1000.0,
            link_delay_us: 2.0,
        };
        three_class_scenario(
            "t",
            topology,
            ["websearch", "meta-hadoop", "meta-cache"],
            [10.0; 3],
            0.01,
        )
    }

    /// A class with no flow in the window shows "-" for its quantiles, not NaN.
    #[test]
    fn a_class_without_flows_reads_as_a_dash() {
        let mut sc = small_dumbbell();
        sc.mix[1].load = 1e-9;
        let report = simulate(&SimulateRequest::new(sc, ModelKind::FlowSimAggregate)).unwrap();
        let text = report.to_string();
        assert!(!text.contains("NaN"), "{text}");
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("AF21"))
            .unwrap_or_else(|| panic!("{text}"))
            .split_whitespace()
            .collect();
        assert_eq!(
            (row[4], row[5], row[6], row[7], row[9]),
            ("0", "-", "-", "-", "-"),
            "{text}"
        );
    }

    /// A class name longer than the header's column widens the column: every row's weight ends
    /// where the header's "weight" does.
    #[test]
    fn long_class_names_keep_the_columns_aligned() {
        let mut sc = small_dumbbell();
        sc.classes[1].name = "scavenger-bulk".into();
        let text = simulate(&SimulateRequest::new(sc, ModelKind::FlowSimAggregate))
            .unwrap()
            .to_string();
        let lines: Vec<&str> = text.lines().skip(1).take(4).collect();
        let end = |l: &str| l.find("weight").map(|i| i + "weight".len());
        let header = end(lines[0]).unwrap_or_else(|| panic!("{text}"));
        for row in &lines[1..] {
            // The weight is the second column: the end of its first number after the name.
            let after = row.split_whitespace().nth(1).unwrap_or_else(|| panic!("{text}"));
            let at = row.find(after).map(|i| i + after.len());
            assert_eq!(at, Some(header), "{text}");
        }
    }
}
