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
//!   log was reopened vouches for nothing, since its range may hold other bytes now;
//! * a failed job takes the log offline, as a failed inline flush does;
//! * what the flush policy asked for counts as written only once synced: [`Log::policy_end`] is
//!   the end a leader may count for its high watermark, so no record the policy calls durable is
//!   committed, read or acknowledged before its sync.
//!
//! A log whose owner never takes jobs (the controller's metadata log, tests) syncs inline as
//! before: deferral is switched on by [`Log::defer_syncs`].

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
    /// The cleaner's `.cleaned` file grew by `cleaner_sync_bytes` since its last sync: a sync
    /// owed to the owner as a job ([`Log::take_cleaner_sync`]), not done inside the step.
    pub(super) cleaned: Option<SyncJob>,
}

impl Deferred {
    pub(super) fn new() -> Deferred {
        Deferred { on: false, due: false, policy_end: 0, serial: serial_next.fetch_add(1, Ordering::Relaxed), cuts: 0, dir_changes: 0, cleaned: None }
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
    /// The log end when the job was taken: everything below it is durable once the job is done.
    pub upto: i64,
    cuts: u64,
    dir_changes: u64,
    /// What the log owed when the job was taken (`OwedList::mark`): the job pays that.
    owed: u64,
}

/// The syncs a log owed when its owner took them: segment files, then the directory and
/// whatever else it owed. Holds its own handles, so running it needs no access to the log.
/// Two jobs are equal when they cover the same range of the same log.
#[derive(Clone)]
pub struct SyncJob {
    files: Vec<(Arc<SegmentLog>, PathBuf)>,
    dir: Option<PathBuf>,
    owed: Vec<Owed>,
    disk: Arc<dyn Disk>,
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
    /// Does the syncs (blocking: run it where that stops nobody else). Oldest segment first,
    /// then the directory, then what else was owed.
    pub fn run(&self) -> Result<(), LogError> {
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
}

impl Log {
    /// From now on syncs the flush policy or a roll call for are left to the owner's jobs, and
    /// so is closing the files of deleted segments ([`Log::take_released`]).
    pub fn defer_syncs(&mut self) {
        self.deferred.on = true;
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
        self.deferred.cuts += 1;
        self.deferred.policy_end = self.deferred.policy_end.min(self.log_end_offset());
    }

    /// The sync owed since the last job, if any: every segment with data at or past the
    /// recovery point, the directory if it changed, and what else the log owes. None when
    /// nothing is owed or the log is offline.
    pub fn take_sync(&mut self) -> Option<SyncJob> {
        if !std::mem::take(&mut self.deferred.due) || self.failed.is_some() {
            return None;
        }
        let end = self.log_end_offset();
        let rp = self.recovery_point;
        let files = self
            .segments
            .iter()
            .enumerate()
            .filter(|(i, _)| self.segments.get(i + 1).map_or(end, |n| n.base_offset) > rp)
            .map(|(_, seg)| seg.sync_handle())
            .collect();
        let d = &self.deferred;
        let stamp = SyncStamp { serial: d.serial, upto: end, cuts: d.cuts, dir_changes: d.dir_changes, owed: self.owed.mark() };
        Some(SyncJob { files, dir: self.dir_dirty.then(|| self.dir.clone()), owed: self.owed.things(), disk: self.disk.clone(), stamp })
    }

    /// The files of segments deleted since the last call, for the owner to close off its lock
    /// (deferral on; otherwise deletions close them at once).
    pub fn take_released(&mut self) -> Option<super::Released> {
        (!self.released.is_empty()).then(|| super::Released::new(std::mem::take(&mut self.released)))
    }

    /// The sync the cleaner's output owes, if a step left one (deferral on; see
    /// [`Log::cleaner_job`]).
    pub fn take_cleaner_sync(&mut self) -> Option<SyncJob> {
        self.deferred.cleaned.take()
    }

    /// A job over the cleaner's `.cleaned` file alone that vouches for nothing in the log (its
    /// end is below any recovery point), since it only keeps the swap's final sync short —
    /// that one, before the rename that commits the swap, stays inside its step. A failure
    /// takes the log offline, as any failed sync does.
    pub(super) fn cleaner_job(&self, file: (Arc<SegmentLog>, PathBuf)) -> SyncJob {
        let d = &self.deferred;
        let stamp = SyncStamp { serial: d.serial, upto: -1, cuts: d.cuts, dir_changes: d.dir_changes, owed: 0 };
        SyncJob { files: vec![file], dir: None, owed: Vec::new(), disk: self.disk.clone(), stamp }
    }

    /// A job of this log came back. Ok: the recovery point moves up to its end unless the log
    /// was cut or reopened since (see the module header), and what it synced is no longer
    /// owed unless it changed again since. Err: the log goes offline. Returns whether the
    /// recovery point moved.
    pub fn synced(&mut self, stamp: SyncStamp, result: Result<(), LogError>) -> bool {
        let d = &self.deferred;
        if stamp.serial != d.serial {
            return false;
        }
        if let Err(e) = result {
            self.go_offline(format!("flush failed: {e}"), false);
            return false;
        }
        if stamp.cuts != d.cuts || self.failed.is_some() || stamp.upto <= self.recovery_point {
            return false;
        }
        if stamp.dir_changes == d.dir_changes {
            self.dir_dirty = false;
        }
        self.owed.paid_to(stamp.owed);
        self.recovery_point = stamp.upto.min(self.log_end_offset());
        true
    }

    /// The log end a leader may count for its high watermark: the whole log unless the flush
    /// policy asked for a sync not yet done, then only what is synced.
    pub fn policy_end(&self) -> i64 {
        match self.recovery_point >= self.deferred.policy_end {
            true => self.log_end_offset(),
            false => self.recovery_point,
        }
    }

    /// Whether this job's log is this one (and not a log reopened since at the same path).
    pub fn owns(&self, stamp: &SyncStamp) -> bool {
        stamp.serial == self.deferred.serial
    }
}
