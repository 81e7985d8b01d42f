//! Actuator that renders and applies per-queue weights and ECN thresholds through switch CLIs over SSH.
#![warn(missing_docs)]
