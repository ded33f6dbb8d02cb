//! Seeded crash rounds of the partition log on `SimDisk`: random appends, flushes, checkpoints,
//! rolls and retention, then a crash (mostly power loss), then recovery — over and over.
//! After every recovery the log must be a prefix of what was appended (byte for byte), hold
//! every batch that was synced, have dense offsets, and have indexes that agree with the log;
//! and the producers' state it gives (the newest usable producer-state snapshot, written at each
//! staged checkpoint as the broker does, and the batches after it) and its aborted-transaction
//! index (`.txnindex` files below the snapshot, entries derived by the replay above it) must be
//! what a replay of every batch gives, for a log retention removed nothing from. One producer
//! is transactional: its batches are, and markers end its transactions (commit or abort).
//!
//! The deferred rounds ([`deferred_crash_rounds`]) truncate too, as a follower does: the cut
//! changes memory at once and its IO and producer-state rebuild are a job the owner runs late,
//! out of order or never (`log::cut`, `broker::truncation`); until it reports, a crash may bring
//! back a dense prefix of what the cut removed, never more, and afterwards never any of it.
//!
//! Some of their rounds end in a reopen instead of a crash, as the broker reopens a failed log
//! (`Broker::reopen_failed`): the jobs the old log handed out are not forgotten but run later,
//! against the reopened log's files, and must do nothing (`log::fence`; without it a stale
//! write lands under the reopened log's records). Their reports must change nothing.
//!
//! [`crash_rounds`] runs in plain Rust (a decision-level test: crashes land between calls);
//! [`node_rounds`] runs the same log inside madsim nodes that are killed mid-write
//! (`--cfg madsim` only). Both are used by the test suite and by `cargo sim crash-log`.
//! Nothing here reads a clock or an unseeded RNG.

use broker_core::broker::producer::ProducerStates;
use broker_core::broker::{apply_truncated, owed_truncation, record_appended, replayed_aborted, replayed_producers, restored_producers, TruncateJob};
use broker_core::log::batch::control::{build_marker, MarkerKind};
use broker_core::hash::{fnv1a, fnv_offset};
use broker_core::log::batch::{build, set_producer, set_transactional, validate};
use broker_core::log::{FlushPolicy, Log, LogConfig, LogError};
use broker_core::storage::Disk;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use crate::disk::{CrashMode, DiskFaults, SimDisk};
use std::path::Path;
use std::sync::Arc;
#[cfg(madsim)]
use madsim::runtime::{Handle, Runtime};
#[cfg(madsim)]
use std::sync::Mutex;
#[cfg(madsim)]
use std::time::Duration;

/// What the test knows: every batch ever acknowledged by `append`, by offset order, and how many
/// of them a completed flush made durable.
#[derive(Default)]
pub struct Model {
    /// `(base_offset, stamped bytes)` of every appended batch still possibly in the log.
    pub batches: Vec<(i64, Vec<u8>)>,
    /// Batches below this offset were synced by a completed flush.
    pub synced_below: i64,
    /// The batches a truncation whose job has not reported removed (in order, after
    /// `batches`): until it reports, a crash may bring back a prefix of them.
    pub cut_pending: Vec<(i64, Vec<u8>)>,
}

/// Reads the whole log batch by batch.
pub fn read_all(log: &Log) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let (mut out, mut at) = (Vec::new(), log.log_start_offset());
    log.for_each_batch(at, 1, |_, batch| -> Result<(), Box<dyn std::error::Error>> {
        let h = validate(&batch, usize::MAX).map_err(|e| format!("read at {at}: {e}"))?;
        if h.base_offset != at {
            return Err(format!("offsets not dense: expected a batch at {at}, got {}", h.base_offset).into());
        }
        out.push((at, batch.to_vec()));
        at = h.next_offset();
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The invariants after a recovery; on success the model is cut to what survived.
pub fn check_recovered(log: &Log, model: &mut Model) -> Result<(), String> {
    let got = read_all(log)?;
    let start = model.batches.iter().position(|(o, _)| *o == log.log_start_offset());
    let start = match (start, got.is_empty()) {
        (Some(s), _) => s,
        // Nothing appended survives here (a full truncation started the log over past them).
        (None, true) => {
            model.batches.clear();
            0
        }
        (None, false) => return Err(format!("log starts at {}, not at any appended batch", log.log_start_offset())),
    };
    for (i, (offset, bytes)) in got.iter().enumerate() {
        match model.batches.get(start + i) {
            Some((o, b)) if o == offset && b == bytes => {}
            Some((o, _)) => return Err(format!("batch at offset {offset} differs from the one appended at {o}")),
            None => return Err(format!("batch at offset {offset} was never appended")),
        }
    }
    if log.log_end_offset() < model.synced_below {
        return Err(format!("lost synced data: log ends at {} but everything below {} was synced", log.log_end_offset(), model.synced_below));
    }
    log.verify_indexes()?;
    model.batches.truncate(start + got.len());
    Ok(())
}

fn random_config(rng: &mut ChaCha8Rng) -> LogConfig {
    let flush = match rng.gen_range(0..4) {
        0 => FlushPolicy::Never,
        1 => FlushPolicy::EveryBatch,
        2 => FlushPolicy::EveryMessages(rng.gen_range(2..20)),
        _ => FlushPolicy::EveryMs(rng.gen_range(5..50)),
    };
    LogConfig {
        segment_bytes: rng.gen_range(1024..8192),
        segment_ms: rng.gen_range(50..500),
        index_interval_bytes: rng.gen_range(64..1024),
        retention_bytes: if rng.gen_bool(0.3) { rng.gen_range(8192..32768) } else { -1 },
        flush,
        ..LogConfig::default()
    }
}

/// Idempotent producers the rounds write as (a batch is one of theirs, or none's).
const producers: i64 = 3;

/// The transactional producer's id (the first of [`producers`]).
const transactional: i64 = 1000;

/// A random batch; most carry one of [`producers`]'s ids and its next sequence (`next`), the
/// first producer's transactional; some are that producer's markers.
fn random_batch(rng: &mut ChaCha8Rng, serial: &mut u64, next: &mut [i32; producers as usize], now: u64) -> Vec<u8> {
    if rng.gen_bool(0.1) {
        let kind = if rng.gen_bool(0.5) { MarkerKind::Abort } else { MarkerKind::Commit };
        return build_marker(transactional, 0, kind, 0, now as i64);
    }
    let n = rng.gen_range(1..6);
    let values: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            *serial += 1;
            let len = rng.gen_range(0..300);
            let mut v = format!("v{serial}:").into_bytes();
            v.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(*serial as u8)));
            v
        })
        .collect();
    let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
    let mut b = build(&refs, now as i64);
    if rng.gen_bool(0.8) {
        let p = rng.gen_range(0..producers) as usize;
        set_producer(&mut b, p as i64 + transactional, 0, next[p]);
        next[p] += n as i32;
        if p == 0 {
            set_transactional(&mut b);
        }
    }
    b
}

/// The producer-state invariant after a recovery (see the module header): the state and
/// index as the broker restores them at open.
fn check_producers(log: &mut Log, config: &LogConfig) -> Result<ProducerStates, String> {
    let state = restored_producers(log).map_err(|e| format!("producer state: {e}"))?;
    if config.retention_bytes < 0 {
        let full = replayed_producers(log).map_err(|e| format!("producer state replayed: {e}"))?;
        if state.to_snapshot() != full.to_snapshot() {
            return Err(format!("producer state from snapshot {:?} differs from a full replay", log.producer_snapshot_offsets()));
        }
        let aborted = replayed_aborted(log).map_err(|e| format!("aborted transactions replayed: {e}"))?;
        if log.aborted_transactions() != aborted {
            return Err(format!("aborted-transaction index {:?} (snapshots {:?}, checkpointed {}) differs from a full replay {aborted:?}", log.aborted_transactions(), log.producer_snapshot_offsets(), log.checkpointed_point()));
        }
    }
    Ok(state)
}

/// One seed: `rounds` of open → check → random work → crash. Returns the final log's batches.
/// `verbose` prints each recovery report and crash outcome to stderr.
pub fn crash_rounds(seed: u64, rounds: usize, verbose: bool) -> Result<Vec<(i64, Vec<u8>)>, String> {
    rounds_of(seed, rounds, verbose, false)
}

/// [`crash_rounds`] with the log as the broker runs it: its appends are staged and the syncs it
/// owes (flush policy, rolls) deferred, so each write and sync is a job ([`Log::defer_writes`],
/// [`Log::defer_syncs`]) the owner runs at once, later, out of order, or never (a crash comes
/// first: staged appends die with the process), and deleted files are closed as the owner
/// takes them. The owner also truncates now and then, and its truncation's job (the IO and the
/// producer-state rebuild, whose result replaces the state the rounds keep) meets the same
/// fates. The same seed draws the same work as [`crash_rounds`] plus the truncations; the
/// truncations and the jobs' fates come from their own RNG.
pub fn deferred_crash_rounds(seed: u64, rounds: usize, verbose: bool) -> Result<Vec<(i64, Vec<u8>)>, String> {
    rounds_of(seed, rounds, verbose, true)
}

/// The jobs a deferring log's owner holds, and the RNG that decides when each runs (and when
/// the log is truncated, as a follower's is).
struct Owner {
    rng: ChaCha8Rng,
    jobs: Vec<broker_core::log::SyncJob>,
    /// A truncation's job, with its producer-state rebuild.
    cut: Option<TruncateJob>,
    /// Jobs of logs reopened since (a round that ended in a reopen): run now and then, they
    /// must do nothing, and their reports change nothing.
    stale: Vec<Stale>,
}

/// A job of a log reopened since.
enum Stale {
    Sync(broker_core::log::SyncJob),
    Cut(TruncateJob),
}

impl Owner {
    /// Takes what the log owes, then runs each held job with probability 1/2, in a random
    /// order, reporting each back (a truncation's with the producers' state it rebuilt). False
    /// when a job failed (the log went offline): the crash comes next.
    fn serve(&mut self, log: &mut Log, state: &mut ProducerStates, model: &mut Model, full: bool) -> Result<bool, String> {
        self.jobs.extend(log.take_sync());
        if let Some(files) = log.take_released() {
            files.close();
        }
        if !self.stale.is_empty() && self.rng.gen_bool(0.3) {
            let i = self.rng.gen_range(0..self.stale.len());
            let (failure, end) = (log.failure().map(str::to_string), log.log_end_offset());
            let ran = match self.stale.swap_remove(i) {
                Stale::Sync(job) => {
                    let result = job.run();
                    let ran = format!("{result:?}");
                    log.synced(job.stamp, result);
                    ran
                }
                Stale::Cut(job) => {
                    let done = job.run();
                    let ran = format!("{done:?}");
                    if !matches!(apply_truncated(log, state, done), Ok(false)) {
                        return Err("a reopened log took its old log's truncation report".into());
                    }
                    ran
                }
            };
            if !ran.contains("closed before this job ran") {
                return Err(format!("a job of a log reopened since ran: {ran}"));
            }
            if (log.failure().map(str::to_string), log.log_end_offset()) != (failure, end) {
                return Err("a stale job's report changed the reopened log".into());
            }
        }
        while (!self.jobs.is_empty() || self.cut.is_some()) && self.rng.gen_bool(0.5) {
            let pick = self.rng.gen_range(0..self.jobs.len() + usize::from(self.cut.is_some()));
            if pick == self.jobs.len() {
                let job = self.cut.take().expect("picked");
                match apply_truncated(log, state, job.run()) {
                    Ok(true) => model.cut_pending.clear(),
                    Ok(false) if log.failure().is_some() => {} // offline meanwhile (a full disk)
                    Ok(false) => return Err("the truncation's report was not its log's".into()),
                    Err(_) if full => {}
                    Err(e) => return Err(format!("truncation's job: {e}")),
                }
                continue;
            }
            let job = self.jobs.swap_remove(pick);
            log.synced(job.stamp, job.run());
        }
        Ok(log.failure().is_none())
    }

    /// Now and then truncates the log, as a follower does (mostly a short tail, sometimes
    /// everything, starting over past the end): memory at once, its job held. False when the
    /// log went offline (a full disk): the crash comes next.
    fn truncate(&mut self, log: &mut Log, model: &mut Model, full: bool, verbose: bool) -> Result<bool, String> {
        let (start, end) = (log.log_start_offset(), log.log_end_offset());
        if self.cut.is_some() || !self.rng.gen_bool(0.05) {
            return Ok(true);
        }
        let fully = end == start || self.rng.gen_bool(0.1);
        let result = match fully {
            true => log.truncate_fully(end + self.rng.gen_range(0..20), 0),
            false => log.truncate_to(end - self.rng.gen_range(1..=(end - start).min(40)), 0),
        };
        let failed = match result {
            Ok(()) => false,
            Err(LogError::Busy(_)) => return Ok(true), // a write in flight: another time
            // Offline part way through (a full disk): memory may be cut and names gone.
            Err(_) if full && log.failure().is_some() => true,
            Err(e) => return Err(format!("truncation: {e}")),
        };
        let new_end = log.log_end_offset();
        if verbose {
            eprintln!("  truncated {start}..{end} to {}..{new_end}{}", log.log_start_offset(), if failed { ", failed" } else { "" });
        }
        let keep = if fully { 0 } else { model.batches.partition_point(|(o, _)| *o < new_end) };
        model.cut_pending = model.batches.split_off(keep);
        // Until the job reports, the removals may be durable and the cut not: what the cut took
        // may be gone, synced or not (all of it for a full truncation, and its new segment too).
        model.synced_below = if fully || failed { 0 } else { model.synced_below.min(new_end) };
        if failed {
            return Ok(false);
        }
        self.cut = owed_truncation(log, true);
        if self.cut.is_none() {
            return Err("a deferring log's truncation owes no job".into());
        }
        Ok(true)
    }
}

fn rounds_of(seed: u64, rounds: usize, verbose: bool, deferring: bool) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let mut owner = Owner { rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6a6f_6273), jobs: Vec::new(), cut: None, stale: Vec::new() };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let disk = SimDisk::new(seed);
    let dir = Path::new("/data/topic-0");
    let config = random_config(&mut rng);
    let mut model = Model::default();
    let mut now = 0u64;
    let mut serial = 0u64;
    let mut next = [0i32; producers as usize];
    let mut reopened = false;
    for round in 0..rounds {
        let ctx = |e: String| format!("seed {seed} round {round} ({config:?}): {e}");
        // A log reopened in place syncs its directory first, as the broker's does (`Log::reopen`).
        let open = if reopened { Log::reopen } else { Log::open };
        let (mut log, report) = open(Arc::new(disk.clone()) as Arc<dyn Disk>, dir, config.clone(), now).map_err(|e| ctx(e.to_string()))?;
        if verbose {
            eprintln!("seed {seed} round {round}: {report:?}; segments {:?}, end {}", log.segment_bases(), log.log_end_offset());
        }
        // A truncation whose job never reported: what it removed may be back (a prefix of it).
        let pending = std::mem::take(&mut model.cut_pending);
        model.batches.extend(pending);
        check_recovered(&log, &mut model).map_err(ctx)?;
        if deferring {
            log.defer_syncs();
            log.defer_writes();
            owner.jobs.clear(); // taken before the crash, never run
            owner.cut = None;
        }
        // As the broker keeps it: from the log at open, then each append recorded.
        let mut state = check_producers(&mut log, &config).map_err(ctx)?;
        // Occasionally a full disk: appends fail cleanly and change nothing.
        let full = rng.gen_bool(0.1);
        if full {
            let used = disk.used_bytes();
            disk.set_faults(DiskFaults { capacity_bytes: Some(used + rng.gen_range(0..4096)), ..DiskFaults::default() });
        }
        for _ in 0..rng.gen_range(1..40) {
            now += rng.gen_range(0..20);
            match rng.gen_range(0..100) {
                0..=79 => {
                    if !append_one(&mut rng, &mut serial, &mut next, now, round, &mut log, &mut state, &mut model, full).map_err(ctx)? {
                        break;
                    }
                }
                80..=89 => match log.flush(now) {
                    Err(e) if !full => return Err(ctx(format!("flush: {e}"))),
                    _ => {}
                },
                90..=92 => match log.flush(now).and_then(|_| log.checkpoint()) {
                    Err(e) if !full => return Err(ctx(format!("checkpoint: {e}"))),
                    _ => {}
                },
                93..=94 => {
                    // The broker's checkpoint of many logs: stage, syncfs, commit, syncfs; a
                    // crash may follow any of the four steps.
                    let steps = rng.gen_range(1..=4);
                    // The producers' state at the log end first, as `Broker::checkpoint_stage`.
                    match log.write_producer_snapshot(&state.to_snapshot()) {
                        Err(e) if !full => return Err(ctx(format!("producer snapshot: {e}"))),
                        _ => {}
                    }
                    match staged_checkpoint(&mut log, &disk, dir, steps) {
                        Err(e) if !full => return Err(ctx(format!("staged checkpoint: {e}"))),
                        _ => {}
                    }
                    if !log.cutting() {
                        model.synced_below = model.synced_below.max(log.recovery_point());
                    }
                    if steps < 4 {
                        // Crash with the checkpoint half done, appends having gone on while
                        // the shell's file-system sync ran.
                        for _ in 0..rng.gen_range(0..4) {
                            if !append_one(&mut rng, &mut serial, &mut next, now, round, &mut log, &mut state, &mut model, full).map_err(ctx)? {
                                break;
                            }
                        }
                        break;
                    }
                }
                _ => match log.tick(now, log.log_end_offset()) {
                    Err(e) if !full => return Err(ctx(format!("tick: {e}"))),
                    _ => {}
                },
            }
            let offline = deferring && !(owner.truncate(&mut log, &mut model, full, verbose).map_err(ctx)? && owner.serve(&mut log, &mut state, &mut model, full).map_err(ctx)?);
            // The log's own claim, checked by the next recovery: everything below it is synced.
            // Not while a truncation's job is in flight: the claim is about the log after it,
            // and a crash before it may bring back a prefix of the log before it.
            if !log.cutting() {
                model.synced_below = model.synced_below.max(log.recovery_point());
            }
            check_prefix_live(&log, &model).map_err(ctx)?;
            if offline {
                break;
            }
        }
        // Now and then the owner reopens the log instead (as after a failure), its jobs kept
        // to run late; drawn from the owner's RNG, so the rounds' own work stays the seed's.
        let reopen = deferring && owner.rng.gen_bool(0.2);
        reopened = reopen;
        if reopen {
            log.close_jobs();
            owner.stale.extend(owner.jobs.drain(..).map(Stale::Sync));
            owner.stale.extend(owner.cut.take().map(Stale::Cut));
        }
        drop(log);
        disk.set_faults(DiskFaults::default());
        let mode = if rng.gen_bool(0.8) { CrashMode::PowerLoss } else { CrashMode::Clean };
        if !reopen {
            owner.stale.clear(); // the process died: nothing of it runs
            let crash = disk.crash(mode);
            if verbose {
                eprintln!("seed {seed} round {round}: {crash}");
            }
        } else if verbose {
            eprintln!("seed {seed} round {round}: reopened, {} jobs of the old log held", owner.stale.len());
        }
        now += rng.gen_range(0..1000);
    }
    let (mut log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, dir, config.clone(), now).map_err(|e| e.to_string())?;
    let pending = std::mem::take(&mut model.cut_pending);
    model.batches.extend(pending);
    check_recovered(&log, &mut model).map_err(|e| format!("seed {seed} final: {e}"))?;
    check_producers(&mut log, &config).map_err(|e| format!("seed {seed} final: {e}"))?;
    read_all(&log)
}

/// Appends a random batch and records it as a leader does (an ISR of one: the log end is the
/// high watermark). False when the round must end: the disk is full and the log went offline
/// writing the aborted-transaction index (as after a failed sync); the crash comes next.
#[allow(clippy::too_many_arguments)]
fn append_one(rng: &mut ChaCha8Rng, serial: &mut u64, next: &mut [i32; producers as usize], now: u64, round: usize, log: &mut Log, state: &mut ProducerStates, model: &mut Model, full: bool) -> Result<bool, String> {
    let mut batch = random_batch(rng, serial, next, now);
    match log.append(&mut batch, round as i32, now) {
        Ok(info) => {
            let h = validate(&batch, usize::MAX).map_err(|e| e.to_string())?;
            let end = log.log_end_offset();
            let recorded = record_appended(state, log, end, &h, &batch);
            model.batches.push((info.base_offset, batch));
            match recorded {
                Err(_) if full && log.failure().is_some() => Ok(false),
                Err(e) => Err(format!("record: {e}")),
                Ok(_) => Ok(true),
            }
        }
        Err(LogError::Io { source, .. }) if full && source.kind() == std::io::ErrorKind::StorageFull => Ok(true),
        // A truncation's job in flight (the deferred rounds): refused, nothing changed.
        Err(LogError::Busy(_)) if log.cutting() => Ok(true),
        Err(e) => Err(format!("append: {e}")),
    }
}

/// The first `steps` of the broker's shared checkpoint (`Broker::checkpoint`) on this one log.
fn staged_checkpoint(log: &mut Log, disk: &SimDisk, dir: &Path, steps: u32) -> Result<(), String> {
    let root = dir.parent().unwrap_or(dir);
    let Some(staged) = log.checkpoint_stage().map_err(|e| e.to_string())? else { return Ok(()) };
    if steps >= 2 {
        disk.sync_all(root).map_err(|e| e.to_string())?;
        if steps >= 3 {
            log.checkpoint_commit(staged).map_err(|e| e.to_string())?;
            if steps >= 4 {
                disk.sync_all(root).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// Cheap check while running: the live log ends where the model does.
fn check_prefix_live(log: &Log, model: &Model) -> Result<(), String> {
    let end = model.batches.last().map(|(o, b)| o + validate(b, usize::MAX).map(|h| h.last_offset_delta as i64 + 1).unwrap_or(0));
    if let Some(end) = end {
        if end != log.log_end_offset() {
            return Err(format!("live log ends at {} but the model at {end}", log.log_end_offset()));
        }
    }
    Ok(())
}


// ---------------------------------------------------------------------------------------------
// Inside madsim nodes: each round a fresh node opens the log on the surviving `SimDisk` and
// appends, sleeping off the disk's simulated latency between calls, so the kill lands between a
// write and its sync; then the harness applies power-loss semantics and checks the recovered log
// against what the node had acknowledged.

#[cfg(madsim)]
const DIR: &str = "/data/orders-0";

#[cfg(madsim)]
fn node_config() -> LogConfig {
    LogConfig { segment_bytes: 4096, index_interval_bytes: 256, flush: FlushPolicy::EveryMessages(7), ..LogConfig::default() }
}

/// The node's workload: append forever, recording each acknowledged batch in the model
/// before the next await point (a kill can only land at an await).
#[cfg(madsim)]
async fn writer(disk: SimDisk, model: Arc<Mutex<Model>>) {
    let (mut log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), node_config(), 0).expect("open on node");
    let mut i = 0u64;
    loop {
        i += 1;
        let value = format!("record {i}").into_bytes();
        let mut batch = build(&[&value, &value], i as i64);
        let info = log.append(&mut batch, 1, i).expect("append on node");
        {
            let mut m = model.lock().expect("model");
            m.batches.push((info.base_offset, batch));
            m.synced_below = m.synced_below.max(log.recovery_point());
        }
        tokio::time::sleep(disk.take_stall().max(Duration::from_micros(1))).await;
    }
}

/// Runs `rounds` kill + power-loss rounds under madsim with `seed`; returns the final log.
#[cfg(madsim)]
pub fn node_rounds(seed: u64, rounds: usize) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let handle = Handle::current();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let faults = DiskFaults { latency_ns_min: 20_000, latency_ns_max: 3_000_000, ..DiskFaults::default() };
        let disk = SimDisk::with_faults(seed, faults);
        let model = Arc::new(Mutex::new(Model::default()));
        let mut killed_with_pending = 0;
        for round in 0..rounds {
            let node = handle.create_node().name(format!("broker-{round}")).build();
            node.spawn(writer(disk.clone(), model.clone()));
            tokio::time::sleep(Duration::from_micros(rng.gen_range(1..60_000))).await;
            handle.kill(node.id());
            if disk.pending_ops() > 0 {
                killed_with_pending += 1;
            }
            disk.crash(CrashMode::PowerLoss);
            let (log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), node_config(), 0)
                .map_err(|e| format!("seed {seed} round {round}: open after power loss: {e}"))?;
            let mut m = model.lock().expect("model");
            check_recovered(&log, &mut m).map_err(|e| format!("seed {seed} round {round}: {e}"))?;
        }
        if killed_with_pending * 2 < rounds {
            return Err(format!("seed {seed}: kills should mostly land mid-write ({killed_with_pending}/{rounds})"));
        }
        let (log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, Path::new(DIR), node_config(), 0).map_err(|e| e.to_string())?;
        if log.log_end_offset() == 0 {
            return Err(format!("seed {seed}: nothing survived {rounds} rounds"));
        }
        read_all(&log)
    })
}

/// A stable 64-bit digest (FNV-1a) of a log's batches, to compare runs.
pub fn digest(batches: &[(i64, Vec<u8>)]) -> u64 {
    batches.iter().fold(fnv_offset, |h, (offset, bytes)| fnv1a(h, offset.to_be_bytes().into_iter().chain(bytes.iter().copied())))
}

