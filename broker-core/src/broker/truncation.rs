//! A follower's truncation off the node's gate (issue 32): the decision that cuts a replica's
//! log changes memory only (`log::cut`), and everything that blocks — the log's syncs, file
//! cut and checkpoint, the producer-state rebuild after it (reading the batches from the newest
//! producer-state snapshot on, and bringing the aborted-transaction index in line), and a
//! DeleteRecords floor brought down to the new end — is one [`TruncateJob`] the shell runs and
//! reports back ([`Broker::truncated`]), whose result a decision applies.
//!
//! Until the report the replica's producer state is the one from before the cut, which may
//! know batches the cut removed: so the partition takes no append (the log refuses them), is
//! not fetched for (`Broker::following`), and, should the metadata make it leader meanwhile,
//! answers LEADER_NOT_AVAILABLE to every request a leader serves (`Partition::check_lead`) and
//! tells the observer no last stable offset — so no idempotent retry is judged, no transaction
//! marker checked, no last stable offset or aborted list served from stale state. A report for
//! a log reopened since (its serial) is dropped and vouches for nothing. Never decides where to
//! cut: that is `follower`'s.

use super::partition::replay;
use super::producer::ProducerStates;
use super::{Action, Broker, Error, Level};
use crate::log::{dir, AbortedFix, CutJob, CutStamp, Log, LogError};
use crate::storage::Disk;
use std::path::PathBuf;
use std::sync::Arc;

/// A truncation's job: the log's (`log::CutJob`), then the replay and the floor. Clone shares
/// one job (it runs once); two are equal when they are the same job.
#[derive(Clone, PartialEq, Eq)]
pub struct TruncateJob {
    cut: CutJob,
    /// Whether the producer state is rebuilt by a replay (a full truncation leaves none).
    rebuild: bool,
    floor: Option<Floor>,
}

/// A DeleteRecords floor above the new log end, brought down to it (`log_start`).
#[derive(Clone)]
struct Floor {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    offset: i64,
}

impl PartialEq for Floor {
    fn eq(&self, other: &Floor) -> bool {
        (&self.dir, self.offset) == (&other.dir, other.offset)
    }
}

impl Eq for Floor {}

/// A finished [`TruncateJob`]: the rebuilt producer state and the index fix, or why not.
pub struct Truncated {
    stamp: CutStamp,
    result: Result<Option<(ProducerStates, AbortedFix)>, LogError>,
}

impl TruncateJob {
    /// Does the truncation's IO, then the replay (blocking: run it where that stops nobody
    /// else). A failure anywhere fails the whole job, and the report takes the log offline.
    pub fn run(&self) -> Truncated {
        let result = self.cut.run_then(|tail| {
            if let Some(f) = &self.floor {
                dir::write_log_start(f.disk.as_ref(), &f.dir, f.offset)?;
            }
            if !self.rebuild {
                return Ok(None);
            }
            let replay = replay(&tail.batches)?;
            let fix = tail.fix_aborted(replay.from, replay.aborted)?;
            Ok(Some((replay.producers, fix)))
        });
        Truncated { stamp: self.cut.stamp, result }
    }

    /// Whether `done` ran after its log was let go, and so did nothing (`log::fence`).
    pub fn fenced(done: &Truncated) -> bool {
        crate::log::did_nothing(&done.result)
    }

    /// The report of a job whose run ended without one (`why`): the log goes offline, as after
    /// a failed truncation, and reopening recovers it.
    pub fn lost(&self, why: String) -> Truncated {
        Truncated { stamp: self.cut.stamp, result: Err(LogError::Failed(why)) }
    }
}

impl std::fmt::Debug for TruncateJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TruncateJob({:?}, rebuild {})", self.cut, self.rebuild)
    }
}

impl std::fmt::Debug for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.result {
            Ok(_) => write!(f, "Truncated(to {})", self.stamp.end),
            Err(e) => write!(f, "Truncated(to {}, failed: {e})", self.stamp.end),
        }
    }
}

/// The job `log` owes after a truncation that cut it in memory (deferral on), with the
/// producer-state rebuild when `rebuild`; None when the log truncated inline (or not at all).
/// The broker's followers and the crash rounds of `sim` take it so.
pub fn owed_truncation(log: &mut Log, rebuild: bool) -> Option<TruncateJob> {
    log.take_cut().map(|cut| TruncateJob { cut, rebuild, floor: None })
}

/// Applies a finished job to `log` and its replica's `producers`: the cut counts as durable
/// and the rebuilt state and index are taken. `Ok(false)`: the report is not this log's
/// truncation in flight (the log was reopened since) and changed nothing. `Err`: the job
/// failed, and the log is offline now.
pub fn apply_truncated(log: &mut Log, producers: &mut ProducerStates, done: Truncated) -> Result<bool, LogError> {
    if log.cut_in_flight() != Some(done.stamp) {
        return Ok(false);
    }
    match done.result {
        Err(e) => {
            let reason = LogError::Failed(e.to_string());
            log.cut_done(done.stamp, Err(e));
            Err(reason)
        }
        Ok(rebuilt) => {
            if !log.cut_done(done.stamp, Ok(())) {
                return Ok(false); // offline meanwhile: reopening decides what survived
            }
            if let Some((state, fix)) = rebuilt {
                *producers = state;
                log.adopt_aborted(fix);
            }
            Ok(true)
        }
    }
}

impl Broker {
    /// After `name`-`p`'s log was cut: the producer state rebuilt when `rebuild` (a full
    /// truncation leaves none) and a DeleteRecords floor above the new end brought down to it.
    /// Memory changes now; the IO is the job pushed to `out`, or done here for a log that
    /// truncated inline.
    pub(super) fn after_truncation(&mut self, name: &str, p: i32, rebuild: bool, out: &mut Vec<Action>) -> Result<(), Error> {
        let (dir, disk) = (self.partition_dir(name, p), self.disk.clone());
        let part = self.local_mut(name, p)?;
        let end = part.leo();
        let lowered = part.start_floor > end;
        if lowered {
            part.start_floor = end;
        }
        let Some(mut job) = owed_truncation(&mut part.log, rebuild) else {
            if rebuild {
                part.rebuild_producers()?;
            }
            if lowered {
                dir::write_log_start(disk.as_ref(), &dir, end)?;
            }
            return Ok(());
        };
        job.floor = lowered.then_some(Floor { disk, dir, offset: end });
        out.push(Action::Truncate { topic: name.to_string(), partition: p, job });
        Ok(())
    }

    /// A truncation's job of `name`-`p` ([`Action::Truncate`]) came back: the cut counts as
    /// durable, the rebuilt producer state takes the stale one's place, and the partition
    /// takes appends, fetches and (if it leads) requests again; a failed job took the log
    /// offline. A report for another log than the one open is dropped.
    pub fn truncated(&mut self, name: &str, p: i32, done: Truncated, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let (me, observer) = (self.config.node_id, self.config.observer.clone());
        if TruncateJob::fenced(&done) {
            out.push(Action::Log(Level::Info, format!("{name}-{p}: a truncation's job ran after its log was let go (reopened or deleted) and did nothing")));
        }
        let Some(part) = self.partitions.get_mut(name, p) else { return out };
        match apply_truncated(&mut part.log, &mut part.producers, done) {
            Ok(true) => {}
            Ok(false) => return out,
            Err(e) => out.push(Action::Log(Level::Error, format!("{name}-{p}: truncating: {e}"))),
        }
        if let Some(job) = part.log.take_sync() {
            out.push(Action::Sync { topic: name.to_string(), partition: p, job });
        }
        // The cut is durable now: a leader counts the whole log again.
        part.replication.on_append(part.counted_end());
        part.observed(&observer, me, name, p, now);
        // A leader refused requests meanwhile, and a follower fetched nothing: both go on.
        out.push(Action::Wake);
        self.note_log(name, p);
        out
    }
}
