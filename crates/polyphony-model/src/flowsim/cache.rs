//! The plan of the last input a [`FlowSim`](super::FlowSim) value evaluated, kept for the next
//! call on the same input.
//!
//! The controller scores many batches per iteration on one workload window with one
//! common-random-number seed (DESIGN.md, step 6), so everything about an evaluation that does
//! not depend on the configuration — routes, ideal FCTs, per-link flow lists, and for the
//! aggregate mode its per-flow terms ([`AggPlan`]) — is the same from call to call. It is
//! computed on the first call for an input and reused while the calls bring the same input.
//!
//! **Ownership.** Each `FlowSim` value owns one [`PlanCache`] holding at most one plan (no
//! global state); the plan is dropped with the value or replaced by the next input's. The
//! entry keeps the input's workload and topology `Arc`s alive, so "the same input" can be
//! decided by pointer: while the entry holds them, neither can be freed (and its address
//! reused) nor changed in place (`Arc::get_mut` fails, `Arc::make_mut` copies). A plan depends
//! on the workload, the topology, the class list, the ECMP seed and the measurement window;
//! an input differing in any of them is planned afresh. `keep_flows` does not enter a plan.
//!
//! **Threads.** The model is `Sync` and is called from several threads at once with parts of one
//! batch (`polyphony_model::WindowModel`): the first caller plans while holding the
//! lock, the others wait and then share the plan; the aggregate part is built once on first
//! use (`OnceLock`). Only complete plans are stored: a plan is built before the stored one is
//! replaced, so a panic while planning leaves the previous plan in place, never a half-written
//! one. Planning errors are not cached. Callers that run different windows at the same time
//! (the evaluation harness's parallel runs) should give each its own model value, or they
//! re-plan on nearly every call.
//!
//! May touch only its own state; the plan itself is built by the parent module.

use super::aggregate::AggPlan;
use super::Plan;
use crate::correction::WindowFeatures;
use crate::error::ModelError;
use crate::model::ModelInput;
use crate::topology::Topology;
use polyphony_spec::{Dscp, Nanos, Workload};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A plan, and its aggregate-mode part once some call needed it.
pub(crate) struct Planned {
    pub plan: Plan,
    agg: OnceLock<AggPlan>,
    window: OnceLock<Arc<WindowFeatures>>,
}

impl Planned {
    /// The aggregate mode's plan (built on first use from `input`, the input this plan was
    /// made for).
    pub fn agg(&self, input: &ModelInput) -> &AggPlan {
        self.agg.get_or_init(|| AggPlan::new(input, &self.plan))
    }

    /// The learned correction's window features (built on first use from `input`).
    pub fn window(&self, input: &ModelInput) -> Arc<WindowFeatures> {
        self.window
            .get_or_init(|| {
                Arc::new(WindowFeatures::new(
                    input,
                    &self
                        .plan
                        .link_loads(input.classes.len(), input.workload.duration.0 as f64),
                ))
            })
            .clone()
    }
}

/// Everything of a [`ModelInput`] a plan depends on.
#[derive(Clone)]
struct PlanKey {
    workload: Arc<Workload>,
    topology: Arc<Topology>,
    classes: Vec<Dscp>,
    seed: u64,
    measure_from: Nanos,
    measure_until: Option<Nanos>,
}

impl PlanKey {
    fn of(input: &ModelInput) -> PlanKey {
        PlanKey {
            workload: input.workload.clone(),
            topology: input.topology.clone(),
            classes: input.classes.clone(),
            seed: input.seed,
            measure_from: input.measure_from,
            measure_until: input.measure_until,
        }
    }

    fn matches(&self, input: &ModelInput) -> bool {
        Arc::ptr_eq(&self.workload, &input.workload)
            && Arc::ptr_eq(&self.topology, &input.topology)
            && self.classes == input.classes
            && self.seed == input.seed
            && self.measure_from == input.measure_from
            && self.measure_until == input.measure_until
    }
}

/// At most one plan: that of the last input planned.
#[derive(Default)]
pub(crate) struct PlanCache {
    last: Mutex<Option<(PlanKey, Arc<Planned>)>>,
}

impl PlanCache {
    /// The plan for `input`: the stored one if it was made for this input, else `build`'s
    /// (which then replaces it).
    pub fn get(
        &self,
        input: &ModelInput,
        build: impl FnOnce(&ModelInput) -> Result<Plan, ModelError>,
    ) -> Result<Arc<Planned>, ModelError> {
        // A poisoned lock means a panic while planning, before anything was stored.
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((key, planned)) = last.as_ref() {
            if key.matches(input) {
                return Ok(planned.clone());
            }
        }
        let planned = Arc::new(Planned {
            plan: build(input)?,
            agg: OnceLock::new(),
            window: OnceLock::new(),
        });
        *last = Some((PlanKey::of(input), planned.clone()));
        Ok(planned)
    }

    /// Whether a plan is held (for `Debug`).
    fn holds(&self) -> bool {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

/// A copy shares the stored plan (it is immutable) and then goes its own way.
impl Clone for PlanCache {
    fn clone(&self) -> PlanCache {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        PlanCache {
            last: Mutex::new(last.clone()),
        }
    }
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache").field("holds_plan", &self.holds()).finish()
    }
}
