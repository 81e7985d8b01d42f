//! The bottleneck (HTB at `<P>-sw` dev `rx`) and the per-class knobs: scheduling weight (HTB
//! rate ∝ weight, ceil = link rate, quantum ∝ weight), buffer (bfifo limit), ECN threshold
//! (the marker's map, as a sojourn time K·8/C) and initial window (fwmark rule + table with
//! `initcwnd` in every sender). [`apply`] sets all of them from a `NetworkConfig`; each setter
//! is also public so tests and tools can turn one knob alone.

use crate::cmd::{in_ns, run};
use crate::names::{
    class_id, dsfield, fwmark, rule_pref, sender_gw, sojourn_threshold, table, Names, BOTTLENECK_DEV, DEFAULT_CLASS,
    HOST_DEV, RX_NET,
};
use crate::TestbedError;
use polyphony_spec::{BitsPerSec, Bytes, Dscp, NetworkConfig, Packets};

/// Smallest HTB quantum: one full Ethernet frame.
pub const MIN_QUANTUM: u64 = 1514;
/// Largest HTB quantum the kernel accepts without complaint.
pub const MAX_QUANTUM: u64 = 200_000;
/// Class buffer when the configuration names none.
pub const DEFAULT_BUFFER: Bytes = Bytes(512_000);

/// HTB quanta ∝ weights, the smallest one MTU.
pub fn quanta(weights: &[f64]) -> Vec<u64> {
    let wmin = weights.iter().cloned().fold(f64::INFINITY, f64::min).max(1e-9);
    weights
        .iter()
        .map(|w| ((w / wmin * MIN_QUANTUM as f64).round() as u64).clamp(MIN_QUANTUM, MAX_QUANTUM))
        .collect()
}

/// Runs `tc -n <ns> <words…>` (the words contain no spaces).
fn tc_in(ns: &str, words: &str) -> Result<String, TestbedError> {
    let mut a = vec!["-n", ns];
    a.extend(words.split_whitespace());
    run("tc", &a)
}

/// Creates or replaces HTB class `classid` under `parent` at the bottleneck.
fn htb_class(sw: &str, parent: &str, classid: &str, rate: u64, ceil: u64, quantum: u64) -> Result<(), TestbedError> {
    let w = format!(
        "class replace dev {BOTTLENECK_DEV} parent {parent} classid {classid} htb rate {rate}bit ceil {ceil}bit quantum {quantum}"
    );
    tc_in(sw, &w).map(|_| ())
}

/// Creates the root HTB, the parent and default classes and one class, leaf and filter per DSCP.
pub fn build_bottleneck(n: &Names, rate: BitsPerSec, cfg: &NetworkConfig) -> Result<(), TestbedError> {
    let sw = n.switch();
    let dev = BOTTLENECK_DEV;
    // HTB cannot "change" itself: replace only when the root is not our HTB already.
    let root = run("tc", &["-n", &sw, "qdisc", "show", "dev", dev, "root"]).unwrap_or_default();
    if !root.contains("htb 1: root") {
        run(
            "tc",
            &[
                "-n", &sw, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "99",
            ],
        )?;
    }
    htb_class(&sw, "1:", "1:1", rate.0, rate.0, MIN_QUANTUM)?;
    htb_class(
        &sw,
        "1:1",
        DEFAULT_CLASS,
        (rate.0 / 100).max(8_000),
        rate.0,
        MIN_QUANTUM,
    )?;
    set_weights(n, rate, cfg)?;
    // Filters: start from none, then one u32 match per class.
    let _ = run("tc", &["-n", &sw, "filter", "del", "dev", dev, "parent", "1:"]);
    for c in &cfg.classes {
        set_buffer(n, c.dscp, c.buffer.unwrap_or(DEFAULT_BUFFER))?;
        let f = format!(
            "filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip dsfield {} 0xfc flowid {}",
            dsfield(c.dscp),
            class_id(c.dscp)
        );
        tc_in(&sw, &f)?;
    }
    Ok(())
}

/// Sets every class's HTB rate (weight × link rate), ceil (link rate) and quantum (∝ weight).
pub fn set_weights(n: &Names, rate: BitsPerSec, cfg: &NetworkConfig) -> Result<(), TestbedError> {
    let ws: Vec<f64> = cfg.classes.iter().map(|c| c.weight).collect();
    let qs = quanta(&ws);
    for (c, q) in cfg.classes.iter().zip(qs) {
        if !(c.weight.is_finite() && c.weight > 0.0 && c.weight <= 1.0) {
            return Err(TestbedError::invalid(
                format!("class {}.weight", c.dscp.name()),
                c.weight,
                "a weight is a share in (0, 1]",
            ));
        }
        let cr = ((c.weight * rate.0 as f64).round() as u64).max(8_000);
        htb_class(&n.switch(), "1:1", &class_id(c.dscp), cr, rate.0, q)?;
    }
    Ok(())
}

/// Sets class `d`'s bfifo limit.
pub fn set_buffer(n: &Names, d: Dscp, limit: Bytes) -> Result<(), TestbedError> {
    run(
        "tc",
        &[
            "-n",
            &n.switch(),
            "qdisc",
            "replace",
            "dev",
            BOTTLENECK_DEV,
            "parent",
            &class_id(d),
            "bfifo",
            "limit",
            &limit.0.to_string(),
        ],
    )?;
    Ok(())
}

/// Writes class `d`'s ECN threshold K (as the sojourn time K·8/C) into the marker's map.
pub fn set_ecn_threshold(n: &Names, d: Dscp, k: Bytes, rate: BitsPerSec) -> Result<(), TestbedError> {
    let ns = sojourn_threshold(k, rate).0;
    let key: Vec<String> = (d.value() as u32).to_le_bytes().iter().map(|b| b.to_string()).collect();
    let val: Vec<String> = ns.to_le_bytes().iter().map(|b| b.to_string()).collect();
    let map = n.thresh_map();
    let mut a = vec!["map", "update", "pinned", map.as_str(), "key"];
    a.extend(key.iter().map(String::as_str));
    a.push("value");
    a.extend(val.iter().map(String::as_str));
    run("bpftool", &a)?;
    Ok(())
}

/// Gives class `d`'s connections from every sender initial window `iw` (fwmark rule + table).
pub fn set_init_cwnd(n: &Names, senders: u32, d: Dscp, iw: Packets) -> Result<(), TestbedError> {
    if !(1..=1024).contains(&iw.0) {
        return Err(TestbedError::invalid(
            format!("class {}.init_cwnd", d.name()),
            iw.0,
            "give an initial window of 1..=1024 packets",
        ));
    }
    let mark = format!("0x{:x}", fwmark(d));
    let t = table(d).to_string();
    let pref = rule_pref(d).to_string();
    for i in 0..senders {
        let h = n.sender(i);
        // Exactly one rule per class: drop any old ones first.
        while run("ip", &["-n", &h, "rule", "del", "pref", &pref]).is_ok() {}
        run(
            "ip",
            &["-n", &h, "rule", "add", "pref", &pref, "fwmark", &mark, "lookup", &t],
        )?;
        run(
            "ip",
            &[
                "-n",
                &h,
                "route",
                "replace",
                RX_NET,
                "via",
                &sender_gw(i),
                "dev",
                HOST_DEV,
                "table",
                &t,
                "initcwnd",
                &iw.0.to_string(),
            ],
        )?;
    }
    Ok(())
}

/// Applies a whole configuration.
pub fn apply(n: &Names, senders: u32, rate: BitsPerSec, cfg: &NetworkConfig) -> Result<(), TestbedError> {
    cfg.validate()
        .map_err(|e| TestbedError::invalid("config", "the given configuration", e.to_string()))?;
    set_weights(n, rate, cfg)?;
    for c in &cfg.classes {
        set_buffer(n, c.dscp, c.buffer.unwrap_or(DEFAULT_BUFFER))?;
        set_ecn_threshold(n, c.dscp, c.ecn_threshold, rate)?;
        set_init_cwnd(n, senders, c.dscp, c.init_cwnd)?;
    }
    Ok(())
}

/// The receiver's route: an initial receive window (packets) large enough that no initial
/// congestion window of the knob space (≤ 64) is capped by it, and `quickack` (no delayed
/// ACKs: Linux delays them by ≥ 40 ms, 2000 base RTTs here, which stalls small windows).
pub fn set_receiver_route(n: &Names) -> Result<(), TestbedError> {
    in_ns(
        &n.receiver(),
        "ip",
        &[
            "route",
            "replace",
            "default",
            "via",
            crate::names::RX_GW,
            "dev",
            HOST_DEV,
            "initrwnd",
            "128",
            "quickack",
            "1",
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quanta_follow_weights_with_one_mtu_floor() {
        assert_eq!(quanta(&[1.0 / 3.0; 3]), vec![1514; 3]);
        assert_eq!(quanta(&[0.5, 0.25, 0.25]), vec![3028, 1514, 1514]);
        assert_eq!(quanta(&[0.998, 0.001, 0.001]), vec![MAX_QUANTUM, 1514, 1514]);
    }
}
