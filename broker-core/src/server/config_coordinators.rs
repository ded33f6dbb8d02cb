//! The coordinators' settings from the broker's flags and config file: the group coordinator's
//! (classic, KIP-848 and KIP-932 groups, the offsets topic) and the transaction coordinator's,
//! each checked as Kafka checks it. Resolution only; `config` reads the flags.

use super::config::Flags;

/// The group coordinator's settings, checked as Kafka checks them.
pub(super) fn resolve_groups(f: &Flags, g: &mut crate::group::GroupConfig) -> Result<(), String> {
    if let Some(v) = f.group_initial_rebalance_delay_ms { g.initial_rebalance_delay_ms = v }
    if let Some(v) = f.group_min_session_timeout_ms { g.min_session_timeout_ms = v }
    if let Some(v) = f.group_max_session_timeout_ms { g.max_session_timeout_ms = v }
    if let Some(v) = f.group_max_size { g.max_size = v }
    if let Some(v) = f.group_consumer_session_timeout_ms { g.consumer_session_timeout_ms = v }
    if let Some(v) = f.group_consumer_heartbeat_interval_ms { g.consumer_heartbeat_interval_ms = v }
    if let Some(names) = &f.group_consumer_assignors {
        let known = names.split(',').map(|n| crate::group::assignors::ServerAssignor::by_name(n.trim()).ok_or_else(|| format!("group.consumer.assignors: unknown assignor {n:?} (uniform, range)")));
        g.consumer_assignors = known.collect::<Result<Vec<_>, _>>()?;
    }
    if let Some(name) = &f.group_consumer_migration_policy {
        g.consumer_migration_policy = crate::group::MigrationPolicy::by_name(name).ok_or_else(|| format!("group.consumer.migration.policy: unknown policy {name:?} (bidirectional, upgrade, downgrade, disabled)"))?;
    }
    if g.consumer_assignors.is_empty() || g.consumer_heartbeat_interval_ms == 0 || g.consumer_heartbeat_interval_ms >= g.consumer_session_timeout_ms {
        return Err("group.consumer.assignors must name one; group.consumer.heartbeat.interval.ms must be 1 ms or more and below group.consumer.session.timeout.ms".into());
    }
    if let Some(v) = f.group_share_session_timeout_ms { g.share_session_timeout_ms = v }
    if let Some(v) = f.group_share_heartbeat_interval_ms { g.share_heartbeat_interval_ms = v }
    if let Some(v) = f.group_share_max_size { g.share_max_size = v }
    if let Some(v) = f.group_share_record_lock_duration_ms { g.share_record_lock_duration_ms = v }
    if let Some(v) = f.group_share_delivery_count_limit { g.share_delivery_count_limit = v }
    if let Some(v) = f.group_share_partition_max_record_locks { g.share_partition_max_record_locks = v }
    let share_ranges = [
        ("group.share.record.lock.duration.ms", g.share_record_lock_duration_ms as i64, 1_000, 3_600_000),
        ("group.share.delivery.count.limit", g.share_delivery_count_limit as i64, 2, 10),
        ("group.share.partition.max.record.locks", g.share_partition_max_record_locks, 100, 10_000),
        ("group.share.max.size", g.share_max_size as i64, 1, 1_000),
    ];
    if let Some((name, v, lo, hi)) = share_ranges.iter().find(|(_, v, lo, hi)| v < lo || v > hi) {
        return Err(format!("{name}={v} must be {lo}..={hi}"));
    }
    if g.share_heartbeat_interval_ms == 0 || g.share_heartbeat_interval_ms >= g.share_session_timeout_ms {
        return Err("group.share.heartbeat.interval.ms must be 1 ms or more and below group.share.session.timeout.ms".into());
    }
    if let Some(v) = f.offsets_topic_num_partitions { g.offsets_partitions = v }
    if let Some(v) = f.offsets_topic_replication_factor { g.offsets_replication_factor = v }
    if let Some(v) = f.offsets_retention_minutes { g.offsets_retention_ms = v.saturating_mul(60_000) }
    if let Some(v) = f.offset_metadata_max_bytes { g.offset_metadata_max_bytes = v }
    if g.min_session_timeout_ms > g.max_session_timeout_ms {
        return Err(format!("group.min.session.timeout.ms={} exceeds group.max.session.timeout.ms={}", g.min_session_timeout_ms, g.max_session_timeout_ms));
    }
    if !(1..=crate::constants::partitions_per_topic_max).contains(&g.offsets_partitions) {
        return Err(format!("offsets.topic.num.partitions={} must be 1..={}", g.offsets_partitions, crate::constants::partitions_per_topic_max));
    }
    if g.offsets_replication_factor < 1 || g.max_size < 1 {
        return Err("offsets.topic.replication.factor and group.max.size must be at least 1".into());
    }
    Ok(())
}

/// The transaction coordinator's settings, checked as Kafka checks them (each at least 1).
pub(super) fn resolve_txns(f: &Flags, t: &mut crate::txn::TxnConfig) -> Result<(), String> {
    if let Some(v) = f.transaction_max_timeout_ms { t.max_timeout_ms = v }
    if let Some(v) = f.transactional_id_expiration_ms { t.id_expiration_ms = v }
    if let Some(v) = f.transaction_abort_timed_out_transaction_cleanup_interval_ms { t.abort_timed_out_interval_ms = v }
    if let Some(v) = f.transaction_remove_expired_transaction_cleanup_interval_ms { t.remove_expired_interval_ms = v }
    if let Some(v) = f.transaction_state_log_num_partitions { t.state_partitions = v }
    if let Some(v) = f.transaction_state_log_replication_factor { t.state_replication_factor = v }
    if let Some(v) = f.transaction_state_log_min_isr { t.state_min_isr = v }
    if let Some(v) = f.transaction_partition_verification_enable { t.partition_verification = v }
    if let Some(v) = f.transaction_version {
        t.transaction_version = crate::kafka::TxnVersion::from_level(v).ok_or_else(|| format!("transaction.version={v} must be 1 (classic) or 2 (KIP-890)"))?;
    }
    let positive = [
        ("transaction.max.timeout.ms", t.max_timeout_ms as i64),
        ("transactional.id.expiration.ms", t.id_expiration_ms),
        ("transaction.abort.timed.out.transaction.cleanup.interval.ms", t.abort_timed_out_interval_ms),
        ("transaction.remove.expired.transaction.cleanup.interval.ms", t.remove_expired_interval_ms),
        ("transaction.state.log.replication.factor", t.state_replication_factor as i64),
        ("transaction.state.log.min.isr", t.state_min_isr as i64),
    ];
    if let Some((name, v)) = positive.iter().find(|(_, v)| *v < 1) {
        return Err(format!("{name}={v} must be at least 1"));
    }
    if !(1..=crate::constants::partitions_per_topic_max).contains(&t.state_partitions) {
        return Err(format!("transaction.state.log.num.partitions={} must be 1..={}", t.state_partitions, crate::constants::partitions_per_topic_max));
    }
    Ok(())
}
