//! The Actuator trait (plan, apply, read back, roll back) and the safe command runner every
//! actuator uses.
//!
//! An actuator turns a target [`polyphony_spec::NetworkConfig`] into a [`Plan`] of concrete
//! operations, each an argument vector ([`Command`], never a shell string) with the command that
//! undoes it. Planning touches nothing, so rendering a plan is the dry run used by advice mode.
//! Applying runs the operations in order through a [`Runner`] (timeout, captured output), checks
//! first that the plan still starts from what is in force, verifies by reading back afterwards,
//! and undoes every applied operation when one fails. [`Composite`] chains several actuators with
//! the same all-or-nothing rule.
//!
//! Most actuators are a [`Backend`] (how to read, render and compare one device's native
//! settings) driven by the generic [`Engine`]; this crate owns the engine, the runner and the
//! transports (local, SSH) and touches the system only through a runner.
#![warn(missing_docs)]

mod actuator;
mod command;
mod composite;
mod engine;
mod error;
pub mod golden;
mod partial;
mod plan;
mod runner;
mod transport;

pub use actuator::Actuator;
pub use command::Command;
pub use composite::Composite;
pub use engine::{Backend, Engine, NativeState};
pub use error::{ActuatorError, RollbackOutcome, StepFailure, VerifyFailure};
pub use partial::{Knobs, PartialClass, PartialConfig};
pub use plan::{ApplyReport, Plan, Step};
pub use runner::{Output, RunError, Runner, SystemRunner, DEFAULT_TIMEOUT};
pub use transport::{Local, SshConfig, SshTransport, Transport};
