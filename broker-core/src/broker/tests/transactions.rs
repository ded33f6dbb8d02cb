//! Transactions at a partition leader, on real files: transactional batches hold the last
//! stable offset back until their marker is replicated, read_committed reads stop there and
//! are told the aborted transactions, markers are refused from older epochs, and the aborted
//! transactions and open transactions survive a restart and follow a truncation (rebuilt by
//! its job; a report for a log reopened since is dropped).

use super::*;
use crate::kafka::TxnVersion;
use crate::log::batch::control::MarkerKind;
use crate::log::txn_index::AbortedTxn;

/// A transactional batch of `n` records.
fn txn(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let values: Vec<&[u8]> = vec![b"t"; n];
    let mut b = idempotent(&values, pid, epoch, seq);
    crate::log::batch::set_transactional(&mut b);
    b
}

/// A one-node cluster on `dir` with topic `t` (one partition).
fn with_topic(dir: &std::path::Path) -> crate::node::Node {
    let node = one_node(config(dir));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    node
}

const committed: Fetcher = Fetcher { read_committed: true, ..Fetcher::consumer };

/// `t-0` truncated to `offset` as a follower's truncation is: memory at once, and the job
/// (its IO and the producer-state rebuild, `truncation`) not run yet.
fn truncated_to(b: &mut Broker, offset: i64) -> crate::broker::TruncateJob {
    b.partitions.get_mut("t", 0).unwrap().log.truncate_to(offset, 0).unwrap();
    let mut actions = Vec::new();
    b.after_truncation("t", 0, true, &mut actions).unwrap();
    match &actions[..] {
        [Action::Truncate { job, .. }] => job.clone(),
        _ => panic!("one job: {actions:?}"),
    }
}

/// (high watermark, last stable offset, offsets a read_committed fetch from 0 returns,
/// aborted transactions it lists).
fn read(b: &mut Broker) -> (i64, i64, i64, Vec<AbortedTxn>) {
    let f = b.fetch("t", 0, 0, 1 << 20, true, committed, 0, &mut Vec::new()).unwrap();
    let bytes = f.records.to_bytes().unwrap();
    let mut end = 0;
    let mut pos = 0;
    while let Ok(h) = crate::log::batch::read_header(&bytes[pos..]) {
        end = h.next_offset();
        pos += h.size;
    }
    (f.high_watermark, f.last_stable_offset, end, f.aborted)
}

#[test]
fn read_committed_stops_at_the_first_open_transaction_and_lists_the_aborted_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let node = with_topic(tmp.path());
    let mut b = node.broker();
    let (p1, e1) = b.init_producer_id().unwrap();
    let (p2, e2) = b.init_producer_id().unwrap();
    let out = &mut Vec::new();
    b.produce("t", 0, &build(&[b"plain"], 1000), -1, 0, out).unwrap(); // 0
    b.produce("t", 0, &txn(p1, e1, 0, 2), -1, 0, out).unwrap(); // 1-2: p1 opens
    b.produce("t", 0, &txn(p2, e2, 0, 1), -1, 0, out).unwrap(); // 3: p2 opens
    assert_eq!(read(&mut b), (4, 1, 1, vec![]), "read_committed stops below p1's transaction");
    let uncommitted = b.fetch("t", 0, 0, 1 << 20, true, consumer, 0, out).unwrap();
    assert_eq!((uncommitted.high_watermark, uncommitted.last_stable_offset), (4, 1), "read_uncommitted reads on, and is told the LSO");
    assert_eq!(b.list_offset("t", 0, -1, -1, true).unwrap(), (-1, 1), "latest, read_committed: the LSO");
    assert_eq!(b.list_offset("t", 0, -1, -1, false).unwrap(), (-1, 4));
    let plain = idempotent(&[b"x"], p1, e1, 2);
    assert_eq!(b.produce("t", 0, &plain, -1, 0, out).unwrap_err().kafka_error(true), Code::InvalidTxnState, "a plain batch inside p1's transaction");
    // p1 aborts: its records are listed for the reader to drop; p2 still holds the LSO.
    let abort = b.write_marker("t", 0, (p1, e1, TxnVersion::Classic), MarkerKind::Abort, 0, 0, out).unwrap();
    assert_eq!(abort.base_offset, 4);
    let p1_aborted = AbortedTxn { producer_id: p1, first_offset: 1, last_offset: 4, last_stable_offset: 3 };
    assert_eq!(read(&mut b), (5, 3, 3, vec![p1_aborted]));
    b.write_marker("t", 0, (p2, e2, TxnVersion::Classic), MarkerKind::Commit, 0, 0, out).unwrap(); // 5
    assert_eq!(read(&mut b), (6, 6, 6, vec![p1_aborted]), "nothing open: everything is stable");
    assert_eq!(b.list_offset("t", 0, -1, -1, true).unwrap(), (-1, 6));
    // Refused markers: an older producer epoch, an older coordinator.
    b.write_marker("t", 0, (p2, e2 + 1, TxnVersion::Classic), MarkerKind::Abort, 3, 0, out).unwrap(); // 6: a fencing abort at the next epoch
    assert_eq!(b.write_marker("t", 0, (p2, e2, TxnVersion::Classic), MarkerKind::Abort, 3, 0, out).unwrap_err().kafka_error(true), Code::InvalidProducerEpoch);
    assert_eq!(b.write_marker("t", 0, (p2, e2 + 1, TxnVersion::Classic), MarkerKind::Abort, 2, 0, out).unwrap_err().kafka_error(true), Code::TransactionCoordinatorFenced);
    assert_eq!(b.produce("t", 0, &txn(p2, e2, 1, 1), -1, 0, out).unwrap_err().kafka_error(true), Code::InvalidProducerEpoch, "the fenced producer's late write");
    let control = crate::log::batch::control::build_marker(p2, e2 + 1, MarkerKind::Commit, 3, 0);
    assert_eq!(b.produce("t", 0, &control, -1, 0, out).unwrap_err().kafka_error(true), Code::InvalidRecord, "clients may not write markers");
}

#[test]
fn aborted_and_open_transactions_survive_a_restart_and_follow_a_truncation() {
    let tmp = tempfile::tempdir().unwrap();
    let node = with_topic(tmp.path());
    let mut b = node.broker();
    let (p1, e1) = b.init_producer_id().unwrap();
    let (p2, e2) = b.init_producer_id().unwrap();
    let out = &mut Vec::new();
    b.produce("t", 0, &txn(p1, e1, 0, 2), -1, 0, out).unwrap(); // 0-1
    b.write_marker("t", 0, (p1, e1, TxnVersion::Classic), MarkerKind::Abort, 0, 0, out).unwrap(); // 2
    b.checkpoint(0); // a snapshot at 3; the index entry below it is durable
    b.produce("t", 0, &txn(p1, e1, 2, 1), -1, 0, out).unwrap(); // 3
    b.write_marker("t", 0, (p1, e1, TxnVersion::Classic), MarkerKind::Abort, 0, 0, out).unwrap(); // 4
    b.produce("t", 0, &txn(p2, e2, 0, 1), -1, 0, out).unwrap(); // 5: p2 stays open
    let before = read(&mut b);
    let first = AbortedTxn { producer_id: p1, first_offset: 0, last_offset: 2, last_stable_offset: 3 };
    let second = AbortedTxn { producer_id: p1, first_offset: 3, last_offset: 4, last_stable_offset: 5 };
    assert_eq!(before, (6, 5, 5, vec![first, second]));
    drop(b);
    drop(node);
    let index = tmp.path().join("t-0").join(format!("{}.txnindex", crate::log::file_stem(0)));
    assert_eq!(std::fs::read(&index).unwrap().len(), 2 * crate::log::txn_index::entry_bytes, "Kafka's file, one 34-byte entry per abort");
    // The entry after the snapshot is derived again from the log at open: one lost from the
    // file (unsynced) comes back.
    std::fs::write(&index, first.encode()).unwrap();
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    let mut b = node.broker();
    assert_eq!(read(&mut b), before, "after the restart: the same LSO and the same aborted transactions");
    assert_eq!(std::fs::read(&index).unwrap().len(), 2 * crate::log::txn_index::entry_bytes, "the lost entry is written again");
    // Truncated below the second abort.
    let job = truncated_to(&mut b, 4);
    assert_eq!(std::fs::read(&index).unwrap().len(), 2 * crate::log::txn_index::entry_bytes, "the file waits for the job");
    // Until its report the state from before the cut serves nothing: this replica leads, and
    // neither judges a producer's batch nor tells a reader its last stable offset.
    assert_eq!(b.produce("t", 0, &txn(p2, e2, 1, 1), -1, 0, out).unwrap_err().kafka_error(true), Code::LeaderNotAvailable);
    assert_eq!(b.fetch("t", 0, 0, 1 << 20, true, committed, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::LeaderNotAvailable);
    let done = job.run();
    b.truncated("t", 0, done, 0);
    // Its entry went, and p1's transaction at 3 is open again.
    let part = b.partitions.get("t", 0).unwrap();
    assert_eq!(part.log.aborted_overlapping(0, 10), vec![first]);
    assert_eq!(part.producers.last_stable_offset(4), 3, "p1's second transaction is open again");
    assert_eq!(std::fs::read(&index).unwrap().len(), crate::log::txn_index::entry_bytes);
    assert!(b.produce("t", 0, &txn(p2, e2, 1, 1), -1, 0, out).is_ok(), "the replica serves again");
}

#[test]
fn a_truncations_report_for_a_log_reopened_since_is_dropped() {
    // Why: the report's producer state was rebuilt from a log that is gone; taken by the log
    // opened since, it would undo what that log did meanwhile (here: a committed transaction
    // counted open again, its last stable offset moved back).
    let tmp = tempfile::tempdir().unwrap();
    let node = with_topic(tmp.path());
    let mut b = node.broker();
    let (p1, e1) = b.init_producer_id().unwrap();
    let out = &mut Vec::new();
    b.produce("t", 0, &txn(p1, e1, 0, 2), -1, 0, out).unwrap(); // 0-1: p1 opens
    b.produce("t", 0, &build(&[b"x"], 1000), -1, 0, out).unwrap(); // 2
    crate::testing::run_syncs(&mut b, std::mem::take(out), 0);
    let done = truncated_to(&mut b, 2).run(); // ran, but its report never reached a decision: the process stopped
    drop(b);
    drop(node);
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    let mut b = node.broker();
    assert_eq!(b.partitions.get("t", 0).unwrap().leo(), 2, "the job's cut was durable");
    b.write_marker("t", 0, (p1, e1, TxnVersion::Classic), MarkerKind::Commit, 0, 0, out).unwrap(); // 2
    let before = read(&mut b);
    assert_eq!(before.1, 3, "p1 committed: everything is stable");
    assert!(b.truncated("t", 0, done, 0).is_empty(), "not this log's truncation");
    assert_eq!(read(&mut b), before, "the old log's rebuilt state (p1 open) is not taken");
}

#[test]
fn an_index_entry_lost_with_a_torn_tail_comes_back_though_open_checkpoints_past_it() {
    // A power loss during a checkpoint's file-system sync: the producers' snapshot and the log up
    // to it survived, the index entry below it did not, and a torn tail after it makes open cut
    // the log and write a new checkpoint. That checkpoint vouches for the segments, not for the
    // index: the replay must start at or below the recovery point the old checkpoint held.
    let tmp = tempfile::tempdir().unwrap();
    let node = with_topic(tmp.path());
    let mut b = node.broker();
    let (p1, e1) = b.init_producer_id().unwrap();
    let out = &mut Vec::new();
    b.produce("t", 0, &txn(p1, e1, 0, 2), -1, 0, out).unwrap(); // 0-1
    b.write_marker("t", 0, (p1, e1, TxnVersion::Classic), MarkerKind::Abort, 0, 0, out).unwrap(); // 2
    let part = b.partitions.get_mut("t", 0).unwrap();
    let entries = part.producers.to_snapshot();
    part.log.write_producer_snapshot(&entries).unwrap(); // at 3, staged but never committed
    b.produce("t", 0, &build(&[b"after"], 1000), -1, 0, out).unwrap(); // 3
    let dir = tmp.path().join("t-0");
    let checkpointed = std::fs::read_to_string(dir.join(crate::log::RECOVERY_POINT_FILE)).unwrap_or_default();
    drop(b);
    drop(node);
    assert!(checkpointed.trim().parse::<i64>().unwrap_or(0) < 3, "the checkpoint file is older than the snapshot ({checkpointed:?})");
    // The crash: the entry's write lost, garbage after the last batch.
    std::fs::write(dir.join(format!("{}.txnindex", crate::log::file_stem(0))), b"").unwrap();
    let log_path = dir.join(format!("{}.log", crate::log::file_stem(0)));
    let mut bytes = std::fs::read(&log_path).unwrap();
    bytes.extend_from_slice(&[0xAB; 40]);
    std::fs::write(&log_path, bytes).unwrap();
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    let b = node.broker();
    let aborted = b.partitions.get("t", 0).unwrap().log.aborted_transactions().to_vec();
    assert_eq!(aborted, vec![AbortedTxn { producer_id: p1, first_offset: 0, last_offset: 2, last_stable_offset: 3 }]);
}
