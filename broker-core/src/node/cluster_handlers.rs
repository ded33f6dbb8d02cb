//! What operators' tools ask of the cluster (issue 30, item 4): DescribeCluster (the brokers and
//! the controller, as Metadata names them, KIP-700), DescribeLogDirs (this broker's partitions and
//! their sizes, KIP-113) and DescribeQuorum (the metadata quorum as its leader sees it: epoch, high
//! watermark, each voter's log end and last fetch, KIP-595 and KIP-853). Reads only.

use super::Node;
use crate::broker::Broker;
use crate::kafka::Code;
use crate::metadata::metadata_topic;
use crate::security::controller_listener_name;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::describe_cluster_response::{DescribeClusterBroker, DescribeClusterResponse};
use kafka_protocol::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use kafka_protocol::messages::describe_log_dirs_response::{DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult, DescribeLogDirsTopic};
use kafka_protocol::messages::describe_quorum_request::DescribeQuorumRequest;
use kafka_protocol::messages::describe_quorum_response::{self as quorum, DescribeQuorumResponse, ReplicaState};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;

/// KIP-919's endpoint types: a broker answers for brokers only.
const endpoint_type_brokers: i8 = 1;

/// Kafka's "not asked for" value of an authorized-operations field.
const operations_not_asked: i32 = i32::MIN;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// DescribeCluster: the unfenced brokers (and, from v2 when asked, the fenced ones) with their
/// endpoints on the caller's `listener`, the cluster id and the controller Metadata names.
/// Asked for the controllers (v1's endpoint type 2), a broker answers UNSUPPORTED_ENDPOINT_TYPE,
/// as Kafka's brokers do. Authorized operations are not computed (`operations_not_asked`).
pub fn describe_cluster(b: &Broker, version: i16, req: DescribeClusterRequest, controller_id: i32, listener: &str) -> DescribeClusterResponse {
    let mut r = DescribeClusterResponse::default();
    r.endpoint_type = endpoint_type_brokers;
    r.cluster_authorized_operations = operations_not_asked;
    if version >= 1 && req.endpoint_type != endpoint_type_brokers {
        r.error_code = Code::UnsupportedEndpointType.code();
        r.error_message = Some(s(&format!("a broker describes its brokers (endpoint type {endpoint_type_brokers}), not type {}", req.endpoint_type)));
        return r;
    }
    let fenced_too = version >= 2 && req.include_fenced_brokers;
    r.cluster_id = s(&b.config().cluster_id);
    r.controller_id = BrokerId(controller_id);
    r.brokers = b
        .image()
        .brokers
        .values()
        .filter(|x| fenced_too || !x.fenced)
        .filter_map(|x| {
            let (host, port) = x.endpoint(listener)?;
            Some(DescribeClusterBroker::default().with_broker_id(BrokerId(x.id)).with_host(s(host)).with_port(port).with_is_fenced(x.fenced))
        })
        .collect();
    r
}

/// DescribeLogDirs: this broker's one log directory and the partitions it holds there (all of
/// them, or those asked), each with its size, and the volume's total and usable bytes (-1,
/// Kafka's "unknown", where the disk cannot tell).
pub fn describe_log_dirs(b: &Broker, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    let asked: Option<BTreeMap<String, Vec<i32>>> = req.topics.map(|ts| ts.into_iter().map(|t| (t.topic.0.to_string(), t.partitions)).collect());
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for ((name, p), part) in b.partitions().iter() {
        if asked.as_ref().is_some_and(|a| !a.get(&**name).is_some_and(|ps| ps.contains(&p))) {
            continue;
        }
        let size = part.log.size_bytes().min(i64::MAX as u64) as i64;
        topics.entry(name.to_string()).or_default().push(DescribeLogDirsPartition::default().with_partition_index(p).with_partition_size(size));
    }
    let dir = std::path::absolute(&b.config().data_dir).unwrap_or_else(|_| b.config().data_dir.clone());
    let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let (total, usable) = b.space().map_or((-1, -1), |(t, u)| (bytes(t), bytes(u)));
    let result = DescribeLogDirsResult::default()
        .with_log_dir(s(&dir.display().to_string()))
        .with_total_bytes(total)
        .with_usable_bytes(usable)
        .with_topics(topics.into_iter().map(|(name, partitions)| DescribeLogDirsTopic::default().with_name(TopicName(s(&name))).with_partitions(partitions)).collect());
    DescribeLogDirsResponse::default().with_results(vec![result])
}

/// DescribeQuorum for `__cluster_metadata-0`, answered by the quorum's leader (the active
/// controller; other nodes forward it): its epoch and high watermark, each voter's log end and
/// last fetch as the leader saw them (-1 for a voter that has not fetched in this epoch; "caught
/// up" is when it last fetched with the high watermark reached), and from v2 the voters'
/// CONTROLLER endpoints; observers are the brokers that fetched the metadata log from it in
/// this epoch, each with the offset it last fetched from (its log end) and when.
pub fn describe_quorum(node: &Node, version: i16, req: DescribeQuorumRequest, now: u64) -> DescribeQuorumResponse {
    let mut r = DescribeQuorumResponse::default();
    let asked_metadata = req.topics.iter().any(|t| t.topic_name.0.as_str() == metadata_topic && t.partitions.iter().any(|p| p.partition_index == 0));
    let voters = node.broker().config().voters.clone();
    // Messages travel from v2 on; timestamps from v1 (a field a version lacks must stay default).
    let why = |text: String| (version >= 2).then(|| s(&text));
    let Some(q) = node.controller().filter(|q| q.leadership().is_some()) else {
        r.error_code = Code::NotLeaderOrFollower.code();
        r.error_message = why("this node does not lead the metadata quorum".into());
        return r;
    };
    if !asked_metadata {
        r.error_code = Code::InvalidRequest.code();
        r.error_message = why(format!("only {metadata_topic}-0 has a quorum"));
        return r;
    }
    let lead = q.leadership().expect("checked above");
    let (me, end, hw) = (q.raft().id(), q.end_offset(), q.committed_end());
    let at = |t: i64| if version >= 1 { t } else { -1 };
    let state = |id: i32| match (id == me, lead.voter(id)) {
        (true, _) => ReplicaState::default().with_replica_id(BrokerId(id)).with_log_end_offset(end).with_last_fetch_timestamp(at(now as i64)).with_last_caught_up_timestamp(at(now as i64)),
        (false, Some((acked, fetched))) => ReplicaState::default().with_replica_id(BrokerId(id)).with_log_end_offset(acked).with_last_fetch_timestamp(at(fetched as i64)).with_last_caught_up_timestamp(if acked >= hw { at(fetched as i64) } else { -1 }),
        (false, None) => ReplicaState::default().with_replica_id(BrokerId(id)).with_log_end_offset(-1).with_last_fetch_timestamp(-1).with_last_caught_up_timestamp(-1),
    };
    let partition = quorum::PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(BrokerId(me))
        .with_leader_epoch(q.raft().epoch())
        .with_high_watermark(hw)
        .with_current_voters(voters.keys().map(|&id| state(id)).collect())
        .with_observers(q.observers().map(|(id, offset, fetched)| ReplicaState::default().with_replica_id(BrokerId(id)).with_log_end_offset(offset).with_last_fetch_timestamp(at(fetched as i64)).with_last_caught_up_timestamp(if offset >= hw { at(fetched as i64) } else { -1 })).collect());
    r.topics = vec![quorum::TopicData::default().with_topic_name(TopicName(s(metadata_topic))).with_partitions(vec![partition])];
    if version >= 2 {
        r.nodes = voters
            .iter()
            .filter_map(|(&id, addr)| {
                let (host, port) = addr.rsplit_once(':')?;
                let listener = quorum::Listener::default().with_name(s(controller_listener_name)).with_host(s(host.trim_matches(['[', ']']))).with_port(port.parse().ok()?);
                Some(quorum::Node::default().with_node_id(BrokerId(id)).with_listeners(vec![listener]))
            })
            .collect();
    }
    r
}
