//! An m3-style learned correction of flowsim: flowsim predicts each class's
//! slowdowns, and a forest of regression trees trained on pktsim runs predicts, per class,
//! ln(p99_pktsim / p99_flowsim) from what the controller has at run time — the workload window
//! (per class: flow count, size quantiles, share of the bytes, burstiness), the topology (kind,
//! host rate, base RTT, bandwidth-delay product), the offered utilisation of the links flowsim
//! simulates, the configuration's knobs and flowsim's own per-class output. [`Corrected`] is the
//! resulting [`NetworkModel`]; its p99 (and p99.9) are flowsim's times the predicted factor.
//!
//! **Artifact.** A [`Correction`] is parsed from bytes the caller passes ([`Correction::parse`])
//! or from the one compiled into the crate ([`Correction::shipped`],
//! `models/correction/flowsim-aggregate.forest`, made by `examples/train_correction.rs`). Its
//! text starts with `# polyphony-correction <version>`, then `# key: value` header lines (the
//! training command, the data's seed range, the feature list) and one JSON line with the trees.
//! A wrong version, a feature list other than [`FEATURES`], or a malformed tree is a
//! [`ModelError::Artifact`] at parse time; nothing falls back to uncorrected flowsim.
//!
//! The window's features are computed once per workload window, with flowsim's plan
//! (`flowsim/cache.rs`); per configuration the correction costs one forest evaluation per class.

use crate::error::ModelError;
use crate::flowsim::FlowSim;
use crate::model::{ClassParams, ModelInput, ModelOutput, NetworkModel};
use crate::topology::{Shape, MSS};
use polyphony_spec::{NetworkConfig, SliVector};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// The artifact format version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: &str = "# polyphony-correction ";

/// Window features: the topology and the whole workload window.
const WINDOW_FEATURES: [&str; 16] = [
    "leaf_spine",
    "log10_host_gbps",
    "log10_base_rtt_us",
    "log10_bdp_packets",
    "classes",
    "max_link_util",
    "mean_link_util",
    "log10_flows",
    "log10_hosts",
    "max_sender_nic_util",
    "max_receiver_link_util",
    "log10_fabric_per_host_rate",
    "inter_rack_byte_share",
    "log10_default_buffer_per_bdp",
    "peak_link_util",
    "log10_senders",
];
/// Class features: one class of the window.
const CLASS_FEATURES: [&str; 15] = [
    "class_max_link_util",
    "class_own_link_util",
    "class_byte_share",
    "log10_class_flows",
    "log10_size_p50",
    "log10_size_p90",
    "log10_size_p99",
    "log10_size_mean",
    "interarrival_cv",
    "single_packet_share",
    "size_cv",
    "log10_size_p99_per_bdp",
    "byte_share_above_bdp",
    "class_max_sender_nic_util",
    "class_peak_link_util",
];
/// Configuration features: the knobs and flowsim's output under them.
const CONFIG_FEATURES: [&str; 19] = [
    "weight",
    "log10_weight_per_byte_share",
    "log10_k_per_bdp",
    "log10_init_cwnd",
    "log10_init_cwnd_per_bdp",
    "weight_rank",
    "ln_fs_p50",
    "ln_fs_p99",
    "ln_fs_p999",
    "ln_fs_mean",
    "ln_fs_p99_per_p50",
    "ln_fs_max_p99",
    "ln_fs_p99_minus_mean_classes",
    "log10_sum_k_per_bdp",
    "log10_max_init_cwnd_per_bdp",
    "byte_share_of_heavier_classes",
    "ln_own_util_per_weight",
    "log10_sum_k_per_buffer",
    "log10_burst_per_buffer",
];

/// Number of features.
pub const N_FEATURES: usize = WINDOW_FEATURES.len() + CLASS_FEATURES.len() + CONFIG_FEATURES.len();

/// The features, in the order the forest indexes them: window, class, configuration.
pub const FEATURES: [&str; N_FEATURES] = {
    let mut out = [""; N_FEATURES];
    let mut i = 0;
    while i < WINDOW_FEATURES.len() {
        out[i] = WINDOW_FEATURES[i];
        i += 1;
    }
    let mut j = 0;
    while j < CLASS_FEATURES.len() {
        out[i + j] = CLASS_FEATURES[j];
        j += 1;
    }
    let mut k = 0;
    while k < CONFIG_FEATURES.len() {
        out[i + j + k] = CONFIG_FEATURES[k];
        k += 1;
    }
    out
};

/// Largest |ln factor| applied (a factor of e³ ≈ 20 either way).
const MAX_LN_FACTOR: f32 = 3.0;

/// The port buffer a configuration without one gets (pktsim's default).
const DEFAULT_BUFFER: f64 = 1e6;

/// The configuration-independent features of a workload window.
#[derive(Debug, Clone)]
pub(crate) struct WindowFeatures {
    window: [f32; WINDOW_FEATURES.len()],
    classes: Vec<[f32; CLASS_FEATURES.len()]>,
    bdp_bytes: f64,
    senders: f64,
}

/// Per simulated link: its rate (bit/s), the wire bytes each class offers on it, and the most
/// each class (and all together) offers within one slice of the window.
pub(crate) struct LinkLoad {
    pub rate_bps: f64,
    pub class_bytes: Vec<f64>,
    pub class_peak_bytes: Vec<f64>,
    pub peak_bytes: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn l10(x: f64) -> f64 {
    x.max(1e-9).log10()
}

impl WindowFeatures {
    /// Features of `input`'s window; `links`: the links flowsim simulates, with their loads.
    pub(crate) fn new(input: &ModelInput, links: &[LinkLoad]) -> WindowFeatures {
        let topo = &input.topology;
        let flows = &input.workload.flows;
        let nc = input.classes.len();
        let span_ns = (input.workload.duration.0 as f64).max(1.0);
        let span_s = span_ns * 1e-9;
        let tl = topo.links();
        let hosts = topo.hosts() as usize;
        let mut rtts = Vec::with_capacity(flows.len());
        let mut rates = Vec::with_capacity(flows.len());
        let mut sizes: Vec<Vec<f64>> = vec![Vec::new(); nc];
        let mut starts: Vec<Vec<f64>> = vec![Vec::new(); nc];
        // Per host: bytes sent (all classes, and per class) and received.
        let mut sent = vec![0.0f64; hosts];
        let mut class_sent = vec![vec![0.0f64; hosts]; nc];
        let mut recv = vec![0.0f64; hosts];
        let mut inter = 0.0f64;
        for f in flows {
            let Some(ci) = input.classes.iter().position(|&d| d == f.dscp) else {
                continue;
            };
            let ideal = topo.ideal(f.src, f.dst);
            rtts.push(ideal.base_rtt.0 as f64);
            rates.push(ideal.bottleneck.0 as f64);
            let b = f.size.0 as f64;
            sizes[ci].push(b);
            starts[ci].push(f.start.0 as f64);
            let (s, d) = (f.src.0 as usize, f.dst.0 as usize);
            if s < hosts && d < hosts {
                sent[s] += b;
                class_sent[ci][s] += b;
                recv[d] += b;
                if topo.rack_of(f.src) != topo.rack_of(f.dst) {
                    inter += b;
                }
            }
        }
        // A host's NIC: its up link (2h); its receiving link: 2h + 1.
        let cap = |l: usize| tl.get(l).map_or(1.0, |k| k.rate.0 as f64 / 8.0 * span_s).max(1e-9);
        let nic_util = |v: &[f64]| (0..hosts).map(|h| v[h] / cap(2 * h)).fold(0.0, f64::max);
        let max_nic = nic_util(&sent);
        let max_recv = (0..hosts).map(|h| recv[h] / cap(2 * h + 1)).fold(0.0, f64::max);
        let senders = sent.iter().filter(|&&x| x > 0.0).count() as f64;
        rtts.sort_by(f64::total_cmp);
        rates.sort_by(f64::total_cmp);
        let rtt = quantile(&rtts, 0.5).max(1.0);
        let rate = quantile(&rates, 0.5).max(1.0);
        let bdp_bytes = (rate / 8.0 * rtt * 1e-9).max(1.0);
        let mut max_util = 0.0f64;
        let mut sum_util = 0.0;
        let mut peak_util = 0.0f64;
        let mut class_max = vec![0.0f64; nc];
        let mut class_own = vec![0.0f64; nc];
        let mut class_peak = vec![0.0f64; nc];
        let bin_s = span_s / crate::flowsim::PEAK_BINS as f64;
        for l in links {
            let cap = l.rate_bps / 8.0 * span_s;
            let bin_cap = l.rate_bps / 8.0 * bin_s;
            let total: f64 = l.class_bytes.iter().sum::<f64>() / cap;
            max_util = max_util.max(total);
            sum_util += total;
            peak_util = peak_util.max(l.peak_bytes / bin_cap);
            for (c, &b) in l.class_bytes.iter().enumerate() {
                if b > 0.0 {
                    class_max[c] = class_max[c].max(total);
                    class_own[c] = class_own[c].max(b / cap);
                    class_peak[c] = class_peak[c].max(l.class_peak_bytes.get(c).copied().unwrap_or(0.0) / bin_cap);
                }
            }
        }
        let total_bytes: f64 = sizes.iter().flatten().sum::<f64>().max(1.0);
        let (leaf, fabric_per_host) = match topo.shape() {
            Shape::LeafSpine { .. } => {
                let host = tl.first().map_or(1.0, |k| k.rate.0 as f64);
                let fabric = tl.get(2 * hosts).map_or(host, |k| k.rate.0 as f64);
                (true, fabric / host.max(1.0))
            }
            Shape::Dumbbell { .. } => (false, 1.0),
        };
        let window = [
            f64::from(u8::from(leaf)),
            l10(rate / 1e9),
            l10(rtt / 1e3),
            l10(bdp_bytes / (MSS as f64)),
            nc as f64,
            max_util,
            sum_util / links.len().max(1) as f64,
            l10(flows.len() as f64),
            l10(f64::from(topo.hosts())),
            max_nic,
            max_recv,
            l10(fabric_per_host),
            inter / total_bytes,
            l10(DEFAULT_BUFFER / bdp_bytes),
            peak_util,
            l10(senders.max(1.0)),
        ]
        .map(|x| x as f32);
        let classes = (0..nc)
            .map(|c| {
                let s = &mut sizes[c];
                s.sort_by(f64::total_cmp);
                let n = s.len() as f64;
                let bytes: f64 = s.iter().sum();
                let mean = bytes / n.max(1.0);
                let sd = (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n.max(1.0)).sqrt();
                let gaps: Vec<f64> = starts[c].windows(2).map(|w| w[1] - w[0]).collect();
                let cv = if gaps.len() > 1 {
                    let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
                    let v = gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64;
                    if m > 0.0 {
                        v.sqrt() / m
                    } else {
                        0.0
                    }
                } else {
                    0.0
                };
                let above: f64 = s.iter().filter(|&&x| x > bdp_bytes).sum();
                [
                    class_max[c],
                    class_own[c],
                    bytes / total_bytes,
                    l10(n.max(1.0)),
                    l10(quantile(s, 0.5)),
                    l10(quantile(s, 0.9)),
                    l10(quantile(s, 0.99)),
                    l10(mean),
                    cv,
                    s.iter().filter(|&&x| x <= MSS as f64).count() as f64 / n.max(1.0),
                    if mean > 0.0 { sd / mean } else { 0.0 },
                    l10(quantile(s, 0.99) / bdp_bytes),
                    above / bytes.max(1.0),
                    nic_util(&class_sent[c]),
                    class_peak[c],
                ]
                .map(|x| x as f32)
            })
            .collect();
        WindowFeatures {
            window,
            classes,
            bdp_bytes,
            senders: senders.max(1.0),
        }
    }

    /// The feature vector of class `ci` (input class order) under `params` (port buffer
    /// `buffer` bytes), given flowsim's output `sli`; `None` when flowsim has no statistics for
    /// the class.
    pub(crate) fn features(
        &self,
        input: &ModelInput,
        params: &[ClassParams],
        buffer: f64,
        sli: &SliVector,
        ci: usize,
    ) -> Option<[f32; N_FEATURES]> {
        let s = sli.get(*input.classes.get(ci)?)?;
        let p = params.get(ci)?;
        let cl = self.classes.get(ci)?;
        let ln = |x: f64| x.max(1e-9).ln();
        let p99s: Vec<f64> = sli.classes.iter().map(|c| ln(c.p99)).collect();
        let max_p99 = p99s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mean_p99 = p99s.iter().sum::<f64>() / p99s.len().max(1) as f64;
        let rank = params.iter().filter(|q| q.weight < p.weight).count() as f64 / params.len().max(1) as f64;
        let sum_k: f64 = params.iter().map(|q| q.ecn_k as f64).sum();
        let max_icw = params.iter().map(|q| q.init_cwnd).max().unwrap_or(0);
        let heavier: f64 = params
            .iter()
            .zip(&self.classes)
            .enumerate()
            .filter(|&(j, (q, _))| j != ci && q.weight >= p.weight)
            .map(|(_, (_, c))| f64::from(c[2]))
            .sum();
        let knobs = [
            p.weight,
            l10(p.weight / f64::from(cl[2]).max(1e-6)),
            l10(p.ecn_k as f64 / self.bdp_bytes),
            l10(f64::from(p.init_cwnd)),
            l10(f64::from(p.init_cwnd) * MSS as f64 / self.bdp_bytes),
            rank,
            ln(s.p50),
            ln(s.p99),
            ln(s.p999),
            ln(s.mean),
            ln(s.p99) - ln(s.p50),
            max_p99,
            ln(s.p99) - mean_p99,
            l10(sum_k / self.bdp_bytes),
            l10(f64::from(max_icw) * MSS as f64 / self.bdp_bytes),
            heavier,
            ln(f64::from(cl[1]).max(1e-6) / p.weight.max(1e-6)),
            l10(sum_k / buffer.max(1.0)),
            l10(self.senders * f64::from(max_icw) * MSS as f64 / buffer.max(1.0)),
        ];
        let mut f = [0f32; N_FEATURES];
        let (w, rest) = f.split_at_mut(WINDOW_FEATURES.len());
        let (c, k) = rest.split_at_mut(CLASS_FEATURES.len());
        w.copy_from_slice(&self.window);
        c.copy_from_slice(cl);
        for (d, x) in k.iter_mut().zip(knobs) {
            *d = x as f32;
        }
        for x in &mut f {
            if !x.is_finite() {
                *x = 0.0;
            }
        }
        Some(f)
    }
}

/// One regression tree, nodes in arrays; children always come after their parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// Split feature per node (ignored at leaves).
    pub feature: Vec<u32>,
    /// Split threshold: a sample goes left when its feature is below it.
    pub threshold: Vec<f32>,
    /// Left child index (0 at leaves).
    pub left: Vec<u32>,
    /// Right child index (0 at leaves).
    pub right: Vec<u32>,
    /// Whether the node is a leaf.
    pub leaf: Vec<bool>,
    /// Prediction at a leaf.
    pub value: Vec<f32>,
}

impl Tree {
    fn check(&self, k: usize) -> Result<(), ModelError> {
        let n = self.feature.len();
        let bad = |why: String| ModelError::Artifact {
            what: format!("tree {k}"),
            why,
        };
        if n == 0 {
            return Err(bad("has no nodes".into()));
        }
        for (name, len) in [
            ("threshold", self.threshold.len()),
            ("left", self.left.len()),
            ("right", self.right.len()),
            ("leaf", self.leaf.len()),
            ("value", self.value.len()),
        ] {
            if len != n {
                return Err(bad(format!("{name} has {len} entries for {n} nodes")));
            }
        }
        for i in 0..n {
            if self.leaf[i] {
                if !self.value[i].is_finite() {
                    return Err(bad(format!("leaf {i} predicts {}", self.value[i])));
                }
                continue;
            }
            if self.feature[i] as usize >= N_FEATURES {
                return Err(bad(format!(
                    "node {i} splits on feature {} of {N_FEATURES}",
                    self.feature[i]
                )));
            }
            for c in [self.left[i], self.right[i]] {
                if c as usize <= i || c as usize >= n {
                    return Err(bad(format!(
                        "node {i} has child {c} (children follow their parent, < {n})"
                    )));
                }
            }
        }
        Ok(())
    }

    fn predict(&self, x: &[f32; N_FEATURES]) -> f32 {
        let mut i = 0usize;
        while !self.leaf[i] {
            // `check` guarantees both children exist and follow i, so this ends.
            i = if x[self.feature[i] as usize] < self.threshold[i] {
                self.left[i]
            } else {
                self.right[i]
            } as usize;
        }
        self.value[i]
    }
}

/// A gradient-boosted forest: prediction = base + shrinkage · Σ trees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    /// The constant the boosting started from.
    pub base: f32,
    /// The learning rate each tree's output is scaled by.
    pub shrinkage: f32,
    /// The trees.
    pub trees: Vec<Tree>,
}

impl Forest {
    /// The forest's prediction for `x`.
    pub fn predict(&self, x: &[f32; N_FEATURES]) -> f32 {
        self.base + self.shrinkage * self.trees.iter().map(|t| t.predict(x)).sum::<f32>()
    }

    /// [`Forest::predict`] of every row, tree by tree (one tree stays in cache while it
    /// walks the whole batch); the same sums in the same order, so the same results.
    pub fn predict_many(&self, xs: &[[f32; N_FEATURES]]) -> Vec<f32> {
        let mut acc = vec![0f32; xs.len()];
        for t in &self.trees {
            for (a, x) in acc.iter_mut().zip(xs) {
                *a += t.predict(x);
            }
        }
        acc.into_iter().map(|a| self.base + self.shrinkage * a).collect()
    }
}

/// The deepest tree [`Packed`] walks (splits from root to leaf): a complete tree of this depth
/// holds 4095 splits and 4096 leaves, 48 KiB.
pub const MAX_TREE_DEPTH: u32 = 12;

/// The most leaves [`Packed`] holds over all trees once padded (12 bytes each with their split).
pub const MAX_PACKED_LEAVES: usize = 1 << 22;

/// One split of [`Packed`]: go right when `x[feature] < threshold` does not hold.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    feature: u32,
    threshold: f32,
}

/// How many rows walk a tree together: independent walks whose loads overlap in the memory
/// system, where one walk waits for each node in turn.
const WALK_ROWS: usize = 8;

/// The forest's trees padded to one depth D and stored complete, level by level (node i's
/// children at 2i + 1 and 2i + 2; no child indices, no leaf test): a walk is D compares and
/// index steps, and [`WALK_ROWS`] rows walk a tree at once. A leaf above depth D becomes
/// splits whose subtrees all end in its value, so every walk returns what
/// [`Forest::predict`]'s does, and the sums run in the same order: the same results, bit for
/// bit.
#[derive(Debug, Clone, PartialEq)]
struct Packed {
    depth: u32,
    /// Per tree its 2^D − 1 splits.
    splits: Vec<Split>,
    /// Per tree its 2^D leaf values.
    leaves: Vec<f32>,
    base: f32,
    shrinkage: f32,
}

impl Packed {
    /// The packed forest; a tree deeper than [`MAX_TREE_DEPTH`] is a [`ModelError::Artifact`].
    /// `f`'s trees must have passed [`Tree::check`].
    fn new(f: &Forest) -> Result<Packed, ModelError> {
        let mut depth = 0;
        for (k, t) in f.trees.iter().enumerate() {
            // Children follow their parent (`Tree::check`), so one backward sweep has each
            // node's children done before it.
            let mut d = vec![0u32; t.feature.len()];
            for i in (0..t.feature.len()).rev() {
                if !t.leaf[i] {
                    d[i] = 1 + d[t.left[i] as usize].max(d[t.right[i] as usize]);
                }
            }
            if d[0] > MAX_TREE_DEPTH {
                return Err(ModelError::Artifact {
                    what: format!("tree {k}"),
                    why: format!(
                        "is {} splits deep; this build walks at most {MAX_TREE_DEPTH}: retrain with a smaller --depth",
                        d[0]
                    ),
                });
            }
            depth = depth.max(d[0]);
        }
        let padded = f.trees.len().saturating_mul(1 << depth);
        if padded > MAX_PACKED_LEAVES {
            return Err(ModelError::Artifact {
                what: "forest".into(),
                why: format!(
                    "{} trees padded to depth {depth} need {padded} leaves; this build holds at most {MAX_PACKED_LEAVES}: retrain with fewer --trees or a smaller --depth",
                    f.trees.len()
                ),
            });
        }
        let inner = (1usize << depth) - 1;
        let mut splits = Vec::with_capacity(inner * f.trees.len());
        let mut leaves = Vec::with_capacity((inner + 1) * f.trees.len());
        for t in &f.trees {
            let mut s = vec![
                Split {
                    feature: 0,
                    threshold: f32::INFINITY
                };
                inner
            ];
            let mut v = vec![0f32; inner + 1];
            // (node of `t`, position in the complete tree)
            let mut stack = vec![(0usize, 0usize)];
            while let Some((node, pos)) = stack.pop() {
                if pos >= inner {
                    v[pos - inner] = t.value[node];
                } else if t.leaf[node] {
                    // Padding: both subtrees end in this leaf's value.
                    stack.push((node, 2 * pos + 1));
                    stack.push((node, 2 * pos + 2));
                } else {
                    s[pos] = Split {
                        feature: t.feature[node],
                        threshold: t.threshold[node],
                    };
                    stack.push((t.left[node] as usize, 2 * pos + 1));
                    stack.push((t.right[node] as usize, 2 * pos + 2));
                }
            }
            splits.extend(s);
            leaves.extend(v);
        }
        Ok(Packed {
            depth,
            splits,
            leaves,
            base: f.base,
            shrinkage: f.shrinkage,
        })
    }

    /// [`Forest::predict_many`], bit for bit.
    fn predict_many(&self, xs: &[[f32; N_FEATURES]]) -> Vec<f32> {
        let inner = (1usize << self.depth) - 1;
        let mut acc = vec![0f32; xs.len()];
        // Every tree has 2^D leaves (even at depth 0, where it has no splits).
        for (t, leaves) in self.leaves.chunks_exact(inner + 1).enumerate() {
            let splits = &self.splits[t * inner..(t + 1) * inner];
            for (acc, xs) in acc.chunks_mut(WALK_ROWS).zip(xs.chunks(WALK_ROWS)) {
                // A short last group walks its last row again in the unused slots, so every
                // group is WALK_ROWS fixed walks (unrolled); those extra sums are not kept.
                let rows: [&[f32; N_FEATURES]; WALK_ROWS] = std::array::from_fn(|r| &xs[r.min(xs.len() - 1)]);
                let mut at = [0usize; WALK_ROWS];
                for _ in 0..self.depth {
                    for r in 0..WALK_ROWS {
                        let s = splits[at[r]];
                        // Right unless x < threshold, as in `Tree::predict` (NaN goes right).
                        at[r] = 2 * at[r]
                            + if rows[r][s.feature as usize] < s.threshold {
                                1
                            } else {
                                2
                            };
                    }
                }
                for (a, i) in acc.iter_mut().zip(at) {
                    *a += leaves[i - inner];
                }
            }
        }
        acc.into_iter().map(|a| self.base + self.shrinkage * a).collect()
    }
}

/// A trained correction: its header and its forest.
#[derive(Clone, PartialEq)]
pub struct Correction {
    /// The header lines' `(key, value)` pairs (training command, data seeds, …).
    pub header: Vec<(String, String)>,
    forest: Forest,
    packed: Packed,
}

/// The header and the forest's size (not its 100 000 nodes).
impl std::fmt::Debug for Correction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Correction")
            .field("header", &self.header)
            .field("trees", &self.forest.trees.len())
            .finish()
    }
}

const SHIPPED: &[u8] = include_bytes!("../../../models/correction/flowsim-aggregate.forest");

impl Correction {
    /// The correction compiled into the crate (`models/correction/flowsim-aggregate.forest`).
    pub fn shipped() -> Result<Correction, ModelError> {
        Correction::parse(SHIPPED)
    }

    /// The bytes of the artifact compiled into this build, exactly as [`Correction::shipped`]
    /// parses them: what a result should name (the file in the tree may have changed since the
    /// build).
    pub fn shipped_bytes() -> &'static [u8] {
        SHIPPED
    }

    /// Parses an artifact (see the module doc); any mismatch is a [`ModelError::Artifact`].
    pub fn parse(bytes: &[u8]) -> Result<Correction, ModelError> {
        let bad = |what: &str, why: String| ModelError::Artifact {
            what: what.to_string(),
            why,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| bad("artifact", format!("not UTF-8 text ({e})")))?;
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        let version = first.strip_prefix(MAGIC).ok_or_else(|| {
            bad(
                "artifact",
                format!("first line is {first:?}, not \"{MAGIC}<version>\": not a correction artifact"),
            )
        })?;
        if version.trim() != FORMAT_VERSION.to_string() {
            return Err(bad(
                "format version",
                format!(
                    "{} (this build reads {FORMAT_VERSION}): retrain with examples/train_correction.rs",
                    version.trim()
                ),
            ));
        }
        let mut header = Vec::new();
        let mut body = None;
        for line in lines {
            if let Some(h) = line.strip_prefix("# ") {
                let (k, v) = h.split_once(": ").unwrap_or((h, ""));
                header.push((k.to_string(), v.to_string()));
            } else if !line.trim().is_empty() {
                body = Some(line);
                break;
            }
        }
        let features = header
            .iter()
            .find(|(k, _)| k == "features")
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| bad("features", "no \"# features: …\" header line".into()))?;
        if features != FEATURES.join(",") {
            return Err(bad(
                "features",
                format!("{features:?} differ from this build's: retrain with examples/train_correction.rs"),
            ));
        }
        let body = body.ok_or_else(|| bad("artifact", "no forest after the header".into()))?;
        let forest: Forest = serde_json::from_str(body).map_err(|e| bad("forest", e.to_string()))?;
        Correction::new(header, forest)
    }

    /// A correction from a header and a forest; a malformed forest is a
    /// [`ModelError::Artifact`].
    pub fn new(header: Vec<(String, String)>, forest: Forest) -> Result<Correction, ModelError> {
        if !forest.base.is_finite() || !forest.shrinkage.is_finite() {
            return Err(ModelError::Artifact {
                what: "forest".into(),
                why: format!("base {} / shrinkage {}", forest.base, forest.shrinkage),
            });
        }
        for (k, t) in forest.trees.iter().enumerate() {
            t.check(k)?;
        }
        let packed = Packed::new(&forest)?;
        Ok(Correction { header, forest, packed })
    }

    /// The forest.
    pub fn forest(&self) -> &Forest {
        &self.forest
    }

    /// The artifact's text: the version line, `header` and the forest.
    pub fn to_text(&self) -> Result<String, ModelError> {
        let mut s = format!("{MAGIC}{FORMAT_VERSION}\n");
        for (k, v) in &self.header {
            if k != "features" {
                s += &format!("# {k}: {v}\n");
            }
        }
        s += &format!("# features: {}\n", FEATURES.join(","));
        s += &serde_json::to_string(&self.forest).map_err(|e| ModelError::Artifact {
            what: "forest".into(),
            why: e.to_string(),
        })?;
        s.push('\n');
        Ok(s)
    }

    /// The predicted ln(p99_pktsim / p99_flowsim) for a feature vector (clamped to ±3).
    pub fn ln_factor(&self, x: &[f32; N_FEATURES]) -> f32 {
        self.packed.predict_many(std::slice::from_ref(x))[0].clamp(-MAX_LN_FACTOR, MAX_LN_FACTOR)
    }

    /// [`Correction::ln_factor`] of every row.
    pub fn ln_factors(&self, xs: &[[f32; N_FEATURES]]) -> Vec<f32> {
        let mut v = self.packed.predict_many(xs);
        for x in &mut v {
            *x = x.clamp(-MAX_LN_FACTOR, MAX_LN_FACTOR);
        }
        v
    }
}

/// flowsim's output for each configuration with the feature vectors of every class it has
/// statistics for (with the class's index in input order): what the correction is trained on
/// and applied to.
#[allow(clippy::type_complexity)]
pub fn features(
    flowsim: &FlowSim,
    input: &ModelInput,
    configs: &[NetworkConfig],
) -> Vec<Result<(ModelOutput, Vec<(usize, [f32; N_FEATURES])>), ModelError>> {
    let outs = flowsim.evaluate(input, configs);
    let window = match flowsim.window_features(input) {
        Ok(w) => w,
        Err(e) => return configs.iter().map(|_| Err(e.clone())).collect(),
    };
    outs.into_iter()
        .zip(configs)
        .map(|(o, cfg)| {
            let o = o?;
            let params = crate::flowsim::flowsim_params(&input.classes, cfg, &flowsim.options)?;
            let buffer = cfg.port_buffer.map_or(DEFAULT_BUFFER, |b| b.0 as f64);
            let f = (0..input.classes.len())
                .filter_map(|ci| window.features(input, &params, buffer, &o.sli, ci).map(|f| (ci, f)))
                .collect();
            Ok((o, f))
        })
        .collect()
}

/// flowsim with a learned per-class correction of its p99 and p99.9.
#[derive(Debug, Clone)]
pub struct Corrected {
    flowsim: FlowSim,
    correction: Arc<Correction>,
}

impl Corrected {
    /// The model with `correction`.
    pub fn new(correction: Arc<Correction>) -> Corrected {
        Corrected {
            flowsim: FlowSim::default(),
            correction,
        }
    }

    /// The model with the compiled-in correction (parsed once per process).
    pub fn shipped() -> Result<Corrected, ModelError> {
        static SHIPPED_PARSED: OnceLock<Result<Arc<Correction>, ModelError>> = OnceLock::new();
        let c = SHIPPED_PARSED
            .get_or_init(|| Correction::shipped().map(Arc::new))
            .clone()?;
        Ok(Corrected::new(c))
    }
}

impl NetworkModel for Corrected {
    fn name(&self) -> &'static str {
        "flowsim-corrected"
    }
    fn batch_quantum(&self) -> usize {
        self.flowsim.batch_quantum()
    }
    fn evaluate(&self, input: &ModelInput, configs: &[NetworkConfig]) -> Vec<Result<ModelOutput, ModelError>> {
        let mut outs = features(&self.flowsim, input, configs);
        // The whole batch's rows at once: the forest walks them tree by tree.
        let rows: Vec<[f32; N_FEATURES]> = outs
            .iter()
            .flat_map(|r| r.iter().flat_map(|(_, fs)| fs.iter().map(|(_, f)| *f)))
            .collect();
        let mut factors = self.correction.ln_factors(&rows).into_iter();
        for (o, fs) in outs.iter_mut().flatten() {
            for (ci, _) in fs.iter() {
                let factor = f64::from(factors.next().unwrap_or(0.0)).exp();
                let dscp = input.classes[*ci];
                if let Some(s) = o.sli.classes.iter_mut().find(|c| c.dscp == dscp) {
                    // Percentiles stay ordered: a factor below one cannot take the tail under
                    // the median (a class of a few flows, whose p99 is near its p50).
                    s.p99 = (s.p99 * factor).max(s.p50);
                    s.p999 = (s.p999 * factor).max(s.p99);
                }
            }
        }
        outs.into_iter().map(|r| r.map(|(o, _)| o)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_tree(v: f32) -> Tree {
        Tree {
            feature: vec![0],
            threshold: vec![0.0],
            left: vec![0],
            right: vec![0],
            leaf: vec![true],
            value: vec![v],
        }
    }

    #[test]
    fn shipped_artifact_parses_and_round_trips() {
        let c = Correction::shipped().expect("the committed artifact parses");
        assert!(!c.forest.trees.is_empty());
        assert!(c.header.iter().any(|(k, _)| k == "command"));
        let again = Correction::parse(c.to_text().expect("serialises").as_bytes()).expect("round trip");
        assert_eq!(again.forest, c.forest);
        // The packed walk is the forest's, bit for bit.
        let xs: Vec<[f32; N_FEATURES]> = (0..64)
            .map(|k| std::array::from_fn(|i| ((k * 31 + i * 17) % 23) as f32 / 4.0 - 2.0))
            .collect();
        let want: Vec<f32> = xs.iter().map(|x| c.forest.predict(x)).collect();
        assert_eq!(c.packed.predict_many(&xs), want);
        assert_eq!(c.forest.predict_many(&xs), want);
    }

    #[test]
    fn packed_walk_pads_shallow_leaves_and_refuses_too_deep_trees() {
        // Tree 0: a leaf at depth 1 beside a split reaching depth 3; tree 1: a lone leaf; tree 2:
        // a DAG (both children of the root are the same subtree).
        let uneven = Tree {
            feature: vec![2, 0, 5, 1, 0, 0, 0],
            threshold: vec![0.5, 0.0, -1.0, 0.25, 0.0, 0.0, 0.0],
            left: vec![1, 0, 3, 4, 0, 0, 0],
            right: vec![2, 0, 6, 5, 0, 0, 0],
            leaf: vec![false, true, false, false, true, true, true],
            value: vec![0.0, 1.0, 0.0, 0.0, 2.0, 3.0, 4.0],
        };
        let dag = Tree {
            feature: vec![7, 9, 0, 0],
            threshold: vec![0.0, 1.0, 0.0, 0.0],
            left: vec![1, 2, 0, 0],
            right: vec![1, 3, 0, 0],
            leaf: vec![false, false, true, true],
            value: vec![0.0, 0.0, -1.5, 0.75],
        };
        let forest = Forest {
            base: 0.1,
            shrinkage: 0.5,
            trees: vec![uneven, leaf_tree(-0.5), dag],
        };
        let c = Correction::new(vec![], forest.clone()).expect("a valid forest");
        assert_eq!(c.packed.depth, 3);
        // 13 rows: one full group of WALK_ROWS and a partial one; values on both sides of every
        // threshold, and NaN (which, as in `Tree::predict`, goes right).
        let xs: Vec<[f32; N_FEATURES]> = (0..13)
            .map(|k| {
                std::array::from_fn(|i| match (k + i) % 5 {
                    0 => f32::NAN,
                    r => r as f32 / 2.0 - 1.25,
                })
            })
            .collect();
        let want: Vec<f32> = xs.iter().map(|x| forest.predict(x)).collect();
        assert_eq!(c.packed.predict_many(&xs), want);
        assert!(c.packed.predict_many(&[]).is_empty());

        // A chain of `n` splits: node i < n splits to i + 1 (left) and the leaf n + 1 (right).
        let chain = |n: usize| Tree {
            feature: vec![0; n + 2],
            threshold: vec![0.0; n + 2],
            left: (0..n + 2).map(|i| if i < n { i as u32 + 1 } else { 0 }).collect(),
            right: (0..n + 2).map(|i| if i < n { n as u32 + 1 } else { 0 }).collect(),
            leaf: (0..n + 2).map(|i| i >= n).collect(),
            value: vec![0.0; n + 2],
        };
        let forest = |trees: Vec<Tree>| Forest {
            base: 0.0,
            shrinkage: 1.0,
            trees,
        };
        // One split too deep is refused, naming the tree and the depth.
        let e = Correction::new(vec![], forest(vec![leaf_tree(0.0), chain(MAX_TREE_DEPTH as usize + 1)]))
            .expect_err("too deep");
        assert!(
            e.to_string().contains("tree 1") && e.to_string().contains("13 splits deep"),
            "{e}"
        );
        // Trees of the deepest allowed depth, one more than the padded layout holds.
        let many = MAX_PACKED_LEAVES / (1 << MAX_TREE_DEPTH) + 1;
        let e =
            Correction::new(vec![], forest(vec![chain(MAX_TREE_DEPTH as usize); many])).expect_err("too many leaves");
        assert!(
            e.to_string().contains(&format!("{many} trees padded to depth 12")),
            "{e}"
        );
        // The deepest allowed chain walks as its tree does.
        let ok = Correction::new(vec![], forest(vec![chain(MAX_TREE_DEPTH as usize)])).expect("deep but allowed");
        let x = [0.0; N_FEATURES];
        assert_eq!(ok.packed.predict_many(&[x]), vec![ok.forest.predict(&x)]);
    }

    #[test]
    fn incompatible_artifacts_are_errors() {
        let c = Correction::new(
            vec![("command".into(), "test".into())],
            Forest {
                base: 0.5,
                shrinkage: 0.1,
                trees: vec![leaf_tree(1.0)],
            },
        )
        .expect("a valid forest");
        let text = c.to_text().expect("serialises");
        let ok = Correction::parse(text.as_bytes()).expect("parses");
        assert!((ok.ln_factor(&[0.0; N_FEATURES]) - 0.6).abs() < 1e-6);
        assert_eq!(
            ok.ln_factors(&[[0.0; N_FEATURES]; 3]),
            vec![ok.ln_factor(&[0.0; N_FEATURES]); 3]
        );
        let wrong_version = text.replacen("correction 1", "correction 99", 1);
        let e = Correction::parse(wrong_version.as_bytes()).expect_err("version");
        assert!(e.to_string().contains("99"), "{e}");
        let wrong_features = text.replacen("leaf_spine,", "spine_leaf,", 1);
        assert!(matches!(
            Correction::parse(wrong_features.as_bytes()),
            Err(ModelError::Artifact { .. })
        ));
        assert!(Correction::parse(b"").is_err());
        assert!(Correction::parse(b"\xff\xfe").is_err());
        let truncated = &text[..text.len() - 20];
        assert!(Correction::parse(truncated.as_bytes()).is_err());
        // A split whose child points backwards (a cycle) or past the end is refused.
        for (l, r) in [(0u32, 1u32), (1, 7)] {
            let mut bad = c.clone();
            bad.forest.trees[0] = Tree {
                feature: vec![3, 0],
                threshold: vec![1.0, 0.0],
                left: vec![l, 0],
                right: vec![r, 0],
                leaf: vec![false, true],
                value: vec![0.0, 1.0],
            };
            let t = bad.to_text().expect("serialises");
            assert!(Correction::parse(t.as_bytes()).is_err(), "children {l}, {r}");
        }
    }
}
