//! What can be wrong with a daemon configuration: every error names the file and the key, with
//! the offending value and what to do.

use std::path::PathBuf;
use thiserror::Error;

/// A configuration that could not be loaded. Always a user error: the binary exits with code 2.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML for this schema (unknown key, wrong type, ...).
    #[error("{path}:{line}: {why}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// What the parser said, including the key.
        why: String,
    },
    /// A value breaks a rule.
    #[error("{path}: {key} = {value}: {why}")]
    Invalid {
        /// The file.
        path: String,
        /// Dotted key, e.g. `classes[1].slo.max_slowdown`.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong and what to do.
        why: String,
    },
}

/// One key's value that breaks a rule, before it is placed in a file ([`ConfigError::Invalid`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{key} = {value}: {why}")]
pub struct InvalidValue {
    /// Dotted key, e.g. `sli.queries.p99`.
    pub key: String,
    /// The offending value, as written.
    pub value: String,
    /// What is wrong and what to do.
    pub why: String,
}

impl InvalidValue {
    /// A value of `key` that breaks a rule.
    pub fn new(key: impl Into<String>, value: impl Into<String>, why: impl Into<String>) -> InvalidValue {
        InvalidValue {
            key: key.into(),
            value: value.into(),
            why: why.into(),
        }
    }

    /// The error in the configuration file `path`.
    pub fn in_file(self, path: &str) -> ConfigError {
        ConfigError::Invalid {
            path: path.into(),
            key: self.key,
            value: self.value,
            why: self.why,
        }
    }
}

/// The HTTP API's bearer-token file is unusable.
#[derive(Debug, Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("cannot read the token file {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The first line is shorter than 16 characters.
    #[error("the token in {path} (its first line) has {len} characters; it needs at least 16")]
    Short {
        /// The file.
        path: PathBuf,
        /// Characters found.
        len: usize,
    },
}
