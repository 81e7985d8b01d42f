//! Staged apply: a new configuration reaches the network one stage at a time (e.g. one leaf,
//! then the rest). Each stage is put in force, and after one interval judged by the guard on the
//! SLIs of the classes it affects; only then does the next stage follow. A stage that fails —
//! its actuators refused the change, or an affected class broke the guard — ends the rollout:
//! every stage applied so far returns to the configuration in force before it, and the driver
//! holds.
//!
//! [`Rollout`] decides; the driver does the I/O: it applies the stage [`RolloutAction::ApplyStage`]
//! names, tells the rollout how that went ([`Rollout::applied`]), measures one interval and hands
//! the SLIs to [`Rollout::judge`]. Pure: no I/O, no clock.

use crate::objective::Objective;
use polyphony_spec::{Dscp, NetworkConfig, SliVector};
use serde::{Deserialize, Serialize};

/// One stage: a name for logs (e.g. its actuators) and the classes whose SLIs judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// How the stage is named in reasons and logs.
    pub name: String,
    /// The classes the stage affects; empty: every class.
    pub classes: Vec<Dscp>,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutAction {
    /// Put stage `i` (0-based) of the target in force, then measure one interval.
    ApplyStage(usize),
    /// The interval did not measure every class the stage affects: judge the next one.
    Wait {
        /// Which class was missing.
        why: String,
    },
    /// Every stage is in force and passed: the target is the configuration in force.
    Complete,
    /// Return stages `0..=through` to the configuration in force before the rollout and hold.
    RollBack {
        /// The last stage to undo (0-based).
        through: usize,
        /// What failed, naming the stage.
        failure: String,
    },
}

/// A rollout of `target` over ordered stages, starting from `from`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    stages: Vec<Stage>,
    from: NetworkConfig,
    target: NetworkConfig,
    /// The stage being applied or judged.
    current: usize,
}

impl Rollout {
    /// A rollout of `target` from `from` over `stages` (at least one), with the first action.
    /// `None` when there are no stages.
    pub fn start(stages: Vec<Stage>, from: NetworkConfig, target: NetworkConfig) -> Option<(Rollout, RolloutAction)> {
        if stages.is_empty() {
            return None;
        }
        let r = Rollout {
            stages,
            from,
            target,
            current: 0,
        };
        Some((r, RolloutAction::ApplyStage(0)))
    }

    /// The configuration in force before the rollout.
    pub fn from(&self) -> &NetworkConfig {
        &self.from
    }
    /// The configuration being rolled out.
    pub fn target(&self) -> &NetworkConfig {
        &self.target
    }
    /// The stage being applied or judged (0-based).
    pub fn current(&self) -> usize {
        self.current
    }
    /// The stages.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// What stage `i`'s devices should hold now: the target once the stage has been reached,
    /// the configuration before the rollout otherwise.
    pub fn expected(&self, i: usize) -> &NetworkConfig {
        if i <= self.current {
            &self.target
        } else {
            &self.from
        }
    }

    fn label(&self, i: usize) -> String {
        format!("stage {} of {} ({})", i + 1, self.stages.len(), self.stages[i].name)
    }

    /// How applying the current stage went: `Err(why)` (its actuators already undid their own
    /// steps) rolls back the stages before it and holds; `Ok` waits one interval (`None`).
    pub fn applied(&self, result: Result<(), String>) -> Option<RolloutAction> {
        result.err().map(|why| RolloutAction::RollBack {
            through: self.current,
            failure: format!("{} failed to apply: {why}", self.label(self.current)),
        })
    }

    /// Judges the interval measured with the current stage in force: an affected class whose
    /// SLI/SLO ratio exceeds `guard` (J ≈ the worst ratio) fails the stage; otherwise the next
    /// stage follows, or the rollout is complete.
    pub fn judge(&mut self, objective: &Objective, slis: &SliVector, guard: Option<f64>) -> RolloutAction {
        let stage = &self.stages[self.current];
        let affected = objective
            .targets()
            .iter()
            .filter(|t| stage.classes.is_empty() || stage.classes.contains(&t.dscp));
        let mut worst: Option<(String, f64)> = None;
        for t in affected {
            match t.ratio(slis) {
                Ok(r) => {
                    if worst.as_ref().is_none_or(|(_, w)| r > *w) {
                        worst = Some((t.name.clone(), r));
                    }
                }
                Err(e) => {
                    return RolloutAction::Wait {
                        why: format!("{}: {e}", self.label(self.current)),
                    }
                }
            }
        }
        if let (Some(g), Some((class, r))) = (guard, worst) {
            if r > g {
                return RolloutAction::RollBack {
                    through: self.current,
                    failure: format!(
                        "{} broke the guard: class {class} at {r:.3} × its SLO > {g}",
                        self.label(self.current)
                    ),
                };
            }
        }
        if self.current + 1 < self.stages.len() {
            self.current += 1;
            RolloutAction::ApplyStage(self.current)
        } else {
            RolloutAction::Complete
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::tests::slis;
    use polyphony_spec::{Bytes, Packets, TrafficClass};

    fn objective() -> Objective {
        Objective::new(
            &[
                TrafficClass::new("AF11", Dscp::AF11, 10.0),
                TrafficClass::new("AF21", Dscp::AF21, 20.0),
            ],
            10.0,
            0.0,
        )
        .unwrap()
    }

    fn two_stages() -> (Rollout, RolloutAction) {
        let from = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        let target = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(60_000), Packets(10));
        let stages = vec![
            Stage {
                name: "leaf1".into(),
                classes: vec![Dscp::AF11],
            },
            Stage {
                name: "rest".into(),
                classes: vec![],
            },
        ];
        Rollout::start(stages, from, target).unwrap()
    }

    #[test]
    fn staged_rollout_advances_stage_by_stage_and_completes() {
        let (mut r, a) = two_stages();
        assert_eq!(a, RolloutAction::ApplyStage(0));
        assert_eq!(r.applied(Ok(())), None);
        assert_eq!(r.expected(1), r.from());
        // AF21 is above the guard, but stage 1 affects AF11 only.
        let ok = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 100.0)]);
        assert_eq!(r.judge(&objective(), &ok, Some(2.0)), RolloutAction::ApplyStage(1));
        assert_eq!(r.expected(1), r.target());
        let fine = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        assert_eq!(r.judge(&objective(), &fine, Some(2.0)), RolloutAction::Complete);
    }

    #[test]
    fn staged_failure_rolls_back_every_stage_so_far_and_names_it() {
        let (mut r, _) = two_stages();
        let fine = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 10.0)]);
        assert_eq!(r.judge(&objective(), &fine, Some(2.0)), RolloutAction::ApplyStage(1));
        match r.applied(Err("tc: exit status 2".into())) {
            Some(RolloutAction::RollBack { through, failure }) => {
                assert_eq!(through, 1);
                assert!(
                    failure.contains("stage 2 of 2 (rest)") && failure.contains("exit status 2"),
                    "{failure}"
                );
            }
            other => panic!("{other:?}"),
        }
        // The guard on the second stage's classes.
        let (mut r, _) = two_stages();
        r.judge(&objective(), &fine, Some(2.0));
        let bad = slis(&[(Dscp::AF11, 5.0), (Dscp::AF21, 50.0)]);
        match r.judge(&objective(), &bad, Some(2.0)) {
            RolloutAction::RollBack { through: 1, failure } => {
                assert!(failure.contains("class AF21 at 2.500"), "{failure}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn staged_judgement_waits_for_a_missing_sli_of_an_affected_class() {
        let (mut r, _) = two_stages();
        let only21 = slis(&[(Dscp::AF21, 10.0)]);
        assert!(matches!(
            r.judge(&objective(), &only21, Some(2.0)),
            RolloutAction::Wait { .. }
        ));
        assert_eq!(r.current(), 0);
        assert!(Rollout::start(Vec::new(), r.from().clone(), r.target().clone()).is_none());
    }
}
