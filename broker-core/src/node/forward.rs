//! Forwarding of controller requests (KIP-590), the node's half. A CreateTopics, DeleteTopics,
//! AlterConfigs, IncrementalAlterConfigs, ElectLeaders, ACL or credential change, or a
//! DescribeQuorum that reaches a node which is not the active controller is not refused: the shell forwards the client's frame to the active
//! controller inside an Envelope (API 58) and relays the answer. This module decides which
//! requests are forwarded now and serves envelopes on the controller; the envelopes themselves
//! are `protocol::envelope`'s, the sending and retrying `server/forward.rs`'s.
//!
//! Rules:
//! - a request that arrived in an envelope is never forwarded again (no forwarding loops): a
//!   node that is not the active controller refuses the envelope itself with NOT_CONTROLLER,
//!   and the forwarder asks again elsewhere;
//! - an envelope may carry only the forwarded APIs (INVALID_REQUEST otherwise);
//! - the inner request keeps the client's correlation id, so its answer is relayed unchanged;
//! - a forward that finds no controller within `forward_wait_ms_max` answers the client what
//!   this node would have answered alone: NOT_CONTROLLER for each item.

use super::{controller_handlers, handle_inner, prepare, Attempt, Node, Outcome};
use crate::protocol::request::decode_request;
use crate::kafka::Code;
use crate::protocol::envelope::{caller, forwarded, refused, seal};
use kafka_protocol::messages::envelope_request::EnvelopeRequest;
use kafka_protocol::messages::ApiKey;

/// Whether a request of `key` reaching this node now is to be forwarded: it is a controller
/// request, it did not arrive in an envelope, and this node is not the active controller.
pub(super) fn forwards(node: &Node, key: ApiKey, enveloped: bool) -> bool {
    !enveloped && forwarded(key) && controller_handlers::active(node).is_none()
}

/// Serves an Envelope on the controller: the inner request is handled as if its client had
/// sent it here, and its answer sealed in the envelope's answer.
pub(super) fn serve(node: &Node, version: i16, correlation_id: i32, req: EnvelopeRequest, now: u64, attempt: Attempt, out: &mut Vec<crate::broker::Action>) -> Result<Outcome, String> {
    let key = crate::protocol::leading(&req.request_data).and_then(|l| ApiKey::try_from(l.key).ok());
    if !key.is_some_and(forwarded) {
        return Ok(Outcome::Reply(refused(version, correlation_id, Code::InvalidRequest)));
    }
    if controller_handlers::active(node).is_none() {
        return Ok(Outcome::Reply(refused(version, correlation_id, Code::NotController)));
    }
    let client = caller(&req);
    let legacy = node.broker().config().legacy_api_versions;
    let inner = prepare(decode_request(&req.request_data, legacy)?);
    Ok(match handle_inner(node, inner, client.as_ref(), now, attempt, out, true)? {
        Outcome::Reply(reply) => Outcome::Reply(seal(version, correlation_id, &reply)?),
        Outcome::Wait(waiting) => Outcome::Wait(waiting.sealed(version, correlation_id)),
        Outcome::Close(reason) => Outcome::Close(format!("forwarded request: {reason}")),
        other => Outcome::Close(format!("a forwarded request cannot be answered as {}", other.kind())),
    })
}
