//! The producer-state snapshots kept beside a log's segments (`<offset>.snapshot`, the format
//! in `producer_snapshot`): the log writes, lists, reads and removes them; what they hold is
//! the broker's (`broker::producer`). A snapshot named N describes the batches below N.
//!
//! Durability, in the log's terms (docs/storage.md, "Producer-state snapshots"):
//! * written unsynced at the log end before a checkpoint is staged, so the checkpoint's
//!   file-system sync makes it durable with the data it describes (a torn or missing one after
//!   a crash fails its CRC or is absent, and an older one or a full replay serves);
//! * removed, durably, before anything could give its offsets other batches: at open those above
//!   the recovered end, at a truncation those above the cut (inside the truncation's own
//!   directory sync), at a full truncation all of them, and before a cleaned group whose pass
//!   removed transaction markers is swapped in those at or below the last of them
//!   (`log::pass::markers`: with deferral on, memory lets go at once and the swap's job
//!   removes them first);
//! * only one at or above the log start and at or below the log end is used, and only the
//!   newest `producer_snapshots_kept` are kept.

use super::producer_snapshot::{self, SnapshotEntry};
use super::{io_err, Log, LogError};
use crate::constants::{producer_snapshot_bytes_max, producer_snapshots_kept};
use crate::storage::{read_exact_at, Disk};
use std::path::Path;

/// The newest of `offsets` (oldest first) whose snapshot in `dir` reads back whole; one that
/// does not (torn by a crash, damaged) is skipped for the next older.
pub(super) fn newest_readable(disk: &dyn Disk, dir: &Path, offsets: &[i64]) -> Option<(i64, Vec<SnapshotEntry>)> {
    offsets.iter().rev().find_map(|&o| Some((o, read_snapshot(disk, dir, o).ok()?)))
}

fn read_snapshot(disk: &dyn Disk, dir: &Path, offset: i64) -> Result<Vec<SnapshotEntry>, String> {
    let path = dir.join(producer_snapshot::file_name(offset));
    let file = disk.open(&path, false).map_err(|e| e.to_string())?;
    let len = file.len().map_err(|e| e.to_string())?;
    if len > producer_snapshot_bytes_max {
        return Err(format!("{len} bytes, more than a snapshot holds"));
    }
    let mut bytes = vec![0u8; len as usize];
    read_exact_at(file.as_ref(), &mut bytes, 0).map_err(|e| e.to_string())?;
    producer_snapshot::decode(&bytes).map_err(|e| e.to_string())
}

impl Log {
    /// The offsets of the snapshots on disk, oldest first.
    pub fn producer_snapshot_offsets(&self) -> &[i64] {
        &self.snapshots
    }

    /// Writes `entries` as the snapshot at the log end (not synced: see the module header) and
    /// removes all but the newest [`producer_snapshots_kept`]. A snapshot already there is
    /// left as it is, and none is written while a truncation is in flight (`log::cut`): the
    /// owner's producer state waits for its replay, and nothing may touch the files meanwhile.
    pub fn write_producer_snapshot(&mut self, entries: &[SnapshotEntry]) -> Result<(), LogError> {
        self.check_failed()?;
        let end = self.log_end_offset();
        if self.snapshots.last() == Some(&end) || self.cutting() {
            return Ok(());
        }
        let path = self.dir.join(producer_snapshot::file_name(end));
        let bytes = producer_snapshot::encode(entries);
        let file = self.disk.open(&path, true).map_err(io_err("create", &path))?;
        file.truncate(0).map_err(io_err("truncate", &path))?;
        file.write_at(&bytes, 0).map_err(io_err("write", &path))?;
        self.dir_changed();
        self.snapshots.push(end);
        let keep_from = self.snapshots.len().saturating_sub(producer_snapshots_kept);
        let old: Vec<i64> = self.snapshots[..keep_from].to_vec();
        self.drop_producer_snapshots(|o| old.contains(&o)).map(drop)
    }

    /// The newest usable snapshot: at or above the log start, at or below the log end, whole.
    /// One that does not read back (torn by a crash, damaged) is skipped for the next older.
    pub fn newest_producer_snapshot(&self) -> Option<(i64, Vec<SnapshotEntry>)> {
        self.newest_producer_snapshot_to(i64::MAX)
    }

    /// [`Log::newest_producer_snapshot`] at or below `at_most` too.
    pub fn newest_producer_snapshot_to(&self, at_most: i64) -> Option<(i64, Vec<SnapshotEntry>)> {
        newest_readable(self.disk.as_ref(), &self.dir, &self.usable_snapshots(at_most))
    }

    /// The snapshots a replay may start from: at or above the log start, at or below the log
    /// end and `at_most`, oldest first.
    pub(super) fn usable_snapshots(&self, at_most: i64) -> Vec<i64> {
        let (start, end) = (self.log_start_offset(), self.log_end_offset().min(at_most));
        self.snapshots.iter().copied().filter(|&o| o >= start && o <= end).collect()
    }

    /// Removes the snapshots `doomed` names, and says how many. Durable at the caller's next
    /// directory sync.
    pub(super) fn drop_producer_snapshots(&mut self, doomed: impl Fn(i64) -> bool) -> Result<usize, LogError> {
        let gone: Vec<i64> = self.snapshots.iter().copied().filter(|&o| doomed(o)).collect();
        for &o in &gone {
            let path = self.dir.join(producer_snapshot::file_name(o));
            match self.disk.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", &path)(e)),
            }
            self.snapshots.retain(|&x| x != o);
            self.dir_changed();
        }
        Ok(gone.len())
    }

    /// Lets go of the snapshots `doomed` names in memory, and returns their paths for a job
    /// to remove and make durable (a cleaned group's swap, `log::pass::markers`).
    pub(super) fn forget_producer_snapshots(&mut self, doomed: impl Fn(i64) -> bool) -> Vec<std::path::PathBuf> {
        let (gone, kept): (Vec<i64>, Vec<i64>) = self.snapshots.iter().partition(|&&o| doomed(o));
        self.snapshots = kept;
        gone.into_iter().map(|o| self.dir.join(producer_snapshot::file_name(o))).collect()
    }

    /// The recovery point the checkpoint file holds (as read at open, or last written): below
    /// it every file of the log was made durable by the checkpoint's sync.
    pub fn checkpointed_point(&self) -> i64 {
        self.checkpointed
    }

    /// Calls `f` with the header of every batch at or above `from`, oldest first (producer state
    /// replayed on top of a snapshot at `from`).
    pub fn for_each_header_from(&self, from: i64, mut f: impl FnMut(&crate::log::BatchHeader)) -> Result<(), LogError> {
        let first = self.segments.partition_point(|s| s.next_offset() <= from);
        for seg in &self.segments[first..] {
            seg.for_each_header(&mut |h: &crate::log::BatchHeader| {
                if h.base_offset >= from {
                    f(h);
                }
            })?;
        }
        Ok(())
    }
}
