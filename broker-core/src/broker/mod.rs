//! The broker's decisions for a single node: which topics and partitions exist, what a produce
//! appends (validation, idempotence, acks), what a fetch or offset lookup returns, topic
//! creation and deletion, producer-id allocation. A plain struct driven with an explicit
//! `now`: it does its IO only through the [`Disk`] it was given and never reads a clock,
//! sleeps or touches a socket — the async shell (`server`) does that and calls in here.
//!
//! Layout of the data directory:
//!
//! ```text
//! <data>/topics/<name>.toml     one per topic: id, partition count, config overrides
//! <data>/<name>-<p>/            one partition log (see docs/storage.md)
//! <data>/producer-ids           the next unallocated producer id block
//! ```

pub mod producer;
pub mod topic;

use crate::log::{batch, BatchError, BatchHeader, Log, LogConfig, LogError};
use crate::storage::{read_exact_at, write_atomically, Disk};
use bytes::Bytes;
use producer::{ProducerStates, SequenceError, Verdict};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use topic::TopicFile;

/// Producer ids are persisted in blocks of this many, so allocation writes the disk once per
/// block and a restart never hands out an id twice (it skips the rest of the block).
pub const producer_id_block: i64 = 1000;

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
    /// `auto.create.topics.enable`
    pub auto_create_topics: bool,
    /// `num.partitions`: partitions of auto-created topics and of CreateTopics with -1.
    pub num_partitions: i32,
    /// `min.insync.replicas`
    pub min_insync_replicas: i32,
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
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            node_id: 0,
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            data_dir: PathBuf::from("data"),
            cluster_id: "seedlog-cluster".into(),
            auto_create_topics: true,
            num_partitions: 1,
            min_insync_replicas: 1,
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
    /// INVALID_TOPIC_EXCEPTION (17)
    #[error("{0}")]
    InvalidTopic(String),
    /// TOPIC_ALREADY_EXISTS (36)
    #[error("topic '{0}' already exists")]
    TopicAlreadyExists(String),
    /// INVALID_PARTITIONS (37)
    #[error("{0}")]
    InvalidPartitions(String),
    /// INVALID_REPLICATION_FACTOR (38)
    #[error("{0}")]
    InvalidReplicationFactor(String),
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
    /// Transactions are not implemented. TRANSACTIONAL_ID_AUTHORIZATION_FAILED would mislead;
    /// UNSUPPORTED_VERSION (35) tells clients the feature is not there.
    #[error("transactions are not supported")]
    TransactionsUnsupported,
}

impl Error {
    /// The Kafka error code. `modern` is false for request versions older than the one that
    /// introduced INVALID_RECORD, which then get CORRUPT_MESSAGE.
    pub fn code(&self, modern: bool) -> i16 {
        match self {
            Error::UnknownTopicOrPartition => 3,
            Error::InvalidTopic(_) => 17,
            Error::TopicAlreadyExists(_) => 36,
            Error::InvalidPartitions(_) => 37,
            Error::InvalidReplicationFactor(_) => 38,
            Error::InvalidConfig(_) => 40,
            Error::InvalidRequiredAcks(_) => 21,
            Error::OffsetOutOfRange { .. } => 1,
            Error::Batch(BatchError::TooLarge { .. }) => 10,
            Error::Batch(BatchError::UnsupportedMagic(_)) => 43,
            Error::Batch(BatchError::UnsupportedCompression(_)) => 76,
            Error::Batch(BatchError::BadRecordCount { .. } | BatchError::BadRecords(_)) if modern => 87,
            Error::Batch(_) => 2,
            Error::Sequence(SequenceError::StaleEpoch { .. }) => 47,
            Error::Sequence(SequenceError::OutOfOrder { .. }) => 45,
            Error::Storage(_) => 56,
            Error::NotEnoughReplicas { .. } => 19,
            Error::TransactionsUnsupported => 35,
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

/// One partition: its log, its producers, its leader epoch.
pub struct Partition {
    pub log: Log,
    producers: ProducerStates,
    pub leader_epoch: i32,
    /// When a failed (offline) log may next be reopened, in the caller's `now`.
    reopen_at_ms: u64,
}

impl Partition {
    /// The high watermark. A single node is the whole ISR, so it is the log end offset.
    pub fn high_watermark(&self) -> i64 {
        self.log.log_end_offset()
    }
}

pub struct Topic {
    pub id: [u8; 16],
    /// `min.insync.replicas` for this topic (override or broker default).
    pub min_insync: i32,
    pub partitions: Vec<Partition>,
    pub overrides: BTreeMap<String, String>,
    pub config: LogConfig,
}

/// Where a produce landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Produced {
    pub base_offset: i64,
    pub log_start_offset: i64,
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

pub struct Broker {
    config: BrokerConfig,
    disk: Arc<dyn Disk>,
    topics: BTreeMap<String, Topic>,
    /// Next producer id to hand out, and the end of the block persisted for it.
    next_producer_id: i64,
    producer_id_limit: i64,
    /// Topics created in this process, mixed into topic ids.
    serial: u64,
    /// Appends acknowledged but not yet made (only with `PlantedBug::AckBeforeAppend`).
    deferred: Vec<(String, i32, Vec<u8>)>,
}

fn storage(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Storage(format!("{what} {}: {e}", path.display()))
}

fn read_text(disk: &dyn Disk, path: &Path) -> Result<String, Error> {
    let f = disk.open(path, false).map_err(|e| storage("open", path, e))?;
    let len = f.len().map_err(|e| storage("stat", path, e))?;
    if len > 1 << 20 {
        return Err(Error::Storage(format!("{} is {len} bytes; not a topic file", path.display())));
    }
    let mut buf = vec![0u8; len as usize];
    read_exact_at(f.as_ref(), &mut buf, 0).map_err(|e| storage("read", path, e))?;
    String::from_utf8(buf).map_err(|e| storage("decode", path, e))
}

impl Broker {
    /// Opens every topic under the data directory, recovering each partition log and
    /// rebuilding its producer state. Returns the broker and one line per notable event
    /// (recovery cuts, rebuilt indexes) for the shell to log.
    pub fn open(disk: Arc<dyn Disk>, config: BrokerConfig, now: u64) -> Result<(Broker, Vec<String>), Error> {
        config.log.validate().map_err(|e| Error::InvalidConfig(e.to_string()))?;
        let data = config.data_dir.clone();
        let topics_dir = data.join("topics");
        disk.create_dir_all(&topics_dir).map_err(|e| storage("create", &topics_dir, e))?;
        let mut notes = Vec::new();
        let mut broker = Broker { config, disk, topics: BTreeMap::new(), next_producer_id: 0, producer_id_limit: 0, serial: 0, deferred: Vec::new() };
        let names = broker.disk.list(&topics_dir).map_err(|e| storage("list", &topics_dir, e))?;
        for file in names {
            let Some(name) = file.strip_suffix(".toml") else { continue };
            let path = topics_dir.join(&file);
            let meta = TopicFile::decode(&read_text(broker.disk.as_ref(), &path)?)
                .map_err(|e| Error::Storage(format!("{}: {e}", path.display())))?;
            let id = topic::unhex(&meta.id).ok_or_else(|| Error::Storage(format!("{}: bad id '{}'", path.display(), meta.id)))?;
            let config = topic::apply_overrides(&broker.config.log, &meta.config)
                .map_err(|e| Error::Storage(format!("{}: {e}", path.display())))?;
            let mut partitions = Vec::new();
            for p in 0..meta.partitions {
                partitions.push(broker.open_partition(name, p, &config, now, &mut notes)?);
            }
            let min_insync = broker.min_insync(&meta.config);
            broker.topics.insert(name.to_string(), Topic { id, min_insync, partitions, overrides: meta.config, config });
        }
        let pid_path = data.join("producer-ids");
        if broker.disk.exists(&pid_path) {
            let text = read_text(broker.disk.as_ref(), &pid_path)?;
            let next: i64 = text.trim().parse().map_err(|_| Error::Storage(format!("{}: not a number", pid_path.display())))?;
            broker.next_producer_id = next;
            broker.producer_id_limit = next; // the rest of the last block may have been handed out
        }
        Ok((broker, notes))
    }

    fn min_insync(&self, overrides: &BTreeMap<String, String>) -> i32 {
        overrides.get("min.insync.replicas").and_then(|v| v.trim().parse().ok()).unwrap_or(self.config.min_insync_replicas)
    }

    fn partition_dir(&self, name: &str, p: i32) -> PathBuf {
        self.config.data_dir.join(format!("{name}-{p}"))
    }

    fn open_partition(&self, name: &str, p: i32, config: &LogConfig, now: u64, notes: &mut Vec<String>) -> Result<Partition, Error> {
        let dir = self.partition_dir(name, p);
        let (log, report) = Log::open(self.disk.clone(), &dir, config.clone(), now)?;
        if let Some(cut) = &report.cut {
            notes.push(format!("{name}-{p}: recovery cut {} at byte {} ({} bytes): {}", cut.file.display(), cut.position, cut.bytes_removed, cut.reason));
        }
        for path in report.indexes_rebuilt.iter().chain(&report.segments_removed) {
            notes.push(format!("{name}-{p}: recovery rebuilt or removed {}", path.display()));
        }
        let mut producers = ProducerStates::default();
        log.for_each_header(|h| producers.record(h))?;
        Ok(Partition { log, producers, leader_epoch: 0, reopen_at_ms: 0 })
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    pub fn topics(&self) -> &BTreeMap<String, Topic> {
        &self.topics
    }

    pub fn topic(&self, name: &str) -> Option<&Topic> {
        self.topics.get(name)
    }

    fn partition(&self, name: &str, p: i32) -> Result<&Partition, Error> {
        self.topics.get(name).and_then(|t| t.partitions.get(usize::try_from(p).ok()?)).ok_or(Error::UnknownTopicOrPartition)
    }

    fn partition_mut(&mut self, name: &str, p: i32) -> Result<&mut Partition, Error> {
        self.topics.get_mut(name).and_then(|t| t.partitions.get_mut(usize::try_from(p).ok()?)).ok_or(Error::UnknownTopicOrPartition)
    }

    /// Creates a topic with `partitions` (-1: `num.partitions`) and Kafka-named `overrides`.
    /// `replication_factor` must be 1 or -1 on a single node. With `validate_only` nothing is
    /// written. The topic file is durable before any partition directory exists, so a crash
    /// leaves either no topic or a whole one.
    pub fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
        now: u64,
    ) -> Result<[u8; 16], Error> {
        topic::validate_name(name).map_err(Error::InvalidTopic)?;
        if self.topics.contains_key(name) {
            return Err(Error::TopicAlreadyExists(name.to_string()));
        }
        let partitions = if partitions == -1 { self.config.num_partitions } else { partitions };
        if !(1..=crate::constants::partitions_per_topic_max).contains(&partitions) {
            return Err(Error::InvalidPartitions(format!("{partitions} partitions; must be 1..={}", crate::constants::partitions_per_topic_max)));
        }
        let held: usize = self.topics.values().map(|t| t.partitions.len()).sum();
        if held + partitions as usize > crate::constants::partitions_per_broker_max {
            return Err(Error::InvalidPartitions(format!(
                "{partitions} more partitions would exceed this broker's limit of {} (it holds {held})",
                crate::constants::partitions_per_broker_max
            )));
        }
        if replication_factor != 1 && replication_factor != -1 {
            return Err(Error::InvalidReplicationFactor(format!("replication factor {replication_factor}, but this cluster has 1 broker")));
        }
        let config = topic::apply_overrides(&self.config.log, &overrides).map_err(Error::InvalidConfig)?;
        self.serial += 1;
        let id = topic::topic_id(name, now, self.config.node_id, self.serial);
        if validate_only {
            return Ok(id);
        }
        let file = TopicFile { id: topic::hex(&id), partitions, config: overrides.clone() };
        let path = self.config.data_dir.join("topics").join(format!("{name}.toml"));
        write_atomically(self.disk.as_ref(), &path, file.encode().as_bytes()).map_err(|e| storage("write", &path, e))?;
        let mut notes = Vec::new();
        let mut parts = Vec::new();
        for p in 0..partitions {
            parts.push(self.open_partition(name, p, &config, now, &mut notes)?);
        }
        let min_insync = self.min_insync(&overrides);
        self.topics.insert(name.to_string(), Topic { id, min_insync, partitions: parts, overrides, config });
        Ok(id)
    }

    /// Creates `name` with broker defaults if auto-creation is on and the name is valid.
    /// `Ok(false)` when auto-creation is off.
    pub fn auto_create(&mut self, name: &str, now: u64) -> Result<bool, Error> {
        if self.topics.contains_key(name) {
            return Ok(true);
        }
        if !self.config.auto_create_topics {
            return Ok(false);
        }
        self.create_topic(name, -1, -1, BTreeMap::new(), false, now)?;
        Ok(true)
    }

    /// Deletes a topic: its file first (so a crash mid-way never resurrects it), then every
    /// partition's files and directory.
    pub fn delete_topic(&mut self, name: &str) -> Result<(), Error> {
        let topic = self.topics.remove(name).ok_or(Error::UnknownTopicOrPartition)?;
        let topics_dir = self.config.data_dir.join("topics");
        let path = topics_dir.join(format!("{name}.toml"));
        self.disk.remove(&path).map_err(|e| storage("remove", &path, e))?;
        self.disk.sync_dir(&topics_dir).map_err(|e| storage("fsync", &topics_dir, e))?;
        let count = topic.partitions.len() as i32;
        drop(topic);
        for p in 0..count {
            let dir = self.partition_dir(name, p);
            for file in self.disk.list(&dir).map_err(|e| storage("list", &dir, e))? {
                let f = dir.join(file);
                self.disk.remove(&f).map_err(|e| storage("remove", &f, e))?;
            }
            self.disk.remove_dir(&dir).map_err(|e| storage("remove", &dir, e))?;
        }
        let data = &self.config.data_dir;
        self.disk.sync_dir(data).map_err(|e| storage("fsync", data, e))
    }

    /// Appends one v2 batch (a produce request's records for one partition) and answers with
    /// its base offset. `records` must hold exactly one batch (produce v3+).
    pub fn produce(&mut self, name: &str, p: i32, records: &[u8], acks: i16, now: u64) -> Result<Produced, Error> {
        if !matches!(acks, -1..=1) {
            return Err(Error::InvalidRequiredAcks(acks));
        }
        let min = self.topics.get(name).map_or(1, |t| t.min_insync);
        // A single node is an ISR of one.
        if acks == -1 && min > 1 {
            return Err(Error::NotEnoughReplicas { isr: 1, min });
        }
        let part = self.partition_mut(name, p)?;
        let header = batch::read_header(records)?;
        if header.is_transactional() || header.is_control() {
            return Err(Error::TransactionsUnsupported);
        }
        let h = batch::validate(records, part.log.config().max_message_bytes)?;
        match part.producers.check(&h)? {
            Verdict::Duplicate(seen) => {
                return Ok(Produced { base_offset: seen.base_offset, log_start_offset: part.log.log_start_offset(), duplicate: true })
            }
            Verdict::Append => {}
        }
        let mut bytes = records.to_vec();
        if self.config.planted_bug == Some(PlantedBug::AckBeforeAppend) {
            let pending: i64 = self.deferred.iter().filter(|(t, q, _)| t == name && *q == p).filter_map(|(_, _, b)| batch::read_header(b).ok()).map(|h| h.records_count as i64).sum();
            let part = self.partition_mut(name, p)?;
            let base_offset = part.log.log_end_offset() + pending;
            part.producers.record(&BatchHeader { base_offset, ..h });
            let produced = Produced { base_offset, log_start_offset: part.log.log_start_offset(), duplicate: false };
            self.deferred.push((name.to_string(), p, bytes));
            return Ok(produced);
        }
        let part = self.partition_mut(name, p)?;
        let info = part.log.append(&mut bytes, part.leader_epoch, now)?;
        let stamped = batch::read_header(&bytes)?;
        part.producers.record(&stamped);
        debug_assert_eq!(stamped.base_offset, info.base_offset);
        Ok(Produced { base_offset: info.base_offset, log_start_offset: part.log.log_start_offset(), duplicate: false })
    }

    /// Whole batches from `offset` up to the high watermark, within `max_bytes` (at least one
    /// batch when `min_one`, Kafka's KIP-74 rule for the first partition of a response).
    pub fn fetch(&self, name: &str, p: i32, offset: i64, max_bytes: usize, min_one: bool) -> Result<Fetched, Error> {
        let part = self.partition(name, p)?;
        let hw = part.high_watermark();
        let start = part.log.log_start_offset();
        if offset < start || offset > hw {
            return Err(Error::OffsetOutOfRange { requested: offset, start, end: hw });
        }
        let records = if max_bytes == 0 && !min_one {
            Bytes::new()
        } else {
            let r = part.log.read(offset, max_bytes.max(1), hw)?;
            if !min_one && r.bytes.len() > max_bytes { Bytes::new() } else { r.bytes }
        };
        let hw = if self.config.planted_bug == Some(PlantedBug::FetchAboveHighWatermark) && hw > 0 { hw - 1 } else { hw };
        Ok(Fetched { high_watermark: hw, log_start_offset: start, records })
    }

    /// ListOffsets: -2 earliest, -1 latest (the log end offset), else the first offset with a
    /// timestamp at or after `ts`. Returns (timestamp, offset); (-1, -1) when none.
    pub fn list_offset(&self, name: &str, p: i32, ts: i64) -> Result<(i64, i64), Error> {
        let part = self.partition(name, p)?;
        Ok(match ts {
            -2 => (-1, part.log.log_start_offset()),
            -1 => (-1, part.high_watermark()),
            t if t < 0 => return Err(Error::InvalidConfig(format!("timestamp {t} is not a ListOffsets target"))),
            t => match part.log.offset_for_timestamp(t)? {
                Some((offset, found)) if offset < part.high_watermark() => (found, offset),
                _ => (-1, -1),
            },
        })
    }

    /// OffsetForLeaderEpoch: the end offset of `epoch` in this partition's log. A single node
    /// has only ever had its one epoch, so every epoch up to it ends at the log end.
    pub fn end_offset_for_epoch(&self, name: &str, p: i32, epoch: i32) -> Result<(i32, i64), Error> {
        let part = self.partition(name, p)?;
        if epoch > part.leader_epoch || epoch < 0 {
            return Ok((-1, -1));
        }
        Ok((part.leader_epoch, part.log.log_end_offset()))
    }

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
    /// watermark). Returns one line per partition that failed.
    pub fn tick(&mut self, now: u64) -> Vec<String> {
        let mut errors = self.reopen_failed(now);
        for (name, p, mut bytes) in std::mem::take(&mut self.deferred) {
            if let Ok(part) = self.partition_mut(&name, p) {
                let epoch = part.leader_epoch;
                if let Err(e) = part.log.append(&mut bytes, epoch, now) {
                    errors.push(format!("{name}-{p}: deferred append: {e}"));
                }
            }
        }
        for (name, t) in &mut self.topics {
            for (p, part) in t.partitions.iter_mut().enumerate() {
                if part.log.failure().is_some() {
                    continue; // reopen_failed deals with it
                }
                let hw = part.high_watermark();
                if let Err(e) = part.log.tick(now, hw) {
                    errors.push(format!("{name}-{p}: {e}"));
                }
            }
        }
        errors
    }

    /// Reopens partitions whose log went offline after a failed sync or write, at most every
    /// `failed_log_reopen_ms`: recovery decides what survived, and the partition takes writes
    /// again once its disk answers. (Kafka halts a broker whose only log directory fails and
    /// relies on a restart; reopening in place is that restart, for one partition.)
    fn reopen_failed(&mut self, now: u64) -> Vec<String> {
        let mut notes = Vec::new();
        let failed: Vec<(String, i32)> = self
            .topics
            .iter()
            .flat_map(|(n, t)| t.partitions.iter().enumerate().filter(|(_, p)| p.log.failure().is_some() && now >= p.reopen_at_ms).map(move |(i, _)| (n.clone(), i as i32)))
            .collect();
        for (name, p) in failed {
            let Some(config) = self.topics.get(&name).map(|t| t.config.clone()) else { continue };
            let mut opened = Vec::new();
            match self.open_partition(&name, p, &config, now, &mut opened) {
                Ok(fresh) => {
                    let epoch = self.partition(&name, p).map_or(0, |x| x.leader_epoch);
                    if let Ok(slot) = self.partition_mut(&name, p) {
                        *slot = Partition { leader_epoch: epoch, ..fresh };
                    }
                    notes.push(format!("{name}-{p}: reopened after a storage failure; log end {}", self.partition(&name, p).map_or(-1, |x| x.log.log_end_offset())));
                    notes.extend(opened);
                }
                Err(e) => {
                    if let Ok(slot) = self.partition_mut(&name, p) {
                        slot.reopen_at_ms = now + crate::constants::failed_log_reopen_ms;
                    }
                    notes.push(format!("{name}-{p}: still offline: {e}"));
                }
            }
        }
        notes
    }

    /// Flushes every partition and writes its recovery-point checkpoint.
    pub fn checkpoint(&mut self, now: u64) -> Vec<String> {
        let mut errors = Vec::new();
        for (name, t) in &mut self.topics {
            for (p, part) in t.partitions.iter_mut().enumerate() {
                if let Err(e) = part.log.flush(now).and_then(|_| part.log.checkpoint()) {
                    errors.push(format!("{name}-{p}: {e}"));
                }
            }
        }
        errors
    }

    /// The earliest `flush.ms` deadline over all partitions.
    pub fn next_deadline(&self) -> Option<u64> {
        self.topics.values().flat_map(|t| t.partitions.iter()).filter_map(|p| p.log.next_deadline()).min()
    }
}

#[cfg(test)]
mod tests;
