//! A partition log's settings, with Kafka's topic-config names, and the ranges it can honour.

use super::LogError;
use crate::constants::*;

/// When appended data is fsynced (Kafka `flush.messages` / `flush.ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Leave it to the OS (Kafka's default): durability comes from replication.
    Never,
    /// After every N records (`flush.messages=N`).
    EveryMessages(u64),
    /// When the oldest unflushed append is T ms old (`flush.ms=T`), checked on append and tick.
    EveryMs(u64),
    /// Before an append returns (`flush.messages=1`).
    EveryBatch,
}

/// What happens to old data (Kafka `cleanup.policy`): whole old segments deleted by
/// retention, and/or closed segments compacted to the last record per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl CleanupPolicy {
    pub const DELETE: CleanupPolicy = CleanupPolicy { delete: true, compact: false };
    pub const COMPACT: CleanupPolicy = CleanupPolicy { delete: false, compact: true };

    /// Kafka's spellings: `delete`, `compact`, or both comma-separated in either order.
    pub fn parse(value: &str) -> Result<CleanupPolicy, String> {
        let mut p = CleanupPolicy { delete: false, compact: false };
        for part in value.split(',').map(str::trim) {
            match part {
                "delete" => p.delete = true,
                "compact" => p.compact = true,
                other => return Err(format!("cleanup.policy '{other}' must be delete, compact or both")),
            }
        }
        Ok(p)
    }

    /// As Kafka writes it.
    pub fn name(&self) -> &'static str {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
    }
}

/// Settings of one partition log, with Kafka's topic-config names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`
    pub segment_bytes: u64,
    /// `segment.ms`
    pub segment_ms: u64,
    /// `index.interval.bytes`
    pub index_interval_bytes: u64,
    /// `retention.ms`; negative means keep forever.
    pub retention_ms: i64,
    /// `retention.bytes`; negative means no size limit.
    pub retention_bytes: i64,
    /// `flush.messages` / `flush.ms`
    pub flush: FlushPolicy,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: usize,
    /// `cleanup.policy`
    pub cleanup: CleanupPolicy,
    /// `delete.retention.ms`: how long a tombstone outlives the cleaning that reached it.
    pub delete_retention_ms: u64,
    /// `min.cleanable.dirty.ratio`, in parts per million: a log is cleaned once this share of
    /// its closed bytes has not been cleaned yet.
    pub min_cleanable_dirty_ratio_ppm: u32,
    /// `min.compaction.lag.ms`: records younger than this are not compacted.
    pub min_compaction_lag_ms: u64,
    /// `max.compaction.lag.ms`: a dirty record older than this makes the log cleanable
    /// whatever its dirty ratio.
    pub max_compaction_lag_ms: u64,
    /// `message.timestamp.type=LogAppendTime`: the leader stamps each appended batch with its
    /// own clock (Kafka's LogAppendTime) instead of keeping the producer's CreateTime.
    pub log_append_time: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: segment_bytes_default,
            segment_ms: segment_ms_default,
            index_interval_bytes: index_interval_bytes_default,
            retention_ms: retention_ms_default,
            retention_bytes: retention_bytes_default,
            flush: FlushPolicy::Never,
            max_message_bytes: message_bytes_max,
            cleanup: CleanupPolicy::DELETE,
            delete_retention_ms: delete_retention_ms_default,
            min_cleanable_dirty_ratio_ppm: min_cleanable_dirty_ratio_ppm_default,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX as u64,
            log_append_time: false,
        }
    }
}

impl LogConfig {
    /// Refuses settings the log cannot honour, naming the setting.
    pub fn validate(&self) -> Result<(), LogError> {
        let bad = |what: String| Err(LogError::Config(what));
        if !(segment_bytes_min..=segment_bytes_max).contains(&self.segment_bytes) {
            return bad(format!("segment.bytes={} must be in {segment_bytes_min}..={segment_bytes_max}", self.segment_bytes));
        }
        if self.segment_ms == 0 {
            return bad("segment.ms must be at least 1".into());
        }
        if self.max_message_bytes < batch_header_bytes || self.max_message_bytes as u64 > segment_bytes_max {
            return bad(format!("max.message.bytes={} must be in {batch_header_bytes}..={segment_bytes_max}", self.max_message_bytes));
        }
        if matches!(self.flush, FlushPolicy::EveryMessages(0) | FlushPolicy::EveryMs(0)) {
            return bad("flush.messages and flush.ms must be at least 1".into());
        }
        if self.min_cleanable_dirty_ratio_ppm > 1_000_000 {
            return bad(format!("min.cleanable.dirty.ratio={} must be in 0..=1", self.min_cleanable_dirty_ratio_ppm as f64 / 1e6));
        }
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms {
            return bad(format!("min.compaction.lag.ms={} exceeds max.compaction.lag.ms={}", self.min_compaction_lag_ms, self.max_compaction_lag_ms));
        }
        Ok(())
    }
}
