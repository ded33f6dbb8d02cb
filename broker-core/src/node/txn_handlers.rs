//! The transaction APIs a partition leader answers: WriteTxnMarkers (a coordinator, or an
//! operator's tool aborting a hanging transaction, KIP-664, ends a producer's transaction on
//! the partitions this node leads; each marker is appended with acks=all and the request is
//! answered once every partition's marker is replicated, or failed, or the wait ran out) and
//! DescribeProducers (the producers a leader knows, with their open transactions). Wire only:
//! what a marker may do is the broker's (`broker::markers`).

use super::waiting::{Pending, Waiting};
use super::Outcome;
use crate::broker::{Action, Broker};
use crate::log::batch::control::MarkerKind;
use kafka_protocol::messages::ProducerId;
use kafka_protocol::messages::describe_producers_request::DescribeProducersRequest;
use kafka_protocol::messages::describe_producers_response::{DescribeProducersResponse, PartitionResponse, ProducerState, TopicResponse};
use kafka_protocol::messages::write_txn_markers_request::WriteTxnMarkersRequest;
use kafka_protocol::messages::write_txn_markers_response::{WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult, WriteTxnMarkersResponse};

/// WriteTxnMarkers: for each marker, each partition's error (none once it is replicated).
pub fn write_txn_markers(b: &mut Broker, version: i16, correlation_id: i32, req: WriteTxnMarkersRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    let mut r = WriteTxnMarkersResponse::default();
    let mut pending = Vec::new();
    for (mi, m) in req.markers.into_iter().enumerate() {
        let kind = if m.transaction_result { MarkerKind::Commit } else { MarkerKind::Abort };
        let mut mr = WritableTxnMarkerResult::default().with_producer_id(m.producer_id);
        for (ti, t) in m.topics.into_iter().enumerate() {
            let name: std::sync::Arc<str> = std::sync::Arc::from(t.name.0.as_str());
            let mut tr = WritableTxnMarkerTopicResult::default().with_name(t.name.clone());
            for (slot, p) in t.partition_indexes.into_iter().enumerate() {
                let mut pr = WritableTxnMarkerPartitionResult::default().with_partition_index(p);
                match b.write_marker(&name, p, m.producer_id.0, m.producer_epoch, kind, m.coordinator_epoch, now, out) {
                    Ok(produced) => pending.push((mi, Pending { topic: ti, slot, name: name.clone(), partition: p, produced })),
                    Err(e) => pr.error_code = e.kafka_error(true).code(),
                }
                tr.partitions.push(pr);
            }
            mr.topics.push(tr);
        }
        r.markers.push(mr);
    }
    let mut waiting = Waiting::markers(version, correlation_id, r, pending, crate::constants::produce_wait_ms_max);
    // Already replicated (an ISR of one): answer now.
    waiting.poll_broker(b, false).unwrap_or(Outcome::Wait(waiting))
}

/// DescribeProducers: per partition led here, every producer it knows (no last timestamp is
/// kept: -1); NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION elsewhere.
pub fn describe_producers(b: &Broker, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let mut r = DescribeProducersResponse::default();
    for t in req.topics {
        let mut tr = TopicResponse::default().with_name(t.name.clone());
        for p in t.partition_indexes {
            let mut pr = PartitionResponse::default().with_partition_index(p);
            match b.describe_producers(&t.name.0, p) {
                Ok(producers) => {
                    pr.active_producers = producers
                        .into_iter()
                        .map(|v| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(v.producer_id))
                                .with_producer_epoch(v.epoch as i32)
                                .with_last_sequence(v.last_sequence)
                                .with_last_timestamp(-1)
                                .with_coordinator_epoch(v.coordinator_epoch)
                                .with_current_txn_start_offset(v.current_txn_start_offset)
                        })
                        .collect()
                }
                Err(e) => {
                    pr.error_code = e.kafka_error(true).code();
                    pr.error_message = Some(crate::protocol::s(&e.to_string()));
                }
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    r
}
