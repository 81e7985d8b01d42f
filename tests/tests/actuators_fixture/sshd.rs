//! A real OpenSSH server (Debian's `/usr/sbin/sshd`) started inside a namespace for one test:
//! generated host and client keys, key-only authentication, a temporary `known_hosts`. Killed
//! by its PID when dropped.

use super::{must, run};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

/// The running server and the client-side files to reach it.
pub struct Sshd {
    child: Child,
    /// Holds keys, configuration and the server log.
    pub dir: tempfile::TempDir,
    /// The client's private key.
    pub client_key: PathBuf,
    /// A `known_hosts` with the server's host key for `addr`.
    pub known_hosts: PathBuf,
    /// The listening address.
    pub addr: String,
}

/// Generates an ed25519 key pair without passphrase at `path` (and `path.pub`).
pub fn keygen(path: &std::path::Path) {
    must(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "polyphony-test",
        "-f",
        &path.display().to_string(),
    ]);
}

impl Sshd {
    /// Starts sshd in namespace `ns` on `addr:22` and waits until a client in `client_ns` can
    /// log in.
    pub fn start(ns: &str, addr: &str, client_ns: &str) -> Sshd {
        let dir = tempfile::tempdir().expect("temporary directory");
        let host_key = dir.path().join("host_key");
        let client_key = dir.path().join("client_key");
        keygen(&host_key);
        keygen(&client_key);
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(dir.path().join("client_key.pub"), &authorized).expect("authorized_keys");
        let host_pub = std::fs::read_to_string(dir.path().join("host_key.pub")).expect("host key");
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(&known_hosts, format!("{addr} {host_pub}")).expect("known_hosts");
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress {addr}\nPort 22\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nPidFile {}\nLogLevel VERBOSE\n",
                host_key.display(),
                authorized.display(),
                dir.path().join("sshd.pid").display()
            ),
        )
        .expect("sshd_config");
        std::fs::create_dir_all("/run/sshd").expect("privilege separation directory");
        must(&["/usr/sbin/sshd", "-t", "-f", &config.display().to_string()]);
        let log = std::fs::File::create(dir.path().join("sshd.log")).expect("log file");
        // `nsenter` execs sshd in place, so the child's PID is sshd's. It enters only the
        // network namespace: `ip netns exec` would also give sshd a private mount namespace with
        // a fresh /sys, hiding the bpffs mount and the threshold map's pin.
        let netns = format!("--net=/run/netns/{ns}");
        let child = std::process::Command::new("nsenter")
            .args([netns.as_str(), "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let s = Sshd {
            child,
            client_key,
            known_hosts,
            addr: addr.into(),
            dir,
        };
        let key = s.client_key.display().to_string();
        let kh = format!("UserKnownHostsFile={}", s.known_hosts.display());
        for _ in 0..50 {
            let ok = run(&[
                "ip",
                "netns",
                "exec",
                client_ns,
                "ssh",
                "-F",
                "none",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                &kh,
                "-o",
                "ConnectTimeout=2",
                "-i",
                &key,
                "-l",
                "root",
                addr,
                "--",
                "true",
            ]);
            if ok.is_ok() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("sshd did not accept a login within 5 s; log:\n{}", s.log());
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // Our own child, by its PID.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
