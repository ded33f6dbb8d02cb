//! A cleaning step as its owner's job (issue 32: no decision blocks on the disk). A log whose
//! owner takes jobs ([`Log::defer_syncs`], the broker's logs) does not read, judge or write
//! inside its cleaner's turn: the turn does what needs the log first (starting a pass, or
//! choosing the next group), then hands the pass itself and a read-only view of the segments
//! the step reads ([`super::step`]) over as a [`CleanJob`] ([`Log::take_clean`]). The owner
//! runs it where blocking is harmless and reports back ([`Log::cleaned`]); the report's
//! decision applies what the step's stop needs of the log (the next phase, a whole group's
//! swap, the pass's end).
//!
//! What must hold while the job is in flight:
//! * the log starts no other step (its pass is the job's), no other pass, and no swap
//!   ([`Log::clean_step`] waits for the report);
//! * whatever aborts the pass meanwhile ([`Log::abort_cleaning`]: retention, truncation,
//!   DeleteRecords) loses the report: the job is marked aborted, and its pass's `.cleaned`
//!   files go once it is done writing them — by the job itself if it sees the mark (before
//!   or after its step), else by a discard job its report hands out (below);
//! * no job touches the files of a log let go (reopened, deleted): it runs inside the log's
//!   fence (`log::fence`), and a report of another log (its serial) changes nothing;
//! * a job's failure ends the pass (its files removed), as an inline step's does, and so does
//!   a job whose task ended without a report ([`CleanJob::lost`]) or whose log went offline
//!   meanwhile.
//!
//! The pass's end is a job too: when no group is left, the turn hands out the clean point's
//! write (`write_atomically`: a write, two fsyncs and a rename) as the pass's last job, and its
//! report moves memory's clean point and ends the pass with its stats. Until that report:
//! * memory keeps the old clean point (below the new one: never a point the disk lacks);
//! * a truncation is refused ([`LogError::Busy`], as during a swap): its job may write a
//!   lower point, and the two writes must land in the order memory decided them;
//! * retention or DeleteRecords aborting the pass does not stop the write (the point is true:
//!   the groups below it were cleaned and swapped in), so the report moves memory's point
//!   all the same, as the file will say at the next open;
//! * a failed write ends the pass with its error, as an inline one does, and memory takes
//!   the point anyway (the rename may have landed, and the point is true), so a later
//!   truncation below it rewrites the file; a report of a log let go changes nothing.
//!
//! A dropped pass's `.cleaned` files are a job too (no decision unlinks them): a pass dropped
//! between steps (aborted, or failed), or whose step's report is dropped, leaves its group's
//! files, its open `.cleaned` segment and its key map to a discard job ([`Log::discard`]),
//! held where a step's job is. The cleaner's next turn hands it out. The unlinks may run late,
//! yet never meet a later pass's file of the same name (a later pass of the same group base
//! makes `B.log.cleaned` again): a pass makes its files only in its steps, and no step, nor
//! any pass, starts while the discard job (or a step's job that removes its own) is in flight,
//! as for any job in the slot. A failed removal is a line, not an offline log: a leftover is
//! harmless (a later pass truncates its `.cleaned` files, a swap that writes no `.txnindex`
//! removes a stale `B.txnindex.cleaned` before its commit, `cleaner::swap_in`, and an open
//! removes them as strays), and a job run after its log was let go removes nothing.

use super::step::{Stop, View};
use super::{Pass, Phase, Progress, Step};
use super::super::segment::Segment;
use super::super::{cleaner, Log, LogError};
use crate::storage::{write_atomically, Disk};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Which step of which log a job is, checked when it comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanStamp {
    serial: u64,
    step: u64,
}

/// A cleaning step for the owner to run off its lock. Clone shares one job (it runs once);
/// two are equal when they are the same job.
#[derive(Clone)]
pub struct CleanJob {
    work: Arc<Mutex<Option<Work>>>,
    pub stamp: CleanStamp,
    /// The clean point it writes, when it is a pass's last job.
    point: Option<i64>,
    /// Set by the log when the pass is aborted (shared with its [`InFlight`]): a step that
    /// sees it removes its group's files instead of going on.
    aborted: Arc<AtomicBool>,
    /// Closed once the log is let go: the job then does nothing (`log::fence`).
    fence: super::super::fence::Fence,
}

struct Work {
    /// The pass (None: a discard job of a group already out of its pass).
    pass: Option<Box<Pass>>,
    task: Task,
}

enum Task {
    /// A step of the pass.
    Step { view: View, now: u64, budget: u64 },
    /// The pass's end: its clean point written at `path`.
    Point { disk: Arc<dyn Disk>, path: PathBuf, offset: i64 },
    /// A dropped pass's group files removed, after its open `.cleaned` segment (`seg`, when
    /// the group was out of the pass) and the pass are let go.
    Discard { disk: Arc<dyn Disk>, dir: PathBuf, base: i64, seg: Option<Segment> },
}

/// A finished [`CleanJob`]: the pass back, and what the step did or why it failed.
pub struct Cleaned {
    stamp: CleanStamp,
    /// None when the job's task was lost, it ran twice, or it discarded the pass.
    pass: Option<Box<Pass>>,
    /// The job let go of its pass and removed its group's `.cleaned` files (a discard job, or
    /// a step that saw its pass aborted): `result` is the removal's.
    discarded: bool,
    result: Result<(u64, Stop), LogError>,
}

/// The step in flight, until its report.
#[derive(Debug)]
pub(in crate::log) struct InFlight {
    stamp: CleanStamp,
    /// The `.cleaned` files' base of the group the step writes (or the discard job removes),
    /// if any.
    base: Option<i64>,
    /// The pass's phase when handed out (`Log::cleaning_phase`); None: a discard job, of no
    /// pass in flight.
    pub(in crate::log) phase: Option<&'static str>,
    /// The pass was aborted meanwhile: the report is dropped (shared with the job).
    aborted: Arc<AtomicBool>,
    /// The job writes the pass's clean point, this one (the pass's last job).
    point: Option<i64>,
    /// The job, until the owner takes it.
    job: Option<CleanJob>,
}

impl CleanJob {
    /// Runs the step (blocking: reads, writes and syncs of the `.cleaned` file; run it where
    /// that stops nobody else). A second run of the same job does nothing and fails.
    pub fn run(&self) -> Cleaned {
        let work = self.work.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(Work { mut pass, task }) = work else {
            return Cleaned { stamp: self.stamp, pass: None, discarded: false, result: Err(LogError::Failed("a cleaning step ran twice".into())) };
        };
        let mut discarded = false;
        let result = self.fence.pass(|| match task {
            Task::Step { view, now, budget } => {
                let p = pass.as_mut().expect("a step holds its pass");
                let stepped = match self.aborted.load(Ordering::SeqCst) {
                    true => Ok((0, Stop::Nothing)),
                    false => p.step(&view, now, budget),
                };
                // Aborted before or while it ran: the report is dropped, and the files are this
                // job's to remove (no step of a later pass runs before its report).
                if !self.aborted.load(Ordering::SeqCst) {
                    return stepped;
                }
                discarded = true;
                let base = p.group_base();
                drop(pass.take());
                base.map_or(Ok(()), |base| view.remove_cleaned(base)).map(|()| (0, Stop::Nothing))
            }
            // The report reads no stop of a point job (`Log::pointed`).
            Task::Point { disk, path, offset } => write_atomically(disk.as_ref(), &path, offset.to_string().as_bytes()).map(|()| (0, Stop::Nothing)).map_err(super::super::io_err("write", &path)),
            Task::Discard { disk, dir, base, seg } => {
                discarded = true;
                drop((seg, pass.take()));
                cleaner::remove_cleaned(disk.as_ref(), &dir, base).map(|()| (0, Stop::Nothing))
            }
        });
        Cleaned { stamp: self.stamp, pass, discarded, result }
    }

    /// The clean point it writes, when it is a pass's last job (None: a step).
    pub fn clean_point(&self) -> Option<i64> {
        self.point
    }

    /// Whether it ran after its log was let go, and so did nothing (`log::fence`).
    pub fn fenced(done: &Cleaned) -> bool {
        super::super::fence::did_nothing(&done.result)
    }

    /// The report of a job whose run ended without one (`why`): the pass is lost, and its
    /// files go when the report comes.
    pub fn lost(&self, why: String) -> Cleaned {
        Cleaned { stamp: self.stamp, pass: None, discarded: false, result: Err(LogError::Failed(why)) }
    }
}

impl std::fmt::Debug for CleanJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.point {
            Some(point) => write!(f, "CleanJob(step {}: the clean point at {point})", self.stamp.step),
            None => write!(f, "CleanJob(step {})", self.stamp.step),
        }
    }
}

impl PartialEq for CleanJob {
    fn eq(&self, other: &CleanJob) -> bool {
        Arc::ptr_eq(&self.work, &other.work)
    }
}

impl Eq for CleanJob {}

impl std::fmt::Debug for Cleaned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.result {
            Ok((bytes, stop)) => write!(f, "Cleaned(step {}: {bytes} bytes, {stop:?})", self.stamp.step),
            Err(e) => write!(f, "Cleaned(step {} failed: {e})", self.stamp.step),
        }
    }
}

impl Log {
    /// With deferral on: what needs the log before the step (a group to rewrite, or the
    /// pass's end), then the step itself handed out as a job.
    pub(super) fn hand_out(&mut self, mut pass: Box<Pass>, now: u64, budget: u64) -> Result<Step, LogError> {
        if matches!(pass.phase, Phase::Rewrite { group: None, .. }) {
            if self.no_group_left(&pass) {
                let (disk, path, offset) = (self.disk.clone(), self.dir.join(cleaner::CLEANER_CHECKPOINT_FILE), pass.stats.to);
                return Ok(self.hand_out_job(pass, Task::Point { disk, path, offset }, Some(offset)));
            }
            match self.apply(&mut pass, Stop::NeedGroup, now) {
                Ok(Some(stats)) => return self.settle(pass, Ok(Progress::Done(0, stats))),
                Ok(None) => {}
                Err(e) => return self.settle(pass, Err(e)),
            }
        }
        let view = self.view_for(&pass, budget);
        Ok(self.hand_out_job(pass, Task::Step { view, now, budget }, None))
    }

    fn hand_out_job(&mut self, pass: Box<Pass>, task: Task, point: Option<i64>) -> Step {
        let (base, phase) = (pass.group_base(), Some(pass.phase_name()));
        self.hold_job(Work { pass: Some(pass), task }, base, phase, point, false);
        Step::Working { bytes: 0 }
    }

    /// Puts `work` in the slot of the cleaning job in flight, for the owner to take.
    fn hold_job(&mut self, work: Work, base: Option<i64>, phase: Option<&'static str>, point: Option<i64>, aborted: bool) {
        let d = &mut self.deferred;
        d.clean_steps += 1;
        let stamp = CleanStamp { serial: d.marks().0, step: d.clean_steps };
        let aborted = Arc::new(AtomicBool::new(aborted));
        let job = CleanJob { work: Arc::new(Mutex::new(Some(work))), stamp, point, aborted: aborted.clone(), fence: d.fence.clone() };
        d.cleaning = Some(InFlight { stamp, base, phase, aborted, job: Some(job), point });
    }

    /// Lets go of a dropped pass's group at `base` — its `.cleaned` files, `seg` (its open
    /// segment, when the group is out of the pass) and `pass` — in a discard job (deferral on;
    /// see the module header), or here. Wherever a pass is dropped the slot is free: the pass
    /// was between steps, or its job's report (or untaken job) has just left it.
    pub(in crate::log) fn discard(&mut self, pass: Option<Box<Pass>>, seg: Option<Segment>, base: i64) {
        if !self.deferred.on || self.deferred.cleaning.is_some() {
            debug_assert!(!self.deferred.on, "a pass dropped while a cleaning job is in flight");
            drop((pass, seg));
            let _ = cleaner::remove_cleaned(self.disk.as_ref(), &self.dir, base);
            return;
        }
        let task = Task::Discard { disk: self.disk.clone(), dir: self.dir.clone(), base, seg };
        self.hold_job(Work { pass, task }, Some(base), None, None, true);
    }

    /// A truncation waits for the clean point's job: its own job may write a lower point.
    pub(in crate::log) fn refuse_cut_while_pointing(&self) -> Result<(), LogError> {
        match self.deferred.cleaning.as_ref().and_then(|f| f.point) {
            Some(point) => Err(LogError::Busy(format!("{}: the clean point's write (to {point}) is in flight", self.dir.display()))),
            None => Ok(()),
        }
    }

    /// The cleaning step the last turn handed out, once (deferral on).
    pub fn take_clean(&mut self) -> Option<CleanJob> {
        self.deferred.cleaning.as_mut().and_then(|f| f.job.take())
    }

    /// The pass was aborted: a step in flight loses its report, and one not yet taken by the
    /// owner never runs (its pass goes now, its group's files, if any, in a discard job). A
    /// discard job in flight has nothing to abort.
    pub(super) fn abort_clean_job(&mut self) {
        let Some(flight) = &mut self.deferred.cleaning else { return };
        if flight.phase.is_none() {
            return; // a discard job: there is nothing left to abort
        }
        flight.aborted.store(true, Ordering::SeqCst);
        if let Some(job) = flight.job.take() {
            let base = flight.base;
            self.deferred.cleaning = None;
            let pass = job.work.lock().unwrap_or_else(|p| p.into_inner()).take().and_then(|w| w.pass);
            self.drop_pass(pass, base);
        }
    }

    /// A [`CleanJob`] of this log came back: what its stop needs of the log is applied, and the
    /// pass goes on (or ends) as after an inline step. A report of another log changes nothing;
    /// one of a pass aborted meanwhile, or of a job that did not run, hands the step's
    /// `.cleaned` files to a discard job unless the job removed them; a failed step ends the
    /// pass, and a failed removal is returned for a line. Returns what the step did, as
    /// [`Log::clean_step`] does.
    pub fn cleaned(&mut self, done: Cleaned, now: u64) -> Result<Step, LogError> {
        if self.deferred.cleaning.as_ref().is_none_or(|f| f.stamp != done.stamp) {
            return Ok(Step::Working { bytes: 0 });
        }
        let flight = self.deferred.cleaning.take().expect("checked above");
        let aborted = flight.aborted.load(Ordering::SeqCst);
        if let Some(point) = flight.point {
            return self.pointed(aborted, point, done);
        }
        if done.discarded {
            // A leftover is harmless: a later pass of the group truncates its `.cleaned` files,
            // a swap removes a stale `B.txnindex.cleaned` before its commit (`cleaner::swap_in`),
            // and an open removes them as strays. The error is the owner's line; the log stays.
            return done.result.map(|_| Step::Working { bytes: 0 });
        }
        // Aborted meanwhile, run after its log was let go, or of a log gone offline since: the
        // pass ends here.
        let dropped = aborted || CleanJob::fenced(&done) || self.failed.is_some();
        let (pass, result) = match (dropped, done.pass) {
            (false, Some(pass)) => (pass, done.result),
            (_, pass) => {
                self.drop_pass(pass, flight.base);
                return match done.result {
                    Err(e) if !dropped => Err(e),
                    _ => Ok(Step::Working { bytes: 0 }),
                };
            }
        };
        let mut pass = pass;
        let progress = result.and_then(|(bytes, stop)| {
            Ok(match self.apply(&mut pass, stop, now)? {
                Some(stats) => Progress::Done(bytes, stats),
                None => Progress::More(bytes),
            })
        });
        self.settle(pass, progress)
    }

    /// The clean point's job came back (see the module header): memory takes the point unless
    /// the job ran after its log was let go, and the pass ends — with its stats, its error, or
    /// (aborted meanwhile, or the log offline) neither.
    fn pointed(&mut self, aborted: bool, point: i64, done: Cleaned) -> Result<Step, LogError> {
        if CleanJob::fenced(&done) {
            return Ok(Step::Working { bytes: 0 });
        }
        self.cleaned_to = self.cleaned_to.max(point);
        let stats = done.pass.map(|pass| pass.stats.clone());
        match done.result {
            _ if aborted || self.failed.is_some() => Ok(Step::Working { bytes: 0 }),
            Err(e) => Err(e),
            Ok(_) => Ok(Step::Done { bytes: 0, stats }),
        }
    }
}
