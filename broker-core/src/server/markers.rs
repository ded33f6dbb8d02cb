//! The transaction coordinator's marker sender: each WriteTxnMarkers the node asks for
//! (`Action::SendMarkers`) goes to its partition leader (this node included, as Kafka's
//! coordinator sends to itself through its own listener) on a connection of its own, and what
//! the leader answered — or why nothing came — goes back to the node as
//! [`Input::MarkersAnswered`]. IO only: what is retried, and when, is `txn::markers`'.
//!
//! One connection per request: markers are a few per transaction, next to produce and fetch
//! traffic; a pooled link per broker is the obvious next step if benchmarks say so.

use super::{now_ms, peers, Shared};
use crate::client::Conn;
use crate::constants::peer_request_ms_max;
use crate::node::{Input, MarkersResult};
use crate::txn::markers::Send;
use std::time::Duration;

async fn deliver(shared: &Shared, send: &Send) -> MarkersResult {
    let (host, port) = {
        let b = shared.broker();
        let x = b.image().brokers.get(&send.broker).ok_or_else(|| format!("broker {} is not registered", send.broker))?;
        (x.host.clone(), x.port)
    };
    let addr = peers::resolve(&host, port)?;
    let within = Duration::from_millis(peer_request_ms_max);
    let mut conn = Conn::connect(addr, "seedlog-txn-markers", within).await.map_err(|e| format!("connecting to broker {} at {addr}: {e}", send.broker))?;
    let answer = conn.send_within(&crate::node::txn_handlers::marker_request(send), within).await.map_err(|e| format!("broker {} at {addr}: {e}", send.broker))?;
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
