//! The forwarder (KIP-590): a CreateTopics, DeleteTopics or config change that reached a node
//! which is not the active controller goes to the active controller in an Envelope, and its
//! answer back to the client unchanged. `node::forward` decides what is forwarded (`protocol::envelope` wraps it) and
//! wraps it; this is the IO: find the controller, send, retry elsewhere when the one asked is
//! gone or refuses the envelope (NOT_CONTROLLER), until `forward_wait_ms_max` has passed.
//!
//! One connection per forward: these are an operator's requests, rare next to produce and
//! fetch, and a fresh connection always reaches the controller as it is now.

use super::{peers, Shared};
use crate::constants::forward_wait_ms_max;
use crate::node::Outcome;
use crate::protocol::envelope as forward;
use bytes::Bytes;
use std::time::Duration;
use tokio::time::Instant;

/// Forwards `request` (a client's frame without its size prefix, from `client`) to the active
/// controller and returns its answer, or `fallback` if no controller answered in time.
pub(super) async fn forward(shared: &Shared, request: Bytes, client: &crate::security::acl::Caller, fallback: crate::protocol::Response) -> Outcome {
    let deadline = Instant::now() + Duration::from_millis(forward_wait_ms_max);
    let envelope = forward::envelope(request, client.host, &client.principal);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::warn!("forwarding a controller request: no active controller answered within {forward_wait_ms_max} ms; answering NOT_CONTROLLER");
            return Outcome::Reply(fallback);
        }
        let asked = match peers::controller_addr(shared) {
            Ok(addr) => ask(shared, addr, &envelope, left).await,
            Err(e) => Err(e),
        };
        match asked {
            Ok(reply) => return Outcome::Relay(reply),
            Err(why) => {
                tracing::debug!("forwarding a controller request: {why}; asking again");
                // Whoever was named did not answer as the controller: ask around again.
                shared.node.set_controller_hint(None);
                peers::backoff().await;
            }
        }
    }
}

async fn ask(shared: &Shared, addr: std::net::SocketAddr, envelope: &kafka_protocol::messages::envelope_request::EnvelopeRequest, within: Duration) -> Result<Bytes, String> {
    let mut conn = peers::connect_within(shared, addr, "seedlog-forwarder", within).await.map_err(|e| format!("connecting to {addr}: {e}"))?;
    let answer = conn.send_within(envelope, within).await.map_err(|e| format!("{addr}: {e}"))?;
    forward::opened(answer).map_err(|e| format!("{addr}: {e}"))
}
