//! The transaction coordinator's marker sender: each WriteTxnMarkers the node asks for
//! (`Action::SendMarkers`) goes to its partition leader (this node included, as Kafka's
//! coordinator sends to itself through its own listener) on a link of `links.rs`, and what
//! the leader answered — or why nothing came — goes back to the node as
//! [`Input::MarkersAnswered`]. IO only: what is retried, and when, is `txn::markers`'.

use super::{links, now_ms, Shared};
use crate::node::{Input, MarkersResult};
use crate::txn::markers::Send;

async fn deliver(shared: &Shared, send: &Send) -> MarkersResult {
    let answer = links::ask(shared, send.broker, "seedlog-txn-markers", &crate::node::txn_handlers::marker_request(send), None).await?;
    Ok(crate::node::txn_handlers::marker_results(send, answer))
}

/// Sends `send` in a task of its own and hands the answer back to the node (nothing, if the
/// node is stopping: the coordinator that asked is going too).
pub(super) fn spawn(shared: &Shared, send: Send) {
    let Some(shared) = shared.me.upgrade() else { return };
    tokio::spawn(async move {
        let result = deliver(&shared, &send).await;
        let actions = shared.decide(|s| s.node.input(Input::MarkersAnswered { request: send.request, result }, now_ms())).await;
        shared.perform(actions).await;
    });
}
