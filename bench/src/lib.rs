//! Polyphony's experiment harness: a synthetic problem with a known optimum
//! ([`synthetic`]), and the loop that runs every tuner on it side by side and summarises the
//! evaluation metrics ([`harness`]). Writes nothing itself; the binaries decide where tables go.
#![warn(missing_docs)]

pub mod harness;
pub mod synthetic;
