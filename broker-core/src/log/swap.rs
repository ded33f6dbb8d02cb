//! A cleaned group's swap (steps 1–4 of [`super::cleaner`]), off the owner's lock. Its syncs
//! and directory syncs take tens of milliseconds (55–71 ms for the longest step on the
//! benchmark machine), so a log whose owner takes jobs ([`Log::defer_syncs`]) does not swap
//! inside the cleaner's step: the step hands the whole swap over as a [`SwapJob`]
//! ([`Log::take_swap`]), the owner runs it where blocking is harmless, and reports back
//! ([`Log::swapped`]), which puts the cleaned segment in place of the group's in memory.
//!
//! A group whose pass removed transaction markers owes more before the renames
//! (`log::pass::markers`): its producer snapshots at or below the last removed marker removed,
//! the directory synced, and its `B.txnindex.cleaned` written and synced. With deferral on
//! that is the job's first part ([`Markers`]): the decision only decides (memory lets go of
//! the snapshots; the index's bytes), and the job does it, in that order, before its own
//! syncs and renames. A failure there, or in those syncs, comes before the commit point: the
//! job removes `B.txnindex.cleaned` (no later swap may take it for its own) and fails, and the
//! log goes offline as after any failed swap; reopening finds the old segments, the markers
//! and any snapshot not yet removed (still true of them), and removes the `.cleaned` leftovers.
//!
//! What must hold while the job is in flight: the files on disk are the old segments', then
//! the cleaned one's, while memory still reads the old segments through their open handles
//! (a removed file stays readable to its holders). So nothing may remove or cut a segment of
//! the group meanwhile, as Kafka's cleaner holds the log's lock across its swap:
//! * retention and DeleteRecords' deletions wait (the log is no candidate for retention until
//!   the swap is done; the owner trims below its start again then);
//! * a truncation into the group, or a full one, is refused with [`LogError::Busy`] (a
//!   follower asks again after the swap); one above the group touches only later segments;
//! * the pass makes no progress ([`Log::clean_step`] waits) and sets no clean point.
//!
//! Appends, rolls, reads, flushes and checkpoints go on. A failed swap takes the log offline
//! (memory would be unsure of the disk), and reopening completes or drops it, as before. A log
//! whose owner takes no jobs (tests, the crash rounds) swaps inline, in the same order.

use super::cleaner;
use super::pass::Markers;
use super::segment::Segment;
use super::{Log, LogError};
use crate::storage::Disk;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The swap a log owes its owner: everything it needs, so running it needs no access to the
/// log. Clone shares one job (it runs once); two are equal when they are the same job.
#[derive(Clone)]
pub struct SwapJob {
    work: Arc<Mutex<Option<Work>>>,
    serial: u64,
    /// Closed once the log is let go: the swap then does nothing (`log::fence`).
    fence: super::fence::Fence,
}

struct Work {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    cleaned: Segment,
    bases: Vec<i64>,
    interval: u64,
    now: u64,
    /// What removed markers owe first (deferral on; empty inline, where `finish_group` did it).
    markers: Markers,
    /// Whether the pass wrote (or the job writes) the group's `B.txnindex.cleaned`.
    txn_index: bool,
}

impl Work {
    fn run(self) -> Result<Segment, LogError> {
        let Work { disk, dir, mut cleaned, bases, interval, now, markers, txn_index } = self;
        let base = bases[0];
        // Up to the first rename nothing is committed: a failure leaves the old segments, and
        // no `B.txnindex.cleaned` that a later swap removing no marker would take for its own.
        if let Err(e) = markers.apply(disk.as_ref(), &dir, base).and_then(|()| cleaner::seal(&mut cleaned)) {
            let _ = disk.remove(&cleaner::cleaned_txn_index_path(&dir, base));
            return Err(e);
        }
        cleaner::swap_in(disk.as_ref(), &dir, cleaned, &bases, interval, now, txn_index)
    }
}

/// A finished [`SwapJob`]: the cleaned segment opened under its new name, or why not.
pub struct Swapped {
    serial: u64,
    result: Result<Segment, LogError>,
}

/// The swap in flight: which segments it replaces and which markers the pass removed.
pub(super) struct InFlight {
    bases: Vec<i64>,
    /// The group's end offset: a truncation at or above it touches only later segments.
    end: i64,
    removed_markers: Vec<i64>,
    /// The job, until the owner takes it.
    job: Option<SwapJob>,
}

impl SwapJob {
    /// Does the swap (blocking: syncs, renames, removals and directory syncs; run it where that
    /// stops nobody else). A second run of the same job does nothing and says so.
    pub fn run(&self) -> Swapped {
        let work = self.work.lock().unwrap_or_else(|p| p.into_inner()).take();
        // A log reopened since may be building its own `B.log.cleaned`, and a topic created
        // again at the path has other segments: the swap must touch neither.
        let result = self.fence.pass(|| work.map_or_else(|| Err(LogError::Failed("a cleaning swap ran twice".into())), Work::run));
        Swapped { serial: self.serial, result }
    }

    /// Whether it ran after its log was let go, and so did nothing (`log::fence`).
    pub fn fenced(done: &Swapped) -> bool {
        super::fence::did_nothing(&done.result)
    }

    /// The report of a job whose run ended without one (`why`): the log goes offline, as
    /// after a failed swap, and reopening completes or drops it.
    pub fn lost(&self, why: String) -> Swapped {
        Swapped { serial: self.serial, result: Err(LogError::Failed(why)) }
    }
}

impl std::fmt::Debug for SwapJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SwapJob")
    }
}

impl PartialEq for SwapJob {
    fn eq(&self, other: &SwapJob) -> bool {
        Arc::ptr_eq(&self.work, &other.work)
    }
}

impl Eq for SwapJob {}

impl std::fmt::Debug for Swapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.result {
            Ok(seg) => write!(f, "Swapped(segment {})", seg.base_offset),
            Err(e) => write!(f, "Swapped(failed: {e})"),
        }
    }
}

impl Log {
    /// Swaps a whole cleaned group in for the segments at `bases`: at once, or (deferral on)
    /// as a job for the owner, with what its removed markers owe as the job's first part.
    pub(super) fn swap_group(&mut self, cleaned: Segment, bases: Vec<i64>, end: i64, removed_markers: Vec<i64>, now: u64) -> Result<(), LogError> {
        let markers = match self.deferred.on && !removed_markers.is_empty() {
            true => self.markers_owed(bases[0], end, &removed_markers),
            false => Markers::default(),
        };
        let txn_index = !removed_markers.is_empty() && self.txn_index_without(bases[0], end, &removed_markers).is_some();
        let work = Work { disk: self.disk.clone(), dir: self.dir.clone(), cleaned, bases: bases.clone(), interval: self.config.index_interval_bytes, now, markers, txn_index };
        if self.deferred.on {
            let job = SwapJob { work: Arc::new(Mutex::new(Some(work))), serial: self.deferred.marks().0, fence: self.deferred.fence.clone() };
            self.swap = Some(Box::new(InFlight { bases, end, removed_markers, job: Some(job) }));
            return Ok(());
        }
        self.put_in_place(&bases, &removed_markers, work.run())
    }

    /// The swap the cleaner's last step owes, if any (deferral on).
    pub fn take_swap(&mut self) -> Option<SwapJob> {
        self.swap.as_mut().and_then(|s| s.job.take())
    }

    /// Whether a swap is in flight: taken or not, not yet reported back.
    pub fn swapping(&self) -> bool {
        self.swap.is_some()
    }

    /// A truncation to `offset` would cut into the group being swapped: it must wait.
    pub(super) fn refuse_cut_while_swapping(&self, offset: i64) -> Result<(), LogError> {
        match &self.swap {
            Some(s) if offset < s.end => Err(LogError::Busy(format!("{}: a cleaning swap of [{}, {}) is in flight", self.dir.display(), s.bases[0], s.end))),
            _ => Ok(()),
        }
    }

    /// A [`SwapJob`] of this log came back: the cleaned segment takes the group's place (the
    /// old segments' files go to be freed a slice at a time), or the log goes offline. A job of
    /// another log (one reopened at the same path since) changes nothing.
    pub fn swapped(&mut self, done: Swapped) -> Result<(), LogError> {
        if done.serial != self.deferred.marks().0 {
            return Ok(());
        }
        let Some(s) = self.swap.take() else { return Ok(()) };
        self.put_in_place(&s.bases, &s.removed_markers, done.result)
    }

    fn put_in_place(&mut self, bases: &[i64], removed_markers: &[i64], seg: Result<Segment, LogError>) -> Result<(), LogError> {
        // Offline, the pass ends here: its clean point would cover a group reopening may drop.
        let seg = seg.inspect_err(|e| {
            self.go_offline(format!("cleaning: {e}"), true);
            self.abort_cleaning();
        })?;
        let i = self.segments.partition_point(|s| s.base_offset < bases[0]);
        let j = i + bases.len();
        // Nothing removes a segment of the group while it swaps; were these not its, memory
        // would be unsure of the disk.
        if !self.segments.get(i..j).is_some_and(|s| s.iter().map(|s| s.base_offset).eq(bases.iter().copied())) {
            let why = format!("the segments of the group at {} changed during its swap", bases[0]);
            self.go_offline(format!("cleaning: {why}"), true);
            self.abort_cleaning();
            return Err(LogError::Failed(why));
        }
        for old in self.segments.splice(i..j, [seg]) {
            self.retired.push(old.into_log());
        }
        self.aborted.retain(|t| removed_markers.binary_search(&t.last_offset).is_err());
        Ok(())
    }
}
