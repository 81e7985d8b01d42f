//! The machine-global `pp_dctcp` congestion control: registered once (bpftool struct_ops
//! register), added to `net.ipv4.tcp_allowed_congestion_control` (a non-initial namespace may
//! only select an allowed algorithm), and unregistered only when the last instance is gone.
//! Instances count as alive while their state file or BPF pin directory exists. A file lock
//! (`/run/polyphony/testbed/.dctcp.lock`) serialises concurrent `up`/`down` of instances.

use crate::cmd::run;
use crate::names::{BPF_ROOT, STATE_ROOT};
use crate::TestbedError;
use std::os::fd::AsRawFd;
use testbed_ebpf::DCTCP_NAME;

const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// An exclusive lock on the registration (released on drop).
pub struct Lock(#[allow(dead_code)] std::fs::File);

/// Takes the registration lock (blocks while another instance holds it).
pub fn lock() -> Result<Lock, TestbedError> {
    std::fs::create_dir_all(STATE_ROOT).map_err(|e| TestbedError::io(STATE_ROOT, e))?;
    let p = format!("{STATE_ROOT}/.dctcp.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| TestbedError::io(&p, e))?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(TestbedError::io(p, std::io::Error::last_os_error()));
    }
    Ok(Lock(f))
}

fn words(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// Whether `pp_dctcp` is registered.
pub fn registered() -> bool {
    words(AVAILABLE).iter().any(|w| w == DCTCP_NAME)
}

/// Registers `pp_dctcp` if it is not, and allows it in namespaces. Call with the lock held.
pub fn ensure(_l: &Lock, work_dir: &str) -> Result<(), TestbedError> {
    if !registered() {
        let obj = testbed_ebpf::pp_dctcp()?;
        let path = format!("{work_dir}/pp_dctcp.bpf.o");
        std::fs::write(&path, obj).map_err(|e| TestbedError::io(&path, e))?;
        let r = run("bpftool", &["struct_ops", "register", &path]);
        let _ = std::fs::remove_file(&path);
        r.map_err(|e| TestbedError::MissingFeature {
            feature: format!("BPF struct_ops congestion control ({e})"),
            how: "use a kernel with CONFIG_BPF_JIT, CONFIG_DEBUG_INFO_BTF and struct_ops (Linux ≥ 5.6)".into(),
        })?;
    }
    let mut allowed = words(ALLOWED);
    if !allowed.iter().any(|w| w == DCTCP_NAME) {
        allowed.push(DCTCP_NAME.into());
        run(
            "sysctl",
            &[
                "-qw",
                &format!("net.ipv4.tcp_allowed_congestion_control={}", allowed.join(" ")),
            ],
        )?;
    }
    Ok(())
}

/// Other live instances than `me`: state files or BPF pin directories.
pub fn other_instances(me: &str) -> Vec<String> {
    let mut v = Vec::new();
    for (dir, ext) in [(STATE_ROOT, ".json"), (BPF_ROOT, "")] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(p) = name.strip_suffix(ext) else { continue };
                if !p.starts_with('.') && p != me && !v.iter().any(|x| x == p) {
                    v.push(p.to_string());
                }
            }
        }
    }
    v
}

/// Unregisters `pp_dctcp` if no instance other than `me` remains. Call with the lock held,
/// after `me`'s namespaces, pins and state are gone. Returns whether it unregistered.
pub fn release(_l: &Lock, me: &str) -> Result<bool, TestbedError> {
    let others = other_instances(me);
    if !others.is_empty() || !registered() {
        if !others.is_empty() {
            tracing::info!("pp_dctcp stays registered: instances {others:?} remain");
        }
        return Ok(false);
    }
    let allowed: Vec<String> = words(ALLOWED).into_iter().filter(|w| w != DCTCP_NAME).collect();
    run(
        "sysctl",
        &[
            "-qw",
            &format!("net.ipv4.tcp_allowed_congestion_control={}", allowed.join(" ")),
        ],
    )?;
    match run("bpftool", &["struct_ops", "unregister", "name", DCTCP_NAME]) {
        Ok(_) => Ok(true),
        // A registration whose sockets are still closing is unregistered by the kernel when
        // the last one goes ("Operation now in progress"); that is done from our side.
        Err(TestbedError::Command { stderr, .. }) if stderr.contains("now in progress") => Ok(true),
        Err(e) => Err(e),
    }
}
