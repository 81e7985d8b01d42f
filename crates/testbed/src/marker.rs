//! The sojourn-time ECN marker: loads `ecn_marker.bpf.o` once per instance (programs pinned
//! under `<pin dir>/progs/`, maps under `<pin dir>/`), attaches `pp_stamp` at the egress
//! clsact of `<P>-sw` dev `rx` (before HTB) and `pp_judge` at the ingress clsact of `<P>-rx` dev
//! `eth0`, and reads the per-DSCP statistics back.

use crate::cmd::{in_ns, run};
use crate::names::{Names, BOTTLENECK_DEV, HOST_DEV};
use crate::TestbedError;
use serde::{Deserialize, Serialize};
use testbed_ebpf::{JUDGE_PROG, STAMP_PROG};

/// Loads (if not yet pinned) and attaches both programs.
pub fn install(n: &Names) -> Result<(), TestbedError> {
    let dir = n.pin_dir();
    std::fs::create_dir_all(&dir).map_err(|e| TestbedError::io(&dir, e))?;
    if !std::path::Path::new(&n.prog(JUDGE_PROG)).exists() {
        let obj = testbed_ebpf::ecn_marker()?;
        let path = format!("{}/ecn_marker.bpf.o", crate::names::STATE_ROOT);
        std::fs::write(&path, obj).map_err(|e| TestbedError::io(&path, e))?;
        let progs = format!("{dir}/progs");
        let r = run(
            "bpftool",
            &["prog", "loadall", &path, &progs, "type", "classifier", "pinmaps", &dir],
        );
        let _ = std::fs::remove_file(&path);
        r.map_err(|e| TestbedError::MissingFeature {
            feature: format!("tc BPF programs with bpf_skb_set_tstamp / bpf_skb_ecn_set_ce ({e})"),
            how: "use Linux ≥ 5.18 with CONFIG_NET_CLS_BPF and CONFIG_NET_SCH_INGRESS".into(),
        })?;
    }
    attach(&n.switch(), BOTTLENECK_DEV, "egress", &n.prog(STAMP_PROG))?;
    attach(&n.receiver(), HOST_DEV, "ingress", &n.prog(JUDGE_PROG))?;
    Ok(())
}

fn attach(ns: &str, dev: &str, dir: &str, pinned: &str) -> Result<(), TestbedError> {
    if run("tc", &["-n", ns, "qdisc", "show", "dev", dev, "clsact"])
        .map(|s| !s.contains("clsact"))
        .unwrap_or(true)
    {
        run("tc", &["-n", ns, "qdisc", "add", "dev", dev, "clsact"])?;
    }
    // nsenter keeps the host's /sys, so the pinned program is visible to tc.
    in_ns(
        ns,
        "tc",
        &[
            "filter",
            "replace",
            "dev",
            dev,
            dir,
            "pref",
            "1",
            "handle",
            "1",
            "bpf",
            "direct-action",
            "object-pinned",
            pinned,
        ],
    )?;
    Ok(())
}

/// The marker's counters for one DSCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MarkerStats {
    /// DSCP.
    pub dscp: u8,
    /// Packets judged.
    pub packets: u64,
    /// Packets set to CE.
    pub marked: u64,
    /// Sum of sojourn times (ns).
    pub sojourn_sum_ns: u64,
    /// Largest sojourn time (ns).
    pub sojourn_max_ns: u64,
    /// IPv4 packets that arrived without a stamp.
    pub unstamped: u64,
}

#[derive(Deserialize)]
struct Raw {
    formatted: Entry,
}
#[derive(Deserialize)]
struct Entry {
    key: u32,
    value: Value,
}
#[derive(Deserialize)]
struct Value {
    packets: u64,
    marked: u64,
    sojourn_sum: u64,
    sojourn_max: u64,
    unstamped: u64,
}

/// The counters of every DSCP that saw a packet.
pub fn stats(n: &Names) -> Result<Vec<MarkerStats>, TestbedError> {
    let out = run("bpftool", &["-j", "map", "dump", "pinned", &n.stats_map()])?;
    let v: Vec<Raw> = serde_json::from_str(&out).map_err(|e| TestbedError::Command {
        cmd: format!("bpftool -j map dump pinned {}", n.stats_map()),
        stderr: format!("unexpected output ({e})"),
        hint: "; bpftool must print BTF-formatted JSON (bpftool ≥ 5.x)".into(),
    })?;
    Ok(v.into_iter()
        .map(|r| r.formatted)
        .filter(|e| e.value.packets + e.value.unstamped > 0)
        .map(|e| MarkerStats {
            dscp: e.key as u8,
            packets: e.value.packets,
            marked: e.value.marked,
            sojourn_sum_ns: e.value.sojourn_sum,
            sojourn_max_ns: e.value.sojourn_max,
            unstamped: e.value.unstamped,
        })
        .collect())
}

/// The thresholds in the map (DSCP, ns).
pub fn thresholds(n: &Names) -> Result<Vec<(u8, u64)>, TestbedError> {
    #[derive(Deserialize)]
    struct T {
        key: u32,
        value: u64,
    }
    #[derive(Deserialize)]
    struct R {
        formatted: T,
    }
    let out = run("bpftool", &["-j", "map", "dump", "pinned", &n.thresh_map()])?;
    let v: Vec<R> = serde_json::from_str(&out).unwrap_or_default();
    let mut t: Vec<(u8, u64)> = v
        .into_iter()
        .map(|r| (r.formatted.key as u8, r.formatted.value))
        .collect();
    t.sort_unstable();
    Ok(t)
}
