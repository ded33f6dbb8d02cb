//! Cleaning steps as the owner's jobs (`log::pass::job`), on real files: the cleaner's turn and
//! the job's report read no batch (the job reads the dirty range); while a job is held the
//! log takes appends and reads and the next turn waits; a pass aborted while its step's job is
//! in flight (or not yet taken) loses the report and leaves no `.cleaned` file; a dropped
//! pass's files go in a job of their own, before which no later pass makes files of the same
//! names; a failed swap ends the pass with no clean point past it; the job syncs its
//! `.cleaned` file every `cleaner_sync_bytes` (the turn never does); a whole pass through jobs
//! leaves the very bytes an inline pass leaves, and `Log::clean` runs one inline with
//! deferral on.

use super::*;
use super::cleaning::{compacted, contents, latest_of, map_bytes, updates};
use std::sync::atomic::Ordering;

fn cleaned_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap")).collect()
}

/// A compacted log whose owner takes jobs, with closed segments to clean.
fn deferred_log(disk: Arc<dyn Disk>, dir: &Path, config: LogConfig) -> Log {
    let (mut log, _) = Log::open(disk, dir, config, 0).unwrap();
    log.defer_syncs();
    updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    log
}

/// Runs and reports the swap the log owes, if any.
fn swap_now(log: &mut Log) {
    if let Some(job) = log.take_swap() {
        log.swapped(job.run()).unwrap();
    }
}

/// Steps (300 bytes a step, jobs run at once) until the pass's first group has `.cleaned`
/// files, then hands out one more step and returns its job, not run.
fn job_while_rewriting(log: &mut Log, now: u64) -> CleanJob {
    for _ in 0..10_000 {
        let upper = log.log_end_offset();
        assert!(matches!(clean_step_now(log, now, upper, 300), CleanStep::Working { .. }));
        swap_now(log);
        if !cleaned_files(log.dir()).is_empty() {
            let upper = log.log_end_offset();
            assert_eq!(log.clean_step(now, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
            return log.take_clean().expect("the step is a job");
        }
    }
    panic!("the rewrite never began");
}

/// Runs the pass to its end through jobs run at once (`budget` bytes a step).
fn finish_pass(log: &mut Log, now: u64, budget: usize) -> Option<CleanStats> {
    for _ in 0..100_000 {
        let upper = log.log_end_offset();
        let step = clean_step_now(log, now, upper, budget);
        swap_now(log);
        match step {
            CleanStep::Done { stats, .. } => return stats,
            CleanStep::Idle => return None,
            CleanStep::Working { .. } => {}
        }
    }
    panic!("the pass never ended");
}

#[test]
fn a_cleaning_steps_turn_and_report_read_no_batch_and_its_job_reads_the_dirty_range() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, read, _) = ProbeDisk::shared();
    let mut log = deferred_log(d, tmp.path(), compacted());
    let before = contents(&log).0;
    let (mut jobs, mut job_read) = (0, 0);
    let now = 10_000;
    let stats = loop {
        let upper = log.log_end_offset();
        let at = read.load(Ordering::Relaxed);
        let step = log.clean_step(now, upper, map_bytes, 300, clean::Keep::Latest).unwrap();
        assert_eq!(read.load(Ordering::Relaxed), at, "the turn read nothing ({step:?})");
        let Some(job) = log.take_clean() else {
            match step {
                CleanStep::Done { stats, .. } => break stats,
                other => panic!("a turn with a pass in flight and no swap hands out a job: {other:?}"),
            }
        };
        let at = read.load(Ordering::Relaxed);
        let done = job.run();
        job_read += read.load(Ordering::Relaxed) - at;
        jobs += 1;
        let at = read.load(Ordering::Relaxed);
        let step = log.cleaned(done, now).unwrap();
        assert_eq!(read.load(Ordering::Relaxed), at, "the report read nothing ({step:?})");
        swap_now(&mut log);
        if let CleanStep::Done { stats, .. } = step {
            break stats;
        }
    };
    let stats = stats.expect("the pass cleaned");
    assert!(jobs > 10, "300-byte steps: {jobs} jobs");
    assert!(job_read >= stats.bytes_read, "the jobs read the dirty range: {job_read} of {} bytes", stats.bytes_read);
    let after = contents(&log).0;
    assert!(after.len() < before.len(), "{} of {} records left", after.len(), before.len());
    assert_eq!(latest_of(&after), latest_of(&before));
    assert!(cleaned_files(tmp.path()).is_empty());
}

#[test]
fn while_a_steps_job_is_held_the_log_takes_appends_and_reads_and_the_next_turn_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferred_log(disk(), tmp.path(), compacted());
    let before = contents(&log).0;
    let job = job_while_rewriting(&mut log, 10_000);
    let held = contents(&log).0;
    assert!(log.cleaning() && log.cleaning_phase() == Some("rewrite"));
    // The turn waits for the job: no second step, no second job.
    let upper = log.log_end_offset();
    assert_eq!(log.clean_step(10_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
    assert!(log.take_clean().is_none(), "one step in flight at a time");
    // The log goes on meanwhile: appends, rolls and reads.
    let end = log.log_end_offset();
    let info = log.append(&mut batch::build_keyed(&[(Some(b"late"), Some(b"x"))], 9_000), 2, 0).unwrap();
    assert_eq!(info.base_offset, end);
    log.roll(0).unwrap();
    assert_eq!(log.read(end, 1 << 20, log.log_end_offset()).unwrap().first_batch_offset, end);
    assert_eq!(contents(&log).0[..held.len()], held[..], "memory reads what it read when the job was handed out");
    // The report goes on with the pass, which ends as a pass does.
    let step = log.cleaned(job.run(), 10_000).unwrap();
    assert!(matches!(step, CleanStep::Working { bytes } if bytes > 0), "{step:?}");
    swap_now(&mut log);
    assert!(finish_pass(&mut log, 10_000, 300).is_some());
    let after = contents(&log).0;
    assert_eq!(latest_of(&after[..after.len() - 1]), latest_of(&before));
    assert_eq!(after.last().map(|r| r.0), Some(end), "the late record stays");
}

#[test]
fn a_pass_aborted_while_its_steps_job_is_in_flight_loses_the_report_and_leaves_no_cleaned_file() {
    // Retention aborts the pass while the job is held; the job then runs (writing its group's
    // `.cleaned` file) and reports.
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { cleanup: CleanupPolicy { delete: true, compact: true }, retention_ms: 1_000, ..compacted() };
    let mut log = deferred_log(disk(), tmp.path(), config);
    let job = job_while_rewriting(&mut log, 3_000);
    assert!(log.apply_retention(10_000, log.log_end_offset()).unwrap() > 0);
    assert!(log.cleaning(), "the job is in flight still");
    let done = job.run();
    assert_eq!(log.cleaned(done, 10_000).unwrap(), CleanStep::Working { bytes: 0 }, "the report is dropped");
    assert!(cleaned_files(tmp.path()).is_empty(), "{:?}", cleaned_files(tmp.path()));
    assert_eq!(log.cleaning_phase(), None, "no pass in flight");
    // Only replaced files are left to free; then nothing closed is left to clean.
    let mut turns = 0;
    while let CleanStep::Working { bytes: 0 } = log.clean_step(10_000, log.log_end_offset(), map_bytes, 300, clean::Keep::Latest).unwrap() {
        assert!(log.take_clean().is_none(), "no new pass");
        turns += 1;
        assert!(turns < 1_000);
    }

    // A truncation aborts it with the job run before the abort: its report is dropped all the
    // same, the files go (in a job the report hands out), and a new pass cleans the truncated
    // log.
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferred_log(disk(), tmp.path(), compacted());
    let job = job_while_rewriting(&mut log, 10_000);
    let done = job.run();
    assert!(!cleaned_files(tmp.path()).is_empty(), "the job wrote its group's file");
    let cut = log.log_end_offset() - 7;
    super::truncate_deferred(&mut log, cut);
    assert_eq!(log.cleaned(done, 10_000).unwrap(), CleanStep::Working { bytes: 0 });
    let discard = log.take_clean().expect("the files' removal is a job");
    assert_eq!(log.cleaned(discard.run(), 10_000).unwrap(), CleanStep::Working { bytes: 0 });
    assert!(cleaned_files(tmp.path()).is_empty(), "{:?}", cleaned_files(tmp.path()));
    assert!(log.cleaned_to() <= cut);
    let truncated = contents(&log).0;
    log.roll(0).unwrap();
    finish_pass(&mut log, 10_000, 300);
    assert_eq!(latest_of(&contents(&log).0), latest_of(&truncated));

    // Aborted before the owner took it, the job never runs: nothing is in flight.
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { cleanup: CleanupPolicy { delete: true, compact: true }, retention_ms: 1_000, ..compacted() };
    let mut log = deferred_log(disk(), tmp.path(), config);
    let upper = log.log_end_offset();
    assert_eq!(log.clean_step(3_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
    assert!(log.apply_retention(10_000, log.log_end_offset()).unwrap() > 0);
    assert!(log.take_clean().is_none() && log.cleaning_phase().is_none());
    assert!(cleaned_files(tmp.path()).is_empty());
}

#[test]
fn a_dropped_passs_files_go_in_a_job_before_which_no_later_pass_makes_files_of_the_same_names() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, rec) = super::cleaning_txn::Recorder::disk();
    let mut log = deferred_log(d, tmp.path(), compacted());
    // Between steps, with the first group's files made.
    while cleaned_files(tmp.path()).is_empty() {
        let upper = log.log_end_offset();
        assert!(matches!(clean_step_now(&mut log, 10_000, upper, 300), CleanStep::Working { .. }));
        swap_now(&mut log);
    }
    let made = cleaned_files(tmp.path());
    // A truncation aborts the pass: its decision unlinks no `.cleaned` file.
    let cut = log.log_end_offset() - 7;
    rec.take();
    log.truncate_to(cut, 0).unwrap();
    let decided = rec.take();
    assert!(!decided.iter().any(|op| op.contains(".cleaned")), "{decided:?}");
    assert_eq!(cleaned_files(tmp.path()), made);
    let job = log.take_cut().expect("a truncation's job");
    let done = job.run().map(drop);
    assert!(log.cut_done(job.stamp, done));
    let truncated = contents(&log).0;
    // The next turn hands the removal out as a job, and no turn starts a pass until its report.
    let upper = log.log_end_offset();
    assert_eq!(log.clean_step(10_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
    let discard = log.take_clean().expect("the files' removal is a job");
    assert_eq!((discard.clean_point(), log.cleaning_phase()), (None, None), "no pass in flight");
    log.roll(0).unwrap();
    for _ in 0..3 {
        let upper = log.log_end_offset();
        assert_eq!(log.clean_step(10_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
        assert!(log.take_clean().is_none(), "no pass starts while the removal is in flight");
    }
    assert_eq!(cleaned_files(tmp.path()), made, "nothing made or removed meanwhile");
    let done = discard.run();
    assert!(cleaned_files(tmp.path()).is_empty());
    assert_eq!(log.cleaned(done, 10_000).unwrap(), CleanStep::Working { bytes: 0 });
    // The next pass makes the same group's files again; the removal, run again, or its report
    // delivered again, touches none of them.
    while cleaned_files(tmp.path()).is_empty() {
        let upper = log.log_end_offset();
        assert!(matches!(clean_step_now(&mut log, 10_000, upper, 300), CleanStep::Working { .. }));
        swap_now(&mut log);
    }
    let remade = cleaned_files(tmp.path());
    assert!(remade.iter().any(|n| made.contains(n)), "{remade:?} {made:?}");
    let again = discard.run();
    assert_eq!(log.cleaned(again, 10_000).unwrap(), CleanStep::Working { bytes: 0 });
    assert_eq!(cleaned_files(tmp.path()), remade);
    assert!(finish_pass(&mut log, 10_000, 300).is_some());
    assert!(cleaned_files(tmp.path()).is_empty());
    assert_eq!(latest_of(&contents(&log).0), latest_of(&truncated));
}

#[test]
fn a_whole_pass_through_jobs_leaves_the_bytes_an_inline_pass_leaves() {
    let (inline_tmp, jobs_tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut inline, _) = Log::open(disk(), inline_tmp.path(), compacted(), 0).unwrap();
    updates(&mut inline, 6, 40, 1_000);
    inline.roll(0).unwrap();
    let mut jobs = deferred_log(disk(), jobs_tmp.path(), compacted());
    let expected = inline.clean(10_000, inline.log_end_offset(), map_bytes).unwrap().expect("due");
    let stats = finish_pass(&mut jobs, 10_000, 300);
    assert_eq!(stats.as_ref(), Some(&expected), "the same pass");
    assert!(expected.segments_rewritten > 0);
    let logs = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).filter(|e| e.file_name().to_string_lossy().ends_with(".log")).map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())).collect();
        out.sort();
        out
    };
    drop((inline, jobs));
    let (a, b) = (logs(inline_tmp.path()), logs(jobs_tmp.path()));
    assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>(), "the same segments");
    assert!(a == b, "the same bytes in every segment");
    let point = |dir: &Path| std::fs::read(dir.join("cleaner-offset-checkpoint")).unwrap();
    assert_eq!(point(inline_tmp.path()), point(jobs_tmp.path()), "the same clean point");
}

#[test]
fn after_a_failed_swap_the_pass_ends_and_no_turn_sets_its_clean_point() {
    // One closed segment: the group whose swap fails is the pass's last, so a turn that went
    // on with the pass would find no group left and set the clean point past it.
    let tmp = tempfile::tempdir().unwrap();
    let (d, _, fail_sync) = ProbeDisk::shared();
    let (mut log, _) = Log::open(d, tmp.path(), compacted(), 0).unwrap();
    log.defer_syncs();
    let latest = updates(&mut log, 6, 3, 1_000);
    log.roll(0).unwrap();
    assert_eq!(log.segment_bases().len(), 2, "one closed segment");
    let before = log.cleaned_to();
    let job = loop {
        let upper = log.log_end_offset();
        assert!(matches!(clean_step_now(&mut log, 10_000, upper, 300), CleanStep::Working { .. }));
        if let Some(job) = log.take_swap() {
            break job;
        }
    };
    fail_sync.store(true, Ordering::SeqCst); // the cleaned segment's sync, the swap's first
    assert!(log.swapped(job.run()).is_err());
    assert!(log.failure().is_some(), "a failed swap takes the log offline");
    assert_eq!(log.cleaning_phase(), None, "the pass ended with the swap");
    let upper = log.log_end_offset();
    assert_eq!(log.clean_step(10_000, upper, map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Idle);
    assert!(log.take_clean().is_none());
    assert_eq!(log.cleaned_to(), before, "no clean point past the group never swapped in");
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.cleaned_to(), before, "nor on disk");
    assert_eq!(latest_of(&contents(&log).0), latest, "the old segment's records");
}

#[test]
fn log_clean_runs_the_steps_and_swaps_inline_with_deferral_on() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferred_log(disk(), tmp.path(), compacted());
    let before = contents(&log).0;
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(stats.segments_rewritten > 0, "{stats:?}");
    assert!(!log.swapping() && log.cleaning_phase().is_none());
    let after = contents(&log).0;
    assert!(after.len() < before.len());
    assert_eq!(latest_of(&after), latest_of(&before));
    assert!(cleaned_files(tmp.path()).is_empty());
}

/// Counts the syncs of cleaned segments' `.log.cleaned` files.
#[derive(Default)]
struct CleanedSyncs(std::sync::atomic::AtomicU64);

impl Hook for CleanedSyncs {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        if let Op::Sync { path } = op {
            if path.to_string_lossy().ends_with(".log.cleaned") {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

#[test]
fn a_steps_job_syncs_the_cleaned_file_every_cleaner_sync_bytes_and_the_turn_never_does() {
    // A first segment a little over `cleaner_sync_bytes` of live keys (1 KiB each), and a
    // second to make it cleanable: its group's file is synced once as it grows, in a job.
    let tmp = tempfile::tempdir().unwrap();
    let syncs = Arc::new(CleanedSyncs::default());
    let d: Arc<dyn Disk> = Arc::new(Hooked::new(Arc::new(FileDisk::new()), syncs.clone()));
    let bytes = crate::constants::cleaner_sync_bytes + (1 << 20);
    let (mut log, _) = Log::open(d, tmp.path(), LogConfig { segment_bytes: bytes as u64, ..compacted() }, 0).unwrap();
    log.defer_syncs();
    let value = vec![b'v'; 1024];
    let mut k = 0;
    while log.segment_bases().len() < 2 {
        let keys: Vec<String> = (k..k + 16).map(|i| format!("k{i}")).collect();
        let kv: Vec<batch::KeyValue> = keys.iter().map(|key| (Some(key.as_bytes()), Some(&value[..]))).collect();
        log.append(&mut batch::build_keyed(&kv, 1_000), 1, 0).unwrap();
        k += 16;
    }
    let count = || syncs.0.load(Ordering::Relaxed);
    let (mut in_jobs, mut in_turns) = (0, 0);
    for _ in 0..100_000 {
        let at = count();
        let mut step = log.clean_step(10_000, log.log_end_offset(), map_bytes, crate::constants::cleaner_step_bytes, clean::Keep::Latest).unwrap();
        in_turns += count() - at;
        if let Some(job) = log.take_clean() {
            let at = count();
            let done = job.run();
            in_jobs += count() - at;
            let at = count();
            step = log.cleaned(done, 10_000).unwrap();
            in_turns += count() - at;
        }
        swap_now(&mut log);
        if let CleanStep::Done { stats, .. } = step {
            assert!(stats.is_some(), "the pass ran");
            break;
        }
    }
    assert_eq!(in_jobs, 1, "{bytes} bytes of cleaned file: one sync as it grows, in the job");
    assert_eq!(in_turns, 0, "no turn or report syncs it");
}
