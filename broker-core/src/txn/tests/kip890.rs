//! KIP-890 part 2 at the coordinator (transaction.version 2): every end bumps the epoch, the
//! answer names the epoch to go on with, a retry of the end is recognised by "stored epoch =
//! request epoch + 1", and a late copy of an end can no longer end the next transaction —
//! which it does under the classic protocol (docs/transactions.md section 4).

use super::*;

const bump: TxnVersion = TxnVersion::EpochBump;

/// A transaction on `parts` ended (commit) under KIP-890 and completed: the epoch to go on with.
fn ended(d: &mut Driver, parts: &[(String, i32)]) -> ProducerIdAndEpoch {
    let p = d.begin("tx", parts);
    let Ok(Pending::Wait(t)) = d.end_as(bump, "tx", p.producer_id, p.epoch, true) else { panic!("the end waits") };
    d.replicate();
    let Answer::Ended(Ok(next)) = d.take(t) else { panic!("answered the next epoch") };
    let job = d.markers.last().expect("markers owed").job;
    d.ack(job, parts);
    d.replicate();
    next
}

#[test]
fn an_end_bumps_the_epoch_and_its_markers_carry_the_bumped_one() {
    let mut d = Driver::new();
    let parts = [tp("t", 0)];
    let p = d.begin("tx", &parts);
    let Ok(Pending::Wait(t)) = d.end_as(bump, "tx", p.producer_id, p.epoch, true) else { panic!() };
    let prepared = TxnValue { previous_producer_id: 1000, client_version: 2, ..value(TxnState::PrepareCommit, 1000, 1, &parts, 0, 0) };
    assert_eq!(d.last().1, Some(prepared), "PrepareCommit is written at the next epoch, as value v1 saying so");
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(pe(1000, 1))));
    let job = MarkerJob { job: 1, transactional_id: "tx".into(), producer_id: 1000, epoch: 1, commit: true, coordinator_epoch, version: bump, partitions: parts.iter().cloned().collect() };
    assert_eq!(d.markers, vec![job]);
    // The retry of that end (its answer lost) waits for the markers, then gets the same answer.
    assert_eq!(d.end_as(bump, "tx", 1000, 0, true), Err(Code::ConcurrentTransactions));
    d.ack(1, &parts);
    d.replicate();
    assert_eq!(d.state("tx"), Ok("CompleteCommit"));
    assert_eq!(d.end_as(bump, "tx", 1000, 0, true), Ok(Pending::Now(pe(1000, 1))), "a retry of the end");
    assert_eq!(d.end_as(bump, "tx", 1000, 0, false), Err(Code::ProducerFenced), "not a retry: the other outcome");
    // The next transaction is written at the bumped epoch; the old one is fenced.
    assert_eq!(d.add("tx", 1000, 0, &parts), Pending::Now(vec![(tp("t", 0), Err(Code::ProducerFenced))]));
    let Pending::Wait(_) = d.add("tx", 1000, 1, &parts) else { panic!("the next transaction opens at epoch 1") };
}

#[test]
fn a_late_end_cannot_end_the_next_transaction() {
    // KIP-890: the late EndTxn of transaction 1 (epoch 0) meets transaction 2 open at epoch 1.
    let mut d = Driver::new();
    let next = ended(&mut d, &[tp("t", 0)]);
    let Pending::Wait(t) = d.add("tx", next.producer_id, next.epoch, &[tp("t", 1)]) else { panic!() };
    d.replicate();
    d.take(t);
    assert_eq!(d.end_as(bump, "tx", 1000, 0, true), Err(Code::ProducerFenced));
    assert_eq!(d.state("tx"), Ok("Ongoing"), "transaction 2 is still open");

    // The classic protocol: the same late EndTxn ends transaction 2 (the anomaly).
    let mut d = Driver::new();
    let p = d.begin("tx", &[tp("t", 0)]);
    let Ok(Pending::Wait(_)) = d.end("tx", p.producer_id, p.epoch, true) else { panic!() };
    d.replicate();
    let job = d.markers.last().expect("markers").job;
    d.ack(job, &[tp("t", 0)]);
    d.replicate();
    let Pending::Wait(t) = d.add("tx", 1000, 0, &[tp("t", 1)]) else { panic!() };
    d.replicate();
    d.take(t);
    let Ok(Pending::Wait(_)) = d.end("tx", 1000, 0, true) else { panic!("the late end is taken for transaction 2's") };
    d.replicate();
    assert_eq!(d.state("tx"), Ok("PrepareCommit"));
}

#[test]
fn a_classic_coordinator_answers_an_epoch_bump_end_classically() {
    let mut d = Driver::new();
    d.c = Coordinator::new(TxnConfig { transaction_version: TxnVersion::Classic, ..TxnConfig::default() });
    let mut work = Work::default();
    d.c.set_partitions(1, 0, &mut work);
    d.c.take_over(0, coordinator_epoch, 0);
    d.c.load(0, Vec::new(), 0, true, 0, &mut work);
    let parts = [tp("t", 0)];
    let p = d.begin("tx", &parts);
    let Ok(Pending::Wait(t)) = d.end_as(bump, "tx", p.producer_id, p.epoch, true) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(pe(1000, 0))), "transaction.version 1: the same epoch");
    assert_eq!((d.markers[0].epoch, d.markers[0].version), (0, TxnVersion::Classic));
}

#[test]
fn the_end_that_exhausts_the_epoch_hands_over_to_a_new_producer_id() {
    let mut d = Driver::new();
    let parts = [tp("t", 0)];
    d.next_producer_id = 2000;
    // The id is loaded one end before exhaustion: Ongoing at epoch 32764.
    let at = crate::txn::config::producer_epoch_exhausted - 2;
    let mut c = Coordinator::new(TxnConfig::default());
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, coordinator_epoch, 0);
    let open = Some(Bytes::from(encode_value(&value(TxnState::Ongoing, 1000, at, &parts, 0, 0))));
    c.load(0, vec![(Bytes::from(encode_key("tx")), open)], 1, true, 0, &mut work);
    d.c = c;
    d.log.clear();
    let Ok(Pending::Wait(t)) = d.end_as(bump, "tx", 1000, at, false) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(pe(1000, at + 1))), "32765 is not exhausted yet");
    let job = d.markers.last().expect("markers").job;
    d.ack(job, &parts);
    d.replicate();
    let Pending::Wait(t) = d.add("tx", 1000, at + 1, &parts) else { panic!() };
    d.replicate();
    d.take(t);
    let Ok(Pending::Wait(t)) = d.end_as(bump, "tx", 1000, at + 1, true) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(pe(2000, 0))), "the next producer id, at epoch 0");
    assert_eq!(d.markers.last().map(|m| (m.producer_id, m.epoch)), Some((1000, at + 2)), "the markers end it at the exhausted epoch");
    assert_eq!(d.end_as(bump, "tx", 1000, at + 1, true), Err(Code::ConcurrentTransactions));
    assert_eq!(d.add("tx", 2000, 0, &parts), Pending::Now(vec![(tp("t", 0), Err(Code::ConcurrentTransactions))]), "the next id, before the handover");
    let job = d.markers.last().expect("markers").job;
    d.ack(job, &parts);
    d.replicate();
    assert_eq!(d.last().1.map(|v| (v.state, v.producer_id, v.producer_epoch)), Some((TxnState::CompleteCommit, 2000, 0)));
    assert_eq!(d.end_as(bump, "tx", 1000, at + 1, true), Ok(Pending::Now(pe(2000, 0))), "a retry from the old producer id");
}

#[test]
fn a_new_coordinator_resends_a_prepared_kip_890_transactions_markers_as_version_2() {
    let mut d = Driver::new();
    let parts = [tp("t", 0)];
    let p = d.begin("tx", &parts);
    let Ok(Pending::Wait(_)) = d.end_as(bump, "tx", p.producer_id, p.epoch, false) else { panic!() };
    d.replicate();
    let mut c = Coordinator::new(TxnConfig::default());
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, 8, 0);
    c.load(0, d.log.clone(), d.log.len() as i64, true, 0, &mut work);
    let job = MarkerJob { job: 1, transactional_id: "tx".into(), producer_id: 1000, epoch: 1, commit: false, coordinator_epoch: 8, version: bump, partitions: parts.iter().cloned().collect() };
    assert_eq!(work.markers, vec![job], "the version and the bumped epoch survive the move");
    assert_eq!(c.end_txn(0, "tx", 1000, 0, false, bump, || Ok(1), &mut work), Err(Code::ConcurrentTransactions), "a retry, recognised after the move");
}
