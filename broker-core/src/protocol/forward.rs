//! Forwarding of controller requests (KIP-590). A CreateTopics, DeleteTopics, AlterConfigs,
//! IncrementalAlterConfigs or ElectLeaders that reaches a node which is not the active controller is not
//! refused: the shell forwards the client's frame to the active controller inside an Envelope
//! (API 58) and relays the answer. This module decides which requests are forwarded and wraps
//! and unwraps envelopes; the shell (`server/forward.rs`) does the sending and retrying.
//!
//! Rules:
//! - a request that arrived in an envelope is never forwarded again (no forwarding loops): a
//!   node that is not the active controller refuses the envelope itself with NOT_CONTROLLER,
//!   and the forwarder asks again elsewhere;
//! - an envelope may carry only the forwarded APIs (INVALID_REQUEST otherwise);
//! - the inner request keeps the client's correlation id, so its answer is relayed unchanged;
//! - a forward that finds no controller within `forward_wait_ms_max` answers the client what
//!   this node would have answered alone: NOT_CONTROLLER for each item.

use super::{controller_handlers, encode, handle_inner, Attempt, Node, Outcome};
use crate::kafka::Code;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::envelope_request::EnvelopeRequest;
use kafka_protocol::messages::envelope_response::EnvelopeResponse;
use kafka_protocol::messages::ApiKey;
use std::net::IpAddr;

/// The APIs a node that is not the active controller forwards to it.
const forwarded_apis: [ApiKey; 5] = [ApiKey::CreateTopics, ApiKey::DeleteTopics, ApiKey::AlterConfigs, ApiKey::IncrementalAlterConfigs, ApiKey::ElectLeaders];

/// Whether requests of `key` are forwarded to the active controller.
pub fn forwarded(key: ApiKey) -> bool {
    forwarded_apis.contains(&key)
}

/// Whether a request of `key` reaching this node now is to be forwarded: it is a controller
/// request, it did not arrive in an envelope, and this node is not the active controller.
pub(super) fn forwards(node: &Node, key: ApiKey, enveloped: bool) -> bool {
    !enveloped && forwarded(key) && controller_handlers::active(node).is_none()
}

/// The envelope the forwarder sends: the client's frame (header and body, no size prefix) and
/// the client's address.
pub fn envelope(request: Bytes, client: IpAddr) -> EnvelopeRequest {
    let mut e = EnvelopeRequest::default();
    e.request_data = request;
    e.client_host_address = match client {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    };
    e
}

/// The client's answer inside an envelope's answer, size prefix restored; `Err` names why the
/// controller did not answer it (the forwarder then asks again).
pub fn opened(resp: EnvelopeResponse) -> Result<Bytes, String> {
    if resp.error_code != 0 {
        return Err(format!("the envelope was refused with error {:?}", crate::kafka::error(resp.error_code)));
    }
    let data = resp.response_data.ok_or("the envelope's answer carries no response")?;
    let mut out = BytesMut::with_capacity(4 + data.len());
    out.put_i32(data.len() as i32);
    out.put_slice(&data);
    Ok(out.freeze())
}

/// Serves an Envelope on the controller: the inner request is handled as if its client had
/// sent it here, and its answer sealed in the envelope's answer.
pub(super) fn serve(node: &Node, version: i16, correlation_id: i32, req: EnvelopeRequest, now: u64, attempt: Attempt, out: &mut Vec<crate::broker::Action>) -> Result<Outcome, String> {
    let inner = req.request_data;
    let key = (inner.len() >= 8).then(|| i16::from_be_bytes([inner[0], inner[1]])).and_then(|k| ApiKey::try_from(k).ok());
    if !key.is_some_and(forwarded) {
        return refuse(version, correlation_id, Code::InvalidRequest);
    }
    if controller_handlers::active(node).is_none() {
        return refuse(version, correlation_id, Code::NotController);
    }
    let client = match req.client_host_address.len() {
        4 => <[u8; 4]>::try_from(&req.client_host_address[..]).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(&req.client_host_address[..]).ok().map(IpAddr::from),
        _ => None,
    };
    Ok(match handle_inner(node, &inner, None, client, now, attempt, out, true)? {
        Outcome::Reply(reply) => Outcome::Reply(seal(version, correlation_id, reply)?),
        Outcome::Wait(waiting) => Outcome::Wait(waiting.sealed(version, correlation_id)),
        Outcome::Close(reason) => Outcome::Close(format!("forwarded request: {reason}")),
        other => Outcome::Close(format!("a forwarded request cannot be answered as {}", other.kind())),
    })
}

/// The envelope's answer carrying `reply` (a whole response frame, size prefix included).
pub(super) fn seal(version: i16, correlation_id: i32, reply: Bytes) -> Result<Bytes, String> {
    let mut r = EnvelopeResponse::default();
    r.response_data = Some(reply.slice(4..));
    encode(ApiKey::Envelope, version, correlation_id, &r)
}

fn refuse(version: i16, correlation_id: i32, code: Code) -> Result<Outcome, String> {
    let mut r = EnvelopeResponse::default();
    r.error_code = code.code();
    encode(ApiKey::Envelope, version, correlation_id, &r).map(Outcome::Reply)
}
