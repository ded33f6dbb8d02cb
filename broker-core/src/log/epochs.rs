//! The leader-epoch cache: for each leader epoch found in the log, the offset where it starts
//! (Kafka's `LeaderEpochFileCache`), answering OffsetForLeaderEpoch for KIP-101/279 truncation.
//!
//! It is derived from the `partitionLeaderEpoch` of the batch headers, never persisted: the log
//! rebuilds it at open and keeps it in step on append, truncation and retention, so it can never
//! disagree with the batches after a crash. Entries have strictly increasing epochs and
//! non-decreasing start offsets; a batch whose epoch is below the latest is ignored rather than
//! allowed to break that order. This module is pure: no IO, no clock.

/// Kafka's `UNDEFINED_EPOCH`: "no epoch" in an OffsetForLeaderEpoch answer.
pub const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's `UNDEFINED_EPOCH_OFFSET`: "no end offset" in an OffsetForLeaderEpoch answer.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// The first offset written under `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// The (epoch, start offset) entries of one log, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochCache {
    entries: Vec<EpochEntry>,
    /// The last entry's epoch, kept beside the entries: an append under the current epoch (all
    /// but the first of a leadership) then reads this struct only, not the entries' heap block,
    /// which at thousands of partitions is one more cache miss per append.
    latest: Option<i32>,
}

impl EpochCache {
    /// Notes a batch written under `epoch` at `base_offset`: a new entry when `epoch` is above the
    /// latest. Negative epochs (`-1`: a batch no leader stamped) carry no epoch, as in Kafka.
    /// Callers feed batches in log order, so offsets never go back.
    pub fn assign(&mut self, epoch: i32, base_offset: i64) {
        debug_assert!(self.entries.last().is_none_or(|l| base_offset >= l.start_offset), "batches come in log order");
        if epoch >= 0 && self.latest.is_none_or(|latest| epoch > latest) {
            self.entries.push(EpochEntry { epoch, start_offset: base_offset });
            self.latest = Some(epoch);
        }
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        debug_assert_eq!(self.latest, self.entries.last().map(|e| e.epoch));
        self.latest
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// Forgets the epochs that start at or after `end_offset` (the log was truncated there).
    pub fn truncate_from_end(&mut self, end_offset: i64) {
        let keep = self.entries.partition_point(|e| e.start_offset < end_offset);
        self.entries.truncate(keep);
        self.latest = self.entries.last().map(|e| e.epoch);
    }

    /// Forgets what lies below the new log start: entries wholly before it go, and the epoch in
    /// force at `start_offset` now starts there (Kafka's `truncateFromStart`).
    pub fn truncate_from_start(&mut self, start_offset: i64) {
        let below = self.entries.partition_point(|e| e.start_offset <= start_offset);
        if below > 0 {
            self.entries.drain(..below - 1);
            self.entries[0].start_offset = start_offset;
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.latest = None;
    }

    /// Kafka's OffsetForLeaderEpoch answer `(epoch, end offset)` for `requested`. A leader passes
    /// its `current_epoch`: when above the latest entry it counts as an entry starting at
    /// `log_end`, since the leader owns that epoch before writing under it. The latest epoch ends
    /// at `log_end`; an older one ends where the first later epoch starts, answered with the
    /// largest epoch `<= requested`; an epoch below the first ends where the first starts (Kafka
    /// 2.0+, KIP-279: answered with the requested epoch); one above the latest is undefined.
    pub fn end_offset_for(&self, requested: i32, current_epoch: Option<i32>, log_end: i64) -> (i32, i64) {
        const UNDEFINED: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        if requested == UNDEFINED_EPOCH {
            return UNDEFINED;
        }
        let current = current_epoch
            .filter(|&c| self.latest_epoch().is_none_or(|latest| c > latest))
            .map(|epoch| EpochEntry { epoch, start_offset: log_end });
        // A linear walk: a log holds one entry per leader change it still retains, a handful.
        let all = || self.entries.iter().copied().chain(current);
        let Some(latest) = all().last() else { return UNDEFINED };
        if requested == latest.epoch {
            return (requested, log_end);
        }
        let Some(next) = all().find(|e| e.epoch > requested) else { return UNDEFINED };
        // Below the first epoch: everything from the first retained epoch on is not the asker's.
        let Some(floor) = all().take_while(|e| e.epoch <= requested).last() else { return (requested, next.start_offset) };
        (floor.epoch, next.start_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> EpochCache {
        let mut c = EpochCache::default();
        for &(epoch, start) in entries {
            c.assign(epoch, start);
        }
        c
    }

    fn pairs(c: &EpochCache) -> Vec<(i32, i64)> {
        c.entries().iter().map(|e| (e.epoch, e.start_offset)).collect()
    }

    #[test]
    fn assign_adds_only_rising_epochs() {
        let mut c = EpochCache::default();
        assert_eq!(c.latest_epoch(), None);
        c.assign(-1, 0); // unstamped batch: no epoch
        c.assign(1, 3);
        c.assign(1, 6); // same epoch, later batch: already known
        c.assign(3, 9);
        c.assign(2, 12); // a lower epoch after a higher one: ignored, the cache stays monotonic
        c.assign(3, 15);
        c.assign(4, 18);
        assert_eq!(pairs(&c), [(1, 3), (3, 9), (4, 18)]);
        assert_eq!(c.latest_epoch(), Some(4));
    }

    #[test]
    fn truncate_from_end_drops_epochs_starting_at_or_after_the_cut() {
        let mut c = cache(&[(1, 0), (2, 10), (4, 20)]);
        c.truncate_from_end(25);
        assert_eq!(pairs(&c), [(1, 0), (2, 10), (4, 20)], "cut inside the last epoch keeps it");
        c.truncate_from_end(20);
        assert_eq!(pairs(&c), [(1, 0), (2, 10)], "cut at an epoch's start drops it");
        c.truncate_from_end(0);
        assert_eq!(pairs(&c), []);
        c.assign(3, 0);
        assert_eq!(pairs(&c), [(3, 0)], "epochs may start over lower after a truncation");
    }

    #[test]
    fn truncate_from_start_moves_the_epoch_in_force_to_the_new_start() {
        let mut c = cache(&[(1, 0), (2, 10), (4, 20)]);
        c.truncate_from_start(0);
        assert_eq!(pairs(&c), [(1, 0), (2, 10), (4, 20)], "nothing below the start");
        c.truncate_from_start(15);
        assert_eq!(pairs(&c), [(2, 15), (4, 20)]);
        c.truncate_from_start(20);
        assert_eq!(pairs(&c), [(4, 20)], "an epoch starting exactly at the new start stays as is");
        c.truncate_from_start(99);
        assert_eq!(pairs(&c), [(4, 99)], "the latest epoch stays even past all entries");
        let mut late = cache(&[(5, 30)]);
        late.truncate_from_start(10);
        assert_eq!(pairs(&late), [(5, 30)], "an epoch starting after the new start is untouched");
        late.clear();
        assert_eq!(late.latest_epoch(), None);
    }

    #[test]
    fn end_offset_for_answers_every_case() {
        let c = cache(&[(1, 0), (3, 10), (4, 20)]);
        let end = 30;
        assert_eq!(c.end_offset_for(4, None, end), (4, 30), "latest epoch ends at the log end");
        assert_eq!(c.end_offset_for(3, None, end), (3, 20), "an epoch ends where the next starts");
        assert_eq!(c.end_offset_for(2, None, end), (1, 10), "a missing epoch: the one before it, to where the next starts");
        assert_eq!(c.end_offset_for(1, None, end), (1, 10));
        assert_eq!(c.end_offset_for(0, None, end), (0, 0), "below the first epoch: it ends where the first starts");
        assert_eq!(c.end_offset_for(UNDEFINED_EPOCH, None, end), (-1, -1));
        assert_eq!(c.end_offset_for(5, None, end), (-1, -1), "above the latest epoch");
        // A leader in epoch 6 that has not written under it yet.
        assert_eq!(c.end_offset_for(6, Some(6), end), (6, 30), "the leader's own epoch ends at the log end");
        assert_eq!(c.end_offset_for(4, Some(6), end), (4, 30), "the last written epoch ends where the leader's began");
        assert_eq!(c.end_offset_for(5, Some(6), end), (4, 30));
        assert_eq!(c.end_offset_for(7, Some(6), end), (-1, -1));
        // A current epoch that is not above the latest entry adds nothing.
        assert_eq!(c.end_offset_for(4, Some(4), end), (4, 30));
        assert_eq!(c.end_offset_for(3, Some(2), end), (3, 20));
        assert_eq!(c.end_offset_for(4, Some(2), end), (4, 30));
    }

    #[test]
    fn end_offset_for_an_empty_cache() {
        let c = EpochCache::default();
        assert_eq!(c.end_offset_for(0, None, 7), (-1, -1));
        assert_eq!(c.end_offset_for(2, Some(2), 7), (2, 7), "a new leader of an empty or unstamped log");
        assert_eq!(c.end_offset_for(1, Some(2), 7), (1, 7), "below the leader's only epoch");
    }
}
