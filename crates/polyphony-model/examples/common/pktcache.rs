//! pktsim's outputs for a random case's configurations, cached as JSON under a directory the
//! caller names (one file per set, seed and configuration count), so the expensive reference
//! runs are made once and shared by `validate` and `train_correction`.

use anyhow::{Context, Result};
use polyphony_model::validation::Case;
use polyphony_model::{ModelInput, ModelOutput, NetworkModel, PktSim};
use std::path::{Path, PathBuf};

fn file(dir: &Path, set: &str, c: &Case) -> PathBuf {
    dir.join(format!("{set}-{}-{}.json", c.seed, c.configs.len()))
}

/// pktsim's output for every configuration of `c` (in order) and the thread CPU seconds spent
/// running pktsim (0 when read from the cache). `cache`: the directory to read and write.
pub fn outputs(c: &Case, input: &ModelInput, set: &str, cache: Option<&Path>) -> Result<(Vec<ModelOutput>, f64)> {
    if let Some(dir) = cache {
        let path = file(dir, set, c);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let v: Vec<ModelOutput> =
                serde_json::from_str(&text).with_context(|| format!("parsing {}; delete it", path.display()))?;
            if v.len() == c.configs.len() {
                return Ok((v, 0.0));
            }
        }
    }
    let t0 = super::thread_cpu();
    let mut pkt = Vec::with_capacity(c.configs.len());
    for cfg in &c.configs {
        let o = PktSim::default().evaluate(input, std::slice::from_ref(cfg));
        pkt.push(o.into_iter().next().context("pktsim returned nothing")??);
    }
    let cpu = super::thread_cpu() - t0;
    if let Some(dir) = cache {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = file(dir, set, c);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&pkt)?).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming {}", tmp.display()))?;
    }
    Ok((pkt, cpu))
}

/// The workload seed of window `w` of case `c`: the case's own seed for window 0; for later
/// windows other draws from the same scenario, far outside every seed set.
pub fn window_seed(c: &Case, w: u64) -> u64 {
    if w == 0 {
        c.seed
    } else {
        c.seed ^ 0xa771_7a15_0000_0000u64.wrapping_add((w - 1) << 32)
    }
}

/// Window `w` of case `c` (the scenario's flows drawn from [`window_seed`], ECMP salted as
/// window 0): its model input and pktsim's outputs for every configuration (cached as a case
/// of that seed), with the thread CPU seconds pktsim took.
pub fn window(c: &Case, w: u64, set: &str, cache: Option<&Path>) -> Result<(ModelInput, Vec<ModelOutput>, f64)> {
    let seed = window_seed(c, w);
    let mut input = polyphony_model::scenario_input(&c.scenario, c.duration(), seed)?;
    // `scenario_input` salts ECMP with the workload seed: window 0's salt for every window.
    input.seed = c.seed;
    let drawn = Case { seed, ..c.clone() };
    let (out, cpu) = outputs(&drawn, &input, set, cache)?;
    Ok((input, out, cpu))
}

/// pktsim's outputs over `windows` of case `c` ([`window`]), each class's p99 the median over
/// them ([`super::median_p99`]); a single window gives that window's outputs.
pub fn median_over(
    c: &Case,
    windows: std::ops::Range<u64>,
    set: &str,
    cache: Option<&Path>,
) -> Result<Vec<ModelOutput>> {
    let all: Vec<Vec<ModelOutput>> = windows
        .map(|w| window(c, w, set, cache).map(|(_, o, _)| o))
        .collect::<Result<_>>()?;
    Ok(super::median_p99(&all, &c.scenario.classes))
}
