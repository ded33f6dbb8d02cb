//! Syncs a log owes, run by its owner outside any lock. A broker's log does not fsync inside
//! an append: when the flush policy calls for a sync, or a roll leaves a full segment to make
//! durable, the log notes it, and its owner takes a [`SyncJob`] ([`Log::take_sync`]), runs it
//! where blocking is harmless, and reports back ([`Log::synced`]). So one partition's fsync
//! stops nothing but what waits for it (Kafka holds only that partition's log lock across its
//! flush, and flushes a rolled segment in the background).
//!
//! What must hold, whatever order jobs finish in and whatever happens meanwhile:
//! * the recovery point moves up to a job's end only when the job synced every segment holding
//!   data between the recovery point and that end, and the directory if segment files came or
//!   went: each job covers everything not yet known durable when it was taken, so any job that
//!   completes vouches for its whole range, even ahead of an older one;
//! * never across a cut: a job taken before the log end moved down (a truncation) or before the
//!   log was reopened vouches for nothing, since its range may hold other bytes now; and no job
//!   is handed out while a truncation's own job is in flight (`log::cut`: its file cut, syncs
//!   and checkpoint), so no write lands past a cut the files do not have yet;
//! * a failed job takes the log offline, as a failed inline flush does;
//! * what the flush policy asked for counts as written only once synced: [`Log::policy_end`] is
//!   the end a leader may count for its high watermark, so no record the policy calls durable is
//!   committed, read or acknowledged before its sync.
//!
//!
//! Writes likewise ([`Log::defer_writes`], the write-behind): an append stages its batch in the
//! segment's overlay (`log::overlay`) instead of writing it, and the next job writes what is
//! staged before anything else it does. [`Log::written_end`] is the end its reports confirmed;
//! below it the file (the page cache) holds every byte, so a process that dies loses nothing
//! below it. A leader counts no record for its high watermark before it is written, an acks=1
//! answer waits for it, and a truncation is refused ([`LogError::Busy`]) while a job that
//! writes is in flight, as during a cleaning swap.
//!
//! Truncations likewise (`log::cut`): with deferral on, a truncation changes memory and removes
//! names only, and its syncs, file cut and checkpoint are a job the owner runs and reports
//! ([`Log::take_cut`], [`Log::cut_done`]); until then the log takes no append.
//!
//! A log whose owner never takes jobs (the controller's metadata log, tests) writes and syncs
//! inline as before: deferral is switched on by [`Log::defer_syncs`] and [`Log::defer_writes`].

use super::durability::Owed;
use super::region::SegmentLog;
use super::{Log, LogError};
use crate::storage::{Disk, DiskFile};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Tells one opened log from another at the same path (a log reopened after a failure, a topic
/// deleted and created again): a job of the old one vouches for nothing in the new one.
static serial_next: AtomicU64 = AtomicU64::new(1);

/// The deferral state of one log.
#[derive(Debug)]
pub(super) struct Deferred {
    /// Syncs go to the owner as jobs instead of happening inline.
    pub(super) on: bool,
    /// A sync is owed (the flush policy or a roll asked for one) and no job was taken since.
    pub(super) due: bool,
    /// The log end after the last append the flush policy asked a sync for.
    pub(super) policy_end: i64,
    serial: u64,
    /// Times the log end moved down (truncations).
    pub(super) cuts: u64,
    /// Times a segment file was created or removed.
    pub(super) dir_changes: u64,
    /// A cleaning step handed to the owner as a job, until its report (`log::pass::job`).
    pub(super) cleaning: Option<super::pass::InFlight>,
    /// Cleaning steps handed out so far: each job's stamp.
    pub(super) clean_steps: u64,
    /// Appends are staged for the owner's jobs to write (the write-behind).
    pub(super) behind: bool,
    /// Everything below it is written (reports confirmed it), with `behind` on.
    written_end: i64,
    /// The log end when the last job that writes was taken.
    write_asked: i64,
    /// Jobs that write, taken and not reported back yet.
    writes_in_flight: u32,
    /// A truncation whose files are the owner's job, until its report (`log::cut`).
    pub(super) cutting: Option<super::cut::InFlight>,
    /// Every job of this log runs inside it; closed when the log is let go (`log::fence`).
    pub(super) fence: super::fence::Fence,
}

impl Deferred {
    pub(super) fn new() -> Deferred {
        Deferred { on: false, due: false, policy_end: 0, serial: serial_next.fetch_add(1, Ordering::Relaxed), cuts: 0, dir_changes: 0, cleaning: None, clean_steps: 0, behind: false, written_end: 0, write_asked: 0, writes_in_flight: 0, cutting: None, fence: Default::default() }
    }

    /// Everything below `end` is written (a flush wrote what was staged before it synced).
    pub(super) fn written_to(&mut self, end: i64) {
        self.written_end = self.written_end.max(end);
    }

    /// Which log this is and how often it was cut: what a sync made outside the log (a job, a
    /// checkpoint's file-system sync) checks before it vouches for anything.
    pub(super) fn marks(&self) -> (u64, u64) {
        (self.serial, self.cuts)
    }
}

/// What a job covered, checked when it comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncStamp {
    serial: u64,
    /// The log end when the job was taken: everything below it is written, and with `syncs`
    /// durable, once the job is done.
    pub upto: i64,
    cuts: u64,
    dir_changes: u64,
    /// What the log owed when the job was taken (`OwedList::mark`): the job pays that.
    owed: u64,
    /// The job writes staged bytes, and syncs: what its report confirms.
    writes: bool,
    syncs: bool,
}

impl SyncStamp {
    /// Whether the job synced anything (else it only wrote staged appends).
    pub fn syncs(&self) -> bool {
        self.syncs
    }
}

/// The writes and syncs a log owed when its owner took them: staged appends, then segment
/// files, the directory and whatever else it owed. Holds its own handles, so running it needs no access to the log.
/// Two jobs are equal when they cover the same range of the same log.
#[derive(Clone)]
pub struct SyncJob {
    /// Segments with staged bytes, written first (the write-behind).
    writes: Vec<(Arc<SegmentLog>, Arc<std::path::Path>)>,
    files: Vec<(Arc<SegmentLog>, Arc<std::path::Path>)>,
    dir: Option<PathBuf>,
    owed: Vec<Owed>,
    disk: Arc<dyn Disk>,
    fence: super::fence::Fence,
    pub stamp: SyncStamp,
}

impl std::fmt::Debug for SyncJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SyncJob(upto {}, {} files)", self.stamp.upto, self.files.len())
    }
}

impl PartialEq for SyncJob {
    fn eq(&self, other: &SyncJob) -> bool {
        self.stamp == other.stamp
    }
}

impl Eq for SyncJob {}

impl SyncJob {
    /// Does the writes, then the syncs (blocking: run it where that stops nobody else). Oldest
    /// segment first, then the directory, then what else was owed.
    /// A job of a log let go since does nothing (`log::fence`): its staged bytes would land in
    /// the file a reopened log appends to.
    pub fn run(&self) -> Result<(), LogError> {
        self.fence.pass(|| self.run_inside())
    }

    fn run_inside(&self) -> Result<(), LogError> {
        for (file, path) in &self.writes {
            file.write_out().map_err(super::io_err("write", path))?;
        }
        for (file, path) in &self.files {
            file.sync().map_err(super::io_err("fdatasync", path))?;
        }
        if let Some(dir) = &self.dir {
            self.disk.sync_dir(dir).map_err(super::io_err("fsync directory", dir))?;
        }
        for owed in &self.owed {
            owed.sync(self.disk.as_ref())?;
        }
        Ok(())
    }

    /// The bytes it writes that are still staged: a small job is cheap enough to run where a
    /// large one must not (the shell decides).
    pub fn staged_bytes(&self) -> u64 {
        self.writes.iter().map(|(f, _)| f.staged_bytes()).sum()
    }

    /// Whether it syncs anything (else it only writes).
    pub fn syncs(&self) -> bool {
        self.stamp.syncs
    }
}

impl Log {
    /// From now on syncs the flush policy or a roll call for are left to the owner's jobs, and
    /// so is closing the files of deleted segments ([`Log::take_released`]).
    pub fn defer_syncs(&mut self) {
        self.deferred.on = true;
    }

    /// From now on appends are staged and written by the owner's jobs (see the module header).
    pub fn defer_writes(&mut self) {
        let end = self.log_end_offset();
        let d = &mut self.deferred;
        (d.behind, d.written_end, d.write_asked) = (true, end, end);
    }

    /// The end below which every appended byte is written (the log end unless writes are
    /// deferred).
    pub fn written_end(&self) -> i64 {
        match self.deferred.behind {
            true => self.deferred.written_end.min(self.log_end_offset()),
            false => self.log_end_offset(),
        }
    }

    /// A truncation must wait while a job that writes is in flight: its bytes could land past
    /// the cut.
    pub(super) fn refuse_cut_while_writing(&self) -> Result<(), LogError> {
        match self.deferred.writes_in_flight {
            0 => Ok(()),
            n => Err(LogError::Busy(format!("{}: {n} write jobs in flight", self.dir.display()))),
        }
    }

    /// Notes a sync owed instead of doing it (deferral on); false when deferral is off.
    pub(super) fn defer_sync(&mut self, by_policy: bool) -> bool {
        if !self.deferred.on {
            return false;
        }
        self.deferred.due = true;
        if by_policy {
            self.deferred.policy_end = self.log_end_offset();
            self.unflushed_records = 0;
            self.unflushed_since_ms = None;
        }
        true
    }

    /// A segment file was created or removed: the directory needs a sync.
    pub(super) fn dir_changed(&mut self) {
        self.dir_dirty = true;
        self.deferred.dir_changes += 1;
    }

    /// The log end moved down: jobs taken before vouch for nothing.
    pub(super) fn cut_made(&mut self) {
        let end = self.log_end_offset();
        let d = &mut self.deferred;
        d.cuts += 1;
        d.policy_end = d.policy_end.min(end);
        d.written_end = d.written_end.min(end);
        d.write_asked = d.write_asked.min(d.written_end);
    }

    /// The job owed since the last one, if any: the segments with staged bytes to write, and,
    /// when a sync is owed, every segment with data at or past the recovery point, the
    /// directory if it changed, and what else the log owes. None when nothing is owed, the
    /// log is offline, or a truncation's job is in flight (`log::cut`: then after its report).
    pub fn take_sync(&mut self) -> Option<SyncJob> {
        if self.deferred.cutting.is_some() {
            // A write must not overtake the truncation's file cut; what is owed stays owed.
            return None;
        }
        let end = self.log_end_offset();
        let writes_due = self.deferred.behind && self.deferred.write_asked < end;
        let syncs = std::mem::take(&mut self.deferred.due);
        if !(syncs || writes_due) || self.failed.is_some() {
            return None;
        }
        let writes = match self.deferred.behind {
            true => self.segments_past(self.deferred.written_end),
            false => Vec::new(),
        };
        let files = match syncs {
            true => self.segments_past(self.recovery_point),
            false => Vec::new(),
        };
        let d = &mut self.deferred;
        if writes_due {
            (d.write_asked, d.writes_in_flight) = (end, d.writes_in_flight + 1);
        }
        let stamp = SyncStamp { serial: d.serial, upto: end, cuts: d.cuts, dir_changes: d.dir_changes, owed: self.owed.mark(), writes: writes_due, syncs };
        let dir = (syncs && self.dir_dirty).then(|| self.dir.clone());
        let owed = match syncs {
            true => self.owed.things(),
            false => Vec::new(),
        };
        Some(SyncJob { writes, files, dir, owed, disk: self.disk.clone(), fence: self.deferred.fence.clone(), stamp })
    }

    /// The `.log` files (and paths) of the segments holding data at or past `from`.
    pub(super) fn segments_past(&self, from: i64) -> Vec<(Arc<SegmentLog>, Arc<std::path::Path>)> {
        let end = self.log_end_offset();
        let segs = self.segments.iter().enumerate();
        segs.filter(|(i, _)| self.segments.get(i + 1).map_or(end, |n| n.base_offset) > from).map(|(_, seg)| seg.sync_handle()).collect()
    }

    /// Writes what is staged now, in the caller (a clean shutdown, after which no job runs):
    /// everything appended is then in the page cache, and the checkpoint that follows vouches
    /// for it. A failed write takes the log offline.
    pub fn write_staged(&mut self) -> Result<(), LogError> {
        if !self.deferred.behind || self.failed.is_some() {
            return Ok(());
        }
        let end = self.log_end_offset();
        for (file, path) in self.segments_past(self.deferred.written_end) {
            if let Err(e) = file.write_out() {
                let e = super::io_err("write", &path)(e);
                self.go_offline(format!("write failed: {e}"), false);
                return Err(e);
            }
        }
        self.deferred.written_to(end);
        Ok(())
    }

    /// The files of segments deleted since the last call, for the owner to close off its lock
    /// (deferral on; otherwise deletions close them at once).
    pub fn take_released(&mut self) -> Option<super::Released> {
        (!self.released.is_empty()).then(|| super::Released::new(std::mem::take(&mut self.released)))
    }

    /// A job of this log came back. Ok: the recovery point moves up to its end unless the log
    /// was cut or reopened since (see the module header), and what it synced is no longer
    /// owed unless it changed again since. Err: the log goes offline. Returns whether the
    /// recovery point moved.
    pub fn synced(&mut self, stamp: SyncStamp, result: Result<(), LogError>) -> bool {
        if stamp.serial != self.deferred.serial {
            return false;
        }
        if stamp.writes {
            self.deferred.writes_in_flight = self.deferred.writes_in_flight.saturating_sub(1);
        }
        if let Err(e) = result {
            let what = if stamp.syncs { "flush" } else { "write" };
            self.go_offline(format!("{what} failed: {e}"), false);
            return false;
        }
        let end = self.log_end_offset();
        let d = &mut self.deferred;
        if stamp.cuts != d.cuts || self.failed.is_some() {
            return false;
        }
        // Whatever a job did, it first wrote everything staged when it ran.
        d.written_to(stamp.upto.min(end));
        if !stamp.syncs {
            return false;
        }
        // What it synced besides segments is paid even when a later job moved the recovery
        // point past its end first (a roll's index syncs, noted before this job was taken).
        if stamp.dir_changes == d.dir_changes {
            self.dir_dirty = false;
        }
        self.owed.paid_to(stamp.owed);
        if stamp.upto <= self.recovery_point {
            return false;
        }
        self.recovery_point = stamp.upto.min(self.log_end_offset());
        true
    }

    /// The log end a leader may count for its high watermark: the whole log unless the flush
    /// policy asked for a sync not yet done, then only what is synced.
    pub fn policy_end(&self) -> i64 {
        match self.recovery_point >= self.deferred.policy_end {
            true => self.written_end(),
            false => self.recovery_point,
        }
    }

    /// Which opened log this is: a log reopened at the same path is another.
    pub fn serial(&self) -> u64 {
        self.deferred.serial
    }

    /// Whether this job's log is this one (and not a log reopened since at the same path).
    pub fn owns(&self, stamp: &SyncStamp) -> bool {
        stamp.serial == self.deferred.serial
    }
}
