//! The binary's side of the model crate: the demo's scenario embedded in the binary (so
//! `polyphony demo` runs from any directory), reading scenario files, and the clock the models'
//! time is accounted with. The simulated network and workload windows themselves live in
//! `polyphony_model` ([`polyphony_model::Traffic`], [`polyphony_model::SimulatedNetwork`]).

use anyhow::{anyhow, Context, Result};
use polyphony_spec::Scenario;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The demo's scenario: the reference scenario at medium SLO tightness, time-scaled for the
/// simulators (`configs/scenarios/reference-sim-medium.toml`; its header says why: on the
/// unscaled 100 Mbit/s, 2.5 µs dumbbell no configuration meets the paper's SLOs).
pub const DEMO_SCENARIO: &str = include_str!("../../../configs/scenarios/reference-sim-medium.toml");

/// The embedded demo scenario, parsed.
pub fn demo_scenario() -> Result<Scenario> {
    Scenario::from_toml(DEMO_SCENARIO, "reference-sim-medium.toml (embedded)").map_err(|e| anyhow!("{e}"))
}

/// Reads and validates a scenario file, its size CDFs included (each mix entry names one the
/// binary ships).
pub fn load_scenario(path: &Path) -> Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let s = Scenario::from_toml(&text, &path.display().to_string()).map_err(|e| anyhow!("{e}"))?;
    polyphony_model::mix_cdfs(&s).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(s)
}

/// A monotonic clock in nanoseconds since the first call, for the models' time accounting.
pub fn model_clock() -> polyphony_model::Clock {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    Arc::new(move || start.elapsed().as_nanos() as u64)
}
