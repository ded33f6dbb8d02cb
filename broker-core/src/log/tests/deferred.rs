//! Syncs left to the owner (`log::deferred`): what a job vouches for, in any order, across cuts
//! and reopens, and what a leader may count meanwhile.

use super::super::batch::build;
use super::super::*;
use super::{disk, truncate_deferred};

fn deferring(dir: &Path, flush: FlushPolicy) -> Log {
    let (mut log, _) = Log::open(disk(), dir, LogConfig { flush, ..LogConfig::default() }, 0).unwrap();
    log.defer_syncs();
    log
}

fn one(log: &mut Log) -> AppendInfo {
    log.append(&mut build(&[b"v"], 0), 0, 0).unwrap()
}

#[test]
fn a_policy_sync_is_owed_to_a_job_and_counts_only_once_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferring(tmp.path(), FlushPolicy::EveryBatch);
    assert!(one(&mut log).flushed, "the policy called for a sync");
    assert_eq!((log.recovery_point(), log.policy_end(), log.log_end_offset()), (0, 0, 1), "not synced yet, so not counted");
    let job = log.take_sync().expect("a job");
    assert!(log.take_sync().is_none(), "one job per request");
    assert_eq!(job.stamp.upto, 1);
    let result = job.run();
    assert!(log.synced(job.stamp, result));
    assert_eq!((log.recovery_point(), log.policy_end()), (1, 1));
}

#[test]
fn a_later_job_finishing_first_vouches_for_the_earlier_range_too() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferring(tmp.path(), FlushPolicy::EveryBatch);
    one(&mut log);
    let first = log.take_sync().unwrap();
    one(&mut log);
    let second = log.take_sync().unwrap();
    assert!(log.synced(second.stamp, second.run()));
    assert_eq!((log.recovery_point(), log.policy_end()), (2, 2));
    assert!(!log.synced(first.stamp, first.run()), "an older job moves nothing back");
    assert_eq!(log.recovery_point(), 2);
}

#[test]
fn a_job_taken_before_a_cut_vouches_for_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferring(tmp.path(), FlushPolicy::EveryBatch);
    for _ in 0..3 {
        one(&mut log);
    }
    let stale = log.take_sync().unwrap();
    truncate_deferred(&mut log, 1);
    for _ in 0..3 {
        one(&mut log);
    }
    assert_eq!(log.recovery_point(), 1, "the truncation synced its cut");
    assert!(!log.synced(stale.stamp, stale.run()), "offsets 1..3 now hold other, unsynced records");
    assert_eq!((log.recovery_point(), log.policy_end()), (1, 1));
    let fresh = log.take_sync().unwrap();
    assert!(log.synced(fresh.stamp, fresh.run()));
    assert_eq!(log.recovery_point(), 4);
}

#[test]
fn a_failed_job_takes_the_log_offline_and_a_reopened_log_is_not_its() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferring(tmp.path(), FlushPolicy::EveryBatch);
    one(&mut log);
    let job = log.take_sync().unwrap();
    assert!(log.owns(&job.stamp));
    assert!(!log.synced(job.stamp, Err(LogError::Failed("injected".into()))));
    assert!(log.failure().is_some_and(|f| f.contains("injected")), "{:?}", log.failure());
    drop(log);
    let reopened = deferring(tmp.path(), FlushPolicy::EveryBatch);
    assert!(!reopened.owns(&job.stamp));
}

#[test]
fn a_roll_owes_the_full_segment_to_a_job_without_holding_back_the_mark() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig { segment_bytes: 200, ..LogConfig::default() }, 0).unwrap();
    log.defer_syncs();
    while log.segment_bases().len() < 2 {
        assert!(!one(&mut log).flushed);
    }
    assert_eq!(log.recovery_point(), 0, "the roll did not sync inline");
    assert_eq!(log.policy_end(), log.log_end_offset(), "flush=never holds nothing back");
    let job = log.take_sync().expect("the rolled segment's sync");
    assert!(log.synced(job.stamp, job.run()));
    assert_eq!(log.recovery_point(), log.log_end_offset());
}

#[test]
fn a_checkpoint_commits_its_staged_end_across_appends_but_not_across_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let mut log = deferring(&a, FlushPolicy::Never);
    one(&mut log);
    one(&mut log);
    let staged = log.checkpoint_stage().unwrap().expect("changed since open");
    disk().sync_all(tmp.path()).unwrap();
    one(&mut log); // between the halves, as the shell lets appends in
    log.checkpoint_commit(staged).unwrap();
    assert_eq!(log.recovery_point(), 2, "the staged end, not the log end");
    assert_eq!(std::fs::read_to_string(a.join(RECOVERY_POINT_FILE)).unwrap(), "2\n");

    let mut log = deferring(&b, FlushPolicy::Never);
    for _ in 0..3 {
        one(&mut log);
    }
    let staged = log.checkpoint_stage().unwrap().unwrap();
    disk().sync_all(tmp.path()).unwrap();
    truncate_deferred(&mut log, 1);
    for _ in 0..3 {
        one(&mut log); // offsets 1..4 again, unsynced
    }
    log.checkpoint_commit(staged).unwrap();
    assert_eq!(log.recovery_point(), 1, "a checkpoint staged before the cut vouches for nothing");
    assert_eq!(std::fs::read_to_string(b.join(RECOVERY_POINT_FILE)).unwrap(), "1\n", "the truncation's own checkpoint stands");
}

/// Counts the directory syncs reaching the real disk.
#[derive(Default)]
struct DirSyncs(std::sync::atomic::AtomicUsize);

impl crate::storage::hooked::Hook for DirSyncs {
    fn before(&self, op: crate::storage::hooked::Op<'_>) -> std::io::Result<()> {
        if let crate::storage::hooked::Op::SyncDir { .. } = op {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
}

#[test]
fn retention_leaves_the_directory_sync_and_the_recovery_point_to_the_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let hook = Arc::new(DirSyncs::default());
    let disk: Arc<dyn Disk> = Arc::new(crate::storage::hooked::Hooked::new(disk(), hook.clone()));
    let config = LogConfig { segment_bytes: 200, retention_bytes: 0, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk, tmp.path(), config, 0).unwrap();
    log.defer_syncs();
    while log.segment_bases().len() < 4 {
        one(&mut log);
    }
    let rolls = log.take_sync().expect("the rolls owe their segments' sync");
    let (rp, before) = (log.recovery_point(), hook.0.load(std::sync::atomic::Ordering::SeqCst));
    assert!(log.apply_retention(0, log.log_end_offset()).unwrap() >= 2);
    assert_eq!(hook.0.load(std::sync::atomic::Ordering::SeqCst), before, "no directory sync inside the decision");
    assert_eq!(log.recovery_point(), rp, "nothing vouched for until a job is done");
    // The next job syncs the directory and moves the recovery point past the deletions.
    assert!(log.synced(rolls.stamp, rolls.run()));
    log.roll(0).unwrap();
    one(&mut log);
    let job = log.take_sync().expect("the roll's job, with the directory");
    assert!(log.synced(job.stamp, job.run()));
    assert!(hook.0.load(std::sync::atomic::Ordering::SeqCst) > before);
    assert_eq!(log.recovery_point(), log.log_end_offset());
}

#[test]
fn a_job_whose_end_a_later_one_passed_first_still_pays_what_it_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = deferring(tmp.path(), FlushPolicy::EveryBatch);
    one(&mut log);
    let before = log.take_sync().expect("the policy's job");
    // A file the log owes (as a marker the broker wrote beside it), then a roll's job.
    std::fs::write(tmp.path().join("marker"), b"m").unwrap();
    log.owed.note(super::super::durability::Owed::File(tmp.path().join("marker")));
    log.roll(0).unwrap();
    let after = log.take_sync().expect("the roll's job, with the file owed");
    assert!(log.synced(before.stamp, before.run()));
    assert!(!log.synced(after.stamp, after.run()), "the first report already moved the recovery point to this end");
    assert!(log.owed.is_empty(), "what the second job synced is paid all the same");
}

/// Every file fsynced, in order.
#[derive(Default)]
struct FileSyncs(std::sync::Mutex<Vec<PathBuf>>);

impl crate::storage::hooked::Hook for FileSyncs {
    fn before(&self, op: crate::storage::hooked::Op<'_>) -> std::io::Result<()> {
        if let crate::storage::hooked::Op::Sync { path } = op {
            self.0.lock().unwrap().push(path.to_path_buf());
        }
        Ok(())
    }
}

fn watched(dir: &Path, flush: FlushPolicy) -> (Log, Arc<FileSyncs>) {
    let hook = Arc::new(FileSyncs::default());
    let disk: Arc<dyn Disk> = Arc::new(crate::storage::hooked::Hooked::new(disk(), hook.clone()));
    let config = LogConfig { segment_bytes: 4096, index_interval_bytes: 1, flush, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk, dir, config, 0).unwrap();
    log.defer_syncs();
    (log, hook)
}

#[test]
fn a_roll_past_the_recovery_point_syncs_nothing_inside_the_decision_and_its_job_syncs_the_rolled_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, hook) = watched(tmp.path(), FlushPolicy::Never);
    while log.segment_bases().len() < 2 {
        one(&mut log);
    }
    let rolled = log.segment_bases()[0];
    assert_eq!(*hook.0.lock().unwrap(), Vec::<PathBuf>::new(), "the roll synced inside the decision");
    assert!(log.recovery_point() <= rolled, "nothing vouched for before a job");
    let job = log.take_sync().expect("the roll owes its segment's sync");
    assert!(log.synced(job.stamp, job.run()));
    let synced = hook.0.lock().unwrap().clone();
    let stem = tmp.path().join(format!("{rolled:020}"));
    for ext in ["log", "index", "timeindex"] {
        assert!(synced.contains(&stem.with_extension(ext)), "the job synced the rolled segment's .{ext}: {synced:?}");
    }
    assert!(log.recovery_point() > rolled);
}

/// Under flush-every-batch the recovery point reaches the log end before a roll, but no
/// checkpoint on disk covers the rolled segment yet: its roll syncs nothing inside the decision
/// either, and a log reopened before the job paid recovers the segment (its checkpoint is below
/// it) instead of trusting index files nobody synced.
#[test]
fn a_roll_under_flush_every_batch_owes_its_indexes_and_a_reopen_before_the_job_recovers_the_segment() {
    let rolled = |dir: &Path| {
        let (mut log, hook) = watched(dir, FlushPolicy::EveryBatch);
        one(&mut log);
        let job = log.take_sync().unwrap();
        assert!(log.synced(job.stamp, job.run()));
        assert_eq!(log.recovery_point(), log.log_end_offset());
        hook.0.lock().unwrap().clear();
        log.roll(0).unwrap();
        assert_eq!(*hook.0.lock().unwrap(), Vec::<PathBuf>::new(), "the roll synced inside the decision");
        (log, hook)
    };
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, hook) = rolled(tmp.path());
    let job = log.take_sync().expect("the roll's index syncs are owed to a job");
    log.synced(job.stamp, job.run());
    let synced = hook.0.lock().unwrap().clone();
    let stem = tmp.path().join(format!("{:020}", 0));
    for ext in ["index", "timeindex"] {
        assert!(synced.contains(&stem.with_extension(ext)), "the job synced the .{ext}: {synced:?}");
    }
    let other = tempfile::tempdir().unwrap();
    drop(rolled(other.path()));
    let (_, report) = Log::open(disk(), other.path(), LogConfig { segment_bytes: 4096, index_interval_bytes: 1, ..LogConfig::default() }, 0).unwrap();
    assert_eq!((report.segments_trusted, report.segments_scanned), (0, 2), "nothing vouched for the rolled segment");
}

/// A segment the checkpoint on disk already covers whole (a log opened at a checkpoint at its
/// end, whose last segment's indexes open rebuilt without syncing them): its roll syncs them at
/// once, since open will trust the segment whatever the log owes, and a reopen drops what a log
/// owes. Owing them instead let `crash-log --deferred` seed 342329 find a trusted segment whose
/// time index was the one from before the last crash.
#[test]
fn a_roll_of_a_segment_the_checkpoint_covers_syncs_its_rebuilt_indexes_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (mut log, _) = watched(tmp.path(), FlushPolicy::EveryBatch);
        one(&mut log);
        let job = log.take_sync().unwrap();
        assert!(log.synced(job.stamp, job.run()));
        log.checkpoint().unwrap();
    }
    let (mut log, hook) = watched(tmp.path(), FlushPolicy::EveryBatch);
    log.roll(0).unwrap();
    let synced = hook.0.lock().unwrap().clone();
    let stem = tmp.path().join(format!("{:020}", 0));
    for ext in ["index", "timeindex"] {
        assert!(synced.contains(&stem.with_extension(ext)), "the roll synced the rebuilt .{ext}: {synced:?}");
    }
}

/// A checkpoint's commit vouches only for what its file-system sync saw: a segment removed
/// between the stage and the commit (retention, DeleteRecords, decided while the shell ran the
/// sync) leaves its directory sync owed. Clearing it let the removal be lost to a power loss
/// with nothing left to sync it (the next stage found nothing changed).
#[test]
fn a_segment_removed_between_a_checkpoints_stage_and_commit_leaves_its_directory_sync_owed() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { segment_bytes: 200, retention_bytes: 0, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    log.defer_syncs();
    while log.segment_bases().len() < 3 {
        one(&mut log);
    }
    let job = log.take_sync().unwrap();
    assert!(log.synced(job.stamp, job.run()));
    let staged = log.checkpoint_stage().unwrap().expect("changed since open");
    disk().sync_all(tmp.path()).unwrap();
    assert!(log.apply_retention(0, log.log_end_offset()).unwrap() >= 1);
    log.checkpoint_commit(staged).unwrap();
    assert!(log.dir_dirty, "the removal's directory sync was called done by a sync that came before it");
    assert!(log.checkpoint_stage().unwrap().is_some(), "the next checkpoint has the directory to make durable");
}

/// `flush.ms` is owed to a job too: the tick that finds it due syncs nothing inside the
/// decision, and the records it covers count for the high watermark once the job is reported.
#[test]
fn a_flush_ms_sync_is_owed_to_a_job_not_made_inside_the_tick() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, hook) = watched(tmp.path(), FlushPolicy::EveryMs(10));
    one(&mut log);
    hook.0.lock().unwrap().clear();
    log.tick(1_000, log.log_end_offset()).unwrap();
    assert_eq!(*hook.0.lock().unwrap(), Vec::<PathBuf>::new(), "the tick synced inside the decision");
    assert_eq!(log.policy_end(), 0, "not counted before its sync");
    let job = log.take_sync().expect("the flush.ms sync is owed to a job");
    assert!(log.synced(job.stamp, job.run()));
    assert_eq!(log.policy_end(), 1);
    assert!(log.take_sync().is_none(), "one sync per deadline");
}
