//! Retention: whole segments deleted by age (`retention.ms`) and size (`retention.bytes`),
//! oldest first and never past the caller's bound (the high watermark), and the prefix the
//! metadata log drops once a snapshot covers it. The names go at once; with deferral on the
//! close that frees a deleted file's blocks, the directory's sync and the recovery point's move
//! past the deletions are the owner's (`deferred`), so no deletion syncs inside a decision.
//! Never deletes the active segment, nor anything while a swap or a truncation is in flight.

use super::{segment, Log, LogError};

impl Log {
    /// Whether retention could delete anything here: the policy deletes, there is a segment
    /// besides the active one, and no cleaning swap (`swap`) or truncation's job (`cut`) is in
    /// flight.
    fn retention_candidate(&self) -> bool {
        self.config.cleanup.delete && self.segments.len() >= 2 && self.swap.is_none() && !self.cutting()
    }

    /// The earliest `now` at which [`Log::apply_retention`] with this `upper` deletes a
    /// segment, if nothing else changes (0: already): None when it never would (one segment,
    /// compacting policy, the oldest segment not wholly below `upper`, no limit reached and no
    /// `retention.ms` or timestamp to expire by). Only an append, a higher `upper` or a new
    /// config brings it nearer; deletions, truncations and flushes only put it off.
    pub fn retention_at(&self, upper: i64) -> Option<u64> {
        if !self.retention_candidate() || self.segments[1].base_offset > upper {
            return None;
        }
        let oldest = &self.segments[0];
        if self.config.retention_bytes >= 0 && self.size_bytes() - oldest.size() >= self.config.retention_bytes as u64 {
            return Some(0);
        }
        // Expired once `max_timestamp < now - retention_ms`, that is from max + ms + 1 on.
        if self.config.retention_ms >= 0 && oldest.max_timestamp() >= 0 {
            return Some(oldest.max_timestamp().saturating_add(self.config.retention_ms).saturating_add(1).max(0) as u64);
        }
        None
    }

    /// Deletes whole non-active segments past `retention.ms` (by their largest timestamp) or
    /// beyond `retention.bytes` (oldest first), but only segments wholly below `upper` (pass
    /// the high watermark: Kafka never deletes what consumers may not yet have been able to
    /// read). Returns how many were deleted.
    pub fn apply_retention(&mut self, now: u64, upper: i64) -> Result<usize, LogError> {
        self.check_failed()?;
        if !self.retention_candidate() {
            // cleanup.policy=compact: old data goes by key, never by age or size; and the
            // active segment never goes (this runs for every partition on every tick)
            return Ok(0);
        }
        let mut deleted = 0;
        let mut total: u64 = self.segments.iter().map(|s| s.size()).sum();
        while self.segments.len() > 1 && self.segments[1].base_offset <= upper {
            let oldest = &self.segments[0];
            let expired = self.config.retention_ms >= 0 && oldest.max_timestamp() >= 0 && oldest.max_timestamp() < now as i64 - self.config.retention_ms;
            let too_big = self.config.retention_bytes >= 0 && total - oldest.size() >= self.config.retention_bytes as u64;
            if !(expired || too_big) {
                break;
            }
            total -= self.delete_oldest_segment()?;
            deleted += 1;
        }
        self.deleted_prefix(deleted)
    }

    /// Deletes the oldest segment (never called with the active one alone); returns its size.
    /// The directory sync is owed until [`Log::deleted_prefix`].
    fn delete_oldest_segment(&mut self) -> Result<u64, LogError> {
        self.abort_cleaning();
        let seg = self.segments.remove(0);
        let size = seg.size();
        if self.deferred.on {
            // The names go now; the close that frees the blocks is the owner's, off its lock.
            let base = seg.base_offset;
            self.released.push(seg.into_log());
            segment::delete_files(self.disk.as_ref(), &self.dir, base)?;
        } else {
            seg.delete(self.disk.as_ref(), &self.dir)?;
        }
        self.forget_aborted_below(self.segments[0].base_offset);
        self.dir_changed();
        Ok(size)
    }

    /// After `deleted` oldest segments went: the epoch cache starts at the new log start, and
    /// the recovery point moves up to it, but only once the deletions are durable; otherwise
    /// a power loss could bring back an old segment that was never synced, with the offsets
    /// after it lost, below a recovery point that vouched for them. With deferral on, both are
    /// left to the owner's next job or checkpoint (Kafka never syncs for a deletion): a name
    /// that comes back is recovered like any segment above the recovery point.
    fn deleted_prefix(&mut self, deleted: usize) -> Result<usize, LogError> {
        if deleted == 0 {
            return Ok(0);
        }
        self.epochs.truncate_from_start(self.log_start_offset());
        if !self.deferred.on {
            self.sync_dir_if_dirty()?;
            self.recovery_point = self.recovery_point.max(self.log_start_offset());
        }
        Ok(deleted)
    }

    /// Deletes, oldest first, every segment whose records all lie below `offset` (the next
    /// segment starts at or below it), never the active one: the metadata log's prefix once a
    /// durable snapshot covers it. Returns how many were deleted; durable on return. Any error
    /// takes the log offline, as for [`Log::truncate_to`].
    pub fn delete_segments_below(&mut self, offset: i64) -> Result<usize, LogError> {
        self.check_failed()?;
        let result = self.delete_prefix(offset);
        self.offline_on_error(result, "prefix deletion")
    }

    fn delete_prefix(&mut self, offset: i64) -> Result<usize, LogError> {
        let mut deleted = 0;
        while self.segments.len() > 1 && self.segments[1].base_offset <= offset {
            self.delete_oldest_segment()?;
            deleted += 1;
        }
        self.deleted_prefix(deleted)
    }
}
