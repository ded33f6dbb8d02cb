//! What a node tells an observer as its decisions happen: where replica logs end, leaders'
//! high watermarks, last stable offsets and failed logs, the metadata quorum's durable state, elections and
//! commits. The simulator's checkers are the observer (it hands them to `simprobe`); a real
//! broker has none, and every call site costs one `Option` test.
//!
//! The observer is chosen when the node is built (`BrokerConfig::observer`, carried into the
//! controller's config), so no decision module reaches for a global: a decision says what
//! happened, the observer decides what to keep. Observations are made at the decision's own
//! instant, not as actions performed after it: the watches correlate reports of different
//! nodes in the order the decisions happened, and an action would reach them only after the
//! decision's disk latency was slept off. Observing must never change what a run does.

use crate::controller::raft::{Entries, Entry, QuorumState};
use std::sync::Arc;

/// One thing a decision made happen. Times are the decision's `now`.
#[derive(Debug)]
pub enum Observation<'a> {
    /// Node `node`'s replica of a partition now ends at `log_end` (opened, appended,
    /// truncated), or was closed or failed (None).
    ReplicaLogEnd { node: i32, topic: &'a str, topic_id: [u8; 16], partition: i32, log_end: Option<i64>, now: u64 },
    /// As the partition's leader in `leader_epoch`, node `node`'s high watermark and last stable
    /// offset, and whether the ISR it counts is below min.insync.replicas.
    LeaderHighWatermark { node: i32, topic: &'a str, topic_id: [u8; 16], partition: i32, leader_epoch: i32, high_watermark: i64, last_stable_offset: i64, below_min_isr: bool, now: u64 },
    /// A partition led by `node` went offline with its log.
    LeaderLogFailed { node: i32, topic: &'a str, topic_id: [u8; 16], partition: i32, now: u64 },
    /// A voter applied a committed partition record at metadata offset `offset`.
    PartitionCommitted { topic: &'a str, topic_id: [u8; 16], partition: i32, offset: i64, leader: i32, isr: &'a [i32], now: u64 },
    /// A voter applied a committed FenceBroker record.
    BrokerFenced { broker: i32, offset: i64, now: u64 },
    /// A voter's durable Raft state: synced by its store, or read back at open (`restored`).
    RaftState { node: i32, restored: bool, state: &'a QuorumState },
    /// A voter became the Raft leader of `epoch`, with this log.
    RaftElected { node: i32, epoch: i32, log: &'a Entries },
    /// A voter applied `entry` as committed while in `node_epoch`.
    RaftCommitted { node: i32, node_epoch: i32, leader: bool, entry: &'a Entry },
    /// Node `node` is the active controller of quorum epoch `epoch`.
    ActiveController { node: i32, epoch: i32, now: u64 },
}

/// Receives every observation of one node.
#[derive(Clone, Default)]
pub struct Observer(Option<Arc<dyn Fn(&Observation<'_>) + Send + Sync>>);

impl Observer {
    pub fn new(f: impl Fn(&Observation<'_>) + Send + Sync + 'static) -> Observer {
        Observer(Some(Arc::new(f)))
    }

    /// Tells the observer, if there is one.
    pub fn see(&self, o: Observation<'_>) {
        if let Some(f) = &self.0 {
            f(&o);
        }
    }

    /// Whether anyone is watching (to skip building an observation that costs something).
    pub fn watching(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.watching() { "Observer(on)" } else { "Observer(none)" })
    }
}
