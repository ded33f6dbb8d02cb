//! The node's side of the durability contract: which `Persist` and `WriteLog` actions the
//! shell has not yet reported synced, how much of the in-memory log is known durable, and the
//! replies held until the quorum state they depend on is durable.
//!
//! Its one invariant: nothing leaves the node claiming durability it does not have. A held
//! reply (a granted vote) is released only when every `Persist` issued before it completed;
//! `synced_end` never exceeds the prefix of the *current* in-memory log that completed writes
//! made durable (a completed write's end is clamped by any truncation queued after it).

use super::{Action, Entry, Error, Message, QuorumState, Snapshot};
use std::collections::VecDeque;

/// Something that must wait for the quorum state issued before it to be durable.
#[derive(Debug)]
pub(super) enum Held {
    Send(Message),
    /// A candidate's vote for itself in `epoch`.
    SelfVote { epoch: i32 },
}

#[derive(Debug)]
enum Pending {
    State,
    Log { truncate_to: Option<i64>, end_after: i64 },
}

#[derive(Debug)]
pub(super) struct Durability {
    next_id: u64,
    pending: VecDeque<(u64, Pending)>,
    /// The id of the newest `Persist`, if it is still pending.
    last_persist: Option<u64>,
    held: Vec<(u64, Held)>,
    synced_end: i64,
}

impl Durability {
    /// After a restart: everything read back from disk is durable.
    pub(super) fn new(synced_end: i64) -> Durability {
        Durability { next_id: 0, pending: VecDeque::new(), last_persist: None, held: Vec::new(), synced_end }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn persist(&mut self, state: QuorumState) -> Action {
        let id = self.id();
        self.pending.push_back((id, Pending::State));
        self.last_persist = Some(id);
        Action::Persist { id, state }
    }

    /// A log write leaving the in-memory log ending at `end_after`.
    pub(super) fn write(&mut self, truncate_to: Option<i64>, entries: Vec<Entry>, end_after: i64) -> Action {
        let id = self.id();
        if let Some(t) = truncate_to {
            self.synced_end = self.synced_end.min(t);
        }
        self.pending.push_back((id, Pending::Log { truncate_to, end_after }));
        Action::WriteLog { id, truncate_to, entries }
    }

    /// Installing a snapshot: the log is replaced by an empty one at the snapshot's end. Counted
    /// as a log write (the next fetch waits for it); nothing of the new log is durable before.
    pub(super) fn install(&mut self, snapshot: Snapshot) -> Action {
        let id = self.id();
        self.synced_end = self.synced_end.min(snapshot.id.end);
        self.pending.push_back((id, Pending::Log { truncate_to: None, end_after: snapshot.id.end }));
        Action::InstallSnapshot { id, snapshot }
    }

    /// `held` now if no quorum state is pending, else nothing until it is durable.
    pub(super) fn hold(&mut self, held: Held) -> Option<Held> {
        match self.last_persist {
            Some(id) => {
                self.held.push((id, held));
                None
            }
            None => Some(held),
        }
    }

    /// The shell reports the oldest pending action synced; returns what that releases.
    pub(super) fn complete(&mut self, id: u64) -> Result<Vec<Held>, Error> {
        let expected = self.pending.front().map(|(i, _)| *i);
        if expected != Some(id) {
            return Err(Error::IoOrder { got: id, expected });
        }
        let (_, done) = self.pending.pop_front().expect("checked above");
        if let Pending::Log { end_after, .. } = done {
            let later_cut = self.pending.iter().filter_map(|(_, p)| match p {
                Pending::Log { truncate_to, .. } => *truncate_to,
                Pending::State => None,
            });
            self.synced_end = later_cut.fold(end_after, i64::min);
        }
        if self.last_persist == Some(id) {
            self.last_persist = None;
        }
        let (released, kept) = std::mem::take(&mut self.held).into_iter().partition(|(after, _)| *after <= id);
        self.held = kept;
        Ok(released.into_iter().map(|(_, h)| h).collect())
    }

    /// The end of the log prefix known durable.
    pub(super) fn synced_end(&self) -> i64 {
        self.synced_end
    }

    pub(super) fn log_writes_pending(&self) -> bool {
        self.pending.iter().any(|(_, p)| matches!(p, Pending::Log { .. }))
    }
}
