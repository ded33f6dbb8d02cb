//! What a history says per key of a compacted topic, for the checkers that must allow what the
//! log cleaner legitimately removes. Not a checker: an index over the history, built once per
//! check, that decides nothing but "could the cleaner have removed this record?".
//!
//! The cleaner removes a record of key `k` at offset `o` only when a later record of `k` was in
//! the log (below the high watermark) when it ran — or when the record is a tombstone that a
//! pass had reached and whose timestamp was `delete.retention.ms` old. Follow the later
//! records of `k` and the chain ends either at a record still in the final log, or at a
//! tombstone that was itself removed, which needs its retention to have passed before the final
//! read ended. That is the test below: conservative (it may excuse a removal the cleaner did
//! not in fact make), never stricter than the cleaner.
//!
//! Keys come from the writes: a value (a tombstone's [`record_identity`]) identifies its write,
//! and the write says its key. A record whose value no write made has no known key and is never
//! excused here.
//!
//! [`record_identity`]: crate::history::record_identity

use crate::history::{Compaction, History, Outcome, Write};
use std::collections::BTreeMap;

/// (topic, partition, key)
type KeyAt<'a> = (&'a str, i32, &'a [u8]);

pub(super) struct Keys<'a> {
    h: &'a History,
    /// Every write to a compacted topic, by (topic, partition, value).
    by_value: BTreeMap<(&'a str, i32, &'a [u8]), &'a Write>,
    /// The highest offset of each key in the final log.
    final_last: BTreeMap<KeyAt<'a>, i64>,
    /// The tombstone writes of each key that may have landed (not refused).
    tombstones: BTreeMap<KeyAt<'a>, Vec<&'a Write>>,
}

impl<'a> Keys<'a> {
    pub(super) fn new(h: &'a History) -> Keys<'a> {
        let mut by_value = BTreeMap::new();
        let mut tombstones: BTreeMap<KeyAt, Vec<&Write>> = BTreeMap::new();
        for w in h.writes.iter().filter(|w| h.compacted_topics.contains_key(&w.topic)) {
            by_value.insert((w.topic.as_str(), w.partition, w.value.as_slice()), w);
            if let (Some(k), true, false) = (&w.key, w.tombstone, matches!(w.outcome, Outcome::Fail(_))) {
                tombstones.entry((w.topic.as_str(), w.partition, k.as_slice())).or_default().push(w);
            }
        }
        let mut keys = Keys { h, by_value, final_last: BTreeMap::new(), tombstones };
        for ((topic, partition), log) in &h.final_read {
            for (offset, value) in log {
                if let Some(k) = keys.key_of(topic, *partition, value) {
                    keys.final_last.insert((topic.as_str(), *partition, k), *offset);
                }
            }
        }
        keys
    }

    /// The topic's compaction settings, if it is compacted.
    pub(super) fn compacted(&self, topic: &str) -> Option<&'a Compaction> {
        self.h.compacted_topics.get(topic)
    }

    /// The write that made `value` in a compacted topic's partition.
    pub(super) fn write(&self, topic: &str, partition: i32, value: &[u8]) -> Option<&'a Write> {
        self.by_value.get(&(topic, partition, value)).copied()
    }

    /// The key of the record holding `value`, if a write of a compacted topic made it.
    pub(super) fn key_of(&self, topic: &str, partition: i32, value: &[u8]) -> Option<&'a [u8]> {
        self.write(topic, partition, value)?.key.as_deref()
    }

    /// Whether tombstone write `t` could have been removed before the final read ended: its
    /// timestamp (taken when it was invoked, on the clock the brokers share) was
    /// `delete.retention.ms` old by then. One ms of slack for the clocks' rounding.
    pub(super) fn tombstone_may_be_gone(&self, t: &Write) -> bool {
        self.tombstone_may_be_gone_by(t, self.h.final_read_ms)
    }

    /// [`Keys::tombstone_may_be_gone`] by simulated time `ms`.
    pub(super) fn tombstone_may_be_gone_by(&self, t: &Write, ms: u64) -> bool {
        t.tombstone && self.compacted(&t.topic).is_some_and(|c| t.invoke_ms.saturating_add(c.delete_retention_ms) <= ms + 1)
    }

    /// Whether the cleaner could have removed the record of `key` at `offset`: a later record
    /// of the key is in the final log, or a tombstone of the key that may have landed above
    /// it (acknowledged above it, or with an outcome not known) could be gone by now.
    pub(super) fn superseded(&self, topic: &str, partition: i32, key: &[u8], offset: i64) -> bool {
        if self.final_last.get(&(topic, partition, key)).is_some_and(|&o| o > offset) {
            return true;
        }
        let tombstones = self.tombstones.get(&(topic, partition, key)).map(Vec::as_slice).unwrap_or_default();
        tombstones.iter().any(|t| t.acknowledged().is_none_or(|o| o > offset) && self.tombstone_may_be_gone(t))
    }

    /// Whether write `w`, recorded at `offset`, may be absent from a compacted log: superseded,
    /// or a tombstone whose own retention passed.
    pub(super) fn may_be_cleaned(&self, w: &Write, offset: i64) -> bool {
        let Some(key) = w.key.as_deref() else { return false };
        self.compacted(&w.topic).is_some() && (self.superseded(&w.topic, w.partition, key, offset) || (w.tombstone && self.tombstone_may_be_gone(w)))
    }
}
