//! Invariant checkers: one property per module, one signature —
//! `check(&History, &mut Vec<Violation>)` — and this table naming each and where it comes from.
//!
//! | checker | property | source |
//! |---|---|---|
//! | `acknowledged_durable` | every acknowledged (acks ≥ 1) write is in the final log at its offset with its bytes | DESIGN invariant 1; Kafka's acks contract |
//! | `offsets_dense` | the final log's offsets run without gaps | DESIGN invariant 3 |
//! | `read_above_hw` | no consumer receives a record at or above the high watermark it was served with | DESIGN invariant 3 |
//! | `lost_write` | an acknowledged write is seen by consumers that read past its offset | Jepsen kafka: lost-write |
//! | `duplicate` | a write appears at most once in the final log | Jepsen kafka: duplicate (idempotence) |
//! | `inconsistent_offsets` | an offset always holds the same value, in every read | Jepsen kafka: inconsistent-offsets |
//! | `nonmonotonic_poll` | within a consumer session, offsets of a partition increase | Jepsen kafka: nonmonotonic-poll |
//! | `poll_skip` | within a consumer session (assign mode), no offset is skipped | Jepsen kafka: poll-skip |
//! | `liveness` | after healing, every partition can be read in full | DESIGN invariant 7 |
//! | `committed_consistent` | below the final read's high watermark, every replica holding an offset holds the same value | DESIGN invariant 2 |
//! | `write_liveness` | from half a healing phase after the last fault was undone, each producer's writes to each partition include one that succeeds | DESIGN invariant 7 |
//! | `definite_failure` | a write refused with a definite error is not in the final log | Jepsen: a failed op must not take effect |
//! | `refused_retry` | an idempotent retry is not refused for its sequence number, by a broker past that sequence, when an earlier attempt of it is in the final log | Kafka's idempotent producer: five batches in flight, five remembered (ProducerStateManager); issue 26 |
//! | `dirty_read` | every value a consumer read is in the final log (or its loss is allowed) | Jepsen kafka: lost reads / G1a-style aborted reads |
//! | `replica_readable` | every replica's log opens and reads at the end | DESIGN invariant 2 (a replica that cannot open cannot agree) |
//! | `group_owners` | no partition owned by two members in one generation, nor by two live members at one moment | Kafka's group contract; KIP-429 |
//! | `group_commits` | a group's committed offsets never move back, survive what acks=all survives, and stay within the log; no commit of a generation the group had left is acknowledged | Kafka's OffsetCommit contract; generation fencing |
//! | `group_delivery` | a member starts a partition at its committed offset (never past, never below an acknowledged commit unless a commit of unknown outcome holds that offset: last writer wins); every surviving acknowledged record is delivered | at-least-once consumption |
//! | `group_liveness` | after healing every partition is owned and the group stops rebalancing | DESIGN invariant 7; VOPR's liveness phase |
//! | `share_delivery` | a share group's record: delivery counts only go up and stay within the limit; never handed out again once its acceptance or rejection was taken, nor taken twice; after healing every surviving record was handed out and each ended (accepted, rejected, or archived at the limit) | KIP-932's delivery guarantees |
//! | `leader_epochs` | at most one broker becomes leader of a partition per leader epoch, and a broker's leader epochs of a partition never go back | DESIGN invariant 3; KIP-101 leader epochs; issue 10 item 5 |
//! | `raft_votes` | a voter votes for one candidate per epoch, and restarts with the epoch and vote its store synced, never older | Raft: persistent currentTerm and votedFor; KRaft's quorum-state |
//! | `raft_leaders` | at most one voter becomes Raft leader of the metadata quorum per epoch | Raft: Election Safety; issue 10 item 5 |
//! | `raft_log` | every voter that applies an entry of the metadata log as committed applies the same entry at that offset | Raft: Log Matching, State Machine Safety |
//! | `raft_completeness` | an entry committed by the leader of epoch T is in the log of every leader of a later epoch | Raft: Leader Completeness |
//! | `metadata_liveness` | within half the healing phase some voter is the active controller | DESIGN invariant 7; issue 10 item 5 |
//! | `isr_complete` | every replica in a committed ISR holds every record below the highest high watermark reached under min ISR, at every moment of the run | Kafka's ISR definition; KIP-279, KIP-966; issue 11 item 2 |
//! | `leader_handover` | a leader whose log of a partition failed is replaced (or its log is back) within a session timeout (plus a controller failover if it was the active controller), when no other fault could explain the wait | availability; Kafka's failed log directory handling (KIP-112, KIP-858); issue 11 item 2 |
//! | `leader_fenced` | no broker is committed as a partition's leader after being down (crashed, paused, cut off) for over a session timeout, while a majority of brokers could be heard | Kafka's controller: only unfenced brokers are eligible leaders; issue 11 item 2 |
//! | `fence_quorum` | a controller cut off from receiving fences fewer than half the brokers while cut off (each fence needs a majority heard: check-quorum) | Raft/KRaft check-quorum; Kafka's controller fencing; issue 11 item 2 |
//! | `txn_lost_write` | every record of a transaction whose commit was acknowledged is visible to a read_committed reader after healing | Kafka's transactions (KIP-98): EndTxn answers once the outcome is durable |
//! | `txn_aborted_read` | no record of a transaction its producer aborted or gave up on is visible to read_committed | Jepsen: G1a aborted read; Kafka's read_committed |
//! | `txn_torn` | a transaction's records are visible to read_committed all together or not at all | atomicity (Jepsen's Bufstream analysis: torn transactions) |
//! | `exactly_once` | under a processor group (consume-transform-produce), no input has two visible outputs, none below the group's committed offset has none, and no visible output comes from an input read_committed does not show | Kafka's exactly-once semantics (KIP-98, KIP-447) |
//! | `txn_wr_cycle` | no cycle of committed transactions each reading another's record (G1c over write-read edges; write cycles, G0, are Kafka's by design and not judged) | Adya's G1c; Jepsen's Redpanda 21.10.1 analysis |
//! | `lso_monotonic` | a leader never moves a partition's last stable offset back within one leader epoch | Kafka's read_committed (KIP-98): below the LSO every transaction has its outcome |
//! | `authorized` | no acknowledged write and no read of an authenticated client without a credential and ACLs allowing it (WRITE, READ on the topic) at some moment a broker could have been authorizing with: after some prefix of the ACL and credential changes invoked by then | Kafka's StandardAuthorizer (KIP-801), ACL propagation through the metadata log; issue 28 item 5 |
//! | `reassignment_done` | after healing, every reassigned partition has no reassignment in progress and ends on the replica set its answered reassignments lead to: the last accepted target's, or after an accepted cancel the replicas before the move it cancelled | KIP-455 (AlterPartitionReassignments); Kafka's `kafka-reassign-partitions.sh --verify` |
//! | `removed_replica_deleted` | after healing, a broker that is not among a reassigned partition's replicas holds no directory of it | KIP-455: a removed replica's log is deleted (Kafka's StopReplica with deletion; KRaft brokers delete stray logs) |
//! | `broker_decommissioned` | every decommission completed (replicas moved off, process stopped for good, UnregisterBroker accepted), and after healing no partition lists the broker among its replicas and the controller no longer has it registered | Kafka's broker decommissioning (`kafka-reassign-partitions.sh` off the broker, then `kafka-cluster.sh unregister`, KIP-500); issue 30 item 6 |
//! | `broker_joined` | after healing, a broker that joined late is registered and unfenced, is among the replicas of each partition whose last reassignment (accepted) named it, and holds a log that opens of every partition placed on it | Kafka's cluster expansion (a new broker registers, then `kafka-reassign-partitions.sh` moves replicas onto it); issue 30 item 6 |
//! | `quota_respected` | a client id under an answered `producer_byte_rate` gets at most quota × elapsed + one window's burst and one request per broker meter (brokers, plus one per restart) + one request per new connection a timeout opened, acknowledged; and a client id under no quota in the same run gets more than that | Kafka's client quotas (KIP-13, KIP-219: windowed rate, throttle_time_ms, muted channel); issue 30 item 6 |
//! | `compaction` | in a compacted topic, each key's last record in the final log is its last acknowledged write (or a later one of unknown outcome); a key is gone only after its last tombstone's `delete.retention.ms` | Kafka's log compaction guarantees (docs: "Log Compaction Basics"); issue 9 |
//!
//! Compacted topics (`History::compacted_topics`) relax some properties, each where its module
//! says why: `offsets_dense` (gaps, offsets still increase), `acknowledged_durable`,
//! `lost_write` and `dirty_read` (a record the cleaner could have removed: `keyed`),
//! `poll_skip` (no skip is certain) and `committed_consistent` (replicas clean independently:
//! it compares offsets both hold and each key's latest). `duplicate`, `inconsistent_offsets`,
//! `nonmonotonic_poll` and `definite_failure` hold unchanged: the cleaner never copies a
//! record, never moves one to another offset and never reorders.
//!
//! Topics with transactional writes (`History::transactional_topics`) hold transaction markers
//! at offsets no reader is given: `offsets_dense` and `poll_skip` ask only that offsets
//! increase there.

mod authorized;
mod compaction;
mod exactly_once;
mod transactions;
mod txn_cycles;
mod fence_quorum;
mod consumers;
mod final_log;
mod group_commits;
mod group_delivery;
mod group_history;
mod group_liveness;
mod group_owners;
mod isr_complete;
mod keyed;
mod leader_epochs;
mod leader_fenced;
mod leader_handover;
mod lso_monotonic;
mod membership;
mod metadata_liveness;
mod raft_completeness;
mod raft_leaders;
mod raft_log;
mod raft_votes;
mod quotas;
mod reassignments;
mod replicas;
mod share_delivery;
mod write_liveness;
mod writes;

use crate::history::{History, Violation};

pub type Checker = fn(&History, &mut Vec<Violation>);

/// What one checker reports on a history (for the checkers' unit tests).
#[cfg(test)]
fn judged(check: Checker, h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    check(h, &mut out);
    out
}

/// Every checker, by name, in the order they run.
pub const CHECKERS: &[(&str, Checker)] = &[
    ("acknowledged_durable", writes::acknowledged_durable),
    ("offsets_dense", final_log::offsets_dense),
    ("read_above_hw", consumers::read_above_hw),
    ("lost_write", writes::lost_write),
    ("duplicate", final_log::duplicate),
    ("inconsistent_offsets", consumers::inconsistent_offsets),
    ("nonmonotonic_poll", consumers::nonmonotonic_poll),
    ("poll_skip", consumers::poll_skip),
    ("liveness", final_log::liveness),
    ("committed_consistent", replicas::committed_consistent),
    ("write_liveness", write_liveness::write_liveness),
    ("definite_failure", writes::definite_failure),
    ("refused_retry", writes::refused_retry),
    ("dirty_read", consumers::dirty_read),
    ("replica_readable", replicas::replica_readable),
    ("group_owners", group_owners::exclusive_owners),
    ("group_commits", group_commits::commits_durable),
    ("group_delivery", group_delivery::at_least_once),
    ("group_liveness", group_liveness::group_settles),
    ("share_delivery", share_delivery::share_delivery),
    ("compaction", compaction::compaction),
    ("authorized", authorized::authorized),
    ("quota_respected", quotas::quota_respected),
    ("reassignment_done", reassignments::reassignment_done),
    ("removed_replica_deleted", reassignments::removed_replica_deleted),
    ("broker_decommissioned", membership::broker_decommissioned),
    ("broker_joined", membership::broker_joined),
    ("txn_lost_write", transactions::txn_lost_write),
    ("txn_aborted_read", transactions::txn_aborted_read),
    ("txn_torn", transactions::txn_torn),
    ("exactly_once", exactly_once::exactly_once),
    ("txn_wr_cycle", txn_cycles::txn_wr_cycle),
    ("lso_monotonic", lso_monotonic::lso_monotonic),
    ("isr_complete", isr_complete::isr_complete),
    ("leader_handover", leader_handover::leader_handover),
    ("leader_fenced", leader_fenced::leader_fenced),
    ("fence_quorum", fence_quorum::fence_quorum),
    ("leader_epochs", leader_epochs::leader_epochs),
    ("raft_votes", raft_votes::votes_durable),
    ("raft_leaders", raft_leaders::one_leader_per_epoch),
    ("raft_log", raft_log::committed_entries_agree),
    ("raft_completeness", raft_completeness::leaders_hold_committed),
    ("metadata_liveness", metadata_liveness::controller_after_healing),
];

/// Runs every checker.
pub fn check_all(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    for (_, check) in CHECKERS {
        check(h, &mut out);
    }
    out
}

#[cfg(test)]
mod tests;
