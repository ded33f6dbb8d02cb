//! Whole transactions, from InitProducerId to Complete*: commit, abort, fencing by a second
//! InitProducerId, abort at the timeout, expiration, AddOffsetsToTxn, and a transaction with
//! nothing to mark.

use super::*;

#[test]
fn a_commit_goes_prepare_markers_complete() {
    let mut d = Driver::new();
    let Ok(Pending::Wait(t)) = d.init("tx", minute) else { panic!() };
    assert!(d.answers.is_empty(), "answered before the write is replicated");
    assert_eq!(d.last(), ("tx".to_string(), Some(value(TxnState::Empty, 1000, 0, &[], 0, -1))));
    d.replicate();
    assert_eq!(d.take(t), Answer::Producer(Ok(pe(1000, 0))));

    d.now = 100;
    let parts = [tp("t", 0), tp("t", 1)];
    let Pending::Wait(t) = d.add("tx", 1000, 0, &parts) else { panic!() };
    assert_eq!(d.state("tx"), Ok("Empty"), "Ongoing only once written");
    d.replicate();
    assert_eq!(d.take(t), Answer::Partitions(vec![(tp("t", 0), Ok(())), (tp("t", 1), Ok(()))]));
    let described = TxnDescription { state: "Ongoing", producer_id: 1000, epoch: 0, timeout_ms: minute, start_ms: 100, topics: vec![("t".to_string(), vec![0, 1])] };
    assert_eq!(d.c.describe("tx"), Ok(described));
    // Already in the transaction: answered at once, nothing written.
    let written = d.log.len();
    assert_eq!(d.add("tx", 1000, 0, &[tp("t", 1)]), Pending::Now(vec![(tp("t", 1), Ok(()))]));
    assert_eq!(d.log.len(), written);

    d.now = 200;
    let Ok(Pending::Wait(t)) = d.end("tx", 1000, 0, true) else { panic!() };
    assert_eq!(d.last().1, Some(value(TxnState::PrepareCommit, 1000, 0, &parts, 200, 100)));
    assert!(d.markers.is_empty() && d.answers.is_empty(), "no marker and no answer before PrepareCommit is replicated");
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(pe(1000, 0))), "the classic protocol goes on at the same epoch");
    let job = MarkerJob { job: 1, transactional_id: "tx".into(), producer_id: 1000, epoch: 0, commit: true, coordinator_epoch, version: TxnVersion::Classic, partitions: parts.iter().cloned().collect() };
    assert_eq!(d.markers, vec![job]);
    // While markers are written, the transition to CompleteCommit is pending.
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::ConcurrentTransactions));
    assert_eq!(d.end("tx", 1000, 0, false), Err(Code::ConcurrentTransactions));
    assert_eq!(d.init("tx", minute), Err(Code::ConcurrentTransactions));

    d.now = 300;
    d.ack(1, &[tp("t", 0)]);
    assert_eq!(d.log.len(), written + 1, "one partition still owes its marker");
    d.ack(1, &[tp("t", 1)]);
    assert_eq!(d.last().1, Some(value(TxnState::CompleteCommit, 1000, 0, &[], 300, 100)));
    assert_eq!(d.state("tx"), Ok("PrepareCommit"));
    d.replicate();
    let described = TxnDescription { state: "CompleteCommit", producer_id: 1000, epoch: 0, timeout_ms: minute, start_ms: 100, topics: vec![] };
    assert_eq!(d.c.describe("tx"), Ok(described));
    // A retry of the finished commit is NONE; the other outcome is not.
    assert_eq!(d.end("tx", 1000, 0, true), Ok(Pending::Now(())));
    assert_eq!(d.end("tx", 1000, 0, false), Err(Code::InvalidTxnState));
    // A late acknowledgement of the finished job does nothing.
    d.ack(1, &[tp("t", 1)]);
    assert_eq!(d.log.len(), written + 2);
}

#[test]
fn an_abort_completes_and_the_next_transaction_starts_fresh() {
    let mut d = Driver::new();
    let p = d.begin("tx", &[tp("t", 0)]);
    let Ok(Pending::Wait(t)) = d.end("tx", p.producer_id, p.epoch, false) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Ended(Ok(p)));
    assert_eq!((d.markers.len(), d.markers[0].commit, d.markers[0].epoch), (1, false, 0));
    d.ack(1, &[tp("t", 0)]);
    d.replicate();
    assert_eq!(d.state("tx"), Ok("CompleteAbort"));
    assert_eq!(d.end("tx", 1000, 0, false), Ok(Pending::Now(())));
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::InvalidTxnState));
    d.now = 5000;
    let Pending::Wait(_) = d.add("tx", 1000, 0, &[tp("u", 3)]) else { panic!() };
    d.replicate();
    let m = d.c.metadata("tx").unwrap();
    assert_eq!((m.state, m.start_ms, m.partitions.iter().cloned().collect::<Vec<_>>()), (TxnState::Ongoing, 5000, vec![tp("u", 3)]));
}

#[test]
fn a_second_init_fences_the_open_transaction() {
    let mut d = Driver::new();
    d.begin("tx", &[tp("t", 0)]);
    let Ok(Pending::Wait(t)) = d.init("tx", minute) else { panic!() };
    // The fence is written as PrepareAbort at the next epoch, partitions kept.
    assert_eq!(d.last().1, Some(value(TxnState::PrepareAbort, 1000, 1, &[tp("t", 0)], 0, 0)));
    d.replicate();
    assert_eq!(d.take(t), Answer::Producer(Err(Code::ConcurrentTransactions)));
    assert_eq!(d.markers.len(), 1);
    assert_eq!((d.markers[0].epoch, d.markers[0].commit), (1, false));
    // The old producer is fenced; the new one waits for the abort.
    assert_eq!(d.add("tx", 1000, 0, &[tp("t", 1)]), Pending::Now(vec![(tp("t", 1), Err(Code::ProducerFenced))]));
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::ProducerFenced));
    assert_eq!(d.init("tx", minute), Err(Code::ConcurrentTransactions));
    d.ack(1, &[tp("t", 0)]);
    d.replicate();
    assert_eq!(d.state("tx"), Ok("CompleteAbort"));
    assert_eq!(d.ready("tx", minute), pe(1000, 2));
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_by_tick() {
    let mut d = Driver::new();
    let p = d.ready("tx", 1000);
    let Pending::Wait(_) = d.add("tx", p.producer_id, p.epoch, &[tp("t", 0)]) else { panic!() };
    d.replicate();
    let written = d.log.len();
    d.now = 1000;
    // Not past start + timeout yet (Kafka's check is strict); the next check is in 10 s.
    assert_eq!(d.tick(), Some(11_000));
    assert_eq!(d.log.len(), written);
    d.now = 5000;
    d.tick();
    assert_eq!(d.log.len(), written, "not checked between intervals");
    d.now = 11_000;
    d.tick();
    assert_eq!(d.last().1, Some(value(TxnState::PrepareAbort, 1000, 1, &[tp("t", 0)], 11_000, 0)).map(|v| TxnValue { timeout_ms: 1000, ..v }));
    // Fenced in the record, pending in memory: the producer meets the transition first.
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::ConcurrentTransactions));
    d.replicate();
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::ProducerFenced));
    let job = MarkerJob { job: 1, transactional_id: "tx".into(), producer_id: 1000, epoch: 1, commit: false, coordinator_epoch, version: TxnVersion::Classic, partitions: [tp("t", 0)].into_iter().collect() };
    assert_eq!(d.markers, vec![job]);
    d.ack(1, &[tp("t", 0)]);
    d.replicate();
    assert_eq!(d.state("tx"), Ok("CompleteAbort"));
}

#[test]
fn idle_ids_expire_and_are_tombstoned() {
    let mut d = Driver::new();
    d.ready("tx", minute);
    let expiration = 604_800_000;
    d.now = expiration - 1;
    d.tick();
    assert_eq!(d.last().1.map(|v| v.state), Some(TxnState::Empty), "not yet");
    d.now = expiration + 3_600_000;
    d.tick();
    assert_eq!(d.last(), ("tx".to_string(), None));
    assert_eq!(d.state("tx"), Ok("Empty"), "gone once the tombstone is replicated");
    d.replicate();
    assert_eq!(d.state("tx"), Err(Code::TransactionalIdNotFound));
}

#[test]
fn add_offsets_adds_the_groups_offsets_partition() {
    let mut d = Driver::new();
    d.ready("tx", minute);
    let mut work = Work::default();
    let Ok(Pending::Wait(t)) = d.c.add_offsets(0, "tx", 1000, 0, "g", 50, &mut work) else { panic!() };
    d.perform(work);
    d.replicate();
    assert_eq!(d.take(t), Answer::Done(Ok(())));
    // javaHash("g") = 103; 103 % 50 = 3.
    assert_eq!(d.c.describe("tx").map(|d| d.topics), Ok(vec![("__consumer_offsets".to_string(), vec![3])]));
}

#[test]
fn a_transaction_with_no_partitions_completes_without_markers() {
    let mut d = Driver::new();
    d.ready("tx", minute);
    let Pending::Wait(_) = d.add("tx", 1000, 0, &[]) else { panic!() };
    d.replicate();
    let Ok(Pending::Wait(_)) = d.end("tx", 1000, 0, true) else { panic!() };
    d.replicate();
    assert!(d.markers.is_empty());
    assert_eq!(d.last().1.map(|v| v.state), Some(TxnState::CompleteCommit));
    d.replicate();
    assert_eq!(d.state("tx"), Ok("CompleteCommit"));
}
