//! The Raft task of a voter (docs/controller.md, "The shell"): ticks the metadata quorum at its
//! next deadline (the Raft node's timers, then the active controller's session fencing,
//! `node::QuorumInput::Tick`), and queues the messages any quorum decision asks to send
//! (`Action::Raft`) for the other voters. Messages arriving from them come in through the
//! ordinary listener (`protocol`, `controller::raft::wire`) and are fed to the quorum there
//! (`node::QuorumInput::Message`); so the Raft task only ever writes.
//!
//! One sender task per other voter owns its connection (to the voter's address in
//! `controller.quorum.voters`) and writes messages in the order the quorum produced them. A
//! message that cannot be sent (no connection, a full queue) is dropped: Raft retries on its
//! timers, as it would after a lossy network. IO only; every decision is the quorum's.

use super::{now_ms, Shared};
use crate::node::{Input, QuorumInput};
use crate::client::Conn;
use crate::constants::{peer_backoff_ms, peer_request_ms_max, quorum_peer_queue_max, tick_interval_ms};
use crate::controller::raft::{wire, Message};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Starts the Raft task and its senders on a voter; nothing on a node that is not one.
pub(super) fn spawn(shared: Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    if shared.node.controller().is_none() {
        return Vec::new();
    }
    let (me, voters) = {
        let b = shared.broker();
        (b.config().node_id, b.config().voters.clone())
    };
    let mut tasks = Vec::new();
    let mut queues = BTreeMap::new();
    for (id, addr) in voters.into_iter().filter(|(id, _)| *id != me) {
        let (tx, rx) = mpsc::channel(quorum_peer_queue_max);
        queues.insert(id, tx);
        tasks.push(tokio::spawn(sender(shared.clone(), id, addr, rx)));
    }
    // Set once, here, before anything can ask the quorum for a message.
    let _ = shared.raft_queues.set(queues);
    tasks.push(tokio::spawn(run(shared)));
    tasks
}

/// Ticks the quorum at its next deadline, or when woken; what it asks for (messages to send,
/// lines, the metadata moved) is performed like any decision's actions.
async fn run(shared: Arc<Shared>) {
    loop {
        let wait = {
            // From what the last quorum decision published: the quorum's lock may be held
            // across a metadata log sync, and this task must not block a runtime thread on it.
            let deadline = shared.node.quorum_view().next_deadline;
            deadline.map_or(tick_interval_ms, |d| d.saturating_sub(now_ms()).clamp(1, tick_interval_ms))
        };
        tokio::select! {
            // biased: tokio picks branches with an unseeded RNG otherwise,
            // which breaks replay under madsim.
            biased;
            _ = shared.raft_wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
        }
        let actions = shared
            .decide_quorum(|s| {
                let mut actions = s.node.input(Input::Quorum(QuorumInput::Tick), now_ms());
                s.queue_raft(&mut actions);
                actions
            })
            .await;
        shared.perform(actions).await;
    }
}

/// Queues `m` on its voter's connection. A full queue or a stopped sender: the message is
/// lost, as on a lossy link.
pub(super) fn queue(shared: &Shared, m: Message) {
    if let Some(queue) = shared.raft_queues.get().and_then(|queues| queues.get(&m.to)) {
        let _ = queue.try_send(m);
    }
}

/// Writes the messages for voter `id` on one connection to `addr`, reconnecting after a failure.
async fn sender(shared: Arc<Shared>, id: i32, addr: String, mut queue: mpsc::Receiver<Message>) {
    let mut conn: Option<Conn> = None;
    while let Some(first) = queue.recv().await {
        if conn.is_none() {
            let target = match super::peers::resolve_addr(&addr) {
                Ok(a) => a,
                Err(e) => {
                    tracing::error!("raft sender to voter {id}: {e}");
                    tokio::time::sleep(Duration::from_millis(peer_backoff_ms)).await;
                    continue;
                }
            };
            match super::peers::connect_within(&shared, target, "raft", Duration::from_millis(peer_request_ms_max)).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tracing::debug!("raft sender to voter {id} at {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(peer_backoff_ms)).await;
                    continue;
                }
            }
        }
        // Whatever queued up meanwhile goes in the same write.
        let mut frames = wire::encode_frame(&first).to_vec();
        while let Ok(m) = queue.try_recv() {
            frames.extend_from_slice(&wire::encode_frame(&m));
        }
        let Some(c) = conn.as_mut() else { continue };
        if let Err(e) = c.send_frame(&frames).await {
            tracing::debug!("raft sender to voter {id} at {addr}: {e}; reconnecting");
            conn = None;
        }
    }
}
