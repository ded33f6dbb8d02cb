//! The broker's decisions on one node: which partitions it holds and in what role (from the
//! cluster metadata the controller commits), what a produce appends (validation, idempotence,
//! acks), what a fetch returns to a consumer or a follower, offset lookups, and how this node
//! follows its leaders (epoch truncation, appending what they send). A plain struct driven with
//! an explicit `now`; it never reads a clock, sleeps or touches a socket, and touches the disk
//! only through the partition logs and `log::dir`. What the shell must do besides answering —
//! wake waiting requests, register anew, log a line — comes back as [`Action`]s.
//!
//! By responsibility: `reconcile` (replicas and roles from the metadata, topic configs applied
//! to open logs), `leader` (produce, fetch, offsets, ISR proposals), `log_start` (DeleteRecords
//! and the log start offset it persists), `follower` (epoch truncation, appending what leaders
//! send),
//! `opening` (replicas opened as a job off the node's gate, created ones made durable by one
//! file-system sync before they take a role), `fetcher`
//! (the replica fetcher's rounds, shared by the shell and the tests), `truncation`
//! (a follower's truncation and producer-state rebuild as a job off the node's gate),
//! `upkeep` (time-driven work, producer ids), `due` (what the upkeep has to visit), `partition` (one replica), `error`, `config`.
//!
//! Layout of the data directory:
//!
//! ```text
//! <data>/<topic>-<p>/                 one partition log (see docs/storage.md)
//! <data>/<topic>-<p>/partition.metadata   the topic id the directory belongs to (log::dir)
//! <data>/<topic>-<p>/log-start-offset-checkpoint   the log start DeleteRecords set (log::dir)
//! <data>/producer-ids                 the next unallocated producer id of this node (log::dir)
//! <data>/__cluster_metadata-0/        the metadata log, on the controller node only
//! ```

mod cleaning;
mod config;
mod due;
mod error;
pub mod fetch_session;
mod fetcher;
mod follower;
mod leader;
mod log_start;
mod markers;
mod opening;
mod partition;
mod partitions;
pub mod producer;
mod reconcile;
mod removal;
mod topic_ids;
mod truncation;
pub mod share_read;
pub mod stats;
pub mod rules;
mod upkeep;

pub use config::{BrokerConfig, Planted, PlantedBug};
pub use opening::{OpenJob, Opened};
pub use error::Error;
pub use fetcher::{FetchAnswer, ReplicaFetcher, Step, Then};
pub use partition::{producers_of, record_appended, replayed_aborted, replayed_producers, restored_producers, Fetched, Fetcher, Following, IsrAnswer, IsrReply, Partition, Produced};
pub use leader::{Incoming, Unverified};
pub use partitions::{PartitionMap, Partitions};
pub use truncation::{apply_truncated, owed_truncation, TruncateJob, Truncated};
pub use upkeep::{producer_id_block, producer_id_node_shift};

use crate::metadata::configs::TopicSettings;
use crate::metadata::Image;
use crate::storage::Disk;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use upkeep::ProducerIds;
pub use upkeep::{ProducerIdBlock, StagedCheckpoints};

/// What a broker call asks of the shell besides its answer. The shell performs them in order;
/// tests assert on them; nothing is left latched inside the broker for a later call to drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A high watermark moved or a replica became leader: requests waiting on this node
    /// (acks=all produces, parked fetches) look again.
    Wake,
    /// A partition this node led went offline: register anew with the controller, which takes
    /// this node out of every leadership and ISR (Kafka halts a broker whose only log
    /// directory failed; this is that restart, without stopping the process).
    Reregister,
    /// A line for the operator: recovery cuts, replicas opened or removed, storage failures.
    Log(Level, String),
    /// This node became the leader of a partition at a leader epoch (logged as a line too); the
    /// simulator checks that no two nodes lead one partition at one epoch.
    Leading { topic: String, topic_id: [u8; 16], partition: i32, leader_epoch: i32 },
    /// A partition's log owes a sync (its flush policy or a roll asked for one): the shell
    /// runs the job off the node's lock and reports with [`Broker::synced`]. A produce answers
    /// only after the syncs its decision asked for; a follower fetches again only after them.
    Sync { topic: String, partition: i32, job: crate::log::SyncJob },
    /// Replicas to open (created, moved here, retried after a failure): the shell runs the job
    /// off the node's lock and reports with `node::Input::Opened` (`opening`).
    Open(OpenJob),
    /// The periodic checkpoint staged these logs' files: the shell syncs the file system off
    /// the node's lock, then reports with `node::Input::CheckpointSynced`, whose commit it
    /// syncs again (the renames).
    SyncCheckpoint(StagedCheckpoints),
    /// A message for another voter of the metadata quorum: the shell queues it on that voter's
    /// connection, or drops it if the queue is full (Raft retries on its timers).
    Raft(crate::controller::raft::Message),
    /// The metadata quorum committed, appended, or changed its active controller: fetches of
    /// the metadata log and requests waiting on this node look again.
    MetadataMoved,
    /// The replica fetcher of `leader` asks this of it next (`node::FetcherInput::Next`): the
    /// shell's fetcher task sends it and brings the answer back.
    FetchFrom { leader: i32, step: Step },
    /// The fetcher of `leader` pauses before its next round: the leader does not know the
    /// partition the way this node does yet.
    FetcherBackOff { leader: i32 },
    /// The files of segments retention or DeleteRecords deleted (their names are gone): the
    /// shell closes them off the node's lock, since the last close frees their blocks.
    Release(crate::log::Released),
    /// The next block of producer ids to persist ahead of use (`upkeep`): the shell runs the job
    /// off the node's lock and reports with `node::Input::ProducerIdsPersisted`.
    PersistProducerIds(ProducerIdBlock),
    /// A removed replica's retired directory (`removal`): the shell unlinks its files and
    /// removes it off the node's lock; a failure is a line for the operator (the next
    /// registration finds the directory again).
    Remove(std::path::PathBuf),
    /// A cleaning step (its reads, judgements and writes of the `.cleaned` file): the shell
    /// runs it off the node's lock and reports with `node::Input::Cleaned` (`log::pass::job`).
    Clean { topic: String, partition: i32, job: crate::log::CleanJob },
    /// A cleaned group's swap (its syncs, renames and directory syncs): the shell runs it off
    /// the node's lock and reports with `node::Input::Swapped` (`log::swap`).
    Swap { topic: String, partition: i32, job: crate::log::SwapJob },
    /// A follower's truncation (its syncs, file cut and checkpoint) and the producer-state
    /// rebuild after it: the shell runs it off the node's lock and reports with
    /// `node::Input::Truncated` (`truncation`).
    Truncate { topic: String, partition: i32, job: TruncateJob },
    /// A step of a coordinator's load of its state partition (a region of the log to read,
    /// check and decode): the shell runs it off the node's lock and reports with
    /// `node::Input::Loaded` (`node::coordinator_load`).
    Load { topic: String, partition: i32, job: crate::node::LoadJob },
    /// A coordinator's answer for a request that waited on `ticket` (a rebalance completed, a
    /// commit replicated, a transaction's state written): the shell hands it to the request
    /// holding the ticket.
    Answer { ticket: Ticket, answer: Answer },
    /// Transaction markers the transaction coordinator sends to a partition leader (itself
    /// included, as Kafka's coordinator does): the shell sends the WriteTxnMarkers and reports
    /// its answer with `node::Input::MarkersAnswered`.
    SendMarkers(crate::txn::markers::Send),
    /// A share-partition leader's read or write of its state at its group's coordinator
    /// (`share::leader`): the shell sends it and reports the answer with
    /// `node::Input::ShareStateAnswered`.
    ShareState(crate::share::leader::Send),
}

/// A coordinator's ticket: which coordinator handed it out, and its number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ticket {
    Group(crate::group::Ticket),
    Txn(crate::txn::Ticket),
    /// The share-partition leader's (`share::leader`).
    Share(u64),
}

/// The answer of a [`Ticket`], from its coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Group(crate::group::Answer),
    Txn(crate::txn::Answer),
    Share(crate::share::leader::Results),
}

/// How loud an [`Action::Log`] line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Action {
    /// The text of a log line (for tests and traces), or None.
    pub fn line(&self) -> Option<&str> {
        match self {
            Action::Log(_, line) => Some(line),
            _ => None,
        }
    }
}

pub struct Broker {
    config: BrokerConfig,
    disk: Arc<dyn Disk>,
    /// The cluster metadata as far as this node has applied it.
    image: Image,
    /// Local replicas, opened when the metadata makes this node a replica.
    partitions: Partitions,
    /// Replicas that failed to open or went offline, and when to try opening them again.
    offline: BTreeMap<(String, i32), u64>,
    /// Offline replicas this node led when their log failed, with their topic's id and that
    /// leader epoch: opened again only once the image names a later one
    /// (`upkeep::reopen_failed`); forgotten with the topic.
    failed_leading: BTreeMap<(String, i32), ([u8; 16], i32)>,
    /// Replicas whose open job is out, until its report (`opening`).
    opening: BTreeMap<(String, i32), opening::Opening>,
    /// The opens this step queued: the step ends by handing them out as one job (`opening`).
    to_open: Vec<opening::ToOpen>,
    /// How many opens were queued (each open's attempt number, `opening`).
    open_attempts: u64,
    /// Replica directories with a marker written that no sync has covered: their next open
    /// syncs it even if it reads whole (`opening`).
    creating: BTreeSet<(String, i32)>,
    /// Producer ids handed out by this node.
    producer_ids: ProducerIds,
    /// Topics a Metadata request asked to auto-create; the shell forwards them to the controller.
    auto_create: BTreeSet<String>,
    /// The epoch this process registered with. Until the metadata shows that registration,
    /// the image may be stale — a restart may have lost records while it led — so this node
    /// takes no role (it neither leads nor follows) before then.
    registered: Option<i64>,
    /// The broker epoch named by the clean-shutdown marker found at open (KIP-966's previous
    /// broker epoch), until the first registration takes it; -1: none, an unclean shutdown.
    previous_epoch: i64,
    /// Appends acknowledged but not yet made (only with `PlantedBug::AckBeforeAppend`).
    deferred: Vec<(String, i32, Vec<u8>)>,
    /// The next KIP-890 verification guard this node hands out ([`Broker::start_verification`]).
    next_guard: u64,
    /// The log cleaner's turns (`cleaning`).
    cleaner: cleaning::Cleaner,
    /// The KIP-227 fetch sessions of this node's fetchers, as leader (`fetch_session`).
    fetch_sessions: fetch_session::FetchSessions,
    /// The image's topic names by id, for requests that name topics by id (`topic_ids`).
    topic_ids: topic_ids::TopicIds,
    /// What the time-driven upkeep has to visit, kept by the calls that create the work (`due`).
    due: due::Upkeep,
    /// Counters for the metrics endpoint (`stats`).
    stats: stats::Stats,
    /// What this broker's leaders served throttled followers (KIP-73, `leader.rs`).
    replication_rate: crate::throttle::SharedRate,
    /// What its throttled followers fetched (KIP-73, the follower's side, `fetcher.rs`).
    follower_rate: crate::throttle::SharedRate,
}

impl Broker {
    /// Opens the broker with no partitions: they open as the metadata log names this node a
    /// replica (`apply_metadata`). Reads the producer-id block.
    pub fn open(disk: Arc<dyn Disk>, config: BrokerConfig, _now: u64) -> Result<Broker, Error> {
        config.log.validate().map_err(|e| Error::InvalidConfig(e.to_string()))?;
        if config.node_id < 0 {
            return Err(Error::InvalidConfig(format!("node.id {} must be >= 0", config.node_id)));
        }
        let data = config.data_dir.clone();
        crate::storage::create_dir_all_durably(disk.as_ref(), &data).map_err(|e| Error::Storage(format!("create {}: {e}", data.display())))?;
        let producer_ids = ProducerIds::open(disk.clone(), &data, config.node_id)?;
        let cleaner = cleaning::Cleaner::new(config.cleaner_io_bytes_per_second);
        // Only ELR reads the marker, and without it nothing touches the file: runs without
        // ELR do the disk calls they always did.
        let previous_epoch = match config.eligible_leader_replicas {
            true => crate::log::dir::take_clean_shutdown(disk.as_ref(), &data).map_err(Error::from)?.unwrap_or(crate::controller::no_previous_epoch),
            false => crate::controller::no_previous_epoch,
        };
        Ok(Broker {
            config,
            disk,
            image: Image::default(),
            partitions: Partitions::default(),
            offline: BTreeMap::new(),
            failed_leading: BTreeMap::new(),
            opening: BTreeMap::new(),
            to_open: Vec::new(),
            open_attempts: 0,
            creating: BTreeSet::new(),
            producer_ids,
            auto_create: BTreeSet::new(),
            registered: None,
            previous_epoch,
            deferred: Vec::new(),
            next_guard: 0,
            cleaner,
            fetch_sessions: fetch_session::FetchSessions::new(),
            topic_ids: Default::default(),
            due: due::Upkeep::default(),
            stats: stats::Stats::default(),
            replication_rate: Default::default(),
            follower_rate: Default::default(),
        })
    }

    /// The size of the data directory's volume and what is free of it, `(total, usable)`;
    /// None where it cannot be told (a disk without a size). One statvfs, no blocking IO.
    pub fn space(&self) -> Option<(u64, u64)> {
        self.disk.space(&self.config.data_dir).ok()
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The previous broker epoch to register with (BrokerRegistration v3): the one the
    /// clean-shutdown marker named, for the first registration of this process only; every
    /// later one (a log went offline) is as after an unclean shutdown.
    pub fn take_previous_epoch(&mut self) -> i64 {
        std::mem::replace(&mut self.previous_epoch, crate::controller::no_previous_epoch)
    }

    /// After a clean stop (every partition flushed and checkpointed): leaves the marker that
    /// lets the next start register as a clean shutdown of `broker_epoch` (ELR only).
    pub fn mark_clean_shutdown(&self, broker_epoch: i64) -> Result<(), Error> {
        if !self.config.eligible_leader_replicas {
            return Ok(());
        }
        crate::log::dir::write_clean_shutdown(self.disk.as_ref(), &self.config.data_dir, broker_epoch).map_err(Error::from)
    }

    /// What this broker counted for its metrics.
    pub fn stats(&self) -> &stats::Stats {
        &self.stats
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    /// What a topic without overrides gets on this broker: its own settings.
    pub fn topic_defaults(&self) -> TopicSettings {
        let c = &self.config;
        TopicSettings { log: c.log.clone(), min_insync: c.min_insync_replicas, unclean_leader_election: c.unclean_leader_election }
    }

    /// A topic's effective settings here: this broker's defaults under the topic's overrides.
    /// The controller checked the overrides against its own defaults; a set that does not
    /// resolve against this broker's (say, `min.compaction.lag.ms` above this broker's
    /// `max.compaction.lag.ms`) is an error, and the caller keeps this broker's defaults.
    pub fn topic_settings(&self, name: &str) -> Option<Result<TopicSettings, String>> {
        let t = self.image.topics.get(name)?;
        Some(TopicSettings::resolve(&self.topic_defaults(), &t.config))
    }

    /// The name of the topic with id `id` in this broker's image (KIP-516's requests by id).
    pub fn topic_by_id(&self, id: [u8; 16]) -> Option<&Arc<str>> {
        self.topic_ids.name(id)
    }

    /// The fetch sessions this node keeps as leader (the Fetch handler applies them).
    pub fn fetch_sessions(&mut self) -> &mut fetch_session::FetchSessions {
        &mut self.fetch_sessions
    }

    pub fn partitions(&self) -> &Partitions {
        &self.partitions
    }

    fn partition_dir(&self, name: &str, p: i32) -> PathBuf {
        self.config.data_dir.join(format!("{name}-{p}"))
    }

    /// A local replica, or the error a client should get for it: unknown, or not here.
    fn local(&self, name: &str, p: i32) -> Result<&Partition, Error> {
        self.partitions.get(name, p).ok_or_else(|| self.missing(name, p))
    }

    fn local_mut(&mut self, name: &str, p: i32) -> Result<&mut Partition, Error> {
        if !self.partitions.contains(name, p) {
            return Err(self.missing(name, p));
        }
        Ok(self.partitions.get_mut(name, p).expect("checked above"))
    }

    /// Why a partition is not open here: its log is offline (KAFKA_STORAGE_ERROR, as Kafka
    /// answers for a failed log directory), it is not a replica here, or it does not exist.
    fn missing(&self, name: &str, p: i32) -> Error {
        if self.offline.contains_key(&(name.to_string(), p)) {
            return Error::Storage(format!("{name}-{p} is offline after a storage failure; it is reopened once the disk answers"));
        }
        match self.image.partition(name, p) {
            Some(_) => Error::NotLeaderOrFollower,
            None => Error::UnknownTopicOrPartition,
        }
    }

    /// A local replica this node leads, checking the request's leader epoch (-1: unchecked).
    fn led(&self, name: &str, p: i32, epoch: i32) -> Result<&Partition, Error> {
        let part = self.local(name, p)?;
        part.check_lead(epoch)?;
        Ok(part)
    }

    /// One line per local replica: role, epochs, ISR, high watermark, log end (for logs).
    pub fn describe(&self) -> Vec<String> {
        self.partitions
            .iter()
            .map(|((n, p), part)| {
                let r = &part.replication;
                format!("{n}-{p}: {:?} epoch {} isr {:?} hw {} leo {}{}", r.role, r.leader_epoch, r.isr, r.high_watermark(), part.leo(), if r.needs_truncation { " (to truncate)" } else { "" })
            })
            .chain(self.offline.keys().map(|(n, p)| format!("{n}-{p}: offline")))
            .chain(self.opening.keys().map(|(n, p)| format!("{n}-{p}: opening")))
            .collect()
    }

    /// The earliest `flush.ms` deadline over all partitions.
    pub fn next_deadline(&self) -> Option<u64> {
        self.due.logs.next_flush(&self.partitions)
    }

    /// After a call that may have given a partition's log time-driven work (`due`).
    /// A sync job of `name`-`p`'s log ([`Action::Sync`]) came back: the recovery point moves
    /// and, as leader, what the flush policy held back now counts for the high watermark; a
    /// failed one takes the log offline (then handled as any failed log, `upkeep`).
    pub fn synced(&mut self, name: &str, p: i32, stamp: crate::log::SyncStamp, result: Result<(), crate::log::LogError>, now: u64) -> Vec<Action> {
        let me = self.config.node_id;
        let mut out = Vec::new();
        let Some(part) = self.partitions.get_mut(name, p).filter(|part| part.log.owns(&stamp)) else { return out };
        if let Err(e) = &result {
            out.push(Action::Log(Level::Error, format!("{name}-{p}: {e}")));
        }
        let failed = result.is_err();
        let written = part.log.written_end();
        part.log.synced(stamp, result);
        let end = part.counted_end();
        let moved = part.replication.on_append(end);
        if moved {
            part.observed(&self.config.observer, me, name, p, now);
        }
        // Followers read only what is written: their parked fetches look again once more is.
        if moved || (part.log.written_end() > written && part.replication.has_followers()) {
            out.push(Action::Wake);
        }
        // A write's report changes the log's time-driven work only through its mark (the
        // retention bound) or a failure: the common case skips the second lookup.
        if moved || failed || stamp.syncs() {
            self.note_log(name, p);
        }
        out
    }

    /// A cleaning swap of `name`-`p`'s log ([`Action::Swap`]) came back: the cleaned segment
    /// takes its group's place, or the log goes offline; deletions that waited for it (below
    /// the log start) are made now, and the cleaner's next turn is due.
    pub fn swapped(&mut self, name: &str, p: i32, done: crate::log::Swapped, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if crate::log::SwapJob::fenced(&done) {
            out.push(Action::Log(Level::Info, format!("{name}-{p}: a cleaning swap ran after its log was let go (reopened or deleted) and did nothing")));
        }
        let Some(part) = self.partitions.get_mut(name, p) else { return out };
        let floor = part.start_floor;
        let trimmed = part.log.swapped(done).and_then(|()| log_start::trim_below(&mut part.log, floor, now).map(drop));
        if let Err(e) = trimmed {
            out.push(Action::Log(Level::Error, format!("{name}-{p}: cleaning: {e}")));
        }
        let next = self.cleaner_due().min(now);
        self.cleaner.next_at(next);
        self.note_log(name, p);
        out
    }

    fn note_log(&mut self, name: &str, p: i32) {
        if let Some((topic, part)) = self.partitions.get_named(name, p) {
            self.due.logs.note(topic, p, &part.log, part.high_watermark());
        }
    }
}

#[cfg(test)]
mod tests;
