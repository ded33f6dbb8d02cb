//! DescribeCluster, DescribeLogDirs and DescribeQuorum (`cluster_handlers`) through `handle`,
//! as real request bytes, at every version served: what a lone node says of its brokers, its
//! partitions' sizes and its quorum, and the refusals a principal without DESCRIBE on the
//! cluster gets.

use super::*;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterResponse;
use kafka_protocol::messages::describe_log_dirs_request::{DescribableLogDirTopic, DescribeLogDirsRequest};
use kafka_protocol::messages::describe_log_dirs_response::DescribeLogDirsResponse;
use kafka_protocol::messages::describe_quorum_request::{DescribeQuorumRequest, PartitionData, TopicData};
use kafka_protocol::messages::describe_quorum_response::DescribeQuorumResponse;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

fn quorum_request(topic: &str) -> DescribeQuorumRequest {
    DescribeQuorumRequest::default().with_topics(vec![TopicData::default().with_topic_name(TopicName(s(topic))).with_partitions(vec![PartitionData::default().with_partition_index(0)])])
}

#[test]
fn describe_cluster_names_the_brokers_and_the_controller_at_every_version() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    for version in 0..=2 {
        let r: DescribeClusterResponse = reply(handle(&node, &frame(ApiKey::DescribeCluster, version, &DescribeClusterRequest::default()), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeCluster, version);
        assert_eq!(r.error_code, 0, "v{version}");
        assert_eq!((r.controller_id.0, r.cluster_id.to_string()), (0, node.broker().config().cluster_id.clone()));
        assert_eq!(r.brokers.iter().map(|b| (b.broker_id.0, b.port)).collect::<Vec<_>>(), vec![(0, 9092)], "v{version}");
    }
    // Asked for the controllers (KIP-919's endpoint type 2), a broker refuses as Kafka's do.
    let controllers = DescribeClusterRequest::default().with_endpoint_type(2);
    let r: DescribeClusterResponse = reply(handle(&node, &frame(ApiKey::DescribeCluster, 1, &controllers), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeCluster, 1);
    assert_eq!(r.error_code, Code::UnsupportedEndpointType.code());
}

#[test]
fn describe_log_dirs_lists_each_partition_here_with_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node_with_topic(crate::testing::config(tmp.path()));
    let p: ProduceResponse = reply(handle(&node, &frame(ApiKey::Produce, 9, &produce_req("t", build(&[&b"0123456789"[..]; 4], 1), 1)), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
    let size = node.broker().partitions().get("t", 0).unwrap().log.size_bytes() as i64;
    assert!(size > 0);
    for version in 1..=4 {
        let all = DescribeLogDirsRequest::default().with_topics(None);
        let r: DescribeLogDirsResponse = reply(handle(&node, &frame(ApiKey::DescribeLogDirs, version, &all), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeLogDirs, version);
        assert_eq!(r.results.len(), 1, "one log directory");
        let dir = &r.results[0];
        assert!(std::path::Path::new(dir.log_dir.as_str()).is_absolute(), "{}", dir.log_dir);
        let parts: Vec<(String, i32, i64)> = dir.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index, p.partition_size))).collect();
        assert_eq!(parts, vec![("t".to_string(), 0, size)], "v{version}");
        // v4's volume size and free bytes: the real directory's statvfs.
        let tells = version < 4 || (0 < dir.usable_bytes && dir.usable_bytes <= dir.total_bytes);
        assert!(tells, "v{version}: total {} usable {}", dir.total_bytes, dir.usable_bytes);
    }
    // Only what was asked (an empty list asks for nothing): an unknown topic lists nothing.
    let only = DescribeLogDirsRequest::default().with_topics(Some(vec![DescribableLogDirTopic::default().with_topic(TopicName(s("other"))).with_partitions(vec![0])]));
    let r: DescribeLogDirsResponse = reply(handle(&node, &frame(ApiKey::DescribeLogDirs, 4, &only), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeLogDirs, 4);
    assert!(r.results[0].topics.is_empty());
}

#[test]
fn describe_quorum_reports_the_lone_voter_as_leader_at_every_version() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let (epoch, hw) = {
        let q = node.controller().unwrap();
        (q.raft().epoch(), q.committed_end())
    };
    for version in 0..=2 {
        let r: DescribeQuorumResponse = reply(handle(&node, &frame(ApiKey::DescribeQuorum, version, &quorum_request("__cluster_metadata")), 7, Attempt::First, &mut Vec::new()), ApiKey::DescribeQuorum, version);
        assert_eq!(r.error_code, 0, "v{version}");
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.leader_id.0, p.leader_epoch, p.high_watermark), (0, epoch, hw), "v{version}");
        let voters: Vec<(i32, i64, i64)> = p.current_voters.iter().map(|v| (v.replica_id.0, v.log_end_offset, v.last_fetch_timestamp)).collect();
        let fetched = if version >= 1 { 7 } else { -1 };
        assert_eq!(voters, vec![(0, hw, fetched)], "v{version}");
        assert_eq!(r.nodes.len(), if version >= 2 { 1 } else { 0 }, "KIP-853's nodes from v2");
    }
    let r: DescribeQuorumResponse = reply(handle(&node, &frame(ApiKey::DescribeQuorum, 2, &quorum_request("orders")), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeQuorum, 2);
    assert_eq!(r.error_code, Code::InvalidRequest.code(), "only the metadata log has a quorum");
    // A broker that is no voter reads the metadata log: an observer, with where it read from.
    let mut fetch = fetch_req("__cluster_metadata", 1, 0);
    fetch.replica_id = kafka_protocol::messages::BrokerId(5);
    let _: FetchResponse = reply(handle(&node, &frame(ApiKey::Fetch, 12, &fetch), 9, Attempt::Final, &mut Vec::new()), ApiKey::Fetch, 12);
    let r: DescribeQuorumResponse = reply(handle(&node, &frame(ApiKey::DescribeQuorum, 1, &quorum_request("__cluster_metadata")), 10, Attempt::First, &mut Vec::new()), ApiKey::DescribeQuorum, 1);
    let observers: Vec<(i32, i64, i64)> = r.topics[0].partitions[0].observers.iter().map(|o| (o.replica_id.0, o.log_end_offset, o.last_fetch_timestamp)).collect();
    assert_eq!(observers, vec![(5, 1, 9)]);
}

#[test]
fn log_dirs_and_the_quorum_need_describe_on_the_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = crate::testing::config(tmp.path());
    c.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: true, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    let node = crate::testing::one_node(c);
    let alice = crate::security::acl::Caller { principal: "User:alice".into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None };
    let ask = |key, version, bytes: Bytes| (handle_from(&node, prepare(decode_request(&bytes, true).unwrap()), Some(&alice), 0, Attempt::First, &mut Vec::new()), key, version);
    let (o, k, v) = ask(ApiKey::DescribeLogDirs, 4, frame(ApiKey::DescribeLogDirs, 4, &DescribeLogDirsRequest::default()));
    let r: DescribeLogDirsResponse = reply(o, k, v);
    assert_eq!((r.error_code, r.results.len()), (Code::ClusterAuthorizationFailed.code(), 0));
    let (o, k, v) = ask(ApiKey::DescribeLogDirs, 2, frame(ApiKey::DescribeLogDirs, 2, &DescribeLogDirsRequest::default()));
    let r: DescribeLogDirsResponse = reply(o, k, v);
    assert_eq!((r.error_code, r.results.len()), (0, 0), "before v3: an empty answer");
    for version in [0, 2] {
        let (o, k, v) = ask(ApiKey::DescribeQuorum, version, frame(ApiKey::DescribeQuorum, version, &quorum_request("__cluster_metadata")));
        let r: DescribeQuorumResponse = reply(o, k, v);
        assert_eq!((r.error_code, r.topics.len()), (Code::ClusterAuthorizationFailed.code(), 0), "v{version}");
    }
    // Listing the brokers needs nothing.
    let (o, k, v) = ask(ApiKey::DescribeCluster, 2, frame(ApiKey::DescribeCluster, 2, &DescribeClusterRequest::default()));
    let r: DescribeClusterResponse = reply(o, k, v);
    assert_eq!((r.error_code, r.brokers.len()), (0, 1));
}

/// CreatePartitions: a topic grows, its new partitions led and writable once committed; a
/// shrink, an unknown topic and manual assignments are refused with Kafka's codes, and
/// `validate_only` changes nothing.
#[test]
fn create_partitions_grows_a_topic_and_refuses_what_kafka_refuses() {
    use kafka_protocol::messages::create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsTopic};
    use kafka_protocol::messages::create_partitions_response::CreatePartitionsResponse;
    let tmp = tempfile::tempdir().unwrap();
    let node = node_with_topic(crate::testing::config(tmp.path()));
    let before = node.broker().image().topics["t"].partitions.len() as i32;
    let grow = |name: &str, count: i32| CreatePartitionsTopic::default().with_name(TopicName(s(name))).with_count(count);
    let ask = |req: &CreatePartitionsRequest| {
        let r: CreatePartitionsResponse = reply(handle(&node, &frame(ApiKey::CreatePartitions, 3, req), 0, Attempt::First, &mut Vec::new()).pipe_wait(&node), ApiKey::CreatePartitions, 3);
        r.results.iter().map(|t| (t.name.0.to_string(), t.error_code)).collect::<Vec<_>>()
    };
    let dry = CreatePartitionsRequest::default().with_topics(vec![grow("t", before + 2)]).with_validate_only(true).with_timeout_ms(1000);
    assert_eq!(ask(&dry), vec![("t".to_string(), 0)]);
    assert_eq!(node.broker().image().topics["t"].partitions.len() as i32, before, "validate_only changes nothing");
    let manual = grow("t", before + 1).with_assignments(Some(vec![CreatePartitionsAssignment::default().with_broker_ids(vec![kafka_protocol::messages::BrokerId(0)])]));
    let req = CreatePartitionsRequest::default().with_topics(vec![grow("t", before + 2), grow("nope", 3), grow("t2", 1), manual]).with_timeout_ms(1000);
    let codes = ask(&req);
    assert_eq!(codes[0], ("t".to_string(), 0));
    assert_eq!(codes[1], ("nope".to_string(), Code::UnknownTopicOrPartition.code()));
    assert_eq!(codes[3].1, Code::InvalidRequest.code(), "manual assignments");
    assert_eq!(node.broker().image().topics["t"].partitions.len() as i32, before + 2);
    let shrink = CreatePartitionsRequest::default().with_topics(vec![grow("t", 1)]).with_timeout_ms(1000);
    assert_eq!(ask(&shrink), vec![("t".to_string(), Code::InvalidPartitions.code())]);
    // The new last partition is led here and takes writes.
    let mut produce = produce_req("t", build(&[b"grown"], 1), 1);
    produce.topic_data[0].partition_data[0].index = before + 1;
    let p: ProduceResponse = reply(handle(&node, &frame(ApiKey::Produce, 9, &produce), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!((p.responses[0].partition_responses[0].error_code, p.responses[0].partition_responses[0].base_offset), (0, 0));
}

