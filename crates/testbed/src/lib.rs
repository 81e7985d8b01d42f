//! The namespace testbed: builds and tears down a real multi-class network on this host.
#![warn(missing_docs)]
