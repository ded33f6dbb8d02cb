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
//!   DeleteRecords) loses the report: the job is marked aborted, and when it comes back its
//!   pass is dropped and its `.cleaned` files removed — not before, since the job may still be
//!   writing them, and no new pass starts until then, so no other pass's files share the names;
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

use super::step::{Stop, View};
use super::{Pass, Phase, Progress, Step};
use super::super::{cleaner, Log, LogError};
use crate::storage::{write_atomically, Disk};
use std::path::PathBuf;
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
    /// Closed once the log is let go: the job then does nothing (`log::fence`).
    fence: super::super::fence::Fence,
}

struct Work {
    pass: Box<Pass>,
    task: Task,
}

enum Task {
    /// A step of the pass.
    Step { view: View, now: u64, budget: u64 },
    /// The pass's end: its clean point written at `path`.
    Point { disk: Arc<dyn Disk>, path: PathBuf, offset: i64 },
}

/// A finished [`CleanJob`]: the pass back, and what the step did or why it failed.
pub struct Cleaned {
    stamp: CleanStamp,
    /// None when the job's task was lost, or it ran twice.
    pass: Option<Box<Pass>>,
    result: Result<(u64, Stop), LogError>,
}

/// The step in flight, until its report.
#[derive(Debug)]
pub(in crate::log) struct InFlight {
    stamp: CleanStamp,
    /// The `.cleaned` files' base of the group the step writes, if any.
    base: Option<i64>,
    /// The pass's phase when handed out (`Log::cleaning_phase`).
    pub(in crate::log) phase: &'static str,
    /// The pass was aborted meanwhile: the report is dropped.
    aborted: bool,
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
        let Some(mut work) = work else {
            return Cleaned { stamp: self.stamp, pass: None, result: Err(LogError::Failed("a cleaning step ran twice".into())) };
        };
        let Work { pass, task } = &mut work;
        let result = self.fence.pass(|| match task {
            Task::Step { view, now, budget } => pass.step(view, *now, *budget),
            // The report reads no stop of a point job (`Log::pointed`).
            Task::Point { disk, path, offset } => write_atomically(disk.as_ref(), path, offset.to_string().as_bytes()).map(|()| (0, Stop::Nothing)).map_err(super::super::io_err("write", path)),
        });
        Cleaned { stamp: self.stamp, pass: Some(work.pass), result }
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
        Cleaned { stamp: self.stamp, pass: None, result: Err(LogError::Failed(why)) }
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
        let d = &mut self.deferred;
        d.clean_steps += 1;
        let stamp = CleanStamp { serial: d.marks().0, step: d.clean_steps };
        let (base, phase) = (pass.group_base(), pass.phase_name());
        let job = CleanJob { work: Arc::new(Mutex::new(Some(Work { pass, task }))), stamp, point, fence: d.fence.clone() };
        d.cleaning = Some(InFlight { stamp, base, phase, aborted: false, job: Some(job), point });
        Step::Working { bytes: 0 }
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
    /// owner never runs (its pass goes now: nothing was written).
    pub(super) fn abort_clean_job(&mut self) {
        let Some(flight) = &mut self.deferred.cleaning else { return };
        flight.aborted = true;
        if let Some(job) = flight.job.take() {
            let base = flight.base;
            self.deferred.cleaning = None;
            let pass = job.work.lock().unwrap_or_else(|p| p.into_inner()).take().map(|w| w.pass);
            self.drop_pass(pass, base);
        }
    }

    /// A [`CleanJob`] of this log came back: what its stop needs of the log is applied, and the
    /// pass goes on (or ends) as after an inline step. A report of another log, of a pass
    /// aborted meanwhile, or of a job that did not run changes nothing but removing the step's
    /// `.cleaned` files; a failed step ends the pass. Returns what the step did, as
    /// [`Log::clean_step`] does.
    pub fn cleaned(&mut self, done: Cleaned, now: u64) -> Result<Step, LogError> {
        if self.deferred.cleaning.as_ref().is_none_or(|f| f.stamp != done.stamp) {
            return Ok(Step::Working { bytes: 0 });
        }
        let flight = self.deferred.cleaning.take().expect("checked above");
        if let Some(point) = flight.point {
            return self.pointed(flight.aborted, point, done);
        }
        // Aborted meanwhile, run after its log was let go, or of a log gone offline since: the
        // pass ends here.
        let dropped = flight.aborted || CleanJob::fenced(&done) || self.failed.is_some();
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
