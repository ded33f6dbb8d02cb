//! The owner of a deferring log in the crash rounds inside cleaning (`crash-log --clean
//! --deferred`): it drives the jobs the log hands out as the broker's shell does
//! (`broker::cleaning`, `server::jobs`), so the process death lands inside them too. Each
//! cleaner turn is one [`Log::clean_step`]; the step's job (or a dropped pass's discard job) is
//! taken, run and reported ([`Log::take_clean`], [`Log::cleaned`]), then the swap the report
//! owes ([`Log::take_swap`], [`Log::swapped`]: with markers removed, its first part removes
//! producer snapshots and writes `B.txnindex.cleaned`), and the syncs the log owes
//! ([`Log::take_sync`], [`Log::synced`]) run between turns, in order or, now and then, with
//! one held late to run after newer ones. Jobs held at a crash die with the process.
//!
//! It tells where a round's death landed when it was inside a job (the first job whose run
//! failed with the process dead), to count. It must never run a job a second time, report a
//! job to a log other than the one it was taken from, or draw from the rounds' own RNG (the
//! inline mode's draws stay the seed's).

use super::CleanRounds;
use crate::disk::{DiskFaults, SimDisk};
use broker_core::broker::replayed_producers;
use broker_core::log::clean::Keep;
use broker_core::log::{file_stem, CleanStats, CleanStep, Log, SyncJob};
use broker_core::storage::Disk;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

/// Most bytes a step reads (drawn per step from 64 up): far below the broker's
/// `cleaner_step_bytes`, so a pass over a few small segments takes many steps, each a job.
const step_bytes_max: usize = 4096;
/// Most turns a pass may take before the rounds call it stuck (a pass of these logs ends in
/// tens of turns).
const turns_max: usize = 100_000;
/// One in this many sync jobs is held late at a turn: it runs at a later one, after newer
/// jobs (a slow fsync), and its range is not durable meanwhile.
const held_late_one_in: u32 = 8;
/// One in this many of the rounds' writes is followed by the broker's checkpoint of the log:
/// a producer-state snapshot at the log end, then a flush and the recovery-point checkpoint.
/// Snapshots are what a pass that removes markers must remove first (`log::pass::markers`).
const checkpoint_one_in: u32 = 6;
/// A swap's marker part is its first few disk calls (a snapshot or two removed, a directory
/// sync, `B.txnindex.cleaned` created, truncated, written, synced) of tens: in a quarter of
/// the rounds the death is drawn again, now and then, to land within this many calls of a
/// swap job's start, so some land in that part.
const swap_aim_ops: u64 = 8;

/// The job the round's death landed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Job {
    Sync,
    Clean,
    /// A swap's job, past its marker part (or with none).
    Swap,
    /// A swap's job, in its marker part: the snapshots' removal, the directory sync after it,
    /// or the write and sync of `B.txnindex.cleaned` (`log::pass::markers`).
    Markers,
}

/// What the log's owner holds between turns, and its own RNG.
pub(super) struct Owner {
    rng: ChaCha8Rng,
    disk: SimDisk,
    dir: PathBuf,
    /// Whether the log's writes are deferred too (the write-behind; half the seeds).
    writes: bool,
    /// Sync jobs taken and not yet run.
    held: Vec<SyncJob>,
    /// Where this round's death landed, when inside a job.
    died_in: Option<Job>,
    /// This round aims its death at the start of swap jobs now and then.
    aim_at_swaps: bool,
    /// Jobs run this seed (to see that the rounds exercise them).
    pub(super) jobs_run: usize,
    /// Print each job and its report to stderr.
    verbose: bool,
}

impl Owner {
    pub(super) fn new(seed: u64, disk: &SimDisk, dir: &Path, verbose: bool) -> Owner {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x636c_6561_6e6a_6f62);
        let writes = rng.gen_bool(0.5);
        Owner { rng, disk: disk.clone(), dir: dir.to_path_buf(), writes, held: Vec::new(), died_in: None, aim_at_swaps: false, jobs_run: 0, verbose }
    }

    /// A freshly opened log: deferral on, as the broker's logs run, and nothing held (what was
    /// held died with the process).
    pub(super) fn start(&mut self, log: &mut Log) {
        log.defer_syncs();
        if self.writes {
            log.defer_writes();
        }
        self.held.clear();
        self.died_in = None;
        self.aim_at_swaps = self.rng.gen_bool(0.25);
    }

    /// The round ends in a crash: jobs held die with the process; where its death landed is
    /// counted.
    pub(super) fn end_round(&mut self, stats: &mut CleanRounds) {
        self.held.clear();
        match self.died_in.take() {
            Some(Job::Sync) => stats.died_in_sync_job += 1,
            Some(Job::Clean) => stats.died_in_clean_job += 1,
            Some(Job::Swap) => stats.died_in_swap_job += 1,
            Some(Job::Markers) => {
                stats.died_in_swap_job += 1;
                stats.died_in_markers += 1;
            }
            None => {}
        }
    }

    /// Notes the first job whose run failed with the process dead (`failure`: its report).
    fn note(&mut self, job: Job, report: &str, failure: Option<String>) {
        self.jobs_run += 1;
        if self.verbose {
            eprintln!("  {job:?} job at op {}: {report}", self.disk.ops());
        }
        if self.died_in.is_none() && failure.is_some_and(|f| f.contains("the process died")) {
            self.died_in = Some(job);
        }
    }

    /// Now and then the broker's checkpoint (see [`checkpoint_one_in`]); its sync is a job.
    pub(super) fn checkpoint(&mut self, log: &mut Log, now: u64) -> Result<(), String> {
        if !self.rng.gen_ratio(1, checkpoint_one_in) {
            return Ok(());
        }
        let state = replayed_producers(log).map_err(|e| format!("producer state: {e}"))?;
        log.write_producer_snapshot(&state.to_snapshot()).map_err(|e| format!("snapshot: {e}"))?;
        log.flush(now).and_then(|_| log.checkpoint()).map_err(|e| format!("checkpoint: {e}"))
    }

    /// Takes the syncs the log owes and runs the held ones in the order taken, each with a
    /// chance of being held late; closes the files of deleted segments. False when the log went
    /// offline (a job failed).
    pub(super) fn serve(&mut self, log: &mut Log) -> bool {
        self.held.extend(log.take_sync());
        if let Some(files) = log.take_released() {
            files.close();
        }
        let mut late = Vec::new();
        for job in std::mem::take(&mut self.held) {
            if self.rng.gen_ratio(1, held_late_one_in) {
                late.push(job);
                continue;
            }
            let result = job.run();
            let report = format!("{job:?}: {result:?}");
            self.note(Job::Sync, &report, result.as_ref().err().map(|e| e.to_string()));
            log.synced(job.stamp, result);
        }
        self.held = late;
        log.failure().is_none()
    }

    /// One whole pass below `upper`, a turn at a time with the broker's jobs between (see the
    /// module header): `Ok(None)` when none was due or it mapped nothing. Err when a step, a
    /// job or the pass failed, or the log went offline.
    pub(super) fn pass(&mut self, log: &mut Log, now: u64, upper: i64, map_bytes: usize, keep: Keep) -> Result<Option<CleanStats>, String> {
        for _ in 0..turns_max {
            let budget = self.rng.gen_range(64..step_bytes_max);
            let mut step = log.clean_step(now, upper, map_bytes, budget, keep).map_err(|e| format!("step: {e}"))?;
            if let Some(job) = log.take_clean() {
                // A sync job may run while the step's job does (the shell runs both).
                if self.rng.gen_bool(0.3) && !self.serve(log) {
                    return Err(format!("offline: {}", log.failure().unwrap_or_default()));
                }
                let done = job.run();
                let text = format!("{done:?}");
                self.note(Job::Clean, &text, text.contains("failed").then_some(text.clone()));
                step = log.cleaned(done, now).map_err(|e| format!("cleaning job: {e}"))?;
            }
            if let Some(job) = log.take_swap() {
                if self.aim_at_swaps && self.rng.gen_ratio(1, 3) {
                    self.aim_death(swap_aim_ops);
                }
                let done = job.run();
                let text = format!("{done:?}");
                let job = if self.in_markers(&text, &log.segment_bases()) { Job::Markers } else { Job::Swap };
                self.note(job, &text, text.contains("failed").then_some(text.clone()));
                log.swapped(done).map_err(|e| format!("swap: {e}"))?;
            }
            if !self.serve(log) {
                return Err(format!("offline: {}", log.failure().unwrap_or_default()));
            }
            match step {
                CleanStep::Idle => return Ok(None),
                CleanStep::Working { .. } => {}
                CleanStep::Done { stats, .. } => return Ok(stats),
            }
        }
        Err(format!("a pass took more than {turns_max} turns"))
    }

    /// Moves the round's death, if it is still ahead, to within `ops` disk calls from now.
    fn aim_death(&mut self, ops: u64) {
        let (now, faults) = (self.disk.ops(), self.disk.faults());
        if let Some(death) = faults.dead_from_op.filter(|&d| d > now) {
            let dead_from_op = Some(death.min(now + self.rng.gen_range(0..ops)));
            self.disk.set_faults(DiskFaults { dead_from_op, ..faults });
        }
    }

    /// Whether a swap job's failure (`text`, its report) is in its marker part: a snapshot's
    /// removal, `B.txnindex.cleaned`'s write or sync, or the directory sync between them (the
    /// swap's own directory syncs come after `B.log.cleaned` is renamed, so one still in the
    /// directory, at one of `bases`, says the renames had not begun).
    fn in_markers(&self, text: &str, bases: &[i64]) -> bool {
        let dir = self.dir.display().to_string();
        let snapshot = text.contains(".snapshot:");
        let index = ["create ", "truncate ", "write ", "sync "].iter().any(|op| text.contains(&format!("failed: {op}"))) && text.contains(".txnindex.cleaned:");
        let cleaned = |base: &i64| self.disk.exists(&self.dir.join(format!("{}.log.cleaned", file_stem(*base))));
        let dir_sync = text.contains(&format!("failed: sync {dir}:")) && bases.iter().any(cleaned);
        snapshot || index || dir_sync
    }
}
