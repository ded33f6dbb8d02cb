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
    let node = broker(tmp.path());
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
