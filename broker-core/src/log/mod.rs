//! The partition log: an ordered run of segments with dense offsets, Kafka's on-disk layout.
//!
//! `Log` decides everything about one partition's bytes — offset assignment, rolling,
//! retention, when to flush, what recovery keeps — and does its IO only through
//! [`Disk`](crate::storage::Disk). It never reads a clock: time is the caller's `now` (ms).
//!
//! Durability bookkeeping: `recovery_point` is the offset below which every byte was synced.
//! It is written to the `recovery-point-offset-checkpoint` file by [`Log::checkpoint`] (the
//! shell calls it periodically and on close, like Kafka's `log.flush.offset.checkpoint.interval.ms`).
//! On open, segments wholly below the checkpointed point are trusted and must be intact;
//! later ones are scanned and cut at the first invalid batch. See docs/storage.md.
//!
//! Replication: a follower appends the leader's batches unchanged ([`Log::append_replicated`])
//! and truncates durably ([`Log::truncate_to`]); the epoch cache ([`epochs`]) follows headers.

pub mod alarm;
mod aborted;
mod batches;
pub mod batch;
pub mod dir;
pub mod epochs;
pub mod index;
pub mod clean;
pub mod compressed;
mod cleaner;
mod key_hash;
mod key_map;
mod superseded;
pub mod txn_index;
mod config;
mod cut;
mod deferred;
mod durability;
mod fence;
mod overlay;
mod pass;
pub mod producer_snapshot;
mod snapshots;
mod read;
pub mod region;
mod replica;
mod retention;
mod retired;
mod planted;
mod segment;
mod segment_files;
mod swap;

pub use alarm::FailureAlarm;
pub use batch::{BatchError, BatchHeader};
pub use config::{CleanupPolicy, FlushPolicy, LogConfig};
pub use epochs::{EpochCache, EpochEntry};
pub use cleaner::CleanStats;
pub use pass::Step as CleanStep;
pub use pass::{CleanJob, CleanStamp, Cleaned};
pub use durability::{OwedStamp, StagedCheckpoint};
pub use retired::Released;
pub use deferred::{SyncJob, SyncStamp};
pub use cut::{CutJob, CutStamp, Tail};
pub use aborted::AbortedFix;
pub use batches::Batches;
pub use swap::{SwapJob, Swapped};
pub use fence::{did_nothing, Fence};
pub use region::{FileRegion, Records, RegionError};
pub use segment::{file_stem, Cut};

use crate::constants::*;
use crate::storage::Disk;
use bytes::Bytes;
use segment::Segment;
use segment_files::list_segments;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Operational errors of the log. Each variant maps to one Kafka error code at the edge.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The batch was refused; nothing was written. Kafka: see [`BatchError`].
    #[error("invalid batch: {0}")]
    InvalidBatch(#[from] BatchError),
    /// A disk operation failed (ENOSPC, EIO, ...). Kafka: KAFKA_STORAGE_ERROR. Nothing
    /// acknowledged is lost: a failed append leaves the log as it was.
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    /// Data that was synced is not intact. Kafka: KAFKA_STORAGE_ERROR; needs an operator.
    #[error("corrupt segment {file} at byte {position}: {reason}")]
    Corrupt { file: PathBuf, position: u64, reason: String },
    /// Kafka: OFFSET_OUT_OF_RANGE.
    #[error("offset {requested} is outside the log [{start}, {end})")]
    OffsetOutOfRange { requested: i64, start: i64, end: i64 },
    /// A setting the log cannot honour. Kafka: INVALID_CONFIG.
    #[error("invalid log config: {0}")]
    Config(String),
    /// The log refuses writes after a failed sync until it is reopened. Kafka:
    /// KAFKA_STORAGE_ERROR.
    #[error("log is offline until reopened: {0}")]
    Failed(String),
    /// Replicated batches do not continue the log densely; nothing was written. Never sent to
    /// a client: the follower fetches again from its log end (Kafka's
    /// UnexpectedAppendOffsetException).
    #[error("replicated batch starts at offset {found} where {expected} was expected")]
    NonContiguous { expected: i64, found: i64 },
    /// A truncation waits for a cleaning swap in flight (`swap`); nothing changed.
    #[error("busy: {0}")]
    Busy(String),
}

/// Maps an IO error on `path` during `op` to [`LogError::Io`].
pub(crate) fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> LogError + 'a {
    move |source| LogError::Io { op, path: path.to_path_buf(), source }
}

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// Whether the flush policy called for a sync after this append: done before returning,
    /// or, once [`Log::defer_syncs`] was called, owed to the owner's next [`SyncJob`].
    pub flushed: bool,
}

/// Batches returned by a read: whole batches, starting with the one holding the offset asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    /// Base offset of the first batch in `bytes` (may be below the offset asked for).
    pub first_batch_offset: i64,
    pub bytes: Bytes,
}

/// What opening the log found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Recovery point read from the checkpoint file (0 when absent).
    pub recovery_point: i64,
    pub segments_trusted: usize,
    pub segments_scanned: usize,
    /// The cut made at the first invalid or torn batch after the recovery point, if any.
    pub cut: Option<Cut>,
    /// Whole segment files removed because they lay after the cut.
    pub segments_removed: Vec<PathBuf>,
    /// Index files rebuilt because they were missing or did not check out.
    pub indexes_rebuilt: Vec<PathBuf>,
    /// Leftover files removed (`.tmp`, `.deleted`, `.cleaned`, orphan indexes).
    pub stray_files_removed: Vec<PathBuf>,
    /// Cleaning swaps a crash interrupted after their commit point, completed (`cleaner`).
    pub swaps_completed: Vec<PathBuf>,
}

/// Name of the file holding the recovery point, as Kafka names its broker-wide one.
pub const RECOVERY_POINT_FILE: &str = "recovery-point-offset-checkpoint";

/// Field order is declared (`repr(C)`), what every append touches first: at thousands of
/// partitions fields spread over the struct cost a cache miss each (docs/journal/benchmarks.md).
#[repr(C)]
pub struct Log {
    /// Ordered by base offset; never empty; the last one is active.
    segments: Vec<Segment>,
    /// Set when a sync (or the undoing of a failed write) failed. After a failed fsync the
    /// kernel may have dropped the dirty pages while a later fsync reports success, so the
    /// log refuses all further writes until it is reopened and recovered (Kafka takes the
    /// log directory offline for the same reason).
    failed: Option<String>,
    /// Records appended since the last flush, and when the oldest of them was appended.
    unflushed_records: u64,
    unflushed_since_ms: Option<u64>,
    /// Where each leader epoch starts, derived from the batch headers.
    epochs: EpochCache,
    config: LogConfig,
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    recovery_point: i64, // below it everything is synced
    /// A segment file was created or removed since the last directory sync.
    dir_dirty: bool,
    /// Names and files outside the segments that the next flush must make durable
    /// (`durability`): the log directory's own entry when open created it, a partition marker.
    owed: durability::OwedList,
    /// Offsets below this have been through a cleaning pass (compacted logs; `cleaner`).
    cleaned_to: i64,
    /// The cleaning pass in flight between steps (`pass`). Boxed: it is large and rare, and
    /// inline it spread the fields every append touches over more cache lines.
    pass: Option<Box<pass::Pass>>,
    /// Files of segments a cleaning swap replaced, freed a slice per cleaner step (`retired`).
    retired: retired::Retired,
    /// The planted bug `CheckpointInPlace` (see `planted`); false but in simulated tests.
    checkpoint_in_place: bool,
    /// What the checkpoint file says (as read at open, or last written): a checkpoint of an
    /// unchanged log writes nothing.
    checkpointed: i64,
    /// Rung when this log goes offline (`alarm`): its owner then looks for failed logs.
    alarm: Option<FailureAlarm>,
    /// Syncs left to the owner's jobs (`deferred`).
    deferred: deferred::Deferred,
    /// Offsets of the producer-state snapshots on disk, oldest first (`snapshots`).
    snapshots: Vec<i64>,
    /// Every segment's aborted transactions, in marker order (`aborted`), and whether a
    /// `.txnindex` failed to read back at open.
    aborted: Vec<txn_index::AbortedTxn>,
    aborted_untrusted: bool,
    /// Below this offset the index files read at open are durable (the recovery point the
    /// checkpoint file held); None once the index was restored (memory is then the truth).
    aborted_durable_to: Option<i64>,
    /// Deleted segments' `.log` files for the owner to close (syncs deferred only: `retired`).
    released: Vec<Arc<region::SegmentLog>>,
    /// A cleaned group's swap left to the owner, until it reports back (`swap`).
    swap: Option<Box<swap::InFlight>>,
}

impl Log {
    /// Opens (creating if needed) the log in `dir` and recovers it. See the module header.
    pub fn open(disk: Arc<dyn Disk>, dir: &Path, config: LogConfig, now: u64) -> Result<(Log, RecoveryReport), LogError> {
        config.validate()?;
        let dir = dir.to_path_buf();
        let owed = durability::OwedList::new((!disk.exists(&dir)).then(|| durability::Owed::Dir(crate::storage::parent_of(&dir))));
        disk.create_dir_all(&dir).map_err(|source| LogError::Io { op: "create directory", path: dir.clone(), source })?;
        let mut report = RecoveryReport { recovery_point: read_recovery_point(disk.as_ref(), &dir)?, ..Default::default() };
        // A cleaning swap a crash interrupted is finished first: its `.swap` is whole.
        report.swaps_completed = cleaner::complete_swaps(disk.as_ref(), &dir)?;
        let (bases, snapshots) = list_segments(disk.as_ref(), &dir, &mut report)?;
        let mut segments: Vec<Segment> = Vec::new();
        for (i, &base) in bases.iter().enumerate() {
            let next_base = bases.get(i + 1).copied();
            if report.cut.is_some() {
                // Everything after a cut is unflushed tail that no longer joins the log densely.
                report.segments_removed.push(segment::delete_files(disk.as_ref(), &dir, base)?);
                continue;
            }
            let expected = segments.last().map(|s| s.next_offset());
            if next_base.is_some_and(|n| n <= report.recovery_point) {
                let mut seg = Segment::open_trusted(disk.as_ref(), &dir, base, config.index_interval_bytes, now, &mut report.indexes_rebuilt)?;
                seg.sync_indexes()?; // a no-op unless they were rebuilt
                if next_base != Some(seg.next_offset()) {
                    return Err(LogError::Corrupt {
                        file: seg.log_path().to_path_buf(),
                        position: seg.size(),
                        reason: format!("segment ends at offset {} but the next segment starts at {}", seg.next_offset(), next_base.unwrap_or(-1)),
                    });
                }
                report.segments_trusted += 1;
                segments.push(seg);
            } else if let (Some(end), Some(prev)) = (expected.filter(|&e| e != base), segments.last()) {
                if end < report.recovery_point {
                    return Err(LogError::Corrupt {
                        file: prev.log_path().to_path_buf(),
                        position: prev.size(),
                        reason: format!("segment ends at offset {end} but the next file starts at {base}, below the recovery point {}", report.recovery_point),
                    });
                }
                // The previous segment lost an unsynced tail while this later file's name
                // survived (legal: a directory sync commits the roll's create). Everything
                // from here on is after the loss, so it goes, as after a cut.
                report.cut = Some(Cut {
                    file: prev.log_path().to_path_buf(),
                    position: prev.size(),
                    bytes_removed: 0,
                    reason: format!("segment ends at offset {end} but the next file starts at {base}: lost unsynced tail"),
                });
                report.segments_removed.push(segment::delete_files(disk.as_ref(), &dir, base)?);
            } else {
                let (seg, cut) = Segment::recover(disk.as_ref(), &dir, base, config.index_interval_bytes, now, report.recovery_point)?;
                report.segments_scanned += 1;
                report.cut = cut;
                // Its rebuilt indexes are not synced here (two fdatasyncs a partition made a
                // restart with thousands of them take half a minute): they are synced before
                // anything can vouch for them — by the roll that makes this segment not the
                // last (`roll`), or by the checkpoint that covers it.
                segments.push(seg);
            }
        }
        if segments.is_empty() {
            segments.push(Segment::create(disk.as_ref(), &dir, 0, config.index_interval_bytes, now)?);
        }
        let end = segments.last().expect("non-empty").next_offset();
        let start = segments[0].base_offset;
        let recovery_point = report.recovery_point.clamp(start, end);
        let epochs = derive_epochs(&segments)?;
        // A clean point above the end (a crash cut the log after it was written) would call
        // records appended later clean.
        let cleaned_to = cleaner::read_checkpoint(disk.as_ref(), &dir)?.min(end);
        let mut log = Log { disk, dir, config, segments, recovery_point, unflushed_records: 0, unflushed_since_ms: None, dir_dirty: true, owed, epochs, failed: None, cleaned_to, pass: None, retired: retired::Retired::default(), checkpoint_in_place: false, checkpointed: report.recovery_point, alarm: None, deferred: deferred::Deferred::new(), snapshots, aborted: Vec::new(), aborted_untrusted: false, aborted_durable_to: Some(report.recovery_point.min(end)), released: Vec::new(), swap: None };
        log.load_aborted()?;
        // A snapshot past the recovered end describes batches the log no longer has, and one
        // below its start batches it cannot replay after it: both go, durably, before new
        // batches could take their offsets (`snapshots`).
        // The same when the log starts above what its checkpoint vouches for: segments were
        // removed after the last checkpoint (a truncation whose job never ran before a
        // reopen), and their unlinks may not be durable, so a power loss could bring back
        // records the log had dropped (crash-log --deferred seed 185100).
        if log.drop_producer_snapshots(|o| o > end || o < start)? > 0 || start > report.recovery_point {
            log.disk.sync_dir(&log.dir).map_err(io_err("fsync directory", &log.dir))?;
        }
        if report.cut.is_some() || !report.segments_removed.is_empty() || report.recovery_point > end {
            // Make the cut durable before anything new lands on top of it, and never leave a
            // checkpoint on disk that vouches for offsets the log no longer has: a later roll
            // would make the next open trust a segment whose rebuilt index was never synced.
            log.flush(now)?;
            log.checkpoint()?;
        }
        Ok((log, report))
    }

    /// Opens a log this process had open before (a log that went offline, reopened in place:
    /// `Broker::reopen_failed`). The old log's name changes need not be durable: a truncation
    /// unlinks its removed segments in memory's decision and syncs the directory in its job,
    /// which may have failed or never run. The directory is synced before anything is appended,
    /// so a power loss cannot bring a removed segment back behind the reopened log's new batches
    /// (crash-log --deferred seeds 5711, 9338). A process start does not pay for it, with 4,000
    /// logs to open: the simulator's crash drops a dead process's unsynced changes before the
    /// next open reads the directory (a real kill leaves them to the kernel's writeback, and a
    /// power loss inside that window is not covered, as in Kafka).
    pub fn reopen(disk: Arc<dyn Disk>, dir: &Path, config: LogConfig, now: u64) -> Result<(Log, RecoveryReport), LogError> {
        let (log, report) = Log::open(disk, dir, config, now)?;
        log.disk.sync_dir(&log.dir).map_err(io_err("fsync directory", &log.dir))?;
        Ok((log, report))
    }

    /// Validates `batch`, assigns its offsets from the log end, stamps `leader_epoch`, appends
    /// it, and flushes if the policy says so. An invalid batch changes nothing. An IO error
    /// during the write leaves the log as it was; an error from the flush after a successful
    /// write means the batch is in the log but not known durable, and the log is then failed
    /// (see [`Log::failure`]): recovery on reopen decides whether the batch survived. Refused
    /// ([`LogError::Busy`]) while a truncation's job is in flight (`cut`).
    pub fn append(&mut self, batch: &mut [u8], leader_epoch: i32, now: u64) -> Result<AppendInfo, LogError> {
        let header = self.stamp(batch, leader_epoch, now)?;
        self.append_stamped(segment::Appending::Borrowed(batch), &header, now)
    }

    /// [`Log::append`] of a batch the log may keep: staged (the write-behind) without a copy of
    /// its bytes. Returns the stamped batch too.
    pub fn append_owned(&mut self, mut batch: Vec<u8>, leader_epoch: i32, now: u64) -> Result<(AppendInfo, bytes::Bytes), LogError> {
        let header = self.stamp(&mut batch, leader_epoch, now)?;
        let batch = bytes::Bytes::from(batch);
        Ok((self.append_stamped(segment::Appending::Shared(&batch), &header, now)?, batch))
    }

    /// Validates `batch` and stamps it as the next one (offsets, `leader_epoch`, timestamps);
    /// changes nothing in the log.
    fn stamp(&self, batch: &mut [u8], leader_epoch: i32, now: u64) -> Result<BatchHeader, LogError> {
        self.check_failed()?;
        self.refuse_while_cutting()?;
        let mut header = batch::validate(batch, self.config.max_message_bytes)?;
        if self.config.log_append_time {
            // message.timestamp.type=LogAppendTime: the batch carries the broker's clock.
            batch::set_log_append_time(batch, now as i64);
            header = BatchHeader { attributes: batch::read_header(batch)?.attributes, max_timestamp: now as i64, ..header };
        } else if !header.log_append_time() && batch::read_header(batch)?.max_timestamp != header.max_timestamp {
            batch::set_max_timestamp(batch, header.max_timestamp);
        }
        let base = self.log_end_offset();
        batch::stamp(batch, base, leader_epoch);
        Ok(BatchHeader { base_offset: base, leader_epoch, ..header })
    }

    /// Appends a batch [`Log::stamp`] stamped, and flushes if the policy says so.
    fn append_stamped(&mut self, batch: segment::Appending<'_>, header: &BatchHeader, now: u64) -> Result<AppendInfo, LogError> {
        self.write_batch(batch, header, now)?;
        let flushed = self.flush_by_policy(now)?;
        Ok(AppendInfo { base_offset: header.base_offset, last_offset: header.last_offset(), max_timestamp: header.max_timestamp, flushed })
    }

    /// Takes new settings for an open log (a topic's config changed): they apply from the next
    /// append, roll, flush or retention pass; segments already written keep their index interval.
    pub fn set_config(&mut self, config: LogConfig) -> Result<(), LogError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// Writes one checked batch that already carries its offsets, starting at the log end:
    /// rolls first if due, then appends, and counts it for the epoch cache and the flush policy.
    fn write_batch(&mut self, bytes: segment::Appending<'_>, header: &BatchHeader, now: u64) -> Result<(), LogError> {
        debug_assert_eq!(header.base_offset, self.log_end_offset());
        self.maybe_roll(bytes.bytes().len() as u64, header.last_offset_delta, header.max_timestamp, now)?;
        let behind = self.deferred.behind;
        if let Err(e) = self.active_mut().append(bytes, header, behind) {
            if let LogError::Failed(_) = e {
                self.go_offline(e.to_string(), true);
            }
            return Err(e);
        }
        self.epochs.assign(header.leader_epoch, header.base_offset);
        self.unflushed_records += header.records_count as u64;
        self.unflushed_since_ms.get_or_insert(now);
        Ok(())
    }

    /// Flushes if the policy calls for it after the appends so far (or, with deferral on, owes
    /// the sync to a job); returns whether it did.
    fn flush_by_policy(&mut self, now: u64) -> Result<bool, LogError> {
        let due = match self.config.flush {
            FlushPolicy::Never => false,
            FlushPolicy::EveryBatch => true,
            FlushPolicy::EveryMessages(n) => self.unflushed_records >= n,
            FlushPolicy::EveryMs(ms) => self.unflushed_since_ms.is_some_and(|t| now >= t + ms),
        };
        if due && !self.defer_sync(true) {
            self.flush(now)?;
        }
        Ok(due)
    }

    /// Kafka's roll rules: the batch would overflow `segment.bytes`, the segment is older than
    /// `segment.ms`, or its offsets would overflow the u32 relative offsets of the indexes.
    fn maybe_roll(&mut self, batch_bytes: u64, last_delta: i32, batch_timestamp: i64, now: u64) -> Result<(), LogError> {
        let end = self.log_end_offset();
        let active = self.active();
        if active.is_empty() {
            return Ok(());
        }
        let full = active.size() + batch_bytes > self.config.segment_bytes;
        let old = active.age_ms(now, batch_timestamp) >= self.config.segment_ms;
        let offsets = end + last_delta as i64 - active.base_offset > segment_offsets_max;
        if full || old || offsets {
            self.roll(now)?;
        }
        Ok(())
    }

    /// Starts a new active segment at the log end offset.
    pub fn roll(&mut self, now: u64) -> Result<(), LogError> {
        let base = self.log_end_offset();
        if self.active().base_offset == base {
            return Ok(());
        }
        // Kafka flushes a segment when it rolls, so the recovery point keeps up with the log
        // even under flush=never and a restart scans only the active segment. Its indexes too:
        // once it is not the last segment a checkpoint may vouch for it, and open then trusts
        // them (open rebuilds the active segment's indexes without syncing them). With
        // deferral on, the segment's data is synced by the owner's next job, as Kafka flushes a
        // rolled segment in the background, and so are its indexes, written out here and owed
        // (`durability::Owed`: every checkpoint writer pays what is owed first, and a log
        // reopened before paying recovers the segment, its checkpoint being below it) — unless
        // the checkpoint on disk already covers the whole segment. Then open trusts the
        // segment whatever this log owes, and a reopen drops what it owes, so they are synced
        // here. That happens only when nothing was appended since that checkpoint, so the
        // indexes are dirty only when open rebuilt them: the first roll after a restart at a
        // checkpoint at the log end (`crash-log --deferred` seed 342329 found it).
        if !self.defer_sync(false) {
            self.flush(now)?;
            self.active_mut().sync_indexes()?;
        } else if self.checkpointed >= base {
            self.active_mut().sync_indexes()?;
        } else {
            let seg = self.active_mut();
            if seg.indexes_dirty() {
                seg.write_indexes()?;
                let [(_, index), (_, time_index)] = seg.index_handles();
                seg.indexes_are_durable();
                self.owed.note(durability::Owed::File(index));
                self.owed.note(durability::Owed::File(time_index));
            }
        }
        let seg = Segment::create(self.disk.as_ref(), &self.dir, base, self.config.index_interval_bytes, now)?;
        self.segments.push(seg);
        self.dir_changed();
        Ok(())
    }

    /// Why the log refuses writes, if it does: a sync failed (see the `failed` field).
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Records a failure of a multi-step change: the log refuses writes until reopened.
    fn offline_on_error<T>(&mut self, result: Result<T, LogError>, what: &str) -> Result<T, LogError> {
        if let Err(e) = &result {
            self.go_offline(format!("{what} failed: {e}"), false);
        }
        result
    }

    /// Takes the log offline (the `failed` field): keeps the first reason unless `replace`,
    /// and rings the alarm its owner gave it.
    fn go_offline(&mut self, why: String, replace: bool) {
        if replace || self.failed.is_none() {
            self.failed = Some(why);
        }
        if let Some(alarm) = &self.alarm {
            alarm.ring();
        }
    }

    /// Rings `alarm` whenever this log goes offline from now on.
    pub fn ring_on_failure(&mut self, alarm: FailureAlarm) {
        self.alarm = Some(alarm);
    }

    fn check_failed(&self) -> Result<(), LogError> {
        match &self.failed {
            Some(why) => Err(LogError::Failed(why.clone())),
            None => Ok(()),
        }
    }

    /// Time-driven work: `flush.ms` flushes (owed to the owner's next job with deferral on, as
    /// an append's are) and retention (bounded by `upper`, see [`Log::apply_retention`]).
    /// Returns the segments deleted.
    pub fn tick(&mut self, now: u64, upper: i64) -> Result<usize, LogError> {
        if let (FlushPolicy::EveryMs(ms), Some(t)) = (self.config.flush, self.unflushed_since_ms) {
            if now >= t + ms && !self.defer_sync(true) {
                self.flush(now)?;
            }
        }
        self.apply_retention(now, upper)
    }

    /// When `tick` next has time-driven work (a `flush.ms` deadline), if any; now (0) while
    /// deleted segments' files wait for the owner ([`Log::take_released`]).
    pub fn next_deadline(&self) -> Option<u64> {
        if !self.released.is_empty() {
            return Some(0);
        }
        match (self.config.flush, self.unflushed_since_ms) {
            (FlushPolicy::EveryMs(ms), Some(t)) => Some(t + ms),
            _ => None,
        }
    }

    /// Flushes and checkpoints: after this, reopening trusts every segment but the last.
    pub fn close(mut self, now: u64) -> Result<(), LogError> {
        self.flush(now)?;
        self.checkpoint()
    }

    fn active(&self) -> &Segment {
        self.segments.last().expect("a log always has an active segment")
    }
    fn active_mut(&mut self) -> &mut Segment {
        self.segments.last_mut().expect("a log always has an active segment")
    }
    pub fn log_start_offset(&self) -> i64 {
        self.segments[0].base_offset
    }
    /// The offset the next appended record gets (Kafka's log end offset, LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size()).sum()
    }
    pub fn segment_bases(&self) -> Vec<i64> {
        self.segments.iter().map(|s| s.base_offset).collect()
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
}

/// The epoch cache is derived, never stored: one walk over the batch headers at open.
fn derive_epochs(segments: &[Segment]) -> Result<EpochCache, LogError> {
    let mut epochs = EpochCache::default();
    for seg in segments {
        seg.for_each_header(&mut |h| epochs.assign(h.leader_epoch, h.base_offset))?;
    }
    Ok(epochs)
}

/// Reads the checkpointed recovery point; absent means 0 (scan everything).
fn read_recovery_point(disk: &dyn Disk, dir: &Path) -> Result<i64, LogError> {
    let path = dir.join(RECOVERY_POINT_FILE);
    // One number is at most 21 bytes.
    let Some(text) = self::dir::read_small(disk, &path, 32)? else { return Ok(0) };
    // The file is replaced atomically, so anything unreadable is real corruption, not a tear.
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|&v| v >= 0)
        .ok_or_else(|| LogError::Corrupt { file: path, position: 0, reason: "recovery point is not a non-negative integer".into() })
}

#[cfg(test)]
mod tests;
