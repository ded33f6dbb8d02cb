//! The share-partition leader's state requests: each ReadShareGroupState or
//! WriteShareGroupState the node asks for (`Action::ShareState`) goes to its group's
//! coordinator (this node included) on a link of `links.rs`, and what came back — or why
//! nothing did, as COORDINATOR_NOT_AVAILABLE — goes back to the node as
//! [`Input::ShareStateAnswered`]; so does its ShareGroupDescribe asking which members a group
//! has ([`Input::ShareMembersAnswered`]). IO only: what is sent again, and when, is `share::leader`'s.

use super::{links, now_ms, Shared};
use crate::group::share_state::Stored;
use crate::kafka::Code;
use crate::node::share_handlers::{members_result, read_result, state_request, write_result, StateRequest};
use std::collections::BTreeSet;
use crate::node::Input;
use crate::share::leader::Send;

/// What came back, as the node takes it.
enum Answered {
    State(Result<Option<Stored>, Code>),
    Members(Result<BTreeSet<String>, Code>),
}

async fn deliver(shared: &Shared, send: &Send) -> Answered {
    let purpose = "seedlog-share-state";
    let lost = |why: String| {
        tracing::debug!("share state request to node {}: {why}", send.coordinator);
        Code::CoordinatorNotAvailable
    };
    match state_request(send) {
        StateRequest::Read(req) => Answered::State(links::ask(shared, send.coordinator, purpose, &req, None).await.map_err(lost).and_then(read_result)),
        StateRequest::Write(req) => Answered::State(links::ask(shared, send.coordinator, purpose, &req, None).await.map_err(lost).and_then(write_result)),
        // v1: the version Seedlog serves (and confluent-kafka's ShareConsumer sends).
        StateRequest::Members(req) => Answered::Members(links::ask(shared, send.coordinator, purpose, &req, Some(1)).await.map_err(lost).and_then(members_result)),
    }
}

/// Sends `send` in a task of its own and hands the answer back to the node.
pub(super) fn spawn(shared: &Shared, send: Send) {
    let Some(shared) = shared.me.upgrade() else { return };
    tokio::spawn(async move {
        let input = match deliver(&shared, &send).await {
            Answered::State(result) => Input::ShareStateAnswered { request: send.request, result },
            Answered::Members(result) => Input::ShareMembersAnswered { request: send.request, result },
        };
        let actions = shared.decide(|s| s.node.input(input, now_ms())).await;
        shared.perform(actions).await;
    });
}
