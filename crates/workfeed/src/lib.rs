//! Workfeed: eBPF flow capture loader, host agent, rack aggregator and workload windows.
#![warn(missing_docs)]
