//! The [`Actuator`] trait: plan → apply → read back → roll back, the same for every device.

use crate::{ActuatorError, ApplyReport, Knobs, PartialConfig, Plan};
use polyphony_spec::NetworkConfig;

/// Something that changes part of the network's configuration.
///
/// Usage by the daemon: `let plan = a.plan_live(&target)?;` (touches nothing; print it in
/// advice mode), then `a.apply(&plan)?`; later `a.rollback()?` to restore what was in force
/// before. `a.plan_live(&target)?.is_empty()` tells whether `target` is in force.
///
/// Object safe: the daemon holds `Box<dyn Actuator + Send>`.
pub trait Actuator: Send {
    /// A short unique name (`tc`, `iproute`, `switch`), used in plans, logs and errors.
    fn name(&self) -> &str;

    /// The knobs this actuator sets.
    fn owns(&self) -> Knobs;

    /// Checks `target` against the knob ranges ([`NetworkConfig::validate`]) and this
    /// actuator's own limits. Touches nothing. The error names the class and the knob.
    fn validate(&self, target: &NetworkConfig) -> Result<(), ActuatorError>;

    /// The operations that take the system from `current` to `target`, only for settings whose
    /// value differs (minimal diff). Validates `target` first. Pure: touches nothing and reads
    /// nothing, so it also serves advice mode on a machine that is not the device.
    fn plan(&self, current: &NetworkConfig, target: &NetworkConfig) -> Result<Plan, ActuatorError>;

    /// Like [`Actuator::plan`], starting from the state read from the system (read only).
    fn plan_live(&self, target: &NetworkConfig) -> Result<Plan, ActuatorError>;

    /// Applies this actuator's steps of `plan` in order. Before touching anything, checks that
    /// every setting still has the plan's starting value; after applying, reads back and checks
    /// every setting has the planned value. If an operation fails or a setting does not read
    /// back, undoes the steps already applied (in reverse) and reports which step failed and why.
    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, ActuatorError>;

    /// The knobs this actuator owns as actually in force on the system.
    fn read_back(&self) -> Result<PartialConfig, ActuatorError>;

    /// Undoes the last successfully applied plan, restoring the configuration in force before it.
    fn rollback(&mut self) -> Result<ApplyReport, ActuatorError>;
}
