//! Where transactional ids live and how the transaction coordinator is set up: the
//! `__transaction_state` topic's name and creation settings, Kafka's placement of an id in it,
//! and the coordinator's settings under Kafka's names with Kafka's defaults
//! (`TransactionStateManagerConfig`, `TransactionLogConfig`). Values and arithmetic only: never
//! reads a clock, a file or the environment.
//!
//! The defaults are here rather than in `constants.rs` only while `txn/` is built beside other
//! work in progress; they move there unchanged.

/// The internal topic holding each transactional id's latest state (compacted).
pub const transaction_state_topic: &str = "__transaction_state";

/// Kafka `transaction.max.timeout.ms` default (15 min): a producer asking for a longer
/// transaction timeout gets INVALID_TRANSACTION_TIMEOUT, so no transaction can hold back
/// read_committed consumers (the last stable offset) for longer.
pub const transaction_max_timeout_ms_default: i32 = 900_000;

/// Kafka `transactional.id.expiration.ms` default (7 days): an id with no transaction in
/// progress and no update for this long is forgotten (tombstoned).
pub const transactional_id_expiration_ms_default: i64 = 604_800_000;

/// Kafka `transaction.abort.timed.out.transaction.cleanup.interval.ms` default: how often
/// open transactions are checked against their timeout, so an abandoned one is aborted at most
/// this long after its timeout.
pub const abort_timed_out_interval_ms_default: i64 = 10_000;

/// Kafka `transaction.remove.expired.transaction.cleanup.interval.ms` default (1 hour): how
/// often ids are checked for expiration; an hour is nothing against a 7-day expiration.
pub const remove_expired_interval_ms_default: i64 = 3_600_000;

/// Kafka `transaction.state.log.num.partitions` default. Placement depends on it, so it must
/// never change once the topic exists.
pub const state_partitions_default: i32 = 50;

/// Kafka `transaction.state.log.replication.factor` default: a coordinator's state survives
/// the loss of a broker.
pub const state_replication_factor_default: i16 = 3;

/// Kafka `transaction.state.log.min.isr` default: a state write is acknowledged only once two
/// replicas hold it, so a prepared commit is never lost with one broker.
pub const state_min_isr_default: i16 = 2;

/// Kafka `transaction.state.log.segment.bytes` default (100 MiB): small, so closed segments
/// compact early and a new coordinator loads little.
pub const state_segment_bytes_default: u64 = 104_857_600;

/// The producer epoch at and above which InitProducerId rotates to a new producer id
/// (`TransactionMetadata.isEpochExhausted`: `Short.MaxValue - 1`): one epoch is kept in reserve
/// for fencing an open transaction of the last one.
pub const producer_epoch_exhausted: i16 = i16::MAX - 1;

/// Transaction coordinator settings (Kafka's names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms`
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`
    pub remove_expired_interval_ms: i64,
    /// `transaction.state.log.num.partitions` (used when the topic is created; placement uses
    /// the partition count the topic has).
    pub state_partitions: i32,
    /// `transaction.state.log.replication.factor` (capped by the brokers present at creation).
    pub state_replication_factor: i16,
    /// `transaction.state.log.min.isr`
    pub state_min_isr: i16,
    /// Kafka's `transaction.version` feature: the most a client's EndTxn may ask for. Classic
    /// (1) lets every transaction end at its own epoch, open to the late EndTxn and the late
    /// marker of docs/transactions.md section 4; 2 (the default) bumps the epoch at every end
    /// of a client that asks (EndTxn v5).
    pub transaction_version: crate::kafka::TxnVersion,
    /// `transaction.partition.verification.enable` (KIP-890 part 1, on by default as in Kafka
    /// 3.6+): a partition leader asks this coordinator (AddPartitionsToTxn v4) before a
    /// producer's first transactional write to it, so a late write of an ended transaction
    /// cannot open one nobody will end. Read by the leaders, whatever `transaction_version`.
    pub partition_verification: bool,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            max_timeout_ms: transaction_max_timeout_ms_default,
            id_expiration_ms: transactional_id_expiration_ms_default,
            abort_timed_out_interval_ms: abort_timed_out_interval_ms_default,
            remove_expired_interval_ms: remove_expired_interval_ms_default,
            state_partitions: state_partitions_default,
            state_replication_factor: state_replication_factor_default,
            state_min_isr: state_min_isr_default,
            transaction_version: crate::kafka::TxnVersion::default(),
            partition_verification: true,
        }
    }
}

/// How `__transaction_state` is created (`TransactionStateManager.transactionTopicConfigs`):
/// partitions, replication factor (capped by the brokers present), and topic configs —
/// compacted, no unclean election, min ISR capped by the replication factor. Kafka's
/// `compression.type=uncompressed` is left out: this broker stores batches as they were
/// written, and the coordinator writes them uncompressed.
pub fn state_topic_spec(c: &TxnConfig, brokers_present: usize) -> (i32, i16, Vec<(&'static str, String)>) {
    let rf = c.state_replication_factor.min(brokers_present.max(1) as i16);
    let configs = vec![
        ("cleanup.policy", "compact".to_string()),
        ("unclean.leader.election.enable", "false".to_string()),
        ("min.insync.replicas", c.state_min_isr.min(rf).to_string()),
        ("segment.bytes", state_segment_bytes_default.to_string()),
    ];
    (c.state_partitions, rf, configs)
}

/// Kafka's placement (`TransactionStateManager.partitionFor`): `Utils.abs(id.hashCode) %
/// partitions`, the same Java string hash the group coordinator places groups with.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    crate::group::partition_for(transactional_id, partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_is_kafkas() {
        // Java's "my-txn".hashCode() is -1061187895 and "producer-é" (UTF-16) 1752578414,
        // computed apart from this code; & 0x7fffffff then % 50.
        assert_eq!(partition_for("my-txn", 50), 3);
        assert_eq!(partition_for("txn-1", 50), 10);
        assert_eq!(partition_for("producer-é", 50), 14);
        assert_eq!(partition_for("anything", 1), 0);
    }

    #[test]
    fn defaults_are_kafkas() {
        let c = TxnConfig::default();
        assert_eq!((c.max_timeout_ms, c.id_expiration_ms, c.abort_timed_out_interval_ms, c.state_partitions), (900_000, 604_800_000, 10_000, 50));
        let (partitions, rf, configs) = state_topic_spec(&c, 1);
        assert_eq!((partitions, rf), (50, 1));
        assert!(configs.contains(&("min.insync.replicas", "1".to_string())));
        assert!(configs.contains(&("cleanup.policy", "compact".to_string())));
    }
}
