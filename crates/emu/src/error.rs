//! The errors of the workload generator.

use std::path::PathBuf;

/// Everything that can go wrong while generating traffic or measuring it.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A network namespace could not be entered, or the base-RTT probe failed.
    #[error(transparent)]
    Netns(#[from] polyphony_netns::NetnsError),
    /// A socket operation failed.
    #[error("{what}: {source}")]
    Socket {
        /// What was attempted, with the address.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An input was out of range or inconsistent.
    #[error("{field} = {value}: {why}")]
    Invalid {
        /// The offending field.
        field: String,
        /// Its value.
        value: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An input file could not be read or parsed.
    #[error("cannot read {path}: {why}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// The live `/metrics` endpoint could not listen on its address.
    #[error("--metrics-listen {addr}: cannot serve /metrics there: {source}; give a free local address and port (port 0 picks one)")]
    Listen {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A worker thread died.
    #[error("emu worker {0} panicked or could not start")]
    Worker(String),
}

impl EmuError {
    pub(crate) fn invalid(field: impl Into<String>, value: impl ToString, why: impl Into<String>) -> EmuError {
        EmuError::Invalid {
            field: field.into(),
            value: value.to_string(),
            why: why.into(),
        }
    }
    pub(crate) fn socket(what: impl Into<String>, source: std::io::Error) -> EmuError {
        EmuError::Socket {
            what: what.into(),
            source,
        }
    }
}
