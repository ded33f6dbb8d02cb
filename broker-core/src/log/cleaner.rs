//! Compaction's IO (Kafka's log cleaner, for `cleanup.policy=compact`): one pass maps the dirty
//! range — from the clean point to the first segment that is active, above the high watermark,
//! or younger than `min.compaction.lag.ms` — then rewrites groups of closed segments from the
//! log start through it, keeping what [`super::clean`] decides, and swaps each group in.
//!
//! The swap, through `Disk`, for a group whose first segment is `B`:
//!
//! 1. `B.log.cleaned`: the cleaned batches, written and synced;
//! 2. renamed `B.log.swap`, directory synced — the commit point;
//! 3. the group's old `.log`, `.index` and `.timeindex` files removed, directory synced;
//! 4. `B.log.swap` renamed `B.log`, directory synced; its indexes are rebuilt as it opens.
//!
//! A crash before 2 leaves the old segments and a stray `.cleaned` (removed at open). From 2 on,
//! the `.swap` is whole and synced: opening completes the swap (removes what is left of the
//! segments it covers, renames it). Either way the log is the old segments or the cleaned one,
//! never a mix — cleaned batches cover exactly the old ones' offsets, so the `.swap`'s own
//! batches say which segments it replaces. The clean point is in
//! `cleaner-offset-checkpoint`; a stale one only makes the next pass redo work.

use super::clean::{self, Keep, KeyMap, Outcome, Tombstones};
use super::segment::{file_stem, Segment};
use super::{batch, BatchHeader, Log, LogError};
use crate::constants::{cleaner_read_bytes, segment_offsets_max};
use crate::storage::{read_exact_at, write_atomically, Disk};
use bytes::Bytes;
use std::collections::BTreeMap;
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
}

/// Ends a batch walk early without an error.
enum Walk {
    Stop,
    Log(LogError),
}

impl From<LogError> for Walk {
    fn from(e: LogError) -> Walk {
        Walk::Log(e)
    }
}

fn walk_result(r: Result<(), Walk>) -> Result<(), LogError> {
    match r {
        Ok(()) | Err(Walk::Stop) => Ok(()),
        Err(Walk::Log(e)) => Err(e),
    }
}

impl Log {
    /// The clean point: offsets below it have been through a cleaning pass.
    pub fn cleaned_to(&self) -> i64 {
        self.cleaned_to.max(self.log_start_offset())
    }

    /// Where this pass's dirty range ends: before the first segment that is active, reaches
    /// `upper`, or holds records younger than `min.compaction.lag.ms`.
    fn dirty_end(&self, now: u64, upper: i64) -> i64 {
        let horizon = now as i64 - self.config.min_compaction_lag_ms.min(i64::MAX as u64) as i64;
        let mut end = self.log_start_offset();
        for seg in &self.segments[..self.segments.len() - 1] {
            if seg.next_offset() > upper || seg.max_timestamp() > horizon {
                break;
            }
            end = seg.next_offset();
        }
        end
    }

    /// Whether a pass is due: compaction on, a dirty range, and either the dirty share of the
    /// closed bytes at `min.cleanable.dirty.ratio` or a dirty record past `max.compaction.lag.ms`.
    pub fn cleaning_due(&self, now: u64, upper: i64) -> bool {
        if !self.config.cleanup.compact || self.check_failed().is_err() {
            return false;
        }
        let (start, end) = (self.cleaned_to(), self.dirty_end(now, upper));
        if end <= start {
            return false;
        }
        let closed = &self.segments[..self.segments.len() - 1];
        let total: u64 = closed.iter().filter(|s| s.next_offset() <= end).map(|s| s.size()).sum();
        let dirty: u64 = closed.iter().filter(|s| s.base_offset >= start && s.next_offset() <= end).map(|s| s.size()).sum();
        let by_ratio = dirty as u128 * 1_000_000 >= self.config.min_cleanable_dirty_ratio_ppm as u128 * total.max(1) as u128;
        let oldest_dirty = closed.iter().find(|s| s.next_offset() > start).map_or(i64::MAX, |s| s.max_timestamp());
        let by_lag = (oldest_dirty as i128) < now as i128 - self.config.max_compaction_lag_ms as i128;
        by_ratio || by_lag
    }

    /// One cleaning pass below `upper` (pass the high watermark) with a key map of at most
    /// `map_bytes`. `None` when no pass was due. An error takes nothing away: a failed pass
    /// leaves the old segments (or a whole `.swap` that the next open completes).
    pub fn clean(&mut self, now: u64, upper: i64, map_bytes: usize) -> Result<Option<CleanStats>, LogError> {
        self.clean_keeping(now, upper, map_bytes, Keep::Latest)
    }

    /// [`Log::clean`], keeping `keep` of each key: only the simulator's planted cleaner bug
    /// passes anything but [`Keep::Latest`].
    #[doc(hidden)]
    pub fn clean_keeping(&mut self, now: u64, upper: i64, map_bytes: usize, keep: Keep) -> Result<Option<CleanStats>, LogError> {
        if !self.cleaning_due(now, upper) {
            return Ok(None);
        }
        let (start, end) = (self.cleaned_to(), self.dirty_end(now, upper));
        let mut map = KeyMap::keeping(map_bytes, keep);
        let mut stats = CleanStats { from: start, to: start, ..CleanStats::default() };
        let mut mapped = start;
        let walk = self.for_each_batch(start, cleaner_read_bytes, |h, bytes| {
            if h.base_offset >= end {
                return Err(Walk::Stop);
            }
            stats.bytes_read += bytes.len() as u64;
            match clean::map_batch(&mut map, &bytes) {
                Ok(true) => {}
                Ok(false) => return Err(Walk::Stop),
                // A batch the decoder cannot read (a codec it lacks) keeps all its records:
                // they are simply not compacted.
                Err(_) => {}
            }
            mapped = h.next_offset();
            Ok(())
        });
        walk_result(walk)?;
        if mapped <= start {
            return Ok(None);
        }
        stats.to = mapped;
        stats.keys = map.len();
        let tombstones = Tombstones { reached: start, horizon_ms: now as i64 - self.config.delete_retention_ms.min(i64::MAX as u64) as i64 };
        let last_of_producer = self.last_batch_of_each_producer()?;
        let mut i = 0;
        while i + 1 < self.segments.len() && self.segments[i].base_offset < mapped {
            let j = self.group_end(i, mapped);
            // A rewritten group is one segment now; an untouched one is still j - i.
            let cleaned = self.clean_group(i, j, &map, tombstones, &last_of_producer, now);
            // A swap that failed half-way leaves memory unsure of the disk: the log goes offline
            // and reopening completes or drops the swap (see the module header).
            let cleaned = cleaned.inspect_err(|e| self.failed = Some(format!("cleaning: {e}")))?;
            i = match cleaned {
                Some((before, after)) => {
                    stats.segments_rewritten += j - i;
                    stats.bytes_before += before;
                    stats.bytes_after += after;
                    i + 1
                }
                None => j,
            };
        }
        self.cleaned_to = mapped;
        write_atomically(self.disk.as_ref(), &self.dir.join(CLEANER_CHECKPOINT_FILE), mapped.to_string().as_bytes()).map_err(super::io_err("write", &self.dir.join(CLEANER_CHECKPOINT_FILE)))?;
        Ok(Some(stats))
    }

    /// The exclusive end index of the group starting at segment `i`: closed segments below
    /// `mapped` whose bytes fit `segment.bytes` together and whose offsets fit one index.
    fn group_end(&self, i: usize, mapped: i64) -> usize {
        let base = self.segments[i].base_offset;
        let mut size = 0u64;
        let mut j = i;
        while j + 1 < self.segments.len() && self.segments[j].base_offset < mapped {
            let s = &self.segments[j];
            let fits = size + s.size() <= self.config.segment_bytes && s.next_offset() - base <= segment_offsets_max;
            if j > i && !fits {
                break;
            }
            size += s.size();
            j += 1;
        }
        j
    }

    /// For each idempotent producer, the base offset of its last batch: that batch is never
    /// merged away, so producer state rebuilt from the headers stays what it was.
    fn last_batch_of_each_producer(&self) -> Result<BTreeMap<i64, i64>, LogError> {
        let mut last = BTreeMap::new();
        self.for_each_header(|h| {
            if h.producer_id >= 0 {
                last.insert(h.producer_id, h.base_offset);
            }
        })?;
        Ok(last)
    }

    /// Rewrites segments `i..j` as one and swaps it in; `None` if it is one segment whose every
    /// batch survives whole (nothing is written). A group of several segments is merged even
    /// when nothing in it goes, as Kafka's cleaner rewrites every group: otherwise segments
    /// that cleaning shrank and that never change again would stay apart forever, and a
    /// compacted log's file count would follow its history instead of its live keys. Returns
    /// the bytes before and after.
    fn clean_group(&mut self, i: usize, j: usize, map: &KeyMap, tombstones: Tombstones, last_of_producer: &BTreeMap<i64, i64>, now: u64) -> Result<Option<(u64, u64)>, LogError> {
        let (base, end) = (self.segments[i].base_offset, self.segments[j - 1].next_offset());
        let before: u64 = self.segments[i..j].iter().map(|s| s.size()).sum();
        let mut out = Output::default();
        let mut changed = false;
        let walk = self.for_each_batch(base, cleaner_read_bytes, |h, bytes| {
            if h.base_offset >= end {
                return Err(Walk::Stop);
            }
            let outcome = clean::clean_batch(&bytes, h, map, tombstones).unwrap_or(Outcome::Whole);
            // A batch an earlier pass emptied is no change by itself; merging it is (below).
            changed |= matches!(outcome, Outcome::Rewritten(_)) || (outcome == Outcome::Empty && h.records_count > 0);
            let keeps_producer = h.producer_id >= 0 && last_of_producer.get(&h.producer_id) == Some(&h.base_offset);
            out.push(h, bytes, outcome, keeps_producer);
            Ok(())
        });
        walk_result(walk)?;
        out.flush_empty();
        changed |= out.merged;
        if !changed && j - i == 1 {
            return Ok(None);
        }
        let after = out.bytes.len() as u64;
        let bases: Vec<i64> = self.segments[i..j].iter().map(|s| s.base_offset).collect();
        let seg = swap_in(self.disk.as_ref(), &self.dir, base, &bases, &out.bytes, self.config.index_interval_bytes, now)?;
        self.segments.splice(i..j, [seg]);
        Ok(Some((before, after)))
    }
}

/// The cleaned group's bytes as they are built; runs of empty batches wait in `empty` until
/// something ends them.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    empty: Option<(BatchHeader, BatchHeader)>,
    /// Some run took in more than one batch: the output differs from the stored bytes.
    merged: bool,
}

impl Output {
    fn push(&mut self, h: &BatchHeader, stored: Bytes, outcome: Outcome, keeps_producer: bool) {
        match outcome {
            Outcome::Empty if !keeps_producer => {
                match &mut self.empty {
                    Some((first, last)) if first.leader_epoch == h.leader_epoch => {
                        *last = *h;
                        self.merged = true;
                    }
                    _ => {
                        self.flush_empty();
                        // A run carries no producer: its fields are cleared so it never looks like one.
                        let anonymous = BatchHeader { producer_id: -1, producer_epoch: -1, base_sequence: -1, ..*h };
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
                self.bytes.extend_from_slice(&stored);
            }
            Outcome::Rewritten(b) => {
                self.flush_empty();
                self.bytes.extend_from_slice(&b);
            }
        }
    }

    fn flush_empty(&mut self) {
        if let Some((first, last)) = self.empty.take() {
            self.bytes.extend_from_slice(&clean::empty(&first, &last));
        }
    }
}

fn paths(dir: &Path, base: i64) -> (PathBuf, PathBuf, PathBuf) {
    let stem = file_stem(base);
    (dir.join(format!("{stem}.log.cleaned")), dir.join(format!("{stem}.log.swap")), dir.join(format!("{stem}.log")))
}

/// Steps 1–4 of the module header: the cleaned bytes replace segments `bases` (the first is
/// `base`), and the new segment is opened.
fn swap_in(disk: &dyn Disk, dir: &Path, base: i64, bases: &[i64], bytes: &[u8], interval: u64, now: u64) -> Result<Segment, LogError> {
    let (cleaned, swap, log) = paths(dir, base);
    use super::io_err as io;
    {
        let f = disk.open(&cleaned, true).map_err(io("create", &cleaned))?;
        f.truncate(0).map_err(io("truncate", &cleaned))?;
        f.write_at(bytes, 0).map_err(io("write", &cleaned))?;
        f.sync().map_err(io("sync", &cleaned))?;
    }
    disk.rename(&cleaned, &swap).map_err(io("rename", &cleaned))?;
    disk.sync_dir(dir).map_err(io("sync", dir))?;
    finish_swap(disk, dir, base, bases)?;
    debug_assert!(disk.exists(&log));
    let mut rebuilt = Vec::new();
    let mut seg = Segment::open_trusted(disk, dir, base, interval, now, &mut rebuilt)?;
    seg.sync_indexes()?;
    Ok(seg)
}

/// Steps 3–4: removes the replaced segments' files and renames the `.swap` into place.
fn finish_swap(disk: &dyn Disk, dir: &Path, base: i64, bases: &[i64]) -> Result<(), LogError> {
    let (_, swap, log) = paths(dir, base);
    for b in bases {
        super::segment_files::delete_files(disk, dir, *b)?;
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
        let replaced: Vec<i64> = names.iter().filter_map(|n| n.strip_suffix(".log")).filter_map(|s| s.parse::<i64>().ok()).filter(|b| (base..end.max(base + 1)).contains(b)).collect();
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
    let Some(text) = super::dir::read_small(disk, &path, 32)? else { return Ok(0) };
    // Replaced atomically, so anything unreadable is corruption; a lost clean point only costs
    // a pass, so it is forgotten rather than failing the log.
    Ok(text.trim().parse::<i64>().ok().filter(|&v| v >= 0).unwrap_or(0))
}
