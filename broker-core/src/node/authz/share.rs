//! KIP-932's topic checks, as Kafka makes them: ShareFetch and ShareAcknowledge need READ on
//! each topic they touch (a refused one is answered TOPIC_AUTHORIZATION_FAILED per partition
//! and neither fetched, acknowledged nor added to the share session; the handler is told which
//! through a [`Denied`] naming every topic of the image the caller may not READ, since a
//! session's partitions are not named in the request); ShareGroupHeartbeat needs DESCRIBE on
//! each topic it subscribes to, as KIP-848's heartbeat does. The offsets admin APIs
//! ([`offsets`]) as Kafka's KafkaApis checks them: DescribeShareGroupOffsets DESCRIBE on each
//! group and each topic, AlterShareGroupOffsets READ on the group and READ on each topic,
//! DeleteShareGroupOffsets DELETE on the group and READ on each topic. FindCoordinator's
//! share-partition keys (v6) are the brokers' own lookup: CLUSTER_ACTION on the cluster
//! ([`find_coordinator`]). Decides from ACLs only; the group's own READ check of the other APIs
//! is `authz`'s.

use super::{Access, Check, Denied};
use crate::kafka::{ApiKey, Code};
use crate::node::Outcome;
use crate::protocol::{s, Response};
use kafka_protocol::messages::RequestKind;
use crate::security::acl::{Operation, ResourceType};
use kafka_protocol::messages::ShareGroupHeartbeatRequest;

/// Every topic of the image the caller may not READ (ShareFetch, ShareAcknowledge).
pub(super) fn unreadable(a: &Access) -> Denied {
    let mut denied = Denied::none();
    for name in a.topics.keys().filter(|t| !a.can(Operation::Read, ResourceType::Topic, t)) {
        denied.topics.insert(name.clone(), (Code::TopicAuthorizationFailed, a.why(Operation::Read, ResourceType::Topic, name)));
    }
    denied
}

/// Why a share heartbeat is refused: a subscribed topic the member may not DESCRIBE.
pub(super) fn undescribable(a: &Access, req: &ShareGroupHeartbeatRequest) -> Option<String> {
    let t = req.subscribed_topic_names.iter().flatten().find(|t| !a.can(Operation::Describe, ResourceType::Topic, t))?;
    Some(a.why(Operation::Describe, ResourceType::Topic, t))
}

/// The check of a share-group offsets request: a refused group of a Describe is answered
/// GROUP_AUTHORIZATION_FAILED in its place (the handler is told through `Denied::groups`, with
/// every named topic the caller may not DESCRIBE, existing or not, and for a listing of every
/// topic each topic of the image it may not DESCRIBE: the listing leaves them out); a refused group of an Alter or Delete refuses the whole request (the top-level
/// error); their topics the caller may not READ are answered TOPIC_AUTHORIZATION_FAILED.
pub(super) fn offsets(a: &Access, (key, version, correlation_id): (ApiKey, i16, i32), body: &RequestKind) -> Check {
    use Operation::{Delete, Describe, Read};
    let refused = Code::GroupAuthorizationFailed;
    let mut denied = Denied::none();
    match body {
        RequestKind::DescribeShareGroupOffsets(req) => {
            denied.groups = req.groups.iter().filter(|g| !a.can(Describe, ResourceType::Group, &g.group_id)).map(|g| (g.group_id.to_string(), refused)).collect();
            // By the names asked, whether or not they exist (a refusal must not tell which
            // do); a listing of every topic is filtered per name returned.
            for t in req.groups.iter().flat_map(|g| g.topics.iter().flatten()) {
                denied.topic(a, Describe, &t.topic_name);
            }
            if req.groups.iter().any(|g| g.topics.is_none()) {
                for name in a.topics.keys() {
                    denied.topic(a, Describe, name);
                }
            }
        }
        RequestKind::AlterShareGroupOffsets(req) if !a.can(Read, ResourceType::Group, &req.group_id) => {
            let why = a.why(Read, ResourceType::Group, &req.group_id);
            let body = kafka_protocol::messages::AlterShareGroupOffsetsResponse::default().with_error_code(refused.code()).with_error_message(Some(s(&why)));
            return Check::Refuse(Outcome::Reply(Response::new(key, version, correlation_id, body)));
        }
        RequestKind::AlterShareGroupOffsets(req) => req.topics.iter().for_each(|t| denied.topic(a, Read, &t.topic_name)),
        RequestKind::DeleteShareGroupOffsets(req) if !a.can(Delete, ResourceType::Group, &req.group_id) => {
            let why = a.why(Delete, ResourceType::Group, &req.group_id);
            let body = kafka_protocol::messages::DeleteShareGroupOffsetsResponse::default().with_error_code(refused.code()).with_error_message(Some(s(&why)));
            return Check::Refuse(Outcome::Reply(Response::new(key, version, correlation_id, body)));
        }
        RequestKind::DeleteShareGroupOffsets(req) => req.topics.iter().for_each(|t| denied.topic(a, Read, &t.topic_name)),
        _ => unreachable!("only the share-group offsets APIs are checked here"),
    }
    Check::Within(denied)
}

/// The refusal of a FindCoordinator of share-partition keys by a caller without CLUSTER_ACTION
/// on the cluster: CLUSTER_AUTHORIZATION_FAILED on every key, as Kafka's KafkaApis answers its
/// thrown refusal (`authorizeClusterOperation`, before any key is read). None: handled (below
/// v6 the handler answers the key type INVALID_REQUEST, unchecked, as Kafka; no keys, no
/// answer to refuse).
pub(super) fn find_coordinator(a: &Access, version: i16, req: &kafka_protocol::messages::FindCoordinatorRequest) -> Option<kafka_protocol::messages::FindCoordinatorResponse> {
    use kafka_protocol::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
    if version < crate::kafka::since::find_coordinator_share || req.coordinator_keys.is_empty() || a.cluster(Operation::ClusterAction) {
        return None;
    }
    let why = a.why(Operation::ClusterAction, ResourceType::Cluster, crate::security::acl::cluster_name);
    let each = req.coordinator_keys.iter().map(|k| Coordinator::default().with_key(k.clone()).with_node_id((-1).into()).with_host(s("")).with_port(-1).with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))));
    Some(FindCoordinatorResponse::default().with_coordinators(each.collect()))
}
