//! Runs [`Command`]s: the only place in the actuators that starts processes.
//!
//! [`SystemRunner`] spawns the program directly (no shell), feeds its standard input, captures
//! standard output and error on their own threads (so a chatty command cannot block on a full
//! pipe), and kills the process it started when it overruns the timeout. A non-zero exit status
//! is an error carrying the command's standard error. Tests may wrap a runner to inject
//! failures; production code uses [`SystemRunner`].

use crate::Command;
use std::io::{Read, Write};
use std::process::Stdio;
use std::thread;
use std::time::Duration;
use thiserror::Error;
use wait_timeout::ChildExt;

/// Default per-command timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a successful command printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output, lossily decoded as UTF-8.
    pub stdout: String,
    /// Standard error, lossily decoded as UTF-8 (warnings of a successful command).
    pub stderr: String,
}

/// Why a command did not succeed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The program could not be started.
    #[error("could not start `{program}`: {why} (is it installed and in PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// The operating system's reason.
        why: String,
    },
    /// The program ran longer than allowed and was killed.
    #[error("timed out after {timeout:?} and was killed (raise the actuator's timeout if the device is slow)")]
    Timeout {
        /// The limit that was exceeded.
        timeout: Duration,
    },
    /// The program exited unsuccessfully.
    #[error("exited with {status}: {stderr}")]
    Failed {
        /// Exit status as text (`exit status 2`, `signal 9`).
        status: String,
        /// Its standard error (trimmed), or standard output when standard error was empty.
        stderr: String,
    },
    /// A failure injected by a test runner (never produced by [`SystemRunner`]).
    #[error("injected failure: {0}")]
    Injected(String),
}

/// Something that runs commands. Object safe; shared between actuators as `Arc<dyn Runner>`.
pub trait Runner: Send + Sync {
    /// Runs `cmd` to completion; `Ok` only when it exited with status 0.
    fn run(&self, cmd: &Command) -> Result<Output, RunError>;
}

/// Runs commands on this machine, each with a timeout.
#[derive(Debug, Clone)]
pub struct SystemRunner {
    timeout: Duration,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl SystemRunner {
    /// A runner that kills any command still running after `timeout`.
    pub fn new(timeout: Duration) -> SystemRunner {
        SystemRunner { timeout }
    }

    /// The per-command timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            // A read error only truncates what we report; the exit status still decides.
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

impl Runner for SystemRunner {
    fn run(&self, cmd: &Command) -> Result<Output, RunError> {
        let program = cmd.program().to_string();
        if program.is_empty() {
            return Err(RunError::Spawn {
                program,
                why: "empty argument vector".into(),
            });
        }
        tracing::debug!(command = %cmd.shell_words(), "run");
        let mut child = std::process::Command::new(&program)
            .args(&cmd.argv[1..])
            .stdin(if cmd.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Spawn {
                program: program.clone(),
                why: e.to_string(),
            })?;
        let writer = match (child.stdin.take(), cmd.stdin.clone()) {
            (Some(mut sink), Some(text)) => Some(thread::spawn(move || {
                // The command may exit without reading everything; its status tells.
                let _ = sink.write_all(text.as_bytes());
            })),
            _ => None,
        };
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                // Our own child, killed by its handle (its PID), then reaped.
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout { timeout: self.timeout });
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Spawn {
                    program,
                    why: format!("waiting failed: {e}"),
                });
            }
        };
        if let Some(w) = writer {
            let _ = w.join();
        }
        let stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
        let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
        if status.success() {
            Ok(Output { stdout, stderr })
        } else {
            let msg = if stderr.trim().is_empty() {
                stdout.trim()
            } else {
                stderr.trim()
            };
            Err(RunError::Failed {
                status: status.to_string(),
                stderr: msg.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_feeds_stdin() {
        let r = SystemRunner::default();
        let out = r.run(&Command::new(["cat"]).with_stdin("hello\n")).unwrap();
        assert_eq!(out.stdout, "hello\n");
    }

    #[test]
    fn nonzero_exit_reports_stderr() {
        let r = SystemRunner::default();
        let e = r.run(&Command::new(["ls", "/nonexistent-polyphony-path"])).unwrap_err();
        match e {
            RunError::Failed { stderr, .. } => assert!(stderr.contains("nonexistent"), "{stderr}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn overrunning_command_is_killed() {
        let r = SystemRunner::new(Duration::from_millis(200));
        let e = r.run(&Command::new(["sleep", "5"])).unwrap_err();
        assert!(matches!(e, RunError::Timeout { .. }), "{e:?}");
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let r = SystemRunner::default();
        let e = r.run(&Command::new(["polyphony-no-such-program"])).unwrap_err();
        assert!(matches!(e, RunError::Spawn { .. }), "{e:?}");
    }
}
