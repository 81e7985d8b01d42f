//! `polyphony daemon`: the control loop as a long-lived tokio service.
//!
//! Each interval: wait, gather the SLIs of the interval and the workload window, hand them to
//! the core's control step ([`decide`]; it skips unusable intervals, runs the warm-up, judges
//! the guard and asks the controller, with flowsim on the window off the async threads),
//! persist, apply (apply mode) or publish (advise mode), persist again, publish metrics and the
//! status snapshot. SIGTERM/SIGINT stop after the current
//! step; SIGHUP (or `POST /v1/reload`) reloads the configuration, refusing an invalid one.
//!
//! Touches: the state directory, the HTTP listen socket, the SLI/workload sources and — in apply
//! mode — the network through the configured actuators.

mod feed;
mod publish;
mod sources;
mod supervise;

use crate::actuation;
use crate::cli::DaemonArgs;
use crate::config::{read_token, DaemonConfig, LoadedConfig, Mode};
use crate::http::{router, ApiCommand, ApiState, Snapshot, WindowReport};
use crate::metrics::Metrics;
use crate::network::model_clock;
use crate::state::{Action, ClassRecord, IterationRecord, PersistedState, Skip, StateDir, FORMAT_VERSION};
use crate::Failure;
use anyhow::{anyhow, Context, Result};
use polyphony_actuator::Composite;
use polyphony_core::step::warmup_design;
use polyphony_core::{
    Action as StepAction, ControlStep, Controller, CoreError, Decision, PerformanceModel, StepInput, StepPolicy,
    StepState, Variant, WarmUp,
};
use polyphony_model::{pool, ModelContext, WindowModel};
use polyphony_spec::{NetworkConfig, SliVector, Workload};
use sources::Sources;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tracing::{error, info, warn};

/// Runs the subcommand.
pub fn main(args: DaemonArgs) -> Result<(), Failure> {
    let loaded = DaemonConfig::load(&args.config)?;
    if args.check {
        let c = &loaded.config;
        println!(
            "{}: valid — mode {}, every {} s, {} classes ({}), {} knobs, model {}, state in {}",
            loaded.path.display(),
            c.mode.as_str(),
            c.interval_s,
            c.classes.len(),
            c.classes
                .iter()
                .map(|k| format!(
                    "{} DSCP {} p{} ≤ {}",
                    k.name,
                    k.dscp,
                    k.slo.percentile * 100.0,
                    k.slo.max_slowdown
                ))
                .collect::<Vec<_>>()
                .join(", "),
            c.knob_space().dim(),
            c.model.kind.as_str(),
            c.state_dir.display()
        );
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run(loaded, args.max_iterations)).map_err(Failure::Runtime)
}

/// Everything the loop owns.
struct Daemon {
    loaded: LoadedConfig,
    mode: Mode,
    step: Option<ControlStep<Controller>>,
    state: PersistedState,
    dir: StateDir,
    metrics: Arc<Metrics>,
    snapshot: Arc<RwLock<Snapshot>>,
    api: Arc<ApiState>,
    sources: Sources,
    context: ModelContext,
    pool: Arc<rayon::ThreadPool>,
    actuators: Option<Composite>,
    window: Option<Arc<WindowReport>>,
}

async fn run(loaded: LoadedConfig, max_iterations: Option<u64>) -> Result<()> {
    let c = &loaded.config;
    // A model that cannot load (a bad correction artifact) stops the daemon here, not at its
    // first decision.
    c.model.kind.model()?;
    let dir = StateDir::open(&c.state_dir)?;
    let (step, state) = match dir.load()? {
        Some(s) => {
            let text = serde_json::to_string(&s.controller)?;
            let ctl = Controller::from_json(&text).map_err(|e| anyhow!("{}: {e}", dir.file().display()))?;
            info!(
                iteration = s.iteration,
                samples = ctl.samples(),
                "resuming from {}",
                dir.file().display()
            );
            let resumed = StepState {
                last_good: s.last_good.clone(),
                warmup: s.warmup.clone().unwrap_or_else(WarmUp::none),
            };
            (ControlStep::resume(ctl, policy(c), resumed), s)
        }
        None => {
            let step = fresh_step(c)?;
            let initial = c.initial_config();
            let s = PersistedState {
                version: FORMAT_VERSION,
                iteration: 0,
                config_in_force: initial.clone(),
                last_good: initial,
                controller: serde_json::from_str(&step.tuner().to_json().map_err(|e| anyhow!("{e}"))?)?,
                regime_shifts: 0,
                rollbacks: 0,
                actuator_errors: 0,
                history: Vec::new(),
                skipped_intervals: 0,
                last_skip: None,
                warmup: Some(step.state().warmup.clone()),
            };
            dir.save(&s)?;
            info!("fresh start; state in {}", dir.file().display());
            (step, s)
        }
    };
    let sources = Sources::new(&loaded, None).await?;
    let section = c.actuators.clone();
    let actuators = match tokio::task::spawn_blocking(move || actuation::build(&section)).await? {
        Ok(a) => a,
        Err(e) if c.mode == Mode::Advise => {
            warn!("advise mode: actuators unavailable, dry runs disabled: {e:#}");
            None
        }
        Err(e) => return Err(e),
    };
    let context = ModelContext::new(&c.topology, c.dscps())?;
    let mut metrics = Metrics::new();
    if let Some(feed) = sources.feed() {
        metrics.register_workfeed(feed.metrics(), feed.restarts());
    }
    let metrics = Arc::new(metrics);
    let (tx, mut rx) = mpsc::channel(8);
    let token = match &c.http.token_file {
        Some(p) => Some(read_token(p).map_err(|e| anyhow!("http.token_file: {e}"))?),
        None => None,
    };
    // The snapshot is complete before the API can be reached.
    let snapshot = Arc::new(RwLock::new(publish::snapshot(
        &state,
        c.mode,
        &loaded.path.display().to_string(),
        Some(step.tuner()),
    )));
    let api = Arc::new(ApiState {
        metrics: metrics.clone(),
        snapshot: snapshot.clone(),
        token: RwLock::new(token),
        commands: tx,
    });
    let listener = tokio::net::TcpListener::bind(c.http.listen)
        .await
        .with_context(|| format!("http.listen {}: cannot listen", c.http.listen))?;
    let addr = listener.local_addr()?;
    info!("HTTP API and /metrics on http://{addr}");
    let app = router(api.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            error!("HTTP server stopped: {e}");
        }
    });
    let mut d = Daemon {
        mode: c.mode,
        pool: pool(c.model.threads),
        loaded,
        step: Some(step),
        state,
        dir,
        metrics,
        snapshot,
        api,
        sources,
        context,
        actuators,
        window: None,
    };
    if d.mode == Mode::Apply && d.actuators.is_some() {
        // After a restart the network may not match the state (a crash between apply and
        // persist, or someone else changed it): bring it to the configuration in force — or,
        // on a fresh start with a warm-up, to its first design point (the initial configuration).
        let in_force = d.state.config_in_force.clone();
        let target = d.step.as_ref().map_or(in_force.clone(), |s| s.first_config(&in_force));
        info!("apply mode: bringing the network to the configuration in force");
        d.put_in_force(target).await?;
    }
    d.publish_state();
    publish::mode(&d.metrics, d.mode);
    publish::knobs(&d.metrics, &d.loaded.config, &d.state.config_in_force);

    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    let mut hup = signal(SignalKind::hangup()).context("SIGHUP handler")?;
    let mut done = 0u64;
    loop {
        let interval = Duration::from_secs_f64(d.loaded.config.interval_s);
        let wake = tokio::time::Instant::now() + interval;
        // Wait for the interval to pass, serving signals and API commands meanwhile.
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => break,
                _ = term.recv() => { info!("SIGTERM: stopping"); return Ok(()); }
                _ = int.recv() => { info!("SIGINT: stopping"); return Ok(()); }
                _ = hup.recv() => d.reload().await,
                Some(cmd) = rx.recv() => d.command(cmd).await,
            }
        }
        if let Err(e) = d.iterate().await {
            error!("iteration {} failed: {e:#}", d.state.iteration + 1);
        }
        done += 1;
        if max_iterations.is_some_and(|m| done >= m) {
            info!(iterations = done, "--max-iterations reached: stopping");
            return Ok(());
        }
    }
}

impl Daemon {
    fn publish_state(&self) {
        let mut snap = publish::snapshot(
            &self.state,
            self.mode,
            &self.loaded.path.display().to_string(),
            self.step.as_ref().map(ControlStep::tuner),
        );
        snap.window = self.window.clone();
        self.metrics.gp_samples.set(snap.gp_samples as f64);
        match self.snapshot.write() {
            Ok(mut g) => *g = snap,
            Err(p) => *p.into_inner() = snap,
        }
    }

    fn save(&mut self) -> Result<()> {
        if let Some(step) = &self.step {
            self.state.controller = serde_json::from_str(&step.tuner().to_json().map_err(|e| anyhow!("{e}"))?)?;
            self.state.last_good = step.last_good().clone();
            self.state.warmup = Some(step.state().warmup.clone());
        }
        self.dir.save(&self.state)?;
        Ok(())
    }

    async fn reload(&mut self) {
        match DaemonConfig::load(&self.loaded.path) {
            Err(e) => error!("reload refused, keeping the running configuration: {e}"),
            Ok(new) => {
                let old = &self.loaded.config;
                let n = &new.config;
                let fixed = [
                    ("classes", old.classes != n.classes),
                    ("topology", old.topology != n.topology),
                    ("knobs", old.knob_space() != n.knob_space()),
                    ("controller", old.controller != n.controller),
                    ("state_dir", old.state_dir != n.state_dir),
                    ("http.listen", old.http.listen != n.http.listen),
                ];
                if let Some((k, _)) = fixed.iter().find(|(_, changed)| *changed) {
                    error!("reload refused, keeping the running configuration: changing `{k}` needs a restart");
                    return;
                }
                if matches!(
                    n.workload,
                    crate::config::WorkloadSource::Workfeed { .. } | crate::config::WorkloadSource::Nats { .. }
                ) && !self.sources.feed().is_some_and(|f| f.serves(&n.workload))
                {
                    error!(
                        "reload refused, keeping the running configuration: a new Workfeed listener \
                         (workload.listen, workload.key_file, or a window_s beyond what is retained) needs a restart"
                    );
                    return;
                }
                let sources = match Sources::new(&new, self.sources.feed()).await {
                    Ok(s) => s,
                    Err(e) => {
                        error!("reload refused, keeping the running configuration: {e:#}");
                        return;
                    }
                };
                let token = match &n.http.token_file {
                    Some(p) => match read_token(p) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            error!("reload refused: http.token_file: {e}");
                            return;
                        }
                    },
                    None => None,
                };
                if let Ok(mut g) = self.api.token.write() {
                    *g = token;
                }
                self.sources = sources;
                self.mode = n.mode;
                publish::mode(&self.metrics, self.mode);
                info!(
                    mode = self.mode.as_str(),
                    interval_s = n.interval_s,
                    "configuration reloaded"
                );
                self.loaded = new;
                self.publish_state();
            }
        }
    }

    async fn command(&mut self, cmd: ApiCommand) {
        match cmd {
            ApiCommand::Reload => self.reload().await,
            ApiCommand::SetMode(m) => {
                info!("mode set to {} through the API", m.as_str());
                self.mode = m;
                publish::mode(&self.metrics, m);
                self.publish_state();
            }
            ApiCommand::Rollback => {
                let target = self.state.last_good.clone();
                warn!("rollback to the last known good configuration requested through the API");
                self.state.rollbacks += 1;
                self.metrics.rollbacks.inc();
                if let Err(e) = self.put_in_force(target).await {
                    error!("rollback failed: {e:#}");
                }
            }
        }
    }

    /// Runs the actuators towards `target` (blocking work off the async threads).
    async fn actuate(&mut self, target: &NetworkConfig) -> Result<()> {
        let Some(mut acts) = self.actuators.take() else {
            return Ok(());
        };
        let t = target.clone();
        let (acts, r) = tokio::task::spawn_blocking(move || {
            let r = actuation::apply(&mut acts, &t);
            (acts, r)
        })
        .await
        .map_err(|e| anyhow!("actuator task: {e}"))?;
        self.actuators = Some(acts);
        let applied = r?;
        if !applied.plan.is_empty() {
            info!(steps = applied.plan.len(), "applied through the actuators");
        }
        Ok(())
    }

    /// Makes `target` the configuration in force — through the actuators when there are any
    /// (a simulated network simply runs it) — and persists. If the actuators fail, they have
    /// already restored the previous configuration; the daemon then returns to the last known
    /// good configuration, and says so in the log and the metrics.
    async fn put_in_force(&mut self, target: NetworkConfig) -> Result<()> {
        if let Err(e) = self.actuate(&target).await {
            self.state.actuator_errors += 1;
            self.metrics.actuator_errors.inc();
            error!("actuators failed, the previous configuration stays in force: {e:#}");
            let good = self.state.last_good.clone();
            if good != self.state.config_in_force && good != target {
                warn!("returning to the last known good configuration");
                self.state.rollbacks += 1;
                self.metrics.rollbacks.inc();
                match self.actuate(&good).await {
                    Ok(()) => self.state.config_in_force = good,
                    Err(e) => {
                        self.state.actuator_errors += 1;
                        self.metrics.actuator_errors.inc();
                        error!("returning to the last known good configuration failed too: {e:#}");
                    }
                }
            }
        } else {
            self.state.config_in_force = target;
        }
        self.save()?;
        publish::knobs(&self.metrics, &self.loaded.config, &self.state.config_in_force);
        self.publish_state();
        Ok(())
    }

    async fn iterate(&mut self) -> Result<()> {
        let t0 = Instant::now();
        let c = self.loaded.config.clone();
        let index = self.state.iteration;
        let measured = self.state.config_in_force.clone();
        let got = self.sources.gather(&c, index, &measured).await?;
        self.note_window(index + 1, &got);
        let mut step = self
            .step
            .take()
            .ok_or_else(|| anyhow!("controller lost by an earlier failure"))?;
        step.set_policy(policy(&c));
        let model = Arc::new(
            WindowModel::new(
                c.model.kind.model()?,
                self.context.clone(),
                got.workload.clone(),
                self.pool.clone(),
            )
            .with_clock(model_clock()),
        );
        let (m2, cfg, sli, window) = (model.clone(), measured.clone(), got.sli.clone(), got.workload.clone());
        let (step, decision) = tokio::task::spawn_blocking(move || {
            let d = decide(&mut step, &cfg, &sli, &window, index, m2.as_ref());
            (step, d)
        })
        .await
        .map_err(|e| anyhow!("controller task: {e}"))?;
        self.step = Some(step);
        let d = decision.map_err(|e| anyhow!("the measurement was refused: {e}"))?;
        if let Some(skip) = &d.record.skipped {
            self.skip(skip.kind.as_str(), skip.detail.clone())?;
            if d.action == StepAction::Apply && self.mode == Mode::Apply {
                // A skipped warm-up window: the next design point follows.
                self.put_in_force(d.next).await?;
            }
            return Ok(());
        }
        if d.record.observed.as_ref().is_some_and(|r| r.regime_shift) {
            self.state.regime_shifts += 1;
            self.metrics.regime_shifts.inc();
        }
        let action = match d.action {
            StepAction::Apply if self.mode == Mode::Apply => Action::Applied,
            StepAction::Apply => Action::Advised,
            StepAction::Hold => Action::Held,
            StepAction::Revert => Action::RolledBack,
        };
        match action {
            Action::RolledBack => {
                warn!(
                    g = d.record.objective,
                    guard = c.guard.max_objective,
                    "objective above the guard: returning to the last known good configuration"
                );
                self.state.rollbacks += 1;
                self.metrics.rollbacks.inc();
            }
            Action::Held => error!("{}; holding the configuration in force", d.reason.text),
            Action::Applied | Action::Advised => {}
        }
        let ratios = d.record.ratios.clone().unwrap_or_default();
        let classes: Vec<ClassRecord> = c
            .classes
            .iter()
            .zip(&ratios)
            .map(|(k, r)| {
                let m = got.sli.get(k.dscp);
                ClassRecord {
                    name: k.name.clone(),
                    dscp: k.dscp.value(),
                    sli: m.and_then(|s| s.at(k.slo.percentile)).unwrap_or(f64::NAN),
                    slo: k.slo.max_slowdown,
                    ratio: *r,
                    predicted: None,
                    measured: m.copied(),
                }
            })
            .collect();
        let proposal = d.record.proposal.as_ref();
        let record = IterationRecord {
            iteration: index + 1,
            unix_time: unix_now(),
            measured_config: measured.clone(),
            all_slos_met: ratios.iter().all(|r| *r <= 1.0),
            classes,
            g: d.record.objective.unwrap_or(f64::NAN),
            admitted: d.admitted(),
            next_config: d.next.clone(),
            predicted_g: proposal.and_then(|p| p.g_hat).unwrap_or(f64::NAN),
            predicted_sigma: proposal.and_then(|p| p.sigma).unwrap_or(f64::NAN),
            ei: proposal.and_then(|p| p.expected_improvement).unwrap_or(f64::NAN),
            reason: d.reason.text.clone(),
            action,
            iteration_seconds: t0.elapsed().as_secs_f64(),
            model_seconds: model.seconds(),
        };
        info!(
            iteration = record.iteration,
            g = format_args!("{:.3}", record.g),
            all_slos_met = record.all_slos_met,
            action = ?record.action,
            "{}",
            record.reason
        );
        publish::iteration(&self.metrics, &c, &record, &got.workload);
        self.state.iteration = index + 1;
        self.state.push_history(record);
        // First persist: the admitted sample and the decision, configuration in force unchanged.
        self.save()?;
        if matches!(action, Action::Applied | Action::RolledBack) && self.mode == Mode::Apply {
            self.put_in_force(d.next).await?;
        } else {
            self.publish_state();
        }
        Ok(())
    }

    /// Publishes the workload window of an interval (metrics of left-out flows, `/v1/workload`).
    fn note_window(&mut self, iteration: u64, got: &sources::Gathered) {
        if let Some(l) = got.left_out {
            for (reason, n) in l.reasons() {
                self.metrics
                    .workfeed_left_out
                    .get_or_create(&crate::metrics::ReasonLabels { reason: reason.into() })
                    .set(n as f64);
            }
        }
        self.window = Some(Arc::new(WindowReport {
            iteration,
            unix_time: unix_now(),
            flows: got.workload.flows.len(),
            left_out: got.left_out.map(|l| {
                serde_json::Value::Object(
                    l.reasons()
                        .into_iter()
                        .map(|(reason, n)| (reason.to_string(), n.into()))
                        .collect(),
                )
            }),
            workload: (*got.workload).clone(),
        }));
    }

    /// An interval the step found nothing to use in: the controller was not asked, the
    /// iteration count does not advance; logged, counted and shown on `/v1/status`.
    fn skip(&mut self, reason: &'static str, detail: String) -> Result<()> {
        warn!(reason, "interval skipped: {detail}; the controller was not asked");
        self.metrics.skipped(reason);
        self.state.skipped_intervals += 1;
        self.state.last_skip = Some(Skip {
            unix_time: unix_now(),
            reason: reason.into(),
            detail,
        });
        self.save()?;
        self.publish_state();
        Ok(())
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The control step of a fresh start under `c`: the full controller from the initial
/// configuration, the guard, and `warmup_intervals` design points around the start.
pub fn fresh_step(c: &DaemonConfig) -> Result<ControlStep<Controller>> {
    let initial = c.initial_config();
    let ctl = Controller::new(
        &c.classes,
        &c.knob_space(),
        initial.clone(),
        c.controller.clone(),
        Variant::FULL,
    )
    .map_err(|e| anyhow!("controller: {e}"))?;
    let plan = warmup_design(
        &c.knob_space(),
        c.controller.aitchison_alpha,
        &initial,
        c.controller.trust_radius_init,
        c.warmup_intervals,
        c.controller.seed,
    )
    .map_err(|e| anyhow!("warm-up design: {e}"))?;
    Ok(ControlStep::new(ctl, policy(c), initial, plan))
}

/// The control step's policy under daemon configuration `c`: its guard.
pub fn policy(c: &DaemonConfig) -> StepPolicy {
    StepPolicy {
        guard: Some(c.guard.max_objective),
    }
}

/// The daemon's driver of one interval: hands what the sources gathered under `in_force` (the
/// interval's SLIs and workload window, workload id `workload`) to the step with `model`.
/// Nothing else: the step decides; [`Daemon::iterate`] only gathers, actuates, publishes and
/// persists around it.
pub fn decide(
    step: &mut ControlStep<Controller>,
    in_force: &NetworkConfig,
    sli: &SliVector,
    window: &Workload,
    workload: u64,
    model: &dyn PerformanceModel,
) -> Result<Decision, CoreError> {
    step.step(
        &StepInput {
            config: in_force,
            slis: sli,
            window: Some(window),
            workload: Some(workload),
        },
        model,
    )
}
