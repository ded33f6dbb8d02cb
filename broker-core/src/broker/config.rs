//! A broker's settings (Kafka's names in each field's doc) and the bugs the simulator plants.
//! Plain data: parsing flags and files is the shell's (`server::config`).

use crate::group::GroupConfig;
use crate::log::LogConfig;
use std::path::PathBuf;

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
    /// `group.*` and `offsets.*`: the group coordinator's settings.
    pub groups: GroupConfig,
    /// `log.cleaner.backoff.ms`: how long the log cleaner waits when no log is due a pass.
    pub cleaner_backoff_ms: u64,
    /// `log.cleaner.io.max.bytes.per.second`: the cleaner's read+write rate; None: no limit.
    pub cleaner_io_bytes_per_second: Option<u64>,
    /// A known bug switched on, so tests can prove the simulator's checkers catch it. Exists
    /// only in the simulated build: no flag, file or real binary can set it.
    #[cfg(madsim)]
    #[doc(hidden)]
    pub planted_bug: Option<PlantedBug>,
}

/// Bugs the simulator must be able to find (see sim's planted-bug tests). The branches that
/// plant them are compiled only in the simulated build ([`BrokerConfig::planted`] is a
/// constant `false` in the real one).
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
    /// Every seventh produce is appended and then answered with a definite error
    /// (INVALID_REQUIRED_ACKS): the client is told "not appended" about a record in the log.
    FailAfterAppend,
    /// Consumers are served up to the log end and told it is the high watermark: they read
    /// records not yet replicated, which a leader change can take away (dirty reads that
    /// `read_above_hw` cannot see, since the reported mark covers them).
    ConsumersReadToLogEnd,
    /// A consumer fetch answers its first batch twice (once more at the end): a client that
    /// drops what it already has hides it; `nonmonotonic_poll` must see it.
    FetchRepeatsFirstBatch,
    /// The group coordinator takes any OffsetCommit without checking the member and its
    /// generation, so a member the group moved on without (a zombie) can move a committed
    /// offset back under the partition's new owner.
    CommitIgnoresGeneration,
    /// The log cleaner keeps the first record of each key in its dirty range instead of the
    /// last, so a key's latest value can be compacted away under an older one.
    CleanerKeepsFirstValue,
    /// The idempotent-producer check compares a batch only with the producer's last batch, and
    /// refuses only sequences ahead of the next expected one: a retry of an older batch still
    /// in the five-batch window is appended again. Invisible with one batch in flight (the
    /// only retry is of the last batch); with several, a retry after a lost answer duplicates.
    DuplicateCheckLastBatchOnly,
    /// The recovery-point checkpoint is written over the old file in place (no temporary file,
    /// no sync, no rename) — at every open of a replica's log and at every later checkpoint —
    /// so a power loss can leave it empty or torn, and the next open refuses the replica's log.
    CheckpointInPlace,
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
            groups: GroupConfig::default(),
            cleaner_backoff_ms: crate::constants::log_cleaner_backoff_ms,
            cleaner_io_bytes_per_second: None,
            #[cfg(madsim)]
            planted_bug: None,
        }
    }
}

impl PlantedBug {
    /// Every planted bug, so a name read back from a trace finds its bug.
    pub const ALL: &'static [PlantedBug] = &[
        PlantedBug::AckBeforeAppend,
        PlantedBug::FetchAboveHighWatermark,
        PlantedBug::AcksAllWithoutIsr,
        PlantedBug::FollowerSkipsTruncation,
        PlantedBug::FailAfterAppend,
        PlantedBug::ConsumersReadToLogEnd,
        PlantedBug::FetchRepeatsFirstBatch,
        PlantedBug::CommitIgnoresGeneration,
        PlantedBug::CleanerKeepsFirstValue,
        PlantedBug::DuplicateCheckLastBatchOnly,
        PlantedBug::CheckpointInPlace,
    ];

    /// The bug named `name` (its variant name, as traces record it).
    pub fn named(name: &str) -> Option<PlantedBug> {
        PlantedBug::ALL.iter().copied().find(|b| format!("{b:?}") == name)
    }
}

impl BrokerConfig {
    /// Whether `bug` is planted in this run (never, in the real build).
    #[inline]
    pub fn planted(&self, bug: PlantedBug) -> bool {
        #[cfg(madsim)]
        return self.planted_bug == Some(bug);
        #[cfg(not(madsim))]
        {
            let _ = bug;
            false
        }
    }
}

