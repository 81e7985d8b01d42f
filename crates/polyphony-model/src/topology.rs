//! Topologies: hosts, switches, unidirectional links (rate, propagation delay), and routing with
//! ECMP hashing. Presets: the testbed's dumbbell and a two-tier leaf-spine.
//!
//! # Numbering
//! Hosts are nodes `0..hosts` (the same numbers as [`HostId`]); switches follow. Every cable is
//! two unidirectional links; a link's egress queue (a port) sits at its `from` node.
//!
//! * Dumbbell: senders `0..s`, receiver `s`, one switch. Host `h` has link `2h` (host → switch)
//!   and `2h + 1` (switch → host). The bottleneck is the switch's port to the receiver.
//! * Leaf-spine: host `h` in rack `h / hosts_per_rack`; links `2h` / `2h + 1` as above to its
//!   leaf; then for leaf `r` and spine `s` the link leaf → spine and spine → leaf. A flow between
//!   racks takes host → leaf → spine → leaf → host, with the spine chosen by an ECMP hash of
//!   (flow id, src, dst, salt); within a rack host → leaf → host.
//!
//! # Base RTT (the `base_rtt` of [`IdealFct`])
//! The round trip of a minimum-size packet (one header, [`HEADER_BYTES`]) on the idle path:
//! the sum over the forward and the reverse path of (propagation delay + serialisation of
//! [`HEADER_BYTES`] at the link's rate). This is exactly what a lone SYN / SYN-ACK exchange
//! takes in `pktsim`. The bottleneck of a path is its slowest link. ECMP paths between two
//! hosts are symmetric, so both values depend only on (src, dst).
//!
//! This module is pure data and arithmetic.

use crate::error::ModelError;
use polyphony_spec::{BitsPerSec, Bytes, HostId, IdealFct, Nanos, TopologySpec};

/// Header bytes of a segment on the wire (Ethernet 14 + IPv4 20 + TCP with timestamps 32); a
/// pure ACK or SYN is exactly this long. Matches [`IdealFct::tcp`].
pub const HEADER_BYTES: u64 = 66;
/// Payload bytes of a full segment. Matches [`IdealFct::tcp`].
pub const MSS: u64 = 1448;
/// Longest path in links (leaf-spine: host → leaf → spine → leaf → host).
pub const MAX_HOPS: usize = 4;

/// One unidirectional link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Node the link leaves (its egress port lives there).
    pub from: u32,
    /// Node the link enters.
    pub to: u32,
    /// Line rate.
    pub rate: BitsPerSec,
    /// One-way propagation delay.
    pub delay: Nanos,
}

/// A route: the link ids a packet crosses, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Path {
    links: [u32; MAX_HOPS],
    len: u8,
}

impl Path {
    fn new(ls: &[u32]) -> Path {
        let mut links = [0; MAX_HOPS];
        links[..ls.len()].copy_from_slice(ls);
        Path {
            links,
            len: ls.len() as u8,
        }
    }
    /// The links in order.
    pub fn links(&self) -> &[u32] {
        &self.links[..self.len as usize]
    }
}

/// The shape of a topology.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Senders → one switch → one receiver.
    Dumbbell {
        /// Number of senders.
        senders: u32,
    },
    /// Two-tier leaf-spine.
    LeafSpine {
        /// Racks (leaves).
        racks: u32,
        /// Hosts per rack.
        hosts_per_rack: u32,
        /// Spine switches.
        spines: u32,
    },
}

/// A network: nodes, links and routes.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    shape: Shape,
    hosts: u32,
    nodes: u32,
    links: Vec<Link>,
    ecmp_salt: u64,
}

fn check_rate(what: &str, r: BitsPerSec) -> Result<(), ModelError> {
    if r.0 == 0 {
        return Err(ModelError::invalid(what, r, "a link needs a positive rate"));
    }
    Ok(())
}

impl Topology {
    /// The testbed's dumbbell: `senders` hosts → one switch → one receiver, every link at `rate`
    /// with one-way delay `delay`.
    pub fn dumbbell(senders: u32, rate: BitsPerSec, delay: Nanos) -> Result<Topology, ModelError> {
        if !(1..=64).contains(&senders) {
            return Err(ModelError::invalid("senders", senders, "use 1..=64 senders"));
        }
        check_rate("rate", rate)?;
        let hosts = senders + 1;
        let sw = hosts;
        let mut links = Vec::with_capacity(2 * hosts as usize);
        for h in 0..hosts {
            links.push(Link {
                from: h,
                to: sw,
                rate,
                delay,
            });
            links.push(Link {
                from: sw,
                to: h,
                rate,
                delay,
            });
        }
        Ok(Topology {
            shape: Shape::Dumbbell { senders },
            hosts,
            nodes: hosts + 1,
            links,
            ecmp_salt: 0,
        })
    }

    /// A two-tier leaf-spine: `racks` × `hosts_per_rack` hosts on `host_rate` links, every leaf
    /// connected to every spine at `fabric_rate`, every link with one-way delay `delay`.
    pub fn leaf_spine(
        racks: u32,
        hosts_per_rack: u32,
        spines: u32,
        host_rate: BitsPerSec,
        fabric_rate: BitsPerSec,
        delay: Nanos,
    ) -> Result<Topology, ModelError> {
        if !(1..=256).contains(&racks) || !(1..=64).contains(&hosts_per_rack) || !(1..=64).contains(&spines) {
            return Err(ModelError::invalid(
                "leaf-spine size",
                format!("{racks} racks × {hosts_per_rack} hosts, {spines} spines"),
                "use 1..=256 racks, 1..=64 hosts per rack, 1..=64 spines",
            ));
        }
        check_rate("host_rate", host_rate)?;
        check_rate("fabric_rate", fabric_rate)?;
        let hosts = racks * hosts_per_rack;
        let leaf0 = hosts;
        let spine0 = hosts + racks;
        let mut links = Vec::new();
        for h in 0..hosts {
            let leaf = leaf0 + h / hosts_per_rack;
            links.push(Link {
                from: h,
                to: leaf,
                rate: host_rate,
                delay,
            });
            links.push(Link {
                from: leaf,
                to: h,
                rate: host_rate,
                delay,
            });
        }
        for r in 0..racks {
            for s in 0..spines {
                links.push(Link {
                    from: leaf0 + r,
                    to: spine0 + s,
                    rate: fabric_rate,
                    delay,
                });
                links.push(Link {
                    from: spine0 + s,
                    to: leaf0 + r,
                    rate: fabric_rate,
                    delay,
                });
            }
        }
        Ok(Topology {
            shape: Shape::LeafSpine {
                racks,
                hosts_per_rack,
                spines,
            },
            hosts,
            nodes: hosts + racks + spines,
            links,
            ecmp_salt: 0,
        })
    }

    /// The topology a scenario describes (rates in Mbit/s, delays in µs).
    pub fn from_spec(spec: &TopologySpec) -> Result<Topology, ModelError> {
        let rate = |m: f64| BitsPerSec((m * 1e6).round() as u64);
        let us = |d: f64| Nanos((d * 1e3).round() as u64);
        match *spec {
            TopologySpec::Dumbbell {
                senders,
                rate_mbps,
                link_delay_us,
            } => Topology::dumbbell(senders, rate(rate_mbps), us(link_delay_us)),
            TopologySpec::LeafSpine(ref ls) => Topology::leaf_spine(
                ls.racks,
                ls.hosts_per_rack,
                ls.spines,
                rate(ls.host_rate_mbps),
                rate(ls.fabric_rate_mbps),
                us(ls.link_delay_us),
            ),
        }
    }

    /// The same topology with another ECMP hash salt (a different but fixed path choice).
    pub fn with_ecmp_salt(mut self, salt: u64) -> Topology {
        self.ecmp_salt = salt;
        self
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// Number of hosts.
    pub fn hosts(&self) -> u32 {
        self.hosts
    }
    /// Number of nodes (hosts and switches).
    pub fn nodes(&self) -> u32 {
        self.nodes
    }
    /// Every link, indexed by link id.
    pub fn links(&self) -> &[Link] {
        &self.links
    }
    /// Whether `node` is a host.
    pub fn is_host(&self, node: u32) -> bool {
        node < self.hosts
    }
    /// The rack of a host (the dumbbell is one rack).
    pub fn rack_of(&self, h: HostId) -> u32 {
        match self.shape {
            Shape::Dumbbell { .. } => 0,
            Shape::LeafSpine { hosts_per_rack, .. } => h.0 / hosts_per_rack,
        }
    }

    /// Checks that `h` is a host of this topology.
    pub fn check_host(&self, flow: u64, h: HostId) -> Result<(), ModelError> {
        if h.0 < self.hosts {
            Ok(())
        } else {
            Err(ModelError::UnknownHost {
                flow,
                host: h.0,
                hosts: self.hosts,
            })
        }
    }

    /// The route from `src` to `dst` for the flow with id `flow` (ECMP by hash). Both hosts must
    /// exist (see [`Topology::check_host`]).
    pub fn route(&self, src: HostId, dst: HostId, flow: u64) -> Path {
        let up = |h: u32| 2 * h;
        let down = |h: u32| 2 * h + 1;
        match self.shape {
            Shape::Dumbbell { .. } => Path::new(&[up(src.0), down(dst.0)]),
            Shape::LeafSpine {
                hosts_per_rack, spines, ..
            } => {
                let (rs, rd) = (src.0 / hosts_per_rack, dst.0 / hosts_per_rack);
                if rs == rd {
                    return Path::new(&[up(src.0), down(dst.0)]);
                }
                let (a, b) = if src.0 < dst.0 { (src.0, dst.0) } else { (dst.0, src.0) };
                let h = mix64(flow ^ mix64(((a as u64) << 32 | b as u64) ^ self.ecmp_salt));
                let s = (h % spines as u64) as u32;
                let base = 2 * self.hosts;
                let fab = |r: u32, s: u32| base + 2 * (r * spines + s);
                Path::new(&[up(src.0), fab(rs, s), fab(rd, s) + 1, down(dst.0)])
            }
        }
    }

    /// Base RTT between two hosts (see the module documentation).
    pub fn base_rtt(&self, src: HostId, dst: HostId) -> Nanos {
        let one_way = |p: Path| -> u64 {
            p.links()
                .iter()
                .map(|&l| {
                    let k = &self.links[l as usize];
                    k.delay.0 + k.rate.serialization_time(Bytes(HEADER_BYTES)).0
                })
                .sum()
        };
        Nanos(one_way(self.route(src, dst, 0)) + one_way(self.route(dst, src, 0)))
    }

    /// The slowest link rate between two hosts.
    pub fn bottleneck(&self, src: HostId, dst: HostId) -> BitsPerSec {
        self.route(src, dst, 0)
            .links()
            .iter()
            .map(|&l| self.links[l as usize].rate)
            .min()
            .unwrap_or(BitsPerSec(1))
    }

    /// The ideal-FCT parameters for a flow from `src` to `dst`.
    pub fn ideal(&self, src: HostId, dst: HostId) -> IdealFct {
        IdealFct::tcp(self.base_rtt(src, dst), self.bottleneck(src, dst))
    }
}

/// SplitMix64 finaliser: a cheap, well-mixed 64-bit hash.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumbbell_route_and_base_rtt() {
        let t = Topology::dumbbell(3, BitsPerSec::from_mbps(100), Nanos(2_500)).unwrap();
        assert_eq!(t.hosts(), 4);
        assert_eq!(t.route(HostId(1), HostId(3), 9).links(), &[2, 7]);
        // 4 links × (2.5 µs + 66 B at 100 Mbit/s = 5.28 µs) = 31.12 µs
        assert_eq!(t.base_rtt(HostId(0), HostId(3)), Nanos(4 * (2_500 + 5_280)));
        assert_eq!(t.bottleneck(HostId(0), HostId(3)), BitsPerSec::from_mbps(100));
    }

    #[test]
    fn leaf_spine_ecmp_spreads_over_spines_and_stays_in_rack() {
        let t = Topology::leaf_spine(
            4,
            2,
            4,
            BitsPerSec::from_gbps(10),
            BitsPerSec::from_gbps(40),
            Nanos(1000),
        )
        .unwrap();
        assert_eq!(t.route(HostId(0), HostId(1), 5).links().len(), 2);
        let mut spines = std::collections::HashSet::new();
        for f in 0..64 {
            let p = t.route(HostId(0), HostId(7), f);
            assert_eq!(p.links().len(), 4);
            let l = t.links()[p.links()[1] as usize];
            let back = t.links()[p.links()[2] as usize];
            assert_eq!(l.to, back.from, "the path goes through one spine");
            spines.insert(l.to);
        }
        assert_eq!(spines.len(), 4, "ECMP uses every spine");
    }

    #[test]
    fn bad_sizes_are_rejected() {
        assert!(Topology::dumbbell(0, BitsPerSec::from_mbps(1), Nanos(0)).is_err());
        assert!(Topology::leaf_spine(0, 8, 4, BitsPerSec(1), BitsPerSec(1), Nanos(0)).is_err());
        assert!(Topology::dumbbell(2, BitsPerSec(0), Nanos(0)).is_err());
    }
}
