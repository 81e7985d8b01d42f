//! The gradient-boosted forest settings and fit shared by the correction examples
//! (`train_correction`, `size_buckets`): gbdt with no subsampling, so a fit is deterministic.

use gbdt::config::Config;
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;

/// Command-line settings of the forest.
#[derive(clap::Args)]
pub struct ForestArgs {
    /// Boosting rounds (trees).
    #[arg(long, default_value_t = 400)]
    pub trees: usize,
    /// Depth of each tree.
    #[arg(long, default_value_t = 5)]
    pub depth: u32,
    /// Learning rate.
    #[arg(long, default_value_t = 0.05)]
    pub shrinkage: f32,
    /// Fewest samples in a leaf.
    #[arg(long, default_value_t = 20)]
    pub min_leaf: usize,
    /// Loss: `SquaredError` or `LAD` (least absolute deviation).
    #[arg(long, default_value = "LAD")]
    pub loss: String,
}

impl ForestArgs {
    /// An error naming the loss when it is not one gbdt takes.
    pub fn check(&self) -> anyhow::Result<()> {
        if !["SquaredError", "LAD"].contains(&self.loss.as_str()) {
            anyhow::bail!("--loss {}: use SquaredError or LAD", self.loss);
        }
        Ok(())
    }

    /// A forest fitted to `(features, target)` samples.
    pub fn fit<F: AsRef<[f32]>>(&self, samples: &[(F, f32)]) -> GBDT {
        let mut cfg = Config::new();
        cfg.set_feature_size(samples.first().map_or(1, |s| s.0.as_ref().len()));
        cfg.set_max_depth(self.depth);
        cfg.set_iterations(self.trees);
        cfg.set_shrinkage(self.shrinkage);
        cfg.set_min_leaf_size(self.min_leaf);
        cfg.set_loss(&self.loss);
        let mut data: DataVec = samples
            .iter()
            .map(|(f, y)| Data::new_training_data(f.as_ref().to_vec(), 1.0, *y, None))
            .collect();
        let mut model = GBDT::new(&cfg);
        model.fit(&mut data);
        model
    }
}
