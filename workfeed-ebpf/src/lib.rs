//! Workfeed's eBPF flow-capture program (C, built with clang) embedded for the loader.
#![warn(missing_docs)]
