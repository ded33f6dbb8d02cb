//! Producer-state snapshot files beside a log, on real files: written at the end, kept to the
//! newest few, read back whole, and never left describing batches the log no longer has.

use super::*;
use crate::log::producer_snapshot::SnapshotEntry;

fn entry(producer_id: i64, last_offset: i64) -> SnapshotEntry {
    SnapshotEntry { producer_id, epoch: 0, last_sequence: last_offset as i32, last_offset, offset_delta: 0, timestamp: -1, coordinator_epoch: -1, current_txn_first_offset: -1 }
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".snapshot")).collect();
    n.sort();
    n
}

#[test]
fn snapshots_are_written_at_the_end_kept_to_two_and_read_back_after_a_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(log.newest_producer_snapshot(), None);
    for round in 1..=3 {
        fill_from(&mut log, round * 10, 4);
        log.write_producer_snapshot(&[entry(round as i64, log.log_end_offset() - 1)]).unwrap();
        log.write_producer_snapshot(&[entry(99, 0)]).unwrap(); // one at this end already: kept
    }
    assert_eq!(log.producer_snapshot_offsets(), &[24, 36]);
    assert_eq!(names(tmp.path()), ["00000000000000000024.snapshot", "00000000000000000036.snapshot"]);
    assert_eq!(log.newest_producer_snapshot(), Some((36, vec![entry(3, 35)])));
    log.flush(0).unwrap();
    log.checkpoint().unwrap();
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(log.producer_snapshot_offsets(), &[24, 36]);
    assert_eq!(log.newest_producer_snapshot(), Some((36, vec![entry(3, 35)])));
}

#[test]
fn a_torn_newest_snapshot_gives_way_to_the_older_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 4, 0);
    log.write_producer_snapshot(&[entry(1, 11)]).unwrap();
    fill_from(&mut log, 4, 4);
    log.write_producer_snapshot(&[entry(1, 23), entry(2, 20)]).unwrap();
    let newest = tmp.path().join("00000000000000000024.snapshot");
    let len = std::fs::metadata(&newest).unwrap().len();
    truncate_file(&newest, len - 7);
    assert_eq!(log.newest_producer_snapshot(), Some((12, vec![entry(1, 11)])));
}

#[test]
fn a_cut_by_recovery_or_truncation_removes_the_snapshots_past_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let sent = fill(&mut log, 6, 0);
    log.write_producer_snapshot(&[entry(1, 8)]).unwrap(); // at 18
    drop(log); // never synced: a crash may take the tail the snapshot describes
    let path = tmp.path().join("00000000000000000000.log");
    let keep: u64 = sent[..4].iter().map(|b| b.len() as u64).sum();
    truncate_file(&path, keep + 5);
    let (mut log, report) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    assert!(report.cut.is_some());
    assert_eq!(log.log_end_offset(), 12);
    assert_eq!(log.producer_snapshot_offsets(), &[] as &[i64], "the snapshot at 18 describes batches gone");
    assert!(names(tmp.path()).is_empty());
    // A follower's truncation takes the snapshots above the cut, and keeps the one at it.
    log.write_producer_snapshot(&[entry(1, 11)]).unwrap(); // at 12
    fill_from(&mut log, 4, 2);
    log.write_producer_snapshot(&[entry(1, 17)]).unwrap(); // at 18
    log.truncate_to(13, 0).unwrap(); // inside the batch at 12: the log ends at 12
    assert_eq!(log.log_end_offset(), 12);
    assert_eq!(log.producer_snapshot_offsets(), &[12]);
    assert_eq!(names(tmp.path()), ["00000000000000000012.snapshot"]);
    // A full truncation starts over with none.
    log.truncate_fully(40, 0).unwrap();
    assert!(log.producer_snapshot_offsets().is_empty() && names(tmp.path()).is_empty());
}

#[test]
fn only_headers_from_the_snapshot_on_are_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 120, 0); // several segments of 4 KiB
    assert!(log.segments.len() > 2, "{} segments", log.segments.len());
    let mut all = Vec::new();
    log.for_each_header(|h| all.push(h.base_offset)).unwrap();
    let mut from = Vec::new();
    log.for_each_header_from(61, |h| from.push(h.base_offset)).unwrap();
    assert_eq!(from, all.iter().copied().filter(|&o| o >= 61).collect::<Vec<_>>());
    assert_eq!(from.first(), Some(&63), "batches start every 3 offsets: the first at or past 61");
}
