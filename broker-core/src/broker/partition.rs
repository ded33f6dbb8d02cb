//! One local replica (its log, its idempotent producers, its replication state) and the
//! values the broker's calls take and return about partitions. No IO beyond the log's own.

use crate::observe::{Observation, Observer};
use super::producer::{EndedTxn, ProducerStates};
use super::rules::Rules;
use super::Error;
use crate::kafka::Code;
use crate::log::batch::control::{self, Control};
use crate::log::txn_index::AbortedTxn;
use crate::log::{BatchHeader, Batches, Log, LogError};
use crate::metadata::PartitionInfo;
use crate::replication::{Change, Replication, Role};

/// One local replica: its log, its producers, its replication state.
/// Fields in declared order (`repr(C)`): what a produce reads first, so that a partition found
/// cold in the caches costs fewer misses (`Log` says more).
#[repr(C)]
pub struct Partition {
    pub replication: Replication,
    /// The topic's `min.insync.replicas`, kept here so a produce does not re-derive the topic's
    /// config (updated when a `TopicConfig` record changes it).
    pub(super) min_insync: i32,
    /// The log start DeleteRecords set (at this leader, or adopted from the leader as a
    /// follower), persisted in the partition directory; 0 when never set. Kafka's logical
    /// logStartOffset: it may fall inside a segment, which stays until it is wholly below.
    pub(super) start_floor: i64,
    pub log: Log,
    pub(super) producers: ProducerStates,
    /// The id of the topic this replica belongs to (a re-created topic has another).
    pub topic_id: [u8; 16],
    /// The highest offset a DeleteRecords asked this leader for (-1: none since it opened):
    /// while the low watermark is below it, a request may be waiting for followers' starts.
    pub(super) delete_asked: i64,
    /// Which open transaction holds the last stable offset back (Kafka's: the earliest).
    pub(super) lso_held_by: super::producer::HeldBy,
}

impl Partition {
    /// The log start offset clients see (Kafka's logStartOffset): see [`start_of`].
    pub fn log_start_offset(&self) -> i64 {
        start_of(&self.log, self.start_floor)
    }

    pub fn high_watermark(&self) -> i64 {
        self.replication.high_watermark()
    }

    /// The last stable offset (docs/transactions.md, 2.2): the high watermark, held back by the
    /// first transaction still open here or ended by a marker not yet replicated.
    /// Never below the log start (retention or DeleteRecords may remove an open transaction's
    /// first batches), as Kafka's first unstable offset is not.
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        self.producers.last_stable_offset_held(hw, self.lso_held_by).max(self.log_start_offset().min(hw))
    }

    /// Where the cleaner must stop: below the last stable offset (an open transaction may
    /// still abort, and an ended one's marker may not be replicated yet). Below it every
    /// transaction has its replicated outcome, and the cleaner removes the aborted ones' data.
    pub(super) fn cleanable_end(&self) -> i64 {
        self.last_stable_offset()
    }

    pub(super) fn leo(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// The log end this replica counts for a high watermark as leader: what its flush policy
    /// calls durable only once synced (`log::deferred`).
    pub(super) fn counted_end(&self) -> i64 {
        self.log.policy_end()
    }

    /// Whether `produced`, not yet counted, can no longer be: its write failed (this log is
    /// offline, or was reopened since it took the batch) — KAFKA_STORAGE_ERROR then.
    pub(super) fn lost(&self, produced: &Produced) -> Result<(), Error> {
        if produced.log.is_some_and(|serial| serial != self.log.serial()) {
            return Err(Error::Storage("the log was reopened after a failure since it took this batch".into()));
        }
        match self.log.failure() {
            Some(why) if self.log.written_end() <= produced.last_offset => Err(Error::Storage(why.to_string())),
            _ => Ok(()),
        }
    }

    /// Whether this replica is led here under a request's leader epoch (-1: unchecked). Not
    /// while a truncation's job is in flight: its producer state waits for the rebuild
    /// (`truncation`), so a leader answers LEADER_NOT_AVAILABLE until then.
    pub(super) fn check_lead(&self, epoch: i32) -> Result<(), Error> {
        let r = &self.replication;
        match r.role {
            Role::Leader if self.log.cutting() => return Err(Error::LeaderNotAvailable),
            Role::Leader => {}
            Role::None => return Err(Error::LeaderNotAvailable),
            Role::Follower { .. } => return Err(Error::NotLeaderOrFollower),
        }
        r.check_epoch(epoch).map_err(Error::Epoch)
    }

    /// Tells the node's observer (`crate::observe`) where this replica's log ends and, as
    /// leader, its high watermark. Nothing without one (the real broker's produce path).
    pub(super) fn observed(&self, observer: &Observer, node: i32, topic: &str, p: i32, now: u64) {
        if !observer.watching() {
            return;
        }
        let log_end = self.log.failure().is_none().then(|| self.leo());
        observer.see(Observation::ReplicaLogEnd { node, topic, topic_id: self.topic_id, partition: p, log_end, now });
        // A leader whose truncation's job is in flight knows no last stable offset yet.
        if self.replication.is_leader() && !self.log.cutting() {
            let below_min_isr = self.replication.maximal_isr_len() < usize::try_from(self.min_insync).unwrap_or(0);
            let (leader_epoch, high_watermark, last_stable_offset) = (self.replication.leader_epoch, self.high_watermark(), self.last_stable_offset());
            observer.see(Observation::LeaderHighWatermark { node, topic, topic_id: self.topic_id, partition: p, leader_epoch, high_watermark, last_stable_offset, below_min_isr, now });
        }
    }

    /// Takes the partition's state from the metadata.
    pub(super) fn apply(&mut self, i: &PartitionInfo, now: u64) -> Change {
        let leo = self.counted_end();
        self.replication.apply(&i.replicas, &i.isr, i.leader, i.leader_epoch, i.partition_epoch, leo, now)
    }

    /// What a leader's append owes besides `due`'s note: its sync job, a wake when the high
    /// watermark moved (an ISR of one), and the observer's view.
    pub(super) fn after_leader_append(&mut self, observer: &Observer, me: i32, name: &str, p: i32, now: u64, out: &mut Vec<super::Action>) {
        if let Some(job) = self.log.take_sync() {
            out.push(super::Action::Sync { topic: name.to_string(), partition: p, job });
        }
        if self.replication.on_append(self.counted_end()) {
            out.push(super::Action::Wake);
        }
        self.observed(observer, me, name, p, now);
    }

    /// Records a batch this replica's log just took (`h` its stamped header, `batch` its bytes)
    /// in the producer state; a marker that ends an aborted transaction adds the transaction to
    /// the log's aborted-transaction index.
    pub(super) fn record_appended(&mut self, h: &BatchHeader, batch: &[u8]) -> Result<Option<EndedTxn>, Error> {
        let hw = self.high_watermark();
        record_appended(&mut self.producers, &mut self.log, hw, h, batch)
    }

    /// The producer state and the log's aborted-transaction index as the batches in the log
    /// leave them (at open, and after a truncation): replayed from the newest usable snapshot,
    /// the index's entries from there on derived again (`log::aborted`).
    pub(super) fn rebuild_producers(&mut self) -> Result<(), Error> {
        self.producers = restored_producers(&mut self.log)?;
        Ok(())
    }
}

/// The log start of a replica whose DeleteRecords floor is `floor`: the later of the floor and
/// the log's first offset (retention may have passed the floor), never past the log end.
pub(super) fn start_of(log: &Log, floor: i64) -> i64 {
    floor.max(log.log_start_offset()).min(log.log_end_offset())
}

/// [`Partition::record_appended`] on a log and its producers' state, the replica's high watermark
/// `hw` (the crash rounds of `sim` keep them so, without a broker).
pub fn record_appended(producers: &mut ProducerStates, log: &mut Log, hw: i64, h: &BatchHeader, batch: &[u8]) -> Result<Option<EndedTxn>, Error> {
    if !h.is_control() {
        producers.record(h);
        return Ok(None);
    }
    let Control::Marker { kind, coordinator_epoch } = control::read_control(batch)? else { return Ok(None) };
    producers.forget_replicated(hw);
    let ended = producers.record_marker(h, kind, coordinator_epoch);
    if let Some(t) = ended.and_then(|t| t.aborted()) {
        log.append_aborted(t)?;
    }
    Ok(ended)
}

/// [`producers_of`], with the aborted transactions its replay derived written to the log's
/// index in place of what it held from the replay's start on.
pub fn restored_producers(log: &mut Log) -> Result<ProducerStates, LogError> {
    let replay = replay(&log.batches())?;
    log.replace_aborted_from(replay.from, replay.aborted)?;
    Ok(replay.producers)
}

/// The producers' state as the batches in `log` leave it: the newest usable producer-state
/// snapshot and the batches after it, else every batch (`log::snapshots`).
pub fn producers_of(log: &Log) -> Result<ProducerStates, LogError> {
    Ok(replay(&log.batches())?.producers)
}

/// The state a replay of every batch in `log` gives: what [`producers_of`] must give too for a
/// log that nothing was removed from (retention and compaction drop batches a snapshot taken
/// before them still counts, as Kafka's do).
pub fn replayed_producers(log: &Log) -> Result<ProducerStates, LogError> {
    Ok(replay_from(&log.batches(), log.log_start_offset(), ProducerStates::default())?.producers)
}

/// The aborted transactions a replay of every batch in `log` finds: what the log's index must
/// hold too for a log that nothing was removed from.
pub fn replayed_aborted(log: &Log) -> Result<Vec<AbortedTxn>, LogError> {
    Ok(replay_from(&log.batches(), log.log_start_offset(), ProducerStates::default())?.aborted)
}

/// What a replay of a log's batches found.
pub(super) struct Replay {
    pub(super) producers: ProducerStates,
    /// Where it started: the transactions aborted from here on are `aborted`.
    pub(super) from: i64,
    pub(super) aborted: Vec<AbortedTxn>,
}

/// Replays from the newest snapshot `batches` may start from (at or below where the
/// aborted-transaction index is known whole, [`Log::aborted_replay_bound`]; docs/transactions.md,
/// 1.5), or from the log start when there is none. Blocking (reads): inline at open, in a
/// truncation's job after one (`broker::truncation`).
pub(super) fn replay(batches: &Batches) -> Result<Replay, LogError> {
    match batches.newest_producer_snapshot() {
        Some((at, entries)) => replay_from(batches, at, ProducerStates::from_snapshot(&entries)),
        None => replay_from(batches, batches.log_start_offset(), ProducerStates::default()),
    }
}

/// Every batch from `from` recorded on top of `producers`: data batches by their headers,
/// markers by their one record too (commit or abort, and the coordinator's epoch).
fn replay_from(batches: &Batches, from: i64, mut producers: ProducerStates) -> Result<Replay, LogError> {
    let mut aborted = Vec::new();
    let mut failed = None;
    batches.for_each_from(from, |h, read| {
        if !h.is_control() {
            return producers.record(h);
        }
        let control = read().and_then(|bytes| Ok(control::read_control(&bytes)?));
        match control {
            Ok(Control::Marker { kind, coordinator_epoch }) => aborted.extend(producers.record_marker(h, kind, coordinator_epoch).and_then(|t| t.aborted())),
            Ok(Control::Other(_)) => {}
            Err(e) => failed = failed.take().or(Some(e)),
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(Replay { producers, from, aborted }),
    }
}

/// Where a produce landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Produced {
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_start_offset: i64,
    /// The leader epoch it was appended under (acks=all waits within that leadership).
    pub leader_epoch: i32,
    /// The broker's timestamp stamped on the batch when the topic uses LogAppendTime; -1 else.
    pub log_append_time: i64,
    /// The batch was a retry of one already appended; nothing new was written.
    pub duplicate: bool,
    /// Which opened log took it (`Log::serial`): a log reopened after a failure since may have
    /// lost it, and later appends may take its offsets. None: not known (checked by epoch only).
    pub log: Option<u64>,
}

/// What a fetch of one partition returns.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub high_watermark: i64,
    /// For a consumer, the last stable offset; for a follower, the high watermark.
    pub last_stable_offset: i64,
    /// For a read_committed consumer, the aborted transactions its range overlaps.
    pub aborted: Vec<AbortedTxn>,
    pub log_start_offset: i64,
    /// In memory or file regions (`BrokerConfig::fetch_zero_copy`); the same bytes either way.
    pub records: crate::log::Records,
}

/// What became of an ISR proposal (AlterPartition).
#[derive(Debug, Clone, Copy)]
pub enum IsrAnswer<'a> {
    /// Committed: the partition's new state.
    Committed(&'a PartitionInfo),
    /// Refused for good (ineligible replica, fenced epoch, ...): certainly not committed.
    Refused,
    /// INVALID_UPDATE_VERSION: the controller is ahead; wait for its metadata.
    Stale,
    /// No answer (connection lost, not sent): it may have been committed.
    Lost,
}

/// What the controller link heard of an ISR proposal it was to send; the broker reads it as
/// an [`IsrAnswer`] by its rules (`Broker::isr_reply`), so the link holds no decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrReply {
    /// Not sent: an earlier proposal of the same round failed.
    NotSent,
    /// The topic is no longer in this broker's image: there is no topic id to send it with.
    NoTopic,
    /// Sent, and no answer came (connection lost, timed out): it may have been committed.
    NoAnswer,
    /// The controller answered: the partition's new state, or its error (None: a code this
    /// broker does not know).
    Answered(Result<PartitionInfo, Option<Code>>),
}

impl IsrReply {
    /// The answer this reply is, by `rules` (Kafka's: an answer that never came may have been
    /// committed, so the change stays in flight and is sent again; INVALID_UPDATE_VERSION and
    /// NEW_LEADER_ELECTED mean the controller moved on, perhaps with it; any other refusal is
    /// final). None: it is not
    /// answered at all (planted `UnsentIsrChangeStaysInFlight`).
    pub fn read(&self, rules: &dyn Rules) -> Option<IsrAnswer<'_>> {
        Some(match self {
            IsrReply::NotSent if !rules.answers_unsent_isr_change() => return None,
            IsrReply::NotSent | IsrReply::NoAnswer => IsrAnswer::Lost,
            IsrReply::NoTopic => IsrAnswer::Refused,
            IsrReply::Answered(Ok(state)) => IsrAnswer::Committed(state),
            IsrReply::Answered(Err(code)) => match code {
                // The controller moved on, perhaps with this very change: INVALID_UPDATE_VERSION,
                // or NEW_LEADER_ELECTED (the change completed a reassignment that took the
                // leadership away). The change stays in the maximal ISR until the metadata says
                // how it ended, so the high watermark never passes a member it may have.
                Some(Code::InvalidUpdateVersion | Code::NewLeaderElected) => IsrAnswer::Stale,
                Some(Code::KafkaStorageError) => rules.controller_storage_error(),
                // Not the controller, a stale broker epoch, or no answer it could give: it may
                // come back committed.
                Some(Code::NotController | Code::StaleBrokerEpoch | Code::UnknownServerError) => IsrAnswer::Lost,
                _ => IsrAnswer::Refused,
            },
        })
    }
}

/// Who is fetching: a consumer, or a follower replica (Kafka's `replica_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetcher {
    /// The follower's node id, or None for a consumer.
    pub replica: Option<i32>,
    /// The fetcher's current leader epoch (-1: not checked).
    pub leader_epoch: i32,
    /// A follower's own log start (Fetch v5+; -1: not told): the leader's low watermark for
    /// DeleteRecords counts it.
    pub log_start_offset: i64,
    /// A request answered again after waiting for data is not a new fetch: its offset says
    /// where the follower was when it sent it, so only the first handling counts as progress
    /// (a request parked from a follower that has since crashed must not keep it "caught up").
    pub again: bool,
    /// A consumer's isolation level is read_committed: it reads up to the last stable offset
    /// and is told the aborted transactions of what it reads.
    pub read_committed: bool,
    /// The follower's broker epoch as its fetch tells it (Fetch v15+'s ReplicaState, KIP-903;
    /// -1: not told, and the leader's metadata names it).
    pub broker_epoch: i64,
}

impl Fetcher {
    pub const consumer: Fetcher = Fetcher { replica: None, leader_epoch: -1, log_start_offset: -1, again: false, read_committed: false, broker_epoch: -1 };

    /// A follower's fetch, handled for the first time.
    pub fn follower(id: i32, leader_epoch: i32) -> Fetcher {
        Fetcher { replica: Some(id), leader_epoch, log_start_offset: -1, again: false, read_committed: false, broker_epoch: -1 }
    }
}

/// A partition this node follows, as its replica fetcher needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Following {
    /// The topic's name, shared with the broker's map of replicas (a round names every
    /// followed partition: a copy of the name each would be an allocation each).
    pub topic: std::sync::Arc<str>,
    pub partition: i32,
    pub leader_epoch: i32,
    pub fetch_offset: i64,
    /// This replica's log start, told to the leader in each fetch.
    pub log_start_offset: i64,
    /// Epoch truncation to do first: the latest epoch in the local log (None: empty log).
    pub truncate_from_epoch: Option<Option<i32>>,
}
