//! The rules of a daemon configuration that serde cannot express, each error naming the key
//! and the offending value.

use super::{ConfigError, DaemonConfig, InvalidValue, Mode, SliSource, TokenError, WorkloadSource};
use polyphony_core::CoreError;
use polyphony_model::{ModelError, SpaceError};
use polyphony_spec::{Scenario, SpecError};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

impl DaemonConfig {
    /// Checks every rule; returns the workload scenario when the source names one.
    pub fn validate(&self, path: &str) -> Result<Option<Scenario>, ConfigError> {
        let bad = invalid(path);
        let spec = |prefix: &str, e: SpecError| match e {
            SpecError::Invalid { field, value, why } => ConfigError::Invalid {
                path: path.into(),
                key: if prefix.is_empty() {
                    field
                } else {
                    format!("{prefix}.{field}")
                },
                value,
                why,
            },
            SpecError::Parse { source_name, line, why } => ConfigError::Parse {
                path: source_name,
                line,
                why,
            },
        };
        if !(self.interval_s.is_finite() && self.interval_s >= 0.05 && self.interval_s <= 86_400.0) {
            return Err(bad(
                "interval_s",
                &self.interval_s,
                "the control interval is in seconds, between 0.05 and 86400",
            ));
        }
        if self.state_dir.as_os_str().is_empty() {
            return Err(bad("state_dir", &"\"\"", "name a directory for controller state"));
        }
        if self.state_dir.exists() && !self.state_dir.is_dir() {
            return Err(bad(
                "state_dir",
                &format!("{:?}", self.state_dir.display().to_string()),
                "is not a directory: name a directory (created if missing) for controller state",
            ));
        }
        // The spec's class rules (distinct DSCPs and names, SLO ≥ 1, ...), via a scenario-less check.
        polyphony_spec::validate_classes(&self.classes, "classes").map_err(|e| spec("", e))?;
        self.topology.validate().map_err(|e| spec("", e))?;
        let space = self.knob_space();
        space.validate_for(&self.dscps()).map_err(|e| spec("knobs", e))?;
        self.controller_params().validate().map_err(|e| match e {
            CoreError::InvalidParam { field, value, why } => ConfigError::Invalid {
                path: path.into(),
                key: format!("controller.{field}"),
                value,
                why,
            },
            other => bad("controller", &"(table)", &other.to_string()),
        })?;
        polyphony_core::Space::new(&space, self.controller_params().aitchison_alpha)
            .map_err(|e| bad("knobs", &"(table)", &e.to_string()))?;
        // Every algorithm a categorical knob may choose must be one the iproute actuator may set.
        if let Some(ip) = &self.actuators.iproute {
            for (i, cat) in space.categorical.iter().enumerate() {
                for (j, a) in cat.congestion_control.iter().enumerate() {
                    if !ip.congestion_controls.contains(a) {
                        return Err(bad(
                            &format!("knobs.categorical[{i}].congestion_control[{j}]"),
                            a,
                            "not in actuators.iproute.congestion_controls: allow it there (and in the hosts' net.ipv4.tcp_allowed_congestion_control) or drop it from the knob",
                        ));
                    }
                }
            }
        }
        let init = self.initial_config();
        // The classes first: a missing class also breaks the weights' sum, the lesser symptom.
        init.check_classes(&self.dscps(), "classes")
            .map_err(|e| spec("initial", e))?;
        init.validate().map_err(|e| spec("initial", e))?;
        // Every configuration the controller may propose must be one the model evaluates, or
        // each proposal would fail (and the daemon hold) for the model's refusal.
        let kind = self.model.kind;
        kind.check_space(&self.dscps(), &space, &init).map_err(|e| match e {
            SpaceError::Start(source) => {
                let (key, value) = match &source {
                    ModelError::TooManyClasses { classes, .. } => ("classes".to_string(), format!("{classes} classes")),
                    ModelError::UnmodelledCongestionControl { dscp, algorithm, .. } => {
                        match init.classes.iter().position(|c| c.dscp == *dscp) {
                            Some(k) => (format!("initial.classes[{k}].congestion_control"), format!("{algorithm:?}")),
                            None => ("initial".to_string(), "(table)".to_string()),
                        }
                    }
                    _ => ("initial".to_string(), "(table)".to_string()),
                };
                bad(
                    &key,
                    &value,
                    &format!("[model] kind = \"{}\" cannot evaluate the start: {source}", kind.as_str()),
                )
            }
            SpaceError::Choice {
                knob,
                choice,
                algorithm,
                source,
            } => bad(
                &format!("knobs.categorical[{knob}].congestion_control[{choice}]"),
                &format!("{algorithm:?}"),
                &format!(
                    "[model] kind = \"{}\" cannot evaluate a proposal that chooses it: {source}; or drop it from the knob",
                    kind.as_str()
                ),
            ),
        })?;
        if !(self.guard.max_objective.is_finite() && self.guard.max_objective > 0.0) {
            return Err(bad(
                "guard.max_objective",
                &self.guard.max_objective,
                "a positive objective value (≈ worst SLI/SLO ratio) above which the daemon rolls back",
            ));
        }
        if self.model.threads > 1024 {
            return Err(bad(
                "model.threads",
                &self.model.threads,
                "use 0 (one per core) or up to 1024",
            ));
        }
        // Query completion times come only from sources that replay the workload's queries.
        if matches!(self.sli, SliSource::Prometheus { .. } | SliSource::Workfeed { .. }) {
            if let Some((i, c)) = self
                .classes
                .iter()
                .enumerate()
                .find(|(_, c)| c.slo.kind() == polyphony_spec::SloKind::QctP99)
            {
                return Err(bad(
                    &format!("classes[{i}].slo.kind"),
                    &"\"qct_p99\"",
                    &format!(
                        "class {} has a query-completion-time SLO, which this SLI source cannot measure: use sli.source = \"simulated\" or \"emu\"",
                        c.name
                    ),
                ));
            }
        }
        match &self.sli {
            SliSource::Simulated => {
                if !matches!(self.workload, WorkloadSource::Scenario { .. }) {
                    return Err(bad(
                        "sli.source",
                        &"\"simulated\"",
                        "a simulated network needs [workload] source = \"scenario\" to know its traffic",
                    ));
                }
            }
            SliSource::Emu { prefix, base_rtt_us } => {
                if !matches!(self.workload, WorkloadSource::Scenario { .. }) {
                    return Err(bad(
                        "sli.source",
                        &"\"emu\"",
                        "the emu source replays the scenario's traffic: set [workload] source = \"scenario\"",
                    ));
                }
                if prefix.is_empty()
                    || prefix.len() > 4
                    || !prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                {
                    return Err(bad(
                        "sli.prefix",
                        &format!("{prefix:?}"),
                        "a testbed prefix is 1–4 characters [a-z0-9]",
                    ));
                }
                if let Some(us) = base_rtt_us {
                    if !(us.is_finite() && *us > 0.0) {
                        return Err(bad("sli.base_rtt_us", us, "a positive number of microseconds"));
                    }
                }
            }
            SliSource::Prometheus { url, query, queries } => {
                check_url("sli.url", url).map_err(|e| e.in_file(path))?;
                queries.resolve(query.as_deref()).map_err(|e| e.in_file(path))?;
            }
            SliSource::Workfeed { base_rtt_us, min_flows } => {
                if !matches!(
                    self.workload,
                    WorkloadSource::Workfeed { .. } | WorkloadSource::Nats { .. }
                ) {
                    return Err(bad(
                        "sli.source",
                        &"\"workfeed\"",
                        "SLIs from Workfeed need the flows it captures: set [workload] source = \"workfeed\" or \"nats\"",
                    ));
                }
                if let Some(us) = base_rtt_us {
                    if !(us.is_finite() && *us > 0.0) {
                        return Err(bad("sli.base_rtt_us", us, "a positive number of microseconds"));
                    }
                }
                if *min_flows == 0 {
                    return Err(bad(
                        "sli.min_flows",
                        min_flows,
                        "at least 1 flow per class is needed for a percentile",
                    ));
                }
            }
        }
        let scenario = match &self.workload {
            WorkloadSource::Scenario { scenario } => {
                let shown = scenario.display().to_string();
                let text = std::fs::read_to_string(scenario).map_err(|e| {
                    bad(
                        "workload.scenario",
                        &format!("{shown:?}"),
                        &format!("cannot read the scenario: {e}"),
                    )
                })?;
                let s = Scenario::from_toml(&text, &shown).map_err(|e| spec("workload.scenario", e))?;
                polyphony_model::mix_cdfs(&s)
                    .map_err(|e| bad("workload.scenario", &format!("{shown:?}"), &e.to_string()))?;
                let mut a = s.dscps();
                let mut b = self.dscps();
                a.sort();
                b.sort();
                if a != b {
                    return Err(bad(
                        "workload.scenario",
                        &format!("{shown:?}"),
                        "the scenario's classes (DSCPs) differ from [[classes]]",
                    ));
                }
                // The scenario's traffic is drawn on its topology and the model runs on
                // [topology]: they must be one network.
                if s.topology != self.topology {
                    return Err(bad(
                        "topology",
                        &format!("\"{}\"", self.topology),
                        &format!(
                            "differs from the topology of the scenario {shown:?} ({}), whose traffic the workload is: make them the same",
                            s.topology
                        ),
                    ));
                }
                let no_queries = self.classes.iter().enumerate().find(|(_, c)| {
                    c.slo.kind() == polyphony_spec::SloKind::QctP99
                        && !s.mix.iter().any(|m| m.dscp == c.dscp && m.incast.is_some())
                });
                if let Some((i, c)) = no_queries {
                    return Err(bad(
                        &format!("classes[{i}].slo.kind"),
                        &"\"qct_p99\"",
                        &format!(
                            "class {} has a query-completion-time SLO but the scenario {shown:?} gives it no queries: add [mix.incast] to its [[mix]] entry",
                            c.name
                        ),
                    ));
                }
                Some(s)
            }
            WorkloadSource::Trace { path: trace } => {
                self.validate_trace(path, trace)?;
                None
            }
            WorkloadSource::Workfeed {
                listen,
                window_s,
                key_file,
                hosts,
                ..
            } => {
                self.validate_workfeed(path, *listen, *window_s, key_file.as_deref(), hosts)?;
                None
            }
            WorkloadSource::Nats {
                url,
                stream,
                subject_prefix,
                consumer,
                ack_wait_s,
                window_s,
                key_file,
                user,
                password_file,
                token_file,
                credentials_file,
                hosts,
            } => {
                // The datagrams are authenticated by the NATS server; the HMAC key is optional.
                let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
                self.validate_workfeed(path, loopback, *window_s, key_file.as_deref(), hosts)?;
                self.validate_nats(
                    path,
                    url,
                    [
                        ("workload.stream", stream),
                        ("workload.subject_prefix", subject_prefix),
                        ("workload.consumer", consumer),
                    ],
                    *ack_wait_s,
                    user.as_deref(),
                    [
                        ("workload.password_file", password_file.as_deref()),
                        ("workload.token_file", token_file.as_deref()),
                        ("workload.credentials_file", credentials_file.as_deref()),
                    ],
                )?;
                None
            }
        };
        if self.mode == Mode::Apply && self.actuators.is_empty() && !matches!(self.sli, SliSource::Simulated) {
            return Err(bad(
                "mode",
                &"\"apply\"",
                "apply mode needs at least one [actuators.*] table (or use mode = \"advise\")",
            ));
        }
        self.validate_stages(path)?;
        if let Some(t) = &self.http.token_file {
            read_token(t).map_err(|e| {
                bad(
                    "http.token_file",
                    &format!("{:?}", t.display().to_string()),
                    &e.to_string(),
                )
            })?;
        }
        Ok(scenario)
    }
}

impl DaemonConfig {
    /// `[[stages]]`: every configured actuator in exactly one stage, every class named known.
    fn validate_stages(&self, path: &str) -> Result<(), ConfigError> {
        if self.stages.is_empty() {
            return Ok(());
        }
        let bad = invalid(path);
        let names = self.actuators.names();
        let mut seen: Vec<&str> = Vec::new();
        for (i, st) in self.stages.iter().enumerate() {
            if st.actuators.is_empty() {
                return Err(bad(
                    &format!("stages[{i}].actuators"),
                    &"[]",
                    "name at least one configured actuator per stage",
                ));
            }
            for a in &st.actuators {
                if !names.contains(a) {
                    return Err(bad(
                        &format!("stages[{i}].actuators"),
                        &format!("{a:?}"),
                        &format!("no configured actuator has this name; configured: {names:?}"),
                    ));
                }
                if seen.contains(&a.as_str()) {
                    return Err(bad(
                        &format!("stages[{i}].actuators"),
                        &format!("{a:?}"),
                        "this actuator is already in an earlier stage; put each in one stage",
                    ));
                }
                seen.push(a);
            }
            for c in &st.classes {
                if !self.classes.iter().any(|k| &k.name == c) {
                    return Err(bad(
                        &format!("stages[{i}].classes"),
                        &format!("{c:?}"),
                        "not a class declared under [[classes]]",
                    ));
                }
            }
        }
        if let Some(missing) = names.iter().find(|n| !seen.contains(&n.as_str())) {
            return Err(bad(
                "stages",
                &format!("{missing:?}"),
                "this configured actuator is in no stage; add it to one",
            ));
        }
        Ok(())
    }

    /// A trace workload is the window the model sees on [topology] every interval: every
    /// flow's hosts must be in that network and its DSCP one of [[classes]]'.
    fn validate_trace(&self, path: &str, trace: &Path) -> Result<(), ConfigError> {
        let bad = invalid(path);
        let shown = trace.display().to_string();
        let value = format!("{shown:?}");
        let text = std::fs::read_to_string(trace)
            .map_err(|e| bad("workload.path", &value, &format!("cannot read the trace: {e}")))?;
        let w = polyphony_spec::Workload::from_file_text(&text, &shown)
            .map_err(|e| bad("workload.path", &value, &e.to_string()))?;
        let hosts = self.topology.hosts();
        if let Some(f) = w.flows.iter().find(|f| f.src.0 >= hosts || f.dst.0 >= hosts) {
            return Err(bad(
                "workload.path",
                &value,
                &format!(
                    "flow {} runs from host {} to host {}, but [topology] ({}) has hosts 0..{}: give a trace of this network",
                    f.id.0,
                    f.src.0,
                    f.dst.0,
                    self.topology,
                    hosts - 1
                ),
            ));
        }
        let dscps = self.dscps();
        if let Some(f) = w.flows.iter().find(|f| !dscps.contains(&f.dscp)) {
            return Err(bad(
                "workload.path",
                &value,
                &format!(
                    "flow {} has DSCP {}, which no [[classes]] entry has: add the class or drop its flows from the trace",
                    f.id.0,
                    f.dscp.value()
                ),
            ));
        }
        // The rest of what every model call checks (sizes, start times), once here rather
        // than failing every proposal on this fixed window.
        let topo = polyphony_model::Topology::from_spec(&self.topology)
            .map_err(|e| bad("topology", &self.topology, &e.to_string()))?;
        polyphony_model::check_workload(&topo, &dscps, &w).map_err(|e| {
            bad(
                "workload.path",
                &value,
                &format!("{e}: give a trace the models can replay"),
            )
        })?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn validate_nats(
        &self,
        path: &str,
        url: &str,
        names: [(&str, &String); 3],
        ack_wait_s: f64,
        user: Option<&str>,
        files: [(&str, Option<&Path>); 3],
    ) -> Result<(), ConfigError> {
        let bad = invalid(path);
        if !(url.starts_with("nats://") || url.starts_with("tls://")) {
            return Err(bad(
                "workload.url",
                &format!("{url:?}"),
                "a NATS URL such as \"nats://10.0.0.5:4222\"",
            ));
        }
        for (key, v) in names {
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(bad(key, &format!("{v:?}"), "one token of letters, digits, '-' or '_'"));
            }
        }
        if !(ack_wait_s.is_finite() && (1.0..=3600.0).contains(&ack_wait_s)) {
            return Err(bad("workload.ack_wait_s", &ack_wait_s, "seconds in [1, 3600]"));
        }
        let given: Vec<&str> = files.iter().filter(|(_, f)| f.is_some()).map(|(k, _)| *k).collect();
        if given.len() > 1 {
            return Err(bad(
                given[1],
                &"(set)",
                &format!("give one way to authenticate; {} is set too", given[0]),
            ));
        }
        if user.is_some() != files[0].1.is_some() {
            return Err(bad(
                "workload.user",
                &format!("{user:?}"),
                "a NATS user needs workload.password_file, and a password file needs workload.user",
            ));
        }
        for (key, f) in files {
            if let Some(f) = f {
                std::fs::read_to_string(f)
                    .map_err(|e| bad(key, &format!("{:?}", f.display().to_string()), &e.to_string()))?;
            }
        }
        Ok(())
    }

    fn validate_workfeed(
        &self,
        path: &str,
        listen: SocketAddr,
        window_s: f64,
        key_file: Option<&Path>,
        hosts: &BTreeMap<Ipv4Addr, u32>,
    ) -> Result<(), ConfigError> {
        let bad = invalid(path);
        if !(window_s.is_finite() && window_s > 0.0 && window_s <= 86_400.0) {
            return Err(bad(
                "workload.window_s",
                &window_s,
                "seconds of recent flows, in (0, 86400]",
            ));
        }
        match key_file {
            Some(k) => {
                workfeed::wire::AuthKey::from_file(k).map_err(|e| {
                    bad(
                        "workload.key_file",
                        &format!("{:?}", k.display().to_string()),
                        &e.to_string(),
                    )
                })?;
            }
            None if !listen.ip().is_loopback() => {
                return Err(bad(
                    "workload.key_file",
                    &"(missing)",
                    "a Workfeed listener on a non-loopback address needs the agents' HMAC key file (≥ 16 bytes)",
                ))
            }
            None => {}
        }
        if hosts.is_empty() {
            return Err(bad(
                "workload.hosts",
                &"{}",
                "map every captured address to a [topology] host (\"198.18.1.2\" = 0); without it no flow can be modelled",
            ));
        }
        let n = polyphony_model::Topology::from_spec(&self.topology)
            .map(|t| t.hosts())
            .map_err(|e| bad("topology", &"(table)", &e.to_string()))?;
        if let Some((addr, id)) = hosts.iter().find(|(_, id)| **id >= n) {
            return Err(bad(
                &format!("workload.hosts.\"{addr}\""),
                id,
                &format!("the topology has {n} hosts, numbered 0..{}", n.saturating_sub(1)),
            ));
        }
        Ok(())
    }
}

/// Reads the bearer token: the file's first line, trimmed, at least 16 characters.
pub fn read_token(path: &Path) -> Result<String, TokenError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 {
        return Err(TokenError::Short {
            path: path.to_path_buf(),
            len: token.len(),
        });
    }
    Ok(token)
}

fn check_url(key: &str, url: &str) -> Result<(), InvalidValue> {
    if url.starts_with("http://") && url.len() > "http://".len() {
        Ok(())
    } else {
        Err(InvalidValue::new(
            key,
            format!("{url:?}"),
            "an http:// URL, e.g. \"http://127.0.0.1:9100/metrics\"",
        ))
    }
}

/// An error for `key = value` in the file `path`, with what is wrong and what to do.
fn invalid(path: &str) -> impl Fn(&str, &dyn std::fmt::Display, &str) -> ConfigError + '_ {
    move |key, value, why| ConfigError::Invalid {
        path: path.into(),
        key: key.into(),
        value: polyphony_spec::compact_value(value.to_string()),
        why: why.into(),
    }
}
