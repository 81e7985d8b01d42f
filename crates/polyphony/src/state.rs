//! Persistence of the daemon's state in its state directory.
//!
//! One file, `state.json`, holds everything a restart needs: the controller's serialised state
//! (its admitted samples, trust region, best value, ...), the configuration in force, the last
//! known good configuration and the recent iteration history. It is replaced atomically: the new
//! content goes to a temporary file in the same directory, which is fsynced, renamed over the old
//! file, and then the directory is fsynced. A `kill -9` at any moment leaves either the old or the
//! new file, never a torn one. Before the rename, the state being replaced is kept as
//! `state.json.prev` (a hard link, itself renamed into place), so a file damaged later (a disk
//! error, a hand edit) still has its previous good copy next to it. A state file that does not
//! parse is an error naming it and that copy; nothing is written over either. This module
//! touches only the state directory.

use polyphony_spec::NetworkConfig;
use serde::{Deserialize, Deserializer, Serialize};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The state file's name inside the state directory.
pub const STATE_FILE: &str = "state.json";
/// The previous good copy of the state file, kept next to it.
pub const PREV_FILE: &str = "state.json.prev";
/// How many iteration records the state keeps (older ones are dropped).
pub const HISTORY_LIMIT: usize = 2_000;
/// The format version written; a different version is refused on load.
pub const FORMAT_VERSION: u32 = 1;

/// A state directory problem.
#[derive(Debug, Error)]
pub enum StateError {
    /// Reading or writing failed (the OS error is the source).
    #[error("{path}: {op}")]
    Io {
        /// The file or directory.
        path: String,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a state this version understands.
    #[error("{path}: not a polyphony state file ({why}){hint}")]
    Corrupt {
        /// The file.
        path: String,
        /// Why it was refused.
        why: String,
        /// What to do about it, starting with "; " (empty when there is nothing to do).
        hint: String,
    },
    /// The state file is gone but its previous copy is there: starting afresh would write
    /// over the copy, so nothing starts until an operator chooses.
    #[error("{path} is missing but its previous copy {prev} is there{hint}")]
    OnlyPrevious {
        /// The missing state file.
        path: String,
        /// The previous copy.
        prev: String,
        /// What to do about it, starting with "; ".
        hint: String,
    },
}

/// A number the file may hold as `null`: JSON has no NaN, so an unknown value (no prediction in
/// a warm-up, guard or held iteration; an SLI a class did not have) is written as `null`.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One class's numbers in one iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRecord {
    /// Class name.
    pub name: String,
    /// DSCP.
    pub dscp: u8,
    /// Measured SLI, in `unit`: the SLO's percentile of the slowdown, or the p99 query
    /// completion time.
    #[serde(deserialize_with = "nan_if_null")]
    pub sli: f64,
    /// Unit of `sli` and `slo`: empty for a slowdown, "µs" for a query completion time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// The SLO threshold.
    #[serde(deserialize_with = "nan_if_null")]
    pub slo: f64,
    /// sli / slo.
    #[serde(deserialize_with = "nan_if_null")]
    pub ratio: f64,
    /// The model's SLI for this class at the configuration measured, on the same window's flows
    /// (before calibration); `None` without a model or when the decision was a warm-up design
    /// point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<f64>,
    /// The controller's calibration of the model for this class: the measured ratio is about
    /// this many times the model's (the median over its samples); `None` while it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_calibration: Option<f64>,
    /// Every statistic the SLI source measured for the class (p50, p99, p99.9, mean, flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<polyphony_spec::ClassSli>,
}

/// What the daemon did with the configuration it chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Applied through the actuators (or the simulated network).
    Applied,
    /// Published only (advise mode).
    Advised,
    /// The measurement broke the guard or an actuator failed: returned to last known good.
    RolledBack,
    /// The controller could not propose (error logged); configuration unchanged.
    Held,
}

/// One control iteration, as the history and the status API show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// 1-based iteration number.
    pub iteration: u64,
    /// Unix time in seconds when it ended.
    #[serde(deserialize_with = "nan_if_null")]
    pub unix_time: f64,
    /// The configuration the measurement was taken under.
    pub measured_config: NetworkConfig,
    /// Per-class SLIs.
    pub classes: Vec<ClassRecord>,
    /// Measured objective g (J of the measured ratios).
    #[serde(deserialize_with = "nan_if_null")]
    pub g: f64,
    /// Whether every SLO held.
    pub all_slos_met: bool,
    /// Whether the controller admitted the sample.
    pub admitted: bool,
    /// The next configuration chosen.
    pub next_config: NetworkConfig,
    /// Predicted ĝ at the next configuration.
    #[serde(deserialize_with = "nan_if_null")]
    pub predicted_g: f64,
    /// σ of the prediction.
    #[serde(deserialize_with = "nan_if_null")]
    pub predicted_sigma: f64,
    /// Expected improvement of the chosen configuration.
    #[serde(deserialize_with = "nan_if_null")]
    pub ei: f64,
    /// Why the controller chose it.
    pub reason: String,
    /// What happened to it.
    pub action: Action,
    /// Wall time of the whole iteration, seconds.
    #[serde(deserialize_with = "nan_if_null")]
    pub iteration_seconds: f64,
    /// Of which spent in the model, seconds.
    #[serde(deserialize_with = "nan_if_null")]
    pub model_seconds: f64,
}

/// Everything a restart needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersistedState {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// Iterations completed.
    pub iteration: u64,
    /// The configuration in force on the network (or advised, in advise mode).
    pub config_in_force: NetworkConfig,
    /// The last configuration whose measurement passed the guard (until one has, the
    /// starting one).
    pub last_good: NetworkConfig,
    /// Whether `last_good`'s own latest measurement broke the guard (the core's
    /// `StepState::last_good_failed`; absent in older state files: false).
    #[serde(default)]
    pub last_good_failed: bool,
    /// The controller's own state (the core's serde form).
    pub controller: serde_json::Value,
    /// Regime shifts seen so far.
    #[serde(default)]
    pub regime_shifts: u64,
    /// Rollbacks so far.
    #[serde(default)]
    pub rollbacks: u64,
    /// Actuator errors so far.
    #[serde(default)]
    pub actuator_errors: u64,
    /// Recent iterations, oldest first, at most [`HISTORY_LIMIT`].
    #[serde(default)]
    pub history: Vec<IterationRecord>,
    /// Intervals skipped because there was nothing to measure or model (an empty workload
    /// window, a class without flows or without an SLI).
    #[serde(default)]
    pub skipped_intervals: u64,
    /// Intervals measured so far — used, skipped, or judging a stage of a staged apply. A
    /// simulated or replayed source draws the traffic of interval `intervals` next, so an
    /// interval that is skipped is followed by a fresh one rather than by the same draw again.
    /// Absent in older state files: `iteration + skipped_intervals` (see [`parse_state`]).
    #[serde(default)]
    pub intervals: u64,
    /// Why the last skipped interval was skipped (with its Unix time), if any was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_skip: Option<Skip>,
    /// Warm-up progress of the control step. A state file written before the daemon had a
    /// warm-up has none and resumes without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<polyphony_core::WarmUp>,
    /// The configuration read back from the devices when the daemon first started in apply mode
    /// with this state (what `on_exit = "revert"` restores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_at_start: Option<NetworkConfig>,
    /// Devices the daemon stands aside from (changed by hand), with what was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stood_aside: Vec<StoodAside>,
    /// Why the daemon holds (a stage of a staged apply failed), until an operator resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// A device whose settings someone changed by hand: the daemon stops actuating it until an
/// operator resumes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoodAside {
    /// The actuator's name.
    pub device: String,
    /// The settings found different from what the daemon last applied (`item: applied -> found`).
    pub knobs: Vec<StoodAsideKnob>,
    /// Unix time in seconds when it was found.
    pub unix_time: f64,
}

/// One setting found changed by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoodAsideKnob {
    /// The setting, as the actuator names it (e.g. `htb class 1:10 on pp-sw/rx`).
    pub knob: String,
    /// What the daemon last applied.
    pub applied: String,
    /// What was found in force.
    pub found: String,
}

/// A skipped interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    /// Unix time in seconds.
    pub unix_time: f64,
    /// `empty_window`, `class_without_flows` or `missing_sli`.
    pub reason: String,
    /// What was missing, in words.
    pub detail: String,
}

impl PersistedState {
    /// Appends a record, dropping the oldest beyond [`HISTORY_LIMIT`].
    pub fn push_history(&mut self, r: IterationRecord) {
        self.history.push(r);
        if self.history.len() > HISTORY_LIMIT {
            let excess = self.history.len() - HISTORY_LIMIT;
            self.history.drain(..excess);
        }
    }
}

/// A state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

fn io(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StateError {
    let path = path.display().to_string();
    move |source| StateError::Io { path, op, source }
}

impl StateDir {
    /// Opens (creating if needed, mode 0700) the directory.
    pub fn open(dir: &Path) -> Result<StateDir, StateError> {
        fs::create_dir_all(dir).map_err(io(dir, "create directory"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
        }
        Ok(StateDir { dir: dir.to_path_buf() })
    }

    /// Opens an existing directory without creating or changing anything (read-only users).
    pub fn open_existing(dir: &Path) -> Result<StateDir, StateError> {
        fs::metadata(dir).map_err(io(dir, "open directory"))?;
        Ok(StateDir { dir: dir.to_path_buf() })
    }

    /// The state file's path.
    pub fn file(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// The previous good copy's path.
    pub fn prev_file(&self) -> PathBuf {
        self.dir.join(PREV_FILE)
    }

    /// Loads the state, `None` when there is none yet. A file that is not a state this build
    /// reads is [`StateError::Corrupt`], naming it and, when there is one that reads, its
    /// previous good copy.
    pub fn load(&self) -> Result<Option<PersistedState>, StateError> {
        let path = self.file();
        let bytes = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let prev = self.prev_file();
                if !prev.exists() {
                    return Ok(None);
                }
                let hint = match fs::read(&prev).map_err(|e| e.to_string()).and_then(|b| parse_state(&b)) {
                    Ok(p) => format!(
                        " (iteration {}): `mv {} {}` resumes from it, or move it away to start fresh",
                        p.iteration,
                        prev.display(),
                        path.display()
                    ),
                    Err(why) => format!("; it does not read either ({why}): move it away to start fresh"),
                };
                return Err(StateError::OnlyPrevious {
                    path: path.display().to_string(),
                    prev: prev.display().to_string(),
                    hint,
                });
            }
            Err(e) => return Err(io(&path, "read")(e)),
        };
        parse_state(&bytes).map(Some).map_err(|why| {
            let prev = self.prev_file();
            let hint = match fs::read(&prev).ok().map(|b| parse_state(&b)) {
                Some(Ok(p)) => format!(
                    "; its previous good copy {} (iteration {}) reads: `mv {} {}` resumes from it, or move both away to start fresh",
                    prev.display(),
                    p.iteration,
                    prev.display(),
                    path.display()
                ),
                _ => "; move it away to start fresh".into(),
            };
            StateError::Corrupt {
                path: path.display().to_string(),
                why,
                hint,
            }
        })
    }

    /// Replaces the state atomically (temp file, fsync, rename, fsync of the directory),
    /// keeping the state it replaces as [`PREV_FILE`].
    pub fn save(&self, state: &PersistedState) -> Result<(), StateError> {
        let bytes = serde_json::to_vec(state).map_err(|e| StateError::Corrupt {
            path: self.file().display().to_string(),
            why: format!("cannot serialise: {e}"),
            hint: String::new(),
        })?;
        let file = self.file();
        if file.exists() {
            let prev = self.prev_file();
            let link = self.dir.join(format!(".{PREV_FILE}.tmp.{}", std::process::id()));
            let _ = fs::remove_file(&link);
            fs::hard_link(&file, &link).map_err(io(&link, "link the previous state"))?;
            fs::rename(&link, &prev).map_err(io(&prev, "rename into place"))?;
        }
        write_atomically(&file, &bytes)
    }
}

/// A state file's content, or why it is not one this build reads (never panics).
pub fn parse_state(bytes: &[u8]) -> Result<PersistedState, String> {
    // serde also reads a struct from an array, whose errors would name an inner type.
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(_) => return Err("not a JSON object".into()),
        None => return Err("empty".into()),
    }
    let mut s: PersistedState = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if s.version != FORMAT_VERSION {
        return Err(format!(
            "format version {} (this build writes {FORMAT_VERSION})",
            s.version
        ));
    }
    // Every iteration and every skipped interval measured one interval.
    s.intervals = s.intervals.max(s.iteration.saturating_add(s.skipped_intervals));
    Ok(s)
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new content.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    {
        let mut f = File::create(&tmp).map_err(io(&tmp, "create temporary file"))?;
        f.write_all(bytes).map_err(io(&tmp, "write"))?;
        f.sync_all().map_err(io(&tmp, "fsync"))?;
    }
    fs::rename(&tmp, path).map_err(io(path, "rename into place"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir, "fsync directory"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Bytes, Dscp, Packets};

    fn state(iteration: u64) -> PersistedState {
        let c = NetworkConfig::uniform(&[Dscp::AF11, Dscp::AF21], Bytes(30_000), Packets(10));
        PersistedState {
            version: FORMAT_VERSION,
            iteration,
            config_in_force: c.clone(),
            last_good: c,
            last_good_failed: false,
            controller: serde_json::json!({"samples": [1, 2, 3]}),
            regime_shifts: 0,
            rollbacks: 0,
            actuator_errors: 0,
            history: vec![],
            skipped_intervals: 0,
            intervals: iteration,
            last_skip: None,
            warmup: None,
            found_at_start: None,
            stood_aside: Vec::new(),
            held: None,
        }
    }

    #[test]
    fn an_unknown_number_written_as_null_reads_back_as_nan() {
        let c = ClassRecord {
            name: "AF11".into(),
            dscp: 10,
            sli: f64::NAN,
            unit: String::new(),
            slo: 11.0,
            ratio: f64::NAN,
            predicted: None,
            model_calibration: None,
            measured: None,
        };
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"sli\":null"), "{text}");
        let back: ClassRecord = serde_json::from_str(&text).unwrap();
        assert!(back.sli.is_nan() && back.ratio.is_nan() && back.slo == 11.0);
    }

    #[test]
    fn save_then_load_round_trips_keeps_the_previous_copy_and_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::open(d.path()).unwrap();
        assert_eq!(s.load().unwrap(), None);
        s.save(&state(3)).unwrap();
        s.save(&state(4)).unwrap();
        assert_eq!(s.load().unwrap(), Some(state(4)));
        assert_eq!(parse_state(&fs::read(s.prev_file()).unwrap()), Ok(state(3)));
        let mut names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                std::ffi::OsString::from(STATE_FILE),
                std::ffi::OsString::from(PREV_FILE)
            ]
        );
    }

    #[test]
    fn last_good_failed_round_trips_and_is_false_in_older_files() {
        let mut st = state(5);
        st.last_good_failed = true;
        let text = serde_json::to_string(&st).unwrap();
        assert_eq!(parse_state(text.as_bytes()), Ok(st));
        // A file written before the field existed.
        let old = text.replace(",\"last_good_failed\":true", "");
        assert!(!old.contains("last_good_failed"), "{old}");
        assert_eq!(parse_state(old.as_bytes()), Ok(state(5)));
    }

    #[test]
    fn intervals_round_trip_and_older_files_count_iterations_and_skips() {
        let mut st = state(5);
        st.skipped_intervals = 2;
        st.intervals = 9;
        let text = serde_json::to_string(&st).unwrap();
        assert_eq!(parse_state(text.as_bytes()), Ok(st.clone()));
        // A file written before the field existed measured one interval per iteration and
        // per skip.
        let old = text.replace(",\"intervals\":9", "");
        assert!(!old.contains("\"intervals\""), "{old}");
        assert_eq!(parse_state(old.as_bytes()).map(|s| s.intervals), Ok(7));
    }

    /// A state directory that saved iterations 3 and then 4 (so 3 is the previous copy).
    fn saved_twice() -> (tempfile::TempDir, StateDir) {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::open(d.path()).unwrap();
        s.save(&state(3)).unwrap();
        s.save(&state(4)).unwrap();
        (d, s)
    }

    #[test]
    fn a_state_that_is_no_json_object_says_so() {
        assert_eq!(parse_state(b"[1, 2, 3]"), Err("not a JSON object".into()));
        assert_eq!(parse_state(b" \n"), Err("empty".into()));
    }

    #[test]
    fn a_state_file_gone_with_its_previous_copy_left_starts_nothing() {
        let (_d, s) = saved_twice();
        fs::remove_file(s.file()).unwrap();
        let e = s.load().unwrap_err();
        assert!(matches!(e, StateError::OnlyPrevious { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("is missing") && e.contains("(iteration 3): `mv"), "{e}");
        assert_eq!(parse_state(&fs::read(s.prev_file()).unwrap()), Ok(state(3)));
        fs::write(s.prev_file(), b"{").unwrap();
        let e = s.load().unwrap_err().to_string();
        assert!(e.contains("does not read either") && e.contains("move it away"), "{e}");
        // Neither file: a fresh start.
        fs::remove_file(s.prev_file()).unwrap();
        assert_eq!(s.load().unwrap(), None);
    }

    #[test]
    fn a_truncated_state_file_names_itself_and_its_previous_good_copy() {
        let (_d, s) = saved_twice();
        let full = fs::read(s.file()).unwrap();
        for cut in [0, 1, full.len() / 2, full.len() - 1] {
            fs::write(s.file(), &full[..cut]).unwrap();
            let e = s.load().unwrap_err().to_string();
            assert!(
                e.contains(STATE_FILE) && e.contains(PREV_FILE) && e.contains("iteration 3"),
                "{e}"
            );
            // Loading wrote nothing: the previous good copy is intact.
            assert_eq!(parse_state(&fs::read(s.prev_file()).unwrap()), Ok(state(3)));
        }
    }

    #[test]
    fn a_torn_file_is_refused_with_its_path() {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::open(d.path()).unwrap();
        fs::write(s.file(), b"{\"version\": 1, \"iter").unwrap();
        let e = s.load().unwrap_err().to_string();
        assert!(
            e.contains(STATE_FILE) && e.contains("not a polyphony state file"),
            "{e}"
        );
    }

    #[test]
    fn history_is_bounded() {
        let mut s = state(0);
        let r = IterationRecord {
            iteration: 0,
            unix_time: 0.0,
            measured_config: s.config_in_force.clone(),
            classes: vec![],
            g: 1.0,
            all_slos_met: true,
            admitted: true,
            next_config: s.config_in_force.clone(),
            predicted_g: 1.0,
            predicted_sigma: 0.1,
            ei: 0.0,
            reason: "x".into(),
            action: Action::Advised,
            iteration_seconds: 0.0,
            model_seconds: 0.0,
        };
        for i in 0..(HISTORY_LIMIT as u64 + 5) {
            s.push_history(IterationRecord {
                iteration: i,
                ..r.clone()
            });
        }
        assert_eq!(s.history.len(), HISTORY_LIMIT);
        assert_eq!(s.history[0].iteration, 5);
    }
}
