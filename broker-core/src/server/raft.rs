//! The Raft task of a voter (docs/controller.md, "The shell"): ticks the metadata quorum at its
//! next deadline (the Raft node's timers, then the active controller's session fencing), and
//! sends what the quorum's outbox holds to the other voters. Messages arriving from them come in
//! through the ordinary listener (`protocol`, `controller::raft::wire`) and are fed to the
//! quorum there; so the Raft task only ever writes.
//!
//! One sender task per other voter owns its connection (to the voter's address in
//! `controller.quorum.voters`) and writes messages in the order the quorum produced them. A
//! message that cannot be sent (no connection, a full queue) is dropped: Raft retries on its
//! timers, as it would after a lossy network. IO only; every decision is the quorum's.

use super::{now_ms, Shared};
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
        tasks.push(tokio::spawn(sender(id, addr, rx)));
    }
    tasks.push(tokio::spawn(run(shared, queues)));
    tasks
}

async fn run(shared: Arc<Shared>, queues: BTreeMap<i32, mpsc::Sender<Message>>) {
    loop {
        let wait = {
            let deadline = shared.node.controller().and_then(|q| q.next_deadline());
            deadline.map_or(tick_interval_ms, |d| d.saturating_sub(now_ms()).clamp(1, tick_interval_ms))
        };
        tokio::select! {
            // biased: tokio picks branches with an unseeded RNG otherwise,
            // which breaks replay under madsim.
            biased;
            _ = shared.raft_wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
        }
        let (messages, moved) = shared
            .decide_quorum(|s| {
                let Some(mut q) = s.node.controller() else { return (Vec::new(), false) };
                let before = (q.committed_end(), q.end_offset(), q.active_epoch());
                if let Err(e) = q.tick(now_ms()) {
                    tracing::error!("controller: {e}");
                }
                let moved = before != (q.committed_end(), q.end_offset(), q.active_epoch());
                if let Some(epoch) = q.active_epoch() {
                    let node = q.controller().config().node_id;
                    q.controller().config().observer.see(crate::observe::Observation::ActiveController { node, epoch, now: now_ms() });
                }
                (q.outbox(), moved)
            })
            .await;
        for m in messages {
            // A full queue or a stopped sender: the message is lost, as on a lossy link.
            if let Some(queue) = queues.get(&m.to) {
                let _ = queue.try_send(m);
            }
        }
        if moved {
            shared.metadata_committed.notify_waiters();
            shared.changed();
        }
    }
}

/// Writes the messages for voter `id` on one connection to `addr`, reconnecting after a failure.
async fn sender(id: i32, addr: String, mut queue: mpsc::Receiver<Message>) {
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
            match Conn::connect(target, "raft", Duration::from_millis(peer_request_ms_max)).await {
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
