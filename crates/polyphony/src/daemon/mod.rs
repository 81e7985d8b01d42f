//! `polyphony daemon`: the control loop as a long-lived tokio service.
//!
//! Each interval: wait, gather the SLIs of the interval and the workload window, hand them to
//! the core's control step ([`decide`]; it skips unusable intervals, runs the warm-up, judges
//! the guard and asks the controller, with flowsim on the window off the async threads),
//! persist, apply (apply mode) or publish (advise mode), persist again, publish metrics and the
//! status snapshot. SIGTERM/SIGINT stop after the current
//! step, leaving the configuration in force or restoring the one found at start (`on_exit`);
//! SIGHUP (or `POST /v1/reload`) reloads the configuration, refusing an invalid one.
//!
//! In apply mode, every interval first reads back what the devices hold: a device whose settings
//! differ from what the daemon last put there was changed by hand, and the daemon stands aside
//! from it (no more applies there; logged, `polyphony_stood_aside`, `/v1/status`) until
//! `POST /v1/resume`. With `[[stages]]`, a new configuration is rolled out stage by stage, each
//! judged by the guard after one interval (polyphony-core's `Rollout` decides; this module only
//! applies, reads back and measures).
//!
//! Touches: the state directory, the HTTP listen socket, the SLI/workload sources and — in apply
//! mode — the network through the configured actuators.

mod feed;
mod publish;
mod sources;
mod supervise;

use crate::actuation;
use crate::cli::DaemonArgs;
use crate::config::{read_token, DaemonConfig, LoadedConfig, Mode, OnExit};
use crate::http::{router, ApiCommand, ApiState, Snapshot, WindowReport};
use crate::metrics::Metrics;
use crate::metrics::StoodAsideLabels;
use crate::network::model_clock;
use crate::state::{
    Action, ClassRecord, IterationRecord, PersistedState, Skip, StateDir, StateError, StoodAside, StoodAsideKnob,
    FORMAT_VERSION,
};
use crate::Failure;
use anyhow::{anyhow, Context, Result};
use polyphony_actuator::Composite;
use polyphony_core::step::warmup_design;
use polyphony_core::{
    Action as StepAction, ControlStep, Controller, CoreError, Decision, PerformanceModel, Rollout, RolloutAction,
    Stage, StepInput, StepPolicy, StepState, Variant, WarmUp,
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
                .map(|k| format!("{} DSCP {} {}", k.name, k.dscp, k.slo.describe()))
                .collect::<Vec<_>>()
                .join(", "),
            c.knob_space().dim(),
            c.model.kind.as_str(),
            c.state_dir.display()
        );
        return Ok(());
    }
    // The state is read before anything starts. A state file that does not read is an error
    // naming it and its previous good copy, with exit code 2: systemd's unit does not restart
    // into the same error (RestartPreventExitStatus=2), and nothing is written over either file.
    // Every way the state cannot be opened or read needs an operator (a state_dir that is a
    // file, a state.json that is a directory or unreadable, a damaged or missing file): exit 2.
    let dir = StateDir::open(&loaded.config.state_dir).map_err(|e| {
        Failure::Usage(format!(
            "state_dir: {:#}: name a directory the daemon may create and write",
            anyhow::Error::from(e)
        ))
    })?;
    let mut saved = dir.load().map_err(|e| match e {
        StateError::Io { .. } => Failure::Usage(format!(
            "{:#}: the state file must be a readable file (move it away to start fresh)",
            anyhow::Error::from(e)
        )),
        StateError::Corrupt { .. } | StateError::OnlyPrevious { .. } => Failure::Usage(e.to_string()),
    })?;
    if let Some(state) = &mut saved {
        let ctl = Controller::from_json(&state.controller.to_string()).map_err(|e| {
            Failure::Usage(format!(
                "{}: not a polyphony state file (controller: {e}); its previous good copy is {}",
                dir.file().display(),
                dir.prev_file().display()
            ))
        })?;
        // A saved controller keeps the objective it was built for: new thresholds or weights
        // rescale what it learned; anything else is refused (exit 2, no restart loop) rather
        // than chase old SLOs under a changed configuration.
        match saved_controller(&loaded.config, &ctl).map_err(Failure::Runtime)? {
            SavedController::Fits => {}
            SavedController::Retargeted { controller, change } => {
                info!("the saved controller continues under the new SLOs: {change}");
                state.controller = serde_json::to_value(&*controller).map_err(|e| Failure::Runtime(e.into()))?;
            }
            SavedController::Mismatch(why) => {
                return Err(Failure::Usage(format!("{}: {why}", dir.file().display())));
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run(loaded, dir, saved, args.max_iterations))
        .map_err(Failure::Runtime)
}

/// The stages of `c`'s staged apply: each stage's actuator names and its core description
/// (one stage of every actuator when `[[stages]]` is absent).
fn stages_of(c: &DaemonConfig) -> (Vec<Vec<String>>, Vec<Stage>) {
    if c.stages.is_empty() {
        let names = c.actuators.names();
        let stage = Stage {
            name: names.join("+"),
            classes: Vec::new(),
        };
        return (vec![names], vec![stage]);
    }
    let names = c.stages.iter().map(|s| s.actuators.clone()).collect();
    let specs = c
        .stages
        .iter()
        .map(|s| Stage {
            name: s.actuators.join("+"),
            classes: c
                .classes
                .iter()
                .filter(|k| s.classes.contains(&k.name))
                .map(|k| k.dscp)
                .collect(),
        })
        .collect();
    (names, specs)
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
    /// Actuator names per stage (one stage of all of them without `[[stages]]`).
    stages: Vec<Vec<String>>,
    /// The stages as the core's rollout sees them.
    stage_specs: Vec<Stage>,
    /// A staged apply in progress.
    rollout: Option<Rollout>,
    /// Whether this process has put a configuration on the devices since apply mode began:
    /// before that, the state's configuration in force may be advice, not what the devices hold.
    actuated: bool,
}

async fn run(
    loaded: LoadedConfig,
    dir: StateDir,
    saved: Option<PersistedState>,
    max_iterations: Option<u64>,
) -> Result<()> {
    let c = &loaded.config;
    // A model that cannot load (a bad correction artifact) stops the daemon here, not at its
    // first decision.
    c.model.kind.model()?;
    let (step, state) = match saved {
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
                last_good_failed: s.last_good_failed,
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
                last_good_failed: false,
                controller: serde_json::from_str(&step.tuner().to_json().map_err(|e| anyhow!("{e}"))?)?,
                regime_shifts: 0,
                rollbacks: 0,
                actuator_errors: 0,
                history: Vec::new(),
                skipped_intervals: 0,
                intervals: 0,
                last_skip: None,
                warmup: Some(step.state().warmup.clone()),
                found_at_start: None,
                stood_aside: Vec::new(),
                held: None,
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
    crate::warn_network_outside_space(c);
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
    let (stages, stage_specs) = stages_of(c);
    let mut d = Daemon {
        stages,
        stage_specs,
        rollout: None,
        actuated: false,
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
        if d.state.found_at_start.is_none() {
            let base = d.state.config_in_force.clone();
            let all = d.stages.concat();
            let found = d.read_back_over(base, all).await?;
            info!("recorded the configuration found on the devices (what on_exit = \"revert\" restores)");
            d.state.found_at_start = Some(found);
            d.save()?;
        }
        for s in &d.state.stood_aside {
            for k in &s.knobs {
                d.metrics
                    .stood_aside
                    .get_or_create(&StoodAsideLabels {
                        device: s.device.clone(),
                        knob: k.knob.clone(),
                    })
                    .set(1.0);
            }
        }
        // After a restart the network may not match the state (a crash between apply and
        // persist, or someone else changed it): bring it to the configuration in force — or,
        // on a fresh start with a warm-up, to its first design point (the initial configuration).
        let in_force = d.state.config_in_force.clone();
        let target = d.step.as_ref().map_or(in_force.clone(), |s| s.first_config(&in_force));
        info!("apply mode: bringing the network to the configuration in force");
        d.put_in_force(target).await?;
    }
    d.publish_state();
    publish::start(&d.metrics, d.state.history.last());
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
                _ = term.recv() => { info!("SIGTERM: stopping"); return d.exit().await; }
                _ = int.recv() => { info!("SIGINT: stopping"); return d.exit().await; }
                _ = hup.recv() => d.reload().await,
                Some(cmd) = rx.recv() => d.command(cmd).await,
            }
        }
        if let Err(e) = d.iterate().await {
            d.metrics.iteration_failures.inc();
            error!("iteration {} failed: {e:#}", d.state.iteration + 1);
        }
        done += 1;
        if max_iterations.is_some_and(|m| done >= m) {
            info!(iterations = done, "--max-iterations reached: stopping");
            return d.exit().await;
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
        snap.rollout = self.rollout.as_ref().map(|r| {
            serde_json::json!({
                "stage": r.current() + 1,
                "of": r.stages().len(),
                "stage_name": r.stages()[r.current()].name,
                "from": r.from(),
                "target": r.target(),
            })
        });
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
            self.state.last_good_failed = step.state().last_good_failed;
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
                // New SLO thresholds or class weights, nothing else about the classes: the
                // running controller continues with what it learned rescaled to them.
                let retarget = old.classes != n.classes
                    && old.classes.len() == n.classes.len()
                    && old.classes.iter().zip(&n.classes).all(|(a, b)| a.name == b.name);
                let retargeted = match (&self.step, retarget) {
                    (Some(step), true) => match saved_controller(n, step.tuner()) {
                        Ok(SavedController::Retargeted { controller, change }) => Some((controller, change)),
                        Ok(SavedController::Fits) => None,
                        Ok(SavedController::Mismatch(why)) => {
                            error!("reload refused, keeping the running configuration: {why}");
                            return;
                        }
                        Err(e) => {
                            error!("reload refused, keeping the running configuration: {e:#}");
                            return;
                        }
                    },
                    _ => None,
                };
                let fixed = [
                    ("classes", old.classes != n.classes && retargeted.is_none()),
                    ("topology", old.topology != n.topology),
                    ("knobs", old.knob_space() != n.knob_space()),
                    ("controller", old.controller != n.controller),
                    ("state_dir", old.state_dir != n.state_dir),
                    ("http.listen", old.http.listen != n.http.listen),
                    ("actuators", old.actuators != n.actuators),
                    ("stages", old.stages != n.stages),
                ];
                if let Some((k, _)) = fixed.iter().find(|(_, changed)| *changed) {
                    let how = match *k {
                        // What the saved controller was built from (saved_controller).
                        "classes" | "knobs" | "controller" => {
                            "a fresh controller: stop the daemon, move the state directory's state.json and state.json.prev away, and start it again"
                        }
                        _ => "a restart",
                    };
                    // A class's SLO threshold and weight can change on a reload; its name, DSCP
                    // and SLI cannot.
                    let what = if *k == "classes" {
                        " beyond SLO thresholds and weights"
                    } else {
                        ""
                    };
                    error!("reload refused, keeping the running configuration: changing `{k}`{what} needs {how}");
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
                if self.mode != n.mode {
                    self.actuated = false;
                    if n.mode == Mode::Advise {
                        self.abandon_rollout("advise mode").await;
                    }
                }
                self.mode = n.mode;
                publish::mode(&self.metrics, self.mode);
                if let Some((controller, change)) = retargeted {
                    if let Some(step) = self.step.take() {
                        info!("the controller continues under the new SLOs: {change}");
                        self.step = Some(ControlStep::resume(*controller, policy(n), step.state().clone()));
                    }
                }
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
                if m == Mode::Advise {
                    self.abandon_rollout("advise mode").await;
                }
                self.mode = m;
                self.actuated = false;
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
            ApiCommand::Resume(device) => {
                if let Err(e) = self.resume(device).await {
                    error!("resume failed: {e:#}");
                }
            }
        }
    }

    /// The devices of stage `stage` (every stage when `None`) the daemon actuates: all but
    /// those it stands aside from.
    fn actuated_members(&self, stage: Option<usize>) -> Vec<String> {
        let names = match stage {
            Some(i) => self.stages.get(i).cloned().unwrap_or_default(),
            None => self.stages.concat(),
        };
        names
            .into_iter()
            .filter(|n| !self.state.stood_aside.iter().any(|s| &s.device == n))
            .collect()
    }

    /// Runs the actuators `members` towards `target` (blocking work off the async threads).
    async fn actuate_members(&mut self, target: &NetworkConfig, members: Vec<String>) -> Result<()> {
        let Some(mut acts) = self.actuators.take() else {
            return Ok(());
        };
        let t = target.clone();
        let (acts, r) = tokio::task::spawn_blocking(move || {
            let r = actuation::apply_only(&mut acts, &t, &members);
            (acts, r)
        })
        .await
        .map_err(|e| anyhow!("actuator task: {e}"))?;
        self.actuators = Some(acts);
        let applied = r?;
        self.actuated = true;
        if !applied.plan.is_empty() {
            info!(steps = applied.plan.len(), "applied through the actuators");
        }
        Ok(())
    }

    /// Runs every actuated device towards `target`.
    async fn actuate(&mut self, target: &NetworkConfig) -> Result<()> {
        let members = self.actuated_members(None);
        self.actuate_members(target, members).await
    }

    /// What the devices `members` hold, written over `base` (read only, off the async threads).
    async fn read_back_over(&mut self, base: NetworkConfig, members: Vec<String>) -> Result<NetworkConfig> {
        let Some(acts) = self.actuators.take() else {
            return Ok(base);
        };
        let (acts, r) = tokio::task::spawn_blocking(move || {
            let r = actuation::read_back_over(&acts, &base, &members);
            (acts, r)
        })
        .await
        .map_err(|e| anyhow!("actuator task: {e}"))?;
        self.actuators = Some(acts);
        r
    }

    /// `target` with the settings of the devices the daemon stands aside from as they are.
    async fn with_stood_aside(&mut self, target: NetworkConfig) -> NetworkConfig {
        let aside: Vec<String> = self.state.stood_aside.iter().map(|s| s.device.clone()).collect();
        if aside.is_empty() {
            return target;
        }
        match self.read_back_over(target.clone(), aside).await {
            Ok(c) => c,
            Err(e) => {
                warn!("reading back the devices stood aside from: {e:#}");
                target
            }
        }
    }

    /// Ends a staged apply without touching the devices: the stages reached so far stay, and
    /// the configuration in force becomes what the devices hold.
    async fn abandon_rollout(&mut self, why: &str) {
        let Some(r) = self.rollout.take() else {
            return;
        };
        let reached: Vec<String> = self.stages[..=r.current()].concat();
        warn!(
            "staged apply ended at stage {} of {} ({why}); the stages reached keep the new configuration",
            r.current() + 1,
            r.stages().len()
        );
        match self.read_back_over(r.from().clone(), reached).await {
            Ok(c) => self.state.config_in_force = c,
            Err(e) => error!("reading back the stages reached: {e:#}"),
        }
        if let Err(e) = self.save() {
            error!("{e:#}");
        }
        self.publish_state();
    }

    /// The stop: with `on_exit = "revert"` (apply mode), restores the configuration found at
    /// start on every device not stood aside from; with `"keep"` leaves the network alone.
    async fn exit(&mut self) -> Result<()> {
        let policy = self.loaded.config.on_exit;
        if policy == OnExit::Keep {
            self.abandon_rollout("stopping with on_exit = \"keep\"").await;
        }
        if policy == OnExit::Keep || self.mode != Mode::Apply || self.actuators.is_none() {
            info!(
                on_exit = policy.as_str(),
                mode = self.mode.as_str(),
                "leaving the configuration in force"
            );
            return Ok(());
        }
        let Some(found) = self.state.found_at_start.clone() else {
            warn!("on_exit = \"revert\": no configuration was recorded at start; leaving the configuration in force");
            return Ok(());
        };
        info!("on_exit = \"revert\": restoring the configuration found at start");
        self.actuate(&found)
            .await
            .context("on_exit = \"revert\": restoring the configuration found at start")?;
        self.rollout = None;
        self.state.config_in_force = self.with_stood_aside(found).await;
        self.save()?;
        Ok(())
    }

    /// `POST /v1/resume`: actuate `device` (every device when `None`) again, taking what it holds
    /// now as the configuration in force, and end a hold after a failed stage.
    async fn resume(&mut self, device: Option<String>) -> Result<()> {
        let names: Vec<String> = self
            .state
            .stood_aside
            .iter()
            .map(|s| s.device.clone())
            .filter(|d| device.as_ref().is_none_or(|x| x == d))
            .collect();
        if let Some(d) = &device {
            if names.is_empty() {
                warn!(
                    device = d.as_str(),
                    "resume: the daemon does not stand aside from this device"
                );
            }
        }
        if !names.is_empty() {
            let base = self.state.config_in_force.clone();
            let baseline = self.read_back_over(base, names.clone()).await?;
            self.state.config_in_force = baseline;
            for s in self.state.stood_aside.iter().filter(|s| names.contains(&s.device)) {
                for k in &s.knobs {
                    self.metrics.stood_aside.remove(&StoodAsideLabels {
                        device: s.device.clone(),
                        knob: k.knob.clone(),
                    });
                }
            }
            self.state.stood_aside.retain(|s| !names.contains(&s.device));
            // The baseline is the shares the devices hold, on the simplex; they may hold other
            // absolute rates. The next apply puts the controller's choice there; the check for
            // changes by hand resumes after it.
            self.actuated = false;
            info!(devices = ?names, "resumed actuating; the settings they hold are the new baseline");
        }
        if let Some(why) = self.state.held.take() {
            info!("resumed after the hold ({why})");
        }
        self.save()?;
        publish::knobs(&self.metrics, &self.loaded.config, &self.state.config_in_force);
        self.publish_state();
        Ok(())
    }

    /// Reads back every actuated device; one whose settings differ from what the daemon last
    /// put there was changed by hand: stand aside from it (no more applies there), say so, and
    /// take what it holds into the configuration in force.
    async fn check_stand_aside(&mut self) -> Result<()> {
        let Some(acts) = self.actuators.take() else {
            return Ok(());
        };
        let skip: Vec<String> = self.state.stood_aside.iter().map(|s| s.device.clone()).collect();
        let in_force = self.state.config_in_force.clone();
        let rollout = self.rollout.clone();
        let stages = self.stages.clone();
        let (acts, r) = tokio::task::spawn_blocking(move || {
            let stage_of = |name: &str| stages.iter().position(|s| s.iter().any(|n| n == name));
            let expected = |name: &str| match (&rollout, stage_of(name)) {
                (Some(r), Some(i)) => r.expected(i),
                _ => &in_force,
            };
            let r = actuation::drift(&acts, expected, &skip);
            (acts, r)
        })
        .await
        .map_err(|e| anyhow!("actuator task: {e}"))?;
        self.actuators = Some(acts);
        let found = r?;
        if found.is_empty() {
            return Ok(());
        }
        let now = unix_now();
        for (device, knobs) in found {
            let list = knobs
                .iter()
                .map(|(k, applied, found)| format!("{k}: {applied} -> {found}"))
                .collect::<Vec<_>>()
                .join("; ");
            warn!(
                device = device.as_str(),
                "changed by hand ({list}); standing aside: the daemon no longer actuates {device} and keeps \
                 advising; POST /v1/resume {{\"device\": \"{device}\"}} resumes with these settings as the baseline"
            );
            for (k, _, _) in &knobs {
                self.metrics
                    .stood_aside
                    .get_or_create(&StoodAsideLabels {
                        device: device.clone(),
                        knob: k.clone(),
                    })
                    .set(1.0);
            }
            self.state.stood_aside.push(StoodAside {
                device,
                knobs: knobs
                    .into_iter()
                    .map(|(knob, applied, found)| StoodAsideKnob { knob, applied, found })
                    .collect(),
                unix_time: now,
            });
        }
        let in_force = self.state.config_in_force.clone();
        self.state.config_in_force = self.with_stood_aside(in_force).await;
        self.save()?;
        publish::knobs(&self.metrics, &self.loaded.config, &self.state.config_in_force);
        self.publish_state();
        Ok(())
    }

    /// Puts a new configuration in force: all at once with one stage, else stage by stage.
    async fn put_in_force_staged(&mut self, target: NetworkConfig) -> Result<()> {
        if self.stages.len() <= 1 || self.actuators.is_none() {
            return self.put_in_force(target).await;
        }
        let from = self.state.config_in_force.clone();
        match Rollout::start(self.stage_specs.clone(), from, target.clone()) {
            Some((r, _)) => self.run_stage(r).await,
            None => self.put_in_force(target).await,
        }
    }

    /// Applies the current stage of `r`; a failure rolls the rollout back.
    async fn run_stage(&mut self, r: Rollout) -> Result<()> {
        let i = r.current();
        let members = self.actuated_members(Some(i));
        let target = r.target().clone();
        let result = self.actuate_members(&target, members).await;
        if result.is_err() {
            self.state.actuator_errors += 1;
            self.metrics.actuator_errors.inc();
        }
        match r.applied(result.map_err(|e| format!("{e:#}"))) {
            Some(RolloutAction::RollBack { through, failure }) => self.fail_rollout(r, through, failure).await,
            _ => {
                // Status first, then the log line: whoever reads the line finds the stage in
                // `/v1/status` too.
                let (of, name) = (r.stages().len(), r.stages()[i].name.clone());
                self.rollout = Some(r);
                self.publish_state();
                info!(
                    "staged apply: stage {} of {of} ({name}) in force; judged after one interval",
                    i + 1
                );
                Ok(())
            }
        }
    }

    /// A failed stage: return stages `0..=through` to the configuration before the rollout and
    /// hold until `POST /v1/resume`.
    async fn fail_rollout(&mut self, r: Rollout, through: usize, failure: String) -> Result<()> {
        let members: Vec<String> = (0..=through).flat_map(|i| self.actuated_members(Some(i))).collect();
        let from = r.from().clone();
        if let Err(e) = self.actuate_members(&from, members).await {
            self.state.actuator_errors += 1;
            self.metrics.actuator_errors.inc();
            error!("staged apply: rolling the stages back failed too: {e:#}");
        }
        self.state.rollbacks += 1;
        self.metrics.rollbacks.inc();
        self.state.held = Some(failure.clone());
        self.rollout = None;
        self.save()?;
        publish::knobs(&self.metrics, &self.loaded.config, &self.state.config_in_force);
        self.publish_state();
        error!(
            "staged apply failed: {failure}; stages 1-{} rolled back; holding the configuration in force until POST /v1/resume",
            through + 1
        );
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
            self.state.config_in_force = self.with_stood_aside(target).await;
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
        if self.mode == Mode::Apply && self.actuated {
            self.check_stand_aside().await?;
        }
        // During a staged apply the devices hold the stages reached so far: read them back.
        let mut measured = match &self.rollout {
            Some(r) => {
                let reached: Vec<String> = self.stages[..=r.current()].concat();
                let from = r.from().clone();
                self.read_back_over(from, reached).await?
            }
            None => self.state.config_in_force.clone(),
        };
        // Each measurement draws a fresh interval of a simulated or replayed source, also when
        // the iteration count does not advance (a skipped interval, a stage being judged).
        let window = self.state.intervals;
        self.state.intervals += 1;
        let got = self.sources.gather(&c, window, &measured).await?;
        if let Some(mut r) = self.rollout.take() {
            let Some(step) = self.step.as_ref() else {
                return Err(anyhow!("controller lost by an earlier failure"));
            };
            match r.judge(step.tuner().objective(), &got.sli, Some(c.guard.max_objective)) {
                RolloutAction::Wait { why } => {
                    warn!("staged apply: {why}; judging the stage on the next interval");
                    self.rollout = Some(r);
                    self.publish_state();
                    return Ok(());
                }
                RolloutAction::ApplyStage(_) => return self.run_stage(r).await,
                RolloutAction::RollBack { through, failure } => return self.fail_rollout(r, through, failure).await,
                RolloutAction::Complete => {
                    info!("staged apply complete: every stage in force and within the guard");
                    self.state.config_in_force = self.with_stood_aside(r.target().clone()).await;
                    self.save()?;
                    publish::knobs(&self.metrics, &c, &self.state.config_in_force);
                    measured = self.state.config_in_force.clone();
                }
            }
        }
        // A hold after a failed stage advises only, as does advise mode, and so does standing
        // aside from every device.
        let applying = self.mode == Mode::Apply
            && self.state.held.is_none()
            && (self.actuators.is_none() || !self.actuated_members(None).is_empty());
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
            if d.action == StepAction::Apply && applying {
                // A skipped warm-up window: the next design point follows.
                self.put_in_force_staged(d.next).await?;
            }
            return Ok(());
        }
        if d.record.observed.as_ref().is_some_and(|r| r.regime_shift) {
            self.state.regime_shifts += 1;
            self.metrics.regime_shifts.inc();
        }
        let action = match d.action {
            StepAction::Apply if applying => Action::Applied,
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
            Action::Held => {
                self.metrics.held.inc();
                error!("{}; holding the configuration in force", d.reason.text)
            }
            Action::Applied | Action::Advised => {}
        }
        let ratios = d.record.ratios.clone().unwrap_or_default();
        let proposal = d.record.proposal.as_ref();
        // The model at the configuration just measured, on this window, and the controller's
        // per-class calibration (both in objective order, as `ratios`).
        let model_ratios = proposal.and_then(|p| p.observed_model_ratios.as_deref());
        let scale = proposal.and_then(|p| p.model_scale.as_deref());
        let at = |v: Option<&[f64]>, i: usize| v.and_then(|v| v.get(i)).copied().filter(|x| x.is_finite());
        let classes: Vec<ClassRecord> = c
            .classes
            .iter()
            .zip(&ratios)
            .enumerate()
            .map(|(i, (k, r))| {
                let m = got.sli.get(k.dscp);
                ClassRecord {
                    name: k.name.clone(),
                    dscp: k.dscp.value(),
                    sli: m.and_then(|s| k.slo.sli(s)).unwrap_or(f64::NAN),
                    unit: k.slo.kind().unit().into(),
                    slo: k.slo.threshold(),
                    ratio: *r,
                    predicted: at(model_ratios, i).map(|x| x * k.slo.threshold()),
                    model_calibration: at(scale, i),
                    measured: m.copied(),
                }
            })
            .collect();
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
        if action == Action::Applied && applying {
            self.put_in_force_staged(d.next).await?;
        } else if action == Action::RolledBack && self.mode == Mode::Apply {
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
        c.controller_params(),
        Variant::FULL,
    )
    .map_err(|e| anyhow!("controller: {e}"))?;
    let plan = warmup_design(
        &c.knob_space(),
        c.controller_params().aitchison_alpha,
        &initial,
        c.controller.trust_radius_init,
        c.warmup_intervals,
        c.controller.seed,
    )
    .map_err(|e| anyhow!("warm-up design: {e}"))?;
    Ok(ControlStep::new(ctl, policy(c), initial, plan))
}

/// What becomes of a controller saved in a state file under configuration `c`.
#[derive(Debug)]
pub enum SavedController {
    /// Built from `c`'s classes and SLOs, knob space and `[controller]` table: it continues.
    Fits,
    /// The same classes, knob space and `[controller]`, but new SLO thresholds or class
    /// weights: the controller with what it learned rescaled to them
    /// ([`Controller::retarget`]); `change` says what changed, for the log.
    Retargeted {
        /// The retargeted controller.
        controller: Box<Controller>,
        /// The classes whose threshold or weight changed, old → new.
        change: String,
    },
    /// Built for other classes or SLIs, another knob space or another `[controller]`: it
    /// cannot continue. What differs, both ways, and what to do.
    Mismatch(String),
}

/// Whether a controller saved in a state file can continue under configuration `c` (see
/// [`SavedController`]): it keeps the objective, knob space and parameters it was built from,
/// so continuing under others would chase old SLOs.
pub fn saved_controller(c: &DaemonConfig, saved: &Controller) -> Result<SavedController> {
    let fresh = fresh_step(c)?;
    let want = fresh.tuner();
    let describe = |t: &[polyphony_core::objective::ClassTarget]| {
        t.iter()
            .map(|t| format!("{} (DSCP {}) {}", t.name, t.dscp, t.slo.describe()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let value = |v: Result<serde_json::Value, serde_json::Error>| v.map_err(|e| anyhow!("{e}"));
    let mismatch = |why: String| {
        Ok(SavedController::Mismatch(format!(
            "{why}; its samples were judged against those, so it cannot continue under this configuration: \
             restore the old values, or stop the daemon and move state.json and state.json.prev away to start afresh"
        )))
    };
    if !close(
        &value(serde_json::to_value(want.space()))?,
        &value(serde_json::to_value(saved.space()))?,
    ) {
        return mismatch(
            "the knob space ([knobs], or the per-class default) differs from the one the saved controller was built for"
                .to_string(),
        );
    }
    if !close(
        &value(serde_json::to_value(c.controller.clone()))?,
        &value(serde_json::to_value(saved.params().operator()))?,
    ) {
        return mismatch(format!(
            "[controller] differs from the table the saved controller was built with ({})",
            serde_json::to_string(&saved.params().operator()).unwrap_or_default()
        ));
    }
    if close(
        &value(serde_json::to_value(want.objective()))?,
        &value(serde_json::to_value(saved.objective()))?,
    ) {
        return Ok(SavedController::Fits);
    }
    match saved.retarget(&c.classes) {
        Ok(controller) => {
            let mut change = Vec::new();
            for (a, b) in saved.objective().targets().iter().zip(controller.objective().targets()) {
                if (a.slo.threshold() - b.slo.threshold()).abs() > 1e-9 * a.slo.threshold() {
                    change.push(format!("{} {} → {}", b.name, a.slo.describe(), b.slo.describe()));
                }
                if (a.weight - b.weight).abs() > 1e-9 {
                    change.push(format!("{} weight {:.3} → {:.3}", b.name, a.weight, b.weight));
                }
            }
            let change = change.join(", ");
            Ok(SavedController::Retargeted {
                controller: Box::new(controller),
                change,
            })
        }
        Err(e) => mismatch(format!(
            "[[classes]] declares {} but the saved controller was built for {} ({e})",
            describe(want.objective().targets()),
            describe(saved.objective().targets())
        )),
    }
}

/// Equal JSON values, numbers within a relative 1e-9 (a state file's numbers have been
/// printed and parsed).
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
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
