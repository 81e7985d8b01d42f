//! Polyphony's experiment harness: runs every tuner on the same scenarios and seeds and writes tables and plots.
#![warn(missing_docs)]
