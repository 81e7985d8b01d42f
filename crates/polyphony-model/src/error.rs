//! The error type of the models: bad CDF files, workloads that do not fit a topology, and
//! configurations a model cannot evaluate. Every message names the offending value and what to do.

use polyphony_spec::{Dscp, SpecError};
use thiserror::Error;

/// Why a model, a CDF or a workload synthesis refused its input.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// A flow-size CDF file is malformed.
    #[error("{source_name}:{line}: {why}")]
    Cdf {
        /// File name or description of the text.
        source_name: String,
        /// 1-based line number (0 when the problem is the file as a whole).
        line: usize,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {why}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        why: String,
    },
    /// A class runs a congestion-control algorithm the models do not simulate.
    #[error(
        "class {} (DSCP {dscp}) is configured for congestion control {algorithm:?}: {model} models {modelled}; choose one of those for this class",
        dscp.name()
    )]
    UnmodelledCongestionControl {
        /// The class.
        dscp: Dscp,
        /// The algorithm's kernel name.
        algorithm: String,
        /// The model that refused it.
        model: &'static str,
        /// What that model simulates.
        modelled: &'static str,
    },
    /// A flow names a host the topology does not have.
    #[error(
        "flow {flow}: host {host} is not in the topology ({hosts} hosts): synthesise the workload for this topology"
    )]
    UnknownHost {
        /// Flow id.
        flow: u64,
        /// The host index.
        host: u32,
        /// Hosts in the topology.
        hosts: u32,
    },
    /// A flow's class has no entry in the configuration.
    #[error(
        "flow {flow}: class DSCP {dscp} is not configured: give the configuration one entry per class of the workload"
    )]
    UnknownClass {
        /// Flow id.
        flow: u64,
        /// Its DSCP.
        dscp: Dscp,
    },
    /// The configuration breaks the vocabulary's rules.
    #[error("invalid configuration: {0}")]
    Config(#[from] SpecError),
    /// More classes than a port has queues.
    #[error("{classes} classes configured; the models support at most {max}")]
    TooManyClasses {
        /// Classes asked for.
        classes: usize,
        /// The limit.
        max: usize,
    },
    /// A learned correction's artifact is malformed or was made for another build.
    #[error("correction artifact: {what}: {why}")]
    Artifact {
        /// The part of the artifact at fault.
        what: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// A parameter outside its range.
    #[error("{what} = {value}: {why}")]
    Invalid {
        /// Parameter name.
        what: String,
        /// Offending value.
        value: String,
        /// What to do.
        why: String,
    },
}

impl ModelError {
    /// Shorthand for [`ModelError::Invalid`].
    pub fn invalid(what: impl Into<String>, value: impl ToString, why: impl Into<String>) -> ModelError {
        ModelError::Invalid {
            what: what.into(),
            value: value.to_string(),
            why: why.into(),
        }
    }
}
