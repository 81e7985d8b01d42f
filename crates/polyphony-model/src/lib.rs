//! Network models behind one trait: flowsim (fast flow-level) and pktsim (packet-level), and workload synthesis from flow-size CDFs.
#![warn(missing_docs)]
