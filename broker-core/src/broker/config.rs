//! A broker's settings (Kafka's names in each field's doc), and the bug the simulator plants in
//! it (`crate::planted`).
//! Plain data: parsing flags and files is the shell's (`server::config`).

use crate::group::GroupConfig;
use crate::log::LogConfig;
pub use crate::planted::{Planted, PlantedBug};
use std::path::PathBuf;

/// Broker-wide settings (Kafka names in the docs of each field).
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`
    pub node_id: i32,
    /// `advertised.listeners` host and port of the inter-broker listener (the only one, mostly),
    /// as clients and the cluster's nodes should connect.
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Every client listener's advertised endpoint, the inter-broker one first, when there are
    /// several; empty with one (then it is `advertised_host:advertised_port`).
    pub advertised_listeners: Vec<crate::metadata::Endpoint>,
    /// `log.dirs` (one directory).
    pub data_dir: PathBuf,
    pub cluster_id: String,
    /// The secret the topic ids this node's controller makes are derived under
    /// (`metadata::topic::topic_id`): from the OS at each start (`server::config::resolve`), from
    /// the seed in the simulator, zeros in unit tests.
    pub topic_id_key: crate::metadata::topic::TopicIdKey,
    /// `controller.quorum.voters` (`id@host:port,...`): the Raft metadata quorum's voters and
    /// their addresses. A node whose `node.id` is among them runs a voter (combined mode).
    pub voters: std::collections::BTreeMap<i32, String>,
    /// `process.roles` includes `broker`: the node registers with the controller, leads and
    /// follows partitions and serves clients. False on a voter-only node (`process.roles=
    /// controller`), which takes part in the metadata quorum and follows the committed
    /// metadata but never registers, so no partition is ever placed on it.
    pub broker_role: bool,
    /// `controller.quorum.election.timeout.ms`; the quorum's other timeouts follow from it in
    /// KRaft's default ratios (see `server::config::raft_config`).
    pub quorum_election_timeout_ms: u64,
    /// `metadata.log.max.record.bytes.between.snapshots`: a voter snapshots the metadata image
    /// after this many bytes of committed metadata records.
    pub metadata_snapshot_bytes_between: u64,
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
    /// `eligible.leader.replicas.enable` (KIP-966): the controller keeps ELRs, and a leader's
    /// high watermark stands still while its ISR is below `min.insync.replicas`. Cluster-wide:
    /// give every node the same value (and the same `min.insync.replicas`).
    pub eligible_leader_replicas: bool,
    /// `auto.leader.rebalance.enable` (the controller's): leadership moves back to preferred
    /// replicas. On by default, as in Kafka; the simulator turns it off unless a scenario asks.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`, in ms.
    pub leader_imbalance_check_interval_ms: u64,
    /// `leader.imbalance.per.broker.percentage`
    pub leader_imbalance_per_broker_percentage: u32,
    /// `log.*` defaults for every topic.
    pub log: LogConfig,
    /// `group.*` and `offsets.*`: the group coordinator's settings.
    pub groups: GroupConfig,
    /// The transaction coordinator's settings.
    pub txns: crate::txn::TxnConfig,
    /// The listener's security protocol, SASL mechanisms and bootstrap credentials.
    pub security: crate::security::SecurityConfig,
    /// `log.cleaner.backoff.ms`: how long the log cleaner waits when no log is due a pass.
    pub cleaner_backoff_ms: u64,
    /// `log.cleaner.io.max.bytes.per.second`: the cleaner's read+write rate; None: no limit.
    pub cleaner_io_bytes_per_second: Option<u64>,
    /// Zero-copy fetch (no Kafka name; `--fetch-zero-copy`): fetch answers carry regions of
    /// the segment files, sent with `sendfile`, instead of bytes read (and CRC-checked) into
    /// memory. On by default in the real build; off in the simulated build, whose traces and
    /// checkers were made on the copying path (the same bytes either way).
    pub fetch_zero_copy: bool,
    /// Appends are staged and written by the shell's jobs off the node's lock (the
    /// write-behind, `log::deferred`). On by default; off in the in-process tests that drive
    /// the broker without a shell to run jobs (`testing::config`).
    pub write_behind: bool,
    /// Kafka 3.9's API versions that Kafka 4.0 removed (KIP-896) are served, bridged at the
    /// protocol's edge (`protocol::legacy`; `legacy.api.versions`, Seedlog's own). On by
    /// default; off answers as Kafka 4.0 does: a removed version closes the connection.
    pub legacy_api_versions: bool,
    /// A known bug switched on, so tests can prove the simulator's checkers catch it. Exists
    /// only in the simulated build: no flag, file or real binary can set it.
    #[cfg(madsim)]
    #[doc(hidden)]
    pub planted_bug: Option<PlantedBug>,
    /// Who is told what the node's decisions make happen (`crate::observe`): the simulator's
    /// checkers; nobody in the real broker.
    pub observer: crate::observe::Observer,
    /// BUGGIFY's perturbation points: seeded by the simulator for runs that ask for it; never
    /// fires otherwise (zero-sized in the real build).
    #[doc(hidden)]
    pub buggify: crate::buggify::Buggify,
}

impl BrokerConfig {
    /// The endpoints this broker registers, the inter-broker listener's first.
    pub fn endpoints(&self) -> Vec<crate::metadata::Endpoint> {
        match self.advertised_listeners.is_empty() {
            true => vec![crate::metadata::Endpoint { name: self.security.inter_broker_listener.clone(), host: self.advertised_host.clone(), port: self.advertised_port }],
            false => self.advertised_listeners.clone(),
        }
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            node_id: 0,
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            advertised_listeners: Vec::new(),
            data_dir: PathBuf::from("data"),
            cluster_id: "seedlog-cluster".into(),
            topic_id_key: [0; 32],
            voters: [(0, "127.0.0.1:9092".to_string())].into(),
            broker_role: true,
            quorum_election_timeout_ms: crate::constants::quorum_election_timeout_ms_default,
            metadata_snapshot_bytes_between: crate::constants::metadata_snapshot_bytes_between_default,
            auto_create_topics: true,
            num_partitions: 1,
            default_replication_factor: 1,
            min_insync_replicas: 1,
            replica_lag_ms_max: crate::constants::replica_lag_ms_default,
            session_timeout_ms: crate::constants::session_timeout_ms_default,
            heartbeat_interval_ms: crate::constants::heartbeat_interval_ms_default,
            unclean_leader_election: false,
            eligible_leader_replicas: false,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_ms: crate::constants::leader_imbalance_check_interval_ms_default,
            leader_imbalance_per_broker_percentage: crate::constants::leader_imbalance_per_broker_percentage_default,
            log: LogConfig::default(),
            groups: GroupConfig::default(),
            txns: crate::txn::TxnConfig::default(),
            security: crate::security::SecurityConfig::default(),
            cleaner_backoff_ms: crate::constants::log_cleaner_backoff_ms,
            cleaner_io_bytes_per_second: None,
            fetch_zero_copy: !cfg!(madsim),
            write_behind: true,
            legacy_api_versions: true,
            #[cfg(madsim)]
            planted_bug: None,
            observer: crate::observe::Observer::default(),
            buggify: crate::buggify::Buggify::default(),
        }
    }
}

impl BrokerConfig {
    /// Whether `bug` is planted in this run (never, in the real build).
    #[inline]
    pub fn planted(&self, bug: PlantedBug) -> bool {
        self.planted_set().is(bug)
    }

    /// KIP-966's strict min ISR for a partition whose `min.insync.replicas` is `min_insync`
    /// (`replication::Replication::set_strict_min_isr`): with ELR on, the high watermark stands
    /// still while the ISR is below it. (Planted `ElrWithoutStrictMinIsr` drops the rule.)
    pub fn strict_min_isr(&self, min_insync: i32) -> Option<i32> {
        (self.eligible_leader_replicas && !self.planted(PlantedBug::ElrWithoutStrictMinIsr)).then_some(min_insync)
    }

    /// Which open transaction holds a partition's last stable offset back: the earliest, but
    /// where a planted bug picks the latest (never in the real build).
    pub fn lso_held_by(&self) -> super::producer::HeldBy {
        match self.planted(PlantedBug::LsoFromLatestOpenTxn) {
            true => super::producer::HeldBy::Latest,
            false => super::producer::HeldBy::Earliest,
        }
    }

    /// What a transaction coordinator makes of InitProducerId while a commit's markers are
    /// on their way: waits for them, but where a planted bug fences the commit (never in the
    /// real build).
    pub fn prepared_commits(&self) -> crate::txn::PreparedCommits {
        match self.planted(PlantedBug::InitFencesPreparedCommit) {
            true => crate::txn::PreparedCommits::FencedByInit,
            false => crate::txn::PreparedCommits::Finished,
        }
    }

    /// How client-quota throttles are handed out: in ms, but where a planted bug writes their
    /// seconds instead (never in the real build).
    pub fn throttle_unit(&self) -> crate::throttle::Unit {
        #[cfg(madsim)]
        if self.planted(PlantedBug::ThrottleInSeconds) {
            return crate::throttle::Unit::SecondsAsMs;
        }
        crate::throttle::Unit::Ms
    }

    /// Which remembered batches of a producer a retry is recognised among: Kafka's five, but
    /// where a planted bug shrinks the window (never in the real build).
    pub fn producer_window(&self) -> super::producer::Window {
        use super::producer::Window;
        if self.planted(PlantedBug::DuplicateCheckLastBatchOnly) {
            Window::LastOnly
        } else if self.planted(PlantedBug::ProducerWindowOfOne) {
            Window::OneRefusing
        } else {
            Window::Remembered
        }
    }

    /// The leader's produce, fetch and ISR-answer rules (`broker::rules`): Kafka's, or the
    /// planted bug's where it is one of theirs.
    pub fn rules(&self) -> &'static dyn super::rules::Rules {
        #[cfg(madsim)]
        if let Some(rules) = self.planted_bug.and_then(super::rules::planted::of) {
            return rules;
        }
        &super::rules::Kafka
    }

    /// Planted `ShareTellsBeforeWrite`: the share-partition leader answers before its writes
    /// (`share::leader::Shares::tells_before_write`). Always false in the real build.
    pub fn share_tells_before_write(&self) -> bool {
        self.planted(crate::planted::PlantedBug::ShareTellsBeforeWrite)
    }

    /// The planted bug as a value the other decision structs (the controller's config) hold.
    #[inline]
    pub fn planted_set(&self) -> Planted {
        #[cfg(madsim)]
        return Planted(self.planted_bug);
        #[cfg(not(madsim))]
        Planted::default()
    }
}
