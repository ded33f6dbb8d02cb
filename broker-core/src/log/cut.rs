//! A truncation as its owner's job (issue 32: no decision blocks on the disk). A log whose
//! owner takes jobs ([`Log::defer_syncs`], the broker's logs) changes only memory inside the
//! truncation's decision, plus the cheap name removals below; the rest of what an inline
//! truncation does (`log::replica`) is a [`CutJob`] ([`Log::take_cut`]) the owner runs off its
//! lock and reports back ([`Log::cut_done`]). The job also hands the owner the log's batches
//! as they stand after the cut ([`Tail`]), so the producer-state rebuild that follows a
//! truncation (`broker::truncation`) reads them off the lock too.
//!
//! Inside the decision: the pass in flight aborted; the removed segments' names and those of
//! the snapshots past the cut unlinked, newest first (their inodes stay open in the job, which
//! closes them: the unlink frees no block, as retention's does not — the close, tens of ms for a
//! large file, is the job's); the cut segment, epoch cache, aborted-transaction index, recovery
//! point and clean point cut in memory, reading at most the batches after the segment's last
//! index entry; buffered index entries written out (a small write, as a staged checkpoint's).
//! The job then does, in the inline truncation's order: the cut segment's `.txnindex` brought in
//! line, the directory synced (the removals durable before the cut, so no cut segment is ever
//! followed by a surviving later one), the `.log` and indexes cut and the `.log` synced, every
//! segment past the recovery point and whatever else the log owed synced, the indexes synced,
//! and the recovery-point checkpoint, then the clean point, rewritten at the new end.
//!
//! What must hold, and why it does:
//! * never a state from which a crash brings a removed record back under a recovery point that
//!   vouches for it: until the job's checkpoint the file still says the old recovery point, and a
//!   crash leaves the old log or a dense prefix of it (the removals newest first, the cut after
//!   their directory sync) — the state before the truncation, which nobody outside the node
//!   saw (the follower asks its leader nothing about the partition until the report); after the
//!   checkpoint the cut is durable and the file says the new end;
//! * a recovery point or checkpoint never vouches for offsets new appends reuse before they are
//!   durable: nothing is appended until the report ([`Log::append`] and the follower's append
//!   are refused, [`LogError::Busy`]), and the memory recovery point is at the new end at most;
//! * a cut is never overtaken by a write of the same log: no job is handed out while the cut is
//!   in flight ([`Log::take_sync`] waits), nothing is staged (no appends), and a sync's
//!   write-out under way finishes before the job's file cut, which takes the segment's writer
//!   lock (`SegmentLog::cut_file`);
//! * nothing else touches the files meanwhile: flushes, checkpoints (inline or staged), the
//!   producer-state snapshot, retention, cleaning and another truncation wait for the report,
//!   and a truncation waits for a cleaning swap in flight (the job's replay would read the
//!   segments the swap replaces);
//! * a failed job takes the log offline, as a failed inline truncation does; a report for a
//!   log reopened since (its serial) vouches for nothing.

use super::aborted::{AbortedFix, IndexFiles};
use super::batches::Batches;
use super::durability::Owed;
use super::region::SegmentLog;
use super::segment::{FileCut, Segment};
use super::txn_index::AbortedTxn;
use super::{io_err, Log, LogError, RECOVERY_POINT_FILE};
use crate::storage::{write_atomically, Disk, DiskFile};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a [`CutJob`] covered, checked when it comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutStamp {
    serial: u64,
    cuts: u64,
    dir_changes: u64,
    /// What the log owed when the job was taken: the job pays that.
    owed: u64,
    /// The log end after the cut: what the job makes durable and checkpoints.
    pub end: i64,
}

/// The files' side of a truncation, for the owner to run off its lock. Clone shares one job
/// (it runs once); two are equal when they are the same job.
#[derive(Clone)]
pub struct CutJob {
    work: Arc<Mutex<Option<Work>>>,
    pub stamp: CutStamp,
    /// Closed once the log is let go: the job then does nothing (`log::fence`).
    fence: super::fence::Fence,
}

struct Work {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    /// The removed segments, names already gone: closed when the job ends.
    removed: Vec<Segment>,
    /// The cut segment's `.txnindex`, when entries of removed markers went from it.
    aborted: Option<IndexFiles>,
    /// Segment files or snapshots were removed: the directory is synced before the cut.
    dir_dirty: bool,
    file: Option<FileCut>,
    /// Every segment holding data at or past the recovery point, and what else the log owed.
    syncs: Vec<(Arc<SegmentLog>, Arc<Path>)>,
    owed: Vec<Owed>,
    /// Index files changed since their last sync (the checkpoint vouches for their segments).
    indexes: Vec<(Arc<dyn DiskFile>, PathBuf)>,
    /// The planted `CheckpointInPlace` (`log::planted`).
    in_place: bool,
    end: i64,
    /// The clean point, when the cut brought it down to `end`.
    clean_point: Option<i64>,
    tail: Tail,
}

/// The log's batches after the cut, and its aborted-transaction index as memory held it then:
/// what the owner's producer-state replay reads, off its lock, once the job's IO is done.
pub struct Tail {
    pub batches: Batches,
    /// The entries, and whether a `.txnindex` failed to read back at open.
    aborted: (Vec<AbortedTxn>, bool),
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    /// Each segment's (base, next segment's base).
    bounds: Vec<(i64, Option<i64>)>,
}

/// The truncation in flight, until its report.
#[derive(Debug)]
pub(super) struct InFlight {
    stamp: CutStamp,
    job: Option<CutJob>,
    /// Bases of the segments whose indexes the job syncs.
    indexes: Vec<i64>,
}

impl Work {
    fn run(self) -> Result<Tail, LogError> {
        let disk = self.disk.as_ref();
        if let Some(files) = &self.aborted {
            files.write()?;
        }
        if self.dir_dirty {
            disk.sync_dir(&self.dir).map_err(io_err("fsync directory", &self.dir))?;
        }
        if let Some(file) = &self.file {
            file.run()?;
        }
        for owed in &self.owed {
            owed.sync(disk)?;
        }
        for (file, path) in &self.syncs {
            file.sync().map_err(io_err("fdatasync", path))?;
        }
        for (file, path) in &self.indexes {
            file.sync().map_err(io_err("fdatasync", path))?;
        }
        match self.in_place {
            true => super::planted::write_in_place(disk, &self.dir, self.end)?,
            false => {
                let path = self.dir.join(RECOVERY_POINT_FILE);
                write_atomically(disk, &path, format!("{}\n", self.end).as_bytes()).map_err(io_err("write checkpoint", &path))?;
            }
        }
        if let Some(point) = self.clean_point {
            let path = self.dir.join(super::cleaner::CLEANER_CHECKPOINT_FILE);
            write_atomically(disk, &path, point.to_string().as_bytes()).map_err(io_err("write", &path))?;
        }
        drop(self.removed);
        Ok(self.tail)
    }
}

impl CutJob {
    /// Does the truncation's IO (blocking: syncs, a file cut, checkpoint writes; run it where
    /// that stops nobody else) and hands over the log's batches for the replay. A second run of
    /// the same job does nothing and fails.
    pub fn run(&self) -> Result<Tail, LogError> {
        self.run_then(Ok)
    }

    /// [`CutJob::run`], then `then` with the batches (the owner's rebuild, whose index fix
    /// writes files too), both inside the log's fence: a log let go since (reopened, its topic
    /// deleted and perhaps created again at the path) has its files changed by neither.
    pub fn run_then<T>(&self, then: impl FnOnce(Tail) -> Result<T, LogError>) -> Result<T, LogError> {
        let work = self.work.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.fence.pass(|| work.map_or_else(|| Err(LogError::Failed("a truncation's job ran twice".into())), Work::run).and_then(then))
    }
}

impl std::fmt::Debug for CutJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CutJob(to {})", self.stamp.end)
    }
}

impl PartialEq for CutJob {
    fn eq(&self, other: &CutJob) -> bool {
        Arc::ptr_eq(&self.work, &other.work)
    }
}

impl Eq for CutJob {}

impl Tail {
    /// Brings the aborted-transaction index in line with what the owner's replay from `from`
    /// derived (blocking: each file from the segment holding `from` that already says it is
    /// synced, each that must change replaced atomically), for [`Log::adopt_aborted`].
    pub fn fix_aborted(&self, from: i64, derived: Vec<AbortedTxn>) -> Result<AbortedFix, LogError> {
        let (held, untrusted) = &self.aborted;
        let at = held.partition_point(|t| t.last_offset < from);
        // The files of the segment holding `from` and of every later one.
        let bounds = self.bounds.iter().copied().filter(|(_, next)| next.is_none_or(|n| n > from)).collect();
        if held[at..] == derived[..] && !untrusted {
            IndexFiles::new(self.disk.clone(), self.dir.clone(), bounds, held.clone()).write()?;
            return Ok(AbortedFix::new(from, None));
        }
        let mut all = held[..at].to_vec();
        all.extend(derived.iter().copied());
        IndexFiles::new(self.disk.clone(), self.dir.clone(), bounds, all).write()?;
        Ok(AbortedFix::new(from, Some(derived)))
    }
}

impl Log {
    /// The truncation's job, once (deferral on; see the module header).
    pub fn take_cut(&mut self) -> Option<CutJob> {
        self.deferred.cutting.as_mut().and_then(|c| c.job.take())
    }

    /// Whether a truncation is in flight: its job taken or not, not yet reported back.
    pub fn cutting(&self) -> bool {
        self.deferred.cutting.is_some()
    }

    /// The stamp of the truncation in flight, if any: a report carrying another is not its.
    pub fn cut_in_flight(&self) -> Option<CutStamp> {
        self.deferred.cutting.as_ref().map(|c| c.stamp)
    }

    /// What waits for a truncation in flight: appends and another truncation.
    pub(super) fn refuse_while_cutting(&self) -> Result<(), LogError> {
        match &self.deferred.cutting {
            Some(c) => Err(LogError::Busy(format!("{}: a truncation to {} is in flight", self.dir.display(), c.stamp.end))),
            None => Ok(()),
        }
    }

    /// After the memory half of a truncation (deferral on): everything the inline truncation
    /// would do next goes into the job, and the log waits for its report.
    pub(super) fn owe_cut(&mut self, removed: Vec<Segment>, aborted_cut: bool, file: Option<FileCut>) -> Result<(), LogError> {
        let end = self.log_end_offset();
        self.recovery_point = self.recovery_point.min(end);
        self.cut_made();
        if self.log_start_offset() == end {
            // Nothing left (a full truncation): nothing in memory is unwritten or unsynced, so
            // a leader would count its end. What is on disk waits for the job all the same.
            self.recovery_point = end;
            self.deferred.written_to(end);
        }
        let clean_point = (self.cleaned_to > end).then_some(end);
        self.cleaned_to = self.cleaned_to.min(end);
        let (mut indexes, mut synced) = (Vec::new(), Vec::new());
        for seg in &mut self.segments {
            if seg.indexes_dirty() {
                seg.write_indexes()?;
                indexes.extend(seg.index_handles());
                synced.push(seg.base_offset);
            }
        }
        let aborted = aborted_cut.then(|| self.aborted_files_from(end, self.aborted_transactions().to_vec()));
        let bases = self.segment_bases();
        let bounds = bases.iter().enumerate().map(|(i, &b)| (b, bases.get(i + 1).copied())).collect();
        let tail = Tail { batches: self.batches(), aborted: self.aborted_held(), disk: self.disk.clone(), dir: self.dir.clone(), bounds };
        let (serial, cuts) = self.deferred.marks();
        let stamp = CutStamp { serial, cuts, dir_changes: self.deferred.dir_changes, owed: self.owed.mark(), end };
        let work = Work {
            disk: self.disk.clone(),
            dir: self.dir.clone(),
            removed,
            aborted,
            dir_dirty: self.dir_dirty,
            file,
            syncs: self.segments_past(self.recovery_point),
            owed: self.owed.things(),
            indexes,
            in_place: self.checkpoint_in_place,
            end,
            clean_point,
            tail,
        };
        let job = CutJob { work: Arc::new(Mutex::new(Some(work))), stamp, fence: self.deferred.fence.clone() };
        self.deferred.cutting = Some(InFlight { stamp, job: Some(job), indexes: synced });
        Ok(())
    }

    /// A [`CutJob`] of this log came back. Ok: the cut is durable and checkpointed, so the
    /// recovery point is the new end, and what the job synced is no longer owed. Err: the log
    /// goes offline. A job of another log (one reopened at the same path since) changes
    /// nothing. Returns whether it was this log's in-flight truncation and it succeeded.
    pub fn cut_done(&mut self, stamp: CutStamp, result: Result<(), LogError>) -> bool {
        if self.deferred.cutting.as_ref().is_none_or(|c| c.stamp != stamp) {
            return false;
        }
        let flight = self.deferred.cutting.take().expect("checked above");
        if let Err(e) = result {
            self.go_offline(format!("truncation failed: {e}"), false);
            return false;
        }
        if self.failed.is_some() {
            // Offline meanwhile: ring again, for the reopening that waited for this report
            // (the first reason stands).
            self.go_offline(String::new(), false);
            return false;
        }
        // Nothing appended, cut, removed or rolled while the job ran (see the module header).
        debug_assert_eq!(self.log_end_offset(), stamp.end);
        self.owed.paid_to(stamp.owed);
        if stamp.dir_changes == self.deferred.dir_changes {
            self.dir_dirty = false;
        }
        for seg in self.segments.iter_mut().filter(|s| flight.indexes.contains(&s.base_offset)) {
            seg.indexes_are_durable();
        }
        self.mark_flushed(stamp.end);
        self.checkpointed = stamp.end;
        true
    }
}
