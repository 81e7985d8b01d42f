//! Compiles `src/bpf/workfeed.bpf.c` with clang against a `vmlinux.h` that bpftool dumps from the
//! running kernel's BTF, into `$OUT_DIR/workfeed.bpf.o`.
//!
//! When a tool or the BTF is missing the build still succeeds (binaries that never capture, such
//! as the simulator demo, must build on a machine without clang): the object is left empty, the
//! reason is written to `$OUT_DIR/workfeed.bpf.status`, a `cargo:warning` names the Debian package,
//! and loading fails at run time with the same message.
//!
//! Environment: `CLANG`, `BPFTOOL`, `LLVM_STRIP` override the tool paths; `WORKFEED_VMLINUX_BTF`
//! overrides `/sys/kernel/btf/vmlinux`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/bpf/workfeed.bpf.c");
    println!("cargo:rerun-if-changed=src/bpf/workfeed_record.h");
    for var in ["CLANG", "BPFTOOL", "LLVM_STRIP", "WORKFEED_VMLINUX_BTF"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_else(|| "target".into()));
    let obj = out.join("workfeed.bpf.o");
    let status = out.join("workfeed.bpf.status");
    match build(&out, &obj) {
        Ok(()) => {
            let _ = fs::write(&status, "");
        }
        Err(why) => {
            println!("cargo:warning=workfeed-ebpf: eBPF capture program not built: {why}");
            let _ = fs::write(&obj, b"");
            let _ = fs::write(&status, why);
        }
    }
}

/// The first existing candidate for a tool: the override variable, then PATH, then sbin dirs
/// (bpftool lives in /usr/sbin on Debian, which is not on a normal user's PATH).
fn tool(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn run(cmd: &mut Command, what: &str, package: &str) -> Result<Vec<u8>, String> {
    let o = cmd
        .output()
        .map_err(|e| format!("{what} could not be started ({e}): install the Debian package `{package}`"))?;
    if !o.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(o.stdout)
}

fn build(out: &Path, obj: &Path) -> Result<(), String> {
    let clang = tool("CLANG", "clang")
        .ok_or("clang not found: install the Debian package `clang` (and `llvm`), or set CLANG")?;
    let bpftool =
        tool("BPFTOOL", "bpftool").ok_or("bpftool not found: install the Debian package `bpftool`, or set BPFTOOL")?;
    let btf = env::var_os("WORKFEED_VMLINUX_BTF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/sys/kernel/btf/vmlinux"));
    if !btf.is_file() {
        return Err(format!(
            "{} not found: the kernel must be built with CONFIG_DEBUG_INFO_BTF=y \
             (or set WORKFEED_VMLINUX_BTF to a BTF file)",
            btf.display()
        ));
    }
    if !Path::new("/usr/include/bpf/bpf_helpers.h").is_file() {
        return Err("/usr/include/bpf/bpf_helpers.h not found: install the Debian package `libbpf-dev`".into());
    }
    let header = run(
        Command::new(&bpftool)
            .args(["btf", "dump", "file"])
            .arg(&btf)
            .args(["format", "c"]),
        "bpftool btf dump",
        "bpftool",
    )?;
    fs::write(out.join("vmlinux.h"), header).map_err(|e| format!("writing vmlinux.h: {e}"))?;

    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => other.to_string().leak(),
        Err(_) => "x86",
    };
    let src = Path::new("src/bpf/workfeed.bpf.c");
    run(
        Command::new(&clang)
            .args(["-target", "bpf", "-g", "-O2", "-Wall", "-Werror"])
            .arg(format!("-D__TARGET_ARCH_{arch}"))
            .arg("-I")
            .arg(out)
            .args(["-I", "src/bpf", "-c"])
            .arg(src)
            .arg("-o")
            .arg(obj),
        "clang -target bpf",
        "clang",
    )?;
    // Dropping DWARF keeps the .BTF sections aya needs and shrinks the object ~10x.
    if let Some(strip) = tool("LLVM_STRIP", "llvm-strip") {
        let _ = run(Command::new(strip).arg("-g").arg(obj), "llvm-strip -g", "llvm");
    }
    Ok(())
}
