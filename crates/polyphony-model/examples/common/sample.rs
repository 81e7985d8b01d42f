//! The workload sample and random configurations an example runs on, from its command line:
//! a scenario (a TOML file or the built-in scale preset), a workload seed and duration, and
//! configurations drawn from the scenario's default knob space.

use anyhow::{Context, Result};
use polyphony_model::{scenario_input, ModelInput};
use polyphony_spec::{KnobSpace, Nanos, NetworkConfig, Scenario, TopologySpec};
use rand::SeedableRng;
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
}

/// The scenario, the random configurations, the network time and the model input.
pub struct Sample {
    pub scenario: Scenario,
    pub configs: Vec<NetworkConfig>,
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
        let space = KnobSpace::per_class_default(&dscps);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config_seed);
        let configs = (0..self.configs)
            .map(|_| super::random_config(&dscps, &space, &mut rng))
            .collect();
        let duration = self.duration.map_or(scenario.interval(), Nanos::from_secs_f64);
        let input = scenario_input(&scenario, duration, self.seed)?;
        Ok(Sample {
            scenario,
            configs,
            duration,
            input,
        })
    }
}
