//! What the coordinator refuses, and with which Kafka error: a transition in flight, a stale or
//! newer epoch, a wrong producer id, EndTxn with nothing open, bad InitProducerId requests and
//! ids it does not lead; and KIP-360's resume and epoch-exhaustion rules.

use super::*;

#[test]
fn requests_meeting_a_pending_write_get_concurrent_transactions() {
    let mut d = Driver::new();
    let Ok(Pending::Wait(_)) = d.init("tx", minute) else { panic!() };
    assert_eq!(d.init("tx", minute), Err(Code::ConcurrentTransactions));
    d.replicate();
    let Pending::Wait(_) = d.add("tx", 1000, 0, &[tp("t", 0)]) else { panic!() };
    assert_eq!(d.add("tx", 1000, 0, &[tp("t", 1)]), Pending::Now(vec![(tp("t", 1), Err(Code::ConcurrentTransactions))]));
    assert_eq!(d.end("tx", 1000, 0, true), Err(Code::ConcurrentTransactions));
    d.replicate();
    assert_eq!(d.state("tx"), Ok("Ongoing"));
}

#[test]
fn epochs_and_producer_ids_are_checked() {
    let mut d = Driver::new();
    d.ready("tx", minute);
    assert_eq!(d.ready("tx", minute), pe(1000, 1));
    // Older and newer epochs are both fenced (classic protocol: exact match).
    for epoch in [0, 2] {
        assert_eq!(d.add("tx", 1000, epoch, &[tp("t", 0)]), Pending::Now(vec![(tp("t", 0), Err(Code::ProducerFenced))]));
        assert_eq!(d.end("tx", 1000, epoch, true), Err(Code::ProducerFenced));
    }
    assert_eq!(d.add("tx", 999, 1, &[tp("t", 0)]), Pending::Now(vec![(tp("t", 0), Err(Code::InvalidProducerIdMapping))]));
    assert_eq!(d.end("tx", 999, 1, true), Err(Code::InvalidProducerIdMapping));
    assert_eq!(d.end("unknown", 1000, 1, true), Err(Code::InvalidProducerIdMapping));
    // EndTxn with no transaction open.
    assert_eq!(d.end("tx", 1000, 1, true), Err(Code::InvalidTxnState));
    assert_eq!(d.end("tx", 1000, 1, false), Err(Code::InvalidTxnState));
}

#[test]
fn init_refuses_bad_requests_and_partitions_not_led() {
    let mut d = Driver::new();
    assert_eq!(d.init("", minute), Err(Code::InvalidRequest));
    assert_eq!(d.init("tx", 900_001), Err(Code::InvalidTransactionTimeout));
    assert_eq!(d.init("tx", 0), Err(Code::InvalidTransactionTimeout));
    assert!(d.log.is_empty() && d.c.metadata("tx").is_none());
    let mut c = Coordinator::new(TxnConfig::default());
    let mut work = Work::default();
    let mut pid = || Ok(1);
    assert_eq!(c.init_producer_id(0, "a", minute, None, &mut pid, &mut work), Err(Code::CoordinatorNotAvailable));
    // javaHash("a") = 97, "b" = 98: partitions 1 and 0 of two.
    c.set_partitions(2, 0, &mut work);
    c.take_over(0, 3, 0);
    assert_eq!(c.init_producer_id(0, "a", minute, None, &mut pid, &mut work), Err(Code::NotCoordinator));
    assert_eq!(c.init_producer_id(0, "b", minute, None, &mut pid, &mut work), Err(Code::CoordinatorLoadInProgress));
    assert_eq!(c.describe("b"), Err(Code::CoordinatorLoadInProgress));
    c.load(0, Vec::new(), 0, true, 0, &mut work);
    assert!(matches!(c.init_producer_id(0, "b", minute, None, &mut pid, &mut work), Ok(Pending::Wait(_))));
    assert_eq!(work.appends.iter().map(|a| a.partition).collect::<Vec<_>>(), vec![0]);
}

#[test]
fn kip_360_resumes_the_current_producer_and_fences_others() {
    let mut d = Driver::new();
    d.ready("tx", minute);
    let resume = |d: &mut Driver, e: ProducerIdAndEpoch| -> Result<ProducerIdAndEpoch, Code> {
        let Pending::Wait(t) = d.init_expecting("tx", minute, Some(e))? else { panic!() };
        d.replicate();
        match d.take(t) {
            Answer::Producer(r) => r,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(resume(&mut d, pe(1000, 0)), Ok(pe(1000, 1)));
    // The same request again (its answer lost): the same epoch, not another bump.
    assert_eq!(resume(&mut d, pe(1000, 0)), Ok(pe(1000, 1)));
    assert_eq!(resume(&mut d, pe(1000, 5)), Err(Code::ProducerFenced));
    assert_eq!(resume(&mut d, pe(999, 1)), Err(Code::ProducerFenced));
    assert_eq!(resume(&mut d, pe(1000, 1)), Ok(pe(1000, 2)));
}

#[test]
fn an_exhausted_epoch_rotates_the_producer_id() {
    let mut d = Driver::new();
    let stored = value(TxnState::CompleteCommit, 5, 32_766, &[], 0, 0);
    let mut c = Coordinator::new(TxnConfig::default());
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, coordinator_epoch, 0);
    c.load(0, vec![(Bytes::from(encode_key("tx")), Some(Bytes::from(encode_value(&stored))))], 1, true, 0, &mut work);
    d.c = c;
    let Ok(Pending::Wait(t)) = d.init_expecting("tx", minute, Some(pe(5, 32_766))) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Producer(Ok(pe(1000, 0))));
    // Its retry names the old producer id at the exhausted epoch: the same answer.
    let Ok(Pending::Wait(t)) = d.init_expecting("tx", minute, Some(pe(5, 32_766))) else { panic!() };
    d.replicate();
    assert_eq!(d.take(t), Answer::Producer(Ok(pe(1000, 0))));
    assert_eq!(d.next_producer_id, 1001, "one new producer id");
}
