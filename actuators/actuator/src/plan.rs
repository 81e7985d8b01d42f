//! A plan: the ordered operations that take the system from one configuration to another.
//!
//! Every [`Step`] names the setting it changes, its value before and after, the exact command
//! that makes the change and the exact command that undoes it. Rendering a plan
//! ([`std::fmt::Display`]) is the dry run: it shows what would be executed, touching nothing.

use crate::Command;
use std::fmt;

/// One operation of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Name of the actuator that owns the setting (and applies the step).
    pub actuator: String,
    /// The setting, e.g. `htb class 1:10 on pp-sw/rx`.
    pub item: String,
    /// Its value now, rendered (`absent` when not set).
    pub from: String,
    /// Its value after the step, rendered.
    pub to: String,
    /// The command that makes the change.
    pub forward: Command,
    /// The command that restores `from`.
    pub undo: Command,
}

/// Operations in the order they are applied; undone in reverse order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The operations.
    pub steps: Vec<Step>,
}

impl Plan {
    /// True when nothing needs to change (the target is already in force).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// The steps that belong to actuator `name`, as a plan of their own.
    pub fn for_actuator(&self, name: &str) -> Plan {
        Plan {
            steps: self.steps.iter().filter(|s| s.actuator == name).cloned().collect(),
        }
    }

    /// The exact commands the plan would run, one per line (no undo commands).
    pub fn commands(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.forward.to_string()).collect()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.steps.is_empty() {
            return writeln!(f, "# nothing to change: the target is in force");
        }
        writeln!(f, "# {} operation(s), applied in order", self.steps.len())?;
        for (i, s) in self.steps.iter().enumerate() {
            writeln!(f, "# [{}] {}: {}: {} -> {}", i + 1, s.actuator, s.item, s.from, s.to)?;
            writeln!(f, "{}", s.forward)?;
            writeln!(f, "#     undo: {}", s.undo.to_string().replace('\n', "\n#     "))?;
        }
        Ok(())
    }
}

/// What an apply or a roll back did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyReport {
    /// The commands that ran successfully, in order.
    pub executed: Vec<String>,
}
