//! Bad input never panics and never counts as data: the datagram decoder and the collector's
//! ingest path under proptest (truncated, wrong version, wrong length, bad HMAC, replayed
//! sequence numbers, absurd counts, random bytes) — each rejected and counted.

use polyphony_spec::{Bytes, Dscp, Nanos};
use proptest::prelude::*;
use std::net::{Ipv4Addr, SocketAddrV4};
use workfeed::metrics::AggregatorMetrics;
use workfeed::wire::{self, AuthKey, Batch, DecodeError, HEADER_LEN, MAX_RECORDS, TAG_LEN};
use workfeed::{Collector, CollectorConfig, FlowRecord};

fn key() -> AuthKey {
    AuthKey::new(b"0123456789abcdef-polyphony".to_vec()).unwrap()
}

fn record() -> impl Strategy<Value = FlowRecord> {
    (
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u16>(),
        0u8..64,
        any::<(bool, bool, bool)>(),
        0u64..(1 << 48),
        0u64..(1 << 48),
        0u32..10_000_000,
        any::<u16>(),
        0u64..(1 << 62),
        0u64..(1 << 40),
    )
        .prop_map(
            |(a, b, pa, pb, dscp, (active, fin_sent, peer_fin), sent, recv, srtt, retrans, start, dur)| FlowRecord {
                local: SocketAddrV4::new(Ipv4Addr::from(a), pa),
                remote: SocketAddrV4::new(Ipv4Addr::from(b), pb),
                dscp: Dscp::new(dscp).unwrap(),
                active,
                fin_sent,
                peer_fin,
                bytes_sent: Bytes(sent),
                bytes_received: Bytes(recv),
                srtt: Nanos(u64::from(srtt) * 1000),
                retrans,
                start: Nanos(start),
                end: Nanos(start + dur),
            },
        )
}

fn batch() -> impl Strategy<Value = Batch> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        prop_oneof![Just(1.0), Just(0.25), 0.001f64..=1.0],
        prop::collection::vec(record(), 1..40),
    )
        .prop_map(|(agent_id, epoch, seq, keep_probability, records)| Batch {
            agent_id,
            epoch,
            seq,
            keep_probability,
            records,
        })
}

fn rejected_total(m: &AggregatorMetrics) -> u64 {
    [
        "truncated",
        "bad_magic",
        "wrong_version",
        "bad_count",
        "bad_length",
        "missing_tag",
        "bad_tag",
        "bad_probability",
        "bad_record",
        "duplicate",
        "too_old",
        "stale_epoch",
    ]
    .iter()
    .map(|r| m.rejected(r))
    .sum()
}

/// Feeds one datagram to a fresh collector and checks the outcome was counted exactly once and
/// contributed no records when rejected.
fn ingest_counted(bytes: &[u8], key: Option<AuthKey>) -> Result<usize, DecodeError> {
    let mut c = Collector::new(
        CollectorConfig {
            key,
            ..CollectorConfig::default()
        },
        AggregatorMetrics::default(),
    );
    let r = c.ingest(bytes);
    let m = c.metrics();
    match &r {
        Ok(_) => {
            assert_eq!(m.datagrams_accepted.get(), 1);
            assert_eq!(rejected_total(m), 0);
        }
        Err(e) => {
            assert_eq!(m.datagrams_accepted.get(), 0);
            assert_eq!(m.rejected(e.kind()), 1, "{e}");
            assert_eq!(rejected_total(m), 1);
            assert_eq!(m.records_accepted.get(), 0, "a rejected datagram contributed records");
            assert_eq!(c.connections().count(), 0);
        }
    }
    r.map(|a| a.records.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn valid_batches_round_trip(b in batch(), tagged in any::<bool>()) {
        let k = key();
        let bytes = wire::encode(&b, tagged.then_some(&k));
        let back = wire::decode(&bytes, tagged.then_some(&k)).unwrap();
        prop_assert_eq!(back, b);
    }

    #[test]
    fn random_bytes_never_panic_and_are_counted(bytes in prop::collection::vec(any::<u8>(), 0..3000), keyed in any::<bool>()) {
        let _ = ingest_counted(&bytes, keyed.then(key));
    }

    #[test]
    fn random_bytes_after_a_valid_header_are_counted(b in batch(), tail in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut bytes = wire::encode(&b, None);
        bytes.truncate(HEADER_LEN);
        bytes.extend_from_slice(&tail);
        let _ = ingest_counted(&bytes, None);
    }

    #[test]
    fn every_truncation_is_rejected(b in batch(), cut in any::<prop::sample::Index>(), tagged in any::<bool>()) {
        let k = key();
        let bytes = wire::encode(&b, tagged.then_some(&k));
        let n = cut.index(bytes.len());
        let e = ingest_counted(&bytes[..n], tagged.then(key)).unwrap_err();
        prop_assert!(matches!(e, DecodeError::Truncated(_) | DecodeError::BadLength { .. }), "{}", e);
    }

    #[test]
    fn extra_bytes_are_rejected(b in batch(), extra in prop::collection::vec(any::<u8>(), 1..100)) {
        let mut bytes = wire::encode(&b, None);
        bytes.extend_from_slice(&extra);
        let e = ingest_counted(&bytes, None).unwrap_err();
        prop_assert!(matches!(e, DecodeError::BadLength { .. }), "{}", e);
    }

    #[test]
    fn wrong_versions_are_rejected(b in batch(), v in any::<u8>().prop_filter("not current", |v| *v != wire::VERSION)) {
        let mut bytes = wire::encode(&b, None);
        bytes[4] = v;
        prop_assert_eq!(ingest_counted(&bytes, None).unwrap_err(), DecodeError::WrongVersion(v));
    }

    #[test]
    fn lying_lengths_and_absurd_counts_are_rejected(b in batch(), count in any::<u16>(), len in any::<u32>()) {
        let mut bytes = wire::encode(&b, None);
        let n = b.records.len();
        prop_assume!(usize::from(count) != n || len as usize != n * 48);
        bytes[6..8].copy_from_slice(&count.to_le_bytes());
        bytes[12..16].copy_from_slice(&len.to_le_bytes());
        let e = ingest_counted(&bytes, None).unwrap_err();
        if count == 0 || usize::from(count) > MAX_RECORDS {
            prop_assert_eq!(e, DecodeError::BadCount(count));
        } else {
            prop_assert!(matches!(e, DecodeError::BadLength { .. }), "{}", e);
        }
    }

    #[test]
    fn any_altered_bit_fails_authentication(b in batch(), bit in any::<prop::sample::Index>()) {
        let k = key();
        let mut bytes = wire::encode(&b, Some(&k));
        let i = bit.index(bytes.len() * 8);
        bytes[i / 8] ^= 1 << (i % 8);
        // Flipping a header bit may fail an earlier check; it never passes.
        let e = ingest_counted(&bytes, Some(key())).unwrap_err();
        let body = bytes.len() - TAG_LEN;
        if i / 8 >= HEADER_LEN && i / 8 < body + TAG_LEN && !(i / 8 >= 32 && i / 8 < 40) {
            prop_assert_eq!(e, DecodeError::BadTag);
        }
    }

    #[test]
    fn wrong_key_and_missing_tag_are_rejected(b in batch()) {
        let other = AuthKey::new(b"another key of 16+ bytes".to_vec()).unwrap();
        let forged = wire::encode(&b, Some(&other));
        prop_assert_eq!(ingest_counted(&forged, Some(key())).unwrap_err(), DecodeError::BadTag);
        let plain = wire::encode(&b, None);
        prop_assert_eq!(ingest_counted(&plain, Some(key())).unwrap_err(), DecodeError::MissingTag);
    }

    #[test]
    fn out_of_range_probabilities_are_rejected(b in batch(), p in prop_oneof![Just(0.0), Just(-0.5), Just(1.5), Just(f64::NAN), Just(f64::INFINITY)]) {
        let mut bytes = wire::encode(&b, None);
        bytes[32..40].copy_from_slice(&p.to_le_bytes());
        prop_assert_eq!(ingest_counted(&bytes, None).unwrap_err().kind(), "bad_probability");
    }

    #[test]
    fn replayed_datagrams_are_dropped_and_counted(b in batch(), replays in 1usize..5) {
        let k = key();
        let bytes = wire::encode(&b, Some(&k));
        let mut c = Collector::new(CollectorConfig { key: Some(key()), ..CollectorConfig::default() }, AggregatorMetrics::default());
        let first = c.ingest(&bytes).unwrap().records.len();
        let held = c.metrics().records_accepted.get();
        prop_assert_eq!(held, first as u64);
        for _ in 0..replays {
            prop_assert_eq!(c.ingest(&bytes).unwrap().records.len(), 0);
        }
        prop_assert_eq!(c.metrics().rejected("duplicate"), replays as u64);
        prop_assert_eq!(c.metrics().records_accepted.get(), held);
        prop_assert_eq!(c.metrics().datagrams_accepted.get(), 1);
    }
}

#[test]
fn records_that_close_before_they_open_are_rejected() {
    let mut b = Batch {
        agent_id: 1,
        epoch: 1,
        seq: 0,
        keep_probability: 1.0,
        records: vec![],
    };
    let mut r = FlowRecord {
        local: SocketAddrV4::new(Ipv4Addr::new(198, 18, 1, 2), 1),
        remote: SocketAddrV4::new(Ipv4Addr::new(198, 18, 100, 2), 2),
        dscp: Dscp::AF11,
        active: true,
        fin_sent: true,
        peer_fin: true,
        bytes_sent: Bytes(10),
        bytes_received: Bytes(0),
        srtt: Nanos(0),
        retrans: 0,
        start: Nanos(100),
        end: Nanos(100),
    };
    r.end = Nanos(50);
    b.records.push(r);
    let e = ingest_counted(&wire::encode(&b, None), None).unwrap_err();
    assert_eq!(e.kind(), "bad_record");
}
