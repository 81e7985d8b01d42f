//! Compiles the testbed's BPF C programs with clang against a vmlinux.h generated from this
//! machine's BTF. Every failure (no clang, no bpftool, no BTF, a compile error) leaves the
//! objects out and records why, so the workspace still builds on a machine without the BPF
//! toolchain; the testbed then reports the reason at run time.
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAMS: [&str; 2] = ["ecn_marker", "pp_dctcp"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pp_bpf_built)");
    println!("cargo::rerun-if-changed=bpf");
    for p in PROGRAMS {
        println!("cargo::rerun-if-changed=bpf/{p}.bpf.c");
    }
    println!("cargo::rerun-if-env-changed=PP_BPF_CLANG");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    let why = match build(&out) {
        Ok(()) => {
            println!("cargo::rustc-cfg=pp_bpf_built");
            String::new()
        }
        Err(e) => {
            println!("cargo::warning=testbed BPF programs not built: {e}");
            e
        }
    };
    // The reason is compiled in, so the run-time error can say it.
    let _ = std::fs::write(out.join("bpf_missing_reason.txt"), why);
}

fn build(out: &Path) -> Result<(), String> {
    let clang = std::env::var("PP_BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        return Err("this kernel exposes no BTF at /sys/kernel/btf/vmlinux (needs CONFIG_DEBUG_INFO_BTF=y)".into());
    }
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file"])
        .arg(btf)
        .args(["format", "c"])
        .output()
        .map_err(|e| format!("cannot run bpftool ({e}): install the Debian package `bpftool`"))?;
    if !dump.status.success() {
        return Err(format!(
            "bpftool btf dump failed: {}",
            String::from_utf8_lossy(&dump.stderr).trim()
        ));
    }
    std::fs::write(out.join("vmlinux.h"), &dump.stdout).map_err(|e| format!("writing vmlinux.h: {e}"))?;
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("aarch64") => "aarch64-linux-gnu",
        _ => "x86_64-linux-gnu",
    };
    for p in PROGRAMS {
        let src = Path::new("bpf").join(format!("{p}.bpf.c"));
        let obj = out.join(format!("{p}.bpf.o"));
        let o = Command::new(&clang)
            .args(["-target", "bpf", "-g", "-O2"])
            .arg("-I")
            .arg(out)
            .arg(format!("-I/usr/include/{arch}"))
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .output()
            .map_err(|e| format!("cannot run {clang} ({e}): install the Debian packages `clang llvm libbpf-dev`"))?;
        if !o.status.success() {
            return Err(format!(
                "{clang} failed on {}: {} (is `libbpf-dev` installed?)",
                src.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
    }
    Ok(())
}
