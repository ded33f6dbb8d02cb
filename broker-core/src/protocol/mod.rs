//! The Kafka wire protocol, without state: the size prefix of a frame, a request's header, the
//! decoding of a body and the encoding of an answer (with the `kafka-protocol` crate), the
//! envelopes of forwarded requests, and zero-copy Fetch frames. What a request *does* is the
//! node's (`node/`); nothing here holds a lock, reads a clock or names a broker.
//!
//! Rules: an unknown API key, an unsupported version (other than ApiVersions, which answers
//! UNSUPPORTED_VERSION with the supported list, as Kafka does), or a body that does not decode
//! closes the connection — the client is broken or hostile and nothing it sends next can be
//! trusted. Per-request problems are answered with Kafka error codes (by the node).

pub mod envelope;
pub mod fetch_frame;
pub mod legacy;
pub mod message_set;
pub mod request;

use crate::controller::raft::wire;
use crate::kafka::SERVED;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};

/// The size prefix of a frame: `Ok(len)` or why the connection must close.
pub fn frame_len(prefix: [u8; 4], max: usize) -> Result<usize, String> {
    sized(prefix, max, request_header_bytes_min)
}

/// The shortest request: API key, version and correlation id.
pub const request_header_bytes_min: usize = 8;

/// A size prefix's length, within `max`, of a frame at least `min` bytes long (a raw SASL token
/// after a v0 handshake may be shorter than any request: `min` 0).
pub fn sized(prefix: [u8; 4], max: usize, min: usize) -> Result<usize, String> {
    let len = i32::from_be_bytes(prefix);
    if len < 0 {
        return Err(format!("negative frame size {len}"));
    }
    if len as usize > max {
        return Err(format!("frame of {len} bytes exceeds socket.request.max.bytes={max}"));
    }
    if (len as usize) < min {
        return Err(format!("frame of {len} bytes is too short for a request header"));
    }
    Ok(len as usize)
}

/// The first eight bytes of a request frame (without its size prefix): API key, version and
/// correlation id, read before the header is decoded (so an unknown key can be named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leading {
    pub key: i16,
    pub version: i16,
    pub correlation_id: i32,
}

/// The leading fields of `frame`, or None for a frame shorter than them.
pub fn leading(frame: &[u8]) -> Option<Leading> {
    (frame.len() >= 8).then(|| Leading {
        key: i16::from_be_bytes([frame[0], frame[1]]),
        version: i16::from_be_bytes([frame[2], frame[3]]),
        correlation_id: i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]),
    })
}

/// Requests the controller commits metadata for (forwarded ones too), and Raft messages (which
/// may commit it): after one, parked metadata fetches look again and the quorum's outbox is sent.
pub fn is_controller_api(key: i16) -> bool {
    use ApiKey::*;
    key == wire::api_key || [CreateTopics, DeleteTopics, AlterConfigs, IncrementalAlterConfigs, AlterPartition, BrokerRegistration, BrokerHeartbeat, Envelope, ElectLeaders, AlterUserScramCredentials, CreateAcls, DeleteAcls, DescribeQuorum, CreatePartitions, AlterPartitionReassignments, UnregisterBroker, AlterClientQuotas].iter().any(|k| *k as i16 == key)
}

/// A response as the node decided it, typed: the shell makes the frame ([`Response::encode`])
/// when it sends it. Tests and the simulator can read what was decided without decoding bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub body: ResponseKind,
    /// The body's encoded size, if it could be computed: the frame is allocated once.
    size: usize,
}

impl Response {
    pub fn new<R: Encodable + Into<ResponseKind>>(key: ApiKey, version: i16, correlation_id: i32, body: R) -> Response {
        // A body the version cannot carry fails again in `encode`, with the reason.
        let size = body.compute_size(version).unwrap_or(0);
        Response { key, version, correlation_id, body: body.into(), size }
    }

    /// The frame: size, header, body. An answer that does not encode at its version (a field
    /// the version cannot carry) is an error for the connection, never a panic.
    pub fn encode(&self) -> Result<Bytes, String> {
        let header_version = self.key.response_header_version(self.version);
        let header = ResponseHeader::default().with_correlation_id(self.correlation_id);
        // Size prefix and the largest header (correlation id and an empty tag section).
        let mut out = BytesMut::with_capacity(4 + 5 + self.size);
        out.put_i32(0);
        header.encode(&mut out, header_version).map_err(|e| e.to_string())?;
        self.body.encode(&mut out, self.version).map_err(|e| format!("encoding {:?} v{}: {e}", self.key, self.version))?;
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        Ok(out.freeze())
    }
}

/// The ApiVersions answer: every API and version range this broker serves, from Kafka 3.9's
/// oldest versions with `legacy` on (`kafka::REMOVED_IN_4`).
pub fn api_versions_response(error_code: i16, legacy: bool) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default();
    r.error_code = error_code;
    r.api_keys = SERVED
        .iter()
        .map(|(k, lo, hi)| {
            let mut v = ApiVersion::default();
            v.api_key = *k as i16;
            v.min_version = legacy::oldest(*k, legacy).unwrap_or(*lo);
            v.max_version = *hi;
            v
        })
        .collect();
    r
}

/// Who sends a Fetch: the follower's replica id (-1: a consumer) and, from v15 (KIP-903), its
/// broker epoch (-1: not told). Before v15 the id is `replica_id`, from v15 it is in
/// `replica_state`; kafka-protocol decodes each only at its versions, leaving the other -1.
pub fn fetch_replica(req: &kafka_protocol::messages::FetchRequest) -> (i32, i64) {
    match req.replica_id.0 {
        id if id >= 0 => (id, -1),
        _ => (req.replica_state.replica_id.0, req.replica_state.replica_epoch),
    }
}

/// A wire string.
pub(crate) fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// A wire topic name.
pub(crate) fn topic_name(name: &str) -> TopicName {
    TopicName(s(name))
}

/// A wire topic id.
pub(crate) fn uuid(id: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}
