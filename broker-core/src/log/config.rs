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
        Ok(())
    }
}
