//! The polyphony binary: daemon, CLI, metrics, HTTP API, configuration and state persistence.

fn main() {}
