//! The error type of the vocabulary: every variant names the offending field and value.

use thiserror::Error;

/// A value that does not satisfy the vocabulary's rules.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SpecError {
    /// A field holds a value outside its allowed range.
    #[error("{field} = {value}: {why}")]
    Invalid {
        /// Dotted path of the field, e.g. `classes[1].slo.p99_slowdown`.
        field: String,
        /// The offending value, rendered.
        value: String,
        /// What is wrong and what to do about it.
        why: String,
    },
    /// A text input (TOML, JSON lines, CSV) could not be parsed.
    #[error("{source_name}:{line}: {why}")]
    Parse {
        /// Where the text came from (file name or a description).
        source_name: String,
        /// 1-based line number (0 when unknown).
        line: usize,
        /// What is wrong.
        why: String,
    },
}

impl SpecError {
    /// Shorthand for [`SpecError::Invalid`].
    pub fn invalid(field: impl Into<String>, value: impl ToString, why: impl Into<String>) -> Self {
        SpecError::Invalid {
            field: field.into(),
            value: value.to_string(),
            why: why.into(),
        }
    }
}
