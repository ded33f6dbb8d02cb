//! What the simulator observes of the metadata quorum, as the running voters see it:
//! - the active metadata controller (the node and its quorum epoch), which the fault injector
//!   reads to resolve a fault target `controller` to the broker that is the active controller
//!   when the fault starts;
//! - the Raft history the quorum checkers read (`sim/src/checkers/raft_*.rs`): each voter's
//!   durable term and vote as it synced and restored them, its elections (the epoch and which epoch each entry of its log has) and the entries it
//!   applied as committed, and when an active controller reported itself.
//!
//! One simulation runs on one thread, so a thread-local is per run; the harness clears it at
//! the start of each run and takes the Raft history at its end.
//!
//! - the ISR's promise as the brokers and the active controller report it ([`isr`]);
//! - leadership as committed: each change of leader, and leaders whose log failed and whether
//!   they handed their partitions over ([`leadership`]);
//! - each leader's last stable offset, which must not go back within a leader epoch
//!   ([`stable`]).
//!
//! Observation only: nothing in the broker reads it back, so it cannot change what a run does.
//! Nothing in broker-core calls it either: the simulator builds every node with an observer
//! (`crate::observe`, wired in `sim/src/cluster/topology.rs`) that forwards here, and a tidy
//! test keeps it that way. In the real build every function is empty.

mod isr;
mod leadership;
mod stable;

/// (topic id, partition): one incarnation of a partition, as the probes key what they watch.
type Part = ([u8; 16], i32);

use crate::controller::raft::{Entries, Entry};
pub use leadership::{Election, FailedLeader, Fence};
pub use isr::IsrBreach;
pub use stable::LsoRegression;

/// A voter became the Raft leader of `epoch`: its log then (offsets below `log_start` are in
/// its snapshot, so committed) and the epoch of each range of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elected {
    pub node: i32,
    pub epoch: i32,
    pub log_start: i64,
    pub log_end: i64,
    /// (epoch, first offset) of each run of entries, ascending.
    pub epoch_starts: Vec<(i32, i64)>,
}

/// A voter applied the entry at `offset` as committed, while in `node_epoch` (as its leader,
/// or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub node: i32,
    pub node_epoch: i32,
    pub leader: bool,
    pub offset: i64,
    pub entry_epoch: i32,
    /// CRC32C of the entry's whole batch but its base offset: equal content, equal digest.
    pub digest: u32,
}

/// A voter's durable Raft state: synced by its store (`restored`: false), or read back when its
/// quorum opened (`restored`: true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterState {
    pub node: i32,
    pub restored: bool,
    pub epoch: i32,
    pub voted_for: Option<i32>,
}

/// What the voters of one run reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaftHistory {
    /// Every quorum-state a voter persisted or restored, in order.
    pub states: Vec<VoterState>,
    pub elected: Vec<Elected>,
    pub committed: Vec<Committed>,
    /// (ms, node, epoch): an active controller's report, at most one per node, epoch and
    /// simulated second (the Raft task reports every tick).
    pub active: Vec<(u64, i32, i32)>,
}

#[cfg(madsim)]
mod registry {
    use std::cell::{Cell, RefCell};
    thread_local! {
        /// (quorum epoch, node id) of the newest active controller reported.
        pub static ACTIVE: Cell<Option<(i32, i32)>> = const { Cell::new(None) };
        pub static RAFT: RefCell<super::RaftHistory> = RefCell::new(super::RaftHistory::default());
        pub static ISR: RefCell<super::isr::watch::Watch> = RefCell::new(Default::default());
        pub static LEADERSHIP: RefCell<super::leadership::watch::Watch> = RefCell::new(Default::default());
        pub static STABLE: RefCell<super::stable::watch::Watch> = RefCell::new(Default::default());
    }
}

/// Forgets what an earlier run reported.
#[cfg(madsim)]
pub fn reset() {
    registry::ACTIVE.with(|a| a.set(None));
    registry::RAFT.with(|r| *r.borrow_mut() = RaftHistory::default());
    registry::ISR.with(|w| *w.borrow_mut() = Default::default());
    registry::LEADERSHIP.with(|w| *w.borrow_mut() = Default::default());
    registry::STABLE.with(|w| *w.borrow_mut() = Default::default());
}

/// Node `node`'s broker process started (again): what it reported before is forgotten where a
/// restart may legitimately reset it.
#[cfg(madsim)]
pub fn node_started(node: i32) {
    registry::STABLE.with(|w| w.borrow_mut().started(node));
}

/// Leader `node` of the partition, in `leader_epoch`, reports its last stable offset `lso`.
#[cfg(madsim)]
pub fn leader_stable(node: i32, topic: &str, topic_id: [u8; 16], p: i32, leader_epoch: i32, lso: i64, now: u64) {
    registry::STABLE.with(|w| w.borrow_mut().stable(node, topic, (topic_id, p), leader_epoch, lso, now));
}

/// The moments a leader moved its last stable offset back, taken.
#[cfg(madsim)]
pub fn take_lso_regressions() -> Vec<LsoRegression> {
    registry::STABLE.with(|w| std::mem::take(&mut w.borrow_mut().regressions))
}

/// Node `node`'s replica of `topic` (id `topic_id`) partition `p` now ends at `leo` (opened,
/// appended, truncated), or is closed or failed (None).
#[cfg(madsim)]
pub fn replica_log_end(node: i32, topic: &str, topic_id: [u8; 16], p: i32, leo: Option<i64>, now: u64) {
    registry::ISR.with(|w| w.borrow_mut().log_end(node, topic, (topic_id, p), leo, now));
    if leo.is_none() {
        registry::STABLE.with(|w| w.borrow_mut().closed(node, (topic_id, p)));
    }
    if leo.is_some() {
        registry::LEADERSHIP.with(|w| w.borrow_mut().log_open(node, (topic_id, p), now));
    }
}

/// Leader `node` moved the partition's high watermark to `hw`, with an ISR (the maximal one
/// it computes the mark over) smaller than `min.insync.replicas` or not.
#[cfg(madsim)]
pub fn leader_high_watermark(node: i32, topic: &str, topic_id: [u8; 16], p: i32, hw: i64, below_min_isr: bool, now: u64) {
    registry::ISR.with(|w| w.borrow_mut().high_watermark(node, topic, (topic_id, p), hw, below_min_isr, now));
}

/// The active controller applied the Partition record at metadata `offset`, with `leader` and
/// `isr`.
#[cfg(madsim)]
pub fn partition_committed(topic: &str, topic_id: [u8; 16], p: i32, offset: i64, leader: i32, isr: &[i32], now: u64) {
    registry::ISR.with(|w| w.borrow_mut().isr(topic, (topic_id, p), offset, isr, now));
    registry::LEADERSHIP.with(|w| w.borrow_mut().leader_committed(topic, (topic_id, p), offset, leader, now));
}

/// Leader `node` found its log of the partition failed (a write or sync refused) and closed it.
#[cfg(madsim)]
pub fn leader_log_failed(node: i32, topic: &str, topic_id: [u8; 16], p: i32, now: u64) {
    registry::LEADERSHIP.with(|w| w.borrow_mut().log_failed(node, topic, (topic_id, p), now));
}

/// A voter applied the FenceBroker record for `broker` at metadata `offset` as committed.
#[cfg(madsim)]
pub fn broker_fenced(broker: i32, offset: i64, now: u64) {
    registry::LEADERSHIP.with(|w| w.borrow_mut().broker_fenced(broker, offset, now));
}

/// The failed leaders, the elections and the fences of this run, taken.
#[cfg(madsim)]
pub fn take_leadership() -> (Vec<FailedLeader>, Vec<Election>, Vec<Fence>) {
    registry::LEADERSHIP.with(|w| {
        let mut w = w.borrow_mut();
        (std::mem::take(&mut w.failed), std::mem::take(&mut w.elections), std::mem::take(&mut w.fences))
    })
}

/// The moments this run broke the ISR's promise, taken.
#[cfg(madsim)]
pub fn take_isr_breaches() -> Vec<IsrBreach> {
    registry::ISR.with(|w| std::mem::take(&mut w.borrow_mut().breaches))
}

/// Node `node` is the active controller in quorum epoch `epoch` at `now_ms` (a newer epoch
/// replaces it).
#[cfg(madsim)]
pub fn active_controller(node: i32, epoch: i32, now_ms: u64) {
    registry::ACTIVE.with(|a| {
        if a.get().is_none_or(|(e, _)| epoch >= e) {
            a.set(Some((epoch, node)));
        }
    });
    registry::RAFT.with(|r| {
        let active = &mut r.borrow_mut().active;
        let second = |ms: u64| ms / 1000;
        if !active.iter().rev().take(16).any(|&(t, n, e)| n == node && e == epoch && second(t) == second(now_ms)) {
            active.push((now_ms, node, epoch));
        }
    });
}

/// Voter `node`'s store made `state` durable (`restored`: false) or read it back at open.
#[cfg(madsim)]
pub fn raft_state(node: i32, restored: bool, state: &crate::controller::raft::QuorumState) {
    let s = VoterState { node, restored, epoch: state.epoch, voted_for: state.voted_for };
    registry::RAFT.with(|r| r.borrow_mut().states.push(s));
}

/// Voter `node` became leader of `epoch` with `log`.
#[cfg(madsim)]
pub fn raft_elected(node: i32, epoch: i32, log: &Entries) {
    let mut epoch_starts: Vec<(i32, i64)> = Vec::new();
    let mut log_start = log.end();
    for e in log.iter() {
        log_start = log_start.min(e.base_offset);
        if epoch_starts.last().is_none_or(|&(ep, _)| ep != e.epoch) {
            epoch_starts.push((e.epoch, e.base_offset));
        }
    }
    let elected = Elected { node, epoch, log_start, log_end: log.end(), epoch_starts };
    registry::RAFT.with(|r| r.borrow_mut().elected.push(elected));
}

/// Voter `node`, in `node_epoch` (its leader or not), applied `entry` as committed.
#[cfg(madsim)]
pub fn raft_committed(node: i32, node_epoch: i32, leader: bool, entry: &Entry) {
    // The base offset is the batch's first 8 bytes; the rest is the entry as written.
    let digest = crc32c::crc32c(entry.batch.get(8..).unwrap_or_default());
    let c = Committed { node, node_epoch, leader, offset: entry.base_offset, entry_epoch: entry.epoch, digest };
    registry::RAFT.with(|r| r.borrow_mut().committed.push(c));
}

/// Everything the voters reported in this run, taken.
#[cfg(madsim)]
pub fn take_raft_history() -> RaftHistory {
    registry::RAFT.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// The node of the newest active controller reported in this run.
#[cfg(madsim)]
pub fn current_controller() -> Option<i32> {
    registry::ACTIVE.with(|a| a.get().map(|(_, node)| node))
}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn replica_log_end(_node: i32, _topic: &str, _topic_id: [u8; 16], _p: i32, _leo: Option<i64>, _now: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn leader_high_watermark(_node: i32, _topic: &str, _topic_id: [u8; 16], _p: i32, _hw: i64, _below_min_isr: bool, _now: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn partition_committed(_topic: &str, _topic_id: [u8; 16], _p: i32, _offset: i64, _leader: i32, _isr: &[i32], _now: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn broker_fenced(_broker: i32, _offset: i64, _now: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn leader_log_failed(_node: i32, _topic: &str, _topic_id: [u8; 16], _p: i32, _now: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn active_controller(_node: i32, _epoch: i32, _now_ms: u64) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn raft_state(_node: i32, _restored: bool, _state: &crate::controller::raft::QuorumState) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn raft_elected(_node: i32, _epoch: i32, _log: &Entries) {}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn raft_committed(_node: i32, _node_epoch: i32, _leader: bool, _entry: &Entry) {}
