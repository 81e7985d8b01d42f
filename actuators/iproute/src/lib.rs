//! Actuator for per-class initial congestion windows through ip route in per-class routing tables.
#![warn(missing_docs)]
