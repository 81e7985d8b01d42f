//! Building the configured actuators (one all-or-nothing [`Composite`]) and driving them:
//! apply a target configuration (plan from what is read live, apply, verify — the actuator crate
//! does the work), or render a dry run. Touches the network only through the actuators.

use crate::config::{ActuatorsSection, SwitchSection};
use anyhow::{anyhow, Result};
use polyphony_actuator::{Actuator, Composite, Plan};
use polyphony_actuator_switch_cli::{switch_actuator, SwitchConfig};
use polyphony_spec::NetworkConfig;

/// Builds the composite of the configured actuators (switch, tc, iproute, in that order);
/// `None` when none is configured. Construction may probe the device (read only).
pub fn build(section: &ActuatorsSection) -> Result<Option<Composite>> {
    let mut members: Vec<Box<dyn Actuator + Send>> = Vec::new();
    if let Some(c) = &section.switch {
        let built = match c.clone() {
            SwitchSection::LinuxTc(t) => {
                polyphony_actuator_tc::tc_over_ssh(t).map(|a| Box::new(a) as Box<dyn Actuator + Send>)
            }
            SwitchSection::DellOs9(v) => switch_actuator(SwitchConfig::DellOs9(v)),
            SwitchSection::Sonic(v) => switch_actuator(SwitchConfig::Sonic(v)),
        };
        members.push(built.map_err(|e| anyhow!("actuators.switch: {e}"))?);
    }
    if let Some(c) = &section.tc {
        members.push(Box::new(
            polyphony_actuator_tc::tc_actuator(c.clone()).map_err(|e| anyhow!("actuators.tc: {e}"))?,
        ));
    }
    if let Some(c) = &section.iproute {
        members.push(Box::new(
            polyphony_actuator_iproute::iproute_actuator(c.clone()).map_err(|e| anyhow!("actuators.iproute: {e}"))?,
        ));
    }
    if members.is_empty() {
        return Ok(None);
    }
    Ok(Some(Composite::new(members).map_err(|e| anyhow!("actuators: {e}"))?))
}

/// The outcome of one apply.
#[derive(Debug)]
pub struct Applied {
    /// The plan that was run (empty when the target was already in force).
    pub plan: Plan,
}

/// Brings the network to `target`: plans from the live state, applies, verifies. On failure
/// the composite has already restored what was in force; the error says what failed.
/// Blocking (runs commands); call from a blocking thread.
pub fn apply(actuators: &mut Composite, target: &NetworkConfig) -> Result<Applied> {
    let plan = actuators.plan_live(target).map_err(|e| anyhow!("planning: {e}"))?;
    if plan.is_empty() {
        return Ok(Applied { plan });
    }
    actuators.apply(&plan).map_err(|e| anyhow!("{e}"))?;
    Ok(Applied { plan })
}

/// Like [`apply`], touching only the member actuators `only` names (a stage of a staged
/// apply, or every device the daemon does not stand aside from).
pub fn apply_only(actuators: &mut Composite, target: &NetworkConfig, only: &[String]) -> Result<Applied> {
    let mut plan = actuators.plan_live(target).map_err(|e| anyhow!("planning: {e}"))?;
    plan.steps.retain(|s| only.contains(&s.actuator));
    if plan.is_empty() {
        return Ok(Applied { plan });
    }
    actuators.apply(&plan).map_err(|e| anyhow!("{e}"))?;
    Ok(Applied { plan })
}

/// One device's settings that differ from what it should hold: (setting, expected, found).
pub type Drift = Vec<(String, String, String)>;

/// For each member not in `skip`, the settings that differ from `expected(member name)`, read
/// live (read only). Members whose settings all match are left out.
pub fn drift<'a>(
    actuators: &Composite,
    expected: impl Fn(&str) -> &'a NetworkConfig,
    skip: &[String],
) -> Result<Vec<(String, Drift)>> {
    let mut out = Vec::new();
    for m in actuators.members() {
        if skip.iter().any(|s| s == m.name()) {
            continue;
        }
        let plan = m
            .plan_live(expected(m.name()))
            .map_err(|e| anyhow!("reading back {}: {e}", m.name()))?;
        if !plan.is_empty() {
            let knobs = plan.steps.into_iter().map(|s| (s.item, s.to, s.from)).collect();
            out.push((m.name().to_string(), knobs));
        }
    }
    Ok(out)
}

/// What the members `only` hold, written over `base` (read only).
pub fn read_back_over(actuators: &Composite, base: &NetworkConfig, only: &[String]) -> Result<NetworkConfig> {
    let mut part = polyphony_actuator::PartialConfig::default();
    for m in actuators
        .members()
        .iter()
        .filter(|m| only.iter().any(|o| o == m.name()))
    {
        part.merge(&m.read_back().map_err(|e| anyhow!("reading back {}: {e}", m.name()))?);
    }
    Ok(part.overlay(base))
}

/// The dry run: the commands that would take the network from `current` to `target`, without
/// reading or touching anything.
pub fn dry_run(actuators: &Composite, current: &NetworkConfig, target: &NetworkConfig) -> Result<Plan> {
    actuators.plan(current, target).map_err(|e| anyhow!("{e}"))
}
