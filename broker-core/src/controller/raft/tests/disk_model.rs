//! One simulated node's disk, for the seeded cluster: the durable quorum state, snapshot and
//! log, and the IO the node handed over that has not completed. A completed action applies at
//! once; on power loss a prefix of the pending ones applies (the last write maybe torn, a prefix
//! of its entries) and the rest is lost. It models `RaftStore`: only entries that continue the
//! log densely are appended, and an installed snapshot replaces the log.

use crate::controller::raft::{Entry, Node, QuorumState, Snapshot};
use std::collections::VecDeque;

pub(super) enum Op {
    Persist(QuorumState),
    Write { truncate_to: Option<i64>, entries: Vec<Entry> },
    Install(Snapshot),
}

/// One node's slot: the node while it runs, and its disk, which outlives it.
pub(super) struct Slot {
    pub(super) node: Option<Node>,
    pub(super) incarnation: u64,
    pub(super) durable_state: QuorumState,
    /// The newest durable snapshot; `durable_log` follows it.
    pub(super) durable_snapshot: Option<Snapshot>,
    pub(super) durable_log: Vec<Entry>,
    /// Actions handed to the disk, oldest first, with their ids; each completes in turn.
    pub(super) pending: VecDeque<(u64, Op)>,
    pub(super) io_busy_until: u64,
    /// How far this incarnation applied the committed log.
    pub(super) applied: i64,
    /// The node's deadline a tick is already queued for.
    pub(super) tick_at: Option<u64>,
    /// Actions this incarnation still performs before it loses power (leader churn).
    pub(super) actions_left: Option<u32>,
}

impl Slot {
    pub(super) fn apply(&mut self, op: Op, torn_keep: Option<usize>) {
        match op {
            Op::Persist(s) => self.durable_state = s,
            Op::Write { truncate_to, entries } => {
                if let Some(t) = truncate_to {
                    let keep = self.durable_log.partition_point(|e| e.next_offset <= t);
                    self.durable_log.truncate(keep);
                }
                let n = torn_keep.unwrap_or(entries.len()).min(entries.len());
                for e in entries.into_iter().take(n) {
                    // As Log::append_replicated: only what continues the log densely.
                    if e.base_offset == self.durable_end() {
                        self.durable_log.push(e);
                    }
                }
            }
            // As RaftStore::install_snapshot: the file, then a log starting at its end.
            Op::Install(s) => {
                self.durable_snapshot = Some(s);
                self.durable_log.clear();
            }
        }
    }

    pub(super) fn durable_start(&self) -> i64 {
        self.durable_snapshot.as_ref().map_or(0, |s| s.id.end)
    }

    fn durable_end(&self) -> i64 {
        self.durable_log.last().map_or(self.durable_start(), |l| l.next_offset)
    }

    /// A snapshot was made durable: the durable log keeps the dense run from its end (an entry
    /// there that a queued truncation will remove goes too: nothing else could follow it).
    pub(super) fn snapshot_durable(&mut self, s: Snapshot) {
        let end = s.id.end;
        self.durable_snapshot = Some(s);
        match self.durable_log.iter().position(|e| e.base_offset == end) {
            Some(i) => drop(self.durable_log.drain(..i)),
            None => self.durable_log.clear(),
        }
    }
}

