//! The testbed's eBPF programs (C, built with clang): the sojourn-time ECN marker and the DCTCP struct_ops congestion control.
#![warn(missing_docs)]
