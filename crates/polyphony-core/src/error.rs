//! The error type of the controller core. Every message says what was wrong, the offending
//! value, and what to do about it. Touches nothing outside this crate.

use thiserror::Error;

/// What can go wrong inside the controller core.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CoreError {
    /// The knob space is malformed; `knob` names the knob or simplex block.
    #[error("{knob}: {why}")]
    InvalidSpace {
        /// `"AF11.ecn_threshold"`, `"simplex weights"`, or `"knob space"`.
        knob: String,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// A controller parameter is out of range; `field` names it.
    #[error("controller parameter {field} = {value}: {why}")]
    InvalidParam {
        /// Field name in [`crate::ControllerParams`].
        field: String,
        /// The offending value, rendered.
        value: String,
        /// The allowed range and why.
        why: String,
    },
    /// An SLI vector cannot be turned into an objective value.
    #[error("SLI of class {class}: {why}")]
    InvalidSli {
        /// The class name.
        class: String,
        /// What is wrong.
        why: String,
    },
    /// A configuration does not fit the knob space or cannot be applied.
    #[error("configuration: {0}")]
    InvalidConfig(String),
    /// The traffic classes given to the objective are unusable.
    #[error("objective: {0}")]
    InvalidObjective(String),
    /// The performance model failed.
    #[error("performance model: {0}")]
    Model(#[from] crate::model::ModelError),
    /// `propose` was called before any `observe`.
    #[error("no observation yet: call observe() with the SLIs measured at the current configuration before propose()")]
    NoObservation,
    /// Serialised controller state could not be read or written.
    #[error("controller state: {0}")]
    State(String),
}
