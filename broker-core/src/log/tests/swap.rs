//! A cleaned group's swap as the owner's job (`log::swap`), on real files: while it is in
//! flight the log reads the old segments, the pass waits, and a truncation is refused without
//! changing anything; the report puts the cleaned segment in place, and a lost
//! one takes the log offline with nothing lost on reopening.

use super::*;
use super::cleaning::{compacted, contents, latest_of, updates};

/// A compacted log with deferral on, stepped until its first group's swap is owed; returns
/// the log, the job and what the log read before.
pub(super) fn log_with_a_swap_owed(dir: &std::path::Path) -> (Log, crate::log::SwapJob, Vec<(i64, String, Option<String>)>) {
    let (mut log, _) = Log::open(disk(), dir, compacted(), 0).unwrap();
    log.defer_syncs();
    updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    let before = contents(&log).0;
    for _ in 0..10_000 {
        let upper = log.log_end_offset();
        assert!(matches!(super::clean_step_now(&mut log, 10_000, upper, 300), CleanStep::Working { .. }));
        if let Some(job) = log.take_swap() {
            return (log, job, before);
        }
    }
    panic!("no swap owed");
}

fn swap_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap")).collect()
}

#[test]
fn a_swap_in_flight_leaves_the_old_segments_readable_and_refuses_cuts() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, job, before) = log_with_a_swap_owed(tmp.path());
    let (bases, end) = (log.segment_bases(), log.log_end_offset());
    assert!(log.swapping() && log.take_swap().is_none(), "one job, taken once");
    // Until the report, memory reads the old segments, whatever the job has done on disk.
    let done = job.run();
    assert!(swap_files(tmp.path()).is_empty(), "the job renamed the cleaned files into place");
    assert_eq!(contents(&log).0, before);
    assert_eq!(super::clean_step_now(&mut log, 10_000, end, 300), CleanStep::Working { bytes: 0 }, "the pass waits for its swap");
    let refused = log.truncate_to(1, 0).unwrap_err();
    assert!(matches!(refused, LogError::Busy(_)), "{refused}");
    assert!(matches!(log.truncate_fully(end, 0), Err(LogError::Busy(_))));
    assert!(log.failure().is_none(), "a refused cut changes nothing");
    assert_eq!((log.segment_bases(), log.log_end_offset()), (bases, end));
    // With deferral on even a cut above the group waits: its job's producer-state replay
    // would read the segments the swap replaces (`log::cut`).
    let mut late = batch::build_keyed(&[(Some(b"late"), Some(b"x"))], 2_000);
    log.append(&mut late, 1, 0).unwrap();
    assert!(matches!(log.truncate_to(end, 0), Err(LogError::Busy(_))));
    assert_eq!(log.log_end_offset(), end + 1);
    // The report puts the cleaned segment in place; the pass then ends as a whole pass does.
    log.swapped(done).unwrap();
    assert!(!log.swapping());
    super::truncate_deferred(&mut log, end);
    assert_eq!(log.log_end_offset(), end);
    let mut stats = None;
    while stats.is_none() {
        match super::clean_step_now(&mut log, 10_000, end, 300) {
            CleanStep::Done { stats: s, .. } => stats = Some(s),
            CleanStep::Working { .. } => {
                if let Some(job) = log.take_swap() {
                    log.swapped(job.run()).unwrap();
                }
            }
            CleanStep::Idle => panic!("the pass was in flight"),
        }
    }
    let (after, _) = contents(&log);
    assert!(after.len() < before.len(), "{} of {} records left", after.len(), before.len());
    assert_eq!(latest_of(&after), latest_of(&before), "every key's latest value at its offset");
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(contents(&log).0, after, "a reopened log reads the same");
}

#[test]
fn a_swap_that_never_reported_takes_the_log_offline_and_reopening_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, job, before) = log_with_a_swap_owed(tmp.path());
    assert!(log.swapped(job.lost("the task was cancelled".into())).is_err());
    assert!(log.failure().is_some_and(|why| why.contains("cancelled")), "{:?}", log.failure());
    drop(log);
    let (log, report) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(contents(&log).0, before, "the swap never ran: the old segments");
    assert!(swap_files(tmp.path()).is_empty(), "the .cleaned leftovers removed: {report:?}");
}
