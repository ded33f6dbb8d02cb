//! A cleaning pass in bounded steps, so the broker never stops for one: each step reads and
//! writes about `budget` bytes (at least one batch) and returns, and the caller paces the steps
//! (`log.cleaner.io.max.bytes.per.second`). The pass lives in the [`Log`] between steps:
//!
//! 1. **Map**: key offsets of the dirty range, from the clean point towards the first segment
//!    that is active, above `upper` or younger than `min.compaction.lag.ms` (fixed when the
//!    pass starts), until the key map is full. Aborted transactions' batches are left out:
//!    they supersede nothing, and the rewrite removes them (their markers stay).
//! 2. **Producers**: each idempotent producer's last batch below the mapped end (never merged
//!    away, so producer state rebuilt from headers stays what it was): the map walk notes them
//!    in the dirty range, and this phase reads the batch headers of the clean part below it
//!    (small once cleaned), so the dirty bytes are not read a third time.
//! 3. **Rewrite**: groups of closed segments from the log start through the mapped end, each
//!    streamed into its `.cleaned` file a step at a time (synced every `cleaner_sync_bytes`,
//!    so the swap's sync is short) and swapped in when whole
//!    ([`super::cleaner`] holds the swap and its crash rules).
//!
//! The rewrite reads what it needs: runs of batches that lose every record by the map's bits
//! are passed over from their first and last headers ([`Log::dead_run`]), a scattered dead
//! batch is read as its header alone when batches are large
//! (`header_read_batch_bytes_min`), and a read batch is judged by the bits before any
//! record walk ([`judge`]).
//!
//! Between steps the log takes appends and rolls (they only add segments after the pass's).
//! Anything that removes segments — retention, truncation, DeleteRecords — aborts the pass
//! first ([`Log::abort_cleaning`]): its `.cleaned` file goes and the next pass starts over.

use super::aborted::AbortedRanges;
use super::clean::{self, Keep, KeyMap, Outcome, Tombstones};
use super::cleaner::{self, CleanStats, Output};
use super::{BatchHeader, Log, LogError};
use crate::constants::{header_read_batch_bytes_min, cleaner_sync_bytes, segment_offsets_max};
use super::segment::Segment;
use crate::storage::write_atomically;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// A pass between steps.
pub(super) struct Pass {
    map: KeyMap,
    /// The dirty range this pass maps: [start, end).
    start: i64,
    end: i64,
    /// Each idempotent producer's last batch in the mapped range (its base offset).
    producers: BTreeMap<i64, i64>,
    /// The aborted transactions that began below the dirty end: their batches never enter the
    /// key map and are removed (their markers stay).
    aborted: AbortedRanges,
    stats: CleanStats,
    phase: Phase,
    /// Every read of the pass lands here, one buffer for the whole pass (a fresh one per read
    /// cost its allocation and page faults, about a tenth of a pass).
    buf: Vec<u8>,
    /// Batches the map walk read, and whether the rewrite reads only the header of a mapped
    /// batch that loses every record (when the mean batch is large enough that a small read
    /// costs less than copying it; see `header_read_batch_bytes_min`).
    mapped_batches: u64,
    header_reads: bool,
}

enum Phase {
    /// Mapping keys from `next`.
    Map { next: i64 },
    /// Finding each idempotent producer's last batch (the rewrite keeps it), reading headers
    /// from byte `pos` of the segment at `base`, where the batch at `expected` starts.
    Producers { base: i64, pos: u64, expected: i64, last: BTreeMap<i64, i64> },
    /// Rewriting groups below `stats.to`; `next` is the base offset of the next group.
    Rewrite { tombstones: Tombstones, last_of_producer: BTreeMap<i64, i64>, held: BTreeSet<i64>, next: i64, group: Option<Group> },
}

/// One group of segments being rewritten into its `.cleaned` file.
struct Group {
    /// Base offsets of the segments it replaces; the first names the files.
    bases: Vec<i64>,
    /// The offset after its last batch.
    end: i64,
    /// The next batch to read.
    next: i64,
    before: u64,
    /// The cleaned segment being written, under its `.cleaned` names.
    seg: Segment,
    /// Bytes written to `seg` since it was last synced.
    unsynced: u64,
    out: Output,
    changed: bool,
    /// Offsets of the transaction markers this group removes (`clean::clean_marker`).
    removed_markers: Vec<i64>,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No pass is in flight and none is due.
    Idle,
    /// A pass went on (`bytes` read and written), or only replaced files were freed (0).
    Working { bytes: u64 },
    /// A pass ended with this step: what it did (None: it found nothing to map).
    Done { bytes: u64, stats: Option<CleanStats> },
}

enum Progress {
    More(u64),
    Done(u64, Option<CleanStats>),
}

impl Log {
    /// One step of cleaning below `upper` (pass the high watermark): goes on with the pass in
    /// flight, or starts one if due, with a key map of at most `map_bytes`. A failure while a
    /// group is being swapped takes the log offline (memory would be unsure of the disk); any
    /// other failure only ends the pass.
    pub fn clean_step(&mut self, now: u64, upper: i64, map_bytes: usize, budget: usize, keep: Keep) -> Result<Step, LogError> {
        // Every step frees a slice of what earlier swaps replaced, pass or no pass; a pass
        // waits for its swap in flight (`swap`) and for a truncation's job (`cut`).
        let freeing = !self.retired.is_empty();
        self.retired.free_slice();
        if self.swapping() || self.cutting() {
            return Ok(Step::Working { bytes: 0 });
        }
        let mut pass = match self.pass.take() {
            Some(pass) => pass,
            None if self.cleaning_due(now, upper) => {
                let (start, end) = (self.cleaned_to(), self.dirty_end(now, upper));
                let aborted = self.aborted_ranges(end);
                Box::new(Pass { map: KeyMap::for_range(map_bytes, keep, start, end), start, end, producers: BTreeMap::new(), aborted, stats: CleanStats { from: start, to: start, ..CleanStats::default() }, phase: Phase::Map { next: start }, buf: Vec::new(), mapped_batches: 0, header_reads: false })
            }
            None if freeing => return Ok(Step::Working { bytes: 0 }),
            None => return Ok(Step::Idle),
        };
        match self.advance(&mut pass, now, budget.max(1) as u64) {
            Ok(Progress::More(bytes)) => {
                self.pass = Some(pass);
                Ok(Step::Working { bytes })
            }
            Ok(Progress::Done(bytes, stats)) => Ok(Step::Done { bytes, stats }),
            Err(e) => {
                self.pass = Some(pass);
                self.abort_cleaning();
                Err(e)
            }
        }
    }

    /// A whole pass at once ([`Log::clean_step`] until it ends): `None` when none was due or
    /// it mapped nothing.
    pub fn clean(&mut self, now: u64, upper: i64, map_bytes: usize) -> Result<Option<CleanStats>, LogError> {
        self.clean_keeping(now, upper, map_bytes, Keep::Latest)
    }

    /// [`Log::clean`], keeping `keep` of each key: only the simulator's planted cleaner bug
    /// passes anything but [`Keep::Latest`].
    #[doc(hidden)]
    pub fn clean_keeping(&mut self, now: u64, upper: i64, map_bytes: usize, keep: Keep) -> Result<Option<CleanStats>, LogError> {
        loop {
            match self.clean_step(now, upper, map_bytes, crate::constants::cleaner_read_bytes, keep)? {
                Step::Idle => return Ok(None),
                Step::Working { .. } => {}
                Step::Done { stats, .. } => return Ok(stats),
            }
        }
    }

    /// Whether a pass is in flight, or files it replaced wait to be freed (`retired`).
    pub fn cleaning(&self) -> bool {
        self.pass.is_some() || !self.retired.is_empty()
    }

    /// Whether [`Log::clean_step`] has work now: a pass in flight or due, or replaced files
    /// to free — none while a truncation's job is in flight (`cut`).
    pub fn cleaner_work_due(&self, now: u64, upper: i64) -> bool {
        !self.cutting() && (self.cleaning() || self.cleaning_due(now, upper))
    }

    /// The phase of the pass in flight — `"map"`, `"producers"` or `"rewrite"` (the module
    /// header's 1–3) — or None between passes: for benchmarks that split a pass's time.
    pub fn cleaning_phase(&self) -> Option<&'static str> {
        self.pass.as_ref().map(|p| match p.phase {
            Phase::Map { .. } => "map",
            Phase::Producers { .. } => "producers",
            Phase::Rewrite { .. } => "rewrite",
        })
    }

    /// Ends the pass in flight, if any, removing its `.cleaned` file (a leftover one is removed
    /// at the next open anyway). Called before anything removes segments. With deferral on the
    /// owner closes the removed file off its lock, as retention's (a last close frees blocks).
    pub(super) fn abort_cleaning(&mut self) {
        if let Some(Phase::Rewrite { group: Some(g), .. }) = self.pass.take().map(|p| p.phase) {
            let _ = self.remove_cleaned(g.bases[0]);
            self.released.extend(self.deferred.on.then(|| g.seg.into_log()));
        }
    }

    /// Removes the `.cleaned` files of the group at `base`.
    fn remove_cleaned(&self, base: i64) -> Result<(), LogError> {
        for path in cleaner::cleaned_paths(&self.dir, base) {
            self.disk.remove(&path).map_err(super::io_err("remove", &path))?;
        }
        // Written only by a group that removes abort markers.
        let txn_index = cleaner::cleaned_txn_index_path(&self.dir, base);
        match self.disk.remove(&txn_index) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(super::io_err("remove", &txn_index)(e)),
            _ => Ok(()),
        }
    }

    fn advance(&mut self, pass: &mut Pass, now: u64, budget: u64) -> Result<Progress, LogError> {
        let mut bytes = 0u64;
        while bytes < budget {
            let left = (budget - bytes) as usize;
            match &mut pass.phase {
                Phase::Map { next } => {
                    let mut full = false;
                    let batches = if *next < pass.end { self.batches_into(*next, left, pass.end, 0..0, &mut pass.buf)? } else { Vec::new() };
                    for (h, at) in &batches {
                        let b = &pass.buf[at.clone()];
                        bytes += b.len() as u64;
                        pass.stats.bytes_read += b.len() as u64;
                        // A batch that does not decode keeps all its records: they are simply
                        // not compacted. (Append decoded every batch it took; only one written
                        // before the broker read lz4 and zstd, or damaged under its CRC, can.)
                        // An aborted transaction's records supersede nothing.
                        if !pass.aborted.contains(h) && clean::map_batch(&mut pass.map, b) == Ok(false) {
                            full = true;
                            break;
                        }
                        if h.producer_id >= 0 {
                            pass.producers.insert(h.producer_id, h.base_offset);
                        }
                        pass.mapped_batches += 1;
                        *next = h.next_offset();
                    }
                    if full || batches.is_empty() || *next >= pass.end {
                        pass.map.settle();
                        pass.stats.to = *next;
                        pass.stats.keys = pass.map.len();
                        pass.header_reads = pass.stats.bytes_read >= pass.mapped_batches.max(1) * header_read_batch_bytes_min;
                        if *next <= pass.start {
                            return Ok(Progress::Done(bytes, None));
                        }
                        let start = self.log_start_offset();
                        pass.phase = Phase::Producers { base: start, pos: 0, expected: start, last: BTreeMap::new() };
                    }
                }
                Phase::Producers { base, pos, expected, last } => {
                    // The clean part, [log start, pass start), read header by header (the
                    // mapped range's producers are known from the map walk). Segments only
                    // grow between steps (anything that removes one aborts the pass), so the
                    // one at `base` is there; were it not, the pass would end here, rewriting
                    // nothing, rather than rewrite without every producer.
                    let i = self.segments.partition_point(|s| s.base_offset < *base);
                    let scanned = *expected >= pass.start;
                    if !scanned {
                        let Some(seg) = self.segments.get(i).filter(|s| s.base_offset == *base) else {
                            return Ok(Progress::Done(bytes, None));
                        };
                        let (to, next) = seg.headers_from(*pos, *expected, left as u64, &mut |h| {
                            if h.producer_id >= 0 && h.base_offset < pass.start {
                                last.insert(h.producer_id, h.base_offset);
                            }
                        })?;
                        bytes += to - *pos;
                        (*pos, *expected) = (to, next);
                        if to < seg.size() {
                            continue;
                        }
                        if let Some(n) = self.segments.get(i + 1) {
                            (*base, *pos, *expected) = (n.base_offset, 0, n.base_offset);
                            continue;
                        }
                    }
                    // The mapped range's last batches are later than the clean part's. Batches
                    // past the mapped end are above every group: a producer's batch found last
                    // may have a later one there, and is only kept needlessly.
                    let mut last_of_producer = std::mem::take(last);
                    last_of_producer.append(&mut pass.producers);
                    let tombstones = Tombstones { reached: pass.start, horizon_ms: now as i64 - self.config.delete_retention_ms.min(i64::MAX as u64) as i64 };
                    pass.phase = Phase::Rewrite { tombstones, last_of_producer, held: BTreeSet::new(), next: self.log_start_offset(), group: None };
                }
                Phase::Rewrite { tombstones, last_of_producer, held, next, group } => {
                    let mapped = pass.stats.to;
                    let Some(g) = group else {
                        let i = self.segments.partition_point(|s| s.base_offset < *next);
                        if i + 1 >= self.segments.len() || self.segments[i].base_offset >= mapped {
                            self.set_clean_point(mapped)?;
                            return Ok(Progress::Done(bytes, Some(pass.stats.clone())));
                        }
                        let j = self.group_end(i, mapped);
                        let segs = &self.segments[i..j];
                        let (bases, end, before) = (segs.iter().map(|s| s.base_offset).collect::<Vec<_>>(), segs[segs.len() - 1].next_offset(), segs.iter().map(|s| s.size()).sum());
                        let seg = cleaner::create_cleaned(self.disk.as_ref(), &self.dir, bases[0], self.config.index_interval_bytes, now)?;
                        *group = Some(Group { next: bases[0], bases, end, before, seg, unsynced: 0, out: Output::default(), changed: false, removed_markers: Vec::new() });
                        continue;
                    };
                    // The mapped range was read and checked by the map walk moments ago: see
                    // `Log::read_into` for why its CRCs are not checked again, and `judge` for
                    // the batches that are.
                    let mapped_range = pass.start..mapped;
                    // A run of batches that lose everything is passed over unread: its first
                    // and last headers are all the merged empty batch needs.
                    if mapped_range.contains(&g.next) {
                        if let Some((first, last, span)) = self.dead_run(g.next, g.end.min(mapped), &pass.map, last_of_producer)? {
                            bytes += span;
                            g.changed = true;
                            g.out.push(&first, &[], Outcome::Empty, false);
                            g.out.push(&last, &[], Outcome::Empty, false);
                            g.next = last.next_offset();
                            continue;
                        }
                    }
                    let batches = if g.next >= g.end {
                        Vec::new()
                    } else if pass.header_reads && mapped_range.contains(&g.next) {
                        pass.buf.clear();
                        let map = &pass.map;
                        let mut header_only = |h: &BatchHeader| !h.is_control() && h.last_offset() < mapped && map.superseded_in(h.base_offset, h.last_offset()) == Some(h.records_count.max(0) as u32);
                        let i = self.segments.partition_point(|s| s.base_offset <= g.next).saturating_sub(1);
                        self.segments[i].read_sparse(g.next, left, g.end, mapped_range.clone(), &mut pass.buf, &mut header_only)?.unwrap_or_default()
                    } else {
                        self.batches_into(g.next, left, g.end, mapped_range.clone(), &mut pass.buf)?.into_iter().map(|(h, at)| (h, Some(at))).collect()
                    };
                    for (h, at) in &batches {
                        // Counted whole even when only its header was read: a step covers about
                        // `budget` bytes of log either way, and is paced by them.
                        bytes += h.size as u64;
                        let keeps_producer = h.producer_id >= 0 && last_of_producer.get(&h.producer_id) == Some(&h.base_offset);
                        let (b, outcome) = match at {
                            // Something of its transaction stays, or it carries its producer's
                            // state: it stays too (`clean::clean_marker`).
                            Some(at) if h.is_control() => {
                                let b = &pass.buf[at.clone()];
                                let kept = held.remove(&h.producer_id) || keeps_producer;
                                (b, clean::clean_marker(b, h, kept, now as i64, self.config.delete_retention_ms.min(i64::MAX as u64) as i64))
                            }
                            Some(_) if pass.aborted.contains(h) => (&[][..], Outcome::Empty),
                            Some(at) => (&pass.buf[at.clone()], judge(&pass.buf[at.clone()], h, &pass.map, *tombstones, &mapped_range)?),
                            None => (&[][..], Outcome::Empty),
                        };
                        // A batch an earlier pass emptied is no change by itself; merging it is.
                        g.changed |= matches!(outcome, Outcome::Rewritten(_)) || (outcome == Outcome::Empty && h.records_count > 0);
                        if h.is_control() && outcome == Outcome::Empty {
                            g.removed_markers.push(h.base_offset);
                        } else if h.is_transactional() && !h.is_control() && (outcome != Outcome::Empty || keeps_producer) {
                            // A batch of its producer's transaction that stays: so does its marker.
                            held.insert(h.producer_id);
                        }
                        g.out.push(h, b, outcome, keeps_producer);
                        g.next = h.next_offset();
                    }
                    let whole = batches.is_empty() || g.next >= g.end;
                    if whole {
                        g.out.flush_empty();
                    }
                    let written = g.out.drain_into(&mut g.seg, self.deferred.on)?;
                    (bytes, g.unsynced) = (bytes + written, g.unsynced + written);
                    // Synced as it grows, so the swap's own sync (inside one step) is short:
                    // by the owner off its lock when it takes jobs, else here.
                    if g.unsynced >= cleaner_sync_bytes as u64 {
                        match self.deferred.on {
                            true => self.deferred.cleaned = Some(self.cleaner_job(g.seg.sync_handle())),
                            false => g.seg.sync()?,
                        }
                        g.unsynced = 0;
                    }
                    if whole {
                        let g = group.take().expect("matched above");
                        *next = g.end;
                        self.finish_group(g, &mut pass.stats, now)?;
                        if self.swapping() {
                            return Ok(Progress::More(bytes)); // the next step waits for it
                        }
                    }
                }
            }
        }
        Ok(Progress::More(bytes))
    }

    /// Swaps a whole group in, or drops its `.cleaned` file when it is one segment whose every
    /// batch survived whole. A group of several segments is merged even when nothing in it
    /// goes, as Kafka's cleaner rewrites every group: otherwise segments that cleaning shrank
    /// and that never change again would stay apart forever, and a compacted log's file count
    /// would follow its history instead of its live keys.
    fn finish_group(&mut self, g: Group, stats: &mut CleanStats, now: u64) -> Result<(), LogError> {
        let base = g.bases[0];
        if !(g.changed || g.out.merged) && g.bases.len() == 1 {
            drop(g.seg);
            return self.remove_cleaned(base);
        }
        let i = self.segments.partition_point(|s| s.base_offset < base);
        let j = i + g.bases.len();
        // Segments change only after an abort; were these not the group's, nothing is swapped.
        if !self.segments.get(i..j).is_some_and(|s| s.iter().map(|s| s.base_offset).eq(g.bases.iter().copied())) {
            drop(g.seg);
            let _ = self.remove_cleaned(base);
            return Err(LogError::Failed(format!("cleaning {}: the segments of the group at {base} changed under the pass", self.dir.display())));
        }
        if !g.removed_markers.is_empty() {
            self.before_removing_markers(base, g.end, &g.removed_markers)?;
        }
        stats.segments_rewritten += g.bases.len();
        stats.bytes_before += g.before;
        stats.bytes_after += g.seg.size();
        stats.markers_removed += g.removed_markers.len();
        // From the rename on, a failure leaves memory unsure of the disk: the log goes offline
        // and reopening completes or drops the swap (see `cleaner`; off the owner's lock: `swap`).
        self.swap_group(g.seg, g.bases, g.end, g.removed_markers, now)
    }

    /// Before a group whose pass removed the markers at `removed` (ascending) is swapped in:
    /// the producer snapshots at or below the last of them go, durably (a replay from one
    /// would hold a transaction open that no marker now ends; those above describe it ended),
    /// and if abort markers go, the group's `.txnindex` without them is written beside the
    /// cleaned segment, synced, to replace the old one in the swap (a reader told of an abort
    /// whose marker is gone would skip its producer's later batches).
    fn before_removing_markers(&mut self, base: i64, end: i64, removed: &[i64]) -> Result<(), LogError> {
        let last = removed[removed.len() - 1];
        if self.drop_producer_snapshots(|o| o <= last)? > 0 {
            self.disk.sync_dir(&self.dir).map_err(super::io_err("sync", &self.dir))?;
        }
        let held: Vec<_> = self.aborted.iter().filter(|t| (base..end).contains(&t.last_offset)).collect();
        if held.iter().all(|t| removed.binary_search(&t.last_offset).is_err()) {
            return Ok(());
        }
        let bytes: Vec<u8> = held.iter().filter(|t| removed.binary_search(&t.last_offset).is_err()).flat_map(|t| t.encode()).collect();
        let path = cleaner::cleaned_txn_index_path(&self.dir, base);
        let file = self.disk.open(&path, true).map_err(super::io_err("create", &path))?;
        file.truncate(0).map_err(super::io_err("truncate", &path))?;
        file.write_at(&bytes, 0).map_err(super::io_err("write", &path))?;
        file.sync().map_err(super::io_err("sync", &path))
    }

    /// Brings the clean point down to `end` if it is above (after a truncation), persisted.
    pub(super) fn lower_clean_point(&mut self, end: i64) -> Result<(), LogError> {
        if self.cleaned_to > end {
            self.set_clean_point(end)?;
        }
        Ok(())
    }

    fn set_clean_point(&mut self, offset: i64) -> Result<(), LogError> {
        self.cleaned_to = offset;
        let path = self.dir.join(cleaner::CLEANER_CHECKPOINT_FILE);
        write_atomically(self.disk.as_ref(), &path, offset.to_string().as_bytes()).map_err(super::io_err("write", &path))
    }

    /// The clean point: offsets below it have been through a cleaning pass.
    pub fn cleaned_to(&self) -> i64 {
        self.cleaned_to.max(self.log_start_offset())
    }

    /// Where a pass's dirty range ends: before the first segment that is active, reaches
    /// `upper`, or holds records younger than `min.compaction.lag.ms`.
    pub(super) fn dirty_end(&self, now: u64, upper: i64) -> i64 {
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
        let (dirty, total) = self.dirty_bytes(now, upper);
        let closed = &self.segments[..self.segments.len() - 1];
        let by_ratio = dirty as u128 * 1_000_000 >= self.config.min_cleanable_dirty_ratio_ppm as u128 * total.max(1) as u128;
        let oldest_dirty = closed.iter().find(|s| s.next_offset() > start).map_or(i64::MAX, |s| s.max_timestamp());
        let by_lag = (oldest_dirty as i128) < now as i128 - self.config.max_compaction_lag_ms as i128;
        by_ratio || by_lag
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
            // A segment holding abort markers keeps its own `.txnindex`: it may only start a
            // group, whose cleaned segment keeps its base offset (`log::aborted`).
            if j > i && (!fits || self.holds_aborted(s.base_offset, s.next_offset())) {
                break;
            }
            size += s.size();
            j += 1;
        }
        j
    }

    /// A run of two or more whole batches from `at` (up to `limit`) in one segment that lose
    /// every record by the map's bits, none of them a producer's last batch (those stay apart):
    /// its first and last headers and its bytes, found with two or three header lookups and
    /// without reading the batches between. Epochs only grow along a log, so a run whose ends
    /// share one is of one epoch, as a merged empty batch must be. The bytes are those the map
    /// walk checked. None when there is no such run.
    fn dead_run(&self, at: i64, limit: i64, map: &KeyMap, last_of_producer: &BTreeMap<i64, i64>) -> Result<Option<(BatchHeader, BatchHeader, u64)>, LogError> {
        let i = self.segments.partition_point(|s| s.base_offset <= at).saturating_sub(1);
        let Some(seg) = self.segments.get(i) else { return Ok(None) };
        let kept = last_of_producer.values().filter(|&&b| b >= at).min().copied().unwrap_or(i64::MAX);
        let Some(stop) = map.superseded_through(at, limit.min(seg.next_offset()).min(kept)) else { return Ok(None) };
        if stop <= at {
            return Ok(None);
        }
        let Some((first_pos, first)) = seg.position_of(at)? else { return Ok(None) };
        let Some((mut last_pos, mut last)) = seg.position_of(stop - 1)? else { return Ok(None) };
        if last.last_offset() >= stop {
            // The batch holding `stop - 1` keeps a record: the run ends before it.
            let Some(before) = seg.position_of(last.base_offset - 1)?.filter(|_| last.base_offset > at) else { return Ok(None) };
            (last_pos, last) = before;
        }
        if first.base_offset != at || last.base_offset <= first.base_offset || last.last_offset() >= stop || last.leader_epoch != first.leader_epoch {
            return Ok(None);
        }
        Ok(Some((first, last, last_pos + last.size as u64 - first_pos)))
    }

    /// The whole batches of one read from `at` into `buf`, at most `max_bytes` (at least one
    /// batch), none reaching `upper`, as their headers and where each lies in `buf` (CRCs
    /// checked outside `trusted`, see [`Log::read_into`]).
    fn batches_into(&self, at: i64, max_bytes: usize, upper: i64, trusted: Range<i64>, buf: &mut Vec<u8>) -> Result<Vec<(BatchHeader, Range<usize>)>, LogError> {
        let (_, len) = self.read_into(at, max_bytes, upper, trusted, buf)?;
        super::read::batch_ranges(&buf[..len])
    }
}

/// What the rewrite makes of a batch. In the mapped range a batch is judged by the map's bits
/// when it has them (see [`KeyMap::superseded_in`]): one that loses every record becomes empty
/// and one that loses none is copied, neither walked nor probed (at 10% live keys nine batches
/// in ten lose everything). Any other is decided record by record ([`clean::clean_batch`]);
/// when it is rewritten with a new CRC its stored one is checked first, even in the mapped
/// range, so bytes damaged since the map walk are never given a valid CRC. A batch that does
/// not decode is kept whole.
fn judge(b: &[u8], h: &BatchHeader, map: &KeyMap, tombstones: Tombstones, mapped: &Range<i64>) -> Result<Outcome, LogError> {
    if mapped.contains(&h.base_offset) && h.last_offset() < mapped.end {
        match map.superseded_in(h.base_offset, h.last_offset()) {
            Some(n) if n as i64 == h.records_count as i64 => return Ok(Outcome::Empty),
            Some(0) => return Ok(Outcome::Whole),
            _ => {}
        }
    }
    let outcome = clean::clean_batch(b, h, map, tombstones).unwrap_or(Outcome::Whole);
    if matches!(outcome, Outcome::Rewritten(_)) && mapped.contains(&h.base_offset) {
        super::batch::check_stored(b)?;
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_keyed, read_header, stamp};

    #[test]
    fn the_rewrite_judges_mapped_batches_by_their_bits_and_checks_those_it_rewrites() {
        // Offsets 0..6 in three batches: a a | a b | b c. Only a@2, b@4 and c@5 are latest.
        let batches: Vec<(Vec<u8>, BatchHeader)> = [(0, ["a", "a"]), (2, ["a", "b"]), (4, ["b", "c"])]
            .into_iter()
            .map(|(base, keys)| {
                let mut b = build_keyed(&keys.map(|k| (Some(k.as_bytes()), Some(&b"value"[..]))), 1_000);
                stamp(&mut b, base, 1);
                let h = read_header(&b).unwrap();
                (b, h)
            })
            .collect();
        let mut map = KeyMap::for_range(1 << 20, Keep::Latest, 0, 6);
        for (b, _) in &batches {
            assert_eq!(clean::map_batch(&mut map, b), Ok(true));
        }
        map.settle();
        let none = Tombstones { reached: 0, horizon_ms: 0 };
        let judged: Vec<Outcome> = batches.iter().map(|(b, h)| judge(b, h, &map, none, &(0..6)).unwrap()).collect();
        assert_eq!(judged[0], Outcome::Empty);
        assert!(matches!(judged[1], Outcome::Rewritten(_)), "a@2 stays, b@3 goes");
        assert_eq!(judged[2], Outcome::Whole);
        // The same verdicts as record by record.
        for ((b, h), j) in batches.iter().zip(&judged) {
            assert_eq!(&clean::clean_batch(b, h, &map, none).unwrap(), j);
        }
        // Bytes damaged since the map walk: a batch copied whole keeps its stored CRC (so the
        // damage stays visible), but one to be rewritten with a new CRC is refused.
        let (mut damaged, h) = batches[1].clone();
        let value = damaged.windows(5).rposition(|w| w == b"value").unwrap();
        damaged[value] ^= 0x20;
        assert!(judge(&damaged, &h, &map, none, &(0..6)).is_err(), "a new CRC over damaged bytes");
        assert!(judge(&damaged, &h, &map, none, &(0..0)).is_ok(), "outside the mapped range the read checked it");
    }
}
