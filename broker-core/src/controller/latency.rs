//! How long the metadata quorum takes to commit what its active controller proposes (the
//! metrics' Raft commit latency): each proposal's last offset and when it was proposed, until
//! the high watermark passes it. Explicit `now`, bounded: proposals a leadership change dropped
//! never commit, so the oldest beyond `pending_max` are forgotten.

use std::collections::BTreeMap;

/// Histogram bucket bounds, ms: a lone voter's local sync to a slow quorum's round trips.
pub const commit_latency_buckets_ms: [u64; 10] = [1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000];
/// Proposals waiting to commit, at most.
const pending_max: usize = 10_000;

#[derive(Debug, Default, Clone)]
pub struct CommitLatency {
    pending: BTreeMap<i64, u64>,
    /// Commits per bucket (not cumulative), then the count and the sum.
    pub buckets: [u64; commit_latency_buckets_ms.len()],
    pub count: u64,
    pub sum_ms: u64,
}

impl CommitLatency {
    /// A proposal ending at `last_offset` was made at `now`.
    pub fn proposed(&mut self, last_offset: i64, now: u64) {
        if self.pending.len() >= pending_max {
            self.pending.pop_first();
        }
        self.pending.insert(last_offset, now);
    }

    /// The high watermark reached `high_watermark` at `now`: every proposal below it committed.
    pub fn committed(&mut self, high_watermark: i64, now: u64) {
        while let Some(entry) = self.pending.first_entry().filter(|e| *e.key() < high_watermark) {
            let ms = now.saturating_sub(entry.remove());
            self.count += 1;
            self.sum_ms += ms;
            if let Some(i) = commit_latency_buckets_ms.iter().position(|b| ms <= *b) {
                self.buckets[i] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_proposal_counts_once_when_the_mark_passes_it() {
        let mut l = CommitLatency::default();
        l.proposed(4, 100);
        l.proposed(9, 103);
        l.committed(5, 104);
        assert_eq!((l.count, l.sum_ms), (1, 4));
        l.committed(5, 200);
        assert_eq!(l.count, 1, "not again");
        l.committed(10, 130);
        assert_eq!((l.count, l.sum_ms, l.buckets[2], l.buckets[5]), (2, 31, 1, 1));
    }
}
