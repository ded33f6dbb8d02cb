//! Request frames as a client encodes them (kafka-protocol's client side) and replies decoded
//! back, for the structured target: the broker under test sees the same bytes a real client
//! would send, through the same dispatch.

use crate::kafka::ApiKey;
use crate::node::Outcome;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

/// The correlation id every structured request carries.
pub const correlation_id: i32 = 7;

/// A request frame (no size prefix), or None if `body` cannot be encoded at `version` (a
/// field set that the version lacks): the op is then skipped, as a client would not send it.
pub fn frame<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, body: &R) -> Option<Bytes> {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")));
    let mut out = BytesMut::new();
    header.encode(&mut out, R::header_version(version)).ok()?;
    body.encode(&mut out, version).ok()?;
    Some(out.freeze())
}

/// The decoded reply to a structured request. A request the fuzzer built from valid parts
/// must be answered: a close, or a reply that does not decode, is a broker bug.
pub fn reply<R: Decodable>(outcome: Outcome, key: ApiKey, version: i16) -> R {
    let mut bytes = match outcome {
        Outcome::Reply(reply) => reply.encode().unwrap_or_else(|e| panic!("{key:?} v{version}: the answer does not encode: {e}")),
        // A zero-copy Fetch answer: the same bytes the socket would get.
        Outcome::Frame(frame) => frame.to_bytes().unwrap_or_else(|e| panic!("{key:?} v{version}: its file regions do not read: {e}")),
        other => panic!("{key:?} v{version}: a well-formed request got {other:?}"),
    };
    let size = i32::from_be_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    assert_eq!(size + 4, bytes.len(), "{key:?} v{version}: size prefix");
    let mut body = bytes.split_off(4);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).expect("response header");
    assert_eq!(header.correlation_id, correlation_id);
    R::decode(&mut body, version).unwrap_or_else(|e| panic!("{key:?} v{version}: reply does not decode: {e}"))
}

pub fn name(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// A version in the served range of `key`, from the fuzzer's byte.
pub fn version(key: ApiKey, pick: u8, at_least: i16) -> i16 {
    let (lo, hi) = crate::kafka::served(key).expect("a served API");
    let lo = lo.max(at_least);
    lo + (pick as i16) % (hi - lo + 1)
}
