//! The iproute actuator's configuration (a TOML table in the daemon's configuration).

use polyphony_spec::CongestionControl;
use serde::{Deserialize, Serialize};

/// The per-class route of one sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderRoute {
    /// The sender's network namespace (`ip -n NAME`); none = the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Next hop towards the destination, e.g. `198.18.1.1`; none = directly connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Outgoing device, e.g. `eth0`.
    pub device: String,
}

fn default_name() -> String {
    "iproute".into()
}
fn default_table_base() -> u32 {
    100
}
fn default_max_init_cwnd() -> u32 {
    256
}
fn default_timeout_ms() -> u64 {
    10_000
}
fn default_ip() -> String {
    "ip".into()
}

/// Which senders and routes carry per-class initial windows.
///
/// ```toml
/// destination = "198.18.100.0/24"
/// senders = [
///   { namespace = "pp-h0", gateway = "198.18.1.1", device = "eth0" },
///   { namespace = "pp-h1", gateway = "198.18.2.1", device = "eth0" },
/// ]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IprouteConfig {
    /// Actuator name in plans and logs (unique within a composite).
    #[serde(default = "default_name")]
    pub name: String,
    /// The receivers' prefix, e.g. `198.18.100.0/24`.
    pub destination: String,
    /// The senders.
    pub senders: Vec<SenderRoute>,
    /// Class DSCP d uses routing table `table_base + d`.
    #[serde(default = "default_table_base")]
    pub table_base: u32,
    /// Largest initial window accepted (packets).
    #[serde(default = "default_max_init_cwnd")]
    pub max_init_cwnd: u32,
    /// Per-command timeout in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// The `ip` binary.
    #[serde(default = "default_ip")]
    pub ip: String,
    /// The congestion-control algorithms a class may be given (`congctl NAME` on its routes):
    /// those every sender's kernel offers (`/proc/sys/net/ipv4/tcp_available_congestion_control`,
    /// plus BPF `struct_ops` ones once registered). Empty: a configuration that sets one is
    /// refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub congestion_controls: Vec<CongestionControl>,
}

impl IprouteConfig {
    /// A configuration with defaults for everything but the destination and the senders.
    pub fn new(destination: impl Into<String>, senders: Vec<SenderRoute>) -> IprouteConfig {
        IprouteConfig {
            name: default_name(),
            destination: destination.into(),
            senders,
            table_base: default_table_base(),
            max_init_cwnd: default_max_init_cwnd(),
            timeout_ms: default_timeout_ms(),
            ip: default_ip(),
            congestion_controls: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_with_contract_defaults() {
        let c: IprouteConfig = toml::from_str(
            "destination = \"198.18.100.0/24\"\nsenders = [{ namespace = \"pp-h0\", gateway = \"198.18.1.1\", device = \"eth0\" }]",
        )
        .unwrap();
        assert_eq!(c.table_base, 100);
        assert_eq!(c.senders[0].namespace.as_deref(), Some("pp-h0"));
    }
}
