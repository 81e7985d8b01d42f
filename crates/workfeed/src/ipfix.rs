//! IPFIX (RFC 7011) export and import of flow records, so that existing flow collectors
//! (nfdump, pmacct, …) can read what Workfeed captures, and so that Polyphony can take its
//! workload from an exporter that is already deployed instead of Workfeed's eBPF agent.
//!
//! **Export** ([`IpfixEncoder`], pure: the caller passes the time): each [`FlowRecord`] (one
//! socket's view of one TCP connection) becomes one data record of the template
//! [`TEMPLATE_ID`], whose fields are, in order:
//!
//! | IE | name | bytes | from the record |
//! |---|---|---|---|
//! | 8 | sourceIPv4Address | 4 | the local address |
//! | 12 | destinationIPv4Address | 4 | the remote address |
//! | 7 | sourceTransportPort | 2 | the local port |
//! | 11 | destinationTransportPort | 2 | the remote port |
//! | 4 | protocolIdentifier | 1 | 6 (TCP) |
//! | 5 | ipClassOfService | 1 | the TOS byte: DSCP · 4 |
//! | 1 | octetDeltaCount | 8 | payload bytes this socket sent and had acknowledged |
//! | 152, 153 | flowStart/EndMilliseconds | 8 + 8 | open and close, Unix ms (what most collectors read) |
//! | 156, 157 | flowStart/EndNanoseconds | 8 + 8 | open and close, NTP timestamps (RFC 7011 §6.1.10) |
//! | PEN/1 | bytesReceived | 8 | payload bytes this socket received |
//! | PEN/2 | tcpSmoothedRttMicroseconds | 4 | the socket's srtt, µs |
//! | PEN/3 | tcpRetransmissions | 2 | segments retransmitted |
//! | PEN/4 | keepProbability | 8 | connection-sampling probability p (float64; weight 1/p) |
//! | PEN/5 | socketFlags | 1 | bit 0 the socket connected (client), bit 1 it sent FIN, bit 2 the peer did |
//!
//! PEN is the exporter's private enterprise number ([`IpfixExporterConfig::enterprise`]); the
//! default, 32473, is the number IANA reserves for documentation (RFC 5612): an operator who
//! feeds a collector that must tell Workfeed's elements from another's sets its own.
//! Messages stay under [`IpfixExporterConfig::max_message`] bytes (UDP must not fragment,
//! RFC 7011 §10.3.3). Over UDP the template is sent in the first message and again whenever
//! [`IpfixExporterConfig::template_refresh`] has passed or
//! [`IpfixExporterConfig::template_refresh_messages`] messages have gone out since (RFC 7011
//! §8.4), so a collector that starts late or restarts learns it. The header's sequence number
//! counts the data records sent before the message, modulo 2³², per RFC 7011 §3.1.
//!
//! **Import** ([`IpfixDecoder`]): messages from any exporter are parsed with the
//! `netflow_parser` crate (templates kept per exporter stream), and every data record becomes a
//! [`FlowRecord`] with its keep probability. A record carrying this module's enterprise
//! elements (with the configured PEN) round-trips exactly. A record from another exporter is
//! read as one unidirectional flow from source to destination: the source is the sending
//! socket (`active`), octetDeltaCount its bytes; the open and close come from
//! flowStart/EndNanoseconds, -Microseconds or -Milliseconds, whichever it carries. A record
//! without the 5-tuple, octetDeltaCount or a start and end time is refused with the missing
//! element named ([`ImportError`]); nothing in a datagram can panic the decoder.
//!
//! NTP timestamps count seconds in 32 bits from 1900, so the nanosecond elements wrap in
//! February 2036 (NTP era 1); the millisecond elements carry the date past that.

use crate::record::FlowRecord;
use crate::sampling::KeepProbability;
use netflow_parser::variable_versions::field_value::{DataNumber, DurationValue, FieldValue};
use netflow_parser::variable_versions::ipfix::lookup::{IANAIPFixField, IPFixField};
use netflow_parser::variable_versions::ipfix::FlowSetBody;
use netflow_parser::{NetflowPacket, NetflowParser};
use polyphony_spec::{Bytes, Dscp, Nanos};
use std::net::{Ipv4Addr, SocketAddrV4};
use thiserror::Error;

/// The template id of Workfeed's data records.
pub const TEMPLATE_ID: u16 = 256;
/// IANA's enterprise number for documentation (RFC 5612), the default PEN.
pub const DOCUMENTATION_PEN: u32 = 32473;
/// IPFIX's version number (RFC 7011 §3.1).
pub const VERSION: u16 = 10;
/// Bytes of a message header.
pub const MESSAGE_HEADER_LEN: usize = 16;
/// Bytes of a set header.
const SET_HEADER_LEN: usize = 4;
/// Seconds from the NTP epoch (1900-01-01) to the Unix epoch.
const NTP_UNIX_OFFSET_S: u64 = 2_208_988_800;

/// IANA elements of the template: (element id, length).
const IANA_FIELDS: [(u16, u16); 11] = [
    (8, 4),   // sourceIPv4Address
    (12, 4),  // destinationIPv4Address
    (7, 2),   // sourceTransportPort
    (11, 2),  // destinationTransportPort
    (4, 1),   // protocolIdentifier
    (5, 1),   // ipClassOfService
    (1, 8),   // octetDeltaCount
    (152, 8), // flowStartMilliseconds
    (153, 8), // flowEndMilliseconds
    (156, 8), // flowStartNanoseconds
    (157, 8), // flowEndNanoseconds
];
/// Enterprise elements of the template: (element id under the PEN, length).
const ENTERPRISE_FIELDS: [(u16, u16); 5] = [
    (1, 8), // bytesReceived
    (2, 4), // tcpSmoothedRttMicroseconds
    (3, 2), // tcpRetransmissions
    (4, 8), // keepProbability
    (5, 1), // socketFlags
];
/// Bytes of one data record.
pub const RECORD_LEN: usize = 4 + 4 + 2 + 2 + 1 + 1 + 8 + 8 + 8 + 8 + 8 + 8 + 4 + 2 + 8 + 1;
const FLAG_ACTIVE: u8 = 1;
const FLAG_FIN_SENT: u8 = 2;
const FLAG_PEER_FIN: u8 = 4;

/// How an exporter numbers and paces its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct IpfixExporterConfig {
    /// The observation domain id in every header (e.g. the agent's id).
    pub observation_domain: u32,
    /// The private enterprise number of Workfeed's own elements.
    pub enterprise: u32,
    /// Resend the template when this much time has passed since it was last sent.
    pub template_refresh: Nanos,
    /// Resend the template after this many messages without it.
    pub template_refresh_messages: u32,
    /// Largest message in bytes (headers included).
    pub max_message: usize,
}

impl IpfixExporterConfig {
    /// Defaults for one observation domain: the documentation PEN, a template at least every
    /// 60 s or 1000 messages, messages of at most 1400 bytes.
    pub fn new(observation_domain: u32) -> IpfixExporterConfig {
        IpfixExporterConfig {
            observation_domain,
            enterprise: DOCUMENTATION_PEN,
            template_refresh: Nanos(60 * Nanos::SECOND.0),
            template_refresh_messages: 1000,
            max_message: 1400,
        }
    }
}

/// An exporter setting that cannot work.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ExportConfigError {
    /// Messages too small to hold the template or one record.
    #[error(
        "IPFIX max_message = {0} bytes cannot hold the template and one record; use at least {min}",
        min = min_message()
    )]
    MessageTooSmall(usize),
    /// Messages larger than a UDP datagram can carry.
    #[error("IPFIX max_message = {0} bytes exceeds a message's 16-bit length; use at most 65535 (1400 avoids fragmentation)")]
    MessageTooLarge(usize),
    /// Enterprise number 0 is IANA's own space.
    #[error("IPFIX enterprise number 0 is IANA's own space; use your private enterprise number or the default 32473")]
    ZeroEnterprise,
}

fn template_set_len() -> usize {
    SET_HEADER_LEN + 4 + 4 * IANA_FIELDS.len() + 8 * ENTERPRISE_FIELDS.len()
}

fn min_message() -> usize {
    MESSAGE_HEADER_LEN + template_set_len() + SET_HEADER_LEN + RECORD_LEN
}

/// Turns flow records into IPFIX messages. Pure: no socket, no clock.
#[derive(Debug, Clone)]
pub struct IpfixEncoder {
    cfg: IpfixExporterConfig,
    /// Data records sent so far (mod 2³²).
    sequence: u32,
    /// When the template was last sent, if ever.
    template_sent: Option<Nanos>,
    messages_since_template: u32,
}

impl IpfixEncoder {
    /// An encoder whose first message will carry the template.
    pub fn new(cfg: IpfixExporterConfig) -> Result<IpfixEncoder, ExportConfigError> {
        if cfg.max_message < min_message() {
            return Err(ExportConfigError::MessageTooSmall(cfg.max_message));
        }
        if cfg.max_message > usize::from(u16::MAX) {
            return Err(ExportConfigError::MessageTooLarge(cfg.max_message));
        }
        if cfg.enterprise == 0 {
            return Err(ExportConfigError::ZeroEnterprise);
        }
        Ok(IpfixEncoder {
            cfg,
            sequence: 0,
            template_sent: None,
            messages_since_template: 0,
        })
    }

    /// The settings.
    pub fn config(&self) -> &IpfixExporterConfig {
        &self.cfg
    }

    /// Data records encoded so far (the next message's sequence number), mod 2³².
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    fn template_due(&self, now: Nanos) -> bool {
        match self.template_sent {
            None => true,
            Some(t) => {
                now.0.saturating_sub(t.0) >= self.cfg.template_refresh.0
                    || self.messages_since_template >= self.cfg.template_refresh_messages
            }
        }
    }

    /// The messages that carry `records` (each with its keep probability), exported at `now`
    /// (Unix time). An empty input gives no message — except that a due template refresh is
    /// sent on its own, so a collector learns the template even on an idle exporter.
    pub fn encode(&mut self, records: &[(FlowRecord, KeepProbability)], now: Nanos) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut rest = records;
        loop {
            let with_template = self.template_due(now);
            let mut room = self.cfg.max_message - MESSAGE_HEADER_LEN;
            if with_template {
                room -= template_set_len();
            }
            let fit = if rest.is_empty() {
                0
            } else {
                ((room - SET_HEADER_LEN) / RECORD_LEN).min(rest.len())
            };
            if fit == 0 && !with_template {
                break;
            }
            let (now_records, later) = rest.split_at(fit);
            out.push(self.message(now_records, with_template, now));
            rest = later;
            if rest.is_empty() {
                break;
            }
        }
        out
    }

    fn message(&mut self, records: &[(FlowRecord, KeepProbability)], with_template: bool, now: Nanos) -> Vec<u8> {
        let mut m = Vec::with_capacity(self.cfg.max_message);
        m.extend_from_slice(&VERSION.to_be_bytes());
        m.extend_from_slice(&[0, 0]); // length, set below
        let export_s = u32::try_from(now.0 / Nanos::SECOND.0).unwrap_or(u32::MAX);
        m.extend_from_slice(&export_s.to_be_bytes());
        m.extend_from_slice(&self.sequence.to_be_bytes());
        m.extend_from_slice(&self.cfg.observation_domain.to_be_bytes());
        if with_template {
            self.put_template(&mut m);
            self.template_sent = Some(now);
            self.messages_since_template = 0;
        } else {
            self.messages_since_template = self.messages_since_template.saturating_add(1);
        }
        if !records.is_empty() {
            let len = SET_HEADER_LEN + RECORD_LEN * records.len();
            m.extend_from_slice(&TEMPLATE_ID.to_be_bytes());
            m.extend_from_slice(&(len as u16).to_be_bytes());
            for (r, keep) in records {
                put_record(&mut m, r, *keep);
            }
        }
        let total = m.len() as u16;
        m[2..4].copy_from_slice(&total.to_be_bytes());
        // usize → u32: a message holds at most 65535 bytes, so far fewer records.
        self.sequence = self.sequence.wrapping_add(records.len() as u32);
        m
    }

    fn put_template(&self, m: &mut Vec<u8>) {
        m.extend_from_slice(&2u16.to_be_bytes()); // template set
        m.extend_from_slice(&(template_set_len() as u16).to_be_bytes());
        m.extend_from_slice(&TEMPLATE_ID.to_be_bytes());
        let count = (IANA_FIELDS.len() + ENTERPRISE_FIELDS.len()) as u16;
        m.extend_from_slice(&count.to_be_bytes());
        for (id, len) in IANA_FIELDS {
            m.extend_from_slice(&id.to_be_bytes());
            m.extend_from_slice(&len.to_be_bytes());
        }
        for (id, len) in ENTERPRISE_FIELDS {
            m.extend_from_slice(&(id | 0x8000).to_be_bytes());
            m.extend_from_slice(&len.to_be_bytes());
            m.extend_from_slice(&self.cfg.enterprise.to_be_bytes());
        }
    }
}

fn put_record(m: &mut Vec<u8>, r: &FlowRecord, keep: KeepProbability) {
    m.extend_from_slice(&r.local.ip().octets());
    m.extend_from_slice(&r.remote.ip().octets());
    m.extend_from_slice(&r.local.port().to_be_bytes());
    m.extend_from_slice(&r.remote.port().to_be_bytes());
    m.push(6);
    m.push(r.dscp.tos());
    m.extend_from_slice(&r.bytes_sent.0.to_be_bytes());
    m.extend_from_slice(&(r.start.0 / 1_000_000).to_be_bytes());
    m.extend_from_slice(&(r.end.0 / 1_000_000).to_be_bytes());
    m.extend_from_slice(&ntp(r.start).to_be_bytes());
    m.extend_from_slice(&ntp(r.end).to_be_bytes());
    m.extend_from_slice(&r.bytes_received.0.to_be_bytes());
    let srtt_us = u32::try_from(r.srtt.0 / 1_000).unwrap_or(u32::MAX);
    m.extend_from_slice(&srtt_us.to_be_bytes());
    m.extend_from_slice(&r.retrans.to_be_bytes());
    m.extend_from_slice(&keep.get().to_be_bytes());
    let flags = if r.active { FLAG_ACTIVE } else { 0 }
        | if r.fin_sent { FLAG_FIN_SENT } else { 0 }
        | if r.peer_fin { FLAG_PEER_FIN } else { 0 };
    m.push(flags);
}

/// Data records of Workfeed's template in a message this encoder wrote (a template set in it is
/// skipped); 0 for bytes that are not such a message.
pub fn data_records(message: &[u8]) -> usize {
    let mut at = MESSAGE_HEADER_LEN;
    let mut n = 0;
    while at + SET_HEADER_LEN <= message.len() {
        let id = u16::from_be_bytes([message[at], message[at + 1]]);
        let len = usize::from(u16::from_be_bytes([message[at + 2], message[at + 3]]));
        if len < SET_HEADER_LEN {
            break;
        }
        if id == TEMPLATE_ID {
            n += (len - SET_HEADER_LEN) / RECORD_LEN;
        }
        at += len;
    }
    n
}

/// A Unix time in ns as a 64-bit NTP timestamp (era 0: seconds since 1900 in 32 bits, then
/// the fraction of a second in units of 2⁻³² s, rounded to nearest).
fn ntp(t: Nanos) -> u64 {
    let s = t.0 / 1_000_000_000 + NTP_UNIX_OFFSET_S;
    let ns = t.0 % 1_000_000_000;
    let frac = ((u128::from(ns) << 32) + 500_000_000) / 1_000_000_000;
    // A fraction that rounds up to a whole second carries into the seconds.
    ((s as u32 as u64) << 32).wrapping_add(frac as u64)
}

/// The Unix time in ns of an era-0 NTP timestamp (rounded to nearest), `None` before 1970.
fn from_ntp(seconds: u32, fraction: u32) -> Option<Nanos> {
    let s = u64::from(seconds).checked_sub(NTP_UNIX_OFFSET_S)?;
    let ns = (u128::from(fraction) * 1_000_000_000 + (1 << 31)) >> 32;
    Some(Nanos(s * 1_000_000_000 + ns as u64))
}

/// Why one data record, or one message, was not imported.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ImportError {
    /// The bytes are not an IPFIX message the parser accepts.
    #[error("not a valid IPFIX message: {0}")]
    Malformed(String),
    /// A data record lacks an element the workload needs.
    #[error(
        "IPFIX data record without {0}: Polyphony needs the IPv4 5-tuple, octetDeltaCount and flow start and end times"
    )]
    Missing(&'static str),
    /// A data set arrived before its template (the exporter will resend it).
    #[error("IPFIX data set for template {0} arrived before the template; it is dropped until the exporter refreshes the template")]
    NoTemplate(u16),
    /// A keep probability outside (0, 1].
    #[error("IPFIX keepProbability {0} is outside (0, 1]")]
    BadProbability(f64),
    /// A time before 1970 or one that does not fit.
    #[error("IPFIX flow time out of range ({0})")]
    BadTime(&'static str),
}

impl ImportError {
    /// A short label for counters.
    pub fn kind(&self) -> &'static str {
        match self {
            ImportError::Malformed(_) => "malformed",
            ImportError::Missing(_) => "missing_element",
            ImportError::NoTemplate(_) => "no_template",
            ImportError::BadProbability(_) => "bad_probability",
            ImportError::BadTime(_) => "bad_time",
        }
    }
}

/// What one datagram gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// The records, each with its keep probability.
    pub records: Vec<(FlowRecord, KeepProbability)>,
    /// Records or sets that could not be imported, in order.
    pub rejected: Vec<ImportError>,
}

/// Reads IPFIX messages from one exporter stream into flow records. It keeps the exporter's
/// templates between messages, so use one decoder per stream (per exporter address).
pub struct IpfixDecoder {
    parser: NetflowParser,
    enterprise: u32,
}

impl std::fmt::Debug for IpfixDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpfixDecoder")
            .field("enterprise", &self.enterprise)
            .finish_non_exhaustive()
    }
}

impl IpfixDecoder {
    /// A decoder that reads Workfeed's own elements under the enterprise number `enterprise`.
    pub fn new(enterprise: u32) -> IpfixDecoder {
        IpfixDecoder {
            parser: NetflowParser::default(),
            enterprise,
        }
    }

    /// Decodes one datagram. Parse failures of the whole message and of single records are
    /// returned in [`Imported::rejected`]; the records before and after them are kept.
    pub fn decode(&mut self, datagram: &[u8]) -> Imported {
        let mut out = Imported::default();
        let parsed = self.parser.parse_bytes(datagram);
        for p in &parsed.packets {
            let NetflowPacket::IPFix(msg) = p else {
                out.rejected
                    .push(ImportError::Malformed("a NetFlow packet of another version".into()));
                continue;
            };
            for set in &msg.flowsets {
                match &set.body {
                    FlowSetBody::Data(d) => {
                        for rec in &d.fields {
                            match self.record(rec) {
                                Ok(r) => out.records.push(r),
                                Err(e) => out.rejected.push(e),
                            }
                        }
                    }
                    FlowSetBody::NoTemplate(info) => out.rejected.push(ImportError::NoTemplate(info.template_id)),
                    _ => {}
                }
            }
        }
        if let Some(e) = parsed.error {
            out.rejected.push(ImportError::Malformed(e.to_string()));
        }
        out
    }

    fn record(&self, rec: &[(IPFixField, FieldValue)]) -> Result<(FlowRecord, KeepProbability), ImportError> {
        let mut f = Fields::default();
        for (field, value) in rec {
            match field {
                IPFixField::IANA(iana) => f.iana(*iana, value),
                IPFixField::Enterprise {
                    enterprise_number,
                    field_number,
                } if *enterprise_number == self.enterprise => f.enterprise(*field_number, value),
                _ => {}
            }
        }
        f.finish()
    }
}

/// The elements of one data record that matter, as found.
#[derive(Debug, Default)]
struct Fields {
    src: Option<Ipv4Addr>,
    dst: Option<Ipv4Addr>,
    sport: Option<u16>,
    dport: Option<u16>,
    tos: Option<u8>,
    octets: Option<u64>,
    start_ns: Option<Result<Nanos, ImportError>>,
    end_ns: Option<Result<Nanos, ImportError>>,
    start_us: Option<Result<Nanos, ImportError>>,
    end_us: Option<Result<Nanos, ImportError>>,
    start_ms: Option<u64>,
    end_ms: Option<u64>,
    received: Option<u64>,
    srtt_us: Option<u64>,
    retrans: Option<u64>,
    keep: Option<f64>,
    flags: Option<u64>,
}

fn number(v: &FieldValue) -> Option<u64> {
    match v {
        FieldValue::DataNumber(n) => match n {
            DataNumber::U8(x) => Some(u64::from(*x)),
            DataNumber::U16(x) => Some(u64::from(*x)),
            DataNumber::U24(x) | DataNumber::U32(x) => Some(u64::from(*x)),
            DataNumber::U64(x) => Some(*x),
            DataNumber::U128(x) => u64::try_from(*x).ok(),
            DataNumber::Vec(b) => be_bytes(b),
            _ => None,
        },
        FieldValue::Vec(b) => be_bytes(b),
        FieldValue::ProtocolType(_) => None,
        FieldValue::Duration(DurationValue::Millis { value, .. } | DurationValue::Seconds { value, .. }) => {
            Some(*value)
        }
        _ => None,
    }
}

/// An unsigned big-endian integer of up to 8 bytes (reduced-size encoding, RFC 7011 §6.2).
fn be_bytes(b: &[u8]) -> Option<u64> {
    (b.len() <= 8).then(|| b.iter().fold(0u64, |a, x| (a << 8) | u64::from(*x)))
}

fn ntp_value(v: &FieldValue) -> Option<Result<Nanos, ImportError>> {
    match v {
        FieldValue::Duration(
            DurationValue::NanosNtp { seconds, fraction } | DurationValue::MicrosNtp { seconds, fraction },
        ) => Some(from_ntp(*seconds, *fraction).ok_or(ImportError::BadTime("before 1970"))),
        FieldValue::Vec(b) if b.len() == 8 => {
            let seconds = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let fraction = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            Some(from_ntp(seconds, fraction).ok_or(ImportError::BadTime("before 1970")))
        }
        _ => None,
    }
}

impl Fields {
    fn iana(&mut self, field: IANAIPFixField, v: &FieldValue) {
        use IANAIPFixField as F;
        match field {
            F::SourceIpv4address => {
                if let FieldValue::Ip4Addr(a) = v {
                    self.src = Some(*a);
                }
            }
            F::DestinationIpv4address => {
                if let FieldValue::Ip4Addr(a) = v {
                    self.dst = Some(*a);
                }
            }
            F::SourceTransportPort => self.sport = number(v).and_then(|x| u16::try_from(x).ok()),
            F::DestinationTransportPort => self.dport = number(v).and_then(|x| u16::try_from(x).ok()),
            F::IpClassOfService => self.tos = number(v).and_then(|x| u8::try_from(x).ok()),
            F::OctetDeltaCount => self.octets = number(v),
            F::FlowStartMilliseconds => self.start_ms = number(v),
            F::FlowEndMilliseconds => self.end_ms = number(v),
            F::FlowStartNanoseconds => self.start_ns = ntp_value(v),
            F::FlowEndNanoseconds => self.end_ns = ntp_value(v),
            F::FlowStartMicroseconds => self.start_us = ntp_value(v),
            F::FlowEndMicroseconds => self.end_us = ntp_value(v),
            _ => {}
        }
    }

    fn enterprise(&mut self, id: u16, v: &FieldValue) {
        match id {
            1 => self.received = number(v),
            2 => self.srtt_us = number(v),
            3 => self.retrans = number(v),
            4 => {
                self.keep = match v {
                    FieldValue::Float64(x) => Some(*x),
                    FieldValue::Vec(b) | FieldValue::DataNumber(DataNumber::Vec(b)) if b.len() == 8 => {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(b);
                        Some(f64::from_be_bytes(a))
                    }
                    _ => None,
                }
            }
            5 => self.flags = number(v),
            _ => {}
        }
    }

    fn time(
        ns: Option<Result<Nanos, ImportError>>,
        us: Option<Result<Nanos, ImportError>>,
        ms: Option<u64>,
        what: &'static str,
    ) -> Result<Nanos, ImportError> {
        if let Some(t) = ns.or(us) {
            return t;
        }
        let ms = ms.ok_or(ImportError::Missing(what))?;
        ms.checked_mul(1_000_000).map(Nanos).ok_or(ImportError::BadTime(what))
    }

    fn finish(self) -> Result<(FlowRecord, KeepProbability), ImportError> {
        let src = self.src.ok_or(ImportError::Missing("sourceIPv4Address"))?;
        let dst = self.dst.ok_or(ImportError::Missing("destinationIPv4Address"))?;
        let sport = self.sport.ok_or(ImportError::Missing("sourceTransportPort"))?;
        let dport = self.dport.ok_or(ImportError::Missing("destinationTransportPort"))?;
        let octets = self.octets.ok_or(ImportError::Missing("octetDeltaCount"))?;
        let start = Fields::time(
            self.start_ns,
            self.start_us,
            self.start_ms,
            "flowStart{Nano,Micro,Milli}seconds",
        )?;
        let end = Fields::time(
            self.end_ns,
            self.end_us,
            self.end_ms,
            "flowEnd{Nano,Micro,Milli}seconds",
        )?;
        let keep = match self.keep {
            None => KeepProbability::ALL,
            Some(p) => KeepProbability::new(p).map_err(|_| ImportError::BadProbability(p))?,
        };
        // Without Workfeed's flags, the record is the sender's view of a unidirectional flow.
        let flags = self.flags.map_or(FLAG_ACTIVE, |f| f as u8);
        let record = FlowRecord {
            local: SocketAddrV4::new(src, sport),
            remote: SocketAddrV4::new(dst, dport),
            dscp: Dscp::from_tos(self.tos.unwrap_or(0)),
            active: flags & FLAG_ACTIVE != 0,
            fin_sent: flags & FLAG_FIN_SENT != 0,
            peer_fin: flags & FLAG_PEER_FIN != 0,
            bytes_sent: Bytes(octets),
            bytes_received: Bytes(self.received.unwrap_or(0)),
            srtt: Nanos(self.srtt_us.unwrap_or(0).saturating_mul(1_000)),
            retrans: self.retrans.map_or(0, |r| u16::try_from(r).unwrap_or(u16::MAX)),
            start,
            end,
        };
        Ok((record, keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u16, active: bool) -> FlowRecord {
        FlowRecord {
            local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1, 2), 40_000 + i),
            remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 5001),
            dscp: Dscp::from_tos(26 << 2),
            active,
            fin_sent: true,
            peer_fin: i.is_multiple_of(2),
            bytes_sent: Bytes(1_000 + u64::from(i) * 977),
            bytes_received: Bytes(u64::from(i)),
            srtt: Nanos(21_000),
            retrans: i % 3,
            start: Nanos(1_764_000_000_123_456_789 + u64::from(i) * 1_000_003),
            end: Nanos(1_764_000_000_223_456_789 + u64::from(i) * 1_000_007),
        }
    }

    #[test]
    fn ntp_round_trips_every_nanosecond_position() {
        for ns in [0u64, 1, 499_999_999, 500_000_000, 999_999_999, 123_456_789] {
            let t = Nanos(1_764_000_000 * 1_000_000_000 + ns);
            let n = ntp(t);
            assert_eq!(from_ntp((n >> 32) as u32, n as u32), Some(t), "{ns}");
        }
    }

    #[test]
    fn records_round_trip_through_messages_split_under_the_size_limit() {
        let records: Vec<_> = (0..100)
            .map(|i| (rec(i, i % 2 == 0), KeepProbability::new(0.25).unwrap()))
            .collect();
        let mut enc = IpfixEncoder::new(IpfixExporterConfig::new(7)).unwrap();
        let msgs = enc.encode(&records, Nanos(1_764_000_001 * 1_000_000_000));
        assert!(msgs.len() > 1 && msgs.iter().all(|m| m.len() <= 1400));
        assert_eq!(enc.sequence(), 100);
        assert_eq!(msgs.iter().map(|m| data_records(m)).sum::<usize>(), 100);
        let mut dec = IpfixDecoder::new(DOCUMENTATION_PEN);
        let mut got = Vec::new();
        for m in &msgs {
            let i = dec.decode(m);
            assert!(i.rejected.is_empty(), "{:?}", i.rejected);
            got.extend(i.records);
        }
        assert_eq!(got, records);
    }

    #[test]
    fn the_template_is_refreshed_by_time_and_by_message_count() {
        let mut cfg = IpfixExporterConfig::new(1);
        cfg.template_refresh_messages = 3;
        let mut enc = IpfixEncoder::new(cfg).unwrap();
        let one = [(rec(1, true), KeepProbability::ALL)];
        let has_template = |m: &[u8]| m[16..18] == [0, 2];
        let t0 = Nanos(1_764_000_000 * 1_000_000_000);
        let mut seen = Vec::new();
        for k in 0..8 {
            let m = enc.encode(&one, t0);
            seen.push(has_template(&m[0]));
            assert_eq!(m.len(), 1, "{k}");
        }
        assert_eq!(seen, [true, false, false, false, true, false, false, false]);
        // 60 s later the template comes again, and an idle exporter sends it alone.
        let later = Nanos(t0.0 + 61 * 1_000_000_000);
        let m = enc.encode(&[], later);
        assert_eq!(m.len(), 1);
        assert!(has_template(&m[0]) && m[0].len() == MESSAGE_HEADER_LEN + template_set_len());
        assert!(enc.encode(&[], later).is_empty());
    }

    #[test]
    fn data_before_its_template_is_reported_not_guessed() {
        let mut enc = IpfixEncoder::new(IpfixExporterConfig::new(1)).unwrap();
        let t = Nanos(1_764_000_000 * 1_000_000_000);
        let _first = enc.encode(&[(rec(1, true), KeepProbability::ALL)], t);
        let second = enc.encode(&[(rec(2, true), KeepProbability::ALL)], t);
        let got = IpfixDecoder::new(DOCUMENTATION_PEN).decode(&second[0]);
        assert!(got.records.is_empty());
        assert!(
            got.rejected
                .iter()
                .any(|e| matches!(e, ImportError::NoTemplate(TEMPLATE_ID))),
            "{:?}",
            got.rejected
        );
    }

    #[test]
    fn another_pen_reads_as_a_plain_unidirectional_flow() {
        let mut enc = IpfixEncoder::new(IpfixExporterConfig::new(1)).unwrap();
        let r = rec(4, false);
        let m = enc.encode(
            &[(r, KeepProbability::new(0.5).unwrap())],
            Nanos(1_764_000_000 * 1_000_000_000),
        );
        let got = IpfixDecoder::new(12345).decode(&m[0]);
        let (g, keep) = got.records[0];
        assert_eq!(
            (g.local, g.remote, g.dscp, g.bytes_sent),
            (r.local, r.remote, r.dscp, r.bytes_sent)
        );
        assert_eq!((g.start, g.end), (r.start, r.end));
        assert!(g.active && g.bytes_received == Bytes(0) && keep == KeepProbability::ALL);
    }

    #[test]
    fn bad_settings_are_refused_with_the_value() {
        let mut c = IpfixExporterConfig::new(1);
        c.max_message = 100;
        let e = IpfixEncoder::new(c).unwrap_err().to_string();
        assert!(e.contains("100") && e.contains("at least"), "{e}");
        let mut c = IpfixExporterConfig::new(1);
        c.enterprise = 0;
        assert_eq!(IpfixEncoder::new(c).unwrap_err(), ExportConfigError::ZeroEnterprise);
    }

    #[test]
    fn garbage_never_panics() {
        let mut dec = IpfixDecoder::new(DOCUMENTATION_PEN);
        let mut enc = IpfixEncoder::new(IpfixExporterConfig::new(1)).unwrap();
        let good = enc.encode(
            &[(rec(1, true), KeepProbability::ALL)],
            Nanos(1_764_000_000 * 1_000_000_000),
        );
        for cut in 0..good[0].len() {
            let _ = dec.decode(&good[0][..cut]);
        }
        let mut flipped = good[0].clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xff;
            let _ = dec.decode(&flipped);
            flipped[i] ^= 0xff;
        }
        assert!(!dec.decode(&[0, 10, 0, 3]).rejected.is_empty());
    }
}
