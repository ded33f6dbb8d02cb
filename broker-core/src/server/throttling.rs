//! The shell's side of client quotas (`crate::throttle` decides): which answered requests
//! count (Produce, by the request's size, and a consumer's Fetch, by the response's; never a
//! follower's fetch or the broker's own links), the throttle written into the response's
//! `throttle_time_ms`, and how long the connection is then not read from (KIP-219: the broker
//! mutes the channel; a client of an older version is thereby held back too).

use super::{now_ms, Shared};
use crate::kafka::ApiKey;
use crate::node::Outcome;
use crate::throttle::{user_of, Kind};
use kafka_protocol::messages::ResponseKind;

/// A request whose bytes may count against a quota.
pub(super) struct Counted {
    kind: Kind,
    version: i16,
    client_id: String,
    request_bytes: usize,
}

/// What of `frame` counts: a Produce, or a Fetch from a consumer (replica id < 0).
pub(super) fn counted(frame: &[u8]) -> Option<Counted> {
    let lead = crate::protocol::leading(frame)?;
    let kind = match lead.key {
        k if k == ApiKey::Produce as i16 => Kind::Produce,
        k if k == ApiKey::Fetch as i16 => Kind::Fetch,
        _ => return None,
    };
    let (client_id, body) = client_id(frame, lead.key, lead.version)?;
    if kind == Kind::Fetch && body.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))? >= 0 {
        return None; // a follower's fetch: replication is not a client's traffic
    }
    Some(Counted { kind, version: lead.version, client_id, request_bytes: frame.len() })
}

/// The request header's client id, and the body after the header.
fn client_id(frame: &[u8], key: i16, version: i16) -> Option<(String, &[u8])> {
    let len = i16::from_be_bytes([*frame.get(8)?, *frame.get(9)?]);
    let end = 10 + usize::try_from(len).unwrap_or(0);
    let id = if len < 0 { String::new() } else { String::from_utf8_lossy(frame.get(10..end)?).into_owned() };
    let mut rest = frame.get(end..)?;
    let flexible = ApiKey::try_from(key).ok().is_some_and(|k| k.request_header_version(version) >= 2);
    if flexible {
        // Tagged fields: a count, then each tag's number, size and bytes.
        let count = uvarint(&mut rest)?;
        for _ in 0..count {
            uvarint(&mut rest)?;
            let size = uvarint(&mut rest)? as usize;
            rest = rest.get(size..)?;
        }
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

/// Counts `c`'s bytes for `principal` and writes the throttle into the answer; returns how long
/// the connection is muted, in ms (0: not at all).
pub(super) fn apply(shared: &Shared, c: &Counted, principal: &str, outcome: &mut Outcome) -> u64 {
    let bytes = match (c.kind, &*outcome) {
        (Kind::Produce, _) => c.request_bytes,
        (Kind::Fetch, Outcome::Reply(r)) => r.encode().map_or(0, |b| b.len()),
        (Kind::Fetch, Outcome::Frame(f)) => f.len(),
        _ => return 0,
    };
    let ms = shared.node.throttles().record(now_ms(), user_of(principal), &c.client_id, c.kind, bytes as u64);
    if ms == 0 {
        return 0;
    }
    shared.metrics.throttle_ms[usize::from(c.kind == Kind::Fetch)].fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    let at = i32::try_from(ms).unwrap_or(i32::MAX);
    match outcome {
        Outcome::Reply(r) => match &mut r.body {
            ResponseKind::Produce(p) => p.throttle_time_ms = p.throttle_time_ms.max(at),
            ResponseKind::Fetch(f) => f.throttle_time_ms = f.throttle_time_ms.max(at),
            _ => {}
        },
        Outcome::Frame(f) => f.set_throttle_ms(c.version, at),
        _ => {}
    }
    ms
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
        let c = counted(&produce).expect("a produce counts");
        assert_eq!((c.kind, c.client_id.as_str(), c.request_bytes), (Kind::Produce, "slow", produce.len()));
        for version in [4, 11, 12] {
            let consumer = frame(ApiKey::Fetch, version, "reader", &FetchRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(-1)));
            assert_eq!(counted(&consumer).map(|c| c.client_id), Some("reader".to_string()), "v{version}");
            let follower = frame(ApiKey::Fetch, version, "replica", &FetchRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(2)));
            assert!(counted(&follower).is_none(), "v{version}: a follower's fetch does not count");
        }
        assert!(counted(&frame(ApiKey::Metadata, 12, "x", &kafka_protocol::messages::MetadataRequest::default())).is_none());
        assert!(counted(&produce[..9]).is_none(), "a cut frame counts nothing");
    }
}
