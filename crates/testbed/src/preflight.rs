//! What must hold before anything is built: root, the tools, the BPF objects, and the pseudo
//! file systems (bpffs, tracefs, cgroup2), which are mounted when absent.

use crate::cmd::{have, package_of, run};
use crate::TestbedError;

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn mounted(fstype: &str) -> Option<String> {
    let m = std::fs::read_to_string("/proc/mounts").ok()?;
    m.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == fstype).then(|| f[1].to_string())
        })
        .next()
}

fn ensure_mount(fstype: &str, target: &str) -> Result<String, TestbedError> {
    if let Some(at) = mounted(fstype) {
        return Ok(at);
    }
    std::fs::create_dir_all(target).map_err(|e| TestbedError::io(target, e))?;
    run("mount", &["-t", fstype, fstype, target]).map_err(|e| TestbedError::MissingFeature {
        feature: format!("a mountable {fstype} ({e})"),
        how: format!("mount it yourself: `mount -t {fstype} {fstype} {target}`"),
    })?;
    Ok(target.into())
}

/// Checks root, tools and BPF objects; mounts bpffs at /sys/fs/bpf, tracefs at
/// /sys/kernel/tracing and cgroup2 (at /sys/fs/cgroup) when they are not mounted anywhere.
pub fn check() -> Result<(), TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    for t in ["ip", "tc", "bpftool", "nsenter", "ethtool", "sysctl"] {
        if !have(t) {
            return Err(TestbedError::MissingTool {
                tool: t.into(),
                package: package_of(t).into(),
            });
        }
    }
    testbed_ebpf::ecn_marker()?;
    testbed_ebpf::pp_dctcp()?;
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Err(TestbedError::MissingFeature {
            feature: "BTF (/sys/kernel/btf/vmlinux), needed for struct_ops".into(),
            how: "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y".into(),
        });
    }
    let bpffs = ensure_mount("bpf", "/sys/fs/bpf")?;
    if bpffs != "/sys/fs/bpf" {
        return Err(TestbedError::MissingFeature {
            feature: format!("bpffs at /sys/fs/bpf (it is mounted at {bpffs})"),
            how: "mount -t bpf bpf /sys/fs/bpf".into(),
        });
    }
    ensure_mount("tracefs", "/sys/kernel/tracing")?;
    ensure_mount("cgroup2", "/sys/fs/cgroup")?;
    Ok(())
}

/// Where cgroup2 is mounted, if anywhere.
pub fn cgroup2_mount() -> Option<String> {
    mounted("cgroup2")
}
