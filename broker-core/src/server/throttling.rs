//! The shell's side of client quotas (`crate::throttle` decides): which answered requests
//! count (Produce, by the request's size, and a consumer's Fetch, by the response's; with a
//! `request_percentage` set, every client request by the time the node spent on it; never a
//! follower's fetch or the broker's own links), the throttle written into the response's
//! `throttle_time_ms`, and how long the connection is then not read from (KIP-219: the broker
//! mutes the channel; a client of an older version is thereby held back too).

use super::{now_ms, Shared};
use crate::kafka::ApiKey;
use crate::node::Outcome;
use crate::throttle::{user_of, Kind};
use kafka_protocol::messages::ResponseKind;
use std::time::Duration;

/// A request whose use may count against a quota.
pub(super) struct Counted {
    /// What its bytes count against, if anything.
    bytes: Option<Kind>,
    version: i16,
    client_id: String,
    request_bytes: usize,
}

/// Requests no quota applies to (Kafka's exempt ones): what brokers and controllers send each
/// other — registration, heartbeats, ISR changes, forwarded requests, transaction markers, a
/// leader's verification, the metadata quorum's messages — and the SASL exchange. A follower's
/// fetch is told apart by its replica id (`counted`).
const exempt: [ApiKey; 7] = [ApiKey::BrokerRegistration, ApiKey::BrokerHeartbeat, ApiKey::AlterPartition, ApiKey::Envelope, ApiKey::WriteTxnMarkers, ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];

/// The first AddPartitionsToTxn version only brokers send (KIP-890's verification).
const verification_version: i16 = 4;

/// What of `frame` counts: a Produce, or a Fetch from a consumer (replica id < 0); with
/// `every` (a `request_percentage` is set), any client request (not `exempt`, not a follower's
/// fetch, not a leader's verification).
pub(super) fn counted(frame: &[u8], every: bool) -> Option<Counted> {
    let lead = crate::protocol::leading(frame)?;
    let cluster = exempt.iter().any(|k| *k as i16 == lead.key) || lead.key == crate::controller::raft::wire::api_key || (lead.key == ApiKey::AddPartitionsToTxn as i16 && lead.version >= verification_version);
    let bytes = match lead.key {
        k if k == ApiKey::Produce as i16 => Some(Kind::Produce),
        k if k == ApiKey::Fetch as i16 => Some(Kind::Fetch),
        _ if every && !cluster => None,
        _ => return None,
    };
    let (client_id, body) = client_id(frame, lead.key, lead.version)?;
    if bytes == Some(Kind::Fetch) && fetch_replica(body, lead.version)? >= 0 {
        return None; // a follower's fetch: replication is not a client's traffic
    }
    Some(Counted { bytes, version: lead.version, client_id, request_bytes: frame.len() })
}

/// A Fetch body's replica id (-1: a consumer's): its first field before v15; from v15 in the
/// ReplicaState tagged field (KIP-903), which follows every other field ([`replica_state_id`]).
fn fetch_replica(body: &[u8], version: i16) -> Option<i32> {
    if version < crate::kafka::since::fetch_replica_state {
        return body.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    }
    replica_state_id(body)
}

/// The newest Fetch version whose request layout [`replica_state_id`] walks.
const fetch_walked_newest: i16 = 17;
const _: () = assert!(crate::kafka::served_newest(ApiKey::Fetch) <= fetch_walked_newest, "a newer Fetch is served: check its request layout against replica_state_id");

/// ReplicaState's replica id in a Fetch v15-17 body (-1 without one: a consumer's), found by
/// walking the body by its lengths to the request's tagged fields, nothing decoded, copied or
/// allocated (this runs for every consumer fetch while a quota is set). The layout
/// (FetchRequest.json): max_wait_ms, min_bytes, max_bytes (i32), isolation_level (i8),
/// session_id, session_epoch (i32); topics [topic_id (16 bytes), partitions [partition,
/// current_leader_epoch (i32), fetch_offset (i64), last_fetched_epoch (i32), log_start_offset
/// (i64), partition_max_bytes (i32), tags], tags]; forgotten_topics_data [topic_id, partitions
/// [i32], tags]; rack_id (compact string); tags: 0 cluster_id, 1 ReplicaState (replica_id i32,
/// replica_epoch i64). Tagged fields are skipped by their sizes, v17's per-partition
/// ReplicaDirectoryId included. None for a body cut short.
fn replica_state_id(mut body: &[u8]) -> Option<i32> {
    const replica_state_tag: u32 = 1;
    let b = &mut body;
    skip(b, 4 + 4 + 4 + 1 + 4 + 4)?;
    for _ in 0..compact_len(b)? {
        skip(b, 16)?;
        for _ in 0..compact_len(b)? {
            skip(b, 4 + 4 + 8 + 4 + 8 + 4)?;
            skip_tags(b)?;
        }
        skip_tags(b)?;
    }
    for _ in 0..compact_len(b)? {
        skip(b, 16)?;
        let partitions = compact_len(b)?;
        skip(b, partitions.checked_mul(4)?)?;
        skip_tags(b)?;
    }
    let rack = compact_len(b)?;
    skip(b, rack)?;
    for _ in 0..uvarint(b)? {
        let tag = uvarint(b)?;
        let size = uvarint(b)? as usize;
        let field = b.get(..size)?;
        if tag == replica_state_tag {
            return field.get(..4).map(|x| i32::from_be_bytes([x[0], x[1], x[2], x[3]]));
        }
        skip(b, size)?;
    }
    Some(-1)
}

fn skip(buf: &mut &[u8], n: usize) -> Option<()> {
    *buf = buf.get(n..)?;
    Some(())
}

/// A compact array's or string's length (its uvarint is length + 1; 0 is null: none).
fn compact_len(buf: &mut &[u8]) -> Option<usize> {
    Some((uvarint(buf)? as usize).saturating_sub(1))
}

/// Skips a tagged-field section: a count, then each tag's number, size and bytes.
fn skip_tags(buf: &mut &[u8]) -> Option<()> {
    for _ in 0..uvarint(buf)? {
        uvarint(buf)?;
        let size = uvarint(buf)? as usize;
        skip(buf, size)?;
    }
    Some(())
}

/// The request header's client id, and the body after the header.
fn client_id(frame: &[u8], key: i16, version: i16) -> Option<(String, &[u8])> {
    let len = i16::from_be_bytes([*frame.get(8)?, *frame.get(9)?]);
    let end = 10 + usize::try_from(len).unwrap_or(0);
    let id = if len < 0 { String::new() } else { String::from_utf8_lossy(frame.get(10..end)?).into_owned() };
    let mut rest = frame.get(end..)?;
    let flexible = ApiKey::try_from(key).ok().is_some_and(|k| k.request_header_version(version) >= 2);
    if flexible {
        skip_tags(&mut rest)?;
    }
    Some((id, rest))
}

fn uvarint(buf: &mut &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for i in 0..5 {
        let b = *buf.first()?;
        *buf = &buf[1..];
        v |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Counts `c`'s bytes and the node's time on it (`local`) for `principal`, and writes the
/// longer throttle into the answer; returns how long the connection is muted, in ms (0: not at
/// all). Kafka's produce and fetch answers likewise carry the larger of the two throttles.
pub(super) fn apply(shared: &Shared, c: &Counted, principal: &str, local: Duration, outcome: &mut Outcome) -> u64 {
    // An acks=0 produce gets no answer to carry a request throttle (Kafka skips it too).
    let answered = !matches!(outcome, Outcome::NoReply);
    let bytes = match (c.bytes, &*outcome) {
        (Some(Kind::Produce), _) => c.request_bytes,
        (Some(Kind::Fetch), Outcome::Reply(r)) => r.encode().map_or(0, |b| b.len()),
        (Some(Kind::Fetch), Outcome::Frame(f)) => f.len(),
        _ => 0,
    };
    let (now, user) = (now_ms(), user_of(principal));
    let mut throttles = shared.node.throttles();
    let mut ms = [0u64; 3];
    if let Some(kind) = c.bytes {
        ms[kind as usize] = throttles.record(now, user, &c.client_id, kind, bytes as u64);
    }
    if answered && throttles.any_of(Kind::Request) {
        let us = u64::try_from(local.as_micros()).unwrap_or(u64::MAX);
        ms[Kind::Request as usize] = throttles.record(now, user, &c.client_id, Kind::Request, us);
    }
    drop(throttles);
    for (counter, ms) in shared.metrics.throttle_ms.iter().zip(ms) {
        counter.fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }
    let longest = ms.into_iter().max().unwrap_or(0);
    if longest > 0 {
        set_throttle(outcome, c.version, i32::try_from(longest).unwrap_or(i32::MAX));
    }
    longest
}

/// Writes `ms` into the answer's `throttle_time_ms`, where its version has one: an older
/// version without it is held back by the muted connection alone.
fn set_throttle(outcome: &mut Outcome, version: i16, ms: i32) {
    match outcome {
        Outcome::Reply(r) => {
            let Some(field) = throttle_field(&mut r.body) else { return };
            let before = std::mem::replace(field, (*field).max(ms));
            // A version without the field refuses to encode a value in it.
            if r.encode().is_err() {
                throttle_field(&mut r.body).map(|f| *f = before);
            }
        }
        Outcome::Frame(f) => f.set_throttle_ms(version, ms),
        _ => {}
    }
}

/// The `throttle_time_ms` of an answer to a client API that has one.
fn throttle_field(body: &mut ResponseKind) -> Option<&mut i32> {
    macro_rules! field {
        ($(($api:ident, $ty:ident)),* $(,)?) => {
            match body {
                $(ResponseKind::$api(r) => Some(&mut r.throttle_time_ms),)*
                _ => None,
            }
        };
    }
    crate::kafka::with_throttled_responses!(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};

    /// A request frame (no size prefix), as the connection hands it over.
    fn frame<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, client_id: &str, body: &R) -> Bytes {
        let header = RequestHeader::default().with_request_api_key(key as i16).with_request_api_version(version).with_correlation_id(7).with_client_id(Some(StrBytes::from_string(client_id.into())));
        let mut out = BytesMut::new();
        header.encode(&mut out, R::header_version(version)).unwrap();
        body.encode(&mut out, version).unwrap();
        out.freeze()
    }

    #[test]
    fn produce_and_consumer_fetches_count_and_a_followers_does_not() {
        use kafka_protocol::messages::fetch_request::FetchRequest;
        use kafka_protocol::messages::produce_request::ProduceRequest;
        let produce = frame(ApiKey::Produce, 9, "slow", &ProduceRequest::default());
        let c = counted(&produce, false).expect("a produce counts");
        assert_eq!((c.bytes, c.client_id.as_str(), c.request_bytes), (Some(Kind::Produce), "slow", produce.len()));
        for version in [4, 11, 12, 14, 15, 16, 17] {
            // From v15 the follower is named in ReplicaState, after every other field (walked
            // over: topics, partitions with v17's directory id, forgotten topics, the rack, the
            // cluster id); a consumer's first field is then its max_wait_ms, which must not read
            // as a replica id.
            let (consumer, follower) = match version >= 15 {
                true => {
                    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic, ReplicaState};
                    let partition = |p: i32| FetchPartition::default().with_partition(p).with_fetch_offset(1 << 40).with_partition_max_bytes(1 << 20).with_replica_directory_id(uuid::Uuid::from_u128(7));
                    let topic = |id: u128| FetchTopic::default().with_topic_id(uuid::Uuid::from_u128(id)).with_partitions(vec![partition(0), partition(3)]);
                    let full = FetchRequest::default()
                        .with_max_wait_ms(500)
                        .with_cluster_id(Some(StrBytes::from_static_str("cluster")))
                        .with_topics(vec![topic(1), topic(2)])
                        .with_forgotten_topics_data(vec![ForgottenTopic::default().with_topic_id(uuid::Uuid::from_u128(3)).with_partitions(vec![0, 1, 2])])
                        .with_rack_id(StrBytes::from_static_str("rack-a"));
                    let state = ReplicaState::default().with_replica_id(kafka_protocol::messages::BrokerId(2)).with_replica_epoch(9);
                    (full.clone(), full.with_replica_state(state))
                }
                false => (FetchRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(-1)), FetchRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(2))),
            };
            if version >= 15 {
                let body = |f: &Bytes| client_id(f, ApiKey::Fetch as i16, version).unwrap().1.to_vec();
                let (c, f) = (frame(ApiKey::Fetch, version, "reader", &consumer), frame(ApiKey::Fetch, version, "replica", &follower));
                assert_eq!((replica_state_id(&body(&c)), replica_state_id(&body(&f))), (Some(-1), Some(2)), "v{version}");
                let cut = body(&f);
                assert_eq!(replica_state_id(&cut[..cut.len() - 3]), None, "v{version}: a body cut short");
            }
            let consumer = frame(ApiKey::Fetch, version, "reader", &consumer);
            assert_eq!(counted(&consumer, false).map(|c| c.client_id), Some("reader".to_string()), "v{version}");
            let follower = frame(ApiKey::Fetch, version, "replica", &follower);
            assert!(counted(&follower, true).is_none(), "v{version}: a follower's fetch does not count");
        }
        let metadata = frame(ApiKey::Metadata, 12, "x", &kafka_protocol::messages::MetadataRequest::default());
        assert!(counted(&metadata, false).is_none(), "no bytes of a Metadata count");
        assert_eq!(counted(&metadata, true).map(|c| (c.bytes, c.client_id)), Some((None, "x".to_string())), "its time does, with a request quota set");
        assert!(counted(&produce[..9], true).is_none(), "a cut frame counts nothing");
        // The cluster's own requests are exempt from request_percentage, as Kafka's.
        let heartbeat = frame(ApiKey::BrokerHeartbeat, 0, "broker-1", &kafka_protocol::messages::BrokerHeartbeatRequest::default());
        assert!(counted(&heartbeat, true).is_none(), "a broker's heartbeat counts nothing");
        let add = kafka_protocol::messages::AddPartitionsToTxnRequest::default();
        assert!(counted(&frame(ApiKey::AddPartitionsToTxn, verification_version, "broker-1", &add), true).is_none(), "a leader's verification counts nothing");
        assert!(counted(&frame(ApiKey::AddPartitionsToTxn, 3, "app", &add), true).is_some(), "a client's AddPartitionsToTxn counts");
    }

    #[test]
    fn a_throttle_goes_into_answers_whose_version_has_the_field() {
        use crate::protocol::Response;
        use kafka_protocol::messages::MetadataResponse;
        let encoded = |version: i16, ms: i32| {
            let mut outcome = Outcome::Reply(Response::new(ApiKey::Metadata, version, 1, MetadataResponse::default()));
            set_throttle(&mut outcome, version, ms);
            let Outcome::Reply(r) = outcome else { unreachable!() };
            r.encode().unwrap_or_else(|e| panic!("v{version} encodes: {e}"))
        };
        // Metadata v0 has no throttle_time_ms: it is left out, the muted connection alone
        // holds that client back.
        assert_eq!(encoded(0, 500), encoded(0, 0));
        for version in [3, 12] {
            assert_ne!(encoded(version, 500), encoded(version, 0), "v{version} carries the throttle");
        }
    }
}
