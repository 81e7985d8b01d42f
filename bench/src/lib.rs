//! Polyphony's experiment harness: a synthetic problem with a known optimum ([`synthetic`],
//! [`harness`]), and the evaluation of the paper's §8 on a simulated or real network: the
//! grounds a run is measured on ([`ground`]), the studies and their scenarios ([`studies`],
//! [`scale`], [`fresh`]), one closed loop per (tuner, seed) ([`closed_loop`]), the tables and CSV
//! ([`report`]), reading that CSV back ([`iterations`]) and the plots ([`plots`]); how many
//! scale scenarios can converge at all ([`ceiling`]); and pktsim
//! cross-validated against ns-3 on identical flows ([`ns3`]). Only [`report::write_all`],
//! [`plots`] and [`ns3::run_case`] write files, and only under the directory they are given.
#![warn(missing_docs)]

pub mod ceiling;
pub mod closed_loop;
pub mod eval;
pub mod fresh;
pub mod ground;
pub mod harness;
pub mod iterations;
pub mod ns3;
pub mod plots;
pub mod report;
pub mod scale;
pub mod studies;
pub mod synthetic;
pub mod tuners;

/// What can go wrong in an evaluation run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The user asked for something invalid (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// A scenario could not be loaded or prepared.
    #[error("scenario: {0}")]
    Scenario(String),
    /// The controller's model could not be built (e.g. a bad correction artifact).
    #[error("the controller's model")]
    Model(#[source] polyphony_model::ModelError),
    /// The live network (pktsim or the testbed) failed.
    #[error("ground: {0}")]
    Ground(String),
    /// A class of a scenario finished no flow in the windows its baseline SLO is measured on
    /// ([`scale`]), so it has no SLO to be given.
    #[error("{scenario}: class {class} finished no flow in {windows}; {advice}")]
    NoBaseline {
        /// The scenario.
        scenario: String,
        /// The class.
        class: String,
        /// The windows measured ("any of the 5 baseline windows").
        windows: String,
        /// What to do.
        advice: String,
    },
    /// The controller rejected an observation or failed to propose.
    #[error("tuner {tuner}, seed {seed}, iteration {iteration}: {message}")]
    Tuner {
        /// Tuner name.
        tuner: String,
        /// Seed of the run.
        seed: u64,
        /// Iteration at which it failed.
        iteration: usize,
        /// The core's message.
        message: String,
    },
    /// Reading a results file failed or it is not what the harness writes.
    #[error("reading {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// What was wrong, with where.
        message: String,
    },
    /// Writing results failed.
    #[error("writing {path}: {message}")]
    Write {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
}

impl EvalError {
    /// A scenario error from an `anyhow` chain.
    pub fn scenario(e: impl Into<anyhow::Error>) -> EvalError {
        EvalError::Scenario(format!("{:#}", e.into()))
    }
}

/// A binary's exit status for `e`: 2 when it is a usage error ([`EvalError::Usage`]), else 1.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    match e.downcast_ref::<EvalError>() {
        Some(EvalError::Usage(_)) => 2,
        _ => 1,
    }
}

/// CPU time of the calling thread, seconds (NaN if the clock cannot be read).
pub(crate) fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Reads and validates a scenario file.
pub fn load_scenario(path: &std::path::Path) -> anyhow::Result<polyphony_spec::Scenario> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    Ok(polyphony_spec::Scenario::from_toml(&text, &path.display().to_string())?)
}
