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
    /// Shorthand for [`SpecError::Invalid`]; the value is rendered as [`compact_value`] does.
    pub fn invalid(field: impl Into<String>, value: impl ToString, why: impl Into<String>) -> Self {
        SpecError::Invalid {
            field: field.into(),
            value: compact_value(value.to_string()),
            why: why.into(),
        }
    }
}

/// A rendered value as an error message should show it: a number whose plain digits run past
/// 24 characters (an f64 of 10²⁴ or more, which no integer field reaches) in scientific
/// notation, e.g. `1e300` rather than three hundred digits; anything else unchanged.
pub fn compact_value(rendered: String) -> String {
    if rendered.len() > 24 {
        if let Ok(v) = rendered.parse::<f64>() {
            return format!("{v:e}");
        }
    }
    rendered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_numbers_are_shown_in_scientific_notation_and_nothing_else_changes() {
        let e = SpecError::invalid("interval_s", 1e300, "too long");
        assert_eq!(e.to_string(), "interval_s = 1e300: too long");
        assert_eq!(compact_value(f64::MAX.to_string()), "1.7976931348623157e308");
        for kept in [
            "18446744073709551615",
            "-9223372036854775808",
            "0.000000001",
            "2.5",
            "NaN",
            "inf",
        ] {
            assert_eq!(compact_value(kept.to_string()), kept);
        }
        let words = "a rather long description that is not a number";
        assert_eq!(compact_value(words.to_string()), words);
    }
}
