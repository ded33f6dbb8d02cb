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
//! are passed over from their first and last headers (`dead_run`, in `step`), a scattered dead
//! batch is read as its header alone when batches are large
//! (`header_read_batch_bytes_min`), and a read batch is judged by the bits before any
//! record walk (`judge`).
//!
//! Between steps the log takes appends and rolls (they only add segments after the pass's).
//! Anything that removes segments — retention, truncation, DeleteRecords — aborts the pass
//! first ([`Log::abort_cleaning`]): its `.cleaned` file goes and the next pass starts over.
//!
//! Who does what: a step's reading, judging and writing of the `.cleaned` file is
//! `step`'s, over a read-only view of the segments it reads, and never touches the log;
//! this file is the log's side — starting a pass, choosing each group, setting the clean
//! point, swapping a whole group in (`finish_group`) — which reads no dirty byte. A log whose
//! owner takes jobs ([`Log::defer_syncs`]) hands each step to the owner as a job (`job`), and
//! the clean point's write at the pass's end too, and the removal of a dropped pass's
//! `.cleaned` files; any other runs them here, inline. A group kept as it was (one segment,
//! nothing gone) has its file removed by the step that finds it whole.

use super::aborted::AbortedRanges;
use super::clean::{Keep, KeyMap, Tombstones};
use super::cleaner::{self, CleanStats, Output};
use super::{Log, LogError};
use crate::constants::segment_offsets_max;
use super::segment::Segment;
use crate::storage::write_atomically;
use std::collections::{BTreeMap, BTreeSet};

mod job;
mod markers;
mod step;

pub use job::{CleanJob, CleanStamp, Cleaned};
pub(super) use job::InFlight;
pub(super) use markers::Markers;
use step::{Stop, View};

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
    /// Rewriting groups below `stats.to`; `next` is the base offset of the next group. A
    /// marker whose transaction left nothing goes `retention_ms` after a pass first saw it.
    Rewrite { tombstones: Tombstones, retention_ms: i64, last_of_producer: BTreeMap<i64, i64>, held: BTreeSet<i64>, next: i64, group: Option<Group> },
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
    /// The cleaned segment being written, under its `.cleaned` names: created by the group's
    /// first step (None until then).
    seg: Option<Segment>,
    /// Bytes written to `seg` since it was last synced.
    unsynced: u64,
    out: Output,
    changed: bool,
    /// Offsets of the transaction markers this group removes (`clean::clean_marker`).
    removed_markers: Vec<i64>,
}

impl Group {
    /// Whether the group is one segment whose every batch survived whole: it is not swapped
    /// in, and its `.cleaned` file goes.
    fn kept_as_is(&self) -> bool {
        !(self.changed || self.out.merged) && self.bases.len() == 1
    }
}

impl Pass {
    /// The phase's name (the module header's 1–3).
    fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Map { .. } => "map",
            Phase::Producers { .. } => "producers",
            Phase::Rewrite { .. } => "rewrite",
        }
    }

    /// The base offset naming the `.cleaned` files of the group being rewritten, if any.
    fn group_base(&self) -> Option<i64> {
        match &self.phase {
            Phase::Rewrite { group: Some(g), .. } => Some(g.bases[0]),
            _ => None,
        }
    }
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No pass is in flight and none is due.
    Idle,
    /// A pass went on (`bytes` read and written), or only replaced files were freed, or the
    /// step went to the owner as a job ([`Log::take_clean`]) or waits for one (0).
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
    /// other failure only ends the pass. With deferral on the step's IO is a job for the owner
    /// ([`Log::take_clean`], reported with [`Log::cleaned`]), and the step returns at once.
    pub fn clean_step(&mut self, now: u64, upper: i64, map_bytes: usize, budget: usize, keep: Keep) -> Result<Step, LogError> {
        // Every step frees a slice of what earlier swaps replaced, pass or no pass; a pass
        // waits for its swap in flight (`swap`), for a truncation's job (`cut`) and for its
        // own step's job (`job`).
        let freeing = !self.retired.is_empty();
        self.retired.free_slice();
        // An offline log's pass goes no further: after a failed swap, a step that found no
        // group left would set the clean point past the group reopening may drop.
        if self.failed.is_some() {
            self.abort_cleaning();
            return Ok(Step::Idle);
        }
        if self.swapping() || self.cutting() || self.deferred.cleaning.is_some() {
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
        let budget = budget.max(1) as u64;
        if self.deferred.on {
            return self.hand_out(pass, now, budget);
        }
        let progress = self.advance(&mut pass, now, budget);
        self.settle(pass, progress)
    }

    /// What a step's progress makes of the pass: kept for the next step, ended, or, after a
    /// failure, aborted (its `.cleaned` files removed).
    fn settle(&mut self, pass: Box<Pass>, progress: Result<Progress, LogError>) -> Result<Step, LogError> {
        match progress {
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
    /// it mapped nothing. Inline whatever the mode: with deferral on, each step's job and
    /// each swap run here, before the next step.
    pub fn clean(&mut self, now: u64, upper: i64, map_bytes: usize) -> Result<Option<CleanStats>, LogError> {
        self.clean_keeping(now, upper, map_bytes, Keep::Latest)
    }

    /// [`Log::clean`], keeping `keep` of each key: only the simulator's planted cleaner bug
    /// passes anything but [`Keep::Latest`].
    #[doc(hidden)]
    pub fn clean_keeping(&mut self, now: u64, upper: i64, map_bytes: usize, keep: Keep) -> Result<Option<CleanStats>, LogError> {
        loop {
            // With deferral on, the step's job and the swap it owes run here too.
            let mut step = self.clean_step(now, upper, map_bytes, crate::constants::cleaner_read_bytes, keep)?;
            if let Some(job) = self.take_clean() {
                step = self.cleaned(job.run(), now)?;
            }
            if let Some(job) = self.take_swap() {
                self.swapped(job.run())?;
            }
            match step {
                Step::Idle => return Ok(None),
                Step::Working { .. } => {}
                Step::Done { stats, .. } => return Ok(stats),
            }
        }
    }

    /// Whether a pass is in flight (between steps or in a step's job), or files it replaced
    /// wait to be freed (`retired`).
    pub fn cleaning(&self) -> bool {
        self.pass.is_some() || self.deferred.cleaning.is_some() || !self.retired.is_empty()
    }

    /// Whether [`Log::clean_step`] has work now: a pass in flight or due, or replaced files
    /// to free — none while a truncation's job is in flight (`cut`).
    pub fn cleaner_work_due(&self, now: u64, upper: i64) -> bool {
        !self.cutting() && (self.cleaning() || self.cleaning_due(now, upper))
    }

    /// The phase of the pass in flight — `"map"`, `"producers"` or `"rewrite"` (the module
    /// header's 1–3) — or None between passes: for benchmarks that split a pass's time.
    pub fn cleaning_phase(&self) -> Option<&'static str> {
        match &self.deferred.cleaning {
            Some(flight) => flight.phase,
            None => self.pass.as_ref().map(|p| p.phase_name()),
        }
    }

    /// Ends the pass in flight, if any, removing its `.cleaned` files (a leftover one is
    /// removed at the next open anyway). Called before anything removes segments. With
    /// deferral on the removal, and the close of the group's file, are a job (`job`, which
    /// says why no later pass's files of the same names can meet it). A pass whose step is the
    /// owner's job meanwhile loses that job's report: its files go when the job sees the abort
    /// or its report comes ([`Log::cleaned`]), since the job may still be writing them.
    pub(super) fn abort_cleaning(&mut self) {
        let pass = self.pass.take();
        self.drop_pass(pass, None);
        self.abort_clean_job();
    }

    /// Lets go of a pass that will not go on (`base`: its group's files, when the pass itself
    /// is lost with a job that never reported).
    fn drop_pass(&mut self, pass: Option<Box<Pass>>, base: Option<i64>) {
        match pass.as_ref().and_then(|p| p.group_base()).or(base) {
            Some(base) => self.discard(pass, None, base),
            None => drop(pass),
        }
    }

    /// Steps the pass here, until `budget` bytes are done, it ends, or it waits for a swap.
    fn advance(&mut self, pass: &mut Pass, now: u64, budget: u64) -> Result<Progress, LogError> {
        let mut bytes = 0u64;
        loop {
            let view = self.view_for(pass, budget - bytes);
            let (n, stop) = pass.step(&view, now, budget - bytes)?;
            bytes += n;
            if let Some(stats) = self.apply(pass, stop, now)? {
                return Ok(Progress::Done(bytes, stats));
            }
            if bytes >= budget || self.swapping() {
                return Ok(Progress::More(bytes)); // the next step waits for the swap
            }
        }
    }

    /// What a step's stop needs of the log: starting the next phase, choosing the next group
    /// (or setting the clean point at the pass's end), swapping a whole group in. Reads no
    /// batch. Some(what the pass did) when it ended.
    fn apply(&mut self, pass: &mut Pass, stop: Stop, now: u64) -> Result<Option<Option<CleanStats>>, LogError> {
        match stop {
            Stop::Budget => {}
            Stop::Nothing => return Ok(Some(None)),
            Stop::Mapped => {
                let start = self.log_start_offset();
                pass.phase = Phase::Producers { base: start, pos: 0, expected: start, last: BTreeMap::new() };
            }
            Stop::Scanned => {
                let Phase::Producers { last, .. } = &mut pass.phase else { unreachable!("scanned in the producers phase") };
                // The mapped range's last batches are later than the clean part's. Batches
                // past the mapped end are above every group: a producer's batch found last
                // may have a later one there, and is only kept needlessly.
                let mut last_of_producer = std::mem::take(last);
                last_of_producer.append(&mut pass.producers);
                let retention_ms = self.config.delete_retention_ms.min(i64::MAX as u64) as i64;
                let tombstones = Tombstones { reached: pass.start, horizon_ms: now as i64 - retention_ms };
                pass.phase = Phase::Rewrite { tombstones, retention_ms, last_of_producer, held: BTreeSet::new(), next: self.log_start_offset(), group: None };
            }
            Stop::NeedGroup => {
                if self.no_group_left(pass) {
                    // With deferral on the point is the pass's last job (`job`), handed out by
                    // the next turn.
                    if self.deferred.on {
                        return Ok(None);
                    }
                    self.set_clean_point(pass.stats.to)?;
                    return Ok(Some(Some(pass.stats.clone())));
                }
                let Phase::Rewrite { next, group, .. } = &mut pass.phase else { unreachable!("a group is asked for in the rewrite") };
                let mapped = pass.stats.to;
                let i = self.segments.partition_point(|s| s.base_offset < *next);
                let j = self.group_end(i, mapped);
                let segs = &self.segments[i..j];
                let (bases, end, before) = (segs.iter().map(|s| s.base_offset).collect::<Vec<_>>(), segs[segs.len() - 1].next_offset(), segs.iter().map(|s| s.size()).sum());
                *group = Some(Group { next: bases[0], bases, end, before, seg: None, unsynced: 0, out: Output::default(), changed: false, removed_markers: Vec::new() });
            }
            Stop::GroupWhole => {
                let Phase::Rewrite { next, group, .. } = &mut pass.phase else { unreachable!("a group is whole in the rewrite") };
                let g = group.take().expect("a whole group");
                *next = g.end;
                self.finish_group(g, &mut pass.stats, now)?;
            }
        }
        Ok(None)
    }

    /// Whether the rewrite has no group left below the mapped end: the pass ends at its
    /// clean point.
    fn no_group_left(&self, pass: &Pass) -> bool {
        let Phase::Rewrite { next, .. } = &pass.phase else { unreachable!("a group is asked for in the rewrite") };
        let i = self.segments.partition_point(|s| s.base_offset < *next);
        i + 1 >= self.segments.len() || self.segments[i].base_offset >= pass.stats.to
    }

    /// The segments the pass's next step (of `budget` bytes) may read, from the one holding
    /// where it is through the end of its phase's range (see [`View`]). The map walk's view
    /// stops at the first segment starting `budget` bytes past where it is, so a step costs
    /// no more than it reads however long the dirty range: the step reads whole batches while
    /// under `budget`, so every batch it reads starts in a segment that starts before that
    /// (counted from the first segment's start, so its bytes below `next` are allowed for),
    /// and it stops at its budget ([`Stop::Budget`]) before the view runs out.
    fn view_for(&self, pass: &Pass, budget: u64) -> View {
        let (from, to, reach) = match &pass.phase {
            Phase::Map { next } => (*next, pass.end, Some(budget)),
            Phase::Producers { base, .. } => (*base, pass.start, None),
            Phase::Rewrite { group: Some(g), .. } => (g.next, g.end, None),
            Phase::Rewrite { group: None, .. } => (0, 0, None),
        };
        let first = self.segments.partition_point(|s| s.base_offset <= from).saturating_sub(1);
        let last = self.segments.len() - 1; // the active segment: never read by a pass
        let segs = &self.segments[first.min(last)..last];
        let reach = reach.map_or(u64::MAX, |b| b.saturating_add(segs.first().map_or(0, |s| s.size())));
        let mut before = 0u64;
        let segs = segs.iter().take_while(|s| s.base_offset < to).take_while(|s| {
            let starts_within = before < reach;
            before = before.saturating_add(s.size());
            starts_within
        });
        View::new(segs, self.disk.clone(), self.dir.clone(), self.config.index_interval_bytes)
    }

    /// Swaps a whole group in, or drops its `.cleaned` file when it is one segment whose every
    /// batch survived whole. A group of several segments is merged even when nothing in it
    /// goes, as Kafka's cleaner rewrites every group: otherwise segments that cleaning shrank
    /// and that never change again would stay apart forever, and a compacted log's file count
    /// would follow its history instead of its live keys.
    fn finish_group(&mut self, g: Group, stats: &mut CleanStats, now: u64) -> Result<(), LogError> {
        let base = g.bases[0];
        if g.kept_as_is() {
            // The step that found it whole removed its file (`step`).
            return Ok(());
        }
        let seg = g.seg.expect("a whole group was written");
        let i = self.segments.partition_point(|s| s.base_offset < base);
        let j = i + g.bases.len();
        // Segments change only after an abort; were these not the group's, nothing is swapped.
        if !self.segments.get(i..j).is_some_and(|s| s.iter().map(|s| s.base_offset).eq(g.bases.iter().copied())) {
            self.discard(None, Some(seg), base);
            return Err(LogError::Failed(format!("cleaning {}: the segments of the group at {base} changed under the pass", self.dir.display())));
        }
        // With deferral on, what removed markers owe is the swap job's first part (`swap`).
        if !g.removed_markers.is_empty() && !self.deferred.on {
            if let Err(e) = self.before_removing_markers(base, g.end, &g.removed_markers) {
                // The group is out of the pass already, so the abort would not find its
                // files: a `B.txnindex.cleaned` left behind could replace `B.txnindex` in a
                // later swap that removes no marker.
                drop(seg);
                let _ = cleaner::remove_cleaned(self.disk.as_ref(), &self.dir, base);
                return Err(e);
            }
        }
        stats.segments_rewritten += g.bases.len();
        stats.bytes_before += g.before;
        stats.bytes_after += seg.size();
        stats.markers_removed += g.removed_markers.len();
        // From the rename on, a failure leaves memory unsure of the disk: the log goes offline
        // and reopening completes or drops the swap (see `cleaner`; off the owner's lock: `swap`).
        self.swap_group(seg, g.bases, g.end, g.removed_markers, now)
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
}
