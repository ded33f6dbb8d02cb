//! The share-partition leader's state requests: each ReadShareGroupState or
//! WriteShareGroupState the node asks for (`Action::ShareState`) goes to its group's
//! coordinator (this node included) on a link of `links.rs`, and what came back — or why
//! nothing did, as COORDINATOR_NOT_AVAILABLE — goes back to the node as
//! [`Input::ShareStateAnswered`]. IO only: what is sent again, and when, is `share::leader`'s.

use super::{links, now_ms, Shared};
use crate::group::share_state::Stored;
use crate::kafka::Code;
use crate::node::share_handlers::{read_result, state_request, write_result, StateRequest};
use crate::node::Input;
use crate::share::leader::Send;

async fn deliver(shared: &Shared, send: &Send) -> Result<Option<Stored>, Code> {
    let purpose = "seedlog-share-state";
    let answer = match state_request(send) {
        StateRequest::Read(req) => links::ask(shared, send.coordinator, purpose, &req, None).await.map(read_result),
        StateRequest::Write(req) => links::ask(shared, send.coordinator, purpose, &req, None).await.map(write_result),
    };
    answer.unwrap_or_else(|why| {
        tracing::debug!("share state request to node {}: {why}", send.coordinator);
        Err(Code::CoordinatorNotAvailable)
    })
}

/// Sends `send` in a task of its own and hands the answer back to the node.
pub(super) fn spawn(shared: &Shared, send: Send) {
    let Some(shared) = shared.me.upgrade() else { return };
    tokio::spawn(async move {
        let result = deliver(&shared, &send).await;
        let actions = shared.decide(|s| s.node.input(Input::ShareStateAnswered { request: send.request, result }, now_ms())).await;
        shared.perform(actions).await;
    });
}
