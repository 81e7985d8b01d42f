//! The Polyphony controller: objective, residual GP, trust-region EI, denoiser, admission, regime shifts, baselines and evaluation metrics. Pure and deterministic.
#![warn(missing_docs)]
