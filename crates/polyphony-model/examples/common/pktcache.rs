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
