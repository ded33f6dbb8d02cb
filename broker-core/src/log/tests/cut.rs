//! A truncation as the owner's job (`log::cut`), on real files: the decision changes memory
//! and removes names only, the job does the syncs, the file cut and the checkpoint; nothing is
//! appended, written, flushed, checkpointed or cut again before its report; a log dropped
//! before the job ran reopens as a dense prefix of the old log, and one dropped after it as
//! exactly the truncated log; a failed job takes the log offline; a report for a reopened log
//! vouches for nothing.

use super::super::*;
use super::{disk, fill, read_all, small};
use crate::storage::hooked::{Hook, Hooked, Op};
use std::sync::Mutex;

/// The disk calls that change files or make them durable, as "op file-name" lines.
#[derive(Default)]
struct Calls(Mutex<Vec<String>>);

impl Calls {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Hook for Calls {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        let name = |p: &Path| p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let line = match op {
            Op::WriteAt { path, .. } | Op::Append { path, .. } => format!("write {}", name(path)),
            Op::Truncate { path, len } => format!("truncate {} to {len}", name(path)),
            Op::Sync { path } => format!("sync {}", name(path)),
            Op::Rename { to, .. } => format!("rename {}", name(to)),
            Op::Remove { path } => format!("remove {}", name(path)),
            Op::SyncDir { .. } => "sync-dir".to_string(),
            Op::SyncAll { .. } => "sync-all".to_string(),
        };
        self.0.lock().unwrap().push(line);
        Ok(())
    }
}

/// A log as the broker keeps it (syncs and writes deferred) over a disk that records its calls,
/// filled with `batches` of 3 records across several segments, all written and synced.
fn deferring(dir: &Path, batches: usize) -> (Log, Arc<Calls>, Vec<Vec<u8>>) {
    let calls = Arc::new(Calls::default());
    let watched: Arc<dyn Disk> = Arc::new(Hooked::new(disk(), calls.clone()));
    let (mut log, _) = Log::open(watched, dir, small(), 0).unwrap();
    log.defer_syncs();
    log.defer_writes();
    let sent = fill(&mut log, batches, 0);
    let job = log.take_sync().expect("the appends' writes and the rolls' syncs");
    let result = job.run();
    log.synced(job.stamp, result);
    log.flush(0).unwrap();
    log.checkpoint().unwrap();
    calls.take();
    (log, calls, sent)
}

/// A call that blocks for milliseconds on a real disk: a sync, a file cut, a rename or a write
/// to anything but an index file (buffered index entries are written as a staged checkpoint
/// writes them; the job syncs them). A new segment's files are created empty ("to 0").
fn blocking(call: &str) -> bool {
    let index_write = call.starts_with("write ") && (call.ends_with(".index") || call.ends_with(".timeindex"));
    !(call.starts_with("remove ") || index_write || call.starts_with("truncate ") && call.ends_with(" to 0"))
}

#[test]
fn a_cut_changes_memory_at_once_and_leaves_every_sync_and_file_cut_to_its_job() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, calls, sent) = deferring(tmp.path(), 200);
    let (bases, rp) = (log.segment_bases(), log.recovery_point());
    assert!(bases.len() > 3 && rp == 600, "{bases:?} {rp}");
    let cut = 301; // inside the batch at 300, in a segment before the last
    log.truncate_to(cut, 0).unwrap();
    let decided = calls.take();
    assert!(!decided.iter().any(|c| blocking(c)), "the decision only removes names: {decided:?}");
    assert!(decided.iter().any(|c| c.starts_with("remove ") && c.ends_with(".log")), "later segments' names go at once: {decided:?}");
    // Memory is the truncated log already.
    assert_eq!((log.log_end_offset(), log.written_end(), log.policy_end()), (300, 300, 300));
    assert_eq!(read_all(&log), sent[..100].to_vec());
    assert!(log.recovery_point() <= 300 && log.cutting());
    // Nothing touches the files before the job's report.
    assert!(log.take_sync().is_none(), "no job overtakes the cut");
    assert!(matches!(log.append(&mut super::build(&[b"x"], 0), 5, 0), Err(LogError::Busy(_))));
    assert!(matches!(log.append_replicated(&sent[100], 0), Err(LogError::Busy(_))));
    assert!(matches!(log.truncate_to(3, 0), Err(LogError::Busy(_))));
    assert!(log.checkpoint_stage().unwrap().is_none(), "the job writes the checkpoint");
    log.flush(0).unwrap();
    log.checkpoint().unwrap();
    log.write_producer_snapshot(&[]).unwrap();
    assert!(calls.take().is_empty(), "flush, checkpoint and snapshot wait for the job");
    // The job does the IO, in the inline truncation's order.
    let job = log.take_cut().expect("the truncation's job");
    assert!(log.take_cut().is_none(), "taken once");
    let done = job.run().map(drop);
    let ran = calls.take();
    let at = |what: &str| ran.iter().position(|c| c == what).unwrap_or_else(|| panic!("{what} in {ran:?}"));
    let active = format!("{}.log", file_stem(*log.segment_bases().last().unwrap()));
    let cut_file = ran.iter().position(|c| c.starts_with(&format!("truncate {active} "))).expect("the file cut");
    assert!(at("sync-dir") < cut_file, "removals durable before the cut: {ran:?}");
    assert!(cut_file < at(&format!("sync {active}")));
    assert!(at(&format!("sync {active}")) < at(&format!("rename {RECOVERY_POINT_FILE}")), "the checkpoint last: {ran:?}");
    assert!(log.cut_done(job.stamp, done));
    assert!(!log.cutting());
    assert_eq!((log.recovery_point(), log.checkpointed_point()), (300, 300));
    assert_eq!(std::fs::read_to_string(tmp.path().join(RECOVERY_POINT_FILE)).unwrap(), "300\n");
    // Appends go on from the cut, and a reopen gives back exactly this log.
    log.append(&mut sent[100].clone(), 5, 0).unwrap();
    let job = log.take_sync().expect("the append's write");
    let result = job.run();
    log.synced(job.stamp, result);
    let kept = read_all(&log);
    drop(log);
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!((report.cut, read_all(&log)), (None, kept));
    log.verify_indexes().unwrap();
}

#[test]
fn a_crash_before_the_job_reopens_a_dense_prefix_of_the_old_log_and_one_after_it_the_cut_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (mut log, _, sent) = deferring(&a, 200);
    log.truncate_to(301, 0).unwrap();
    let _never_run = log.take_cut().unwrap();
    drop(log); // the process dies before the job ran (the page cache survives)
    let (log, _) = Log::open(disk(), &a, small(), 0).unwrap();
    let got = read_all(&log);
    assert!(got.len() >= 100 && got[..] == sent[..got.len()], "a dense prefix of the old log, no more: {} batches", got.len());
    assert!(log.recovery_point() <= log.log_end_offset(), "nothing vouched for past the end");
    log.verify_indexes().unwrap();

    let (mut log, _, sent) = deferring(&b, 200);
    log.truncate_to(301, 0).unwrap();
    let job = log.take_cut().unwrap();
    let done = job.run().map(drop);
    assert!(log.cut_done(job.stamp, done));
    drop(log);
    let (log, report) = Log::open(disk(), &b, small(), 0).unwrap();
    assert_eq!((report.cut, report.recovery_point), (None, 300), "the cut is durable and checkpointed");
    assert_eq!(read_all(&log), sent[..100].to_vec());
}

#[test]
fn no_write_job_is_handed_out_before_the_cuts_job_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _, sent) = deferring(tmp.path(), 20);
    log.append(&mut sent[0].clone(), 5, 0).unwrap();
    let write = log.take_sync().expect("a job that writes");
    assert!(matches!(log.truncate_to(30, 0), Err(LogError::Busy(_))), "a write in flight holds the cut back");
    let result = write.run();
    log.synced(write.stamp, result);
    // Staged, no job taken yet (as between an append and its job): the cut goes ahead, and
    // the write waits for the cut's job.
    log.append(&mut sent[1].clone(), 5, 0).unwrap();
    log.append(&mut sent[2].clone(), 5, 0).unwrap();
    log.truncate_to(64, 0).unwrap();
    assert_eq!(log.log_end_offset(), 63);
    assert!(log.take_sync().is_none());
    let job = log.take_cut().unwrap();
    let done = job.run().map(drop);
    assert!(log.cut_done(job.stamp, done));
    assert_eq!(log_files_len(tmp.path()), log.size_bytes(), "the job wrote what the cut kept, no more");
    assert_eq!(log.written_end(), 63);
}

/// The bytes of every `.log` file in `dir`.
fn log_files_len(dir: &Path) -> u64 {
    let files = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    files.filter(|p| p.extension().is_some_and(|e| e == "log")).map(|p| std::fs::metadata(p).unwrap().len()).sum()
}

#[test]
fn a_full_truncation_with_deferral_starts_over_in_memory_and_its_job_makes_it_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, calls, _) = deferring(tmp.path(), 50);
    log.truncate_fully(1_000, 0).unwrap();
    assert!(!calls.take().iter().any(|c| blocking(c)));
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.segment_bases()), (1_000, 1_000, vec![1_000]));
    let job = log.take_cut().unwrap();
    let done = job.run().map(drop);
    assert!(calls.take().contains(&"sync-dir".to_string()));
    assert!(log.cut_done(job.stamp, done));
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset(), log.recovery_point()), (1_000, 1_000, 1_000));
}

/// Fails every sync once armed.
struct FailSyncs(Arc<std::sync::atomic::AtomicBool>);

impl Hook for FailSyncs {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        match op {
            Op::Sync { .. } | Op::SyncDir { .. } if self.0.load(std::sync::atomic::Ordering::SeqCst) => Err(std::io::Error::other("EIO (injected)")),
            _ => Ok(()),
        }
    }
}

#[test]
fn a_failed_job_takes_the_log_offline_and_a_report_for_a_reopened_log_vouches_for_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failing: Arc<dyn Disk> = Arc::new(Hooked::new(disk(), Arc::new(FailSyncs(fail.clone()))));
    let (mut log, _) = Log::open(failing, tmp.path(), small(), 0).unwrap();
    log.defer_syncs();
    let sent = fill(&mut log, 50, 0);
    log.truncate_to(60, 0).unwrap();
    let job = log.take_cut().unwrap();
    fail.store(true, std::sync::atomic::Ordering::SeqCst);
    let done = job.run().map(drop);
    assert!(done.is_err());
    assert!(!log.cut_done(job.stamp, done));
    assert!(log.failure().is_some_and(|f| f.contains("truncation failed")), "{:?}", log.failure());
    assert!(!log.cutting(), "the report ends the truncation in flight");
    drop(log);
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let got = read_all(&log);
    assert!(got.len() >= 20 && got[..] == sent[..got.len()], "a dense prefix, no more");
    // A report of the old log's job, or of a job this log never took, moves nothing.
    assert!(!log.cut_done(job.stamp, Ok(())));
    log.defer_syncs();
    log.truncate_to(30, 0).unwrap();
    let ours = log.take_cut().unwrap();
    assert!(!log.cut_done(job.stamp, Ok(())), "another log's stamp");
    assert!(log.cutting());
    let done = ours.run().map(drop);
    assert!(log.cut_done(ours.stamp, done));
}
