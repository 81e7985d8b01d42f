//! The Actuator trait (plan, apply, read back, roll back) and the safe command runner every actuator uses.
#![warn(missing_docs)]
