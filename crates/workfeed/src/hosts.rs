//! Mapping captured IPv4 addresses to the model's [`HostId`]s.
//!
//! Rule: an address listed in the map gets its configured id; any other address gets
//! `HostId(u32::from(addr))` (the address read as a big-endian integer), which is unique,
//! deterministic and needs no configuration. Configure the map when the model's topology numbers
//! hosts 0..n (e.g. the testbed: senders 0..k, receiver k). TOML form: `"198.18.1.2" = 0`.

use polyphony_spec::HostId;
use serde::Deserialize;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Address → host id, with the by-address default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct HostMap {
    map: HashMap<Ipv4Addr, u32>,
}

impl HostMap {
    /// An explicit map (other addresses fall back to the default rule).
    pub fn new(entries: impl IntoIterator<Item = (Ipv4Addr, HostId)>) -> HostMap {
        HostMap {
            map: entries.into_iter().map(|(a, h)| (a, h.0)).collect(),
        }
    }
    /// The host of an address.
    pub fn host(&self, addr: Ipv4Addr) -> HostId {
        HostId(self.map.get(&addr).copied().unwrap_or_else(|| u32::from(addr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_addresses_use_their_id_and_others_their_numeric_value() {
        let m: HostMap = toml::from_str("\"198.18.1.2\" = 0\n\"198.18.100.2\" = 3\n").unwrap();
        assert_eq!(m.host(Ipv4Addr::new(198, 18, 100, 2)), HostId(3));
        assert_eq!(m.host(Ipv4Addr::new(10, 0, 0, 1)), HostId(0x0a00_0001));
    }

    #[test]
    fn a_malformed_address_is_a_parse_error() {
        assert!(toml::from_str::<HostMap>("\"198.18.1\" = 0\n").is_err());
    }
}
