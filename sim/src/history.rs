//! The Jepsen-style record of a run: every produce invocation with its outcome, every record a
//! consumer received, and the final read of every partition after healing. Simulated times only.
//! Checkers read it; nothing here decides anything.

use std::collections::{BTreeMap, BTreeSet};

/// How a produce ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged at this offset (acks=0 gets `-1`: nothing is promised).
    Ok(i64),
    /// Refused by the broker: certainly not appended.
    Fail(String),
    /// Timed out or the connection broke: may or may not be in the log.
    Unknown(String),
}

/// The record header that names a tombstone's write: a tombstone's value is null, so this is
/// what identifies it (see [`record_identity`]). Compaction keeps headers.
pub const write_header: &str = "seedlog.write";

/// What the history records as a record's value: its value, or for a tombstone (null value)
/// `tombstone:` and its [`write_header`] — so that every write, tombstones included, is
/// identified by its "value" in writes, reads and final logs alike. A null value without the
/// header records as empty.
pub fn record_identity<'a>(value: Option<&[u8]>, mut headers: impl Iterator<Item = (&'a str, Option<&'a [u8]>)>) -> Vec<u8> {
    match value {
        Some(v) => v.to_vec(),
        None => match headers.find(|(k, _)| *k == write_header) {
            Some((_, id)) => [b"tombstone:".as_slice(), id.unwrap_or_default()].concat(),
            None => Vec::new(),
        },
    }
}

/// One record a producer sent. A producer may have several batches in flight (`in_flight`):
/// its writes are recorded in the order they were sent, and their `invoke_ms..complete_ms`
/// spans may overlap, so no checker may take a producer's write as complete before its next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub process: String,
    pub topic: String,
    pub partition: i32,
    /// Unique per write across the run, so a value identifies its write (a tombstone's is
    /// its [`record_identity`]).
    pub value: Vec<u8>,
    /// The record's key, if it has one.
    pub key: Option<Vec<u8>>,
    /// A tombstone: sent with a null value (the key's deletion on a compacted topic).
    pub tombstone: bool,
    pub acks: i16,
    /// Sent by an idempotent producer: retries must not duplicate it.
    pub idempotent: bool,
    pub invoke_ms: u64,
    pub complete_ms: u64,
    pub outcome: Outcome,
    /// The batch's last answer refused a retry for its sequence number after an attempt that
    /// may have been appended (`ClientError::sequence_refused`): its outcome is unknown, and
    /// `refused_retry` judges whether the broker held it.
    pub retry_refused: bool,
}

/// An acks setting as Kafka's configs spell it: `0`, `1` or `all` (the wire's -1).
pub fn acks_name(acks: i16) -> &'static str {
    match acks {
        0 => "0",
        1 => "1",
        _ => "all",
    }
}

impl Write {
    /// The offset the broker acknowledged this write at; `None` when nothing was promised
    /// (acks=0's `Ok(-1)` only means "sent"), or the write failed or its outcome is unknown.
    pub fn acknowledged(&self) -> Option<i64> {
        match self.outcome {
            Outcome::Ok(offset) if self.acks != 0 && offset >= 0 => Some(offset),
            _ => None,
        }
    }
}

/// A record a share-group member was handed (KIP-932), with its delivery count, when the
/// answer carrying it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareDelivery {
    pub process: String,
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub delivery_count: i16,
    pub at_ms: u64,
}

/// What a share-group member's acknowledgement came to, as the member learned it at `at_ms`:
/// "taken" (the broker said so), "refused" (definitely not: the records were not the member's,
/// or it was never sent), or "unknown" (no answer, or one that cannot say: a timeout, a
/// leadership that moved while its write was out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAck {
    pub process: String,
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// "accept", "release", "reject" (or "gap").
    pub kind: &'static str,
    pub outcome: &'static str,
    pub at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub process: String,
    /// Increments whenever the consumer starts over (reconnect, out-of-range reset): order
    /// rules hold within one session.
    pub session: u32,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub value: Vec<u8>,
    /// High watermark in the fetch response that carried the record.
    pub high_watermark: i64,
    pub at_ms: u64,
}

pub type PartitionKey = (String, i32);

/// What happened to a group member, as its client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEventKind {
    /// It joined `generation` (as the leader if `leader`).
    Joined { generation: i32, member_id: String, leader: bool },
    /// After a SyncGroup of `generation`: every partition it owns now, and where each newly
    /// assigned one starts (its committed offset, or the reset point).
    Owned { generation: i32, member_id: String, partitions: Vec<i32>, starts: Vec<(i32, i64)> },
    /// Partitions it gave up in order (revoked).
    Revoked(Vec<i32>),
    /// Partitions taken from it without notice (fenced, expired): a zombie's.
    Lost(Vec<i32>),
    /// The harness's churn: the member left (LeaveGroup), crashed (no leave), or stalls
    /// `ms` between a poll and its commit (slow processing, past its session).
    Left,
    Crashed,
    Stalled { ms: u64 },
}

/// One group event of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEvent {
    pub process: String,
    pub group: String,
    pub topic: String,
    pub at_ms: u64,
    pub kind: GroupEventKind,
}

/// One OffsetCommit by a group member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub process: String,
    pub group: String,
    pub topic: String,
    pub member_id: String,
    pub generation: i32,
    /// Partition → the next offset to read.
    pub offsets: Vec<(i32, i64)>,
    pub invoke_ms: u64,
    pub complete_ms: u64,
    pub outcome: Outcome,
}

/// What the history needs to know of a compacted topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// `delete.retention.ms`: a tombstone may go once its timestamp is this old.
    pub delete_retention_ms: u64,
}

impl History {
    /// Topics a transactional producer wrote: their logs hold transaction markers, at offsets
    /// no reader is given.
    pub fn transactional_topics(&self) -> BTreeSet<&str> {
        self.txns.iter().flat_map(|t| t.records.iter().map(|(topic, _, _)| topic.as_str())).collect()
    }
}

/// A record a processor's transaction read: (topic, partition, offset, identity).
pub type TxnRead = (String, i32, i64, Vec<u8>);

/// One transaction of a transactional producer, as its producer saw it.
#[derive(Debug, Clone)]
pub struct Txn {
    pub process: String,
    /// The producer's count of its transactions.
    pub serial: u64,
    /// Its records as sent: (topic, partition, identity), acknowledged or not.
    pub records: Vec<(String, i32, Vec<u8>)>,
    /// A processor's: the records it read (read_committed) inside the transaction, whose
    /// positions it committed with it: (topic, partition, offset, identity).
    pub reads: Vec<TxnRead>,
    /// Whether its producer asked to commit it (else to abort it, or it gave up on it: then
    /// nothing can commit it).
    pub commit: bool,
    /// What ending it answered: `Ok(0)` acknowledged, `Fail`/`Unknown` otherwise; None: no
    /// EndTxn was sent (nothing reached the coordinator, or the producer gave up first).
    pub end: Option<Outcome>,
    pub invoke_ms: u64,
    pub complete_ms: u64,
}

/// A scenario's consume-transform-produce processors, as the checkers need them
/// (`scenario::ProcessorSpec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processors {
    pub group: String,
    pub from: String,
    pub to: String,
    /// Their node names: an output's value ends `>{process}.{serial}`.
    pub processes: Vec<String>,
    pub hops: u32,
}

/// The separator between a record's value and each processor step's mark (see
/// `scenario::ProcessorSpec`).
pub const hop_mark: char = '>';

/// The input an output of a processor step was made from: its value without the last
/// `>{process}.{serial}`, and that process; None for a record no processor wrote.
pub fn processed_from(value: &[u8]) -> Option<(&[u8], &str)> {
    let at = value.iter().rposition(|b| *b == hop_mark as u8)?;
    let step = std::str::from_utf8(&value[at + 1..]).ok()?;
    let (process, _) = step.rsplit_once('.')?;
    Some((&value[..at], process))
}

/// How many processor steps made `value`.
pub fn hops(value: &[u8]) -> u32 {
    value.iter().filter(|b| **b == hop_mark as u8).count() as u32
}

#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every transaction of the transactional producers and processors, in the order they
    /// ended.
    pub txns: Vec<Txn>,
    /// The scenario's processors, spec by spec.
    pub processors: Vec<Processors>,
    /// With transactional producers: every partition read again with read_committed after the
    /// final read, once its last stable offset reached where that read ended (or not, then in
    /// `final_errors` under the topic prefixed `committed:`).
    pub final_committed: BTreeMap<PartitionKey, Vec<(i64, Vec<u8>)>>,
    pub writes: Vec<Write>,
    /// Topics with `cleanup.policy` compact: their logs keep the latest record per key, so
    /// superseded records may be gone and offsets have gaps (the checkers say where that is
    /// allowed).
    pub compacted_topics: BTreeMap<String, Compaction>,
    pub reads: Vec<Read>,
    /// Every record of every partition after the healing phase, by offset.
    pub final_read: BTreeMap<PartitionKey, Vec<(i64, Vec<u8>)>>,
    /// Partitions whose final read failed (the liveness phase did not recover them).
    pub final_errors: BTreeMap<PartitionKey, String>,
    /// Simulated ms at which the final read ended: whatever a broker did to what the final
    /// read saw (a cleaner dropping a tombstone, say), it did before this.
    pub final_read_ms: u64,
    /// Every replica's log of every partition at the end (brokers stopped, logs opened from
    /// their disks), by broker name.
    pub replica_logs: BTreeMap<PartitionKey, BTreeMap<String, Vec<(i64, Vec<u8>)>>>,
    /// Replica logs that did not open or read at the end, by broker name: why.
    pub replica_errors: BTreeMap<PartitionKey, BTreeMap<String, String>>,
    /// Simulated ms at which the brokers were stopped and their logs read.
    pub replica_logs_ms: u64,
    /// Simulated ms at which the healing phase began: the safety phase was over and every
    /// fault had been undone. Set by the harness; 0 in a history built by hand (then every
    /// write counts as after healing).
    pub healed_at_ms: u64,
    /// Length of the healing phase, ms (the scenario's `heal_ms`).
    pub heal_ms: u64,
    /// Every group member's events, in the order they happened.
    pub group_events: Vec<GroupEvent>,
    /// Every offset commit.
    pub commits: Vec<Commit>,
    /// Each group's committed offsets after healing, read by the harness: (group, topic,
    /// partition) → offset (absent: none committed); groups whose offsets could not be read.
    pub final_commits: BTreeMap<(String, String, i32), i64>,
    pub final_commit_errors: BTreeMap<String, String>,
    /// When group members stopped (the end of their reads), ms.
    pub members_until_ms: u64,
    /// Groups whose members speak KIP-848 (`group.protocol = "consumer"`): epochs are each
    /// member's own, not the group's.
    pub kip848_groups: std::collections::BTreeSet<String>,
    /// Share groups (KIP-932) by id, with their topic: what their members were handed and
    /// what became of each acknowledgement.
    pub share_groups: BTreeMap<String, String>,
    pub share_deliveries: Vec<ShareDelivery>,
    pub share_acks: Vec<ShareAck>,
    /// Share fetches (group, partition, when) answered with nothing the member could take — no
    /// answer, or the partition's error: each may have handed it records it never saw.
    pub share_unanswered: Vec<(String, i32, u64)>,
    /// The brokers' `group.share.delivery.count.limit`.
    pub share_delivery_limit: i16,
    /// Every time a broker became a partition's leader, in the order they happened.
    pub leaderships: Vec<Leadership>,
    /// The metadata quorum as its voters reported it: elections, committed entries applied,
    /// active controllers (`broker_core::simprobe`).
    pub raft: broker_core::simprobe::RaftHistory,
    /// The moments a committed ISR member did not hold the high watermark, as the brokers and
    /// the controller reported them while the run went (`broker_core::simprobe::isr`; ms from
    /// the run's start).
    pub isr_breaches: Vec<broker_core::simprobe::IsrBreach>,
    /// The moments a leader moved a partition's last stable offset back within one leader
    /// epoch, as the brokers reported it (`broker_core::simprobe::stable`; ms from the run's
    /// start).
    pub lso_regressions: Vec<broker_core::simprobe::LsoRegression>,
    /// Leaders whose log failed, and when the partition stopped waiting on them, as the
    /// brokers and voters reported it (`broker_core::simprobe::leadership`; ms from the run's
    /// start).
    pub failed_leaders: Vec<broker_core::simprobe::FailedLeader>,
    /// The brokers' session timeout, ms: how long a broker that stopped heartbeating keeps its
    /// partitions (0 in a history built by hand: `leader_handover` judges nothing).
    pub session_ms: u64,
    /// How long the voters take to replace an active controller that stopped answering (fetch
    /// timeout plus up to two election rounds), ms; 0 in a history built by hand.
    pub controller_failover_ms: u64,
    /// The metadata quorum's voters, by node id.
    pub voters: Vec<i32>,
    /// How many brokers the cluster has.
    pub brokers: u32,
    /// Every change of a partition's committed leader, as the voters applied it (ms from the
    /// run's start).
    pub elections: Vec<broker_core::simprobe::Election>,
    /// Every FenceBroker record, as the voters applied it (ms from the run's start).
    pub fences: Vec<broker_core::simprobe::Fence>,
    /// Every fault the harness applied, with its target resolved, from when it was applied to
    /// when it was undone (a crash: to the restart).
    pub faults: Vec<FaultSpan>,
    /// With the scenario's `security`: each client process that authenticated, and as whom
    /// (`User:alice`); a process not named here is the harness's anonymous super user.
    pub principals: BTreeMap<String, String>,
    /// Each producer process that set its own client id (`ProducerSpec::client_id`), and the
    /// id; a process not named here sends its process name.
    pub client_ids: BTreeMap<String, String>,
    /// Each producer process's request timeout, ms (`ProducerSpec::request_timeout_ms`, else the
    /// harness's).
    pub request_timeouts_ms: BTreeMap<String, u64>,
    /// The users whose credentials the cluster was formed with (`--add-scram`).
    pub users: BTreeSet<String>,
    /// The ACL and credential changes the admin made, in the order it made them (one at a
    /// time: the metadata log holds them in this order), the initial ACLs first.
    pub security_changes: Vec<SecurityChange>,
    /// The partition reassignments the admin asked for, in the order it asked (one at a time:
    /// each answered or given up on before the next is sent), a decommission's moves among them.
    pub reassignments: Vec<Reassignment>,
    /// Each reassigned partition's replicas before its first reassignment, as Metadata listed
    /// them once the topics existed (only reassignments move replicas); for a partition first
    /// moved by a decommission, as it listed them then, with no move in progress.
    pub initial_replicas: BTreeMap<PartitionKey, Vec<i32>>,
    /// Each reassigned partition's placement after healing, as the active controller answered
    /// Metadata and ListPartitionReassignments.
    pub final_placements: BTreeMap<PartitionKey, Placement>,
    /// Why the initial replicas or the final placements could not be read; None when they
    /// were, or nothing was reassigned.
    pub placement_error: Option<String>,
    /// The client quota changes the admin made, in the order it made them (one at a time).
    pub quota_changes: Vec<QuotaChange>,
    /// Each broker that joined late (`scenario::membership`): its id, and when its process
    /// first started (ms from the run's start).
    pub joins: Vec<(i32, u64)>,
    /// Each decommission the admin began, in the order it began them.
    pub decommissions: Vec<Decommission>,
    /// With joins or decommissions: every partition's replicas after healing, as the active
    /// controller answered Metadata (in `final_placements`' read).
    pub final_assignment: BTreeMap<PartitionKey, Vec<i32>>,
    /// With joins or decommissions: the brokers registered after healing, fenced or not
    /// (id → fenced), as the active controller answered DescribeCluster with
    /// `include_fenced_brokers`.
    pub final_registered: BTreeMap<i32, bool>,
}

/// One decommission as the admin made it: every replica moved off `broker` (each move also in
/// `History::reassignments`), the moves awaited, the process stopped for good, the broker
/// unregistered. A step left `None` was not reached before producers stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decommission {
    pub broker: i32,
    pub invoke_ms: u64,
    /// The brokers the plan placed replicas on (every broker of the cluster then but this one).
    pub onto: Vec<i32>,
    /// The partitions the plan moved (their replica lists changed).
    pub moved: Vec<PartitionKey>,
    /// When ListPartitionReassignments first showed none of `moved` in progress.
    pub drained_ms: Option<u64>,
    /// When its process was stopped for good.
    pub stopped_ms: Option<u64>,
    /// UnregisterBroker's answer: 0, else the Kafka error code; None: never answered.
    pub unregister_code: Option<i16>,
    /// An UnregisterBroker attempt before the answer may have taken effect.
    pub unregister_earlier_unknown: bool,
}

/// One AlterClientQuotas of one client id's `producer_byte_rate`, as the admin saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaChange {
    pub client_id: String,
    /// The rate set, bytes/s; None: removed.
    pub producer_byte_rate: Option<f64>,
    pub invoke_ms: u64,
    /// When it was answered; None if the admin gave up first (producers had stopped).
    pub complete_ms: Option<u64>,
    /// The answer: 0 accepted, else the Kafka error code; None: never answered.
    pub code: Option<i16>,
}

/// One AlterPartitionReassignments of one partition, as the admin saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    pub topic: String,
    pub partition: i32,
    /// The target replicas; None: a cancel (a null target).
    pub target: Option<Vec<i32>>,
    pub invoke_ms: u64,
    /// When the partition's answer came; None if the admin gave up first (healing was nearly
    /// over): then it may or may not have taken effect.
    pub complete_ms: Option<u64>,
    /// The partition's answer: 0 accepted, else the Kafka error code; None: never answered.
    pub code: Option<i16>,
    /// An attempt before the answer may have taken effect (it timed out, its connection broke,
    /// or it was answered NOT_CONTROLLER or REQUEST_TIMED_OUT), and been retried.
    pub earlier_unknown: bool,
}

/// A partition's replicas, and the reassignment in progress (both empty when none is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

/// What a security change adds or removes: an ACL, or a user's SCRAM credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secured {
    Acl(broker_core::security::acl::Acl),
    User(String),
}

/// One ACL or credential added or removed by the admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityChange {
    pub add: bool,
    pub what: Secured,
    pub invoke_ms: u64,
    /// When the controller acknowledged it; None if the run ended first (it may or may not
    /// have taken effect).
    pub complete_ms: Option<u64>,
}

/// A fault as applied: which kind, on which node (or link `a>b`), over which simulated ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpan {
    pub kind: crate::scenario::FaultKind,
    pub target: String,
    pub from_ms: u64,
    pub until_ms: u64,
}

/// The controller that wrote a metadata record, as the Raft history tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    /// The epoch of the entry holding the record: its leader wrote it.
    pub epoch: i32,
    /// That leader, as it reported itself active.
    pub node: i32,
    /// When it first reported itself active (ms from the run's start).
    pub active_from_ms: u64,
}

impl History {
    /// Which controller wrote the metadata record at `offset`: the epoch of the committed entry
    /// holding it, and that epoch's active controller. None where the voters reported neither.
    pub fn writer_of(&self, offset: i64) -> Option<Writer> {
        let epoch = self.raft.committed.iter().filter(|c| c.offset <= offset).max_by_key(|c| c.offset)?.entry_epoch;
        let &(active_from_ms, node, _) = self.raft.active.iter().filter(|&&(_, _, e)| e == epoch).min_by_key(|&&(at, _, _)| at)?;
        Some(Writer { epoch, node, active_from_ms })
    }
}

impl FaultSpan {
    /// The (from, to) node names of a link fault `a>b`.
    pub fn link(&self) -> Option<(&str, &str)> {
        self.target.split_once('>')
    }
}

/// A broker became the leader of a partition at a leader epoch (it applied metadata naming it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub at_ms: u64,
    pub broker: String,
    pub topic: String,
    /// The topic's id: a topic deleted and created again starts its epochs over.
    pub topic_id: [u8; 16],
    pub partition: i32,
    pub leader_epoch: i32,
}

/// One broken property. `loss` marks violations that only say "acknowledged data is gone" (or,
/// for inconsistent offsets, "what was at this offset is gone"), which a scenario may declare
/// allowed (its faults exceed what its settings promise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub checker: &'static str,
    pub topic: String,
    pub partition: i32,
    pub offsets: Vec<i64>,
    pub at_ms: u64,
    pub detail: String,
    pub loss: bool,
    /// The acks setting of the write a loss concerns, when one is known (`expect` may allow
    /// losing acks=1 writes only).
    pub acks: Option<i16>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}-{} offsets {:?} at {} ms: {}", self.checker, self.topic, self.partition, self.offsets, self.at_ms, self.detail)
    }
}
