//! The replica side of the log: a follower's append of the leader's batches, durable
//! truncation (KIP-101/279), and the leader-epoch queries. These are more methods of [`Log`],
//! kept apart from the leader's write path; like it they do IO only through the `Disk` and
//! never read a clock. Truncation must never leave a state from which a crash could bring a
//! removed record back under a recovery point that vouches for it; see docs/storage.md,
//! "Replication". A log whose owner takes jobs ([`Log::defer_syncs`]) truncates in memory
//! only (and removes names), leaving the syncs, the file cut and the checkpoint to the owner's
//! job (`log::cut`); a log that syncs inline does all of it before returning.

use super::segment::{self, Segment};
use super::{batch, AppendInfo, EpochCache, Log, LogError};

impl Log {
    /// A follower's append: `batches` (one or more, back to back, as a fetch returned them) go
    /// in exactly as the leader wrote them — offsets, leader epochs and CRCs unchanged. Each
    /// whole batch is checked as reads check stored batches (see [`batch::whole_batches`]; a
    /// trailing partial batch is dropped) and must continue the log densely: the first at the
    /// log end, each next right after the previous ([`LogError::NonContiguous`] otherwise).
    /// `max.message.bytes` is not applied: the leader did, and a lowered limit must not stall
    /// replication (Kafka's rule). Rolls, indexes and the flush policy work as for `append`.
    /// `Ok(None)` when no whole batch was given. A refused input writes nothing; an IO error
    /// may leave a prefix of the batches appended (the log stays dense, and the follower
    /// fetches again from its log end).
    pub fn append_replicated(&mut self, batches: &[u8], now: u64) -> Result<Option<AppendInfo>, LogError> {
        self.check_failed()?;
        self.refuse_while_cutting()?;
        let headers = batch::whole_batches(batches)?;
        let mut expected = self.log_end_offset();
        for h in &headers {
            if h.base_offset != expected {
                return Err(LogError::NonContiguous { expected, found: h.base_offset });
            }
            expected = h.next_offset();
        }
        let (Some(first), Some(last)) = (headers.first(), headers.last()) else { return Ok(None) };
        let mut at = 0;
        for h in &headers {
            self.write_batch(super::segment::Appending::Borrowed(&batches[at..at + h.size]), h, now)?;
            at += h.size;
        }
        let flushed = self.flush_by_policy(now)?;
        let max_timestamp = headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1);
        Ok(Some(AppendInfo { base_offset: first.base_offset, last_offset: last.last_offset(), max_timestamp, flushed }))
    }

    /// Removes every record at or above `offset` (a follower's KIP-101 truncation). When
    /// `offset` falls inside a batch the whole batch goes: the log is cut at that batch's base
    /// offset, so the log end may end up below `offset`. A no-op when `offset` is at or past the
    /// log end; below the log start it is [`Log::truncate_fully`]. Durable on return when the
    /// log syncs inline: later segments are removed and the directory synced before the cut (a
    /// cut segment followed by a surviving later one would read as a gap, corruption, at the
    /// next open), the cut is synced, and the checkpoint is rewritten so it never vouches for
    /// removed offsets. With deferral on ([`Log::defer_syncs`]) memory is cut at once and the
    /// same IO, in the same order, is the owner's job ([`Log::take_cut`], `log::cut`); until
    /// its report the log takes no append and no other truncation. A cut while a cleaning swap
    /// is in flight — into its group, or with deferral on at all — or while a job that writes,
    /// a cleaning pass's clean-point job or a truncation's job is in flight is refused
    /// ([`LogError::Busy`], nothing changed); any other error takes the log offline
    /// ([`Log::failure`]): a half-done truncation leaves memory unsure of the disk, and
    /// reopening recovers a dense log holding no more than before. A negative `offset` is a
    /// caller bug (an UNDEFINED_EPOCH_OFFSET answer is no truncation point) and panics, as
    /// Kafka's `truncateTo` throws.
    pub fn truncate_to(&mut self, offset: i64, now: u64) -> Result<(), LogError> {
        assert!(offset >= 0, "log offsets are never negative: {offset}");
        self.check_failed()?;
        self.refuse_while_cutting()?;
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        if offset < self.log_start_offset() {
            return self.truncate_fully(offset, now);
        }
        // The job's replay would read the segments a swap replaces: with deferral on, wait.
        self.refuse_cut_while_swapping(if self.deferred.on { i64::MIN } else { offset })?;
        // A pass's clean point being written: the cut's own job may write a lower one.
        self.refuse_cut_while_pointing()?;
        self.refuse_cut_while_writing()?;
        let result = self.cut_tail(offset, now);
        self.offline_on_error(result, "truncation")
    }

    fn cut_tail(&mut self, offset: i64, now: u64) -> Result<(), LogError> {
        self.abort_cleaning();
        let keep = self.segments.partition_point(|s| s.base_offset <= offset);
        // Newest first: whatever prefix of the removals a crash keeps, the log stays dense.
        // The files stay open until the segments are dropped (with deferral on, by the job).
        let mut removed = Vec::new();
        while self.segments.len() > keep {
            let seg = self.segments.pop().expect("more segments than kept");
            self.dir_changed();
            segment::delete_files(self.disk.as_ref(), &self.dir, seg.base_offset)?;
            removed.push(seg);
        }
        // Snapshots past the cut describe batches about to go (a cut inside a batch moves the
        // end to its base, where no snapshot can lie above `offset`): gone before the cut.
        self.drop_producer_snapshots(|o| o > offset)?;
        let aborted_cut = self.drop_aborted_from(offset);
        if self.deferred.on {
            let file = self.active_mut().cut_in_memory(offset, now)?;
            self.epochs.truncate_from_end(self.log_end_offset());
            return self.owe_cut(removed, aborted_cut, file);
        }
        drop(removed);
        if aborted_cut {
            self.cut_aborted(offset)?;
        }
        self.sync_dir_if_dirty()?;
        let end = self.active_mut().truncate_to(offset, now)?;
        self.epochs.truncate_from_end(end);
        self.settle_after_truncation()
    }

    /// Deletes every segment and starts an empty log whose start and end are `new_start`, as
    /// Kafka does when a follower's fetch offset is below the leader's log start. Durable on
    /// return when the log syncs inline; with deferral on, memory and names change at once
    /// and the syncs and checkpoint are the owner's job, as for [`Log::truncate_to`], which
    /// also says what is refused and what takes the log offline.
    pub fn truncate_fully(&mut self, new_start: i64, now: u64) -> Result<(), LogError> {
        assert!(new_start >= 0, "log offsets are never negative: {new_start}");
        self.check_failed()?;
        self.refuse_while_cutting()?;
        self.refuse_cut_while_swapping(i64::MIN)?;
        self.refuse_cut_while_pointing()?;
        self.refuse_cut_while_writing()?;
        let result = self.start_over_at(new_start, now);
        self.offline_on_error(result, "full truncation")
    }

    fn start_over_at(&mut self, new_start: i64, now: u64) -> Result<(), LogError> {
        self.abort_cleaning();
        // Newest first, as in truncate_to; the new segment's name is journaled after every
        // removal, so a crash leaves either a dense prefix of the old log or the new empty one,
        // never both. Old segments stay in memory until the new one exists: never empty.
        self.drop_producer_snapshots(|_| true)?;
        self.aborted.clear();
        for seg in self.segments.iter().rev() {
            self.dir_dirty = true;
            self.deferred.dir_changes += 1;
            segment::delete_files(self.disk.as_ref(), &self.dir, seg.base_offset)?;
        }
        let fresh = Segment::create(self.disk.as_ref(), &self.dir, new_start, self.config.index_interval_bytes, now)?;
        let removed = std::mem::replace(&mut self.segments, vec![fresh]);
        self.epochs.clear();
        if self.deferred.on {
            return self.owe_cut(removed, false, None);
        }
        drop(removed);
        self.sync_dir_if_dirty()?;
        self.settle_after_truncation()
    }

    /// After the log end moved down: everything left is made durable and the checkpoints
    /// rewritten at the new end. A recovery point left above it would vouch for offsets that
    /// new, unsynced appends later reuse, and a torn one would then read as synced data gone
    /// bad; a clean point left above it would call the records refilled there clean.
    fn settle_after_truncation(&mut self) -> Result<(), LogError> {
        self.recovery_point = self.recovery_point.min(self.log_end_offset());
        self.cut_made();
        self.flush_inner()?;
        self.checkpoint()?;
        self.lower_clean_point(self.log_end_offset())
    }

    /// The leader epoch of the newest batch that carries one (the epoch cache's last entry).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }

    /// Kafka's OffsetForLeaderEpoch answer `(epoch, end offset)` for `requested`;
    /// `current_epoch` is this replica's epoch if it leads. See [`EpochCache::end_offset_for`].
    pub fn end_offset_for_epoch(&self, requested: i32, current_epoch: Option<i32>) -> (i32, i64) {
        self.epochs.end_offset_for(requested, current_epoch, self.log_end_offset())
    }

    /// The leader-epoch cache, derived from the batch headers.
    pub fn epochs(&self) -> &EpochCache {
        &self.epochs
    }
}
