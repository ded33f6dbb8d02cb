//! Compaction's files (Kafka's log cleaner, for `cleanup.policy=compact`): how a cleaned group
//! of segments is built ([`Output`]), swapped in, and found again after a crash, and the clean
//! point's checkpoint. [`super::pass`] drives a pass in steps; [`super::clean`] decides what
//! survives.
//!
//! The swap, through `Disk`, for a group whose first segment is `B`:
//!
//! 1. `B.log.cleaned`: the cleaned batches, appended a step at a time (with its indexes in
//!    `B.index.cleaned` and `B.timeindex.cleaned`), then synced; if the pass removed
//!    transaction markers of the group, the producer snapshots at or below the last of them
//!    removed and the directory synced, then `B.txnindex.cleaned` written and synced (with
//!    deferral on, the swap's job does both before its renames: `log::swap`);
//! 2. renamed `B.log.swap`, directory synced — the commit point;
//! 3. `B.txnindex.cleaned`, if the pass wrote one (it removed abort markers), renamed
//!    `B.txnindex`; the group's old `.log`, `.index` and `.timeindex` files removed (and the
//!    `.txnindex` of all but `B`, which holds none: `B`'s is true of the cleaned segment),
//!    directory synced;
//! 4. `B.log.swap` renamed `B.log`, directory synced; then the indexes renamed `B.index` and
//!    `B.timeindex` (a crash before leaves `.cleaned` leftovers, and open rebuilds them).
//!
//! A crash before 2 leaves the old segments and a stray `.cleaned` (removed at open). From 2 on,
//! the `.swap` is whole and synced: opening completes the swap (removes what is left of the
//! segments it covers, renames it). Either way the log is the old segments or the cleaned one,
//! never a mix — cleaned batches cover exactly the old ones' offsets, so the `.swap`'s own
//! batches say which segments it replaces. The clean point is in
//! `cleaner-offset-checkpoint`; a stale one only makes the next pass redo work.

use super::clean::{self, Outcome};
use super::segment::{file_stem, Segment};
use super::{batch, BatchHeader, LogError};
use crate::storage::{read_exact_at, Disk};
use std::path::{Path, PathBuf};

/// Name of the file holding a partition's clean point.
pub const CLEANER_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// The dirty range mapped: [from, to).
    pub from: i64,
    pub to: i64,
    pub keys: usize,
    pub segments_rewritten: usize,
    pub bytes_read: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Transaction markers removed (nothing of their transaction was left and their delete
    /// horizon had passed).
    pub markers_removed: usize,
}

/// The cleaned group's bytes as they are built; runs of empty batches wait in `empty` until
/// something ends them.
#[derive(Default)]
pub(super) struct Output {
    bytes: Vec<u8>,
    empty: Option<(BatchHeader, BatchHeader)>,
    /// Some run took in more than one batch: the output differs from the stored bytes.
    pub(super) merged: bool,
}

impl Output {
    pub(super) fn push(&mut self, h: &BatchHeader, stored: &[u8], outcome: Outcome, keeps_producer: bool) {
        match outcome {
            Outcome::Empty if !keeps_producer => {
                match &mut self.empty {
                    Some((first, last)) if first.leader_epoch == h.leader_epoch => {
                        *last = *h;
                        self.merged = true;
                    }
                    _ => {
                        self.flush_empty();
                        // A run carries no producer: its fields (and the transactional, control
                        // and delete-horizon bits) are cleared so it never looks like one's.
                        let anonymous = BatchHeader { producer_id: -1, producer_epoch: -1, base_sequence: -1, attributes: h.attributes & !(0x10 | 0x20 | batch::delete_horizon_bit), ..*h };
                        self.empty = Some((anonymous, anonymous));
                    }
                }
            }
            Outcome::Empty => {
                self.flush_empty();
                self.bytes.extend_from_slice(&clean::empty(h, h));
            }
            Outcome::Whole => {
                self.flush_empty();
                self.bytes.extend_from_slice(stored);
            }
            Outcome::Rewritten(b) => {
                self.flush_empty();
                self.bytes.extend_from_slice(&b);
            }
        }
    }

    /// Ends the run of empty batches waiting, if any (at the end of a group).
    pub(super) fn flush_empty(&mut self) {
        if let Some((first, last)) = self.empty.take() {
            self.bytes.extend_from_slice(&clean::empty(&first, &last));
        }
    }

    /// Appends what is built so far to the group's segment — with `behind` staged, for the
    /// owner's sync and swap jobs to write (`log::overlay`) — and returns the bytes appended.
    pub(super) fn drain_into(&mut self, seg: &mut Segment, behind: bool) -> Result<u64, LogError> {
        let n = self.bytes.len() as u64;
        if n > 0 {
            seg.append_run(&self.bytes, behind)?;
            self.bytes.clear();
        }
        Ok(n)
    }
}

fn paths(dir: &Path, base: i64) -> (PathBuf, PathBuf, PathBuf) {
    let stem = file_stem(base);
    (dir.join(format!("{stem}.log.cleaned")), dir.join(format!("{stem}.log.swap")), dir.join(format!("{stem}.log")))
}

/// The `.log`, `.index` and `.timeindex` files of the group whose first segment is `base`,
/// while it is built.
pub(super) fn cleaned_paths(dir: &Path, base: i64) -> [PathBuf; 3] {
    let stem = file_stem(base);
    ["log", "index", "timeindex"].map(|ext| dir.join(format!("{stem}.{ext}.cleaned")))
}

/// The cleaned group's `.txnindex` while it is built, when a pass removed abort markers of the
/// group (only its first segment holds any): written and synced before the commit point, it
/// replaces `B.txnindex` as the swap finishes.
pub(super) fn cleaned_txn_index_path(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{}.txnindex.cleaned", file_stem(base)))
}

/// Removes the `.cleaned` files of the group at `base`, whichever exist: a group whose first
/// step never ran made none, and only one that removes abort markers writes a `.txnindex`.
/// Only the pass that made them, or a job holding its place, may call it: a later pass of the
/// same base makes files of the same names (`log::pass::job`).
/// The `.txnindex` first (the one a later swap could take for its own), and every file tried
/// whatever failed before: the first error is returned.
pub(super) fn remove_cleaned(disk: &dyn Disk, dir: &Path, base: i64) -> Result<(), LogError> {
    let mut first = Ok(());
    for path in [cleaned_txn_index_path(dir, base)].iter().chain(cleaned_paths(dir, base).iter()) {
        if let Err(e) = remove_if_there(disk, path) {
            first = first.and(Err(e));
        }
    }
    first
}

/// Removes `path`; one already gone is no error.
fn remove_if_there(disk: &dyn Disk, path: &Path) -> Result<(), LogError> {
    match disk.remove(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(super::io_err("remove", path)(e)),
        _ => Ok(()),
    }
}

/// Step 1 begins: an empty segment for the group starting at `base`, under the `.cleaned`
/// names; its indexes are built as it is written, so the swapped-in segment opens without a
/// scan.
pub(super) fn create_cleaned(disk: &dyn Disk, dir: &Path, base: i64, interval: u64, now: u64) -> Result<Segment, LogError> {
    Segment::create_at(disk, cleaned_paths(dir, base), base, interval, now)
}

/// Steps 2–4 of the module header, once the group is all in `cleaned` and step 1 is done
/// ([`seal`], and what removed markers owe: `log::pass::markers`): it replaces segments
/// `bases` (the first names it), and the new segment is opened with the indexes built.
/// `txn_index`: whether this swap's pass wrote `B.txnindex.cleaned`; if not, one found there
/// (left by an earlier pass whose removal failed) is removed before the commit point, whose
/// directory sync makes that durable, so step 3 never takes a stale index for this group's.
pub(super) fn swap_in(disk: &dyn Disk, dir: &Path, cleaned: Segment, bases: &[i64], interval: u64, now: u64, txn_index: bool) -> Result<Segment, LogError> {
    let base = bases[0];
    let (cleaned_log, swap, _) = paths(dir, base);
    use super::io_err as io;
    drop(cleaned);
    if !txn_index {
        remove_if_there(disk, &cleaned_txn_index_path(dir, base))?;
    }
    disk.rename(&cleaned_log, &swap).map_err(io("rename", &cleaned_log))?;
    disk.sync_dir(dir).map_err(io("sync", dir))?;
    finish_swap(disk, dir, base, bases)?;
    // The indexes built with the group take the segment's names after its `.log` has: a
    // crash before leaves a segment without them (rebuilt at open) and `.cleaned` leftovers.
    let [_, index, timeindex] = cleaned_paths(dir, base);
    let [_, index_to, timeindex_to] = super::segment_files::paths(dir, base);
    disk.rename(&index, &index_to).map_err(io("rename", &index))?;
    disk.rename(&timeindex, &timeindex_to).map_err(io("rename", &timeindex))?;
    disk.sync_dir(dir).map_err(io("sync", dir))?;
    let mut rebuilt = Vec::new();
    Segment::open_trusted(disk, dir, base, interval, now, &mut rebuilt)
}

/// Step 1 ends: the cleaned segment and its indexes synced.
pub(super) fn seal(cleaned: &mut Segment) -> Result<(), LogError> {
    cleaned.sync()?;
    cleaned.sync_indexes()
}

/// Steps 3–4: removes the replaced segments' files and renames the `.swap` into place. The
/// group's first segment keeps its `.txnindex` (or takes the cleaned one): only a group's first
/// segment may hold abort markers (`pass.rs`, `group_end`), and the cleaned segment keeps
/// those it did not remove at the same offsets under the same base.
fn finish_swap(disk: &dyn Disk, dir: &Path, base: i64, bases: &[i64]) -> Result<(), LogError> {
    let (_, swap, log) = paths(dir, base);
    // The group's own index, if the pass removed abort markers: renamed over `B.txnindex`
    // before anything else, so a crash from here on finds it in place or still to rename.
    let txn_index = cleaned_txn_index_path(dir, base);
    if disk.exists(&txn_index) {
        let to = super::aborted::path(dir, base);
        disk.rename(&txn_index, &to).map_err(super::io_err("rename", &txn_index))?;
    }
    for b in bases {
        super::segment_files::delete_files_but(disk, dir, *b, *b == base)?;
    }
    disk.sync_dir(dir).map_err(super::io_err("sync", dir))?;
    disk.rename(&swap, &log).map_err(super::io_err("rename", &swap))?;
    disk.sync_dir(dir).map_err(super::io_err("sync", dir))
}

/// At open: completes every swap a crash interrupted (before segments are listed). Returns the
/// `.swap` files it finished.
pub(super) fn complete_swaps(disk: &dyn Disk, dir: &Path) -> Result<Vec<PathBuf>, LogError> {
    let names = disk.list(dir).map_err(|source| LogError::Io { op: "list", path: dir.to_path_buf(), source })?;
    let mut done = Vec::new();
    for name in names.iter().filter(|n| n.ends_with(".log.swap")) {
        let Some(base) = name.strip_suffix(".log.swap").and_then(|s| s.parse::<i64>().ok()) else { continue };
        let path = dir.join(name);
        let end = swap_end(disk, &path)?;
        let replaced: Vec<i64> = names.iter().filter_map(|n| n.strip_suffix(".log")).filter_map(|s| s.parse::<i64>().ok()).filter(|b| (base..end.max(base.saturating_add(1))).contains(b)).collect();
        finish_swap(disk, dir, base, &replaced)?;
        done.push(path);
    }
    Ok(done)
}

/// The offset after the last batch of a `.swap` file (synced before it was named so: whole).
fn swap_end(disk: &dyn Disk, path: &Path) -> Result<i64, LogError> {
    let f = disk.open(path, false).map_err(super::io_err("open", path))?;
    let len = f.len().map_err(super::io_err("stat", path))?;
    let (mut pos, mut end) = (0u64, -1i64);
    let mut header = [0u8; crate::constants::batch_header_bytes];
    while pos < len {
        read_exact_at(f.as_ref(), &mut header, pos).map_err(super::io_err("read", path))?;
        let h = batch::read_header(&header).map_err(|e| LogError::Corrupt { file: path.to_path_buf(), position: pos, reason: e.to_string() })?;
        if h.size < crate::constants::batch_header_bytes {
            return Err(LogError::Corrupt { file: path.to_path_buf(), position: pos, reason: "batch length is not plausible".into() });
        }
        end = h.next_offset();
        pos += h.size as u64;
    }
    Ok(end)
}

/// The clean point from `cleaner-offset-checkpoint`; absent means 0 (everything is dirty).
pub(super) fn read_checkpoint(disk: &dyn Disk, dir: &Path) -> Result<i64, LogError> {
    let path = dir.join(CLEANER_CHECKPOINT_FILE);
    // Replaced atomically, so anything unreadable is corruption; a lost clean point only costs
    // a pass, so it is forgotten rather than failing the log — whether the bytes are too many,
    // not text, or not a number (fuzzing found the first two failing the whole log's open).
    let text = match super::dir::read_small(disk, &path, 32) {
        Ok(Some(text)) => text,
        Ok(None) | Err(LogError::Corrupt { .. }) => return Ok(0),
        Err(e) => return Err(e),
    };
    Ok(text.trim().parse::<i64>().ok().filter(|&v| v >= 0).unwrap_or(0))
}

impl super::Log {
    /// The dirty range's bytes in closed segments, and all closed bytes up to its end: what
    /// `min.cleanable.dirty.ratio` compares (and the metrics' cleaner backlog).
    pub fn dirty_bytes(&self, now: u64, upper: i64) -> (u64, u64) {
        let (start, end) = (self.cleaned_to(), self.dirty_end(now, upper));
        let closed = &self.segments[..self.segments.len().saturating_sub(1)];
        let total: u64 = closed.iter().filter(|s| s.next_offset() <= end).map(|s| s.size()).sum();
        let dirty: u64 = closed.iter().filter(|s| s.base_offset >= start && s.next_offset() <= end).map(|s| s.size()).sum();
        (dirty, total)
    }
}
