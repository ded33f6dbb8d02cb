//! The fence between a log and the jobs it hands its owner (issue 32). A job runs off the
//! owner's lock, and may run after the log it was taken from is gone: reopened after a failure
//! (`Broker::reopen_failed`), or its topic deleted (`dir::remove`) and perhaps created again at
//! the same path. Run then, a swap would rename the reopened log's own `B.log.cleaned` into
//! place and remove the segments it reads; a truncation would write its recovery point, clean
//! point or `.txnindex` into the new topic's directory; a write would put the old log's staged
//! bytes into the file the reopened log appends to. A stale report is dropped (`Log::serial`),
//! but the files would already be changed.
//!
//! So every job that touches a log's files (`SyncJob`, `SwapJob`, `CutJob` with the
//! truncation's rebuild) runs inside its log's fence, and whatever lets go of a log closes the
//! fence first ([`Log::close_jobs`]): a job running finishes before the close returns, and one
//! that runs later does nothing and reports so ([`closed`]). Several jobs of one log may run at
//! once (they share the fence); closing waits for all that run. Kafka likewise aborts the
//! cleaner, waiting for its thread, before it renames a log's directory for deletion. The
//! broker fences a replica's open job (`broker::opening`) with a fence of its own the same way;
//! [`Fence::shut`] lets it shut many fences first and then wait only for the opens running.
//!
//! What it must never do: be held across anything but one job's run (a close waits for it), or
//! be taken by a decision (only the close is, and in the simulator no job is ever mid-run when
//! a decision runs, so it never waits there). Closing the files of removed segments
//! (`Released`) needs no fence: a close touches no name.

use super::{Log, LogError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Shared by a log and every job it hands out; closed for good once the log is let go. The
/// broker fences a replica's open job by one of its own (`broker::opening`): the directory's
/// removal waits for the open running in it, and an open that runs later does nothing.
#[derive(Debug, Clone, Default)]
pub struct Fence(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// Closed: held shared by each job running inside, taken whole by the close.
    closed: RwLock<bool>,
    /// Shut ahead of the close ([`Fence::shut`]): no job starts inside any more.
    shut: AtomicBool,
}

/// Why a job that ran after its log was let go did nothing.
const closed_why: &str = "the log was closed before this job ran; it did nothing";

/// The report of a job that ran after its log was let go.
pub(super) fn closed() -> LogError {
    LogError::Failed(closed_why.into())
}

/// Whether a job's `result` is [`closed`]'s: the job did nothing.
pub fn did_nothing<T>(result: &Result<T, LogError>) -> bool {
    matches!(result, Err(LogError::Failed(why)) if why == closed_why)
}

impl Fence {
    /// Runs `job` unless the fence is closed (then nothing, and [`closed`]), keeping it open
    /// until the job ends.
    pub fn pass<T>(&self, job: impl FnOnce() -> Result<T, LogError>) -> Result<T, LogError> {
        if self.0.shut.load(Ordering::Acquire) {
            return Err(closed());
        }
        let closed_now = self.0.closed.read().unwrap_or_else(|p| p.into_inner());
        if *closed_now {
            return Err(closed());
        }
        job()
    }

    /// Shuts it without waiting: no job starts inside any more, one running goes on until
    /// [`Fence::close`]. Shutting many fences first and then closing each waits for the jobs
    /// running at that moment only (one job opening many replicas in turn would otherwise
    /// start the next while the first close waits).
    pub fn shut(&self) {
        self.0.shut.store(true, Ordering::Release);
    }

    /// Closes it: waits for the jobs running inside, and none runs inside again.
    pub fn close(&self) {
        self.shut();
        *self.0.closed.write().unwrap_or_else(|p| p.into_inner()) = true;
    }
}

impl Log {
    /// The log is being let go (reopened, its topic deleted, the replica moved away): waits
    /// for any job of it running off the lock, and makes every job of it that runs later do
    /// nothing. Call before anything changes its directory; the log must not be used after.
    pub fn close_jobs(&self) {
        self.deferred.fence.close();
    }
}
