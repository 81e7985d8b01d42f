//! The generic engine behind most actuators: diff native settings, run steps, verify, undo.
//!
//! A [`Backend`] knows one device: how to turn a configuration into its native settings
//! (HTB rates, map entries, routes), how to read those settings, and which command sets one of
//! them. The [`Engine`] does everything else the same way for every device: minimal diffs,
//! stale-plan checks, ordered execution through a [`Runner`], read-back verification, undo on
//! failure, and remembering the last plan for [`Actuator::rollback`].

use crate::{
    Actuator, ActuatorError, ApplyReport, Command, Knobs, PartialConfig, Plan, RollbackOutcome, Runner, Step,
    StepFailure, VerifyFailure,
};
use polyphony_spec::{NetworkConfig, SpecError};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A device's settings: item → value; `None` = the item is not set (absent).
pub type NativeState<I, V> = BTreeMap<I, Option<V>>;

/// One device's native settings and the commands that read and change them.
pub trait Backend: Send {
    /// Identifies one setting (a class, a map entry, a route); rendered in plans.
    type Item: Ord + Clone + fmt::Display + fmt::Debug + Send;
    /// A setting's value; rendered in plans.
    type Value: Clone + PartialEq + fmt::Display + fmt::Debug + Send;

    /// The actuator's name.
    fn name(&self) -> &str;
    /// The knobs it sets.
    fn owns(&self) -> Knobs;
    /// This device's limits beyond [`NetworkConfig::validate`] (which the engine runs first).
    fn check(&self, target: &NetworkConfig) -> Result<(), ActuatorError>;
    /// The native settings that realise `cfg` (only the items this backend manages).
    fn desired(&self, cfg: &NetworkConfig) -> Result<NativeState<Self::Item, Self::Value>, ActuatorError>;
    /// Reads the managed items from the device (read only).
    fn read_state(&self, runner: &dyn Runner) -> Result<NativeState<Self::Item, Self::Value>, ActuatorError>;
    /// The command that gives `item` the value `value` (`None`: remove it).
    fn command(&self, item: &Self::Item, value: Option<&Self::Value>) -> Result<Command, ActuatorError>;
    /// The configuration knobs a native state stands for.
    fn to_partial(&self, state: &NativeState<Self::Item, Self::Value>) -> PartialConfig;
    /// Where a change goes in the plan: lower ranks first, ties in item order (the default for
    /// every change). A switch that refuses weights summing above 100 % ranks decreases first.
    fn rank(&self, _item: &Self::Item, _from: Option<&Self::Value>, _to: Option<&Self::Value>) -> u8 {
        0
    }
}

/// Drives a [`Backend`]; implements [`Actuator`].
pub struct Engine<B: Backend> {
    backend: B,
    runner: Arc<dyn Runner>,
    last: Option<Plan>,
}

fn render<V: fmt::Display>(v: Option<&V>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "absent".into())
}

impl<B: Backend> Engine<B> {
    /// An engine for `backend` running its commands through `runner`.
    pub fn new(backend: B, runner: Arc<dyn Runner>) -> Engine<B> {
        Engine {
            backend,
            runner,
            last: None,
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The native settings in force, rendered item → value (for logs and tests).
    pub fn read_native(&self) -> Result<BTreeMap<String, String>, ActuatorError> {
        Ok(self
            .backend
            .read_state(self.runner.as_ref())?
            .iter()
            .map(|(k, v)| (k.to_string(), render(v.as_ref())))
            .collect())
    }

    fn invalid(&self, e: SpecError) -> ActuatorError {
        match e {
            SpecError::Invalid { field, value, why } => ActuatorError::Invalid {
                actuator: self.backend.name().into(),
                field,
                value,
                why,
            },
            SpecError::Parse { .. } => ActuatorError::Invalid {
                actuator: self.backend.name().into(),
                field: "target".into(),
                value: String::new(),
                why: e.to_string(),
            },
        }
    }

    fn diff(
        &self,
        from: &NativeState<B::Item, B::Value>,
        to: &NativeState<B::Item, B::Value>,
    ) -> Result<Plan, ActuatorError> {
        let mut steps = Vec::new();
        for (item, want) in to {
            let have = from.get(item).cloned().flatten();
            if have.as_ref() == want.as_ref() {
                continue;
            }
            let rank = self.backend.rank(item, have.as_ref(), want.as_ref());
            steps.push((
                rank,
                Step {
                    actuator: self.backend.name().into(),
                    item: item.to_string(),
                    from: render(have.as_ref()),
                    to: render(want.as_ref()),
                    forward: self.backend.command(item, want.as_ref())?,
                    undo: self.backend.command(item, have.as_ref())?,
                },
            ));
        }
        steps.sort_by_key(|(rank, _)| *rank);
        Ok(Plan {
            steps: steps.into_iter().map(|(_, s)| s).collect(),
        })
    }

    fn live_rendered(&self) -> Result<BTreeMap<String, String>, ActuatorError> {
        self.read_native()
    }

    /// Runs the undo commands of `steps` in reverse order.
    fn undo(&self, steps: &[Step]) -> RollbackOutcome {
        if steps.is_empty() {
            return RollbackOutcome::NothingApplied;
        }
        let mut failures = Vec::new();
        let mut undone = 0;
        for s in steps.iter().rev() {
            match self.runner.run(&s.undo) {
                Ok(_) => undone += 1,
                Err(e) => failures.push(format!("`{}`: {e}", s.undo)),
            }
        }
        if failures.is_empty() {
            RollbackOutcome::Complete { undone }
        } else {
            tracing::error!(actuator = self.backend.name(), ?failures, "roll back incomplete");
            RollbackOutcome::Incomplete { undone, failures }
        }
    }
}

impl<B: Backend> Actuator for Engine<B> {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn owns(&self) -> Knobs {
        self.backend.owns()
    }

    fn validate(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        target.validate().map_err(|e| self.invalid(e))?;
        self.backend.check(target)
    }

    fn plan(&self, current: &NetworkConfig, target: &NetworkConfig) -> Result<Plan, ActuatorError> {
        self.validate(target)?;
        let from = self.backend.desired(current)?;
        let to = self.backend.desired(target)?;
        self.diff(&from, &to)
    }

    fn plan_live(&self, target: &NetworkConfig) -> Result<Plan, ActuatorError> {
        self.validate(target)?;
        let to = self.backend.desired(target)?;
        let from = self.backend.read_state(self.runner.as_ref())?;
        self.diff(&from, &to)
    }

    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, ActuatorError> {
        let name = self.backend.name().to_string();
        if let Some(s) = plan.steps.iter().find(|s| s.actuator != name) {
            return Err(ActuatorError::Unsupported {
                actuator: name,
                why: format!(
                    "the plan's step for {} belongs to actuator `{}`; apply it through that actuator (or a Composite)",
                    s.item, s.actuator
                ),
            });
        }
        let live = self.live_rendered()?;
        for s in &plan.steps {
            let found = live.get(&s.item).cloned().unwrap_or_else(|| "absent".into());
            if found != s.from {
                return Err(ActuatorError::Stale {
                    actuator: name,
                    item: s.item.clone(),
                    expected: s.from.clone(),
                    found,
                });
            }
        }
        let total = plan.steps.len();
        let mut report = ApplyReport::default();
        for (i, s) in plan.steps.iter().enumerate() {
            tracing::info!(actuator = %name, item = %s.item, from = %s.from, to = %s.to, "apply");
            if let Err(error) = self.runner.run(&s.forward) {
                let rollback = self.undo(&plan.steps[..i]);
                return Err(ActuatorError::Failed(Box::new(StepFailure {
                    actuator: name,
                    index: i + 1,
                    total,
                    item: s.item.clone(),
                    command: s.forward.to_string(),
                    error,
                    rollback,
                })));
            }
            report.executed.push(s.forward.to_string());
        }
        let after = match self.live_rendered() {
            Ok(a) => a,
            Err(e) => {
                let rollback = self.undo(&plan.steps);
                return Err(ActuatorError::Verify(Box::new(VerifyFailure {
                    actuator: name,
                    item: "(read back)".into(),
                    expected: "the planned state".into(),
                    found: e.to_string(),
                    rollback,
                })));
            }
        };
        for s in &plan.steps {
            let found = after.get(&s.item).cloned().unwrap_or_else(|| "absent".into());
            if found != s.to {
                let rollback = self.undo(&plan.steps);
                return Err(ActuatorError::Verify(Box::new(VerifyFailure {
                    actuator: name,
                    item: s.item.clone(),
                    expected: s.to.clone(),
                    found,
                    rollback,
                })));
            }
        }
        self.last = Some(plan.clone());
        Ok(report)
    }

    fn read_back(&self) -> Result<PartialConfig, ActuatorError> {
        let state = self.backend.read_state(self.runner.as_ref())?;
        Ok(self.backend.to_partial(&state))
    }

    fn rollback(&mut self) -> Result<ApplyReport, ActuatorError> {
        let name = self.backend.name().to_string();
        let Some(plan) = self.last.take() else {
            return Err(ActuatorError::NothingToRollBack { actuator: name });
        };
        let outcome = self.undo(&plan.steps);
        if !outcome.is_clean() {
            return Err(ActuatorError::RollbackFailed {
                actuator: name,
                rollback: outcome,
            });
        }
        Ok(ApplyReport {
            executed: plan.steps.iter().rev().map(|s| s.undo.to_string()).collect(),
        })
    }
}
