//! The namespace testbed's contract, shared by the testbed that builds it and the tools that use
//! it (the `emu` workload generator, the daemon's testbed source): the names and addresses of an
//! instance's namespaces ([`Hosts`]), moving a thread into one ([`enter`]), and the base-RTT
//! probe ([`base_rtt`]) that every ideal FCT on the testbed divides by.
//!
//! It depends on nothing but the spec, so the testbed and the generator need not depend on each
//! other.
#![warn(missing_docs)]

mod hosts;
mod probe;

pub use hosts::{enter, netns_path, Hosts, NETNS_DIR};
pub use probe::{base_rtt, ROUNDS, WARMUP};

use std::path::PathBuf;

/// What can go wrong entering a namespace or probing between two.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// A network namespace could not be entered.
    #[error("cannot enter network namespace {name:?} ({path}): {source}; is the testbed up (`polyphony testbed up`) and are you root?")]
    Enter {
        /// Namespace name.
        name: String,
        /// Path tried.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A socket operation of the probe failed.
    #[error("{what}: {source}")]
    Socket {
        /// What was attempted, with the address.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A probe thread could not start, or died.
    #[error("the base-RTT probe's {0} thread panicked or could not start")]
    Worker(String),
}

impl NetnsError {
    pub(crate) fn socket(what: impl Into<String>, source: std::io::Error) -> NetnsError {
        NetnsError::Socket {
            what: what.into(),
            source,
        }
    }
}
