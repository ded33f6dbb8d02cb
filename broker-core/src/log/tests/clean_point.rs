//! A cleaning pass's clean point as its last job (`log::pass::job`), on real files: the turn
//! that ends a pass writes and syncs nothing of the checkpoint file, the job does, and the
//! point moves (in memory, and at the next open) only with the report; a truncation while the
//! job is in flight is refused and, once it is back, lowers the point on disk; retention
//! aborting the pass meanwhile leaves memory and disk at the same point; a failed write ends
//! the pass with its error and loses no later truncation; a job of a log let go writes
//! nothing and its report changes nothing.

use super::super::*;
use super::cleaning::{compacted, map_bytes, updates};
use super::{clean_step_now, disk, truncate_deferred};
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::FileDisk;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const POINT_FILE: &str = "cleaner-offset-checkpoint";

/// Counts the writes, syncs and renames of the clean point's file (and its `.tmp`), and fails
/// the next sync of it once `fail` is set.
#[derive(Default)]
struct PointOps {
    ops: AtomicU64,
    fail: AtomicBool,
}

impl Hook for PointOps {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        let path = match op {
            Op::WriteAt { path, .. } | Op::Truncate { path, .. } | Op::Sync { path } => path,
            Op::Rename { to, .. } => to,
            _ => return Ok(()),
        };
        if !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(POINT_FILE)) {
            return Ok(());
        }
        self.ops.fetch_add(1, Ordering::Relaxed);
        match op {
            Op::Sync { .. } if self.fail.swap(false, Ordering::SeqCst) => Err(std::io::Error::other("EIO (injected sync failure)")),
            _ => Ok(()),
        }
    }
}

/// A compacted log whose owner takes jobs, with closed segments to clean, on a disk that
/// watches the clean point's file.
fn watched_log(dir: &Path) -> (Log, Arc<PointOps>) {
    watched_log_of(dir, 6, 40)
}

/// [`watched_log`] of `rounds` updates of `keys` keys.
fn watched_log_of(dir: &Path, keys: usize, rounds: usize) -> (Log, Arc<PointOps>) {
    let ops = Arc::new(PointOps::default());
    let d: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(FileDisk::new()), ops.clone()));
    let (mut log, _) = Log::open(d, dir, compacted(), 0).unwrap();
    log.defer_syncs();
    updates(&mut log, keys, rounds, 1_000);
    log.roll(0).unwrap();
    (log, ops)
}

/// The clean point the file says (None: no file yet).
fn on_disk(dir: &Path) -> Option<i64> {
    std::fs::read_to_string(dir.join(POINT_FILE)).ok().map(|s| s.trim().parse().unwrap())
}

/// Runs the pass through jobs (run and reported at once, swaps too) until the turn hands out
/// the clean point's job, and returns it, not run. Asserts no turn or report touched the
/// checkpoint file.
fn point_job(log: &mut Log, ops: &PointOps, now: u64) -> CleanJob {
    for _ in 0..100_000 {
        let upper = log.log_end_offset();
        let at = ops.ops.load(Ordering::Relaxed);
        let step = log.clean_step(now, upper, map_bytes, 300, clean::Keep::Latest).unwrap();
        assert_eq!(ops.ops.load(Ordering::Relaxed), at, "the turn wrote nothing of the clean point ({step:?})");
        let job = log.take_clean().expect("a pass in flight hands out a job");
        if job.clean_point().is_some() {
            return job;
        }
        let done = job.run();
        let at = ops.ops.load(Ordering::Relaxed);
        let step = log.cleaned(done, now).unwrap();
        assert_eq!(ops.ops.load(Ordering::Relaxed), at, "the report wrote nothing of the clean point ({step:?})");
        assert!(matches!(step, CleanStep::Working { .. }), "the pass ends only with its point's job: {step:?}");
        if let Some(job) = log.take_swap() {
            log.swapped(job.run()).unwrap();
        }
    }
    panic!("the pass never ended");
}

#[test]
fn the_turn_that_ends_a_pass_writes_no_clean_point_and_the_point_moves_with_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, ops) = watched_log(tmp.path());
    let before = (log.cleaned_to(), on_disk(tmp.path()));
    let job = point_job(&mut log, &ops, 10_000);
    assert_eq!((log.cleaned_to(), on_disk(tmp.path())), before, "handed out, the point is where it was");
    // Held, the job blocks nothing: the next turn waits, and the log takes appends.
    let upper = log.log_end_offset();
    assert_eq!(log.clean_step(10_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
    assert!(log.take_clean().is_none(), "one job in flight");
    log.append(&mut batch::build_keyed(&[(Some(b"late"), Some(b"x"))], 9_000), 2, 0).unwrap();
    let at = ops.ops.load(Ordering::Relaxed);
    let done = job.run();
    assert!(ops.ops.load(Ordering::Relaxed) > at, "the job writes the point");
    let written = on_disk(tmp.path()).expect("the job wrote the point");
    assert!(written > before.0);
    assert_eq!(log.cleaned_to(), before.0, "memory moves only with the report");
    let at = ops.ops.load(Ordering::Relaxed);
    let step = log.cleaned(done, 10_000).unwrap();
    assert_eq!(ops.ops.load(Ordering::Relaxed), at, "the report writes nothing");
    let CleanStep::Done { stats: Some(stats), .. } = step else { panic!("the report ends the pass: {step:?}") };
    assert_eq!((stats.to, log.cleaned_to()), (written, written));
    assert!(stats.segments_rewritten > 0 && !log.cleaning());
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.cleaned_to(), written, "the point after reopening");
}

#[test]
fn a_truncation_while_the_clean_points_job_is_in_flight_is_refused_and_lowers_the_point_after() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, ops) = watched_log(tmp.path());
    let job = point_job(&mut log, &ops, 10_000);
    let end = log.log_end_offset();
    for cut in [end - 1, 0] {
        let e = log.truncate_to(cut, 0).expect_err("refused while the point is written");
        assert!(matches!(e, LogError::Busy(_)), "{e}");
    }
    assert!(matches!(log.truncate_fully(end + 10, 0), Err(LogError::Busy(_))));
    assert!(log.take_cut().is_none() && log.log_end_offset() == end, "nothing changed");
    let CleanStep::Done { stats: Some(stats), .. } = log.cleaned(job.run(), 10_000).unwrap() else { panic!("the pass ends") };
    let point = stats.to;
    assert_eq!(on_disk(tmp.path()), Some(point));
    // Now the truncation goes, below the point: memory and disk come down with it.
    let cut = point - 5;
    truncate_deferred(&mut log, cut);
    assert!(log.cleaned_to() <= cut);
    assert_eq!(on_disk(tmp.path()), Some(log.log_end_offset()), "the lower point is on disk");
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert!(log.cleaned_to() <= log.log_end_offset() && log.cleaned_to() <= cut);
}

#[test]
fn deleting_records_while_the_point_is_written_leaves_memory_and_disk_alike() {
    // Enough live keys that the cleaned log keeps several segments below the point: deleting
    // the first (DeleteRecords' prefix deletion, which aborts the pass) leaves the log start
    // below it.
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, ops) = watched_log_of(tmp.path(), 100, 3);
    let old = log.cleaned_to();
    let job = point_job(&mut log, &ops, 10_000);
    let point = job.clean_point().expect("the point's job");
    assert_eq!(log.delete_segments_below(log.segment_bases()[1]).unwrap(), 1);
    assert!(log.log_start_offset() < point, "the log start {} stays below the point {point}", log.log_start_offset());
    assert!(log.cleaning(), "the job is in flight still");
    assert_eq!(log.cleaned_to(), old.max(log.log_start_offset()), "the point waits for the report");
    let done = job.run();
    assert_eq!(on_disk(tmp.path()), Some(point), "the write went on: the point is true");
    assert_eq!(log.cleaned(done, 10_000).unwrap(), CleanStep::Working { bytes: 0 }, "the aborted pass reports nothing");
    assert!(log.cleaning_phase().is_none());
    assert_eq!(log.cleaned_to(), point, "memory says what the file says");
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.cleaned_to(), point, "and so does the next open");
}

#[test]
fn a_failed_point_write_ends_the_pass_with_its_error_and_a_later_truncation_still_lowers_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, ops) = watched_log(tmp.path());
    let old = log.cleaned_to();
    let job = point_job(&mut log, &ops, 10_000);
    ops.fail.store(true, Ordering::SeqCst);
    let e = log.cleaned(job.run(), 10_000).expect_err("the write failed");
    assert!(e.to_string().contains("EIO"), "{e}");
    assert!(log.failure().is_none(), "as an inline failure: the pass ends, the log stays up");
    assert!(!log.cleaning() && log.take_clean().is_none());
    assert_eq!(on_disk(tmp.path()).unwrap_or(0), old, "the rename never happened");
    let point = log.cleaned_to();
    assert!(point > old, "memory holds the true point, above the file's");
    // A truncation below it must reach the file, whatever the file said.
    let cut = point - 5;
    truncate_deferred(&mut log, cut);
    assert_eq!(on_disk(tmp.path()), Some(log.log_end_offset()));
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.cleaned_to(), log.log_end_offset().min(cut));
}

#[test]
fn a_point_job_of_a_log_let_go_writes_nothing_and_its_report_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, ops) = watched_log(tmp.path());
    let old = on_disk(tmp.path());
    let stale = point_job(&mut log, &ops, 10_000);
    log.close_jobs();
    drop(log);
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    log.defer_syncs();
    let reopened = log.cleaned_to();
    let done = stale.run();
    assert!(CleanJob::fenced(&done), "{done:?}");
    assert_eq!(on_disk(tmp.path()), old, "the stale job wrote nothing");
    assert_eq!(log.cleaned(done, 10_000).unwrap(), CleanStep::Working { bytes: 0 });
    assert_eq!(log.cleaned_to(), reopened, "nor did its report");
    // The reopened log's own pass sets the point.
    let upper = log.log_end_offset();
    let mut step = clean_step_now(&mut log, 10_000, upper, 300);
    for _ in 0..100_000 {
        if let Some(job) = log.take_swap() {
            log.swapped(job.run()).unwrap();
        }
        if let CleanStep::Done { .. } = step {
            break;
        }
        let upper = log.log_end_offset();
        step = clean_step_now(&mut log, 10_000, upper, 300);
    }
    assert!(matches!(step, CleanStep::Done { stats: Some(_), .. }), "{step:?}");
    assert!(log.cleaned_to() > reopened && on_disk(tmp.path()) == Some(log.cleaned_to()));
}
