//! Running the system tools (`ip`, `tc`, `bpftool`, `nsenter`, `ethtool`, `sysctl`). Every
//! failure names the command line and its stderr, plus a hint for the failures we know.

use crate::TestbedError;
use std::process::Command;

/// Runs `prog args…`; returns stdout.
pub fn run(prog: &str, args: &[&str]) -> Result<String, TestbedError> {
    tracing::debug!("{prog} {}", args.join(" "));
    let out = Command::new(prog).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TestbedError::MissingTool {
                tool: prog.into(),
                package: package_of(prog).into(),
            }
        } else {
            TestbedError::Command {
                cmd: format!("{prog} {}", args.join(" ")),
                stderr: e.to_string(),
                hint: String::new(),
            }
        }
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(TestbedError::Command {
            hint: hint(&stderr),
            cmd: format!("{prog} {}", args.join(" ")),
            stderr,
        })
    }
}

/// Runs a command inside network namespace `ns` without remounting /sys (so /sys/fs/bpf pins
/// stay visible): `nsenter --net=/var/run/netns/<ns> prog args…`.
pub fn in_ns(ns: &str, prog: &str, args: &[&str]) -> Result<String, TestbedError> {
    let net = format!("--net=/var/run/netns/{ns}");
    let mut a = vec![net.as_str(), prog];
    a.extend_from_slice(args);
    run("nsenter", &a)
}

/// Whether a program can be found on PATH.
pub fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

/// The Debian package that provides a tool.
pub fn package_of(prog: &str) -> &'static str {
    match prog {
        "ip" | "tc" => "iproute2",
        "bpftool" => "bpftool",
        "ethtool" => "ethtool",
        "nsenter" => "util-linux",
        "sysctl" => "procps",
        "clang" => "clang",
        _ => "the package that provides it",
    }
}

fn hint(stderr: &str) -> String {
    let s = stderr.to_ascii_lowercase();
    let h = if s.contains("specified qdisc kind is unknown") || s.contains("unknown qdisc") {
        "; the kernel lacks this qdisc (needs CONFIG_NET_SCH_HTB / _FIFO / _INGRESS)"
    } else if s.contains("operation not permitted") {
        "; run as root (CAP_NET_ADMIN and CAP_BPF are needed)"
    } else if s.contains("file exists") {
        "; a leftover object with this name exists: run `polyphony testbed down --prefix <P>` first"
    } else if s.contains("cannot open network namespace") || s.contains("no such file or directory") {
        "; the instance is not (fully) up"
    } else {
        ""
    };
    h.to_string()
}
