//! Where groups live and how they are set up: the offsets topic's name and creation settings,
//! Kafka's placement of a group in it, and the coordinator's settings (Kafka's names).

/// The internal topic holding group metadata and committed offsets.
pub const offsets_topic: &str = "__consumer_offsets";

/// Group settings (Kafka's names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms`
    pub min_session_timeout_ms: u64,
    /// `group.max.session.timeout.ms`
    pub max_session_timeout_ms: u64,
    /// `group.initial.rebalance.delay.ms` (KIP-134)
    pub initial_rebalance_delay_ms: u64,
    /// `group.max.size`
    pub max_size: usize,
    /// `offsets.retention.minutes`, in ms: offsets of an Empty group are dropped this long
    /// after it became Empty (a standalone committer's, after their commit).
    pub offsets_retention_ms: u64,
    /// `offset.metadata.max.bytes`
    pub offset_metadata_max_bytes: usize,
    /// `offsets.topic.num.partitions`
    pub offsets_partitions: i32,
    /// `offsets.topic.replication.factor` (capped by the brokers present at creation).
    pub offsets_replication_factor: i16,
    /// `group.consumer.session.timeout.ms` (KIP-848 groups)
    pub consumer_session_timeout_ms: u64,
    /// `group.consumer.heartbeat.interval.ms`: how often KIP-848 members are told to heartbeat.
    pub consumer_heartbeat_interval_ms: u64,
    /// `group.consumer.assignors`: the first is a group's default.
    pub consumer_assignors: Vec<super::assignors::ServerAssignor>,
    /// `group.consumer.migration.policy`: which online conversions between a classic group and
    /// a consumer group with members are allowed (KIP-848's migration; `migration`).
    pub consumer_migration_policy: MigrationPolicy,
    /// `group.share.session.timeout.ms` (KIP-932 groups)
    pub share_session_timeout_ms: u64,
    /// `group.share.heartbeat.interval.ms`
    pub share_heartbeat_interval_ms: u64,
    /// `group.share.max.size`
    pub share_max_size: usize,
    /// `group.share.record.lock.duration.ms`
    pub share_record_lock_duration_ms: u64,
    /// `group.share.delivery.count.limit`
    pub share_delivery_count_limit: i16,
    /// `group.share.partition.max.record.locks`
    pub share_partition_max_record_locks: i64,
    /// `group.share.max.share.sessions`
    pub share_max_share_sessions: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        use crate::constants::*;
        GroupConfig {
            min_session_timeout_ms: group_min_session_timeout_ms_default,
            max_session_timeout_ms: group_max_session_timeout_ms_default,
            initial_rebalance_delay_ms: group_initial_rebalance_delay_ms_default,
            max_size: group_members_max,
            offsets_retention_ms: offsets_retention_ms_default,
            offset_metadata_max_bytes: offset_metadata_bytes_max,
            offsets_partitions: offsets_partitions_default,
            offsets_replication_factor: offsets_replication_factor_default,
            consumer_session_timeout_ms: group_consumer_session_timeout_ms_default,
            consumer_heartbeat_interval_ms: group_consumer_heartbeat_interval_ms_default,
            consumer_assignors: super::assignors::ServerAssignor::ALL.to_vec(),
            consumer_migration_policy: MigrationPolicy::Bidirectional,
            share_session_timeout_ms: group_share_session_timeout_ms_default,
            share_heartbeat_interval_ms: group_share_heartbeat_interval_ms_default,
            share_max_size: group_share_max_size_default,
            share_record_lock_duration_ms: group_share_record_lock_duration_ms_default,
            share_delivery_count_limit: group_share_delivery_count_limit_default,
            share_partition_max_record_locks: group_share_partition_max_record_locks_default,
            share_max_share_sessions: group_share_max_share_sessions_default,
        }
    }
}

/// `group.consumer.migration.policy` (Kafka's names; `bidirectional` is Kafka 4.0's default).
/// Conversions of empty groups happen whatever it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    /// A classic group upgrades when a consumer-protocol member joins, and a consumer group
    /// whose last consumer-protocol member left downgrades.
    Bidirectional,
    /// Only the upgrade.
    Upgrade,
    /// Only the downgrade.
    Downgrade,
    /// Neither, and no classic member joins a consumer group with members (Kafka since
    /// KAFKA-20640): a group id is one kind at a time.
    Disabled,
}

impl MigrationPolicy {
    pub const ALL: [MigrationPolicy; 4] = [MigrationPolicy::Bidirectional, MigrationPolicy::Upgrade, MigrationPolicy::Downgrade, MigrationPolicy::Disabled];

    pub fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Bidirectional => "bidirectional",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Disabled => "disabled",
        }
    }

    /// The policy of that name, as Kafka reads it (case-insensitive).
    pub fn by_name(name: &str) -> Option<MigrationPolicy> {
        MigrationPolicy::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    pub fn upgrades(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade)
    }

    pub fn downgrades(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade)
    }
}

/// How `__consumer_offsets` is created: partitions, replication factor (capped by the brokers
/// present), and topic configs — compacted, as Kafka's is, so a coordinator's load reads the
/// latest record of each group and offset, not the topic's history; segments of 100 MiB
/// (Kafka's `offsets.topic.segment.bytes`) so the closed ones compact early.
pub fn offsets_topic_spec(c: &GroupConfig, brokers_present: usize) -> (i32, i16, Vec<(&'static str, &'static str)>) {
    let rf = c.offsets_replication_factor.min(brokers_present.max(1) as i16);
    (c.offsets_partitions, rf, vec![("cleanup.policy", "compact"), ("segment.bytes", "104857600")])
}

/// Kafka's placement: `Utils.abs(groupId.hashCode) % partitions`, with Java's String hash over
/// UTF-16 code units, so a group lands where a Kafka cluster would put it.
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let h = group.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32));
    (h & 0x7fff_ffff) % partitions.max(1)
}
