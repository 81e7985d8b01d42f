//! emu: per-class TCP workload generator for real hosts, with FCT slowdown measurement.
#![warn(missing_docs)]
