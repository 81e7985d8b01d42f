//! Actuator for Linux tc: per-class HTB weights, ECN thresholds in the marker's BPF map, buffer limits.
#![warn(missing_docs)]
