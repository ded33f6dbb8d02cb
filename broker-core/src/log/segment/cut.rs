//! Cutting a segment's tail (a follower's truncation, `log::replica`) in two halves: the
//! segment in memory at once — its size, next offset, staged bytes, index entries and the
//! state the next index entry depends on — and its files as a [`FileCut`]: the `.log` and both
//! indexes cut to their new lengths and the `.log` synced. A log that syncs inline runs the
//! file half at once; a broker's log hands it to its owner's job (`log::cut`), off the node's
//! lock. The memory half never writes or syncs; it reads at most the batches between the last
//! index entry and the cut (about `index.interval.bytes`, as a fetch near the log end does).

use super::super::region::SegmentLog;
use super::super::{io_err, LogError};
use super::Segment;
use crate::storage::DiskFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file half of a cut segment: what a truncation's job does to its files. Holds its own
/// handles, so running it needs no access to the log.
pub(crate) struct FileCut {
    log: Arc<SegmentLog>,
    log_path: Arc<Path>,
    len: u64,
    /// Each index whose file holds entries past the cut: its file, path and new length.
    indexes: Vec<(Arc<dyn DiskFile>, PathBuf, u64)>,
}

impl FileCut {
    /// Cuts the `.log` (once no write-out is under way) and the indexes, then makes the `.log`
    /// durable, writing what is staged below the cut first (blocking). The removed bytes lie
    /// above every offset the log keeps, so no offset-driven flush would ever make the cut
    /// durable (as with a recovery cut); the indexes are synced with the checkpoint after it.
    pub(crate) fn run(&self) -> Result<(), LogError> {
        self.log.cut_file(self.len).map_err(io_err("truncate", &self.log_path))?;
        for (file, path, len) in &self.indexes {
            file.truncate(*len).map_err(io_err("truncate", path))?;
        }
        self.log.sync().map_err(io_err("fdatasync", &self.log_path))
    }
}

impl Segment {
    /// Removes every batch from the one holding `offset` on (the whole batch when `offset` falls
    /// inside it) and returns the new next offset. The `.log` cut is synced before this returns;
    /// index entries beyond the cut go, and the index files are synced by the next checkpoint,
    /// like any index change.
    pub fn truncate_to(&mut self, offset: i64, now: u64) -> Result<i64, LogError> {
        if let Some(files) = self.cut_in_memory(offset, now)? {
            files.run()?;
        }
        Ok(self.next_offset)
    }

    /// The memory half of [`Segment::truncate_to`]: the segment ends before the batch holding
    /// `offset` from now on (reads, fetch regions and the next append see that at once), and
    /// what its files need comes back (None: nothing to cut). Until the [`FileCut`] ran, the
    /// files still hold the removed bytes, which nothing reads: every read is bounded by the
    /// segment's size, and regions bounded before were told they are cut.
    pub(crate) fn cut_in_memory(&mut self, offset: i64, now: u64) -> Result<Option<FileCut>, LogError> {
        let Some((position, first_removed)) = self.position_of(offset)? else { return Ok(None) };
        let end = first_removed.base_offset;
        self.log.cut_staged(position);
        self.size = position;
        self.next_offset = end;
        let rel_end = end - self.base_offset;
        let mut indexes = Vec::new();
        if let Some(len) = self.idx.index.cut_entries(|e| (e.position as u64) < position) {
            indexes.push((self.idx.index.handle(), self.log_path.with_extension("index"), len));
        }
        if let Some(len) = self.idx.time_index.cut_entries(|t| (t.relative_offset as i64) < rel_end) {
            indexes.push((self.idx.time_index.handle(), self.log_path.with_extension("timeindex"), len));
        }
        self.idx.dirty = true;
        if position == 0 {
            // Empty again: `segment.ms` counts from now, as for a new segment (Kafka's rule).
            self.first_batch_timestamp = None;
            self.created_ms = now;
        }
        self.recompute_index_state()?;
        Ok(Some(FileCut { log: self.log.clone(), log_path: self.log_path.clone(), len: position, indexes }))
    }
}
