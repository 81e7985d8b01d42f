//! The workload sample and random configurations an example runs on, from its command line:
//! a scenario (a TOML file or the built-in scale preset), a workload seed and duration, and
//! configurations drawn from the scenario's default knob space, or with `--scenario-knobs` from
//! the scenario's own (its `buffer` knobs, and a uniformly random choice from each categorical
//! block; a class's buffer or algorithm that is not a knob is the scenario's `initial` one).

use anyhow::{Context, Result};
use polyphony_model::{scenario_input, ModelInput};
use polyphony_spec::{KnobSpace, Nanos, NetworkConfig, Scenario, TopologySpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Command-line arguments that choose the sample.
#[derive(clap::Args)]
pub struct SampleArgs {
    #[arg(long, default_value = "configs/scenarios/reference-medium.toml")]
    pub scenario: String,
    /// Random configurations.
    #[arg(long, default_value_t = 30)]
    pub configs: usize,
    /// Seconds of network time per evaluation (default: the scenario's interval).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seed of the random configurations.
    #[arg(long, default_value_t = 7)]
    pub config_seed: u64,
    /// Override the dumbbell's one-way link delay (µs).
    #[arg(long)]
    pub delay_us: Option<f64>,
    /// Use the built-in 32 × 8 leaf-spine scale scenario instead of `--scenario`.
    #[arg(long)]
    pub scale: bool,
    /// Draw configurations from the scenario's own knob space (buffers, algorithms).
    #[arg(long)]
    pub scenario_knobs: bool,
}

/// The categorical choices of `c` as a label (`AF31=cubic`), empty without categorical knobs.
pub fn choices(space: &KnobSpace, c: &NetworkConfig) -> String {
    space
        .categorical
        .iter()
        .map(|b| {
            let a = c.class(b.dscp).and_then(|k| k.congestion_control.as_ref());
            format!("{}={}", b.dscp.name(), a.map_or("default", |a| a.name()))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The scenario, the random configurations, the network time and the model input.
pub struct Sample {
    pub scenario: Scenario,
    pub configs: Vec<NetworkConfig>,
    /// The space the configurations were drawn from.
    pub space: KnobSpace,
    pub duration: Nanos,
    pub input: ModelInput,
}

impl SampleArgs {
    /// Reads the scenario, draws the configurations and synthesises the workload.
    pub fn load(&self) -> Result<Sample> {
        let mut scenario = if self.scale {
            polyphony_model::scale_scenario()
        } else {
            let text = std::fs::read_to_string(&self.scenario).with_context(|| format!("reading {}", self.scenario))?;
            Scenario::from_toml(&text, &self.scenario)?
        };
        if let (Some(d), TopologySpec::Dumbbell { link_delay_us, .. }) = (self.delay_us, &mut scenario.topology) {
            *link_delay_us = d;
        }
        let dscps = scenario.dscps();
        let space = if self.scenario_knobs {
            scenario.knob_space()
        } else {
            KnobSpace::per_class_default(&dscps)
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config_seed);
        let configs = (0..self.configs)
            .map(|_| {
                let mut c = super::random_config(&dscps, &space, &mut rng);
                if self.scenario_knobs {
                    for k in &mut c.classes {
                        let init = scenario.initial.as_ref().and_then(|i| i.class(k.dscp));
                        if k.buffer.is_none() {
                            k.buffer = init.and_then(|i| i.buffer);
                        }
                        k.congestion_control = match space.categorical.iter().find(|b| b.dscp == k.dscp) {
                            Some(b) => Some(b.congestion_control[rng.gen_range(0..b.congestion_control.len())].clone()),
                            None => init.and_then(|i| i.congestion_control.clone()),
                        };
                    }
                }
                c
            })
            .collect();
        let duration = self.duration.map_or(scenario.interval(), Nanos::from_secs_f64);
        let input = scenario_input(&scenario, duration, self.seed)?;
        Ok(Sample {
            scenario,
            configs,
            space,
            duration,
            input,
        })
    }
}
