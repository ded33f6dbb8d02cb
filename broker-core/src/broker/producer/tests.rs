//! The producer state's rules, case by case: sequences and epochs, transactions and the last
//! stable offset, markers, snapshots.

use super::*;

fn h(pid: i64, epoch: i16, seq: i32, count: i32, base: i64) -> BatchHeader {
    BatchHeader {
        base_offset: base,
        size: 100,
        leader_epoch: 0,
        attributes: 0,
        last_offset_delta: count - 1,
        base_timestamp: 0,
        max_timestamp: 0,
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        records_count: count,
    }
}

#[test]
fn sequences_dedupe_and_gaps() {
    let mut s = ProducerStates::default();
    assert_eq!(s.check(&h(7, 0, 0, 3, -1)), Ok(Verdict::Append));
    s.record(&h(7, 0, 0, 3, 100));
    assert_eq!(s.check(&h(7, 0, 3, 2, -1)), Ok(Verdict::Append));
    s.record(&h(7, 0, 3, 2, 103));
    // A retry of the first batch gets its original offsets.
    let dup = SeenBatch { first_seq: 0, last_seq: 2, base_offset: 100, last_offset: 102 };
    assert_eq!(s.check(&h(7, 0, 0, 3, -1)), Ok(Verdict::Duplicate(dup)));
    // A gap is refused, naming what was expected.
    assert_eq!(s.check(&h(7, 0, 9, 1, -1)), Err(SequenceError::OutOfOrder { got: 9, expected: 5 }));
    // A producer with no state here may start anywhere (Kafka's rule).
    assert_eq!(s.check(&h(8, 0, 4, 1, -1)), Ok(Verdict::Append));
    // Non-idempotent batches always append.
    assert_eq!(s.check(&h(-1, -1, -1, 1, -1)), Ok(Verdict::Append));
}

#[test]
fn a_refusal_names_whether_the_broker_is_past_the_batch_or_short_of_it() {
    let mut s = ProducerStates::default();
    for i in 0..3 {
        s.record(&h(7, 0, 2 * i, 2, 2 * i as i64));
    }
    // Ahead of what this broker holds (a leader that missed batches): a gap.
    let gap = s.check(&h(7, 0, 9, 1, -1)).unwrap_err();
    // Behind it, older than the window: this broker appended it.
    let behind = s.check_in(&h(7, 0, 0, 2, -1), Window::OneRefusing).unwrap_err();
    for (e, is_behind) in [(gap, false), (behind, true)] {
        assert_eq!(SequenceError::out_of_order_in(&e.to_string()), Some(e), "the message reads back");
        assert_eq!(e.is_behind(), is_behind, "{e}");
    }
    assert!(SequenceError::OutOfOrder { got: i32::MAX, expected: 1 }.is_behind(), "behind across the wrap");
    assert!(!SequenceError::OutOfOrder { got: 1, expected: i32::MAX }.is_behind(), "a gap across the wrap");
    assert_eq!(SequenceError::out_of_order_in("Out of order sequence number for producer 1"), None, "another broker's wording");
}

#[test]
fn epochs_fence_and_reset() {
    let mut s = ProducerStates::default();
    s.record(&h(7, 2, 0, 1, 0));
    assert_eq!(s.check(&h(7, 1, 1, 1, -1)), Err(SequenceError::StaleEpoch { got: 1, current: 2 }));
    assert_eq!(s.check(&h(7, 3, 5, 1, -1)), Err(SequenceError::OutOfOrder { got: 5, expected: 0 }));
    assert_eq!(s.check(&h(7, 3, 0, 1, -1)), Ok(Verdict::Append));
    s.record(&h(7, 3, 0, 1, 1));
    assert_eq!(s.check(&h(7, 3, 1, 1, -1)), Ok(Verdict::Append));
}

#[test]
fn only_the_last_five_batches_are_remembered() {
    let mut s = ProducerStates::default();
    for i in 0..7 {
        s.record(&h(1, 0, i, 1, i as i64));
    }
    assert!(matches!(s.check(&h(1, 0, 2, 1, -1)), Ok(Verdict::Duplicate(_))));
    assert_eq!(s.check(&h(1, 0, 1, 1, -1)), Err(SequenceError::OutOfOrder { got: 1, expected: 7 }));
}

#[test]
fn a_retry_of_any_remembered_batch_is_a_duplicate_and_only_the_planted_bug_appends_it() {
    let mut s = ProducerStates::default();
    for (i, seq) in [0, 2, 4].into_iter().enumerate() {
        s.record(&h(1, 0, seq, 2, 2 * i as i64));
    }
    // Three batches in flight were appended, their answers lost; the producer resends all.
    let first = SeenBatch { first_seq: 0, last_seq: 1, base_offset: 0, last_offset: 1 };
    assert_eq!(s.check(&h(1, 0, 0, 2, -1)), Ok(Verdict::Duplicate(first)));
    assert!(matches!(s.check_in(&h(1, 0, 4, 2, -1), Window::LastOnly), Ok(Verdict::Duplicate(_))), "the last batch: the same");
    assert_eq!(s.check_in(&h(1, 0, 0, 2, -1), Window::LastOnly), Ok(Verdict::Append), "the planted bug appends it again");
    assert_eq!(s.check_in(&h(1, 0, 9, 1, -1), Window::LastOnly), Err(SequenceError::OutOfOrder { got: 9, expected: 6 }));
    // A window of one refusing as Kafka does: the older retry is refused, the last is not.
    assert!(matches!(s.check_in(&h(1, 0, 4, 2, -1), Window::OneRefusing), Ok(Verdict::Duplicate(_))));
    assert_eq!(s.check_in(&h(1, 0, 0, 2, -1), Window::OneRefusing), Err(SequenceError::OutOfOrder { got: 0, expected: 6 }));
}

#[test]
fn a_snapshot_gives_back_the_whole_window_and_kafkas_reading_gets_the_last_batch() {
    let mut s = ProducerStates::default();
    for i in 0..7 {
        s.record(&h(1, 3, 2 * i, 2, 10 + 2 * i as i64));
    }
    s.record(&h(2, 0, i32::MAX - 1, 3, 40)); // seqs MAX-1, MAX, 0
    let entries = s.to_snapshot();
    assert_eq!(entries.len(), 5 + 1, "five remembered batches of producer 1, one of producer 2");
    let back = ProducerStates::from_snapshot(&entries);
    for seq in [4, 6, 8, 10, 12] {
        assert_eq!(back.check(&h(1, 3, seq, 2, -1)), s.check(&h(1, 3, seq, 2, -1)), "seq {seq}");
    }
    assert!(matches!(back.check(&h(1, 3, 4, 2, -1)), Ok(Verdict::Duplicate(SeenBatch { base_offset: 14, last_offset: 15, .. }))));
    assert_eq!(back.check(&h(1, 3, 14, 1, -1)), Ok(Verdict::Append));
    assert_eq!(back.check(&h(1, 2, 14, 1, -1)), Err(SequenceError::StaleEpoch { got: 2, current: 3 }));
    assert!(matches!(back.check(&h(2, 0, i32::MAX - 1, 3, -1)), Ok(Verdict::Duplicate(SeenBatch { first_seq, .. })) if first_seq == i32::MAX - 1), "across the wrap");
    assert_eq!(back.check(&h(2, 0, 1, 1, -1)), Ok(Verdict::Append));
    // Kafka keeps one batch per producer: the last entry of each, read alone, is that.
    let last_only: Vec<_> = entries.iter().filter(|e| e.producer_id == 2 || e.last_sequence == 13).copied().collect();
    let kafka = ProducerStates::from_snapshot(&last_only);
    assert_eq!(kafka.check(&h(1, 3, 14, 1, -1)), Ok(Verdict::Append));
    assert!(matches!(kafka.check(&h(1, 3, 12, 2, -1)), Ok(Verdict::Duplicate(_))));
}

#[test]
fn sequence_wraps_at_i32_max() {
    let mut s = ProducerStates::default();
    s.record(&h(1, 0, 0, 1, 0));
    let mut big = h(1, 0, 1, 1, 1);
    big.base_sequence = 1;
    s.record(&big);
    let mut p = ProducerStates::default();
    p.record(&h(2, 0, i32::MAX - 1, 2, 0)); // seqs MAX-1, MAX
    assert_eq!(p.check(&h(2, 0, 0, 1, -1)), Ok(Verdict::Append));
}

fn txn(pid: i64, epoch: i16, seq: i32, count: i32, base: i64) -> BatchHeader {
    BatchHeader { attributes: 0x10, ..h(pid, epoch, seq, count, base) }
}

fn marker(pid: i64, epoch: i16, at: i64) -> BatchHeader {
    BatchHeader { attributes: 0x30, base_sequence: -1, ..h(pid, epoch, 0, 1, at) }
}

#[test]
fn open_transactions_hold_back_the_last_stable_offset_until_their_markers_are_replicated() {
    let mut s = ProducerStates::default();
    s.record(&h(9, 0, 0, 2, 0)); // plain, offsets 0-1
    s.record(&txn(1, 0, 0, 2, 2)); // p1 opens at 2
    s.record(&txn(2, 0, 0, 1, 4)); // p2 opens at 4
    s.record(&txn(1, 0, 2, 1, 5));
    assert_eq!(s.last_stable_offset(6), 2, "p1's transaction is open from 2");
    assert_eq!(s.check(&h(1, 0, 3, 1, -1)), Err(SequenceError::TransactionOpen(1)), "a plain batch inside an open transaction");
    let ended = s.record_marker(&marker(1, 0, 6), MarkerKind::Abort, 3).expect("p1's transaction ends");
    assert_eq!(ended, EndedTxn { producer_id: 1, first_offset: 2, last_offset: 6, kind: MarkerKind::Abort, last_stable_offset: 4 });
    assert_eq!(ended.aborted(), Some(AbortedTxn { producer_id: 1, first_offset: 2, last_offset: 6, last_stable_offset: 4 }));
    assert_eq!(s.last_stable_offset(6), 2, "the marker at 6 is not below the high watermark yet");
    assert_eq!(s.last_stable_offset(7), 4, "replicated: p2's open transaction holds it now");
    s.forget_replicated(7);
    let ended = s.record_marker(&marker(2, 0, 7), MarkerKind::Commit, 3).expect("p2's ends");
    assert_eq!((ended.last_stable_offset, ended.aborted()), (8, None), "nothing open: past the marker; a commit has no index entry");
    assert_eq!(s.last_stable_offset(7), 4);
    assert_eq!(s.last_stable_offset(8), 8, "all stable up to the high watermark");
    assert_eq!(s.record_marker(&marker(2, 0, 8), MarkerKind::Commit, 3), None, "a marker with nothing open ends nothing");
    assert_eq!(s.check(&h(1, 0, 3, 1, -1)), Ok(Verdict::Append), "a plain batch again once it ended");
}

#[test]
fn markers_are_refused_from_older_epochs_and_older_coordinators() {
    let mut s = ProducerStates::default();
    s.record(&txn(1, 2, 0, 1, 0));
    assert_eq!(s.check_marker(1, 1, TxnVersion::Classic, 0), Err(MarkerError::StaleEpoch { got: 1, current: 2 }));
    assert_eq!(s.check_marker(1, 2, TxnVersion::Classic, 5), Ok(()));
    assert_eq!(s.check_marker(7, 0, TxnVersion::Classic, 0), Ok(()), "a producer unknown here");
    // A coordinator fencing the producer writes its abort at the next epoch.
    s.record_marker(&marker(1, 3, 1), MarkerKind::Abort, 5);
    assert_eq!(s.check_marker(1, 3, TxnVersion::Classic, 4), Err(MarkerError::CoordinatorFenced { got: 4, current: 5 }));
    assert_eq!(s.check(&txn(1, 2, 1, 1, -1)), Err(SequenceError::StaleEpoch { got: 2, current: 3 }), "the fenced producer's late write");
    assert_eq!(s.check(&txn(1, 3, 0, 1, -1)), Ok(Verdict::Append), "the new epoch starts at sequence 0");
    assert_eq!(s.check(&txn(-1, -1, -1, 1, -1)), Err(SequenceError::TransactionalWithoutProducer));
}

#[test]
fn a_kip_890_marker_at_the_epoch_of_an_open_transaction_is_a_late_one() {
    // Transaction 1 (epoch 0) ended by its marker at epoch 1; transaction 2 open at epoch 1.
    let mut s = ProducerStates::default();
    s.record(&txn(1, 0, 0, 1, 0));
    assert_eq!(s.check_marker(1, 1, TxnVersion::EpochBump, 0), Ok(()), "the bumped epoch ends transaction 1");
    s.record_marker(&marker(1, 1, 1), MarkerKind::Commit, 0);
    assert_eq!(s.check_marker(1, 1, TxnVersion::EpochBump, 0), Ok(()), "a retry of that marker, nothing open");
    s.record(&txn(1, 1, 0, 1, 2));
    assert_eq!(s.check_marker(1, 1, TxnVersion::EpochBump, 0), Err(MarkerError::SameEpochOpen(1)), "transaction 1's late marker");
    assert_eq!(s.check_marker(1, 1, TxnVersion::Classic, 0), Ok(()), "the classic rule takes it: the anomaly");
    assert_eq!(s.check_marker(1, 2, TxnVersion::EpochBump, 0), Ok(()), "transaction 2's own marker");
}

#[test]
fn a_snapshot_keeps_open_transactions_and_coordinator_epochs() {
    let mut s = ProducerStates::default();
    s.record(&txn(1, 0, 0, 2, 10));
    s.record(&txn(2, 4, 0, 1, 12));
    s.record_marker(&marker(2, 4, 13), MarkerKind::Commit, 7);
    let entries = s.to_snapshot();
    assert_eq!(entries.iter().map(|e| (e.producer_id, e.current_txn_first_offset, e.coordinator_epoch)).collect::<Vec<_>>(), vec![(1, 10, -1), (2, -1, 7)]);
    let back = ProducerStates::from_snapshot(&entries);
    assert_eq!(back.to_snapshot(), entries);
    assert_eq!(back.last_stable_offset(20), 10, "p1's transaction is still open after a reload");
    assert_eq!(back.check_marker(2, 4, TxnVersion::Classic, 6), Err(MarkerError::CoordinatorFenced { got: 6, current: 7 }));
    assert_eq!(back.check(&txn(2, 4, 1, 1, -1)), Ok(Verdict::Append), "p2 goes on after its committed batch");
}
