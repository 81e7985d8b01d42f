//! Namespaces, veth links, addresses, routes, forwarding and offloads of one instance; and
//! their removal. Every step is idempotent (create if absent, `replace` otherwise).

use crate::cmd::{in_ns, run};
use crate::names::{sender_cidr, sender_gw, Names, HOST_DEV, RX_CIDR, RX_GW};
use crate::TestbedError;

/// Namespaces that exist now.
pub fn list_netns() -> Vec<String> {
    std::fs::read_dir("/var/run/netns")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn ensure_ns(ns: &str) -> Result<(), TestbedError> {
    if !list_netns().iter().any(|n| n == ns) {
        run("ip", &["netns", "add", ns])?;
    }
    run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    Ok(())
}

fn link_exists(ns: &str, dev: &str) -> bool {
    run("ip", &["-n", ns, "link", "show", "dev", dev]).is_ok()
}

/// A veth between `(ns_a, dev_a)` and `(ns_b, dev_b)`, created if absent, both ends up.
fn ensure_veth(ns_a: &str, dev_a: &str, ns_b: &str, dev_b: &str) -> Result<(), TestbedError> {
    if !link_exists(ns_a, dev_a) {
        if link_exists(ns_b, dev_b) {
            run("ip", &["-n", ns_b, "link", "del", "dev", dev_b])?;
        }
        run(
            "ip",
            &[
                "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b,
            ],
        )?;
    }
    run("ip", &["-n", ns_a, "link", "set", dev_a, "up"])?;
    run("ip", &["-n", ns_b, "link", "set", dev_b, "up"])?;
    Ok(())
}

/// Builds the namespaces and links of `senders` senders, the switch and the receiver.
pub fn build(n: &Names, senders: u32) -> Result<(), TestbedError> {
    let sw = n.switch();
    ensure_ns(&sw)?;
    in_ns(&sw, "sysctl", &["-qw", "net.ipv4.ip_forward=1"])?;
    let rx = n.receiver();
    ensure_ns(&rx)?;
    ensure_veth(&rx, HOST_DEV, &sw, "rx")?;
    run("ip", &["-n", &rx, "addr", "replace", RX_CIDR, "dev", HOST_DEV])?;
    run(
        "ip",
        &["-n", &sw, "addr", "replace", &format!("{RX_GW}/24"), "dev", "rx"],
    )?;
    run(
        "ip",
        &["-n", &rx, "route", "replace", "default", "via", RX_GW, "dev", HOST_DEV],
    )?;
    for i in 0..senders {
        let h = n.sender(i);
        let port = format!("h{i}");
        ensure_ns(&h)?;
        ensure_veth(&h, HOST_DEV, &sw, &port)?;
        run("ip", &["-n", &h, "addr", "replace", &sender_cidr(i), "dev", HOST_DEV])?;
        run(
            "ip",
            &[
                "-n",
                &sw,
                "addr",
                "replace",
                &format!("{}/24", sender_gw(i)),
                "dev",
                &port,
            ],
        )?;
        run(
            "ip",
            &[
                "-n",
                &h,
                "route",
                "replace",
                "default",
                "via",
                &sender_gw(i),
                "dev",
                HOST_DEV,
            ],
        )?;
        in_ns(
            &h,
            "ethtool",
            &["-K", HOST_DEV, "tso", "off", "gso", "off", "gro", "off"],
        )?;
    }
    Ok(())
}

/// Selects `cc` with ECN on in every host namespace.
pub fn set_transport(n: &Names, senders: u32, cc: &str) -> Result<(), TestbedError> {
    let mut hosts: Vec<String> = (0..senders).map(|i| n.sender(i)).collect();
    hosts.push(n.receiver());
    for h in hosts {
        in_ns(
            &h,
            "sysctl",
            &[
                "-qw",
                &format!("net.ipv4.tcp_congestion_control={cc}"),
                "net.ipv4.tcp_ecn=1",
            ],
        )?;
    }
    Ok(())
}

/// Deletes every namespace of the instance; returns their names.
pub fn remove(n: &Names) -> Result<Vec<String>, TestbedError> {
    let mut gone = Vec::new();
    for ns in list_netns() {
        if n.owns_ns(&ns) {
            run("ip", &["netns", "del", &ns])?;
            gone.push(ns);
        }
    }
    Ok(gone)
}
