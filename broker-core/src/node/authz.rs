//! Authorization of each request before it is handled (StandardAuthorizer's checks, the
//! decisions `security::acl`'s): which operation on which resource every API needs, as Kafka
//! checks it, and what a refusal looks like. Three shapes:
//! - per resource inside the handler: Produce (WRITE topic, WRITE transactional id),
//!   CreateTopics (CREATE cluster or topic), DeleteTopics (DELETE topic) get a [`Denied`] and
//!   answer each refused topic with its authorization error;
//! - per topic around the handler: Metadata (DESCRIBE: hidden from a listing, named ones
//!   TOPIC_AUTHORIZATION_FAILED, auto-creation only with CREATE), Fetch (READ), ListOffsets
//!   (DESCRIBE) lose their refused topics before and get them back as errors after;
//! - the whole request: one group or transactional id (JoinGroup, SyncGroup, Heartbeat,
//!   LeaveGroup, OffsetFetch, FindCoordinator; InitProducerId, AddOffsetsToTxn, EndTxn) is
//!   answered with the API's error code; the cluster's APIs need their cluster operation.
//!
//! Anything else a principal is refused closes the connection (fail closed, logged), and so
//! does every API this module does not name for anyone but a super user: an API added to the
//! broker is not open before its check is written.

use super::Outcome;
use crate::broker::Error;
use crate::kafka::{ApiKey, Code};
use crate::protocol::request::Request;
use crate::protocol::{s, Response};
use crate::security::acl::{authorize, cluster_name, Acl, AuthorizerConfig, Caller, Operation, ResourceType};
use kafka_protocol::messages::RequestKind;
use std::collections::{BTreeMap, BTreeSet};

/// What one caller may do, over one image's ACLs.
pub(super) struct Access<'a> {
    config: &'a AuthorizerConfig,
    acls: &'a BTreeSet<Acl>,
    /// The topics of the image, to name a topic a request gives by id.
    topics: &'a BTreeMap<String, crate::metadata::image::TopicInfo>,
    principal: &'a str,
    host: String,
    internal: bool,
}

impl Access<'_> {
    pub(super) fn new<'a>(config: &'a AuthorizerConfig, image: &'a crate::metadata::image::Image, caller: &'a Caller) -> Access<'a> {
        Access { config, acls: &image.acls, topics: &image.topics, principal: &caller.principal, host: caller.host.to_string(), internal: caller.internal }
    }

    fn name_of(&self, id: uuid::Uuid) -> Option<String> {
        self.topics.iter().find(|(_, t)| t.id == *id.as_bytes()).map(|(n, _)| n.clone())
    }

    pub(super) fn can(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        authorize(self.config, self.acls, self.principal, &self.host, operation, resource_type, name)
    }

    fn cluster(&self, operation: Operation) -> bool {
        self.can(operation, ResourceType::Cluster, cluster_name)
    }

    fn why(&self, operation: Operation, resource_type: ResourceType, name: &str) -> String {
        format!("{} may not {operation:?} {resource_type:?} {name:?}", self.principal)
    }
}

/// Resources a handler must refuse, by topic name (or for the whole request).
#[derive(Debug, Default)]
pub struct Denied {
    /// Every resource of the request (its transactional id refused).
    pub all: Option<(Code, String)>,
    pub topics: BTreeMap<String, (Code, String)>,
}

impl Denied {
    pub fn none() -> Denied {
        Denied::default()
    }

    /// The error for `topic`, if it is refused.
    pub fn of(&self, topic: &str) -> Option<Error> {
        self.all.as_ref().or_else(|| self.topics.get(topic)).map(|(code, why)| Error::NotAuthorized(*code, why.clone()))
    }

    fn topic(&mut self, access: &Access, operation: Operation, name: &str) {
        if !access.can(operation, ResourceType::Topic, name) {
            self.topics.insert(name.to_string(), (Code::TopicAuthorizationFailed, access.why(operation, ResourceType::Topic, name)));
        }
    }
}

/// A topic taken out of a request: its name, error, and the partitions that were asked.
pub(super) type Refused = (String, Code, Vec<i32>);

/// What the check asks of the dispatch.
pub(super) enum Check {
    /// Handle the request as it is (or as changed in place).
    Pass,
    /// Handle it, telling the handler what to refuse.
    Within(Denied),
    /// Handle it without these topics (and their asked partitions), then answer them with this
    /// error (Metadata, Fetch, ListOffsets); `hide`: a Metadata listing of every topic, to
    /// filter after.
    Without { topics: Vec<Refused>, hide: bool },
    /// Answered here (the whole request refused), or the connection closes.
    Refuse(Outcome),
}

/// The check of `request` by `caller` (None: the node's own, or a test: everything).
pub(super) fn check(access: Option<&Access>, request: &mut Request) -> Check {
    let Some(a) = access else { return Check::Pass };
    if !a.config.enabled || a.internal || a.config.super_users.contains(a.principal) {
        return Check::Pass;
    }
    let (key, version, correlation_id) = (request.key, request.version, request.correlation_id());
    let close = |why: String| Check::Refuse(Outcome::Close(format!("not authorized: {why}")));
    macro_rules! reply {
        ($body:expr) => {
            Check::Refuse(Outcome::Reply(Response::new(key, version, correlation_id, $body)))
        };
    }
    use Operation::*;
    use ResourceType::{Group, TransactionalId as Txn};
    match &mut request.body {
        RequestKind::ApiVersions(_) => Check::Pass,
        RequestKind::Metadata(req) => {
            let mut refused = Vec::new();
            if let Some(topics) = &mut req.topics {
                topics.retain(|t| {
                    let name = t.name.as_ref().map_or("", |n| n.0.as_str());
                    let ok = a.can(Describe, ResourceType::Topic, name);
                    if !ok {
                        refused.push((name.to_string(), Code::TopicAuthorizationFailed, Vec::new()));
                    }
                    ok
                });
                // Auto-creation needs CREATE on the cluster or on every topic it would create.
                let create = a.cluster(Create) || topics.iter().all(|t| a.can(Create, ResourceType::Topic, t.name.as_ref().map_or("", |n| n.0.as_str())));
                req.allow_auto_topic_creation &= create;
            }
            Check::Without { hide: req.topics.is_none(), topics: refused }
        }
        RequestKind::Produce(req) => {
            let mut denied = Denied::none();
            if let Some(id) = &req.transactional_id {
                if !a.can(Write, Txn, id) {
                    denied.all = Some((Code::TransactionalIdAuthorizationFailed, a.why(Write, Txn, id)));
                }
            }
            for t in &req.topic_data {
                denied.topic(a, Write, &t.name);
            }
            Check::Within(denied)
        }
        RequestKind::Fetch(req) if req.replica_id.0 < 0 && !super::controller_handlers::is_metadata_fetch(req) => {
            // By name: Fetch is served up to v12, before topic ids.
            let refused: Vec<Refused> = req.topics.iter().filter(|t| !a.can(Read, ResourceType::Topic, &t.topic)).map(|t| (t.topic.to_string(), Code::TopicAuthorizationFailed, t.partitions.iter().map(|p| p.partition).collect())).collect();
            req.topics.retain(|t| !refused.iter().any(|(n, _, _)| n.as_str() == t.topic.0.as_str()));
            Check::Without { topics: refused, hide: false }
        }
        RequestKind::ListOffsets(req) if req.replica_id.0 < 0 => {
            let refused: Vec<Refused> = req.topics.iter().filter(|t| !a.can(Describe, ResourceType::Topic, &t.name)).map(|t| (t.name.to_string(), Code::TopicAuthorizationFailed, t.partitions.iter().map(|p| p.partition_index).collect())).collect();
            req.topics.retain(|t| !refused.iter().any(|(n, _, _)| n.as_str() == t.name.0.as_str()));
            Check::Without { topics: refused, hide: false }
        }
        RequestKind::CreateTopics(req) => {
            let mut denied = Denied::none();
            if !a.cluster(Create) {
                req.topics.iter().for_each(|t| denied.topic(a, Create, &t.name));
            }
            Check::Within(denied)
        }
        RequestKind::DeleteTopics(req) => {
            let mut denied = Denied::none();
            // v6 names topics by id or by name: each is checked by the name it has here.
            let by_id = req.topics.iter().filter(|t| t.name.is_none()).filter_map(|t| a.name_of(t.topic_id));
            let names: Vec<String> = req.topic_names.iter().map(|n| n.to_string()).chain(req.topics.iter().filter_map(|t| t.name.as_ref().map(|n| n.to_string()))).chain(by_id).collect();
            names.iter().for_each(|n| denied.topic(a, Delete, n));
            Check::Within(denied)
        }
        RequestKind::OffsetForLeaderEpoch(req) if req.replica_id.0 < 0 => match req.topics.iter().find(|t| !a.can(Describe, ResourceType::Topic, &t.topic)) {
            Some(t) => close(a.why(Describe, ResourceType::Topic, &t.topic)),
            None => Check::Pass,
        },
        RequestKind::JoinGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::JoinGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::SyncGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::SyncGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::Heartbeat(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::HeartbeatResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::LeaveGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::LeaveGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::JoinGroup(_) | RequestKind::SyncGroup(_) | RequestKind::Heartbeat(_) | RequestKind::LeaveGroup(_) => Check::Pass,
        RequestKind::OffsetCommit(req) => match (a.can(Read, Group, &req.group_id), req.topics.iter().find(|t| !a.can(Read, ResourceType::Topic, &t.name))) {
            (false, _) => close(a.why(Read, Group, &req.group_id)),
            (true, Some(t)) => close(a.why(Read, ResourceType::Topic, &t.name)),
            (true, None) => Check::Pass,
        },
        RequestKind::OffsetFetch(req) if version < 8 => match (a.can(Describe, Group, &req.group_id), req.topics.iter().flatten().find(|t| !a.can(Describe, ResourceType::Topic, &t.name))) {
            (false, _) => reply!(kafka_protocol::messages::OffsetFetchResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
            (true, Some(t)) => close(a.why(Describe, ResourceType::Topic, &t.name)),
            (true, None) => Check::Pass,
        },
        RequestKind::OffsetFetch(req) => {
            let groups = req.groups.iter().map(|g| (g.group_id.0.as_str(), g.topics.iter().flatten().map(|t| t.name.0.as_str()).collect::<Vec<_>>()));
            match groups.into_iter().find_map(|(g, topics)| if !a.can(Describe, Group, g) { Some(a.why(Describe, Group, g)) } else { topics.into_iter().find(|t| !a.can(Describe, ResourceType::Topic, t)).map(|t| a.why(Describe, ResourceType::Topic, t)) }) {
                Some(why) => close(why),
                None => Check::Pass,
            }
        }
        RequestKind::FindCoordinator(req) => {
            let keys: Vec<String> = if version >= 4 { req.coordinator_keys.iter().map(|k| k.to_string()).collect() } else { vec![req.key.to_string()] };
            let (kind, code) = if req.key_type == 1 { (Txn, Code::TransactionalIdAuthorizationFailed) } else { (Group, Code::GroupAuthorizationFailed) };
            match keys.iter().find(|k| !a.can(Describe, kind, k)) {
                Some(k) if version < 4 => reply!(kafka_protocol::messages::FindCoordinatorResponse::default().with_error_code(code.code()).with_error_message(Some(s(&a.why(Describe, kind, k))))),
                Some(k) => close(a.why(Describe, kind, k)),
                None => Check::Pass,
            }
        }
        RequestKind::DescribeGroups(req) => match req.groups.iter().find(|g| !a.can(Describe, Group, g)) {
            Some(g) => close(a.why(Describe, Group, g)),
            None => Check::Pass,
        },
        RequestKind::DeleteGroups(req) => match req.groups_names.iter().find(|g| !a.can(Delete, Group, g)) {
            Some(g) => close(a.why(Delete, Group, g)),
            None => Check::Pass,
        },
        RequestKind::InitProducerId(req) => match &req.transactional_id {
            Some(id) if !a.can(Write, Txn, id) => reply!(kafka_protocol::messages::InitProducerIdResponse::default().with_error_code(Code::TransactionalIdAuthorizationFailed.code()).with_producer_id((-1).into())),
            Some(_) => Check::Pass,
            // An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
            None if a.cluster(IdempotentWrite) || a.acls.iter().any(|acl| acl.resource_type == ResourceType::Topic && a.can(Write, ResourceType::Topic, &acl.resource_name)) => Check::Pass,
            None => reply!(kafka_protocol::messages::InitProducerIdResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_producer_id((-1).into())),
        },
        RequestKind::AddOffsetsToTxn(req) if !a.can(Write, Txn, &req.transactional_id) => reply!(kafka_protocol::messages::AddOffsetsToTxnResponse::default().with_error_code(Code::TransactionalIdAuthorizationFailed.code())),
        RequestKind::AddOffsetsToTxn(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::AddOffsetsToTxnResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::AddOffsetsToTxn(_) => Check::Pass,
        RequestKind::EndTxn(req) if !a.can(Write, Txn, &req.transactional_id) => reply!(kafka_protocol::messages::EndTxnResponse::default().with_error_code(Code::TransactionalIdAuthorizationFailed.code())),
        RequestKind::EndTxn(_) => Check::Pass,
        RequestKind::AddPartitionsToTxn(req) if version < 4 => match (a.can(Write, Txn, &req.v3_and_below_transactional_id), req.v3_and_below_topics.iter().find(|t| !a.can(Write, ResourceType::Topic, &t.name))) {
            (false, _) => close(a.why(Write, Txn, &req.v3_and_below_transactional_id)),
            (true, Some(t)) => close(a.why(Write, ResourceType::Topic, &t.name)),
            (true, None) => Check::Pass,
        },
        RequestKind::TxnOffsetCommit(req) => match (a.can(Write, Txn, &req.transactional_id), a.can(Read, Group, &req.group_id), req.topics.iter().find(|t| !a.can(Read, ResourceType::Topic, &t.name))) {
            (false, _, _) => close(a.why(Write, Txn, &req.transactional_id)),
            (_, false, _) => close(a.why(Read, Group, &req.group_id)),
            (_, _, Some(t)) => close(a.why(Read, ResourceType::Topic, &t.name)),
            _ => Check::Pass,
        },
        // The cluster's own: its ACLs and users, and what brokers and controllers send each other.
        RequestKind::CreateAcls(req) if !a.cluster(Alter) => {
            use kafka_protocol::messages::create_acls_response::AclCreationResult;
            let refused = AclCreationResult::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&a.why(Alter, ResourceType::Cluster, cluster_name))));
            reply!(kafka_protocol::messages::CreateAclsResponse::default().with_results(vec![refused; req.creations.len()]))
        }
        RequestKind::DeleteAcls(req) if !a.cluster(Alter) => {
            use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
            let refused = DeleteAclsFilterResult::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&a.why(Alter, ResourceType::Cluster, cluster_name))));
            reply!(kafka_protocol::messages::DeleteAclsResponse::default().with_filter_results(vec![refused; req.filters.len()]))
        }
        RequestKind::DescribeAcls(_) if !a.cluster(Describe) => {
            let why = a.why(Describe, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::DescribeAclsResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))))
        }
        RequestKind::CreateAcls(_) | RequestKind::DeleteAcls(_) | RequestKind::DescribeAcls(_) => Check::Pass,
        RequestKind::AlterUserScramCredentials(_) => cluster(a, Alter, key),
        RequestKind::DescribeUserScramCredentials(_) => cluster(a, Describe, key),
        RequestKind::DescribeConfigs(_) => cluster(a, DescribeConfigs, key),
        RequestKind::AlterConfigs(_) | RequestKind::IncrementalAlterConfigs(_) => cluster(a, AlterConfigs, key),
        RequestKind::ListGroups(_) | RequestKind::ListTransactions(_) | RequestKind::DescribeTransactions(_) | RequestKind::DescribeProducers(_) => cluster(a, Describe, key),
        RequestKind::DeleteRecords(_) | RequestKind::OffsetDelete(_) | RequestKind::ElectLeaders(_) => cluster(a, Alter, key),
        _ => cluster(a, ClusterAction, key),
    }
}

/// A request only a principal with `operation` on the cluster may send (the broker's own
/// APIs, and those whose finer checks are not written yet): otherwise the connection closes.
fn cluster(a: &Access, operation: Operation, key: ApiKey) -> Check {
    match a.cluster(operation) {
        true => Check::Pass,
        false => Check::Refuse(Outcome::Close(format!("not authorized: {} may not send {key:?} ({operation:?} on the cluster)", a.principal))),
    }
}

/// Whether a Raft message from `access`'s caller is taken (CLUSTER_ACTION on the cluster).
pub(super) fn raft(access: Option<&Access>) -> bool {
    access.is_none_or(|a| !a.config.enabled || a.internal || a.config.super_users.contains(a.principal) || a.cluster(Operation::ClusterAction))
}

/// After Metadata: refused named topics answered TOPIC_AUTHORIZATION_FAILED, and a listing of
/// every topic without those the caller may not DESCRIBE.
pub(super) fn metadata_after(access: &Access, resp: &mut kafka_protocol::messages::MetadataResponse, refused: Vec<Refused>, hide: bool) {
    if hide {
        resp.topics.retain(|t| t.name.as_ref().is_some_and(|n| access.can(Operation::Describe, ResourceType::Topic, n)));
    }
    for (name, code, _) in refused {
        let t = kafka_protocol::messages::metadata_response::MetadataResponseTopic::default().with_name(Some(s(&name).into())).with_error_code(code.code());
        resp.topics.push(t);
    }
}

/// After Fetch: each refused topic's asked partitions answered with its error.
pub(super) fn fetch_after(resp: &mut kafka_protocol::messages::FetchResponse, refused: &[Refused]) {
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    for (name, code, asked) in refused {
        let partitions = asked.iter().map(|p| PartitionData::default().with_partition_index(*p).with_error_code(code.code()).with_high_watermark(-1)).collect();
        resp.responses.push(FetchableTopicResponse::default().with_topic(s(name).into()).with_partitions(partitions));
    }
}

/// After ListOffsets: each refused topic's asked partitions answered with its error.
pub(super) fn list_offsets_after(resp: &mut kafka_protocol::messages::ListOffsetsResponse, refused: &[Refused]) {
    use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    for (name, code, asked) in refused {
        let partitions = asked.iter().map(|p| ListOffsetsPartitionResponse::default().with_partition_index(*p).with_error_code(code.code()).with_offset(-1).with_timestamp(-1)).collect();
        resp.topics.push(ListOffsetsTopicResponse::default().with_name(s(name).into()).with_partitions(partitions));
    }
}
