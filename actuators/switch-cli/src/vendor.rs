//! The backend shared by the vendor dialects: per-queue weights and ECN profiles from a
//! configuration, read through the dialect's show commands, written through its CLI.

use crate::config::VendorConfig;
use crate::dialect::{percentages, Dialect, QueueItem, QueueValue};
use polyphony_actuator::{ActuatorError, Backend, Command, Knobs, NativeState, PartialConfig, Runner, Transport};
use polyphony_spec::{Bytes, Dscp, NetworkConfig};
use std::sync::Arc;

/// Drives one vendor switch in dialect `D`.
#[derive(Debug)]
pub struct VendorBackend<D: Dialect> {
    cfg: VendorConfig,
    dialect: D,
    transport: Arc<dyn Transport>,
}

impl<D: Dialect> VendorBackend<D> {
    /// Checks `cfg` (queues 0..=7, each class once).
    pub fn new(cfg: VendorConfig, dialect: D, transport: Arc<dyn Transport>) -> Result<Self, ActuatorError> {
        let bad = |why: String| ActuatorError::Config {
            actuator: cfg.name.clone(),
            why,
        };
        if cfg.queues.is_empty() {
            return Err(bad("`queues` is empty: map each class DSCP to an egress queue".into()));
        }
        for (i, q) in cfg.queues.iter().enumerate() {
            if q.queue > 7 {
                return Err(bad(format!("queue {} for DSCP {}: queues are 0..=7", q.queue, q.dscp)));
            }
            if cfg.queues[..i].iter().any(|o| o.dscp == q.dscp || o.queue == q.queue) {
                return Err(bad(format!(
                    "DSCP {} / queue {} appears twice in `queues`; map each class to its own queue",
                    q.dscp, q.queue
                )));
            }
        }
        if cfg.object_prefix.is_empty()
            || !cfg
                .object_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(bad(format!(
                "object_prefix = \"{}\": use letters, digits, '-' and '_'",
                cfg.object_prefix
            )));
        }
        Ok(VendorBackend {
            cfg,
            dialect,
            transport,
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> &D {
        &self.dialect
    }

    /// The one-time setup script that attaches the objects to the ports.
    pub fn setup_script(&self) -> String {
        self.dialect.setup(&self.cfg)
    }

    fn queue_of(&self, dscp: Dscp) -> Option<u8> {
        self.cfg.queues.iter().find(|q| q.dscp == dscp).map(|q| q.queue)
    }

    fn invalid(&self, field: String, value: String, why: String) -> ActuatorError {
        ActuatorError::Invalid {
            actuator: self.cfg.name.clone(),
            field,
            value,
            why,
        }
    }
}

impl<D: Dialect> Backend for VendorBackend<D> {
    type Item = QueueItem;
    type Value = QueueValue;

    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn owns(&self) -> Knobs {
        Knobs {
            weight: true,
            ecn_threshold: true,
            ..Knobs::default()
        }
    }

    fn check(&self, target: &NetworkConfig) -> Result<(), ActuatorError> {
        for c in &target.classes {
            let who = format!("class {} (DSCP {})", c.dscp.name(), c.dscp);
            if self.queue_of(c.dscp).is_none() {
                return Err(self.invalid(
                    format!("{who}.weight"),
                    c.weight.to_string(),
                    format!(
                        "no egress queue is mapped to DSCP {} on switch {}; add it to `queues`",
                        c.dscp, self.cfg.name
                    ),
                ));
            }
            if c.weight < 0.005 {
                return Err(self.invalid(
                    format!("{who}.weight"),
                    c.weight.to_string(),
                    format!(
                        "{} weights are whole percentages: use at least 0.005",
                        self.dialect.name()
                    ),
                ));
            }
            if c.ecn_threshold > self.dialect.max_threshold() {
                return Err(self.invalid(
                    format!("{who}.ecn_threshold"),
                    c.ecn_threshold.to_string(),
                    format!("above the switch's buffer ({}); lower K", self.dialect.max_threshold()),
                ));
            }
        }
        Ok(())
    }

    fn desired(&self, cfg: &NetworkConfig) -> Result<NativeState<QueueItem, QueueValue>, ActuatorError> {
        let weights: Vec<f64> = cfg.classes.iter().map(|c| c.weight).collect();
        let pct = percentages(&weights);
        let mut s = NativeState::new();
        for (c, p) in cfg.classes.iter().zip(pct) {
            let Some(queue) = self.queue_of(c.dscp) else {
                continue;
            };
            s.insert(QueueItem::Weight { queue, dscp: c.dscp }, Some(QueueValue::Percent(p)));
            s.insert(
                QueueItem::Ecn { queue, dscp: c.dscp },
                Some(self.dialect.thresholds(c.ecn_threshold)),
            );
        }
        Ok(s)
    }

    fn read_state(&self, runner: &dyn Runner) -> Result<NativeState<QueueItem, QueueValue>, ActuatorError> {
        let mut outputs = Vec::new();
        let mut shown = Vec::new();
        for c in self.dialect.read(&self.cfg) {
            let cmd = self.transport.wrap(c);
            shown.push(cmd.to_string());
            let out = runner.run(&cmd).map_err(|error| ActuatorError::Read {
                actuator: self.cfg.name.clone(),
                command: cmd.to_string(),
                error,
            })?;
            outputs.push(out.stdout);
        }
        self.dialect
            .parse(&self.cfg, &outputs)
            .map_err(|why| ActuatorError::Parse {
                actuator: self.cfg.name.clone(),
                command: shown.join(" ; "),
                why,
            })
    }

    fn command(&self, item: &QueueItem, value: Option<&QueueValue>) -> Result<Command, ActuatorError> {
        Ok(self.transport.wrap(self.dialect.set(&self.cfg, item, value)))
    }

    /// Weight decreases first, then increases, then ECN profiles: the percentages on the switch
    /// never sum above 100 in between (undo runs in reverse, which again lowers before raising).
    fn rank(&self, item: &QueueItem, from: Option<&QueueValue>, to: Option<&QueueValue>) -> u8 {
        match (item, from, to) {
            (QueueItem::Weight { .. }, Some(QueueValue::Percent(a)), Some(QueueValue::Percent(b))) if b < a => 0,
            (QueueItem::Weight { .. }, _, None) => 0,
            (QueueItem::Weight { .. }, _, _) => 1,
            (QueueItem::Ecn { .. }, _, _) => 2,
        }
    }

    fn to_partial(&self, state: &NativeState<QueueItem, QueueValue>) -> PartialConfig {
        let mut p = PartialConfig::default();
        for (item, v) in state {
            match v {
                Some(QueueValue::Percent(x)) => p.class_mut(item.dscp()).weight = Some(*x as f64 / 100.0),
                Some(QueueValue::Thresholds { min, .. }) => p.class_mut(item.dscp()).ecn_threshold = Some(Bytes(min.0)),
                None => {}
            }
        }
        p
    }
}
