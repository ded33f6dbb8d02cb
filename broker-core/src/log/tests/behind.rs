//! The write-behind (`log::deferred`, `log::overlay`): appends staged inside the decision, read
//! back before they are written, written by the owner's job, counted only once reported, never
//! cut while a write is in flight, and a crash loses only what no job wrote.

use super::super::batch::build;
use super::super::*;
use super::{disk, truncate_deferred};
use crate::storage::hooked::Hooked;

fn behind(dir: &Path, disk: Arc<dyn Disk>) -> Log {
    let (mut log, _) = Log::open(disk, dir, LogConfig::default(), 0).unwrap();
    log.defer_syncs();
    log.defer_writes();
    log
}

fn one(log: &mut Log, value: &[u8]) -> AppendInfo {
    log.append(&mut build(&[value], 0), 0, 0).unwrap()
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(format!("{}.log", file_stem(0)))).unwrap().len()
}

#[test]
fn staged_appends_read_back_at_once_and_count_only_once_a_job_wrote_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = behind(tmp.path(), disk());
    for v in [b"a", b"b", b"c"] {
        one(&mut log, v);
    }
    assert_eq!(file_len(tmp.path()), 0, "the decision wrote nothing");
    let read = log.read(0, 1 << 20, 3).unwrap().bytes;
    assert_eq!(read.len() as u64, log.size_bytes(), "every staged batch reads back");
    let slice = log.slice(0, 1 << 20, 3).unwrap();
    let Records::File(regions) = &slice else { panic!("file regions") };
    assert!(regions.iter().all(|r| r.raw_fd().is_none()), "no sendfile over staged bytes");
    assert_eq!(slice.to_bytes().unwrap(), read, "the copying path reads them from memory");
    assert_eq!((log.written_end(), log.policy_end()), (0, 0), "nothing written, nothing counted");

    let job = log.take_sync().expect("a job that writes");
    assert!(!job.syncs(), "no sync is owed under flush=never");
    assert!(log.take_sync().is_none(), "one job for what is staged");
    let result = job.run();
    log.synced(job.stamp, result);
    assert_eq!((log.written_end(), log.policy_end()), (3, 3));
    assert_eq!(file_len(tmp.path()), log.size_bytes());
    let Records::File(regions) = log.slice(0, 1 << 20, 3).unwrap() else { panic!("file regions") };
    assert!(regions.iter().all(|r| r.raw_fd().is_some()), "written bytes go by sendfile again");
    assert_eq!(log.read(0, 1 << 20, 3).unwrap().bytes, read);
}

#[test]
fn a_truncation_waits_for_a_write_in_flight_and_changes_nothing_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = behind(tmp.path(), disk());
    for v in [b"a", b"b", b"c"] {
        one(&mut log, v);
    }
    let job = log.take_sync().unwrap();
    assert!(matches!(log.truncate_to(1, 0), Err(LogError::Busy(_))));
    assert!(matches!(log.truncate_fully(0, 0), Err(LogError::Busy(_))));
    assert_eq!((log.log_end_offset(), log.failure()), (3, None), "refused, not failed");
    let result = job.run();
    log.synced(job.stamp, result);
    truncate_deferred(&mut log, 1);
    assert_eq!((log.log_end_offset(), log.written_end()), (1, 1));
    one(&mut log, b"d");
    let job = log.take_sync().unwrap();
    let result = job.run();
    log.synced(job.stamp, result);
    assert_eq!(log.written_end(), 2);
    assert_eq!(file_len(tmp.path()), log.size_bytes());
}

#[test]
fn a_cut_drops_staged_bytes_past_it_and_the_truncation_writes_what_it_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = behind(tmp.path(), disk());
    one(&mut log, b"a");
    let first = log.take_sync().unwrap();
    let result = first.run();
    log.synced(first.stamp, result);
    one(&mut log, b"b");
    one(&mut log, b"c");
    // Staged, no job taken yet (as between a decision and its job): the cut may go ahead.
    log.truncate_to(2, 0).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.read(0, 1 << 20, 2).unwrap().bytes.len() as u64, log.size_bytes());
    assert!(file_len(tmp.path()) < log.size_bytes(), "the decision wrote nothing");
    let job = log.take_cut().expect("the truncation's job");
    let done = job.run().map(drop);
    assert!(log.cut_done(job.stamp, done));
    assert_eq!(file_len(tmp.path()), log.size_bytes(), "the truncation's job wrote what it kept");
    assert_eq!(log.written_end(), 2);
}

#[test]
fn a_checkpoint_vouches_only_for_written_bytes_and_a_crash_loses_only_unwritten_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = behind(tmp.path(), disk());
    one(&mut log, b"a");
    one(&mut log, b"b");
    let job = log.take_sync().unwrap();
    let result = job.run();
    log.synced(job.stamp, result);
    one(&mut log, b"c");
    let staged = log.checkpoint_stage().unwrap().expect("a checkpoint to stage");
    crate::storage::FileDisk::new().sync_all(tmp.path()).unwrap();
    log.checkpoint_commit(staged).unwrap();
    assert_eq!(log.recovery_point(), 2, "the staged record is not in the page cache a sync covers");
    drop(log); // the process dies: nothing flushes the staged record
    let (log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    assert_eq!(log.log_end_offset(), 2, "what a job wrote survives, the staged record is gone");
}

#[test]
fn a_failed_write_takes_the_log_offline_and_counts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut log = behind(tmp.path(), Arc::new(Hooked::new(disk(), Arc::new(crate::testing::FailLogWrites(fail.clone())))));
    one(&mut log, b"a");
    fail.store(true, std::sync::atomic::Ordering::Relaxed);
    let job = log.take_sync().unwrap();
    let result = job.run();
    assert!(result.is_err());
    log.synced(job.stamp, result);
    assert!(log.failure().is_some_and(|why| why.contains("write failed")), "{:?}", log.failure());
    assert_eq!((log.written_end(), log.policy_end()), (0, 0));
    assert!(log.append(&mut build(&[b"b"], 0), 0, 0).is_err(), "an offline log takes no appends");
}

#[test]
fn the_shutdown_writes_what_is_staged_so_the_checkpoint_covers_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = behind(tmp.path(), disk());
    one(&mut log, b"a");
    let _never_run = log.take_sync().expect("a job the shutdown overtakes");
    one(&mut log, b"b");
    log.write_staged().unwrap();
    assert_eq!((log.written_end(), file_len(tmp.path())), (2, log.size_bytes()));
    let staged = log.checkpoint_stage().unwrap().expect("a checkpoint to stage");
    crate::storage::FileDisk::new().sync_all(tmp.path()).unwrap();
    log.checkpoint_commit(staged).unwrap();
    assert_eq!(log.recovery_point(), 2, "the checkpoint vouches for both records");
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    assert_eq!(log.log_end_offset(), 2);
}
