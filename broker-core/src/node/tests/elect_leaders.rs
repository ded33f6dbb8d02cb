//! ElectLeaders (API 43) through `handle`, as real request bytes, on a lone node: what needs no
//! election (PREFERRED or UNCLEAN), an unknown partition, an unknown election type, and a node that is not the controller
//! (which forwards it).
//! The move itself is the controller's decision, tested in controller/tests/rebalance.rs.

use super::*;
use kafka_protocol::messages::elect_leaders_request::{ElectLeadersRequest, TopicPartitions};
use kafka_protocol::messages::elect_leaders_response::ElectLeadersResponse;

fn request(election_type: i8, asked: &[(&str, i32)]) -> ElectLeadersRequest {
    let tps = asked.iter().map(|(t, p)| TopicPartitions::default().with_topic(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(vec![*p])).collect();
    ElectLeadersRequest::default().with_election_type(election_type).with_topic_partitions(Some(tps)).with_timeout_ms(1000)
}

fn codes(r: &ElectLeadersResponse) -> Vec<(String, i32, i16)> {
    r.replica_election_results.iter().flat_map(|t| t.partition_result.iter().map(move |p| (t.topic.0.to_string(), p.partition_id, p.error_code))).collect()
}

#[test]
fn elect_leaders_answers_each_partition_with_kafkas_code() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    {
        let mut q = node.controller().unwrap();
        let (_, records) = q.controller().create_topic("t", 1, 1, Default::default(), 0).unwrap();
        q.commit(records, 0).unwrap();
    }
    crate::testing::sync(&node, 0);
    let preferred = frame(ApiKey::ElectLeaders, 2, &request(0, &[("t", 0), ("nope", 0)]));
    let r: ElectLeadersResponse = reply(handle(&node, &preferred, 0, Attempt::First, &mut Vec::new()), ApiKey::ElectLeaders, 2);
    assert_eq!(r.error_code, 0);
    let expected = vec![("t".to_string(), 0, Code::ElectionNotNeeded.code()), ("nope".to_string(), 0, Code::UnknownTopicOrPartition.code())];
    assert_eq!(codes(&r), expected);
    let unclean = frame(ApiKey::ElectLeaders, 2, &request(1, &[("t", 0)]));
    let r: ElectLeadersResponse = reply(handle(&node, &unclean, 0, Attempt::First, &mut Vec::new()), ApiKey::ElectLeaders, 2);
    assert_eq!(codes(&r), vec![("t".to_string(), 0, Code::ElectionNotNeeded.code())], "UNCLEAN where a live leader is left");
    let unknown = frame(ApiKey::ElectLeaders, 2, &request(2, &[("t", 0)]));
    let r: ElectLeadersResponse = reply(handle(&node, &unknown, 0, Attempt::First, &mut Vec::new()), ApiKey::ElectLeaders, 2);
    assert_eq!(codes(&r), vec![("t".to_string(), 0, Code::InvalidRequest.code())], "no election type 2");
    // v0 (no election type: preferred) on a node without a controller: forwarded, and if no
    // controller answers, NOT_CONTROLLER per partition.
    let other = tempfile::tempdir().unwrap();
    let disk: std::sync::Arc<dyn crate::storage::Disk> = std::sync::Arc::new(crate::storage::FileDisk::new());
    let lone = Node::new(Broker::open(disk, crate::testing::config(other.path()), 0).unwrap(), None);
    let v0 = frame(ApiKey::ElectLeaders, 0, &request(0, &[("t", 0)]));
    let Outcome::Forward { fallback, .. } = handle(&lone, &v0, 0, Attempt::First, &mut Vec::new()) else { panic!("ElectLeaders is forwarded") };
    let r: ElectLeadersResponse = reply(Outcome::Reply(fallback), ApiKey::ElectLeaders, 0);
    assert_eq!(codes(&r), vec![("t".to_string(), 0, Code::NotController.code())]);
}
