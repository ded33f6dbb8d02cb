//! Seeded crash rounds of a compacted log on `SimDisk`, the crash landing inside cleaning:
//! random keyed appends (updates and tombstones of a few keys), rolls and flushes, then
//! cleaning passes during which the process dies at a random disk call
//! (`DiskFaults::dead_from_op`), then a power loss (or a clean crash), then recovery — which may
//! itself die at a random call while it completes an interrupted swap, and lose power again.
//!
//! After every recovery: the log opens; its batches tile the offsets from the log start to the
//! end; it ends no earlier than the recovery point the log claimed before cleaning and no later
//! than it ended; every record it holds was at that offset before cleaning (nothing invented,
//! nothing moved); and for every key, the latest record below the recovered end is the one
//! that was latest there before cleaning — or, for a tombstone, gone, when a completed pass
//! had reached it and `delete.retention.ms` had passed (the cleaner's own rule). So a crash at
//! any step leaves the old segments or the cleaned ones, never a mix that loses a key's latest
//! value (issue 9, item 2).
//!
//! One producer writes transactions among the plain batches: transactional batches of keyed
//! updates, ended by COMMIT or ABORT markers (an abort entering the log's aborted-transaction
//! index, as the partition does); cleaning never passes the first offset of the transaction
//! still open, nor of one whose marker lies at or above the recovery point, which a power loss
//! may take (the partition's last stable offset, the recovery point standing for the high
//! watermark). Keys are then judged by their latest record that no abort took back; every
//! aborted record still in the log must be covered by an entry of the recovered index (or by
//! the transaction open again), and no entry may outlive its ABORT marker (a pass removes a
//! marker once nothing of its transaction is left and its delete horizon passed, and swaps in
//! the group's `.txnindex` without it).
//!
//! Now and then the round writes a producer-state snapshot and checkpoints, as the broker
//! does, so a later open takes the index below the snapshot from the `.txnindex` files.
//!
//! Cleaning reads only closed segments, which a roll syncs, so everything a pass uses is durable
//! before the pass starts; the active segment may still lose an unsynced tail, which is why the
//! key check looks below the recovered end. Plain Rust, both builds; nothing reads a clock or an
//! unseeded RNG.
//!
//! [`deferred_clean_rounds`] runs the log as the broker does: it defers its syncs (and, on half
//! the seeds, its writes), and the round's owner (`owner`) drives every job it hands out —
//! sync jobs, cleaning steps, swaps (their marker part first), discards — as the broker's
//! shell does, so the death lands inside those jobs too. The owner's syncs run in order or, now
//! and then, one held late; a pass cleans only below the log's recovery point (as the broker's
//! stays below its high watermark, which its flush policy keeps below what is synced), so what
//! it reads is durable. The same seed draws the same work as [`clean_rounds`]; the jobs' order,
//! the steps' sizes, the write-behind and the broker's checkpoints (a producer snapshot at
//! the log end, now and then) come from the owner's own RNG. Same checks.

mod owner;

use crate::disk::{CrashMode, DiskFaults, SimDisk};
use broker_core::broker::{replayed_producers, restored_producers};
use broker_core::log::batch::control::{build_marker, read_control, Control, MarkerKind};
use broker_core::log::batch::{build_keyed, set_producer, set_transactional, KeyValue};
use broker_core::log::txn_index::AbortedTxn;
use broker_core::log::clean::{key_overhead_bytes, records, Keep};
use broker_core::log::{CleanupPolicy, FlushPolicy, Log, LogConfig};
use broker_core::storage::Disk;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// A record as the rounds know it: key, value (`None`: a tombstone), timestamp.
type Rec = (String, Option<Vec<u8>>, i64);

/// Most disk calls a round lets the cleaning passes make before the process dies. A pass over
/// a few small segments makes tens to hundreds (reads, the `.cleaned` write and sync, renames,
/// removals, directory syncs, index rebuilds, the cleaner checkpoint); drawn uniformly below
/// this, deaths land in every step of the first pass and in later passes.
const death_ops_max: u64 = 600;
/// Share of rounds (per mille) whose passes are left to finish, crashing only after them.
const no_death_per_mille: u32 = 200;
/// Most passes per round: enough for a tombstone reached by one pass to go in a later one.
const passes_max: usize = 4;

/// What the rounds of one seed did, so a test can tell they exercised what they claim.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CleanRounds {
    pub rounds: usize,
    /// Passes that completed.
    pub passes: usize,
    /// Disk calls the completed passes made (to see where deaths land).
    pub pass_ops: u64,
    /// Rounds whose process died inside a cleaning pass.
    pub died_mid_pass: usize,
    /// Rounds whose recovery died too (while completing a swap, or later in open).
    pub died_in_recovery: usize,
    /// Interrupted swaps that an open completed (their `.swap` was committed).
    pub swaps_completed: usize,
    /// Tombstones a recovered log no longer holds.
    pub tombstones_gone: usize,
    /// Records of aborted transactions a recovered log no longer holds (below its end).
    pub aborted_gone: usize,
    /// Transaction markers the completed passes removed (nothing of their transaction left,
    /// their delete horizon passed).
    pub markers_removed: usize,
    /// Jobs the owner ran (deferred rounds only, as are the counts below).
    pub jobs_run: usize,
    /// Rounds whose death landed inside a sync job, a cleaning step's (or discard) job, a
    /// swap's job, and, of those, inside its marker part (snapshots removed, directory synced,
    /// `B.txnindex.cleaned` written and synced).
    pub died_in_sync_job: usize,
    pub died_in_clean_job: usize,
    pub died_in_swap_job: usize,
    pub died_in_markers: usize,
}

impl CleanRounds {
    /// Adds `s`'s counts to these (totals over seeds).
    pub fn add(&mut self, s: &CleanRounds) {
        self.rounds += s.rounds;
        self.passes += s.passes;
        self.pass_ops += s.pass_ops;
        self.died_mid_pass += s.died_mid_pass;
        self.died_in_recovery += s.died_in_recovery;
        self.swaps_completed += s.swaps_completed;
        self.tombstones_gone += s.tombstones_gone;
        self.aborted_gone += s.aborted_gone;
        self.markers_removed += s.markers_removed;
        self.jobs_run += s.jobs_run;
        self.died_in_sync_job += s.died_in_sync_job;
        self.died_in_clean_job += s.died_in_clean_job;
        self.died_in_swap_job += s.died_in_swap_job;
        self.died_in_markers += s.died_in_markers;
    }
}

/// The transactional producer's id (epoch 0 throughout).
const producer: i64 = 1000;

/// The transactional producer's state across rounds: its next sequence and the first offset
/// of its open transaction.
#[derive(Default)]
struct Txns {
    seq: i32,
    open: Option<i64>,
}

/// What the log held before a round's cleaning, for the check after its crash.
struct Before {
    records: BTreeMap<i64, Rec>,
    /// Offsets of records an abort took back (never a key's latest).
    aborted: std::collections::BTreeSet<i64>,
    /// The aborted-transaction index before cleaning.
    index: Vec<AbortedTxn>,
    end: i64,
    /// The recovery point the log claimed: everything below it was synced.
    durable: i64,
    /// The highest clean point a pass started from: tombstones below it were reached.
    reached: i64,
    /// The latest `now` a pass ran at.
    now: u64,
}

fn config(rng: &mut ChaCha8Rng) -> LogConfig {
    let flush = match rng.gen_range(0..3) {
        0 => FlushPolicy::Never,
        1 => FlushPolicy::EveryBatch,
        _ => FlushPolicy::EveryMessages(rng.gen_range(2..20)),
    };
    LogConfig {
        segment_bytes: rng.gen_range(400..2048),
        index_interval_bytes: rng.gen_range(64..512),
        cleanup: CleanupPolicy::COMPACT,
        delete_retention_ms: rng.gen_range(0..300),
        min_cleanable_dirty_ratio_ppm: if rng.gen_bool(0.7) { 0 } else { rng.gen_range(0..600_000) },
        flush,
        ..LogConfig::default()
    }
}

/// One seed: `rounds` of open → check → keyed work → cleaning passes that die at a random
/// call → crash. `keep` is the cleaner's decision (only the planted-bug test passes anything
/// but `Keep::Latest`). `verbose` prints each round's recovery and crash to stderr.
pub fn clean_rounds(seed: u64, rounds: usize, keep: Keep, verbose: bool) -> Result<CleanRounds, String> {
    rounds_of(seed, rounds, keep, verbose, false)
}

/// [`clean_rounds`] with the log deferring its syncs (and writes, on half the seeds) and the
/// owner running every job it hands out, as the broker does (see the module header).
pub fn deferred_clean_rounds(seed: u64, rounds: usize, keep: Keep, verbose: bool) -> Result<CleanRounds, String> {
    rounds_of(seed, rounds, keep, verbose, true)
}

fn rounds_of(seed: u64, rounds: usize, keep: Keep, verbose: bool, deferring: bool) -> Result<CleanRounds, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let disk = SimDisk::new(seed);
    let dir = Path::new("/data/kv-0");
    let config = config(&mut rng);
    let keys = rng.gen_range(2..40u32);
    let mut stats = CleanRounds { rounds, ..CleanRounds::default() };
    let (mut now, mut serial) = (1_000u64, 0u64);
    let mut before: Option<Before> = None;
    let mut txns = Txns::default();
    let mut owner = deferring.then(|| owner::Owner::new(seed, &disk, dir, verbose));
    let open = |now: u64| Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, dir, config.clone(), now);
    for round in 0..=rounds {
        let ctx = |e: String| format!("seed {seed} round {round} ({config:?}, {keys} keys): {e}");
        // Sometimes recovery dies too (mid-completion of a swap, or later), and loses power.
        if before.is_some() && rng.gen_bool(0.25) {
            disk.set_faults(DiskFaults { dead_from_op: Some(disk.ops() + rng.gen_range(0..16)), ..DiskFaults::default() });
            if open(now).is_err() {
                stats.died_in_recovery += 1;
            }
            disk.set_faults(DiskFaults::default());
            disk.crash(CrashMode::PowerLoss);
        }
        let (mut log, report) = open(now).map_err(|e| ctx(format!("open: {e}")))?;
        // As a partition opens its log: the aborted-transaction index derived again by the
        // producer-state replay.
        let restored = restored_producers(&mut log).map_err(|e| ctx(format!("producer state: {e}")))?;
        // Restored from a snapshot and the batches after it, the producer's transaction is
        // open exactly when the log holds one without its marker (a snapshot describing a
        // transaction whose marker a pass removed would hold it open for ever).
        let open = txn_state(&log).map_err(ctx)?.1;
        if restored.has_open_txn(producer) != open.is_some() {
            return Err(ctx(format!("restored producer state (snapshots {:?}) has the transaction open: {}; the log: {open:?}", log.producer_snapshot_offsets(), restored.has_open_txn(producer))));
        }
        stats.swaps_completed += report.swaps_completed.len();
        if let Some(o) = owner.as_mut() {
            o.start(&mut log);
        }
        if verbose {
            eprintln!("seed {seed} round {round}: {report:?}; segments {:?}, end {}", log.segment_bases(), log.log_end_offset());
        }
        if let Some(b) = before.take() {
            let (tombstones, aborted) = check(&log, &b, config.delete_retention_ms).map_err(ctx)?;
            stats.tombstones_gone += tombstones;
            stats.aborted_gone += aborted;
        }
        if round == rounds {
            break;
        }
        txns.open = txn_state(&log).map_err(ctx)?.1;
        for _ in 0..rng.gen_range(5..60) {
            now += rng.gen_range(0..30);
            match rng.gen_range(0..100) {
                0..=64 => {
                    let mut batch = keyed_batch(&mut rng, &mut serial, keys, now);
                    log.append(&mut batch, round as i32, now).map_err(|e| ctx(format!("append: {e}")))?;
                }
                65..=79 => {
                    let mut batch = keyed_batch(&mut rng, &mut serial, keys, now);
                    let n = batch_records(&batch) as i32;
                    set_producer(&mut batch, producer, 0, txns.seq);
                    set_transactional(&mut batch);
                    txns.seq += n;
                    let at = log.log_end_offset();
                    log.append(&mut batch, round as i32, now).map_err(|e| ctx(format!("append: {e}")))?;
                    txns.open.get_or_insert(at);
                }
                80..=84 => {
                    let Some(first) = txns.open.take() else { continue };
                    let kind = if rng.gen_bool(0.5) { MarkerKind::Abort } else { MarkerKind::Commit };
                    let at = log.log_end_offset();
                    log.append(&mut build_marker(producer, 0, kind, 0, now as i64), round as i32, now).map_err(|e| ctx(format!("append marker: {e}")))?;
                    if kind == MarkerKind::Abort {
                        log.append_aborted(AbortedTxn { producer_id: producer, first_offset: first, last_offset: at, last_stable_offset: first }).map_err(|e| ctx(format!("index: {e}")))?;
                    }
                }
                85..=94 => log.roll(now).map_err(|e| ctx(format!("roll: {e}")))?,
                95..=97 => log.flush(now).map_err(|e| ctx(format!("flush: {e}")))?,
                _ => {
                    // A producer-state snapshot at the log end, made durable by a checkpoint
                    // as the broker's are: a later open replays from it and takes the
                    // aborted-transaction index below it from the `.txnindex` files.
                    let state = replayed_producers(&log).map_err(|e| ctx(format!("producer state: {e}")))?;
                    log.write_producer_snapshot(&state.to_snapshot()).map_err(|e| ctx(format!("snapshot: {e}")))?;
                    log.flush(now).and_then(|_| log.checkpoint()).map_err(|e| ctx(format!("checkpoint: {e}")))?;
                }
            }
            if let Some(o) = owner.as_mut() {
                o.checkpoint(&mut log, now).map_err(ctx)?;
                if !o.serve(&mut log) {
                    return Err(ctx(format!("offline with no fault: {:?}", log.failure())));
                }
            }
        }
        let (records, end) = (contents(&log).map_err(ctx)?, log.log_end_offset());
        let (aborted, open_first, _, ended) = txn_state(&log).map_err(ctx)?;
        let mut b = Before { records, aborted, index: log.aborted_transactions().to_vec(), end, durable: log.recovery_point(), reached: log.cleaned_to(), now };
        // A small key map now and then, so a pass covers only part of the dirty range.
        let map_bytes = if rng.gen_bool(0.3) { rng.gen_range(1..4) * (2 + key_overhead_bytes) } else { 1 << 20 };
        let death = rng.gen_ratio(1000 - no_death_per_mille, 1000).then(|| disk.ops() + rng.gen_range(0..death_ops_max));
        disk.set_faults(DiskFaults { dead_from_op: death, ..DiskFaults::default() });
        for pass in 0..passes_max {
            if pass > 0 {
                // Writes go on between passes, so a later pass has a dirty range (and may drop
                // tombstones the earlier one reached). Each batch is expected from before its
                // append: a death after the write and before the policy's flush leaves it in
                // the log or not.
                for _ in 0..rng.gen_range(1..4) {
                    now += rng.gen_range(0..100);
                    let mut batch = keyed_batch(&mut rng, &mut serial, keys, now);
                    let base = log.log_end_offset();
                    for (i, (_, r)) in contents_of(&batch).into_iter().enumerate() {
                        b.records.insert(base + i as i64, r);
                    }
                    if log.append(&mut batch, round as i32, now).is_err() {
                        b.end = b.end.max(base + batch_records(&batch));
                        break;
                    }
                    b.end = b.end.max(log.log_end_offset());
                }
                if log.failure().is_some() || log.roll(now).is_err() {
                    stats.died_mid_pass += 1;
                    break;
                }
                b.durable = b.durable.max(log.recovery_point());
            }
            // The syncs owed (the roll's among them) run before the turn: what the pass may
            // clean is below the recovery point they move.
            if let Some(o) = owner.as_mut() {
                if !o.serve(&mut log) {
                    stats.died_mid_pass += 1;
                    break;
                }
                b.durable = b.durable.max(log.recovery_point());
            }
            b.reached = b.reached.max(log.cleaned_to());
            b.now = now;
            let upper = if rng.gen_bool(0.8) { log.log_end_offset() } else { rng.gen_range(log.log_start_offset()..=log.log_end_offset()) };
            // The partition's last stable offset: an open transaction may still abort, and an
            // ended one's marker above the recovery point may still go with an unsynced tail
            // (the transaction open again, after a pass judged its batches by that marker).
            let upper = upper.min(first_unstable(open_first, &ended, log.recovery_point()).unwrap_or(i64::MAX));
            let ops = disk.ops();
            let result = match owner.as_mut() {
                None => log.clean_keeping(now, upper, map_bytes, keep).map_err(|e| e.to_string()),
                // The broker cleans below its high watermark; these rounds model a log whose
                // committed part is what is synced (flush before the mark moves): here, below
                // the recovery point. (Without such a flush policy a broker's mark may pass it:
                // docs/storage.md, seed 17048.)
                Some(o) => {
                    let upper = upper.min(log.recovery_point());
                    o.pass(&mut log, now, upper, map_bytes, keep)
                }
            };
            if deferring {
                b.durable = b.durable.max(log.recovery_point());
            }
            match result {
                Ok(Some(pass)) => {
                    stats.passes += 1;
                    stats.markers_removed += pass.markers_removed;
                    stats.pass_ops += disk.ops() - ops;
                }
                Ok(None) => {}
                // With the process alive a deferred pass must not fail (the inline rounds never
                // checked it).
                Err(e) if deferring && !disk.faults().dead_from_op.is_some_and(|d| disk.ops() >= d) => return Err(ctx(format!("pass failed with no fault: {e}"))),
                Err(_) => {
                    stats.died_mid_pass += 1;
                    break;
                }
            }
            now += rng.gen_range(0..200);
        }
        if let Some(o) = owner.as_mut() {
            o.end_round(&mut stats);
            stats.jobs_run = o.jobs_run;
        }
        drop(log);
        disk.set_faults(DiskFaults::default());
        let crash = disk.crash(if rng.gen_bool(0.8) { CrashMode::PowerLoss } else { CrashMode::Clean });
        if verbose {
            eprintln!("seed {seed} round {round}: {crash}");
        }
        before = Some(b);
        now += rng.gen_range(0..100);
    }
    Ok(stats)
}

/// The offsets of records an ABORT marker took back, the first offset of the producer's
/// transaction still open (no marker yet), the offsets of its ABORT markers, and each ended
/// transaction's first offset and marker offset, as the batches in `log` say.
fn txn_state(log: &Log) -> Result<(BTreeSet<i64>, Option<i64>, BTreeSet<i64>, Vec<(i64, i64)>), String> {
    let (mut aborted, mut open): (BTreeSet<i64>, Option<(i64, Vec<i64>)>) = (BTreeSet::new(), None);
    let (mut markers, mut ended) = (BTreeSet::new(), Vec::new());
    log.for_each_batch(log.log_start_offset(), 1 << 16, |h, batch| -> Result<(), Box<dyn std::error::Error>> {
        if h.producer_id != producer {
            return Ok(());
        }
        if h.is_control() {
            let abort = matches!(read_control(&batch)?, Control::Marker { kind: MarkerKind::Abort, .. });
            if abort {
                markers.insert(h.base_offset);
            }
            if let Some((first, offsets)) = open.take() {
                ended.push((first, h.base_offset));
                if abort {
                    aborted.extend(offsets);
                }
            }
            return Ok(());
        }
        let entry = open.get_or_insert((h.base_offset, Vec::new()));
        entry.1.extend(records(&batch)?.iter().map(|r| r.offset));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok((aborted, open.map(|(first, _)| first), markers, ended))
}

/// The first offset the partition's last stable offset stays below under a high watermark `hw`
/// (`ProducerStates::last_stable_offset`; the rounds' `hw` is the recovery point): that of the
/// transaction still open (`open`), or of one ended (`ended`: first offset, marker offset) by
/// a marker at or above `hw`. A power loss may take such a marker: had a pass taken the
/// transaction's batches back for its abort, a producer snapshot taken inside the transaction
/// would then hold it open with nothing of it left in the log (seed 17048).
fn first_unstable(open: Option<i64>, ended: &[(i64, i64)], hw: i64) -> Option<i64> {
    let unreplicated = ended.iter().filter(|&&(_, marker)| marker >= hw).map(|&(first, _)| first);
    open.into_iter().chain(unreplicated).min()
}

/// A batch of 1..4 updates of keys `k0..k{keys-1}`, 15% of them tombstones; values unique.
fn keyed_batch(rng: &mut ChaCha8Rng, serial: &mut u64, keys: u32, now: u64) -> Vec<u8> {
    let batch: Vec<(String, Option<String>)> = (0..rng.gen_range(1..5))
        .map(|_| {
            *serial += 1;
            (format!("k{}", rng.gen_range(0..keys)), (!rng.gen_bool(0.15)).then(|| format!("v{serial}")))
        })
        .collect();
    let kv: Vec<KeyValue> = batch.iter().map(|(k, v)| (Some(k.as_bytes()), v.as_deref().map(str::as_bytes))).collect();
    build_keyed(&kv, now as i64)
}

/// The records of one batch as (offset delta, record).
fn contents_of(batch: &[u8]) -> Vec<(i64, Rec)> {
    records(batch).expect("built here").into_iter().map(|r| (r.offset, (r.key.map(|k| String::from_utf8_lossy(&k).into_owned()).unwrap_or_default(), r.value.map(|v| v.to_vec()), r.timestamp))).collect()
}

/// How many offsets a batch built here spans.
fn batch_records(batch: &[u8]) -> i64 {
    contents_of(batch).len() as i64
}

/// Every record of the log by offset, checking that batches tile the offsets from the log
/// start to its end.
fn contents(log: &Log) -> Result<BTreeMap<i64, Rec>, String> {
    let (mut out, mut next) = (BTreeMap::new(), log.log_start_offset());
    log.for_each_batch(next, 1 << 16, |h, batch| -> Result<(), Box<dyn std::error::Error>> {
        if h.base_offset != next {
            return Err(format!("batches do not tile the offsets: expected a batch at {next}, got {}", h.base_offset).into());
        }
        next = h.next_offset();
        for r in records(&batch).map_err(|e| format!("batch at {}: {e}", h.base_offset))? {
            let key = r.key.map(|k| String::from_utf8_lossy(&k).into_owned()).unwrap_or_default();
            // A marker's timestamp is not its own once a pass set its delete horizon (KIP-534
            // keeps the horizon in the base timestamp): markers are judged without it.
            let timestamp = if h.is_control() { -1 } else { r.timestamp };
            out.insert(r.offset, (key, r.value.map(|v| v.to_vec()), timestamp));
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    if next != log.log_end_offset() {
        return Err(format!("batches end at {next}, the log at {}", log.log_end_offset()));
    }
    Ok(out)
}

/// The latest record of each key among `records` below `end`, leaving out those an abort took
/// back (`aborted`) and transaction markers (no key of a record's).
fn latest<'a>(records: &'a BTreeMap<i64, Rec>, end: i64, aborted: &BTreeSet<i64>) -> BTreeMap<&'a str, (i64, &'a Rec)> {
    records.range(..end).filter(|(o, r)| !aborted.contains(o) && !r.0.starts_with('\0')).map(|(o, r)| (r.0.as_str(), (*o, r))).collect()
}

/// The recovered log against what it held before the round's cleaning; returns how many
/// tombstones and aborted records went (legitimately).
fn check(log: &Log, b: &Before, retention_ms: u64) -> Result<(usize, usize), String> {
    let got = contents(log)?;
    let end = log.log_end_offset();
    if end < b.durable || end > b.end {
        return Err(format!("recovered log ends at {end}: before cleaning it ended at {} with everything below {} synced", b.end, b.durable));
    }
    for (o, r) in &got {
        if b.records.get(o) != Some(r) {
            return Err(format!("offset {o} holds {r:?}, before cleaning {:?}", b.records.get(o)));
        }
    }
    let horizon = b.now as i64 - retention_ms as i64;
    let (want, have) = (latest(&b.records, end, &b.aborted), latest(&got, end, &b.aborted));
    // An aborted record still in the log stays hidden from read_committed: an entry of the
    // recovered index covers it, or (its marker lost with an unsynced tail) its transaction is
    // open again and the last stable offset holds it back.
    let index = log.aborted_transactions();
    let (_, open, markers, _) = txn_state(log)?;
    // And no entry outlives its marker (a pass removes a marker once nothing of its
    // transaction is left and its delete horizon passed): a reader told of an abort whose
    // marker is gone would skip the producer's later batches.
    if let Some(t) = index.iter().find(|t| t.producer_id == producer && !markers.contains(&t.last_offset)) {
        return Err(format!("the aborted-transaction index holds {t:?}, whose ABORT marker is not in the recovered log (markers at {markers:?})"));
    }
    let hidden = |o: i64| open.is_some_and(|first| o >= first) || index.iter().any(|t| t.producer_id == producer && t.first_offset <= o && o <= t.last_offset);
    if let Some(o) = got.keys().find(|o| b.aborted.contains(o) && !hidden(**o)) {
        return Err(format!("aborted record at {o} is in the recovered log but in no aborted transaction of its index {index:?} (before cleaning {:?})", b.index));
    }
    let mut gone = 0;
    for (key, (o, r)) in &want {
        match have.get(key) {
            Some((h, _)) if h == o => {}
            // The cleaner's rule: a tombstone goes once a completed pass reached it and its
            // timestamp is older than delete.retention.ms at the time of a later pass.
            None if r.1.is_none() && *o < b.reached && r.2 < horizon => gone += 1,
            other => return Err(format!("key {key}: latest was {r:?} at {o}, the recovered log's is {other:?} (log {:?})", got)),
        }
    }
    if let Some(extra) = have.keys().find(|k| !want.contains_key(*k)) {
        return Err(format!("key {extra} is in the recovered log but was in no record below {end}"));
    }
    log.verify_indexes()?;
    let aborted_gone = b.aborted.range(..end).filter(|o| !got.contains_key(o)).count();
    Ok((gone, aborted_gone))
}
