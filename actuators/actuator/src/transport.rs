//! Where a command runs: here ([`Local`]) or on a remote device through the `ssh` client
//! ([`SshTransport`]).
//!
//! A transport rewrites a [`Command`] before it is planned, so the dry run shows exactly what
//! will be executed on this machine. The SSH transport uses key authentication only
//! (`BatchMode`, no passwords, no keyboard-interactive), strict host-key checking against an
//! operator-provided `known_hosts` file, a connect timeout, and ignores user `ssh_config`
//! files so behaviour does not depend on the account running the daemon.

use crate::Command;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Rewrites a command so that it runs where the managed device is.
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// The command to run on this machine for `cmd`. An empty `cmd.argv` means "open a session
    /// and feed it `cmd.stdin`" (switch CLIs that read commands from their input).
    fn wrap(&self, cmd: Command) -> Command;
}

/// Commands run on this machine unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl Transport for Local {
    fn wrap(&self, cmd: Command) -> Command {
        cmd
    }
}

fn default_user() -> String {
    "root".into()
}
fn default_port() -> u16 {
    22
}
fn default_connect_timeout() -> u32 {
    5
}
fn default_ssh() -> String {
    "ssh".into()
}

/// How to reach a device over SSH (a TOML table in the daemon's configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    /// Address or host name of the device's management interface.
    pub host: String,
    /// Login name.
    #[serde(default = "default_user")]
    pub user: String,
    /// TCP port of the SSH server.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Private key file (key authentication only).
    pub identity: PathBuf,
    /// `known_hosts` file holding the device's host key; unknown or changed keys are refused.
    pub known_hosts: PathBuf,
    /// Seconds to wait for the TCP connection and handshake.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: u32,
    /// Network namespace the `ssh` client runs in (`ip netns exec NAME ssh …`), if not the
    /// daemon's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_namespace: Option<String>,
    /// The `ssh` client binary.
    #[serde(default = "default_ssh")]
    pub ssh: String,
}

/// Runs commands on a remote device through the OpenSSH client.
#[derive(Debug, Clone)]
pub struct SshTransport {
    cfg: SshConfig,
}

impl SshTransport {
    /// A transport for `cfg`.
    pub fn new(cfg: SshConfig) -> SshTransport {
        SshTransport { cfg }
    }

    /// The configuration this transport was built from.
    pub fn config(&self) -> &SshConfig {
        &self.cfg
    }
}

impl Transport for SshTransport {
    fn wrap(&self, cmd: Command) -> Command {
        let c = &self.cfg;
        let mut argv: Vec<String> = Vec::new();
        if let Some(ns) = &c.client_namespace {
            argv.extend(["ip", "netns", "exec", ns.as_str()].map(String::from));
        }
        argv.push(c.ssh.clone());
        argv.extend(["-F", "none"].map(String::from));
        for opt in [
            "BatchMode=yes".to_string(),
            "StrictHostKeyChecking=yes".to_string(),
            format!("UserKnownHostsFile={}", c.known_hosts.display()),
            "GlobalKnownHostsFile=/dev/null".to_string(),
            "IdentitiesOnly=yes".to_string(),
            "PasswordAuthentication=no".to_string(),
            "KbdInteractiveAuthentication=no".to_string(),
            format!("ConnectTimeout={}", c.connect_timeout_secs),
            "LogLevel=ERROR".to_string(),
        ] {
            argv.push("-o".into());
            argv.push(opt);
        }
        argv.push("-i".into());
        argv.push(c.identity.display().to_string());
        argv.push("-p".into());
        argv.push(c.port.to_string());
        argv.push("-l".into());
        argv.push(c.user.clone());
        argv.push(c.host.clone());
        if !cmd.argv.is_empty() {
            argv.push("--".into());
            // The remote side hands one string to the login shell: quote every word.
            argv.push(cmd.shell_words());
        }
        Command { argv, stdin: cmd.stdin }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_wraps_with_key_only_strict_options() {
        let cfg: SshConfig = toml::from_str(
            r#"host = "198.18.100.1"
identity = "/etc/polyphony/id"
known_hosts = "/etc/polyphony/known_hosts"
client_namespace = "pp-rx""#,
        )
        .unwrap();
        let t = SshTransport::new(cfg);
        let w = t.wrap(Command::new(["tc", "class", "show", "dev", "rx"]));
        let s = w.to_string();
        assert!(s.starts_with("ip netns exec pp-rx ssh -F none -o BatchMode=yes"), "{s}");
        assert!(s.contains("-o StrictHostKeyChecking=yes"), "{s}");
        assert!(s.contains("-o UserKnownHostsFile=/etc/polyphony/known_hosts"), "{s}");
        assert!(s.contains("-o PasswordAuthentication=no"), "{s}");
        assert!(
            s.ends_with("-p 22 -l root 198.18.100.1 -- 'tc class show dev rx'"),
            "{s}"
        );
    }

    #[test]
    fn unknown_keys_in_ssh_config_are_rejected() {
        let r: Result<SshConfig, _> =
            toml::from_str("host = \"h\"\nidentity = \"/i\"\nknown_hosts = \"/k\"\npassword = \"x\"");
        assert!(r.is_err());
    }
}
