//! What a cleaned group owes before its swap when its pass removed transaction markers
//! (`clean::clean_marker`): the producer snapshots at or below the last removed marker go,
//! durably (a replay from one would hold a transaction open that no marker now ends; those
//! above describe it ended), and, if abort markers go, the group's `.txnindex` without them is
//! written beside the cleaned segment as `B.txnindex.cleaned` and synced, to replace the old
//! one in the swap (a reader told of an abort whose marker is gone would skip its producer's
//! later batches). Both land before the swap's renames, in that order (`cleaner`, step 1).
//!
//! Who does the IO: a log whose owner takes no jobs, inline before the swap
//! ([`Log::before_removing_markers`]); one whose owner takes jobs ([`Log::defer_syncs`]), the
//! swap's job, first ([`Markers`], `log::swap`): its decision ([`Log::markers_owed`]) lets go
//! of the snapshots in memory and computes the index's bytes, and touches no file. What this
//! must never do: touch a segment, or let a swap's renames run before its snapshots are gone
//! durably and its index is synced.

use super::super::{cleaner, io_err, Log, LogError};
use crate::storage::Disk;
use std::path::{Path, PathBuf};

/// The first part of the swap's job of a group whose pass removed transaction markers
/// (deferral on): decided under the log, done by the job before its renames.
#[derive(Debug, Default)]
pub(in crate::log) struct Markers {
    /// The snapshots memory let go of, to remove, the directory synced after.
    snapshots: Vec<PathBuf>,
    /// The group's `.txnindex` without the removed aborts, when abort markers go.
    txn_index: Option<Vec<u8>>,
}

impl Markers {
    /// Does it (blocking: unlinks, a directory sync, a write and a sync). On failure the
    /// caller removes `B.txnindex.cleaned`, which a later swap would otherwise take.
    pub(in crate::log) fn apply(&self, disk: &dyn Disk, dir: &Path, base: i64) -> Result<(), LogError> {
        for path in &self.snapshots {
            match disk.remove(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err("remove", path)(e)),
                _ => {}
            }
        }
        if !self.snapshots.is_empty() {
            disk.sync_dir(dir).map_err(io_err("sync", dir))?;
        }
        match &self.txn_index {
            Some(bytes) => write_txn_index(disk, dir, base, bytes),
            None => Ok(()),
        }
    }
}

/// Writes and syncs `B.txnindex.cleaned`.
fn write_txn_index(disk: &dyn Disk, dir: &Path, base: i64, bytes: &[u8]) -> Result<(), LogError> {
    let path = cleaner::cleaned_txn_index_path(dir, base);
    let file = disk.open(&path, true).map_err(io_err("create", &path))?;
    file.truncate(0).map_err(io_err("truncate", &path))?;
    file.write_at(bytes, 0).map_err(io_err("write", &path))?;
    file.sync().map_err(io_err("sync", &path))
}

impl Log {
    /// Inline (deferral off), before the group of `[base, end)` whose pass removed the markers
    /// at `removed` (ascending) is swapped in: the module header's work, done here.
    pub(in crate::log) fn before_removing_markers(&mut self, base: i64, end: i64, removed: &[i64]) -> Result<(), LogError> {
        let last = removed[removed.len() - 1];
        if self.drop_producer_snapshots(|o| o <= last)? > 0 {
            self.disk.sync_dir(&self.dir).map_err(io_err("sync", &self.dir))?;
        }
        match self.txn_index_without(base, end, removed) {
            Some(bytes) => write_txn_index(self.disk.as_ref(), &self.dir, base, &bytes),
            None => Ok(()),
        }
    }

    /// With deferral on, the same decided for the swap's job: memory lets go of the snapshots
    /// now (as [`Log::drop_producer_snapshots`] would: nothing reads them again, and no new
    /// one can take their names, all below the log end), and the job removes them.
    pub(in crate::log) fn markers_owed(&mut self, base: i64, end: i64, removed: &[i64]) -> Markers {
        let last = removed[removed.len() - 1];
        let snapshots = self.forget_producer_snapshots(|o| o <= last);
        Markers { snapshots, txn_index: self.txn_index_without(base, end, removed) }
    }

    /// The `.txnindex` of the group of `[base, end)` without the aborts whose markers are at
    /// `removed`, when any of them is an abort (only the group's first segment holds any).
    pub(in crate::log) fn txn_index_without(&self, base: i64, end: i64, removed: &[i64]) -> Option<Vec<u8>> {
        let held: Vec<_> = self.aborted.iter().filter(|t| (base..end).contains(&t.last_offset)).collect();
        if held.iter().all(|t| removed.binary_search(&t.last_offset).is_err()) {
            return None;
        }
        Some(held.iter().filter(|t| removed.binary_search(&t.last_offset).is_err()).flat_map(|t| t.encode()).collect())
    }
}
