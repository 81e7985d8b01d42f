//! The one control step every driver runs: the daemon, the demo and the evaluation harness
//! each measure an interval, hand it to [`ControlStep::step`] and carry out the [`Decision`]
//! it returns (apply, hold, or revert to the last known good configuration). The step owns the
//! control policy around a [`Tuner`]: which intervals are usable (the skip rule), the warm-up
//! windows before the control loop (paper §8.5), the guard and the last known good
//! configuration, and the observe → propose sequence. The guard is judged on the measurement
//! before any model time is spent. Pure: no I/O, no clock; drivers time the step themselves.

use crate::controller::{Observation, ObserveReport, Proposal, Reason, ReasonKind};
use crate::model::PerformanceModel;
use crate::samples::Admission;
use crate::space::Space;
use crate::tuner::Tuner;
use crate::CoreError;
use polyphony_spec::{KnobSpace, NetworkConfig, SliVector, Workload};
use serde::{Deserialize, Serialize};

/// What the step is configured with besides its tuner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPolicy {
    /// When the measured objective J exceeds this, return to the last known good configuration
    /// instead of asking the tuner (`None`: no guard).
    pub guard: Option<f64>,
}

/// The warm-up windows: the configurations to measure before the control loop, and how far
/// the driver has got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmUp {
    /// One configuration per warm-up window, in order.
    pub plan: Vec<NetworkConfig>,
    /// Windows measured so far.
    pub done: usize,
    /// Whether any of them was usable and given to the tuner.
    pub fed: bool,
}

impl WarmUp {
    /// No warm-up: the control loop starts with the first interval.
    pub fn none() -> WarmUp {
        WarmUp::of(Vec::new())
    }
    /// A warm-up over `plan`, nothing measured yet.
    pub fn of(plan: Vec<NetworkConfig>) -> WarmUp {
        WarmUp {
            plan,
            done: 0,
            fed: false,
        }
    }
    /// Whether every warm-up window has been measured.
    pub fn finished(&self) -> bool {
        self.done >= self.plan.len()
    }
}

/// The warm-up configurations for a tuner that moves: [`crate::warmup::design`]'s `n` points
/// around `start` within `radius`, in `knobs` (with the controller's `aitchison_alpha`), as
/// configurations (knobs outside the space from `start`).
pub fn warmup_design(
    knobs: &KnobSpace,
    aitchison_alpha: Option<f64>,
    start: &NetworkConfig,
    radius: f64,
    n: usize,
    seed: u64,
) -> Result<Vec<NetworkConfig>, CoreError> {
    let space = Space::new(knobs, aitchison_alpha)?;
    let x0 = space.point_of_config(start)?;
    crate::warmup::design(&space, &x0, radius, n, seed)
        .iter()
        .map(|x| space.config_of(x, start))
        .collect()
}

/// The step's own state, persisted by a driver that restarts (the daemon).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepState {
    /// The last configuration whose measurement passed the guard; until one has, the starting
    /// configuration.
    pub last_good: NetworkConfig,
    /// `last_good`'s own latest measurement broke the guard (a starting configuration already
    /// above it): no configuration is known to pass the guard, so a broken guard returns
    /// nowhere — going back would only repeat a measurement as bad — until one passes.
    #[serde(default)]
    pub last_good_failed: bool,
    /// Warm-up progress.
    pub warmup: WarmUp,
}

/// One measured interval, as a driver hands it to the step.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The configuration that was in force during the interval.
    pub config: &'a NetworkConfig,
    /// The SLIs measured during the interval.
    pub slis: &'a SliVector,
    /// The interval's workload window (what the model replays), when the driver has one to
    /// check: an empty window, or one without a flow of some class, makes the interval unusable.
    pub window: Option<&'a Workload>,
    /// An identifier of the workload window (selects the model's common-random-number seed).
    pub workload: Option<u64>,
}

/// What the driver should do with [`Decision::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Put the next configuration in force (apply it, or advise it).
    Apply,
    /// Keep the configuration in force (`next` is it).
    Hold,
    /// The guard broke: return to the last known good configuration (`next` is it).
    Revert,
}

/// Why an interval was not usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipKind {
    /// The workload window holds no flow: the model has nothing to replay.
    EmptyWindow,
    /// A class has no usable SLI (no flow finished, or the value is not a positive number).
    MissingSli,
    /// The workload window has no flow of some class: the model cannot predict its SLI.
    ClassWithoutFlows,
}

impl SkipKind {
    /// The label used in logs and metrics (`empty_window`, `missing_sli`, `class_without_flows`).
    pub fn as_str(self) -> &'static str {
        match self {
            SkipKind::EmptyWindow => "empty_window",
            SkipKind::MissingSli => "missing_sli",
            SkipKind::ClassWithoutFlows => "class_without_flows",
        }
    }
}

/// An unusable interval: the kind and a sentence naming what was missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    /// Kind.
    pub kind: SkipKind,
    /// What was missing.
    pub detail: String,
}

/// Which part of the loop an interval belonged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Warm-up window `window` (0-based) of `of`.
    WarmUp {
        /// 0-based window.
        window: usize,
        /// Windows planned.
        of: usize,
    },
    /// A control interval.
    Control,
}

/// Everything the step learnt and did in one interval, for the driver to log, publish or
/// write down.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The interval's phase.
    pub phase: Phase,
    /// Per-class ratios SLI / SLO at each class's SLO percentile (objective order); `None`
    /// when a class had no usable SLI.
    pub ratios: Option<Vec<f64>>,
    /// The measured objective J of those ratios.
    pub objective: Option<f64>,
    /// Why the interval was not used, if it was not.
    pub skipped: Option<Skip>,
    /// The tuner's report of the observation (control intervals it observed).
    pub observed: Option<ObserveReport>,
    /// The tuner's proposal, if it was asked for one.
    pub proposal: Option<Proposal>,
    /// Admission decisions of warm-up samples (the tuner's own; empty for tuners without).
    pub warmup_admissions: Vec<Admission>,
    /// Why the tuner could not propose, if it could not (the decision then holds).
    pub error: Option<CoreError>,
}

/// The step's answer to one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The configuration to have in force during the next interval.
    pub next: NetworkConfig,
    /// What to do with it.
    pub action: Action,
    /// Why.
    pub reason: Reason,
    /// What was measured and decided.
    pub record: StepRecord,
}

impl Decision {
    /// Whether the tuner admitted a sample into its window in this step (a novel, surprising or
    /// refreshed observation).
    pub fn admitted(&self) -> bool {
        let admits = |a: &Admission| matches!(a, Admission::Novel | Admission::Surprising | Admission::Refreshed);
        self.record.warmup_admissions.iter().any(admits)
            || self
                .record
                .proposal
                .as_ref()
                .is_some_and(|p| p.admissions.iter().any(admits))
    }
}

/// A tuner and the control policy around it.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlStep<T> {
    tuner: T,
    policy: StepPolicy,
    state: StepState,
}

impl<T: Tuner> ControlStep<T> {
    /// A fresh step: the tuner, its policy, the configuration it starts from (the first last
    /// known good) and the warm-up plan (empty for none).
    pub fn new(tuner: T, policy: StepPolicy, start: NetworkConfig, warmup: Vec<NetworkConfig>) -> ControlStep<T> {
        ControlStep::resume(
            tuner,
            policy,
            StepState {
                last_good: start,
                last_good_failed: false,
                warmup: WarmUp::of(warmup),
            },
        )
    }

    /// A step restored from its persisted [`StepState`].
    pub fn resume(tuner: T, policy: StepPolicy, state: StepState) -> ControlStep<T> {
        ControlStep { tuner, policy, state }
    }

    /// The tuner.
    pub fn tuner(&self) -> &T {
        &self.tuner
    }
    /// The policy.
    pub fn policy(&self) -> &StepPolicy {
        &self.policy
    }
    /// Replaces the policy (a reloaded configuration).
    pub fn set_policy(&mut self, policy: StepPolicy) {
        self.policy = policy;
    }
    /// The state to persist.
    pub fn state(&self) -> &StepState {
        &self.state
    }
    /// The last known good configuration.
    pub fn last_good(&self) -> &NetworkConfig {
        &self.state.last_good
    }

    /// The configuration to measure first: the first warm-up configuration, if a warm-up is
    /// still due, otherwise `in_force`.
    pub fn first_config(&self, in_force: &NetworkConfig) -> NetworkConfig {
        let w = &self.state.warmup;
        w.plan.get(w.done).cloned().unwrap_or_else(|| in_force.clone())
    }

    /// The phase the next interval belongs to.
    pub fn phase(&self) -> Phase {
        let w = &self.state.warmup;
        if w.finished() {
            Phase::Control
        } else {
            Phase::WarmUp {
                window: w.done,
                of: w.plan.len(),
            }
        }
    }

    /// The skip rule: why the interval cannot be used, if it cannot; else its ratios and J.
    fn judge(&self, input: &StepInput<'_>) -> Result<(Vec<f64>, f64), Skip> {
        let objective = self.tuner.objective();
        if let Some(w) = input.window.filter(|w| w.flows.is_empty()) {
            return Err(Skip {
                kind: SkipKind::EmptyWindow,
                detail: format!(
                    "the workload window holds no flow ({} s span)",
                    w.duration.as_secs_f64()
                ),
            });
        }
        let ratios = objective.ratios(input.slis).map_err(|e| Skip {
            kind: SkipKind::MissingSli,
            detail: e.to_string(),
        })?;
        if let Some(w) = input.window {
            if let Some(t) = objective
                .targets()
                .iter()
                .find(|t| !w.flows.iter().any(|f| f.dscp == t.dscp))
            {
                return Err(Skip {
                    kind: SkipKind::ClassWithoutFlows,
                    detail: format!(
                        "the workload window has no flow of class {} (DSCP {}), so the model cannot predict its SLI",
                        t.name, t.dscp
                    ),
                });
            }
        }
        let j = objective.of_ratios(&ratios);
        Ok((ratios, j))
    }

    /// One measured interval in, one decision out. `model` is the performance model on this
    /// interval's workload; it is called only when the tuner is asked (never for a skipped
    /// interval or a guard revert). An error (the tuner refused the measurement, or the model
    /// failed during warm-up) leaves the step as it was; a failed proposal is a decision to
    /// hold, with the error in the record.
    pub fn step(&mut self, input: &StepInput<'_>, model: &dyn PerformanceModel) -> Result<Decision, CoreError> {
        let phase = self.phase();
        let mut record = StepRecord {
            phase,
            ratios: None,
            objective: None,
            skipped: None,
            observed: None,
            proposal: None,
            warmup_admissions: Vec::new(),
            error: None,
        };
        let (ratios, j) = match self.judge(input) {
            Ok(m) => m,
            Err(skip) => {
                let text = format!(
                    "interval skipped ({}): {}; the tuner was not asked",
                    skip.kind.as_str(),
                    skip.detail
                );
                record.skipped = Some(skip);
                return Ok(self.after_skip(input.config, text, record));
            }
        };
        record.ratios = Some(ratios);
        record.objective = Some(j);
        let obs = Observation {
            config: input.config.clone(),
            slis: input.slis.clone(),
            workload: input.workload,
        };
        // The guard, before any model time: a broken guard away from the last known good
        // configuration returns there (when that one is not itself known to break it).
        let broken = self.policy.guard.filter(|g| j > *g);
        if broken.is_none() {
            self.state.last_good = input.config.clone();
            self.state.last_good_failed = false;
        } else if *input.config == self.state.last_good {
            self.state.last_good_failed = true;
        } else if !self.state.last_good_failed {
            if phase == Phase::Control {
                // The tuner still learns that this configuration is bad.
                record.observed = Some(self.tuner.observe(&obs)?);
            } else {
                let w = &mut self.state.warmup;
                w.done = w.plan.len();
            }
            let text = format!(
                "guard: J = {j:.3} > {}: returned to the last known good configuration",
                broken.unwrap_or(f64::NAN)
            );
            return Ok(Decision {
                next: self.state.last_good.clone(),
                action: Action::Revert,
                reason: Reason {
                    kind: ReasonKind::Guard,
                    text,
                },
                record,
            });
        }
        match phase {
            Phase::WarmUp { window, of } => {
                record.warmup_admissions = self.tuner.warm_up(&obs, model)?;
                let w = &mut self.state.warmup;
                w.fed = true;
                w.done += 1;
                let text = format!("warm-up {}/{of}", window + 1);
                match w.plan.get(w.done).cloned() {
                    Some(next) => Ok(Decision {
                        next,
                        action: Action::Apply,
                        reason: Reason {
                            kind: ReasonKind::WarmUp,
                            text,
                        },
                        record,
                    }),
                    None => Ok(self.propose(input.config, model, Some(text), record)),
                }
            }
            Phase::Control => {
                record.observed = Some(self.tuner.observe(&obs)?);
                // A broken guard with nowhere known good to return to is said, not hidden.
                let note = broken.map(|g| format!("guard: J = {j:.3} > {g}, and no configuration is known to pass it"));
                Ok(self.propose(input.config, model, note, record))
            }
        }
    }

    /// An unusable interval: the tuner is not asked. In the warm-up the window still counts
    /// and the next design point follows (the last one then holds); otherwise the
    /// configuration in force stays.
    fn after_skip(&mut self, in_force: &NetworkConfig, text: String, record: StepRecord) -> Decision {
        let w = &mut self.state.warmup;
        let next = if w.finished() {
            None
        } else {
            w.done += 1;
            w.plan.get(w.done).cloned()
        };
        let (next, action) = match next {
            Some(n) => (n, Action::Apply),
            None => (in_force.clone(), Action::Hold),
        };
        Decision {
            next,
            action,
            reason: Reason {
                kind: ReasonKind::Skipped,
                text,
            },
            record,
        }
    }

    /// Asks the tuner for the next configuration; holds `in_force` if it cannot propose.
    fn propose(
        &mut self,
        in_force: &NetworkConfig,
        model: &dyn PerformanceModel,
        prefix: Option<String>,
        mut record: StepRecord,
    ) -> Decision {
        let with_prefix = |text: String| match &prefix {
            Some(p) => format!("{p}; then: {text}"),
            None => text,
        };
        match self.tuner.propose(model) {
            Ok(p) => {
                let reason = Reason {
                    kind: p.reason.kind,
                    text: with_prefix(p.reason.text.clone()),
                };
                let next = p.config.clone();
                record.proposal = Some(p);
                Decision {
                    next,
                    action: Action::Apply,
                    reason,
                    record,
                }
            }
            Err(e) => {
                let text = with_prefix(format!("held: the tuner could not propose: {e}"));
                record.error = Some(e);
                Decision {
                    next: in_force.clone(),
                    action: Action::Hold,
                    reason: Reason {
                        kind: ReasonKind::Held,
                        text,
                    },
                    record,
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tuner::FixedConfig;
    use crate::{Controller, ControllerParams, NoModel, Variant};
    use polyphony_spec::{Bytes, ClassSli, Dscp, Nanos, Packets, TrafficClass};

    fn classes() -> Vec<TrafficClass> {
        vec![
            TrafficClass::new("AF11", Dscp::AF11, 10.0),
            TrafficClass::new("AF21", Dscp::AF21, 20.0),
        ]
    }

    fn config(k: u64) -> NetworkConfig {
        NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(k), Packets(10))
    }

    /// The SLIs of the classes given with their p99 (and p99.9) slowdown.
    pub(crate) fn slis(p99: &[(Dscp, f64)]) -> SliVector {
        SliVector {
            classes: p99
                .iter()
                .map(|&(dscp, p)| ClassSli {
                    dscp,
                    flows: 50,
                    p50: 1.0,
                    p99: p,
                    p999: p,
                    mean: 1.0,
                    qct: None,
                })
                .collect(),
        }
    }

    fn input<'a>(config: &'a NetworkConfig, slis: &'a SliVector, window: Option<&'a Workload>) -> StepInput<'a> {
        StepInput {
            config,
            slis,
            window,
            workload: Some(0),
        }
    }

    fn fixed(guard: Option<f64>, warmup: Vec<NetworkConfig>) -> ControlStep<FixedConfig> {
        let t = FixedConfig::new(&classes(), config(30_000), 10.0, 0.5).unwrap();
        ControlStep::new(t, StepPolicy { guard }, config(30_000), warmup)
    }

    #[test]
    fn unusable_intervals_are_skipped_without_asking_the_tuner() {
        let mut s = fixed(None, Vec::new());
        let c = config(30_000);
        let one_class = slis(&[(Dscp::AF11, 5.0)]);
        let d = s.step(&input(&c, &one_class, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Hold);
        assert_eq!(d.next, c);
        assert_eq!(d.record.skipped.as_ref().map(|k| k.kind), Some(SkipKind::MissingSli));
        assert!(d.record.proposal.is_none() && d.record.observed.is_none());
        let both = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        let empty = Workload {
            flows: Vec::new(),
            duration: Nanos(1_000_000),
        };
        let d = s.step(&input(&c, &both, Some(&empty)), &NoModel).unwrap();
        assert_eq!(d.record.skipped.map(|k| k.kind), Some(SkipKind::EmptyWindow));
        // A usable one is observed and proposed on, with the ratios at the SLO percentile.
        let d = s.step(&input(&c, &both, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Apply);
        assert_eq!(d.record.ratios, Some(vec![0.5, 0.5]));
        assert!(d.record.observed.is_some() && d.record.proposal.is_some());
    }

    #[test]
    fn the_guard_reverts_to_the_last_good_configuration_before_proposing() {
        let mut s = fixed(Some(2.0), Vec::new());
        let good = config(30_000);
        let bad = config(90_000);
        let fine = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        let awful = slis(&[(Dscp::AF11, 50.0), (Dscp::AF21, 10.0)]);
        assert_eq!(
            s.step(&input(&good, &fine, None), &NoModel).unwrap().action,
            Action::Apply
        );
        let d = s.step(&input(&bad, &awful, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Revert);
        assert_eq!(d.next, good);
        assert_eq!(d.reason.kind, ReasonKind::Guard);
        assert!(d.record.proposal.is_none(), "no model time after a broken guard");
        assert!(
            d.record.observed.is_some(),
            "the tuner still learns the bad configuration"
        );
        // At the last known good configuration a broken guard cannot revert: the tuner decides.
        let d = s.step(&input(&good, &awful, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Apply);
        assert_eq!(s.last_good(), &good);
        // It is no longer known to pass the guard, so another configuration above the guard
        // (here even a better one) does not send the network back to it.
        let poor = slis(&[(Dscp::AF11, 30.0), (Dscp::AF21, 10.0)]);
        let d = s.step(&input(&bad, &poor, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Apply);
        assert_ne!(d.reason.kind, ReasonKind::Guard);
        assert!(s.state().last_good_failed);
        // Once a configuration passes again, a broken guard returns to it.
        s.step(&input(&bad, &fine, None), &NoModel).unwrap();
        assert_eq!((s.last_good(), s.state().last_good_failed), (&bad, false));
        let d = s.step(&input(&good, &awful, None), &NoModel).unwrap();
        assert_eq!((d.action, &d.next), (Action::Revert, &bad));
    }

    #[test]
    fn a_start_above_the_guard_is_not_returned_to() {
        let mut s = fixed(Some(2.0), Vec::new());
        let start = config(30_000);
        let other = config(60_000);
        let awful = slis(&[(Dscp::AF11, 50.0), (Dscp::AF21, 10.0)]);
        let poor = slis(&[(Dscp::AF11, 30.0), (Dscp::AF21, 10.0)]);
        assert_eq!(
            s.step(&input(&start, &awful, None), &NoModel).unwrap().action,
            Action::Apply
        );
        let d = s.step(&input(&other, &poor, None), &NoModel).unwrap();
        assert_eq!(d.action, Action::Apply, "{}", d.reason.text);
        assert!(d.record.observed.is_some());
        assert!(
            d.reason.text.starts_with("guard: J = ")
                && d.reason.text.contains("no configuration is known to pass it; then: "),
            "{}",
            d.reason.text
        );
    }

    #[test]
    fn the_warm_up_walks_its_plan_then_proposes() {
        let plan = vec![config(30_000), config(40_000), config(50_000)];
        let mut s = fixed(None, plan.clone());
        assert_eq!(s.first_config(&config(1_000)), plan[0]);
        let ok = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        let missing = slis(&[(Dscp::AF11, 5.0)]);
        let d = s.step(&input(&plan[0], &ok, None), &NoModel).unwrap();
        assert_eq!(
            (d.action, d.reason.kind, &d.next),
            (Action::Apply, ReasonKind::WarmUp, &plan[1])
        );
        // A skipped warm-up window still moves on to the next design point.
        let d = s.step(&input(&plan[1], &missing, None), &NoModel).unwrap();
        assert_eq!((d.action, &d.next), (Action::Apply, &plan[2]));
        assert_eq!(d.record.phase, Phase::WarmUp { window: 1, of: 3 });
        let d = s.step(&input(&plan[2], &ok, None), &NoModel).unwrap();
        assert!(d.reason.text.starts_with("warm-up 3/3; then: "), "{}", d.reason.text);
        assert_eq!(d.next, config(30_000));
        assert_eq!(s.phase(), Phase::Control);
    }

    #[test]
    fn a_failed_proposal_holds_the_configuration_in_force() {
        let c = config(30_000);
        let space = polyphony_spec::KnobSpace::per_class_default(&[Dscp::AF11, Dscp::AF21]);
        let ctl = Controller::new(
            &classes(),
            &space,
            c.clone(),
            ControllerParams::default(),
            Variant::FULL,
        )
        .unwrap();
        let mut s = ControlStep::new(ctl, StepPolicy { guard: None }, c.clone(), Vec::new());
        let ok = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        // NoModel fails every call, so the full controller cannot propose.
        let d = s.step(&input(&c, &ok, None), &NoModel).unwrap();
        assert_eq!((d.action, d.reason.kind), (Action::Hold, ReasonKind::Held));
        assert_eq!(d.next, c);
        assert!(matches!(d.record.error, Some(CoreError::Model(_))));
    }
}

#[cfg(test)]
mod state_format {
    use crate::{Controller, ControllerParams, Variant};
    use polyphony_spec::{Bytes, Dscp, KnobSpace, NetworkConfig, Packets, TrafficClass};

    #[test]
    fn the_trust_region_keeps_its_keys_in_a_saved_controller_state() {
        let d = [Dscp::AF11, Dscp::AF21];
        let classes = [
            TrafficClass::new("AF11", d[0], 10.0),
            TrafficClass::new("AF21", d[1], 20.0),
        ];
        let c = NetworkConfig::uniform(&d, Bytes(30_000), Packets(10));
        let ctl = Controller::new(
            &classes,
            &KnobSpace::per_class_default(&d),
            c,
            ControllerParams::default(),
            Variant::FULL,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&ctl.to_json().unwrap()).unwrap();
        // The keys states were saved with before the trust region had its own type.
        for k in ["radius", "improve_streak", "stall_streak"] {
            assert!(v["state"].get(k).is_some(), "state.{k} missing: {}", v["state"]);
        }
        assert_eq!(Controller::from_json(&v.to_string()).unwrap(), ctl);
        // A state saved while `denoiser_enabled` was a parameter: `true` changes nothing,
        // `false` becomes the variant without the denoiser.
        let mut old = v.clone();
        old["params"]["denoiser_enabled"] = serde_json::Value::Bool(true);
        assert_eq!(Controller::from_json(&old.to_string()).unwrap(), ctl);
        old["params"]["denoiser_enabled"] = serde_json::Value::Bool(false);
        let off = Controller::from_json(&old.to_string()).unwrap();
        assert!(!off.variant().denoiser);
        assert_eq!(off.params(), ctl.params());
    }
}
