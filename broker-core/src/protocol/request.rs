//! A request frame decoded: its header checked against what this broker serves, its body
//! decoded into kafka-protocol's message ([`RequestKind`]), or a Raft message between voters.
//! Done in the connection's task before the node is locked, so the node decides on messages,
//! never on bytes (and no decoding waits behind another request's decision).
//!
//! What closes the connection (an `Err`, with the reason for the log): a frame shorter than its
//! header, an unknown API key, an API or version this broker does not serve (but ApiVersions,
//! answered alone with the supported list as Kafka does), a header or body that does not decode.

use super::{api_versions_response, leading, Leading, Response};
use crate::controller::raft::{wire, Message};
use crate::kafka::{served, Code};
use bytes::Bytes;
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

/// What a frame is, once read.
#[derive(Debug, Clone)]
pub enum Decoded {
    /// A Kafka request of an API and version this broker serves.
    Request(Request),
    /// A Raft message from another voter (`controller::raft::wire`), never answered.
    Raft(Message),
    /// The answer the protocol gives alone: ApiVersions at a version not served, answered
    /// UNSUPPORTED_VERSION in a v0 body so any client can read the supported range.
    Answer(Response),
}

/// A Kafka request, decoded.
#[derive(Debug, Clone)]
pub struct Request {
    pub key: ApiKey,
    pub version: i16,
    pub header: RequestHeader,
    pub body: RequestKind,
    /// The frame it was read from (no size prefix): what a forward sends on unchanged.
    pub frame: Bytes,
}

impl Request {
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }

    /// The client's id from the header ("" when it sent none).
    pub fn client_id(&self) -> &str {
        self.header.client_id.as_ref().map_or("", |c| c.as_str())
    }
}

/// Reads a request frame (without its size prefix). A request of a version Kafka 4.0 removed
/// reaches here bridged (`legacy::up`) or not at all: it is refused as any version not served.
/// `legacy` is `BrokerConfig::legacy_api_versions`, for the versions an ApiVersions answer lists.
pub fn decode_request(frame: &Bytes, legacy: bool) -> Result<Decoded, String> {
    let Some(Leading { key: raw_key, version, correlation_id }) = leading(frame) else {
        return Err("request shorter than its header".into());
    };
    if raw_key == wire::api_key {
        return wire::decode_body(frame.slice(8..)).map(Decoded::Raft);
    }
    let key = ApiKey::try_from(raw_key).map_err(|_| format!("unknown API key {raw_key}"))?;
    let Some((lo, hi)) = served(key) else {
        return Err(format!("API {key:?} is not supported by this broker"));
    };
    if !(lo..=hi).contains(&version) {
        if key == ApiKey::ApiVersions {
            let body = api_versions_response(Code::UnsupportedVersion.code(), legacy);
            return Ok(Decoded::Answer(Response::new(key, 0, correlation_id, body)));
        }
        return Err(format!("{key:?} v{version} is not supported (v{lo}..=v{hi})"));
    }
    let mut body = frame.clone();
    let header = RequestHeader::decode(&mut body, key.request_header_version(version)).map_err(|e| format!("malformed request header: {e}"))?;
    let body = match key {
        // Answered whatever its body says (the supported list is all it asks for).
        ApiKey::ApiVersions => RequestKind::ApiVersions(ApiVersionsRequest::decode(&mut body, version).unwrap_or_default()),
        _ => RequestKind::decode(key, &mut body, version).map_err(|e| format!("malformed {key:?} v{version} request: {e}"))?,
    };
    Ok(Decoded::Request(Request { key, version, header, body, frame: frame.clone() }))
}
