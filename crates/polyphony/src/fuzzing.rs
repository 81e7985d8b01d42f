//! The bodies of the fuzz targets (`fuzz/fuzz_targets/`, run by `scripts/fuzz.sh`) and of the
//! test that replays their committed corpus (`tests/fuzz_corpus.rs`): each takes arbitrary
//! bytes and hands them to one parser of untrusted input, which must answer with a value or an
//! error — never panic, never hang. Pure functions of their input; they touch nothing.

use crate::config::DaemonConfig;
use crate::config::WorkloadSource;
use polyphony_core::Controller;
use polyphony_spec::{FlowTrace, Scenario, Workload};

/// A fuzz target: its name (the directory of its corpus) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by name.
pub const TARGETS: [Target; 6] = [
    ("workfeed_datagram", workfeed_datagram),
    ("daemon_config", daemon_config),
    ("state_file", state_file),
    ("scenario", scenario),
    ("trace", trace),
    ("api_body", api_body),
];

/// A Workfeed datagram as the aggregator receives it: decoded without a key, with a key (the
/// HMAC check), and as an IPFIX message.
pub fn workfeed_datagram(data: &[u8]) {
    let _ = workfeed::wire::decode(data, None);
    if let Ok(key) = workfeed::wire::AuthKey::new(b"fuzzing-key-0123456789abcdef".to_vec()) {
        let _ = workfeed::wire::decode(data, Some(&key));
    }
    let _ = workfeed::ipfix::IpfixDecoder::new(workfeed::ipfix::DOCUMENTATION_PEN).decode(data);
}

/// A daemon configuration file: parsed; validated too when validating reads no file (a
/// workload and SLIs that name no path, no token file), so the fuzzer never opens paths it made.
pub fn daemon_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(c) = DaemonConfig::parse(text, "fuzz.toml") else {
        return;
    };
    let reads_nothing =
        c.http.token_file.is_none() && matches!(c.workload, WorkloadSource::Workfeed { key_file: None, .. });
    if reads_nothing {
        let _ = c.validate("fuzz.toml");
    }
}

/// A state file: parsed as the daemon loads it at start, the controller's part included.
pub fn state_file(data: &[u8]) {
    if let Ok(s) = crate::state::parse_state(data) {
        let _ = Controller::from_json(&s.controller.to_string());
    }
}

/// A scenario file (TOML).
pub fn scenario(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Scenario::from_toml(text, "fuzz.toml");
    }
}

/// A workload trace: JSON lines, CSV, and the trace format of `polyphony simulate --trace`.
pub fn trace(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Workload::from_jsonl(text, "fuzz.jsonl");
        let _ = Workload::from_csv(text, "fuzz.csv");
        let _ = FlowTrace::parse(text, "fuzz.trace");
    }
}

/// The JSON bodies of the HTTP API's state-changing endpoints.
pub fn api_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::http::parse_mode(&text);
    let _ = crate::http::parse_resume(&text);
}
