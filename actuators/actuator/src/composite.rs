//! [`Composite`]: several actuators applied in order as one, all or nothing.

use crate::{Actuator, ActuatorError, ApplyReport, Knobs, PartialConfig, Plan, RollbackOutcome};
use polyphony_spec::NetworkConfig;

/// Applies its members in order; if one fails (it undoes its own steps), the members applied
/// before it are rolled back too, so the previous configuration stays in force everywhere.
pub struct Composite {
    name: String,
    members: Vec<Box<dyn Actuator + Send>>,
    /// The members the last successful apply touched (for roll back).
    applied: Option<Vec<usize>>,
}

impl Composite {
    /// A composite of `members`, applied in the given order. Member names must be unique.
    pub fn new(members: Vec<Box<dyn Actuator + Send>>) -> Result<Composite, ActuatorError> {
        for (i, m) in members.iter().enumerate() {
            if members[..i].iter().any(|o| o.name() == m.name()) {
                return Err(ActuatorError::Config {
                    actuator: "composite".into(),
                    why: format!("two actuators are named `{}`; give each a unique name", m.name()),
                });
            }
        }
        let name = members.iter().map(|m| m.name()).collect::<Vec<_>>().join("+");
        Ok(Composite {
            name,
            members,
            applied: None,
        })
    }

    /// The member actuators.
    pub fn members(&self) -> &[Box<dyn Actuator + Send>] {
        &self.members
    }

    fn roll_back_members(&mut self, idx: &[usize]) -> RollbackOutcome {
        if idx.is_empty() {
            return RollbackOutcome::NothingApplied;
        }
        let mut undone = 0;
        let mut failures = Vec::new();
        for &i in idx.iter().rev() {
            match self.members[i].rollback() {
                Ok(r) => undone += r.executed.len(),
                Err(e) => failures.push(e.to_string()),
            }
        }
        if failures.is_empty() {
            RollbackOutcome::Complete { undone }
        } else {
            RollbackOutcome::Incomplete { undone, failures }
        }
    }
}

impl Actuator for Composite {
    fn name(&self) -> &str {
        &self.name
    }

    fn owns(&self) -> Knobs {
        self.members.iter().fold(Knobs::default(), |k, m| k.union(m.owns()))
    }

    fn validate(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        self.members.iter().try_for_each(|m| m.validate(target))
    }

    fn plan(&self, current: &NetworkConfig, target: &NetworkConfig) -> Result<Plan, ActuatorError> {
        self.validate(target)?;
        let mut plan = Plan::default();
        for m in &self.members {
            plan.steps.extend(m.plan(current, target)?.steps);
        }
        Ok(plan)
    }

    fn plan_live(&self, target: &NetworkConfig) -> Result<Plan, ActuatorError> {
        self.validate(target)?;
        let mut plan = Plan::default();
        for m in &self.members {
            plan.steps.extend(m.plan_live(target)?.steps);
        }
        Ok(plan)
    }

    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, ActuatorError> {
        if let Some(s) = plan
            .steps
            .iter()
            .find(|s| !self.members.iter().any(|m| m.name() == s.actuator))
        {
            return Err(ActuatorError::Unsupported {
                actuator: self.name.clone(),
                why: format!("no member actuator is named `{}` (step {})", s.actuator, s.item),
            });
        }
        let mut done: Vec<usize> = Vec::new();
        let mut report = ApplyReport::default();
        for i in 0..self.members.len() {
            let part = plan.for_actuator(self.members[i].name());
            if part.is_empty() {
                continue;
            }
            match self.members[i].apply(&part) {
                Ok(r) => {
                    report.executed.extend(r.executed);
                    done.push(i);
                }
                Err(e) => {
                    // The members' own roll-back history is consumed by undoing them: the state
                    // is what it was before this apply, with nothing left to roll back.
                    self.applied = None;
                    let others = self.roll_back_members(&done);
                    return Err(ActuatorError::Composite {
                        failed: Box::new(e),
                        others,
                    });
                }
            }
        }
        self.applied = Some(done);
        Ok(report)
    }

    fn read_back(&self) -> Result<PartialConfig, ActuatorError> {
        let mut out = PartialConfig::default();
        for m in &self.members {
            out.merge(&m.read_back()?);
        }
        Ok(out)
    }

    fn rollback(&mut self) -> Result<ApplyReport, ActuatorError> {
        let Some(done) = self.applied.take() else {
            return Err(ActuatorError::NothingToRollBack {
                actuator: self.name.clone(),
            });
        };
        let mut report = ApplyReport::default();
        let mut failures = Vec::new();
        for &i in done.iter().rev() {
            match self.members[i].rollback() {
                Ok(r) => report.executed.extend(r.executed),
                Err(e) => failures.push(e.to_string()),
            }
        }
        if failures.is_empty() {
            Ok(report)
        } else {
            Err(ActuatorError::RollbackFailed {
                actuator: self.name.clone(),
                rollback: RollbackOutcome::Incomplete {
                    undone: report.executed.len(),
                    failures,
                },
            })
        }
    }
}
