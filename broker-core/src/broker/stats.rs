//! What a broker counts for its metrics (`server/metrics.rs`): per topic, the bytes and records
//! clients produced and the bytes consumers fetched; ISR shrinks and expands this broker's
//! leaderships committed. Plain counters, bumped by the decisions that do the work and read by
//! the metrics endpoint; nothing decides on them, and they are never in a trace.

use std::collections::BTreeMap;

/// One topic's counters, since this process started.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TopicStats {
    pub bytes_in: u64,
    pub messages_in: u64,
    pub bytes_out: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    pub topics: BTreeMap<String, TopicStats>,
    pub isr_shrinks: u64,
    pub isr_expands: u64,
}

impl Stats {
    /// A client's batch of `records` records, `bytes` long, appended to `topic`.
    pub fn produced(&mut self, topic: &str, bytes: usize, records: i64) {
        let t = self.topic(topic);
        t.bytes_in += bytes as u64;
        t.messages_in += records.max(0) as u64;
    }

    /// `bytes` of `topic` served to a consumer.
    pub fn fetched(&mut self, topic: &str, bytes: usize) {
        if bytes > 0 {
            self.topic(topic).bytes_out += bytes as u64;
        }
    }

    /// An ISR change committed from `before` to `after`.
    pub fn isr_changed(&mut self, before: usize, after: usize) {
        match after.cmp(&before) {
            std::cmp::Ordering::Less => self.isr_shrinks += 1,
            std::cmp::Ordering::Greater => self.isr_expands += 1,
            std::cmp::Ordering::Equal => {}
        }
    }

    /// Forgets topics `keep` says are gone (deleted), so the counters stay bounded by the topics.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.topics.retain(|t, _| keep(t));
    }

    fn topic(&mut self, topic: &str) -> &mut TopicStats {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_string(), TopicStats::default());
        }
        self.topics.get_mut(topic).expect("inserted above")
    }
}
