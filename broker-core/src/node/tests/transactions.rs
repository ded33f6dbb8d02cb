//! Transactions on the wire at a partition leader: a transactional produce, WriteTxnMarkers,
//! and read_committed Fetch and ListOffsets, as request bytes in and response bytes out.

use super::*;
use kafka_protocol::messages::describe_producers_request::DescribeProducersRequest;
use kafka_protocol::messages::describe_producers_response::DescribeProducersResponse;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_protocol::messages::list_offsets_response::ListOffsetsResponse;
use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest};
use kafka_protocol::messages::write_txn_markers_response::WriteTxnMarkersResponse;
use kafka_protocol::messages::{ProducerId, TransactionalId};

/// (high watermark, last stable offset, bytes of records, aborted (producer, first offset)) of
/// a read_committed Fetch v12 of `t` from 0.
fn read_committed(node: &Node) -> (i64, i64, usize, Vec<(i64, i64)>) {
    let req = fetch_req("t", 0, 0).with_isolation_level(crate::kafka::isolation::read_committed);
    let out = handle(node, &frame(ApiKey::Fetch, 12, &req), 0, Attempt::First, &mut Vec::new());
    let r: FetchResponse = reply(out, ApiKey::Fetch, 12);
    let p = &r.responses[0].partitions[0];
    let aborted = p.aborted_transactions.iter().flatten().map(|a| (a.producer_id.0, a.first_offset)).collect();
    (p.high_watermark, p.last_stable_offset, p.records.as_ref().map_or(0, |b| b.len()), aborted)
}

fn latest_committed(node: &Node) -> i64 {
    let p = ListOffsetsPartition::default().with_partition_index(0).with_timestamp(crate::kafka::list_offsets::latest);
    let t = ListOffsetsTopic::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partitions(vec![p]);
    let req = ListOffsetsRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(-1)).with_isolation_level(crate::kafka::isolation::read_committed).with_topics(vec![t]);
    let r: ListOffsetsResponse = reply(handle(node, &frame(ApiKey::ListOffsets, 6, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::ListOffsets, 6);
    r.topics[0].partitions[0].offset
}

/// DescribeProducers of `t`-0: (producer id, epoch, last sequence, coordinator epoch, open
/// transaction's first offset) of each, or the partition's error.
fn producers(node: &Node, partition: i32) -> Result<Vec<(i64, i32, i32, i32, i64)>, i16> {
    let t = kafka_protocol::messages::describe_producers_request::TopicRequest::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partition_indexes(vec![partition]);
    let req = DescribeProducersRequest::default().with_topics(vec![t]);
    let r: DescribeProducersResponse = reply(handle(node, &frame(ApiKey::DescribeProducers, 0, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeProducers, 0);
    let p = &r.topics[0].partitions[0];
    match p.error_code {
        0 => Ok(p.active_producers.iter().map(|s| (s.producer_id.0, s.producer_epoch, s.last_sequence, s.coordinator_epoch, s.current_txn_start_offset)).collect()),
        code => Err(code),
    }
}

fn marker(pid: i64, epoch: i16, commit: bool, partition: i32) -> WriteTxnMarkersRequest {
    let t = WritableTxnMarkerTopic::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partition_indexes(vec![partition]);
    let m = WritableTxnMarker::default().with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_transaction_result(commit).with_coordinator_epoch(0).with_topics(vec![t]);
    WriteTxnMarkersRequest::default().with_markers(vec![m])
}

#[test]
fn a_transaction_aborted_through_write_txn_markers_is_listed_to_read_committed_fetches() {
    let tmp = tempfile::tempdir().unwrap();
    // The leader's side alone: no coordinator here to verify the first write (KIP-890 part 1).
    let mut config = crate::testing::config(tmp.path());
    config.txns.partition_verification = false;
    let node = crate::testing::one_node(config);
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let (pid, epoch) = node.broker().init_producer_id().unwrap();
    let mut batch = build(&[b"a", b"b"], 1000);
    crate::log::batch::set_producer(&mut batch, pid, epoch, 0);
    crate::log::batch::set_transactional(&mut batch);
    let anonymous = produce_req("t", batch.clone(), -1);
    let r: ProduceResponse = reply(handle(&node, &frame(ApiKey::Produce, 9, &anonymous), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, Code::TransactionalIdAuthorizationFailed.code(), "transactional batches without a transactional id");
    let req = produce_req("t", batch, -1).with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx"))));
    let r: ProduceResponse = reply(handle(&node, &frame(ApiKey::Produce, 9, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "a transactional produce is taken");
    assert_eq!(read_committed(&node), (2, 0, 0, vec![]), "nothing is stable while the transaction is open");
    assert_eq!(latest_committed(&node), 0);
    assert_eq!(producers(&node, 0), Ok(vec![(pid, epoch as i32, 1, -1, 0)]), "DescribeProducers shows the open transaction");
    assert_eq!(producers(&node, 3), Err(Code::UnknownTopicOrPartition.code()));
    let out = handle(&node, &frame(ApiKey::WriteTxnMarkers, 1, &marker(pid, epoch, false, 0)), 0, Attempt::First, &mut Vec::new());
    let r: WriteTxnMarkersResponse = reply(out, ApiKey::WriteTxnMarkers, 1);
    assert_eq!((r.markers[0].producer_id.0, r.markers[0].topics[0].partitions[0].error_code), (pid, 0), "answered once replicated (an ISR of one)");
    let (hw, lso, bytes, aborted) = read_committed(&node);
    assert_eq!((hw, lso, aborted), (3, 3, vec![(pid, 0)]), "the aborted records are served with the list that drops them");
    assert!(bytes > 0);
    assert_eq!(latest_committed(&node), 3);
    assert_eq!(producers(&node, 0), Ok(vec![(pid, epoch as i32, 1, 0, -1)]), "ended, by the coordinator in epoch 0");
    let out = handle(&node, &frame(ApiKey::WriteTxnMarkers, 1, &marker(pid, epoch - 1, true, 0)), 0, Attempt::First, &mut Vec::new());
    let r: WriteTxnMarkersResponse = reply(out, ApiKey::WriteTxnMarkers, 1);
    assert_eq!(r.markers[0].topics[0].partitions[0].error_code, Code::InvalidProducerEpoch.code(), "an older epoch's marker");
    let out = handle(&node, &frame(ApiKey::WriteTxnMarkers, 1, &marker(pid, epoch, true, 7)), 0, Attempt::First, &mut Vec::new());
    let r: WriteTxnMarkersResponse = reply(out, ApiKey::WriteTxnMarkers, 1);
    assert_eq!(r.markers[0].topics[0].partitions[0].error_code, Code::UnknownTopicOrPartition.code());
}

mod coordinator {
    //! A whole transaction through the transaction coordinator, as a client and the shell
    //! would drive it: FindCoordinator creates `__transaction_state`, InitProducerId,
    //! AddPartitionsToTxn, a transactional produce, EndTxn, and the markers the coordinator
    //! asks for delivered to this same node (its own partition leader) and answered back.

    use super::*;
    use crate::broker::Action;
    use crate::node::Input;
    use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic};
    use kafka_protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
    use kafka_protocol::messages::describe_transactions_request::DescribeTransactionsRequest;
    use kafka_protocol::messages::describe_transactions_response::DescribeTransactionsResponse;
    use kafka_protocol::messages::end_txn_request::EndTxnRequest;
    use kafka_protocol::messages::end_txn_response::EndTxnResponse;
    use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
    use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
    use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
    use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
    use kafka_protocol::messages::list_transactions_request::ListTransactionsRequest;
    use kafka_protocol::messages::list_transactions_response::ListTransactionsResponse;

    fn txn_node(dir: &std::path::Path) -> Node {
        let mut config = crate::testing::config(dir);
        config.txns.state_partitions = 3;
        let node = crate::testing::one_node(config);
        crate::testing::create(&node, "t", 1, Default::default()).unwrap();
        node
    }

    fn id() -> TransactionalId {
        TransactionalId(StrBytes::from_static_str("tx"))
    }

    /// Sends `req` and returns the reply and the actions its decision asked for.
    fn ask<Req: Encodable + HeaderVersion, Resp: Decodable>(node: &Node, key: ApiKey, version: i16, req: &Req, now: u64) -> (Resp, Vec<Action>) {
        let mut out = Vec::new();
        let outcome = handle(node, &frame(key, version, req), now, Attempt::First, &mut out);
        (reply(outcome, key, version), out)
    }

    /// Plays the shell's marker sender: every WriteTxnMarkers among `actions` goes to this
    /// node, and its answer back; returns what those answers asked for in turn.
    fn deliver_markers(node: &Node, actions: Vec<Action>, now: u64) -> (usize, Vec<Action>) {
        let mut sent = 0;
        let mut rest = Vec::new();
        for a in actions {
            let Action::SendMarkers(send) = a else { continue };
            assert_eq!(send.broker, 0, "the partition's leader is this node");
            sent += 1;
            let (answer, _): (WriteTxnMarkersResponse, _) = ask(node, ApiKey::WriteTxnMarkers, 1, &crate::node::txn_handlers::marker_request(&send), now);
            let result = Ok(crate::node::txn_handlers::marker_results(&send, answer));
            rest.extend(node.input(Input::MarkersAnswered { request: send.request, result }, now));
        }
        (sent, rest)
    }

    fn describe(node: &Node) -> (i16, String, Vec<(String, Vec<i32>)>) {
        let (r, _): (DescribeTransactionsResponse, _) = ask(node, ApiKey::DescribeTransactions, 0, &DescribeTransactionsRequest::default().with_transactional_ids(vec![id()]), 0);
        let s = &r.transaction_states[0];
        (s.error_code, s.transaction_state.to_string(), s.topics.iter().map(|t| (t.topic.0.to_string(), t.partitions.clone())).collect())
    }

    /// The state topic created (FindCoordinator asks for it) and `tx`'s producer id, epoch 0.
    fn ready(node: &Node) -> i64 {
        let find = FindCoordinatorRequest::default().with_key_type(crate::kafka::coordinator_type::transaction).with_coordinator_keys(vec![StrBytes::from_static_str("tx")]);
        let _: (FindCoordinatorResponse, _) = ask(node, ApiKey::FindCoordinator, 4, &find, 0);
        crate::testing::sync(node, 0);
        init(node, 0).producer_id.0
    }

    fn init(node: &Node, now: u64) -> InitProducerIdResponse {
        let req = InitProducerIdRequest::default().with_transactional_id(Some(id())).with_transaction_timeout_ms(60_000).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        ask(node, ApiKey::InitProducerId, 4, &req, now).0
    }

    fn add_t0(node: &Node, pid: i64, epoch: i16) -> i16 {
        let t = AddPartitionsToTxnTopic::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partitions(vec![0]);
        let req = AddPartitionsToTxnRequest::default().with_v3_and_below_transactional_id(id()).with_v3_and_below_producer_id(ProducerId(pid)).with_v3_and_below_producer_epoch(epoch).with_v3_and_below_topics(vec![t]);
        let (r, _): (AddPartitionsToTxnResponse, _) = ask(node, ApiKey::AddPartitionsToTxn, 3, &req, 0);
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    }

    fn produce(node: &Node, pid: i64, epoch: i16, seq: i32) -> i16 {
        produce_at(node, pid, epoch, seq, 9)
    }

    fn transactional(pid: i64, epoch: i16, seq: i32) -> ProduceRequest {
        let mut batch = build(&[b"a", b"b"], 1000);
        crate::log::batch::set_producer(&mut batch, pid, epoch, seq);
        crate::log::batch::set_transactional(&mut batch);
        produce_req("t", batch, -1).with_transactional_id(Some(id()))
    }

    fn produce_at(node: &Node, pid: i64, epoch: i16, seq: i32, version: i16) -> i16 {
        let req = transactional(pid, epoch, seq);
        let r: ProduceResponse = reply(handle_verifying(node, &frame(ApiKey::Produce, version, &req), 0, &mut Vec::new()), ApiKey::Produce, version);
        r.responses[0].partition_responses[0].error_code
    }

    fn end(node: &Node, pid: i64, epoch: i16, commit: bool, now: u64) -> (i16, Vec<Action>) {
        let req = EndTxnRequest::default().with_transactional_id(id()).with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_committed(commit);
        let (r, out): (EndTxnResponse, _) = ask(node, ApiKey::EndTxn, 3, &req, now);
        (r.error_code, out)
    }

    #[test]
    fn commit_then_abort_then_a_new_producer_fences_an_open_transaction() {
        let tmp = tempfile::tempdir().unwrap();
        let node = txn_node(tmp.path());
        let find = FindCoordinatorRequest::default().with_key_type(crate::kafka::coordinator_type::transaction).with_coordinator_keys(vec![StrBytes::from_static_str("tx")]);
        let (r, _): (FindCoordinatorResponse, _) = ask(&node, ApiKey::FindCoordinator, 4, &find, 0);
        assert_eq!(r.coordinators[0].error_code, Code::CoordinatorNotAvailable.code(), "the state topic is being created");
        crate::testing::sync(&node, 0);
        assert_eq!(node.broker().image().topics[crate::txn::transaction_state_topic].partitions.len(), 3);
        let (r, _): (FindCoordinatorResponse, _) = ask(&node, ApiKey::FindCoordinator, 4, &find, 0);
        assert_eq!((r.coordinators[0].error_code, r.coordinators[0].node_id.0), (0, 0));

        let r = init(&node, 0);
        assert_eq!((r.error_code, r.producer_epoch), (0, 0), "a new id: epoch 0");
        let pid = r.producer_id.0;
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(add_t0(&node, pid, 7), Code::ProducerFenced.code(), "another epoch");
        assert_eq!(produce(&node, pid, 0, 0), 0);
        assert_eq!(describe(&node), (0, "Ongoing".to_string(), vec![("t".to_string(), vec![0])]));
        assert_eq!(read_committed(&node).1, 0, "nothing stable while it is open");

        let (code, out) = end(&node, pid, 0, true, 10);
        assert_eq!(code, 0, "PrepareCommit is written");
        assert_eq!(describe(&node).1, "PrepareCommit");
        let (sent, after) = deliver_markers(&node, out, 10);
        assert_eq!(sent, 1);
        assert!(!after.iter().any(|a| matches!(a, Action::SendMarkers(_))), "written at the first try: {after:?}");
        assert_eq!(describe(&node).1, "CompleteCommit");
        let (hw, lso, bytes, aborted) = read_committed(&node);
        assert_eq!((hw, lso, aborted), (3, 3, vec![]), "two records and the commit marker, all stable");
        assert!(bytes > 0);

        // The next transaction aborts: its records are listed as aborted.
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 2), 0);
        let (code, out) = end(&node, pid, 0, false, 20);
        assert_eq!(code, 0);
        deliver_markers(&node, out, 20);
        assert_eq!(describe(&node).1, "CompleteAbort");
        assert_eq!(read_committed(&node).3, vec![(pid, 3)]);

        // A transaction left open is fenced by a new producer of the id: CONCURRENT_TRANSACTIONS
        // until the coordinator's abort is done, then a bumped epoch.
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 4), 0);
        let (r, out): (InitProducerIdResponse, _) = {
            let req = InitProducerIdRequest::default().with_transactional_id(Some(id())).with_transaction_timeout_ms(60_000).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
            ask(&node, ApiKey::InitProducerId, 4, &req, 30)
        };
        assert_eq!(r.error_code, Code::ConcurrentTransactions.code());
        assert_eq!(deliver_markers(&node, out, 30).0, 1, "the fenced transaction's abort markers");
        assert_eq!(describe(&node).1, "CompleteAbort");
        let r = init(&node, 40);
        assert_eq!((r.error_code, r.producer_id.0, r.producer_epoch), (0, pid, 2), "epoch 1 fenced the old producer; the new one gets 2");
        assert_eq!(end(&node, pid, 0, true, 50).0, Code::ProducerFenced.code(), "the old producer is fenced");
        let (_, _, _, aborted) = read_committed(&node);
        assert_eq!(aborted, vec![(pid, 3), (pid, 6)]);

        let (r, _): (ListTransactionsResponse, _) = ask(&node, ApiKey::ListTransactions, 1, &ListTransactionsRequest::default().with_duration_filter(-1), 60);
        assert_eq!(r.transaction_states.iter().map(|s| (s.transactional_id.0.to_string(), s.producer_id.0, s.transaction_state.to_string())).collect::<Vec<_>>(), vec![("tx".to_string(), pid, "Empty".to_string())]);
    }

    /// KIP-890 part 1 (`transaction.partition.verification.enable`, on by default): a
    /// producer's first transactional write to a partition is appended only once the
    /// coordinator says the partition is in its open transaction. A write to a partition never
    /// added, or arriving after its transaction ended (a late retry), is INVALID_TXN_STATE and
    /// opens nothing; a marker between the verification and the append sends the write back
    /// for another (NOT_ENOUGH_REPLICAS, which clients retry). Off, the late write opens a
    /// transaction no coordinator knows: a hanging one, holding the LSO back.
    #[test]
    fn a_first_transactional_write_is_verified_with_the_coordinator() {
        let tmp = tempfile::tempdir().unwrap();
        let node = txn_node(tmp.path());
        let pid = ready(&node);

        assert_eq!(produce(&node, pid, 0, 0), Code::InvalidTxnState.code(), "t-0 was never added to the transaction");
        assert_eq!(read_committed(&node), (0, 0, 0, vec![]), "nothing appended, nothing opened");
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 0), 0, "verified: in the open transaction");
        assert_eq!(produce(&node, pid, 0, 2), 0, "a later write of the open transaction is not asked about");
        let (code, out) = end(&node, pid, 0, false, 10);
        assert_eq!(code, 0);
        deliver_markers(&node, out, 10);
        let stable = read_committed(&node).1;
        assert_eq!(stable, 5, "four records and the abort marker");
        assert_eq!(produce(&node, pid, 0, 4), Code::InvalidTxnState.code(), "a late write after its transaction ended");
        assert_eq!(read_committed(&node).1, stable, "the LSO is not held back by a hanging transaction");

        // A marker between the verification and the append: the guard is gone.
        assert_eq!(add_t0(&node, pid, 0), 0);
        let mut batch = build(&[b"c"], 1000);
        crate::log::batch::set_producer(&mut batch, pid, 0, 4);
        crate::log::batch::set_transactional(&mut batch);
        let req = produce_req("t", batch, -1).with_transactional_id(Some(id()));
        let Outcome::Verify { prepared, job } = handle(&node, &frame(ApiKey::Produce, 9, &req), 20, Attempt::First, &mut Vec::new()) else { panic!("a first write is verified") };
        assert_eq!((job.coordinator, job.producer_id, job.partitions.len()), (Some(0), pid, 1));
        let (answer, _): (AddPartitionsToTxnResponse, _) = ask(&node, ApiKey::AddPartitionsToTxn, crate::node::verify::verify_version, &crate::node::verify::request(&job), 20);
        let verified = crate::node::verify::results(&job, Ok(answer));
        assert!(verified.values().all(|v| v.is_ok()), "{verified:?}");
        let (code, out) = end(&node, pid, 0, false, 30);
        assert_eq!(code, 0);
        deliver_markers(&node, out, 30);
        let r: ProduceResponse = reply(handle_from(&node, prepared.verified(verified), None, 40, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
        assert_eq!(r.responses[0].partition_responses[0].error_code, Code::NotEnoughReplicas.code(), "verified before the marker, appended after it: asked again");
    }

    /// KIP-890 from Produce v11: a write its coordinator answered TRANSACTION_ABORTABLE (not
    /// in the producer's open transaction) is told so (the producer aborts and goes on), and
    /// INVALID_TXN_STATE before, which older clients know. The coordinator answers such a
    /// partition TRANSACTION_ABORTABLE at AddPartitionsToTxn v4 and v5 alike, as Kafka's does;
    /// a partition the coordinator's answer left out is the leader's own INVALID_TXN_STATE at
    /// every Produce version (Kafka's leaders convert only TRANSACTION_ABORTABLE).
    #[test]
    fn produce_v11_is_told_an_unverified_write_is_transaction_abortable() {
        let tmp = tempfile::tempdir().unwrap();
        let node = txn_node(tmp.path());
        let pid = ready(&node);
        for (version, code) in [(9, Code::InvalidTxnState), (10, Code::InvalidTxnState), (11, Code::TransactionAbortable)] {
            assert_eq!(produce_at(&node, pid, 0, 0, version), code.code(), "Produce v{version}: t-0 was never added to the transaction");
        }
        assert_eq!(read_committed(&node), (0, 0, 0, vec![]), "nothing appended");
        let Outcome::Verify { job, prepared } = handle(&node, &frame(ApiKey::Produce, 11, &transactional(pid, 0, 0)), 0, Attempt::First, &mut Vec::new()) else { panic!("a first write is verified") };
        for version in [4, 5] {
            let (answer, _): (AddPartitionsToTxnResponse, _) = ask(&node, ApiKey::AddPartitionsToTxn, version, &crate::node::verify::request(&job), 0);
            assert_eq!(answer.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code, Code::TransactionAbortable.code(), "AddPartitionsToTxn v{version}");
            let verified = crate::node::verify::results(&job, Ok(answer));
            assert_eq!(verified.values().collect::<Vec<_>>(), vec![&Err(Code::TransactionAbortable)], "v{version}: refused by the leader");
        }
        // An answer naming no partition: the leader refuses the write itself.
        let verified = crate::node::verify::results(&job, Ok(AddPartitionsToTxnResponse::default()));
        let r: ProduceResponse = reply(handle_from(&node, prepared.verified(verified), None, 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 11);
        assert_eq!(r.responses[0].partition_responses[0].error_code, Code::InvalidTxnState.code(), "Produce v11: a partition the coordinator did not answer for");
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce_at(&node, pid, 0, 0, 11), 0, "verified: appended");
    }

    #[test]
    fn without_verification_a_late_write_opens_a_hanging_transaction() {
        let tmp = tempfile::tempdir().unwrap();
        let mut config = crate::testing::config(tmp.path());
        (config.txns.state_partitions, config.txns.partition_verification) = (3, false);
        let node = crate::testing::one_node(config);
        crate::testing::create(&node, "t", 1, Default::default()).unwrap();
        let pid = ready(&node);
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 0), 0);
        let (_, out) = end(&node, pid, 0, false, 10);
        deliver_markers(&node, out, 10);
        assert_eq!(produce(&node, pid, 0, 2), 0, "the late write is taken");
        assert_eq!(describe(&node).1, "CompleteAbort", "the coordinator knows of no open transaction");
        assert_eq!(read_committed(&node).1, 3, "and the LSO stays below the hanging one's first record");
    }

    /// KIP-890 part 2 on the wire (transaction.version 2, the default): EndTxn v5 ends the
    /// transaction at the next epoch and says so; its marker carries that epoch and its version;
    /// the late copies of that EndTxn and of that marker, arriving while the next transaction
    /// is open, are refused (docs/transactions.md section 4).
    #[test]
    fn an_end_txn_v5_bumps_the_epoch_and_late_copies_of_the_end_and_its_marker_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let node = txn_node(tmp.path());
        let pid = ready(&node);
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 0), 0);
        let end_v5 = |epoch: i16, now: u64| {
            let req = EndTxnRequest::default().with_transactional_id(id()).with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_committed(true);
            ask::<_, EndTxnResponse>(&node, ApiKey::EndTxn, 5, &req, now)
        };
        let (r, out) = end_v5(0, 10);
        assert_eq!((r.error_code, r.producer_id.0, r.producer_epoch), (0, pid, 1), "the next transaction goes on at epoch 1");
        let sends: Vec<_> = out.iter().filter_map(|a| if let Action::SendMarkers(s) = a { Some(s.clone()) } else { None }).collect();
        assert_eq!(sends[0].markers[0].epoch, 1, "the marker carries the bumped epoch");
        let late_marker = crate::node::txn_handlers::marker_request(&sends[0]);
        assert_eq!(late_marker.markers[0].unknown_tagged_fields.get(&crate::kafka::marker_txn_version_tag).map(|b| b.to_vec()), Some(vec![2]));
        deliver_markers(&node, out, 10);
        assert_eq!(describe(&node).1, "CompleteCommit");
        let (r, _) = end_v5(0, 15);
        assert_eq!((r.error_code, r.producer_epoch), (0, 1), "a retry of the end gets the same answer");

        // Transaction 2, at epoch 1; sequences start over.
        assert_eq!(add_t0(&node, pid, 0), Code::ProducerFenced.code(), "epoch 0 is over");
        assert_eq!(add_t0(&node, pid, 1), 0);
        assert_eq!(produce(&node, pid, 1, 0), 0);
        let (r, out) = end_v5(0, 20);
        assert_eq!(r.error_code, Code::ProducerFenced.code(), "transaction 1's late EndTxn cannot end transaction 2");
        assert!(!out.iter().any(|a| matches!(a, Action::SendMarkers(_))));
        let (r, _): (WriteTxnMarkersResponse, _) = ask(&node, ApiKey::WriteTxnMarkers, 1, &late_marker, 20);
        assert_eq!(r.markers[0].topics[0].partitions[0].error_code, Code::InvalidProducerEpoch.code(), "transaction 1's late marker cannot end transaction 2");
        assert_eq!(describe(&node).1, "Ongoing");
        let (hw, lso, _, _) = read_committed(&node);
        assert!(lso < hw, "transaction 2 still holds the last stable offset back ({lso} < {hw})");
    }

    #[test]
    fn a_transaction_left_open_past_its_timeout_is_aborted_by_the_coordinator() {
        let tmp = tempfile::tempdir().unwrap();
        let node = txn_node(tmp.path());
        let find = FindCoordinatorRequest::default().with_key_type(crate::kafka::coordinator_type::transaction).with_coordinator_keys(vec![StrBytes::from_static_str("tx")]);
        let _: (FindCoordinatorResponse, _) = ask(&node, ApiKey::FindCoordinator, 4, &find, 0);
        crate::testing::sync(&node, 0);
        let req = InitProducerIdRequest::default().with_transactional_id(Some(id())).with_transaction_timeout_ms(1_000).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        let (r, _): (InitProducerIdResponse, _) = ask(&node, ApiKey::InitProducerId, 4, &req, 0);
        assert_eq!(r.error_code, 0);
        let pid = r.producer_id.0;
        assert_eq!(add_t0(&node, pid, 0), 0);
        assert_eq!(produce(&node, pid, 0, 0), 0);
        let check = node.broker().config().txns.abort_timed_out_interval_ms as u64;
        // Ticks before the timeout change nothing; the first check after it aborts.
        let early = node.input(Input::Tick { checkpoint: false }, 500);
        assert!(!early.iter().any(|a| matches!(a, Action::SendMarkers(_))), "{early:?}");
        assert_eq!(describe(&node).1, "Ongoing");
        let mut later = Vec::new();
        let mut now = 1_000;
        while !later.iter().any(|a| matches!(a, Action::SendMarkers(_))) {
            assert!(now <= 1_000 + 2 * check, "no abort within two checks of the timeout");
            now += 100;
            later = node.input(Input::Tick { checkpoint: false }, now);
        }
        let send = later.iter().find_map(|a| match a {
            Action::SendMarkers(s) => Some(s.clone()),
            _ => None,
        });
        assert!(send.is_some_and(|s| !s.markers[0].commit && s.markers[0].epoch == 1), "an abort, at the fencing epoch");
        deliver_markers(&node, later, now);
        assert_eq!(describe(&node).1, "CompleteAbort");
        assert_eq!(read_committed(&node).3, vec![(pid, 0)], "its records are aborted");
        assert_eq!(end(&node, pid, 0, true, now).0, Code::ProducerFenced.code(), "the producer that left it open is fenced");
    }
}
