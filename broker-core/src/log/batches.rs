//! A log's batches as they stood when taken, readable without the log: what a producer-state
//! replay reads (`broker::partition`'s, at open inline and after a truncation in the owner's
//! job off the node's lock, `log::cut`). It holds each segment's shared `.log` handle and size,
//! and the producer-state snapshots a replay may start from; reading it never changes the log.
//!
//! What keeps it true while a job reads it: nothing appends to, cuts or deletes from a log
//! whose truncation is in flight (`log::cut`), so the sizes it holds stay the segments'; and a
//! handle keeps a segment's bytes readable even once its name is gone.

use super::producer_snapshot::SnapshotEntry;
use super::region::SegmentLog;
use super::index::OffsetEntry;
use super::segment::{walk_headers, Reader, Segment};
use super::{batch, io_err, BatchHeader, Log, LogError};
use crate::storage::{read_exact_at, Disk};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One segment, as a reader without the log needs it: a replay here, a cleaning step's view
/// (`log::pass::step`).
pub(super) struct Held {
    pub(super) base: i64,
    /// The offset after its last batch (the next segment's base, or the log end).
    pub(super) next: i64,
    pub(super) size: u64,
    pub(super) file: Arc<SegmentLog>,
    pub(super) path: Arc<Path>,
    /// Its offset index, shared with the segment.
    index: Arc<Vec<OffsetEntry>>,
}

impl Held {
    /// `seg` as it stands, whose batches end at `next`.
    pub(super) fn new(seg: &Segment, next: i64) -> Held {
        let (file, path) = seg.sync_handle();
        Held { base: seg.base_offset, next, size: seg.size(), file, path, index: seg.index_shared() }
    }

    /// Its lookups by offset, as the segment's own.
    pub(super) fn reader(&self) -> Reader<'_> {
        Reader::new(self.base, self.size, &self.file, &self.path, &self.index)
    }
}

/// See the module header.
pub struct Batches {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    segments: Vec<Held>,
    /// The snapshots a replay may start from (`Log::usable_snapshots`), oldest first.
    snapshots: Vec<i64>,
}

impl Log {
    /// The batches as they are now, with the snapshots a replay may start from: within the log
    /// and at or below [`Log::aborted_replay_bound`] (where the aborted-transaction index is
    /// known whole).
    pub fn batches(&self) -> Batches {
        let end = self.log_end_offset();
        let segments = self
            .segments
            .iter()
            .enumerate()
            .map(|(i, seg)| Held::new(seg, self.segments.get(i + 1).map_or(end, |n| n.base_offset)))
            .collect();
        let snapshots = self.usable_snapshots(self.aborted_replay_bound());
        Batches { disk: self.disk.clone(), dir: self.dir.clone(), segments, snapshots }
    }
}

impl Batches {
    pub fn log_start_offset(&self) -> i64 {
        self.segments.first().map_or(0, |s| s.base)
    }

    /// The newest usable snapshot that reads back whole, and its entries (blocking: reads).
    pub fn newest_producer_snapshot(&self) -> Option<(i64, Vec<SnapshotEntry>)> {
        super::snapshots::newest_readable(self.disk.as_ref(), &self.dir, &self.snapshots)
    }

    /// Calls `f` with the header of every batch at or above `from`, oldest first, and a way to
    /// read that batch whole (a marker's record says commit or abort). Blocking: reads.
    pub fn for_each_from(&self, from: i64, mut f: impl FnMut(&BatchHeader, &dyn Fn() -> Result<Vec<u8>, LogError>)) -> Result<(), LogError> {
        for seg in self.segments.iter().filter(|s| s.next > from) {
            walk_headers(seg.file.as_ref(), &seg.path, seg.size, 0, seg.base, u64::MAX, &mut |h, pos| {
                if h.base_offset >= from {
                    // Checked as every read checks a stored batch: bad bytes are never used.
                    let read = || {
                        let mut bytes = vec![0u8; h.size];
                        read_exact_at(seg.file.as_ref(), &mut bytes, pos).map_err(io_err("read", &seg.path))?;
                        let corrupt = |reason: String| LogError::Corrupt { file: seg.path.to_path_buf(), position: pos, reason };
                        if batch::read_header(&bytes).ok().as_ref() != Some(h) {
                            return Err(corrupt("batch changed between two reads".into()));
                        }
                        batch::check_stored(&bytes).map_err(|e| corrupt(e.to_string()))?;
                        Ok(bytes)
                    };
                    f(h, &read);
                }
            })?;
        }
        Ok(())
    }
}
