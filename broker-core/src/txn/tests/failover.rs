//! A coordinator losing and gaining its partition: loading the log and resending markers of
//! prepared transactions, resigning with requests waiting, a write that fails, and
//! ListTransactions over what was loaded.

use super::*;

#[test]
fn a_new_coordinator_loads_the_log_and_resends_prepared_markers() {
    let mut d = Driver::new();
    let parts = [tp("t", 0), tp("u", 1)];
    d.begin("tx", &parts);
    let Ok(Pending::Wait(_)) = d.end("tx", 1000, 0, true) else { panic!() };
    d.replicate();
    // Other ids' records: one completed, one expired (tombstoned), and a record that is not one.
    let other = |state, epoch| Some(Bytes::from(encode_value(&value(state, 7, epoch, &[], 0, -1))));
    let mut log = d.log.clone();
    log.push((Bytes::from(encode_key("old")), other(TxnState::CompleteAbort, 3)));
    log.push((Bytes::from(encode_key("gone")), other(TxnState::Empty, 0)));
    log.push((Bytes::from(encode_key("gone")), None));
    log.push((Bytes::from_static(&[0, 9, 0, 0]), other(TxnState::Empty, 0)));
    // The old coordinator's partition moves: a new one takes over at epoch 8.
    let mut c = Coordinator::new(TxnConfig::default());
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, 8, 0);
    let mut pid = || Ok(1);
    assert_eq!(c.init_producer_id(0, "tx", minute, None, &mut pid, &mut work), Err(Code::CoordinatorLoadInProgress));
    assert_eq!(c.list(&[], &[]), Err(Code::CoordinatorLoadInProgress));
    let rest = log.split_off(2);
    c.load(0, log, 2, false, 0, &mut work);
    assert!(work.markers.is_empty(), "markers wait for the whole partition");
    c.load(0, rest, 7, true, 0, &mut work);
    let job = MarkerJob { job: 1, transactional_id: "tx".into(), producer_id: 1000, epoch: 0, commit: true, coordinator_epoch: 8, version: TxnVersion::Classic, partitions: parts.iter().cloned().collect() };
    assert_eq!(work.markers, vec![job]);
    assert_eq!(work.lines, vec!["__transaction_state-0: skipped 1 records that are not this partition's transaction records".to_string(), "__transaction_state-0: loaded; coordinating 2 transactional ids, resending markers of 1".to_string()]);
    assert_eq!(c.describe("tx").map(|d| d.state), Ok("PrepareCommit"));
    assert_eq!(c.describe("old").map(|d| (d.state, d.epoch)), Ok(("CompleteAbort", 3)));
    assert_eq!(c.describe("gone"), Err(Code::TransactionalIdNotFound));
    assert_eq!(c.end_txn(0, "tx", 1000, 0, true, TxnVersion::Classic, || Ok(2000), &mut work), Err(Code::ConcurrentTransactions));
    let mut work = Work::default();
    c.markers_written(1, &parts, 0, &mut work);
    assert_eq!(work.appends.len(), 1, "CompleteCommit written once every marker is");
}

#[test]
fn resigning_answers_waiting_requests_not_coordinator() {
    let mut d = Driver::new();
    d.begin("tx", &[tp("t", 0)]);
    let Ok(Pending::Wait(t)) = d.end("tx", 1000, 0, true) else { panic!() };
    let Ok(Pending::Wait(t2)) = d.init("other", minute) else { panic!() };
    let mut work = Work::default();
    d.c.resign(0, 0, &mut work);
    d.perform(work);
    assert_eq!(d.take(t), Answer::Ended(Err(Code::NotCoordinator)));
    assert_eq!(d.take(t2), Answer::Producer(Err(Code::NotCoordinator)));
    assert!(d.c.metadata("tx").is_none() && !d.c.has_writes());
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::NotCoordinator));
    // A replication report for the dropped writes answers nobody twice.
    d.replicate();
    assert!(d.answers.is_empty());
}

#[test]
fn a_failed_write_is_answered_and_changes_nothing() {
    let mut d = Driver::new();
    d.fail = Some(Code::NotEnoughReplicas);
    let Ok(Pending::Wait(t)) = d.init("tx", minute) else { panic!() };
    assert_eq!(d.take(t), Answer::Producer(Err(Code::CoordinatorNotAvailable)));
    // Known at epoch -1, as Kafka keeps it; the retry gets epoch 0 under the same producer id.
    assert_eq!(d.c.metadata("tx").map(|m| (m.producer_id, m.epoch)), Some((1000, -1)));
    d.fail = None;
    assert_eq!(d.ready("tx", minute), pe(1000, 0));
}

#[test]
fn list_filters_by_state_and_producer_id() {
    let mut d = Driver::new();
    d.begin("a", &[tp("t", 0)]);
    d.ready("b", minute);
    let all = d.c.list(&[], &[]).unwrap();
    assert_eq!(all.states, vec![("a".to_string(), 1000, "Ongoing"), ("b".to_string(), 1001, "Empty")]);
    let some = d.c.list(&["Ongoing".to_string(), "Nonsense".to_string()], &[]).unwrap();
    assert_eq!((some.states.len(), some.unknown_state_filters), (1, vec!["Nonsense".to_string()]));
    assert_eq!(d.c.list(&[], &[1001]).unwrap().states, vec![("b".to_string(), 1001, "Empty")]);
}
