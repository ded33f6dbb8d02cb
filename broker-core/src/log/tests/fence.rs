//! Jobs that run after their log was let go (`log::fence`), on real files: a cleaning swap
//! after its log was reopened and began the same group's swap again, a truncation's job after
//! its topic was deleted and created again at the same path, a write job after its log was
//! reopened and took other appends. Each does nothing, so the directory is exactly what the
//! log that now owns it made; without the fence the first would swap the new log's half-made
//! files in, the second write the old log's checkpoints into the new topic, and the third put
//! stale bytes under the new log's records.

use super::super::*;
use super::cleaning::{compacted, contents, latest_of};
use super::batch::build;
use super::{disk, fill, read_all, small};

/// Every file of `dir` with its bytes, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())).collect();
    out.sort();
    out
}

fn assert_closed(result: Result<(), LogError>) {
    let e = result.expect_err("a job of a log let go must not run");
    assert!(e.to_string().contains("closed before this job ran"), "{e}");
}

/// Steps `log`'s pass until its first group's swap is owed.
fn swap_owed(log: &mut Log) -> SwapJob {
    for _ in 0..10_000 {
        let upper = log.log_end_offset();
        assert!(matches!(super::clean_step_now(log, 10_000, upper, 300), CleanStep::Working { .. }));
        if let Some(job) = log.take_swap() {
            return job;
        }
    }
    panic!("no swap owed");
}

#[test]
fn a_swap_run_after_its_log_was_reopened_leaves_the_new_logs_files_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, stale, before) = super::swap::log_with_a_swap_owed(tmp.path());
    // The log fails and is reopened (`Broker::reopen_failed`) before the shell ran the swap.
    old.close_jobs();
    drop(old);
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    log.defer_syncs();
    assert_eq!(contents(&log).0, before, "the swap never ran: the old segments");
    // The reopened log cleans the same group again: its own `B.log.cleaned` is built and
    // waits for its swap, under the very names the stale job renames.
    let fresh = swap_owed(&mut log);
    let on_disk = files(tmp.path());
    assert!(on_disk.iter().any(|(n, _)| n.ends_with(".log.cleaned")), "{:?}", on_disk.iter().map(|f| &f.0).collect::<Vec<_>>());
    let done = stale.run();
    assert_eq!(files(tmp.path()), on_disk, "the stale swap changed the reopened log's directory");
    assert!(SwapJob::fenced(&done), "{done:?}");
    log.swapped(done).unwrap();
    assert!(log.swapping() && log.failure().is_none(), "a stale report is not the log's");
    // The log's own swap and the rest of its pass go through, and nothing is lost.
    log.swapped(fresh.run()).unwrap();
    loop {
        let upper = log.log_end_offset();
        match super::clean_step_now(&mut log, 10_000, upper, 300) {
            CleanStep::Done { .. } => break,
            CleanStep::Working { .. } => {
                if let Some(job) = log.take_swap() {
                    log.swapped(job.run()).unwrap();
                }
            }
            CleanStep::Idle => panic!("the pass was in flight"),
        }
    }
    let after = contents(&log).0;
    assert_eq!(latest_of(&after), latest_of(&before));
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(contents(&log).0, after, "a reopened log reads the same");
}

#[test]
fn a_truncations_job_run_after_its_topic_was_deleted_and_created_again_writes_nothing_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let (mut old, _) = Log::open(disk(), &dir, small(), 0).unwrap();
    old.defer_syncs();
    old.defer_writes();
    fill(&mut old, 60, 0);
    let job = old.take_sync().unwrap();
    let result = job.run();
    old.synced(job.stamp, result);
    old.flush(0).unwrap();
    old.checkpoint().unwrap();
    // A follower's truncation, its job not yet run; then the topic is deleted (the broker's
    // `remove_local`) and created again under the same name.
    old.truncate_to(old.log_end_offset() - 30, 0).unwrap();
    let stale = old.take_cut().expect("a truncation's job");
    old.close_jobs();
    drop(old);
    dir::remove(disk().as_ref(), tmp.path(), &dir).unwrap();
    let (mut log, _) = Log::open(disk(), &dir, small(), 0).unwrap();
    let sent = fill(&mut log, 2, 0);
    log.flush(0).unwrap();
    log.checkpoint().unwrap();
    let on_disk = files(&dir);
    assert_closed(stale.run().map(drop));
    assert_eq!(files(&dir), on_disk, "the old topic's truncation wrote into the new topic's directory");
    drop(log);
    let (log, _) = Log::open(disk(), &dir, small(), 0).unwrap();
    assert_eq!((read_all(&log), log.recovery_point()), (sent, 6));
}

#[test]
fn a_write_job_run_after_its_log_was_reopened_puts_no_stale_bytes_under_the_new_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut old, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    old.defer_syncs();
    old.defer_writes();
    for i in 0..5 {
        old.append(&mut build(&[format!("old-{i}").as_bytes()], 1_000), 1, 0).unwrap();
    }
    let stale = old.take_sync().expect("the staged appends' write");
    // The log goes offline (another job failed) and is reopened before this one ran: its
    // staged appends were never written, so the reopened log is empty and takes others.
    old.close_jobs();
    drop(old);
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    log.append(&mut build(&[b"new".as_slice()], 2_000), 2, 0).unwrap();
    let sent = read_all(&log);
    log.flush(0).unwrap();
    assert_closed(stale.run());
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(read_all(&log), sent, "the reopened log's record, and nothing after it");
}

#[test]
fn a_shut_fence_lets_the_running_job_finish_starts_no_other_and_its_close_waits_for_it() {
    use std::sync::mpsc::channel;
    let fence = Fence::default();
    let (started_tx, started) = channel();
    let (finish, finish_rx) = channel::<()>();
    let inside = fence.clone();
    let running = std::thread::spawn(move || inside.pass(|| {
        started_tx.send(()).unwrap();
        finish_rx.recv().unwrap();
        Ok(7)
    }));
    started.recv().unwrap();
    fence.shut(); // returns at once, the job still inside
    assert!(did_nothing(&fence.pass(|| Ok(1))), "no job starts inside a shut fence");
    let closer = fence.clone();
    let closing = std::thread::spawn(move || closer.close());
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(!closing.is_finished(), "the close waits for the job running inside");
    finish.send(()).unwrap();
    assert_eq!(running.join().unwrap().unwrap(), 7);
    closing.join().unwrap();
}
