//! KIP-951's leader discovery: a partition answered NOT_LEADER_OR_FOLLOWER by Produce (v10+),
//! or NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH by Fetch (v16+), carries the partition's
//! leader and leader epoch as this broker's metadata knows them (-1, -1 when it knows none),
//! and the answer carries each such leader's endpoint on the client's listener, so the client
//! turns to the new leader without a Metadata round trip (Kafka's `getCurrentLeader`). Reads
//! the image only: whether a partition failed was decided before, and is not changed here.

use crate::broker::Broker;
use crate::kafka::Code;
use crate::protocol::s;
use kafka_protocol::messages::fetch_response::{self, FetchResponse};
use kafka_protocol::messages::produce_response::{self, ProduceResponse};
use kafka_protocol::messages::BrokerId;
use std::collections::BTreeMap;

/// A partition's leader and epoch, and the leader's endpoint on `listener` (none for an
/// unknown or fenced leader, or one without that listener).
fn leader_of(b: &Broker, listener: &str, topic: &str, p: i32) -> (i32, i32, Option<(i32, String, i32)>) {
    let Some(info) = b.image().partition(topic, p) else { return (-1, -1, None) };
    let node = b.image().brokers.get(&info.leader).filter(|x| !x.fenced).and_then(|x| x.endpoint(listener)).map(|(host, port)| (info.leader, host.to_string(), port));
    (info.leader, info.leader_epoch, node)
}

/// Produce v10+: each NOT_LEADER_OR_FOLLOWER partition's leader, and their endpoints.
pub fn produce(b: &Broker, listener: &str, resp: &mut ProduceResponse) {
    let mut nodes = BTreeMap::new();
    for t in &mut resp.responses {
        for pr in t.partition_responses.iter_mut().filter(|pr| pr.error_code == Code::NotLeaderOrFollower.code()) {
            let (leader, epoch, node) = leader_of(b, listener, t.name.0.as_str(), pr.index);
            pr.current_leader = produce_response::LeaderIdAndEpoch::default().with_leader_id(BrokerId(leader)).with_leader_epoch(epoch);
            if let Some((id, host, port)) = node {
                nodes.insert(id, produce_response::NodeEndpoint::default().with_node_id(BrokerId(id)).with_host(s(&host)).with_port(port));
            }
        }
    }
    resp.node_endpoints = nodes.into_values().collect();
}

/// Fetch v16+ (topics by id): each NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH partition's
/// leader, and their endpoints. A topic whose id is unknown here has no leader to tell.
pub fn fetch(b: &Broker, listener: &str, resp: &mut FetchResponse) {
    let mut nodes = BTreeMap::new();
    let wrong_leader = [Code::NotLeaderOrFollower.code(), Code::FencedLeaderEpoch.code()];
    for t in &mut resp.responses {
        let Some(name) = b.topic_by_id(*t.topic_id.as_bytes()).cloned() else { continue };
        for pd in t.partitions.iter_mut().filter(|pd| wrong_leader.contains(&pd.error_code)) {
            let (leader, epoch, node) = leader_of(b, listener, &name, pd.partition_index);
            pd.current_leader = fetch_response::LeaderIdAndEpoch::default().with_leader_id(BrokerId(leader)).with_leader_epoch(epoch);
            if let Some((id, host, port)) = node {
                nodes.insert(id, fetch_response::NodeEndpoint::default().with_node_id(BrokerId(id)).with_host(s(&host)).with_port(port));
            }
        }
    }
    resp.node_endpoints = nodes.into_values().collect();
}
