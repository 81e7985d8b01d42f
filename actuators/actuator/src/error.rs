//! Errors of planning, applying, reading back and rolling back; each names the actuator, the
//! setting or command involved, and what state the system was left in.

use crate::RunError;
use std::fmt;
use thiserror::Error;

/// What happened to the operations already applied when a later one failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollbackOutcome {
    /// No operation had been applied; nothing was touched.
    NothingApplied,
    /// Every applied operation was undone; the previous configuration is in force.
    Complete {
        /// Number of operations undone.
        undone: usize,
    },
    /// Some undo commands failed: the system may be in a mixed state and needs an operator.
    Incomplete {
        /// Number of operations undone.
        undone: usize,
        /// `command: error` for each undo that failed.
        failures: Vec<String>,
    },
}

impl RollbackOutcome {
    /// True unless an undo failed.
    pub fn is_clean(&self) -> bool {
        !matches!(self, RollbackOutcome::Incomplete { .. })
    }
}

impl fmt::Display for RollbackOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollbackOutcome::NothingApplied => f.write_str("nothing had been applied"),
            RollbackOutcome::Complete { undone } => write!(
                f,
                "rolled back the {undone} operation(s) already applied; the previous configuration is in force"
            ),
            RollbackOutcome::Incomplete { undone, failures } => write!(
                f,
                "ROLLBACK INCOMPLETE ({undone} undone, {} failed: {}); inspect the device by hand",
                failures.len(),
                failures.join("; ")
            ),
        }
    }
}

/// Everything that can go wrong in an actuator.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ActuatorError {
    /// The target is outside the knob ranges; nothing was touched.
    #[error("{actuator}: invalid target, nothing touched: {field} = {value}: {why}")]
    Invalid {
        /// The actuator.
        actuator: String,
        /// Class and knob, e.g. `class AF21 (DSCP 18).ecn_threshold`.
        field: String,
        /// The offending value.
        value: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// The actuator's own configuration is unusable.
    #[error("{actuator}: bad actuator configuration: {why}")]
    Config {
        /// The actuator.
        actuator: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// Reading the state failed.
    #[error("{actuator}: reading the state with `{command}` failed: {error}")]
    Read {
        /// The actuator.
        actuator: String,
        /// The command.
        command: String,
        /// Why it failed.
        error: RunError,
    },
    /// A command's output was not what the actuator understands.
    #[error("{actuator}: could not understand the output of `{command}`: {why}")]
    Parse {
        /// The actuator.
        actuator: String,
        /// The command.
        command: String,
        /// What was unexpected.
        why: String,
    },
    /// The live state no longer matches what the plan starts from; nothing was touched.
    #[error("{actuator}: stale plan, nothing touched: {item} is {found} but the plan starts from {expected}; plan again from the live state")]
    Stale {
        /// The actuator.
        actuator: String,
        /// The setting.
        item: String,
        /// The plan's starting value.
        expected: String,
        /// The live value.
        found: String,
    },
    /// An operation failed; the operations before it were undone.
    #[error("{0}")]
    Failed(Box<StepFailure>),
    /// After applying, a setting did not read back as planned; the plan was undone.
    #[error("{0}")]
    Verify(Box<VerifyFailure>),
    /// Rolling back a previously applied plan failed for some settings.
    #[error("{actuator}: roll back: {rollback}")]
    RollbackFailed {
        /// The actuator.
        actuator: String,
        /// Which undo commands failed.
        rollback: RollbackOutcome,
    },
    /// One actuator of a composite failed; the ones applied before it were rolled back.
    #[error("{failed}; earlier actuators: {others}")]
    Composite {
        /// The failure of the actuator that failed (which already undid its own steps).
        failed: Box<ActuatorError>,
        /// What happened to the actuators applied before it.
        others: RollbackOutcome,
    },
    /// The operation is not possible with this actuator.
    #[error("{actuator}: {why}")]
    Unsupported {
        /// The actuator.
        actuator: String,
        /// What is not possible and what to do instead.
        why: String,
    },
    /// `rollback` was called with no applied plan to undo.
    #[error("{actuator}: nothing to roll back (no plan applied since the last roll back)")]
    NothingToRollBack {
        /// The actuator.
        actuator: String,
    },
}

impl ActuatorError {
    /// The rollback outcome carried by a failure of apply, if any.
    pub fn rollback(&self) -> Option<&RollbackOutcome> {
        match self {
            ActuatorError::Failed(f) => Some(&f.rollback),
            ActuatorError::Verify(v) => Some(&v.rollback),
            ActuatorError::RollbackFailed { rollback, .. } => Some(rollback),
            ActuatorError::Composite { failed, others } => {
                if others.is_clean() {
                    failed.rollback()
                } else {
                    Some(others)
                }
            }
            _ => None,
        }
    }
}

/// An operation of a plan that failed, and what became of the ones before it.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{actuator}: operation {index} of {total} ({item}) failed: `{command}` {error}; {rollback}")]
pub struct StepFailure {
    /// The actuator.
    pub actuator: String,
    /// 1-based position of the failed step in the plan.
    pub index: usize,
    /// Number of steps in the plan.
    pub total: usize,
    /// The setting the step changes.
    pub item: String,
    /// The failed command.
    pub command: String,
    /// Why it failed.
    pub error: RunError,
    /// What happened to the steps already applied.
    pub rollback: RollbackOutcome,
}

/// A setting that did not read back as planned after applying, and what became of the plan.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{actuator}: after applying, {item} reads back as {found} instead of {expected}; {rollback}")]
pub struct VerifyFailure {
    /// The actuator.
    pub actuator: String,
    /// The setting.
    pub item: String,
    /// Planned value.
    pub expected: String,
    /// Value read back.
    pub found: String,
    /// What happened to the plan's steps.
    pub rollback: RollbackOutcome,
}
