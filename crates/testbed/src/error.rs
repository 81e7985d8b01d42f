//! The testbed's errors. Each says what failed, with the command or value, and what to do.

/// Everything that can go wrong building, inspecting or tearing down a testbed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Not running as root.
    #[error("the testbed needs root (network namespaces, tc, BPF); run it with sudo or as root")]
    NotRoot,
    /// A tool is not installed.
    #[error("`{tool}` is not installed or not on PATH: install the Debian package `{package}`")]
    MissingTool {
        /// The program.
        tool: String,
        /// The Debian package that provides it.
        package: String,
    },
    /// A kernel feature is missing.
    #[error("the kernel lacks {feature}: {how}")]
    MissingFeature {
        /// What is missing.
        feature: String,
        /// How to get it.
        how: String,
    },
    /// The BPF programs were not compiled in.
    #[error(transparent)]
    Bpf(#[from] testbed_ebpf::BpfMissing),
    /// A command failed.
    #[error("`{cmd}` failed: {stderr}{hint}")]
    Command {
        /// The command line.
        cmd: String,
        /// Its standard error.
        stderr: String,
        /// What probably went wrong (may be empty).
        hint: String,
    },
    /// An input was invalid.
    #[error("{field} = {value}: {why}")]
    Invalid {
        /// The offending field.
        field: String,
        /// Its value.
        value: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// No instance with this prefix exists.
    #[error("no testbed instance with prefix {0:?} is up (start one with `polyphony testbed up --prefix {0}`)")]
    NotUp(String),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The base-RTT probe failed.
    #[error("measuring the base RTT: {0}")]
    Probe(#[from] polyphony_netns::NetnsError),
}

impl TestbedError {
    pub(crate) fn invalid(field: impl Into<String>, value: impl ToString, why: impl Into<String>) -> TestbedError {
        TestbedError::Invalid {
            field: field.into(),
            value: value.to_string(),
            why: why.into(),
        }
    }
    pub(crate) fn io(path: impl std::fmt::Display, source: std::io::Error) -> TestbedError {
        TestbedError::Io {
            path: path.to_string(),
            source,
        }
    }
}
