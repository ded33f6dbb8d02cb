//! Catching up from a snapshot, as KRaft does: a follower whose fetch offset is below the
//! leader's log start is answered with the leader's snapshot id instead of entries; it then asks
//! for the snapshot in chunks of `quorum_snapshot_chunk_bytes` (FetchSnapshot), one in flight,
//! retried after the request timeout, and once it holds every byte it installs it: the shell
//! writes the snapshot durably and replaces the log with an empty one starting at its end.
//!
//! Its one invariant: a follower installs only a whole snapshot of the leader it follows in its
//! current epoch, ending above its own log (a snapshot holds only committed entries, so its end
//! is also a safe high watermark). Never IO, never a clock.

use super::node::{Node, Role};
use super::{Action, Body, Entries, Message, NodeId, Snapshot, SnapshotId};
use crate::constants::{metadata_snapshot_bytes_max, quorum_snapshot_chunk_bytes};
use bytes::Bytes;

/// A snapshot a follower is fetching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installing {
    id: SnapshotId,
    bytes: Vec<u8>,
}

impl Installing {
    pub(super) fn new(id: SnapshotId) -> Installing {
        Installing { id, bytes: Vec::new() }
    }

    /// The FetchSnapshot asking for what is missing.
    pub(super) fn request(&self, epoch: i32) -> Body {
        Body::FetchSnapshot { epoch, end: self.id.end, position: self.bytes.len() as u64 }
    }

    pub(super) fn position(&self) -> i64 {
        self.bytes.len() as i64
    }
}

impl Node {
    /// The leader answers a chunk of its newest snapshot; without the asked snapshot (it took a
    /// newer one) or when not leading, an answer naming no snapshot, and the follower fetches
    /// again to learn which snapshot is current.
    pub(super) fn on_fetch_snapshot(&mut self, now: u64, from: NodeId, epoch: i32, end: i64, position: u64, out: &mut Vec<Action>) {
        let (my_epoch, leader) = (self.state.epoch, self.leader());
        let mut reply = Body::FetchSnapshotResponse { epoch: my_epoch, leader, snapshot: None, position: 0, size: 0, chunk: Bytes::new() };
        if let (Role::Leader(lead), Some(snap), true) = (&mut self.role, &self.snapshot, epoch == my_epoch) {
            if self.config.is_voter(from) {
                lead.fetched(from, now);
            }
            let size = snap.bytes.len() as u64;
            if snap.id.end == end && position <= size {
                let to = (position as usize + quorum_snapshot_chunk_bytes).min(snap.bytes.len());
                let chunk = snap.bytes.slice(position as usize..to);
                reply = Body::FetchSnapshotResponse { epoch: my_epoch, leader, snapshot: Some(snap.id), position, size, chunk };
            }
        }
        out.push(Action::Send(Message { from: self.id(), to: from, body: reply }));
    }

    /// A chunk of the leader's snapshot; the last one installs it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_snapshot_chunk(&mut self, now: u64, from: NodeId, epoch: i32, leader: Option<NodeId>, snapshot: Option<SnapshotId>, position: u64, size: u64, chunk: Bytes, out: &mut Vec<Action>) {
        let log_end = self.log.end();
        let Role::Follower(f) = &mut self.role else { return };
        if epoch != self.state.epoch || leader != Some(from) || f.leader != from {
            return;
        }
        f.heard_from(from, now);
        let Some(inst) = &mut f.installing else { return };
        if snapshot != Some(inst.id) {
            // The leader replaced its snapshot: fetch again, which names the current one. (A
            // chunk of another snapshot cannot be taken for this one's: ids are checked.)
            f.installing = None;
            f.fetch_sent = None;
            return;
        }
        if position != inst.bytes.len() as u64 || f.fetch_sent.map(|(_, p)| p) != Some(inst.position()) {
            return; // late
        }
        f.fetch_sent = None;
        let total = position + chunk.len() as u64;
        if size > metadata_snapshot_bytes_max || total > size || (chunk.is_empty() && total < size) {
            f.installing = None; // cannot be from a sound leader; fetch again from scratch
            return;
        }
        inst.bytes.extend_from_slice(&chunk);
        if total < size {
            return;
        }
        let done = f.installing.take().expect("matched above");
        if done.id.end <= log_end {
            return;
        }
        let snapshot = Snapshot { id: done.id, bytes: done.bytes.into() };
        self.log = Entries::empty_at(Some(snapshot.id));
        self.snapshot = Some(snapshot.clone());
        out.push(self.io.install(snapshot));
        self.raise_high_watermark(done.id.end, out);
    }
}
