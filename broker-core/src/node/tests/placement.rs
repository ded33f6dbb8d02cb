//! AlterPartitionReassignments, ListPartitionReassignments and UnregisterBroker
//! (`placement_handlers`) through `handle`, as real request bytes, on a lone node: what its one
//! broker can and cannot do (a target naming an unknown broker, a cancel with nothing in
//! progress, an unknown partition, an unregistered id), every version served.

use super::*;
use kafka_protocol::messages::alter_partition_reassignments_request::{AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic};
use kafka_protocol::messages::alter_partition_reassignments_response::AlterPartitionReassignmentsResponse;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use kafka_protocol::messages::list_partition_reassignments_response::ListPartitionReassignmentsResponse;
use kafka_protocol::messages::unregister_broker_request::UnregisterBrokerRequest;
use kafka_protocol::messages::unregister_broker_response::UnregisterBrokerResponse;
use kafka_protocol::messages::BrokerId;

fn alter(asked: &[(&str, i32, Option<&[i32]>)]) -> AlterPartitionReassignmentsRequest {
    let topics = asked
        .iter()
        .map(|(t, p, target)| {
            let part = ReassignablePartition::default().with_partition_index(*p).with_replicas(target.map(|r| r.iter().map(|&b| BrokerId(b)).collect()));
            ReassignableTopic::default().with_name(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(vec![part])
        })
        .collect();
    AlterPartitionReassignmentsRequest::default().with_topics(topics).with_timeout_ms(1000)
}

fn codes(r: &AlterPartitionReassignmentsResponse) -> Vec<(String, i32, i16)> {
    r.responses.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index, p.error_code))).collect()
}

#[test]
fn reassignments_on_a_lone_node_are_checked_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node_with_topic(crate::testing::config(tmp.path()));
    for version in 0..=1 {
        let asked = alter(&[("t", 0, Some(&[0, 5])), ("t", 1, Some(&[0])), ("nope", 0, Some(&[0])), ("t", 0, None), ("t", 0, Some(&[0]))]);
        let r: AlterPartitionReassignmentsResponse = reply(handle(&node, &frame(ApiKey::AlterPartitionReassignments, version, &asked), 0, Attempt::First, &mut Vec::new()), ApiKey::AlterPartitionReassignments, version);
        assert_eq!(r.error_code, 0, "v{version}");
        let expected = vec![
            ("t".to_string(), 0, Code::InvalidReplicaAssignment.code()), // broker 5 is not registered
            ("t".to_string(), 1, Code::UnknownTopicOrPartition.code()),
            ("nope".to_string(), 0, Code::UnknownTopicOrPartition.code()),
            ("t".to_string(), 0, Code::NoReassignmentInProgress.code()),
            ("t".to_string(), 0, 0), // already there: nothing to do
        ];
        assert_eq!(codes(&r), expected, "v{version}");
    }
    // v1 without a replication factor change: growing to two replicas is refused.
    let grow = alter(&[("t", 0, Some(&[0, 0]))]).with_allow_replication_factor_change(false);
    let r: AlterPartitionReassignmentsResponse = reply(handle(&node, &frame(ApiKey::AlterPartitionReassignments, 1, &grow), 0, Attempt::First, &mut Vec::new()), ApiKey::AlterPartitionReassignments, 1);
    assert_eq!(codes(&r)[0].2, Code::InvalidReplicaAssignment.code(), "a broker named twice is refused first");
    let list = ListPartitionReassignmentsRequest::default().with_topics(None);
    let r: ListPartitionReassignmentsResponse = reply(handle(&node, &frame(ApiKey::ListPartitionReassignments, 0, &list), 0, Attempt::First, &mut Vec::new()), ApiKey::ListPartitionReassignments, 0);
    assert_eq!((r.error_code, r.topics.len()), (0, 0), "nothing in progress");
}

#[test]
fn unregister_broker_refuses_an_unknown_id_and_removes_a_known_one() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let unknown = UnregisterBrokerRequest::default().with_broker_id(BrokerId(7));
    let r: UnregisterBrokerResponse = reply(handle(&node, &frame(ApiKey::UnregisterBroker, 0, &unknown), 0, Attempt::First, &mut Vec::new()), ApiKey::UnregisterBroker, 0);
    assert_eq!(r.error_code, Code::BrokerIdNotRegistered.code());
    let me = UnregisterBrokerRequest::default().with_broker_id(BrokerId(0));
    let outcome = handle(&node, &frame(ApiKey::UnregisterBroker, 0, &me), 0, Attempt::First, &mut Vec::new());
    assert!(!node.controller().unwrap().controller().image().brokers.contains_key(&0), "unregistered once committed: {outcome:?}");
}
