//! The broker's decisions on one node: which partitions it holds and in what role (from the
//! cluster metadata the controller commits), what a produce appends (validation, idempotence,
//! acks), what a fetch returns to a consumer or a follower, offset lookups, and how this node
//! follows its leaders (epoch truncation, appending what they send). A plain struct driven with
//! an explicit `now`: it does its IO only through the [`Disk`] it was given and never reads a
//! clock, sleeps or touches a socket — the async shell (`server`) does that and calls in here.
//!
//! Layout of the data directory:
//!
//! ```text
//! <data>/<topic>-<p>/                 one partition log (see docs/storage.md)
//! <data>/<topic>-<p>/partition.metadata   the topic id the directory belongs to
//! <data>/producer-ids                 the next unallocated producer id of this node
//! <data>/__cluster_metadata-0/        the metadata log, on the controller node only
//! ```

pub mod producer;

use crate::kafka::{list_offsets, Code};
use crate::metadata::{topic, Image, MetadataRecord, PartitionInfo};
use crate::log::{batch, BatchError, BatchHeader, Log, LogConfig, LogError};
use crate::replication::{Change, FetchRefusal, IsrProposal, Replication, Role};
use crate::storage::{read_exact_at, write_atomically, Disk};
use bytes::Bytes;
use producer::{ProducerStates, SequenceError, Verdict};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Producer ids are persisted in blocks of this many, so allocation writes the disk once per
/// block and a restart never hands out an id twice (it skips the rest of the block).
pub const producer_id_block: i64 = 1000;

/// Each node allocates producer ids from its own range, `node_id << producer_id_node_shift`
/// onwards, so ids are unique in the cluster without asking the controller (2^32 per node).
pub const producer_id_node_shift: u32 = 32;

/// Broker-wide settings (Kafka names in the docs of each field).
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`
    pub node_id: i32,
    /// `advertised.listeners` host and port, as clients should connect.
    pub advertised_host: String,
    pub advertised_port: i32,
    /// `log.dirs` (one directory).
    pub data_dir: PathBuf,
    pub cluster_id: String,
    /// The (single) controller voter, from `controller.quorum.voters` (`id@host:port`).
    pub controller_id: i32,
    pub controller_addr: String,
    /// `auto.create.topics.enable`
    pub auto_create_topics: bool,
    /// `num.partitions`: partitions of auto-created topics and of CreateTopics with -1.
    pub num_partitions: i32,
    /// `default.replication.factor`: replicas of auto-created topics and of CreateTopics with -1.
    pub default_replication_factor: i16,
    /// `min.insync.replicas`
    pub min_insync_replicas: i32,
    /// `replica.lag.time.max.ms`: a follower not caught up for this long leaves the ISR.
    pub replica_lag_ms_max: u64,
    /// `broker.session.timeout.ms`: the controller fences a broker silent for this long.
    pub session_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms`
    pub heartbeat_interval_ms: u64,
    /// `unclean.leader.election.enable` (the controller's default for topics).
    pub unclean_leader_election: bool,
    /// `log.*` defaults for every topic.
    pub log: LogConfig,
    /// A known bug switched on, so tests can prove the simulator's checkers catch it. Only
    /// test code sets this; no flag or file can.
    #[doc(hidden)]
    pub planted_bug: Option<PlantedBug>,
}

/// Bugs the simulator must be able to find (see sim's planted-bug test).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// Acknowledge a produce before appending it (the append happens at the next tick), so a
    /// crash in between loses an acknowledged write.
    AckBeforeAppend,
    /// Report a fetch's high watermark one below the truth, so consumers read above it.
    FetchAboveHighWatermark,
    /// Answer acks=all once the leader has appended, without waiting for the ISR (acks=1 in
    /// disguise), so a leader failure loses acknowledged writes.
    AcksAllWithoutIsr,
    /// A follower skips KIP-279 truncation, keeping records the new leader never had, so
    /// replicas disagree below the high watermark.
    FollowerSkipsTruncation,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            node_id: 0,
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            data_dir: PathBuf::from("data"),
            cluster_id: "seedlog-cluster".into(),
            controller_id: 0,
            controller_addr: "127.0.0.1:9092".into(),
            auto_create_topics: true,
            num_partitions: 1,
            default_replication_factor: 1,
            min_insync_replicas: 1,
            replica_lag_ms_max: crate::constants::replica_lag_ms_default,
            session_timeout_ms: crate::constants::session_timeout_ms_default,
            heartbeat_interval_ms: crate::constants::heartbeat_interval_ms_default,
            unclean_leader_election: false,
            log: LogConfig::default(),
            planted_bug: None,
        }
    }
}

/// A refused operation, carrying the Kafka error code it is answered with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// UNKNOWN_TOPIC_OR_PARTITION (3)
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// LEADER_NOT_AVAILABLE (5): the partition has no leader right now (election, creation).
    #[error("the partition has no leader right now")]
    LeaderNotAvailable,
    /// NOT_LEADER_OR_FOLLOWER (6): this broker does not lead the partition.
    #[error("this broker is not the partition's leader")]
    NotLeaderOrFollower,
    /// FENCED_LEADER_EPOCH (74) / UNKNOWN_LEADER_EPOCH (75): the request's leader epoch is
    /// older / newer than this leader's.
    #[error("{0}")]
    Epoch(FetchRefusal),
    /// INVALID_TOPIC_EXCEPTION (17)
    #[error("{0}")]
    InvalidTopic(String),
    /// INVALID_CONFIG (40)
    #[error("{0}")]
    InvalidConfig(String),
    /// INVALID_REQUIRED_ACKS (21)
    #[error("acks={0} is not one of -1, 0, 1")]
    InvalidRequiredAcks(i16),
    /// OFFSET_OUT_OF_RANGE (1)
    #[error("offset {requested} is outside [{start}, {end}]")]
    OffsetOutOfRange { requested: i64, start: i64, end: i64 },
    /// The batch failed validation; code per [`BatchError`].
    #[error("{0}")]
    Batch(#[from] BatchError),
    /// INVALID_PRODUCER_EPOCH (47) / OUT_OF_ORDER_SEQUENCE_NUMBER (45)
    #[error("{0}")]
    Sequence(#[from] SequenceError),
    /// KAFKA_STORAGE_ERROR (56): disk full, IO error, corrupt or offline log.
    #[error("storage: {0}")]
    Storage(String),
    /// NOT_ENOUGH_REPLICAS (19): acks=all while the ISR is smaller than min.insync.replicas.
    #[error("in-sync replicas {isr} < min.insync.replicas {min}")]
    NotEnoughReplicas { isr: i32, min: i32 },
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20): appended, but the ISR shrank below
    /// min.insync.replicas before the batch was replicated.
    #[error("appended, but in-sync replicas {isr} < min.insync.replicas {min}")]
    NotEnoughReplicasAfterAppend { isr: i32, min: i32 },
    /// OFFSET_NOT_AVAILABLE (78): a new leader's high watermark has not reached the start of
    /// its epoch yet (KIP-207); the client retries.
    #[error("the leader's high watermark is not yet known in this leader epoch")]
    OffsetNotAvailable,
    /// REQUEST_TIMED_OUT (7): acks=all and the ISR did not replicate within the timeout.
    #[error("not replicated to the in-sync replicas within {0} ms")]
    RequestTimedOut(u64),
    /// Transactions are not implemented. TRANSACTIONAL_ID_AUTHORIZATION_FAILED would mislead;
    /// UNSUPPORTED_VERSION (35) tells clients the feature is not there.
    #[error("transactions are not supported")]
    TransactionsUnsupported,
}

impl Error {
    /// The Kafka error code. `modern` is false for request versions older than the one that
    /// introduced INVALID_RECORD, which then get CORRUPT_MESSAGE.
    pub fn kafka_error(&self, modern: bool) -> Code {
        match self {
            Error::UnknownTopicOrPartition => Code::UnknownTopicOrPartition,
            Error::LeaderNotAvailable => Code::LeaderNotAvailable,
            Error::NotLeaderOrFollower => Code::NotLeaderOrFollower,
            Error::Epoch(r) => r.kafka_error(),
            Error::InvalidTopic(_) => Code::InvalidTopicException,
            Error::InvalidConfig(_) => Code::InvalidConfig,
            Error::InvalidRequiredAcks(_) => Code::InvalidRequiredAcks,
            Error::OffsetOutOfRange { .. } => Code::OffsetOutOfRange,
            Error::Batch(BatchError::TooLarge { .. }) => Code::MessageTooLarge,
            Error::Batch(BatchError::UnsupportedMagic(_)) => Code::UnsupportedForMessageFormat,
            Error::Batch(BatchError::UnsupportedCompression(_)) => Code::UnsupportedCompressionType,
            Error::Batch(BatchError::BadRecordCount { .. } | BatchError::BadRecords(_)) if modern => Code::InvalidRecord,
            Error::Batch(_) => Code::CorruptMessage,
            Error::Sequence(SequenceError::StaleEpoch { .. }) => Code::InvalidProducerEpoch,
            Error::Sequence(SequenceError::OutOfOrder { .. }) => Code::OutOfOrderSequenceNumber,
            Error::Storage(_) => Code::KafkaStorageError,
            Error::NotEnoughReplicas { .. } => Code::NotEnoughReplicas,
            Error::NotEnoughReplicasAfterAppend { .. } => Code::NotEnoughReplicasAfterAppend,
            Error::RequestTimedOut(_) => Code::RequestTimedOut,
            Error::OffsetNotAvailable => Code::OffsetNotAvailable,
            Error::TransactionsUnsupported => Code::UnsupportedVersion,
        }
    }
}

impl From<LogError> for Error {
    fn from(e: LogError) -> Self {
        match e {
            LogError::InvalidBatch(b) => Error::Batch(b),
            LogError::OffsetOutOfRange { requested, start, end } => Error::OffsetOutOfRange { requested, start, end },
            LogError::Config(c) => Error::InvalidConfig(c),
            other => Error::Storage(other.to_string()),
        }
    }
}

/// One local replica: its log, its producers, its replication state.
pub struct Partition {
    /// The id of the topic this replica belongs to (a re-created topic has another).
    pub topic_id: [u8; 16],
    /// The topic's `min.insync.replicas` (topic configs are fixed at creation), kept here so a
    /// produce does not re-derive the topic's config.
    min_insync: i32,
    pub log: Log,
    producers: ProducerStates,
    pub replication: Replication,
}

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.replication.high_watermark()
    }

    fn leo(&self) -> i64 {
        self.log.log_end_offset()
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
    /// The batch was a retry of one already appended; nothing new was written.
    pub duplicate: bool,
}

/// What a fetch of one partition returns.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub records: Bytes,
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

/// Who is fetching: a consumer, or a follower replica (Kafka's `replica_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetcher {
    /// The follower's node id, or None for a consumer.
    pub replica: Option<i32>,
    /// The fetcher's current leader epoch (-1: not checked).
    pub leader_epoch: i32,
    /// A request answered again after waiting for data is not a new fetch: its offset says
    /// where the follower was when it sent it, so only the first handling counts as progress
    /// (a request parked from a follower that has since crashed must not keep it "caught up").
    pub again: bool,
}

impl Fetcher {
    pub const consumer: Fetcher = Fetcher { replica: None, leader_epoch: -1, again: false };

    /// A follower's fetch, handled for the first time.
    pub fn follower(id: i32, leader_epoch: i32) -> Fetcher {
        Fetcher { replica: Some(id), leader_epoch, again: false }
    }
}

/// A partition this node follows, as its replica fetcher needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Following {
    pub topic: String,
    pub partition: i32,
    pub leader_epoch: i32,
    pub fetch_offset: i64,
    /// Epoch truncation to do first: the latest epoch in the local log (None: empty log).
    pub truncate_from_epoch: Option<Option<i32>>,
}

pub struct Broker {
    config: BrokerConfig,
    disk: Arc<dyn Disk>,
    /// The cluster metadata as far as this node has applied it.
    image: Image,
    /// Local replicas, opened when the metadata makes this node a replica.
    partitions: BTreeMap<(String, i32), Partition>,
    /// Replicas that failed to open or went offline, and when to try opening them again.
    offline: BTreeMap<(String, i32), u64>,
    /// Next producer id to hand out, and the end of the block persisted for it.
    next_producer_id: i64,
    producer_id_limit: i64,
    /// Topics a Metadata request asked to auto-create; the shell forwards them to the controller.
    auto_create: BTreeSet<String>,
    /// Set when a leader's high watermark moved, so the shell wakes waiting producers.
    progressed: bool,
    /// A partition this node led went offline: the shell registers the broker anew, which takes
    /// it out of every leadership and ISR (Kafka halts a broker whose only log directory
    /// failed; this is that restart, without stopping the process).
    leader_log_failed: bool,
    /// The epoch this process registered with. Until the metadata shows that registration,
    /// the image may be stale — a restart may have lost records while it led — so this node
    /// takes no role (it neither leads nor follows) before then.
    registered: Option<i64>,
    /// Appends acknowledged but not yet made (only with `PlantedBug::AckBeforeAppend`).
    deferred: Vec<(String, i32, Vec<u8>)>,
}

fn storage(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Storage(format!("{what} {}: {e}", path.display()))
}

pub(crate) fn read_text(disk: &dyn Disk, path: &Path) -> Result<String, Error> {
    let f = disk.open(path, false).map_err(|e| storage("open", path, e))?;
    let len = f.len().map_err(|e| storage("stat", path, e))?;
    if len > 1 << 20 {
        return Err(Error::Storage(format!("{} is {len} bytes; not a metadata file", path.display())));
    }
    let mut buf = vec![0u8; len as usize];
    read_exact_at(f.as_ref(), &mut buf, 0).map_err(|e| storage("read", path, e))?;
    String::from_utf8(buf).map_err(|e| storage("decode", path, e))
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
        disk.create_dir_all(&data).map_err(|e| storage("create", &data, e))?;
        let first_id = (config.node_id as i64) << producer_id_node_shift;
        let mut broker = Broker {
            config,
            disk,
            image: Image::default(),
            partitions: BTreeMap::new(),
            offline: BTreeMap::new(),
            next_producer_id: first_id,
            producer_id_limit: first_id,
            auto_create: BTreeSet::new(),
            progressed: false,
            registered: None,
            leader_log_failed: false,
            deferred: Vec::new(),
        };
        let pid_path = data.join("producer-ids");
        if broker.disk.exists(&pid_path) {
            let text = read_text(broker.disk.as_ref(), &pid_path)?;
            let next: i64 = text.trim().parse().map_err(|_| Error::Storage(format!("{}: not a number", pid_path.display())))?;
            broker.next_producer_id = next.max(first_id);
            broker.producer_id_limit = broker.next_producer_id; // the rest of the last block may have been handed out
        }
        Ok(broker)
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    /// The log config and min.insync.replicas of a topic: broker defaults plus its overrides.
    pub fn topic_config(&self, name: &str) -> Option<(LogConfig, i32)> {
        let t = self.image.topics.get(name)?;
        let log = topic::apply_overrides(&self.config.log, &topic::log_overrides(&t.config)).unwrap_or_else(|_| self.config.log.clone());
        let min = t.config.get("min.insync.replicas").and_then(|v| v.trim().parse().ok()).unwrap_or(self.config.min_insync_replicas);
        Some((log, min))
    }

    pub fn partitions(&self) -> &BTreeMap<(String, i32), Partition> {
        &self.partitions
    }

    fn partition_dir(&self, name: &str, p: i32) -> PathBuf {
        self.config.data_dir.join(format!("{name}-{p}"))
    }

    /// A local replica, or the error a client should get for it: unknown, or not here.
    fn local(&self, name: &str, p: i32) -> Result<&Partition, Error> {
        let key = (name.to_string(), p);
        match self.partitions.get(&key) {
            Some(part) => Ok(part),
            None => Err(self.missing(&key)),
        }
    }

    fn local_mut(&mut self, name: &str, p: i32) -> Result<&mut Partition, Error> {
        let key = (name.to_string(), p);
        if !self.partitions.contains_key(&key) {
            return Err(self.missing(&key));
        }
        Ok(self.partitions.get_mut(&key).expect("checked above"))
    }

    /// Why a partition is not open here: its log is offline (KAFKA_STORAGE_ERROR, as Kafka
    /// answers for a failed log directory), it is not a replica here, or it does not exist.
    fn missing(&self, key: &(String, i32)) -> Error {
        if self.offline.contains_key(key) {
            return Error::Storage(format!("{}-{} is offline after a storage failure; it is reopened once the disk answers", key.0, key.1));
        }
        match self.image.partition(&key.0, key.1) {
            Some(_) => Error::NotLeaderOrFollower,
            None => Error::UnknownTopicOrPartition,
        }
    }

    /// A local replica this node leads, checking the request's leader epoch (-1: unchecked).
    fn led(&self, name: &str, p: i32, epoch: i32) -> Result<&Partition, Error> {
        let part = self.local(name, p)?;
        lead_check(part, epoch)?;
        Ok(part)
    }

    // ---- metadata -------------------------------------------------------------------------

    /// Applies one committed metadata record (see [`Broker::apply_metadata_batch`]).
    pub fn apply_metadata(&mut self, offset: i64, record: &MetadataRecord, now: u64) -> Vec<String> {
        self.apply_metadata_batch(&[(offset, record.clone())], now)
    }

    /// Applies a run of committed metadata records as one step, then brings the local replicas
    /// in line with the resulting image: a replica whose topic is gone, or was re-created under
    /// another id, is removed; the partitions the records touched are opened and given their
    /// roles. Reconciling once at the end, not per record, is what makes a replay safe: replaying
    /// a log in which a topic was deleted and re-created must never open the old topic over the
    /// new one's directory. Returns one line per notable event.
    pub fn apply_metadata_batch(&mut self, records: &[(i64, MetadataRecord)], now: u64) -> Vec<String> {
        let mut touched: BTreeSet<(String, i32)> = BTreeSet::new();
        let (mut all, mut stale) = (false, false);
        for (offset, record) in records {
            self.image.apply(*offset, record);
            match record {
                MetadataRecord::Partition { topic, partition, .. } => {
                    touched.insert((topic.clone(), *partition));
                }
                MetadataRecord::Topic { name, .. } => {
                    self.auto_create.remove(name);
                }
                MetadataRecord::RegisterBroker { id, epoch, .. } if *id == self.config.node_id && Some(*epoch) == self.registered => all = true,
                // A registration of this node that this process did not get the answer to:
                // the controller has moved its roles; none of ours is current any more.
                MetadataRecord::RegisterBroker { id, .. } if *id == self.config.node_id => stale = true,
                _ => {}
            }
        }
        let mut notes = Vec::new();
        if stale {
            // Dropped even if this process's own registration is in the same run: a newer one
            // follows it, and `ready` is false until this process registers again.
            for part in self.partitions.values_mut() {
                part.replication.stop();
            }
        }
        let stale: Vec<(String, i32)> = self
            .partitions
            .iter()
            .filter(|((n, p), part)| self.image.topics.get(n).is_none_or(|t| t.id != part.topic_id || *p as usize >= t.partitions.len()))
            .map(|(k, _)| k.clone())
            .collect();
        for (name, p) in stale {
            match self.remove_local(&name, p) {
                Ok(()) => notes.push(format!("{name}-{p}: topic deleted; replica removed")),
                Err(e) => notes.push(format!("{name}-{p}: removing: {e}")),
            }
        }
        let image = &self.image;
        self.offline.retain(|(n, _), _| image.topics.contains_key(n));
        if all {
            notes.extend(self.reconcile_all(now));
            return notes;
        }
        for (topic, partition) in touched {
            if let Err(e) = self.reconcile(&topic, partition, now, &mut notes) {
                notes.push(format!("{topic}-{partition}: {e}"));
                self.offline.insert((topic, partition), now + crate::constants::failed_log_reopen_ms);
            }
        }
        notes
    }

    /// Whether the image holds this process's own registration: only then are its roles current.
    fn ready(&self) -> bool {
        self.registered.is_some() && self.image.brokers.get(&self.config.node_id).map(|b| b.epoch) == self.registered
    }

    /// Whether a partition this node led went offline since the last call (see
    /// `leader_log_failed`).
    pub fn take_leader_log_failure(&mut self) -> bool {
        std::mem::take(&mut self.leader_log_failed)
    }

    /// The re-registration that `take_leader_log_failure` asked for did not happen: ask again.
    pub fn leader_log_failure_pending(&mut self) {
        self.leader_log_failed = true;
    }

    /// The controller accepted this process's registration with `epoch`. Every role is dropped
    /// until the metadata log shows that registration (see [`Broker::ready`]).
    pub fn registered(&mut self, epoch: i64, now: u64) -> Vec<String> {
        self.registered = Some(epoch);
        for part in self.partitions.values_mut() {
            part.replication.stop();
        }
        if self.ready() { self.reconcile_all(now) } else { Vec::new() }
    }

    fn reconcile_all(&mut self, now: u64) -> Vec<String> {
        let mut notes = Vec::new();
        let keys: Vec<(String, i32)> = self.image.topics.iter().flat_map(|(n, t)| (0..t.partitions.len() as i32).map(move |p| (n.clone(), p))).collect();
        for (name, p) in keys {
            if let Err(e) = self.reconcile(&name, p, now, &mut notes) {
                notes.push(format!("{name}-{p}: {e}"));
                self.offline.insert((name, p), now + crate::constants::failed_log_reopen_ms);
            }
        }
        notes
    }

    /// Opens, re-roles or removes the local replica of one partition per the image.
    fn reconcile(&mut self, name: &str, p: i32, now: u64, notes: &mut Vec<String>) -> Result<(), Error> {
        let Some(info) = self.image.partition(name, p).cloned() else { return Ok(()) };
        let me = self.config.node_id;
        let key = (name.to_string(), p);
        if !info.replicas.contains(&me) {
            if self.partitions.contains_key(&key) {
                self.remove_local(name, p)?;
                notes.push(format!("{name}-{p}: no longer a replica here; removed"));
            }
            return Ok(());
        }
        if !self.partitions.contains_key(&key) {
            let part = self.open_partition(name, p, now, notes)?;
            self.partitions.insert(key.clone(), part);
        }
        if !self.ready() {
            return Ok(()); // opened, but no role before this process's registration is applied
        }
        let part = self.partitions.get_mut(&key).expect("opened above");
        let leo = part.leo();
        let change = apply_info(&mut part.replication, &info, leo, now);
        if change == Change::BecameLeader {
            self.progressed = true;
            notes.push(format!("{name}-{p}: leader at epoch {} from offset {leo}", info.leader_epoch));
        }
        Ok(())
    }

    fn open_partition(&self, name: &str, p: i32, now: u64, notes: &mut Vec<String>) -> Result<Partition, Error> {
        let (config, min_insync) = self.topic_config(name).ok_or(Error::UnknownTopicOrPartition)?;
        let topic_id = self.image.topics.get(name).map(|t| t.id).ok_or(Error::UnknownTopicOrPartition)?;
        let dir = self.partition_dir(name, p);
        self.claim_dir(&dir, &topic_id, notes)?;
        let (log, report) = Log::open(self.disk.clone(), &dir, config, now)?;
        if let Some(cut) = &report.cut {
            notes.push(format!("{name}-{p}: recovery cut {} at byte {} ({} bytes): {}", cut.file.display(), cut.position, cut.bytes_removed, cut.reason));
        }
        for path in report.indexes_rebuilt.iter().chain(&report.segments_removed) {
            notes.push(format!("{name}-{p}: recovery rebuilt or removed {}", path.display()));
        }
        let mut producers = ProducerStates::default();
        log.for_each_header(|h| producers.record(h))?;
        // Until the leader says otherwise, only what this replica holds is known committed
        // by no one: start at the log start and learn the mark from the leader (or, as a
        // leader, from the ISR).
        let replication = Replication::new(self.config.node_id, log.log_start_offset());
        Ok(Partition { topic_id, min_insync, log, producers, replication })
    }

    /// Makes `dir` this topic's: a directory left by a deleted topic of the same name (another
    /// id in its `partition.metadata`) is emptied first, so old records never resurface.
    fn claim_dir(&self, dir: &Path, id: &[u8; 16], notes: &mut Vec<String>) -> Result<(), Error> {
        let marker = dir.join("partition.metadata");
        let expected = format!("version: 0\ntopic_id: {}\n", topic::hex(id));
        if self.disk.exists(&marker) {
            if read_text(self.disk.as_ref(), &marker)? == expected {
                return Ok(());
            }
            notes.push(format!("{}: left by a deleted topic of the same name; emptied", dir.display()));
            self.remove_dir(dir)?;
        }
        self.disk.create_dir_all(dir).map_err(|e| storage("create", dir, e))?;
        write_atomically(self.disk.as_ref(), &marker, expected.as_bytes()).map_err(|e| storage("write", &marker, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<(), Error> {
        if !self.disk.exists(dir) {
            return Ok(());
        }
        for file in self.disk.list(dir).map_err(|e| storage("list", dir, e))? {
            let f = dir.join(file);
            self.disk.remove(&f).map_err(|e| storage("remove", &f, e))?;
        }
        self.disk.remove_dir(dir).map_err(|e| storage("remove", dir, e))?;
        let data = &self.config.data_dir;
        self.disk.sync_dir(data).map_err(|e| storage("fsync", data, e))
    }

    fn remove_local(&mut self, name: &str, p: i32) -> Result<(), Error> {
        self.partitions.remove(&(name.to_string(), p));
        self.remove_dir(&self.partition_dir(name, p))
    }

    /// Asks for `name` to be auto-created (Metadata with auto-creation allowed): `Ok(false)`
    /// when auto-creation is off. The shell forwards the request to the controller.
    pub fn request_auto_create(&mut self, name: &str) -> Result<bool, Error> {
        if !self.config.auto_create_topics {
            return Ok(false);
        }
        topic::validate_name(name).map_err(Error::InvalidTopic)?;
        self.auto_create.insert(name.to_string());
        Ok(true)
    }

    /// Topics waiting to be created by the controller.
    pub fn auto_create_requests(&self) -> Vec<String> {
        self.auto_create.iter().cloned().collect()
    }

    /// The controller refused to auto-create `name` (the next Metadata request may ask again).
    pub fn auto_create_failed(&mut self, name: &str) {
        self.auto_create.remove(name);
    }

    // ---- leader side ----------------------------------------------------------------------

    /// Appends one v2 batch (a produce request's records for one partition) as the leader and
    /// answers with its offsets. `records` must hold exactly one batch (produce v3+). With
    /// acks=all the caller then waits for [`Broker::replicated`].
    pub fn produce(&mut self, name: &str, p: i32, records: &[u8], acks: i16, now: u64) -> Result<Produced, Error> {
        if !matches!(acks, -1..=1) {
            return Err(Error::InvalidRequiredAcks(acks));
        }
        let part = self.led(name, p, -1)?;
        let (isr, min) = (part.replication.isr.len() as i32, part.min_insync);
        if acks == -1 && isr < min {
            return Err(Error::NotEnoughReplicas { isr, min });
        }
        let header = batch::read_header(records)?;
        if header.is_transactional() || header.is_control() {
            return Err(Error::TransactionsUnsupported);
        }
        let h = batch::validate(records, part.log.config().max_message_bytes)?;
        let epoch = part.replication.leader_epoch;
        if let Verdict::Duplicate(seen) = part.producers.check(&h)? {
            let start = part.log.log_start_offset();
            return Ok(Produced { base_offset: seen.base_offset, last_offset: seen.last_offset, log_start_offset: start, leader_epoch: epoch, duplicate: true });
        }
        let mut bytes = records.to_vec();
        if self.config.planted_bug == Some(PlantedBug::AckBeforeAppend) {
            return self.defer(name, p, h, bytes);
        }
        let part = self.local_mut(name, p)?;
        let info = part.log.append(&mut bytes, epoch, now)?;
        let stamped = batch::read_header(&bytes)?;
        part.producers.record(&stamped);
        debug_assert_eq!(stamped.base_offset, info.base_offset);
        let leo = part.leo();
        let moved = part.replication.on_append(leo);
        let start = part.log.log_start_offset();
        self.progressed |= moved;
        Ok(Produced { base_offset: info.base_offset, last_offset: info.last_offset, log_start_offset: start, leader_epoch: epoch, duplicate: false })
    }

    /// The planted bug: acknowledge now, append at the next tick.
    fn defer(&mut self, name: &str, p: i32, h: BatchHeader, bytes: Vec<u8>) -> Result<Produced, Error> {
        let pending: i64 = self.deferred.iter().filter(|(t, q, _)| t == name && *q == p).filter_map(|(_, _, b)| batch::read_header(b).ok()).map(|h| h.records_count as i64).sum();
        let part = self.local_mut(name, p)?;
        let base_offset = part.leo() + pending;
        part.producers.record(&BatchHeader { base_offset, ..h });
        let produced = Produced {
            base_offset,
            last_offset: base_offset + h.last_offset_delta as i64,
            log_start_offset: part.log.log_start_offset(),
            leader_epoch: part.replication.leader_epoch,
            duplicate: false,
        };
        self.deferred.push((name.to_string(), p, bytes));
        Ok(produced)
    }

    /// For an acks=all produce: `Ok(true)` once the high watermark passed `produced`, `Ok(false)`
    /// while waiting, an error when the leadership it was appended under ended, or the ISR
    /// shrank below min.insync.replicas by the time it was replicated.
    pub fn replicated(&self, name: &str, p: i32, produced: &Produced) -> Result<bool, Error> {
        if matches!(self.config.planted_bug, Some(PlantedBug::AckBeforeAppend | PlantedBug::AcksAllWithoutIsr)) {
            return Ok(true); // the planted bugs acknowledge without the ISR
        }
        // Kafka's answer when the leadership a delayed produce was appended under ends; the
        // batch may or may not survive, and an idempotent retry is deduplicated.
        let part = self.led(name, p, produced.leader_epoch).map_err(|_| Error::NotLeaderOrFollower)?;
        if part.high_watermark() <= produced.last_offset {
            return Ok(false);
        }
        let (isr, min) = (part.replication.isr.len() as i32, part.min_insync);
        if isr < min {
            return Err(Error::NotEnoughReplicasAfterAppend { isr, min });
        }
        Ok(true)
    }

    /// Whole batches from `offset`, within `max_bytes` (at least one batch when `min_one`,
    /// Kafka's KIP-74 rule for the first partition of a response). A consumer reads up to the
    /// high watermark; a follower reads to the log end, and its fetch offset tells the leader
    /// how far it has replicated.
    pub fn fetch(&mut self, name: &str, p: i32, offset: i64, max_bytes: usize, min_one: bool, who: Fetcher, now: u64) -> Result<Fetched, Error> {
        let part = self.led(name, p, who.leader_epoch)?;
        let (leo, start) = (part.leo(), part.log.log_start_offset());
        if offset < start || offset > leo {
            return Err(Error::OffsetOutOfRange { requested: offset, start, end: leo });
        }
        let upper = match who.replica {
            Some(r) => {
                part.replication.check_fetch(r, who.leader_epoch).map_err(Error::Epoch)?;
                if !who.again {
                    let part = self.local_mut(name, p)?;
                    self.progressed |= part.replication.on_follower_fetch(r, offset, leo, now);
                }
                leo
            }
            None => part.high_watermark(),
        };
        let part = self.local(name, p)?;
        let records = if (max_bytes == 0 && !min_one) || offset >= upper {
            Bytes::new()
        } else {
            let r = part.log.read(offset, max_bytes.max(1), upper)?;
            if !min_one && r.bytes.len() > max_bytes { Bytes::new() } else { r.bytes }
        };
        let hw = part.high_watermark();
        let hw = if self.config.planted_bug == Some(PlantedBug::FetchAboveHighWatermark) && hw > 0 { hw - 1 } else { hw };
        Ok(Fetched { high_watermark: hw, log_start_offset: start, records })
    }

    /// Whether a leader's high watermark moved since the last call (the shell then wakes
    /// producers waiting for acks=all).
    pub fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.progressed)
    }

    /// ListOffsets: -2 earliest, -1 latest (the high watermark), else the first offset with a
    /// timestamp at or after `ts`. Returns (timestamp, offset); (-1, -1) when none.
    pub fn list_offset(&self, name: &str, p: i32, ts: i64, epoch: i32) -> Result<(i64, i64), Error> {
        let part = self.led(name, p, epoch)?;
        if ts != list_offsets::earliest && part.high_watermark() < part.replication.epoch_start() {
            // KIP-207: a new leader's high watermark lags until its followers fetch; answering
            // it as "latest" would send consumers back in the log.
            return Err(Error::OffsetNotAvailable);
        }
        Ok(match ts {
            list_offsets::earliest => (-1, part.log.log_start_offset()),
            list_offsets::latest => (-1, part.high_watermark()),
            t if t < 0 => return Err(Error::InvalidConfig(format!("timestamp {t} is not a ListOffsets target"))),
            t => match part.log.offset_for_timestamp(t)? {
                Some((offset, found)) if offset < part.high_watermark() => (found, offset),
                _ => (-1, -1),
            },
        })
    }

    /// The leader epoch this node has for a partition it leads.
    pub fn leader_epoch(&self, name: &str, p: i32) -> i32 {
        self.local(name, p).map_or(-1, |x| x.replication.leader_epoch)
    }

    /// OffsetForLeaderEpoch at the leader: the end offset of `epoch` in this log (KIP-101).
    pub fn end_offset_for_epoch(&self, name: &str, p: i32, epoch: i32, current: i32) -> Result<(i32, i64), Error> {
        let part = self.led(name, p, current)?;
        Ok(part.log.end_offset_for_epoch(epoch, Some(part.replication.leader_epoch)))
    }

    /// ISR changes to send the controller, one per partition at most.
    pub fn isr_proposals(&mut self, now: u64) -> Vec<(String, i32, IsrProposal)> {
        let lag = self.config.replica_lag_ms_max;
        let image = &self.image;
        let mut out = Vec::new();
        for ((name, p), part) in &mut self.partitions {
            if let Some(prop) = part.replication.isr_proposal_among(now, lag, |r| image.is_live(r)) {
                out.push((name.clone(), *p, prop));
            }
        }
        out
    }

    /// What became of an ISR proposal.
    pub fn isr_answer(&mut self, name: &str, p: i32, answer: IsrAnswer<'_>) {
        let Some(part) = self.partitions.get_mut(&(name.to_string(), p)) else { return };
        let leo = part.leo();
        match answer {
            IsrAnswer::Committed(i) => {
                part.replication.on_isr_committed(&i.isr, i.leader_epoch, i.partition_epoch, leo);
                self.progressed = true;
            }
            IsrAnswer::Refused => part.replication.on_isr_failed(),
            IsrAnswer::Stale => part.replication.on_isr_stale(),
            IsrAnswer::Lost => part.replication.on_isr_lost(),
        }
    }

    // ---- follower side --------------------------------------------------------------------

    /// The leaders this node fetches from.
    pub fn leaders_followed(&self) -> BTreeSet<i32> {
        self.partitions.values().filter_map(|p| match p.replication.role {
            Role::Follower { leader } => Some(leader),
            _ => None,
        }).collect()
    }

    /// The partitions this node follows from `leader`, for its replica fetcher.
    pub fn following(&self, leader: i32) -> Vec<Following> {
        self.partitions
            .iter()
            .filter(|(_, part)| part.replication.role == Role::Follower { leader } && part.log.failure().is_none())
            .map(|((name, p), part)| Following {
                topic: name.clone(),
                partition: *p,
                leader_epoch: part.replication.leader_epoch,
                fetch_offset: part.leo(),
                truncate_from_epoch: part.replication.needs_truncation.then(|| part.log.latest_epoch()),
            })
            .collect()
    }

    /// The follower's partition, if it still follows `leader` under `epoch`: answers that
    /// arrive after a metadata change are dropped.
    fn followed_mut(&mut self, name: &str, p: i32, leader: i32, epoch: i32) -> Option<&mut Partition> {
        let part = self.partitions.get_mut(&(name.to_string(), p))?;
        (part.replication.role == Role::Follower { leader } && part.replication.leader_epoch == epoch).then_some(part)
    }

    /// KIP-279 truncation: the leader answered OffsetForLeaderEpoch for our latest epoch with
    /// (`epoch`, `end`). Cuts the local log where it diverges from the leader's.
    #[allow(clippy::too_many_arguments)]
    pub fn truncate_to_leader(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, epoch: i32, end: i64, now: u64) -> Result<Option<i64>, Error> {
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(None) };
        let leo = part.leo();
        // (where to cut, whether that settles it) — Kafka's getOffsetTruncationState.
        let (target, complete) = match (part.log.latest_epoch(), epoch) {
            (None, _) => (leo, true),
            // The leader has no epoch at or below ours: fall back to the high watermark.
            (Some(_), -1) => (part.high_watermark().min(leo), true),
            (Some(ours), e) if e == ours => (end.min(leo), true),
            // The leader's log ends an older epoch `e` at `end`. If this log has `e` too, both
            // agree up to where the earlier of the two ends it. If not, its answer is an even
            // older epoch: cut to where that ends and ask the leader again about it.
            (Some(_), e) => {
                let (ours, our_end) = part.log.end_offset_for_epoch(e, None);
                (end.min(our_end.max(0)).min(leo), ours == e)
            }
        };
        let skip = self.config.planted_bug == Some(PlantedBug::FollowerSkipsTruncation);
        let part = self.followed_mut(name, p, leader, leader_epoch).expect("checked above");
        // A leader never answers a negative end offset; a broken one must not make us panic.
        let target = target.max(0);
        if target < leo && !skip {
            part.log.truncate_to(target, now)?;
            part.producers = rebuild_producers(&part.log)?;
        }
        let leo = part.leo();
        part.replication.on_truncate(leo);
        part.replication.needs_truncation = !complete && !skip;
        Ok(Some(leo))
    }

    /// Appends what the leader sent for a partition this node follows, and learns the leader's
    /// high watermark. Does nothing if the partition moved on meanwhile.
    #[allow(clippy::too_many_arguments)]
    pub fn append_from_leader(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, fetch_offset: i64, records: &[u8], leader_hw: i64, now: u64) -> Result<(), Error> {
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(()) };
        if part.replication.needs_truncation || part.leo() != fetch_offset {
            return Ok(()); // a stale answer: the next fetch asks again from the right place
        }
        if !records.is_empty() {
            part.log.append_replicated(records, now)?;
            let mut pos = 0;
            // The same whole batches the log kept (a trailing partial batch is dropped there too).
            while let Ok(h) = batch::read_header(&records[pos..]) {
                if pos + h.size > records.len() {
                    break;
                }
                part.producers.record(&h);
                pos += h.size;
            }
        }
        let leo = part.leo();
        part.replication.on_leader_high_watermark(leader_hw, leo);
        Ok(())
    }

    /// The leader says this follower's offset is past its log end: truncate by epoch again.
    pub fn retruncate(&mut self, name: &str, p: i32) -> Result<(), Error> {
        if let Some(part) = self.partitions.get_mut(&(name.to_string(), p)) {
            part.replication.needs_truncation = true;
        }
        Ok(())
    }

    /// The leader's log starts after ours ends (retention there): start over from its start.
    pub fn restart_from(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, leader_start: i64, now: u64) -> Result<(), Error> {
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(()) };
        part.log.truncate_fully(leader_start, now)?;
        part.producers = ProducerStates::default();
        let leo = part.leo();
        part.replication.on_truncate(leo);
        Ok(())
    }

    // ---- producer ids, time, shutdown -----------------------------------------------------

    /// A fresh producer id (epoch 0), from a block persisted before use.
    pub fn init_producer_id(&mut self) -> Result<(i64, i16), Error> {
        if self.next_producer_id >= self.producer_id_limit {
            let limit = self.next_producer_id + producer_id_block;
            let path = self.config.data_dir.join("producer-ids");
            write_atomically(self.disk.as_ref(), &path, format!("{limit}\n").as_bytes()).map_err(|e| storage("write", &path, e))?;
            self.producer_id_limit = limit;
        }
        let id = self.next_producer_id;
        self.next_producer_id += 1;
        Ok((id, 0))
    }

    /// Time-driven work for every partition (flush.ms, retention bounded by the high
    /// watermark, reopening failed logs, opening replicas that failed to open). Returns one
    /// line per partition that failed.
    pub fn tick(&mut self, now: u64) -> Vec<String> {
        let mut errors = self.reopen_failed(now);
        for (name, p, mut bytes) in std::mem::take(&mut self.deferred) {
            if let Some(part) = self.partitions.get_mut(&(name.clone(), p)) {
                let epoch = part.replication.leader_epoch;
                match part.log.append(&mut bytes, epoch, now) {
                    Ok(_) => {
                        let leo = part.leo();
                        self.progressed |= part.replication.on_append(leo);
                    }
                    Err(e) => errors.push(format!("{name}-{p}: deferred append: {e}")),
                }
            }
        }
        for ((name, p), part) in &mut self.partitions {
            if part.log.failure().is_some() {
                continue; // reopen_failed deals with it
            }
            let hw = part.high_watermark();
            if let Err(e) = part.log.tick(now, hw) {
                errors.push(format!("{name}-{p}: {e}"));
            }
        }
        errors
    }

    /// Reopens partitions whose log went offline after a failed sync or write, and opens
    /// replicas the metadata names here that failed to open, at most every
    /// `failed_log_reopen_ms`: recovery decides what survived, and the partition takes writes
    /// again once its disk answers. (Kafka halts a broker whose only log directory fails and
    /// relies on a restart; reopening in place is that restart, for one partition.)
    fn reopen_failed(&mut self, now: u64) -> Vec<String> {
        let mut notes = Vec::new();
        let me = self.config.node_id;
        let failed: Vec<(String, i32)> = self.partitions.iter().filter(|(_, part)| part.log.failure().is_some()).map(|(k, _)| k.clone()).collect();
        for key in failed {
            if self.partitions.remove(&key).is_some_and(|part| part.replication.is_leader()) {
                self.leader_log_failed = true;
            }
            self.offline.entry(key).or_insert(now);
        }
        let missing: Vec<(String, i32)> = self
            .image
            .topics
            .iter()
            .flat_map(|(n, t)| t.partitions.iter().enumerate().filter(|(_, i)| i.replicas.contains(&me)).map(move |(i, _)| (n.clone(), i as i32)))
            .filter(|k| !self.partitions.contains_key(k))
            .collect();
        for (name, p) in missing {
            let key = (name.clone(), p);
            if self.offline.get(&key).is_some_and(|&at| now < at) {
                continue;
            }
            match self.reconcile(&name, p, now, &mut notes) {
                Ok(()) => {
                    if self.offline.remove(&key).is_some() {
                        notes.push(format!("{name}-{p}: reopened after a storage failure; log end {}", self.partitions.get(&key).map_or(-1, |x| x.leo())));
                    }
                }
                Err(e) => {
                    self.offline.insert(key, now + crate::constants::failed_log_reopen_ms);
                    notes.push(format!("{name}-{p}: still offline: {e}"));
                }
            }
        }
        self.offline.retain(|k, _| !self.partitions.contains_key(k));
        notes
    }

    /// Flushes every partition and writes its recovery-point checkpoint.
    pub fn checkpoint(&mut self, now: u64) -> Vec<String> {
        let mut errors = Vec::new();
        for ((name, p), part) in &mut self.partitions {
            if let Err(e) = part.log.flush(now).and_then(|_| part.log.checkpoint()) {
                errors.push(format!("{name}-{p}: {e}"));
            }
        }
        errors
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
            .collect()
    }

    /// The earliest `flush.ms` deadline over all partitions.
    pub fn next_deadline(&self) -> Option<u64> {
        self.partitions.values().filter_map(|p| p.log.next_deadline()).min()
    }
}

/// Whether `part` is led here under the request's epoch (-1: unchecked).
fn lead_check(part: &Partition, epoch: i32) -> Result<(), Error> {
    let r = &part.replication;
    match r.role {
        Role::Leader => {}
        Role::None => return Err(Error::LeaderNotAvailable),
        Role::Follower { .. } => return Err(Error::NotLeaderOrFollower),
    }
    match epoch {
        e if e >= 0 && e < r.leader_epoch => Err(Error::Epoch(FetchRefusal::Fenced(e))),
        e if e > r.leader_epoch => Err(Error::Epoch(FetchRefusal::UnknownEpoch(e))),
        _ => Ok(()),
    }
}

fn apply_info(r: &mut Replication, i: &PartitionInfo, leo: i64, now: u64) -> Change {
    r.apply(&i.replicas, &i.isr, i.leader, i.leader_epoch, i.partition_epoch, leo, now)
}

fn rebuild_producers(log: &Log) -> Result<ProducerStates, Error> {
    let mut producers = ProducerStates::default();
    log.for_each_header(|h| producers.record(h))?;
    Ok(producers)
}

#[cfg(test)]
mod tests;
