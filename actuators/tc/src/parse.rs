//! Parsers for the outputs the tc actuator reads: `tc -d class show` (text: iproute2 6.1 prints
//! no JSON for classes), `tc -j qdisc show` and `bpftool -j map dump`.

use polyphony_spec::{BitsPerSec, Bytes};
use serde_json::Value;

use crate::rates::parse_tc_rate;

/// One HTB class as `tc -d class show` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtbClass {
    /// Class id, e.g. `1:10`.
    pub handle: String,
    /// Guaranteed rate.
    pub rate: BitsPerSec,
    /// Ceiling.
    pub ceil: BitsPerSec,
    /// Quantum in bytes (absent on the root class).
    pub quantum: Option<u64>,
}

/// Parses every `class htb` line of `tc -d class show dev D`.
pub fn htb_classes(text: &str) -> Result<Vec<HtbClass>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 3 || t[0] != "class" || t[1] != "htb" {
            continue;
        }
        let after = |key: &str| t.iter().position(|w| *w == key).and_then(|i| t.get(i + 1));
        let rate = after("rate")
            .and_then(|s| parse_tc_rate(s))
            .ok_or_else(|| format!("no readable rate in `{line}`"))?;
        let ceil = after("ceil")
            .and_then(|s| parse_tc_rate(s))
            .ok_or_else(|| format!("no readable ceil in `{line}`"))?;
        let quantum = match after("quantum") {
            Some(q) => Some(q.parse().map_err(|_| format!("bad quantum `{q}` in `{line}`"))?),
            None => None,
        };
        out.push(HtbClass {
            handle: t[2].to_string(),
            rate,
            ceil,
            quantum,
        });
    }
    Ok(out)
}

/// A qdisc from `tc -j qdisc show dev D`.
#[derive(Debug, Clone, PartialEq)]
pub struct Qdisc {
    /// Kind (`bfifo`, `red`, `htb`).
    pub kind: String,
    /// Parent class id, if not the root.
    pub parent: Option<String>,
    /// Its options object.
    pub options: Value,
}

impl Qdisc {
    /// An unsigned option, e.g. `limit`.
    pub fn option_u64(&self, key: &str) -> Option<u64> {
        self.options.get(key).and_then(Value::as_u64)
    }
}

/// Parses `tc -j qdisc show` output.
pub fn qdiscs(json: &str) -> Result<Vec<Qdisc>, String> {
    let v: Value = serde_json::from_str(json.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let arr = v.as_array().ok_or("expected a JSON array of qdiscs")?;
    Ok(arr
        .iter()
        .map(|q| Qdisc {
            kind: q.get("kind").and_then(Value::as_str).unwrap_or("").to_string(),
            parent: q.get("parent").and_then(Value::as_str).map(String::from),
            options: q.get("options").cloned().unwrap_or(Value::Null),
        })
        .collect())
}

fn bytes_of(v: &Value) -> Option<Vec<u8>> {
    let arr = v.as_array()?;
    arr.iter()
        .map(|b| {
            let s = b.as_str()?;
            u8::from_str_radix(s.trim_start_matches("0x"), 16).ok()
        })
        .collect()
}

/// Parses `bpftool -j map dump` of a map with u32 keys and u64 values (little endian) into
/// `(key, value)` pairs. Accepts the raw form (`"key": ["0x0a", …]`) and, for maps with BTF,
/// the `formatted` form.
pub fn u32_u64_entries(json: &str) -> Result<Vec<(u32, u64)>, String> {
    let v: Value = serde_json::from_str(json.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let arr = v.as_array().ok_or("expected a JSON array of map entries")?;
    let mut out = Vec::new();
    for e in arr {
        let raw = e.get("key").and_then(bytes_of).zip(e.get("value").and_then(bytes_of));
        let pair = match raw {
            Some((k, val)) if k.len() == 4 && val.len() == 8 => {
                let mut kb = [0u8; 4];
                kb.copy_from_slice(&k);
                let mut vb = [0u8; 8];
                vb.copy_from_slice(&val);
                (u32::from_le_bytes(kb), u64::from_le_bytes(vb))
            }
            _ => {
                let f = e
                    .get("formatted")
                    .ok_or_else(|| format!("entry {e} is neither 4-byte key / 8-byte value nor formatted"))?;
                let k = f.get("key").and_then(Value::as_u64);
                let val = f.get("value").and_then(Value::as_u64);
                match (k, val) {
                    (Some(k), Some(val)) if k <= u32::MAX as u64 => (k as u32, val),
                    _ => return Err(format!("entry {e} is not u32 → u64")),
                }
            }
        };
        out.push(pair);
    }
    Ok(out)
}

/// Bytes of a map key, as `bpftool` arguments.
pub fn key_args(key: u32) -> Vec<String> {
    key.to_le_bytes().iter().map(|b| b.to_string()).collect()
}

/// Bytes of a map value, as `bpftool` arguments.
pub fn value_args(value: u64) -> Vec<String> {
    value.to_le_bytes().iter().map(|b| b.to_string()).collect()
}

/// The `limit` of a bfifo, as bytes.
pub fn bfifo_limit(q: &Qdisc) -> Option<Bytes> {
    (q.kind == "bfifo").then(|| q.option_u64("limit").map(Bytes)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tc_d_class_show() {
        let text = "class htb 1:99 parent 1:1 prio 0 quantum 12500 rate 1Mbit ceil 100Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 \n\
class htb 1:10 parent 1:1 leaf 10: prio 0 quantum 3000 rate 50Mbit ceil 100Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0 \n\
class htb 1:1 root rate 100Mbit ceil 100Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 7 \n";
        let c = htb_classes(text).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[1].handle, "1:10");
        assert_eq!(c[1].rate, BitsPerSec::from_mbps(50));
        assert_eq!(c[1].quantum, Some(3000));
        assert_eq!(c[2].quantum, None);
    }

    #[test]
    fn garbage_rate_is_an_error_not_a_panic() {
        assert!(htb_classes("class htb 1:10 rate fast ceil 1Mbit").is_err());
    }

    #[test]
    fn parses_raw_and_formatted_map_dumps() {
        let raw = r#"[{"key":["0x0a","0x00","0x00","0x00"],"value":["0x00","0x35","0x0c","0x00","0x00","0x00","0x00","0x00"]}]"#;
        assert_eq!(u32_u64_entries(raw).unwrap(), vec![(10, 800_000)]);
        let btf = r#"[{"key":10,"value":5,"formatted":{"key":10,"value":5}}]"#;
        assert_eq!(u32_u64_entries(btf).unwrap(), vec![(10, 5)]);
        assert!(u32_u64_entries("{").is_err());
        assert_eq!(key_args(10), vec!["10", "0", "0", "0"]);
    }

    #[test]
    fn parses_qdisc_json() {
        let j = r#"[{"kind":"htb","handle":"1:","root":true,"options":{"r2q":10}},{"kind":"bfifo","handle":"10:","parent":"1:10","options":{"limit":50000}}]"#;
        let q = qdiscs(j).unwrap();
        assert_eq!(q[1].parent.as_deref(), Some("1:10"));
        assert_eq!(bfifo_limit(&q[1]), Some(Bytes(50_000)));
        assert_eq!(bfifo_limit(&q[0]), None);
    }
}
