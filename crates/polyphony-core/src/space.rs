//! The validated knob space: normalisation between physical configurations
//! ([`NetworkConfig`]) and unit coordinates, the softmax map of simplex blocks, categorical
//! knobs, and the mixed distance of §4.4 (Euclidean on hypercube coordinates + α·Aitchison² per
//! simplex block), extended by γ·Hamming over the categorical knobs.
//!
//! Three vectors appear here, all of length [`Space::dim`], hypercube coordinates first:
//! * a **point** `x`: hypercube coordinates in `[0,1]`, then each block's weights (on the
//!   floored simplex: `w_i ≥ floor`, `Σ w = 1`), then each categorical knob's choice as an
//!   index into its allowed set (an integer-valued float);
//! * an **optimisation vector** `z`: the same hypercube coordinates (clamped into `[0,1]` when
//!   mapped), then unconstrained logits; `w = floor + (1 − n·floor)·softmax(z)`; then the
//!   categorical coordinates relaxed to reals, rounded to the nearest index and clamped into
//!   the set when mapped (Garrido-Merchán & Hernández-Lobato, "Dealing with categorical and
//!   integer-valued variables in Bayesian optimization with Gaussian processes",
//!   Neurocomputing 2020: the objective, and so the acquisition, only ever sees rounded points);
//! * GP **features**: hypercube coordinates, then each block's weights without its last one
//!   (the weights sum to 1, so the last is redundant and would make a linear mean singular),
//!   then each categorical knob one-hot without its last choice (for the same reason). A
//!   stationary kernel on one-hot features is a kernel of which choices differ — the overlap
//!   (Hamming) kernel CASMOPOLITAN uses for categorical inputs, with a length scale per choice.
//!
//! **Trust region in the mixed space.** The distance adds γ·H to the squared distance, H the
//! number of categorical knobs whose choice differs (Hamming distance): one change costs
//! √γ = [`HAMMING_STEP`] = 0.15 of distance. With the default radii (initial 0.45, minimum 0.1)
//! one change fits in the initial region with room for a continuous move of 0.42, two fit with
//! room for 0.39, and none once the region has shrunk below 0.15 — the categorical radius
//! grows and shrinks with the continuous one, as the Hamming trust region of CASMOPOLITAN does
//! with successes and failures (Wan et al., "Think Global and Act Local: Bayesian Optimisation
//! over High-Dimensional Categorical and Mixed Search Spaces", ICML 2021, §3).
//!
//! Pure functions over data; no I/O.

use crate::CoreError;
use polyphony_spec::{Bytes, CongestionControl, Dscp, KnobKind, KnobSpace, KnobSpec, NetworkConfig, Packets, Scale};
use serde::{Deserialize, Serialize};

/// One simplex block's place in a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Name of the block.
    pub name: String,
    /// Index of its first weight in a point.
    pub start: usize,
    /// The classes, in weight order.
    pub classes: Vec<Dscp>,
    /// Smallest weight.
    pub floor: f64,
}

impl Block {
    /// Number of weights.
    pub fn len(&self) -> usize {
        self.classes.len()
    }
    /// Never true for a validated block (at least two classes).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

/// Distance between two points that differ in one categorical knob (√γ; module docs).
pub const HAMMING_STEP: f64 = 0.15;

/// One categorical knob's place in a point: a class's congestion-control algorithm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatKnob {
    /// The class.
    pub dscp: Dscp,
    /// Index of its coordinate in a point.
    pub at: usize,
    /// The allowed algorithms; index 0 is what an unset `congestion_control` runs.
    pub choices: Vec<CongestionControl>,
}

impl CatKnob {
    /// `"AF21.congestion_control"`: the knob's name in errors, metrics and logs.
    pub fn name(&self) -> String {
        format!("{}.congestion_control", self.dscp.name())
    }
}

/// A validated knob space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Space {
    knobs: Vec<KnobSpec>,
    blocks: Vec<Block>,
    alpha: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cats: Vec<CatKnob>,
}

fn invalid(knob: impl Into<String>, why: impl Into<String>) -> CoreError {
    CoreError::InvalidSpace {
        knob: knob.into(),
        why: why.into(),
    }
}

impl Space {
    /// Validates `spec`. `alpha` is the Aitchison weight of the distance; `None` picks the
    /// automatic value documented on [`crate::ControllerParams::aitchison_alpha`].
    pub fn new(spec: &KnobSpace, alpha: Option<f64>) -> Result<Space, CoreError> {
        if spec.knobs.is_empty() && spec.simplexes.is_empty() && spec.categorical.is_empty() {
            return Err(invalid(
                "knob space",
                "empty: declare at least one hypercube knob, simplex block or categorical knob",
            ));
        }
        for (i, k) in spec.knobs.iter().enumerate() {
            let name = k.name();
            if !k.min.is_finite() || !k.max.is_finite() {
                return Err(invalid(
                    name,
                    format!("range [{}, {}] is not finite: give finite bounds", k.min, k.max),
                ));
            }
            if k.min >= k.max {
                return Err(invalid(
                    name,
                    format!("min {} ≥ max {}: the range must be non-empty", k.min, k.max),
                ));
            }
            if k.scale == Scale::Log && k.min <= 0.0 {
                return Err(invalid(
                    name,
                    format!(
                        "log scale needs min > 0, got {}: use a positive min or linear scale",
                        k.min
                    ),
                ));
            }
            if k.min < 0.0 {
                return Err(invalid(
                    name,
                    format!("min {} < 0: bytes and packets are never negative", k.min),
                ));
            }
            if spec.knobs[..i].iter().any(|o| o.kind == k.kind && o.dscp == k.dscp) {
                return Err(invalid(name, "declared twice: each class has one knob of each kind"));
            }
        }
        let mut blocks = Vec::new();
        let mut start = spec.knobs.len();
        for s in &spec.simplexes {
            let name = format!("simplex {}", s.name);
            let n = s.classes.len();
            if n < 2 {
                return Err(invalid(
                    name,
                    format!("has {n} class(es): a simplex block needs at least two"),
                ));
            }
            if !(s.floor.is_finite() && s.floor >= 0.0 && (s.floor * n as f64) < 1.0) {
                return Err(invalid(
                    name,
                    format!(
                        "floor {} must satisfy 0 ≤ floor < 1/{n} = {:.4}",
                        s.floor,
                        1.0 / n as f64
                    ),
                ));
            }
            for (i, c) in s.classes.iter().enumerate() {
                if s.classes[..i].contains(c) || blocks.iter().any(|b: &Block| b.classes.contains(c)) {
                    return Err(invalid(
                        name,
                        format!("class {} appears twice: a class has one weight", c.name()),
                    ));
                }
            }
            blocks.push(Block {
                name: s.name.clone(),
                start,
                classes: s.classes.clone(),
                floor: s.floor,
            });
            start += n;
        }
        let alpha = match alpha {
            Some(a) if a.is_finite() && a >= 0.0 => a,
            Some(a) => return Err(invalid("aitchison_alpha", format!("{a} must be finite and ≥ 0"))),
            None => auto_alpha(&blocks),
        };
        let mut cats: Vec<CatKnob> = Vec::new();
        for c in &spec.categorical {
            let knob = CatKnob {
                dscp: c.dscp,
                at: start,
                choices: c.congestion_control.clone(),
            };
            if cats.iter().any(|o| o.dscp == c.dscp) {
                return Err(invalid(knob.name(), "declared twice: a class has one algorithm"));
            }
            if knob.choices.len() < 2 {
                return Err(invalid(
                    knob.name(),
                    format!(
                        "has {} choice(s): a categorical knob needs at least two",
                        knob.choices.len()
                    ),
                ));
            }
            if let Some(j) = (1..knob.choices.len()).find(|&j| knob.choices[..j].contains(&knob.choices[j])) {
                return Err(invalid(knob.name(), format!("lists {} twice", knob.choices[j])));
            }
            cats.push(knob);
            start += 1;
        }
        Ok(Space {
            knobs: spec.knobs.clone(),
            blocks,
            alpha,
            cats,
        })
    }

    /// Number of coordinates of a point.
    pub fn dim(&self) -> usize {
        self.knobs.len() + self.blocks.iter().map(Block::len).sum::<usize>() + self.cats.len()
    }
    /// The categorical knobs, in coordinate order (after the simplex blocks).
    pub fn categorical(&self) -> &[CatKnob] {
        &self.cats
    }
    /// The number of choices when coordinate `i` is categorical.
    pub fn choices_at(&self, i: usize) -> Option<usize> {
        self.cats.iter().find(|c| c.at == i).map(|c| c.choices.len())
    }
    /// Number of hypercube coordinates.
    pub fn n_hypercube(&self) -> usize {
        self.knobs.len()
    }
    /// The hypercube knobs, in coordinate order.
    pub fn knobs(&self) -> &[KnobSpec] {
        &self.knobs
    }
    /// The simplex blocks.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }
    /// The Aitchison weight α in use.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// Number of GP features.
    pub fn n_features(&self) -> usize {
        self.knobs.len()
            + self.blocks.iter().map(|b| b.len() - 1).sum::<usize>()
            + self.cats.iter().map(|c| c.choices.len() - 1).sum::<usize>()
    }

    /// Maps an optimisation vector to a point (clamping hypercube coordinates into `[0,1]`).
    pub fn point_of(&self, z: &[f64]) -> Vec<f64> {
        let mut x = z.to_vec();
        for v in x.iter_mut().take(self.knobs.len()) {
            *v = if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.5 };
        }
        for b in &self.blocks {
            let w = floored_softmax(&z[b.start..b.start + b.len()], b.floor);
            x[b.start..b.start + b.len()].copy_from_slice(&w);
        }
        for c in &self.cats {
            x[c.at] = round_choice(z[c.at], c.choices.len());
        }
        x
    }

    /// Maps a point to an optimisation vector (zero-mean logits).
    pub fn opt_of(&self, x: &[f64]) -> Vec<f64> {
        let mut z = x.to_vec();
        for b in &self.blocks {
            let l = floored_logits(&x[b.start..b.start + b.len()], b.floor);
            z[b.start..b.start + b.len()].copy_from_slice(&l);
        }
        z
    }

    /// GP features of a point.
    pub fn features(&self, x: &[f64]) -> Vec<f64> {
        let mut f = x[..self.knobs.len()].to_vec();
        for b in &self.blocks {
            f.extend_from_slice(&x[b.start..b.start + b.len() - 1]);
        }
        for c in &self.cats {
            let k = round_choice(x[c.at], c.choices.len()) as usize;
            f.extend((0..c.choices.len() - 1).map(|j| if j == k { 1.0 } else { 0.0 }));
        }
        f
    }

    /// How many categorical knobs two points set differently.
    pub fn hamming(&self, x: &[f64], y: &[f64]) -> usize {
        self.cats
            .iter()
            .filter(|c| round_choice(x[c.at], c.choices.len()) != round_choice(y[c.at], c.choices.len()))
            .count()
    }

    /// The distance of §4.4 between two points.
    pub fn distance(&self, x: &[f64], y: &[f64]) -> f64 {
        let mut s: f64 = (0..self.knobs.len()).map(|i| (x[i] - y[i]).powi(2)).sum();
        for b in &self.blocks {
            let r = b.start..b.start + b.len();
            s += self.alpha * aitchison(&x[r.clone()], &y[r]).powi(2);
        }
        s += HAMMING_STEP * HAMMING_STEP * self.hamming(x, y) as f64;
        s.sqrt()
    }

    /// The physical configuration of a point. Knobs not in the space keep `base`'s values.
    /// Integer knobs are rounded; weights are written as they are.
    pub fn config_of(&self, x: &[f64], base: &NetworkConfig) -> Result<NetworkConfig, CoreError> {
        let mut cfg = base.clone();
        for (i, k) in self.knobs.iter().enumerate() {
            let v = denormalise(k, x[i]);
            let c = class_mut(&mut cfg, k.dscp)?;
            match k.kind {
                KnobKind::EcnThreshold => c.ecn_threshold = Bytes((v.round() as u64).max(1)),
                KnobKind::InitCwnd => c.init_cwnd = Packets((v.round() as u32).max(1)),
                KnobKind::Buffer => c.buffer = Some(Bytes((v.round() as u64).max(1))),
            }
        }
        for b in &self.blocks {
            for (j, &d) in b.classes.iter().enumerate() {
                class_mut(&mut cfg, d)?.weight = x[b.start + j];
            }
        }
        for c in &self.cats {
            let k = round_choice(x[c.at], c.choices.len()) as usize;
            class_mut(&mut cfg, c.dscp)?.congestion_control = Some(c.choices[k].clone());
        }
        Ok(cfg)
    }

    /// The point of a physical configuration. Values outside a knob's range are clamped to it;
    /// weights are renormalised within their block and raised to the floor.
    pub fn point_of_config(&self, cfg: &NetworkConfig) -> Result<Vec<f64>, CoreError> {
        let mut x = vec![0.0; self.dim()];
        for (i, k) in self.knobs.iter().enumerate() {
            let c = class_ref(cfg, k.dscp)?;
            let v = match k.kind {
                KnobKind::EcnThreshold => c.ecn_threshold.0 as f64,
                KnobKind::InitCwnd => c.init_cwnd.0 as f64,
                KnobKind::Buffer => match c.buffer {
                    Some(b) => b.0 as f64,
                    None => {
                        return Err(CoreError::InvalidConfig(format!(
                            "{} has no buffer but the knob space tunes {}: set a buffer",
                            k.dscp.name(),
                            k.name()
                        )))
                    }
                },
            };
            x[i] = normalise(k, v);
        }
        for b in &self.blocks {
            let mut w = Vec::with_capacity(b.len());
            for &d in &b.classes {
                let v = class_ref(cfg, d)?.weight;
                if !(v.is_finite() && v >= 0.0) {
                    return Err(CoreError::InvalidConfig(format!(
                        "{}.weight = {v}: a weight is a finite share ≥ 0",
                        d.name()
                    )));
                }
                w.push(v);
            }
            let s: f64 = w.iter().sum();
            if s <= 0.0 {
                return Err(CoreError::InvalidConfig(format!(
                    "the weights of simplex {} sum to {s}: at least one must be positive",
                    b.name
                )));
            }
            let w = project_to_floor(&w.iter().map(|v| v / s).collect::<Vec<_>>(), b.floor);
            x[b.start..b.start + b.len()].copy_from_slice(&w);
        }
        for c in &self.cats {
            let k = match &class_ref(cfg, c.dscp)?.congestion_control {
                None => 0,
                Some(a) => c.choices.iter().position(|o| o == a).ok_or_else(|| {
                    CoreError::InvalidConfig(format!(
                        "{} = {a}: not among the allowed algorithms {:?}; allow it in the knob space or configure one of those",
                        c.name(),
                        c.choices.iter().map(|o| o.name()).collect::<Vec<_>>()
                    ))
                })?,
            };
            x[c.at] = k as f64;
        }
        Ok(x)
    }

    /// The centre of the space: every hypercube coordinate at 0.5, equal weights, every
    /// categorical knob at its first (default) choice.
    pub fn centre(&self) -> Vec<f64> {
        let mut x = vec![0.5; self.dim()];
        for b in &self.blocks {
            for v in &mut x[b.start..b.start + b.len()] {
                *v = 1.0 / b.len() as f64;
            }
        }
        for c in &self.cats {
            x[c.at] = 0.0;
        }
        x
    }
}

fn class_mut(cfg: &mut NetworkConfig, d: Dscp) -> Result<&mut polyphony_spec::ClassConfig, CoreError> {
    cfg.classes.iter_mut().find(|c| c.dscp == d).ok_or_else(|| {
        CoreError::InvalidConfig(format!(
            "class {} (DSCP {d}) is in the knob space but not in the configuration",
            d.name()
        ))
    })
}

fn class_ref(cfg: &NetworkConfig, d: Dscp) -> Result<&polyphony_spec::ClassConfig, CoreError> {
    cfg.class(d).ok_or_else(|| {
        CoreError::InvalidConfig(format!(
            "class {} (DSCP {d}) is in the knob space but not in the configuration",
            d.name()
        ))
    })
}

/// A relaxed categorical coordinate → the index of a choice among `n` (nearest, clamped; 0
/// when not finite).
pub fn round_choice(v: f64, n: usize) -> f64 {
    if v.is_finite() {
        v.round().clamp(0.0, (n.max(1) - 1) as f64)
    } else {
        0.0
    }
}

/// Physical value → `[0,1]` (clamped).
pub fn normalise(k: &KnobSpec, v: f64) -> f64 {
    let u = match k.scale {
        Scale::Linear => (v - k.min) / (k.max - k.min),
        Scale::Log => (v.max(f64::MIN_POSITIVE) / k.min).ln() / (k.max / k.min).ln(),
    };
    if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// `[0,1]` → physical value.
pub fn denormalise(k: &KnobSpec, u: f64) -> f64 {
    let u = u.clamp(0.0, 1.0);
    match k.scale {
        Scale::Linear => k.min + u * (k.max - k.min),
        Scale::Log => k.min * (k.max / k.min).powf(u),
    }
}

/// `floor + (1 − n·floor)·softmax(z)`; numerically stable.
pub fn floored_softmax(z: &[f64], floor: f64) -> Vec<f64> {
    let m = z
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    let m = if m.is_finite() { m } else { 0.0 };
    let e: Vec<f64> = z
        .iter()
        .map(|v| if v.is_finite() { (v - m).exp() } else { 0.0 })
        .collect();
    let s: f64 = e.iter().sum();
    let n = z.len() as f64;
    let free = 1.0 - n * floor;
    if s > 0.0 {
        e.iter().map(|v| floor + free * v / s).collect()
    } else {
        vec![1.0 / n; z.len()]
    }
}

/// The zero-mean logits whose floored softmax is `w` (weights at the floor are lifted by
/// 1e-12 first so the logarithm is finite).
pub fn floored_logits(w: &[f64], floor: f64) -> Vec<f64> {
    let free = 1.0 - w.len() as f64 * floor;
    let l: Vec<f64> = w.iter().map(|v| (((v - floor) / free).max(1e-12)).ln()).collect();
    let mean = l.iter().sum::<f64>() / l.len() as f64;
    l.iter().map(|v| v - mean).collect()
}

/// Raises weights below `floor` to it and takes the excess from the others, proportionally
/// to their room above the floor. Input sums to 1.
pub fn project_to_floor(w: &[f64], floor: f64) -> Vec<f64> {
    let n = w.len() as f64;
    let free = 1.0 - n * floor;
    // Room above the floor, clamped at 0, rescaled to the free mass.
    let room: Vec<f64> = w.iter().map(|v| (v - floor).max(0.0)).collect();
    let s: f64 = room.iter().sum();
    if s <= 0.0 {
        return vec![1.0 / n; w.len()];
    }
    room.iter().map(|r| floor + free * r / s).collect()
}

/// Centred log-ratio transform of a composition (all parts > 0).
pub fn clr(u: &[f64]) -> Vec<f64> {
    let l: Vec<f64> = u.iter().map(|v| v.max(f64::MIN_POSITIVE).ln()).collect();
    let m = l.iter().sum::<f64>() / l.len() as f64;
    l.iter().map(|v| v - m).collect()
}

/// Aitchison distance between two compositions: the Euclidean distance of their clr transforms.
/// Invariant to scaling either composition by a positive constant.
pub fn aitchison(u: &[f64], v: &[f64]) -> f64 {
    clr(u)
        .iter()
        .zip(clr(v))
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn auto_alpha(blocks: &[Block]) -> f64 {
    // Opposite corners of the largest floored simplex: one class at its maximum, then another.
    let Some(b) = blocks.iter().max_by_key(|b| b.len()) else {
        return 1.0;
    };
    let n = b.len();
    let floor = b.floor.max(1e-3);
    let hi = 1.0 - (n as f64 - 1.0) * floor;
    let mut u = vec![floor; n];
    let mut v = vec![floor; n];
    u[0] = hi;
    v[1] = hi;
    let d = aitchison(&u, &v);
    if d > 0.0 {
        (n as f64 - 1.0) / (d * d)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::SimplexSpec;
    use proptest::prelude::*;

    const DSCPS: [Dscp; 3] = [Dscp::AF11, Dscp::AF21, Dscp::AF31];

    fn space() -> Space {
        Space::new(&KnobSpace::per_class_default(&DSCPS), None).unwrap()
    }

    fn base() -> NetworkConfig {
        NetworkConfig::uniform(&DSCPS, Bytes(30_000), Packets(10))
    }

    #[test]
    fn min_not_below_max_is_named() {
        let mut s = KnobSpace::per_class_default(&DSCPS);
        s.knobs[0].min = 5.0;
        s.knobs[0].max = 3.0;
        let e = Space::new(&s, None).unwrap_err().to_string();
        assert_eq!(e, "AF11.ecn_threshold: min 5 ≥ max 3: the range must be non-empty");
    }

    #[test]
    fn malformed_spaces_are_rejected_with_the_knob_named() {
        let e = Space::new(
            &KnobSpace {
                knobs: vec![],
                simplexes: vec![],
                categorical: vec![],
            },
            None,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("knob space: empty"), "{e}");
        let mut s = KnobSpace::per_class_default(&DSCPS);
        s.knobs[3].max = f64::INFINITY;
        let e = Space::new(&s, None).unwrap_err().to_string();
        assert!(e.starts_with("AF21.init_cwnd") && e.contains("not finite"), "{e}");
        let mut s = KnobSpace::per_class_default(&DSCPS);
        s.simplexes = vec![SimplexSpec {
            name: "w".into(),
            classes: vec![Dscp::AF11],
            floor: 0.0,
        }];
        let e = Space::new(&s, None).unwrap_err().to_string();
        assert!(e.starts_with("simplex w") && e.contains("at least two"), "{e}");
        let mut s = KnobSpace::per_class_default(&DSCPS);
        s.simplexes[0].floor = 0.4;
        let e = Space::new(&s, None).unwrap_err().to_string();
        assert!(e.contains("floor 0.4"), "{e}");
        let mut s = KnobSpace::per_class_default(&DSCPS);
        s.knobs[0].min = 0.0;
        let e = Space::new(&s, None).unwrap_err().to_string();
        assert!(e.starts_with("AF11.ecn_threshold") && e.contains("log scale"), "{e}");
    }

    #[test]
    fn categorical_knobs_are_validated_and_map_to_configurations() {
        use polyphony_spec::{CategoricalSpec, CongestionControl};
        let cc = |n: &str| CongestionControl::new(n).unwrap();
        let with = |choices: Vec<CongestionControl>| {
            let mut s = KnobSpace::per_class_default(&DSCPS);
            s.categorical = vec![CategoricalSpec {
                dscp: Dscp::AF21,
                congestion_control: choices,
            }];
            s
        };
        let e = Space::new(&with(vec![cc("cubic")]), None).unwrap_err().to_string();
        assert!(e.starts_with("AF21.congestion_control: has 1 choice"), "{e}");
        let e = Space::new(&with(vec![cc("cubic"), cc("reno"), cc("cubic")]), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("AF21.congestion_control: lists cubic twice"), "{e}");
        let sp = Space::new(&with(vec![cc("dctcp"), cc("cubic"), cc("reno")]), None).unwrap();
        assert_eq!((sp.dim(), sp.n_features(), sp.choices_at(9)), (10, 10, Some(3)));
        // Unset is the first choice; the point's coordinate is the index; features one-hot
        // without the last choice.
        let x = sp.point_of_config(&base()).unwrap();
        assert_eq!(x[9], 0.0);
        let mut z = x.clone();
        z[9] = 1.7;
        let y = sp.point_of(&z);
        assert_eq!(y[9], 2.0);
        assert_eq!(sp.features(&y)[8..], [0.0, 0.0]);
        assert_eq!(sp.features(&x)[8..], [1.0, 0.0]);
        let cfg = sp.config_of(&y, &base()).unwrap();
        assert_eq!(cfg.classes[1].congestion_control, Some(cc("reno")));
        assert_eq!(cfg.classes[0].congestion_control, None);
        assert_eq!(sp.point_of_config(&cfg).unwrap(), y);
        assert!((sp.distance(&x, &y) - HAMMING_STEP).abs() < 1e-12);
        // The space survives serialisation (the controller's state) unchanged.
        let back: Space = serde_json::from_str(&serde_json::to_string(&sp).unwrap()).unwrap();
        assert_eq!(back, sp);
    }

    #[test]
    fn config_round_trip_through_a_point() {
        let sp = space();
        let x = sp.point_of_config(&base()).unwrap();
        assert_eq!(x.len(), 9);
        let cfg = sp.config_of(&x, &base()).unwrap();
        assert_eq!(cfg, base());
        assert_eq!(cfg.validate(), Ok(()));
    }

    #[test]
    fn config_missing_a_class_is_an_error() {
        let sp = space();
        let mut b = base();
        b.classes.pop();
        let e = sp.point_of_config(&b).unwrap_err().to_string();
        assert!(e.contains("AF31"), "{e}");
    }

    #[test]
    fn aitchison_is_scale_invariant_and_symmetric() {
        let u = [0.2, 0.3, 0.5];
        let v = [0.6, 0.1, 0.3];
        let u10: Vec<f64> = u.iter().map(|x| x * 10.0).collect();
        assert!((aitchison(&u, &v) - aitchison(&u10, &v)).abs() < 1e-12);
        assert!((aitchison(&u, &v) - aitchison(&v, &u)).abs() < 1e-12);
        assert_eq!(aitchison(&u, &u), 0.0);
        assert!(aitchison(&u, &v) > 0.1);
    }

    fn comp() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(0.01f64..10.0, 3)
    }

    proptest! {
        #[test]
        fn softmax_logit_round_trip(z in prop::collection::vec(-6.0f64..6.0, 3), floor in 0.0f64..0.3) {
            let w = floored_softmax(&z, floor);
            prop_assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            prop_assert!(w.iter().all(|&v| v >= floor - 1e-15));
            let back = floored_softmax(&floored_logits(&w, floor), floor);
            for (a, b) in w.iter().zip(&back) {
                prop_assert!((a - b).abs() < 1e-9, "{w:?} vs {back:?}");
            }
        }

        #[test]
        fn aitchison_laws(u in comp(), v in comp(), k in 0.01f64..100.0) {
            let d = aitchison(&u, &v);
            prop_assert!(d >= 0.0);
            prop_assert!((d - aitchison(&v, &u)).abs() < 1e-9);
            let ku: Vec<f64> = u.iter().map(|x| x * k).collect();
            prop_assert!((d - aitchison(&ku, &v)).abs() < 1e-9);
            prop_assert!(aitchison(&u, &u) < 1e-12);
            // zero only when proportional
            let proportional = u.iter().zip(&v).all(|(a, b)| ((a / b) / (u[0] / v[0]) - 1.0).abs() < 1e-9);
            if !proportional { prop_assert!(d > 0.0); }
        }

        #[test]
        fn points_map_into_the_space(z in prop::collection::vec(-3.0f64..3.0, 9)) {
            let sp = space();
            let x = sp.point_of(&z);
            let cfg = sp.config_of(&x, &base()).unwrap();
            prop_assert_eq!(cfg.validate(), Ok(()));
            let x2 = sp.point_of_config(&cfg).unwrap();
            // Integer knobs round; the distance stays within rounding of the knob grid.
            prop_assert!(sp.distance(&x, &x2) < 0.2, "{x:?} {x2:?}");
        }

        #[test]
        fn distance_is_a_metric(a in prop::collection::vec(-3.0f64..3.0, 9), b in prop::collection::vec(-3.0f64..3.0, 9), c in prop::collection::vec(-3.0f64..3.0, 9)) {
            let sp = space();
            let (x, y, w) = (sp.point_of(&a), sp.point_of(&b), sp.point_of(&c));
            prop_assert!((sp.distance(&x, &y) - sp.distance(&y, &x)).abs() < 1e-12);
            prop_assert!(sp.distance(&x, &y) <= sp.distance(&x, &w) + sp.distance(&w, &y) + 1e-9);
            prop_assert!(sp.distance(&x, &x) == 0.0);
        }
    }
}
