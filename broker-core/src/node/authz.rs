//! Authorization of each request before it is handled (StandardAuthorizer's checks, the
//! decisions `security::acl`'s): which operation on which resource every API needs, as Kafka
//! checks it, and what a refusal looks like. Four shapes:
//! - per resource inside the handler: Produce (WRITE topic, WRITE transactional id),
//!   CreateTopics (CREATE cluster or topic), DeleteTopics and DeleteRecords (DELETE topic), AlterConfigs and
//!   IncrementalAlterConfigs (ALTER_CONFIGS topic or group, or cluster for a broker), OffsetCommit and
//!   TxnOffsetCommit and OffsetDelete (READ topic, once the group is allowed), DeleteGroups
//!   naming allowed and refused groups (DELETE group), ShareFetch and ShareAcknowledge (READ
//!   topic, `share`), the share-group offsets APIs (groups and topics, `share::offsets`) get a [`Denied`]
//!   and answer each refused resource with its authorization error; a consumer's Fetch asks
//!   [`may_read`] of every partition it reads, its fetch session's as well as those it names,
//!   at every fetch (Kafka's `filterByAuthorized` over the whole fetch context), so neither a
//!   session opened on a topic id before its topic existed nor an ACL revoked mid-session
//!   reads what the caller may not READ;
//! - per topic around the handler: Metadata (DESCRIBE: hidden from a listing, named ones
//!   TOPIC_AUTHORIZATION_FAILED, auto-creation only with CREATE), ListOffsets
//!   (DESCRIBE) and a consumer's OffsetForLeaderEpoch (DESCRIBE) lose their refused topics
//!   before and get them back as errors after, and so do
//!   the refused groups of a DescribeGroups or an OffsetFetch (v8+) and the refused keys of a
//!   batched FindCoordinator (v4+) that also names allowed ones;
//! - the whole request: a refused group or transactional id (JoinGroup, SyncGroup, Heartbeat,
//!   LeaveGroup, OffsetCommit, OffsetFetch, FindCoordinator, DescribeGroups, DeleteGroups;
//!   InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, OffsetDelete)
//!   is answered with the API's error code in every place it has one; the cluster's APIs need
//!   their cluster operation;
//! - after the handler, filtering the answer: ListGroups and ListTransactions (what the caller
//!   may DESCRIBE), DescribeConfigs, DescribeProducers (READ topic), DescribeTransactions
//!   (DESCRIBE transactional id), OffsetFetch's topics (DESCRIBE topic: hidden from a listing,
//!   refused where named); a KIP-848 member's regex and a ConsumerGroupDescribe, by the
//!   topics the caller may DESCRIBE (`regex`).
//!
//! Anything else a principal is refused closes the connection (fail closed, logged), and so
//! does every API this module does not name for anyone but a super user: an API added to the
//! broker is not open before its check is written.

use super::Outcome;
use crate::broker::{Broker, Error};
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
    /// The topics of the image.
    topics: &'a BTreeMap<String, crate::metadata::image::TopicInfo>,
    /// The broker whose image this is, to name a topic a request gives by id from its map of
    /// ids (None: a test's bare image, which names none).
    broker: Option<&'a Broker>,
    principal: &'a str,
    host: String,
    internal: bool,
}

/// Whether every check passes for a caller whatever the image holds: the authorizer is off, or
/// the caller is this cluster's own (`internal`) or a super user.
pub(super) fn exempt(config: &AuthorizerConfig, principal: &str, internal: bool) -> bool {
    !config.enabled || internal || config.super_users.contains(principal)
}

impl Access<'_> {
    /// `caller`'s access over `b`'s image.
    pub(super) fn of<'a>(b: &'a Broker, caller: &'a Caller) -> Access<'a> {
        Access { broker: Some(b), ..Access::new(&b.config().security.authorizer, b.image(), caller) }
    }

    /// `caller`'s access over a bare image, without its topic ids ([`Access::of`]).
    pub(super) fn new<'a>(config: &'a AuthorizerConfig, image: &'a crate::metadata::image::Image, caller: &'a Caller) -> Access<'a> {
        Access { config, acls: &image.acls, topics: &image.topics, broker: None, principal: &caller.principal, host: caller.host.to_string(), internal: caller.internal }
    }

    fn name_of(&self, id: uuid::Uuid) -> Option<String> {
        self.broker?.topic_by_id(*id.as_bytes()).map(|n| n.to_string())
    }

    /// Every check passes ([`exempt`]).
    fn exempt(&self) -> bool {
        exempt(self.config, self.principal, self.internal)
    }

    pub(super) fn can(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        authorize(self.config, crate::security::acl::covering(self.acls, resource_type, name), self.principal, &self.host, operation, resource_type, name)
    }

    fn cluster(&self, operation: Operation) -> bool {
        self.can(operation, ResourceType::Cluster, cluster_name)
    }

    fn why(&self, operation: Operation, resource_type: ResourceType, name: &str) -> String {
        format!("{} may not {operation:?} {resource_type:?} {name:?}", self.principal)
    }
}

/// The topics a ShareFetch from `caller` to `group` may not READ, as its check finds them
/// (`share`); None where it may not READ the group (the request is refused whole).
pub fn share_refused(b: &Broker, caller: &Caller, group: &str) -> Option<Denied> {
    let a = Access::of(b, caller);
    a.can(Operation::Read, ResourceType::Group, group).then(|| share::unreadable(&a))
}

/// Resources a handler must refuse, by topic name (or for the whole request).
#[derive(Debug, Default)]
pub struct Denied {
    /// Every resource of the request (its transactional id refused).
    pub all: Option<(Code, String)>,
    pub topics: BTreeMap<String, (Code, String)>,
    /// Groups refused (DeleteGroups), with their code.
    pub groups: BTreeMap<String, Code>,
    /// The cluster's own resources (a broker's configs) refused.
    pub cluster: Option<(Code, String)>,
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

mod readded;
pub(in crate::node) mod regex;
mod share;
pub(in crate::node) use readded::{describe_groups_after, find_coordinator_after, list_offsets_after, offset_fetch_after, offset_for_leader_epoch_after};

/// A topic taken out of a request: its name, error, and the partitions that were asked.
pub(super) type Refused = (String, Code, Vec<i32>);

/// What the check asks of the dispatch.
pub(super) enum Check {
    /// Handle the request as it is (or as changed in place).
    Pass,
    /// Handle it, telling the handler what to refuse.
    Within(Denied),
    /// Handle it without these topics (and their asked partitions), then answer them with this
    /// error (Metadata, ListOffsets, OffsetForLeaderEpoch; for DescribeGroups, OffsetFetch and a batched
    /// FindCoordinator the groups or keys, partitions empty); `hide`: a Metadata listing of
    /// every topic, to filter after.
    Without { topics: Vec<Refused>, hide: bool },
    /// Handle it, then take out of the answer what the caller may not see (ListGroups and
    /// ListTransactions: what it may not DESCRIBE; DescribeConfigs, DescribeProducers and
    /// DescribeTransactions: each resource it may not see, answered with the authorization
    /// error instead).
    Filter,
    /// Answered here (the whole request refused), or the connection closes.
    Refuse(Outcome),
}

/// The check of `request` by `caller` (None: the node's own, or a test: everything).
pub(super) fn check(access: Option<&Access>, request: &mut Request) -> Check {
    let Some(a) = access else { return Check::Pass };
    if a.exempt() {
        return Check::Pass;
    }
    let (key, version, correlation_id) = (request.key, request.version, request.correlation_id());
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
                    // A topic asked by id alone (KIP-848 members) is checked by its name here;
                    // an unknown id goes on, to be answered UNKNOWN_TOPIC_ID.
                    let name = match &t.name {
                        Some(n) => n.0.to_string(),
                        None => match a.name_of(t.topic_id) {
                            Some(n) => n,
                            None => return true,
                        },
                    };
                    let ok = a.can(Describe, ResourceType::Topic, &name);
                    if !ok {
                        refused.push((name, Code::TopicAuthorizationFailed, Vec::new()));
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
        // A consumer's: READ on each topic, checked by the handler on every partition it reads
        // ([`may_read`]), a session's included, which the request does not name.
        RequestKind::Fetch(req) if crate::protocol::fetch_replica(req).0 < 0 && !super::controller_handlers::is_metadata_fetch(req) => Check::Pass,
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
        RequestKind::CreatePartitions(req) => {
            let mut denied = Denied::none();
            req.topics.iter().for_each(|t| denied.topic(a, Alter, &t.name));
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
        // A consumer's: its refused topics out now, answered TOPIC_AUTHORIZATION_FAILED after.
        RequestKind::OffsetForLeaderEpoch(req) if req.replica_id.0 < 0 => strip(&mut req.topics, |t| a.can(Describe, ResourceType::Topic, &t.topic), |t| (t.topic.to_string(), Code::TopicAuthorizationFailed, t.partitions.iter().map(|p| p.partition).collect())),
        RequestKind::JoinGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::JoinGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::SyncGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::SyncGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::Heartbeat(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::HeartbeatResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::LeaveGroup(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::LeaveGroupResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::JoinGroup(_) | RequestKind::SyncGroup(_) | RequestKind::Heartbeat(_) | RequestKind::LeaveGroup(_) => Check::Pass,
        RequestKind::OffsetCommit(req) => {
            use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
            // The group first (every partition GROUP_AUTHORIZATION_FAILED), then each topic
            // (its partitions TOPIC_AUTHORIZATION_FAILED, the others committed).
            if !a.can(Read, Group, &req.group_id) {
                let topics = req.topics.iter().map(|t| {
                    let parts = t.partitions.iter().map(|p| OffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(Code::GroupAuthorizationFailed.code())).collect();
                    OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(parts)
                });
                return reply!(kafka_protocol::messages::OffsetCommitResponse::default().with_topics(topics.collect()));
            }
            let mut denied = Denied::none();
            req.topics.iter().for_each(|t| denied.topic(a, Read, &t.name));
            Check::Within(denied)
        }
        RequestKind::OffsetFetch(req) if version < 8 => match a.can(Describe, Group, &req.group_id) {
            false => reply!(kafka_protocol::messages::OffsetFetchResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
            true => Check::Filter,
        },
        // The refused groups out now, answered after; the allowed ones' topics filtered.
        RequestKind::OffsetFetch(req) => match strip(&mut req.groups, |g| a.can(Describe, Group, &g.group_id), |g| (g.group_id.to_string(), Code::GroupAuthorizationFailed, Vec::new())) {
            Check::Pass => Check::Filter,
            without => without,
        },
        // A share-partition key (v6): CLUSTER_ACTION on the cluster (`share::find_coordinator`).
        RequestKind::FindCoordinator(req) if req.key_type == crate::kafka::coordinator_type::share => share::find_coordinator(a, version, req).map_or(Check::Pass, |r| reply!(r)),
        RequestKind::FindCoordinator(req) => {
            let keys: Vec<String> = if version >= 4 { req.coordinator_keys.iter().map(|k| k.to_string()).collect() } else { vec![req.key.to_string()] };
            let (kind, code) = if req.key_type == 1 { (Txn, Code::TransactionalIdAuthorizationFailed) } else { (Group, Code::GroupAuthorizationFailed) };
            let refused: Vec<&String> = keys.iter().filter(|k| !a.can(Describe, kind, k)).collect();
            match refused.first() {
                None => Check::Pass,
                Some(k) if version < 4 => reply!(kafka_protocol::messages::FindCoordinatorResponse::default().with_error_code(code.code()).with_error_message(Some(s(&a.why(Describe, kind, k))))),
                Some(_) => strip(&mut req.coordinator_keys, |k| a.can(Describe, kind, k), |k| (k.to_string(), code, Vec::new())),
            }
        }
        RequestKind::ConsumerGroupHeartbeat(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        // Kafka's: every topic subscribed by name must be one the member may DESCRIBE.
        RequestKind::ConsumerGroupHeartbeat(req) => match req.subscribed_topic_names.iter().flatten().find(|t| !a.can(Describe, ResourceType::Topic, t)) {
            Some(t) => reply!(kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default().with_error_code(Code::TopicAuthorizationFailed.code()).with_error_message(Some(s(&a.why(Describe, ResourceType::Topic, t))))),
            None => Check::Pass,
        },
        // KIP-932: READ on the group, then the topics (`share`).
        RequestKind::ShareGroupHeartbeat(req) if !a.can(Read, Group, &req.group_id) => reply!(kafka_protocol::messages::ShareGroupHeartbeatResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::ShareFetch(kafka_protocol::messages::ShareFetchRequest { group_id: Some(g), .. }) if !a.can(Read, Group, g) => reply!(kafka_protocol::messages::ShareFetchResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::ShareAcknowledge(kafka_protocol::messages::ShareAcknowledgeRequest { group_id: Some(g), .. }) if !a.can(Read, Group, g) => reply!(kafka_protocol::messages::ShareAcknowledgeResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
        RequestKind::ShareGroupHeartbeat(req) => match share::undescribable(a, req) {
            Some(why) => reply!(kafka_protocol::messages::ShareGroupHeartbeatResponse::default().with_error_code(Code::TopicAuthorizationFailed.code()).with_error_message(Some(s(&why)))),
            None => Check::Pass,
        },
        RequestKind::ShareFetch(_) | RequestKind::ShareAcknowledge(_) => Check::Within(share::unreadable(a)),
        RequestKind::DescribeShareGroupOffsets(_) | RequestKind::AlterShareGroupOffsets(_) | RequestKind::DeleteShareGroupOffsets(_) => share::offsets(a, (key, version, correlation_id), &request.body),
        RequestKind::ShareGroupDescribe(req) => strip(&mut req.group_ids, |g| a.can(Describe, Group, g), |g| (g.to_string(), Code::GroupAuthorizationFailed, Vec::new())),
        RequestKind::ConsumerGroupDescribe(req) => strip(&mut req.group_ids, |g| a.can(Describe, Group, g), |g| (g.to_string(), Code::GroupAuthorizationFailed, Vec::new())),
        RequestKind::DescribeGroups(req) => strip(&mut req.groups, |g| a.can(Describe, Group, g), |g| (g.to_string(), Code::GroupAuthorizationFailed, Vec::new())),
        // Each refused group answered in its place by the handler, which deletes the others.
        RequestKind::DeleteGroups(req) => {
            let mut denied = Denied::none();
            denied.groups = req.groups_names.iter().filter(|g| !a.can(Delete, Group, g)).map(|g| (g.to_string(), Code::GroupAuthorizationFailed)).collect();
            Check::Within(denied)
        }
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
        RequestKind::AddPartitionsToTxn(req) if version < 4 => {
            use kafka_protocol::messages::add_partitions_to_txn_response::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult};
            // Kafka's answer: the transactional id refused, every partition; else each refused
            // topic's partitions TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED.
            let id = a.can(Write, Txn, &req.v3_and_below_transactional_id);
            let topic_ok = |t: &kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic| a.can(Write, ResourceType::Topic, &t.name);
            if id && req.v3_and_below_topics.iter().all(topic_ok) {
                return Check::Pass;
            }
            let results = req.v3_and_below_topics.iter().map(|t| {
                let code = match (id, topic_ok(t)) {
                    (false, _) => Code::TransactionalIdAuthorizationFailed,
                    (true, false) => Code::TopicAuthorizationFailed,
                    (true, true) => Code::OperationNotAttempted,
                };
                let parts = t.partitions.iter().map(|p| AddPartitionsToTxnPartitionResult::default().with_partition_index(*p).with_partition_error_code(code.code())).collect();
                AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(parts)
            });
            reply!(kafka_protocol::messages::AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results.collect()))
        }
        RequestKind::TxnOffsetCommit(req) => {
            use kafka_protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
            let code = match (a.can(Write, Txn, &req.transactional_id), a.can(Read, Group, &req.group_id)) {
                (false, _) => Code::TransactionalIdAuthorizationFailed,
                (_, false) => Code::GroupAuthorizationFailed,
                _ => {
                    let mut denied = Denied::none();
                    req.topics.iter().for_each(|t| denied.topic(a, Read, &t.name));
                    return Check::Within(denied);
                }
            };
            let topics = req.topics.iter().map(|t| {
                let parts = t.partitions.iter().map(|p| TxnOffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(code.code())).collect();
                TxnOffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(parts)
            });
            reply!(kafka_protocol::messages::TxnOffsetCommitResponse::default().with_topics(topics.collect()))
        }
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
        RequestKind::AlterUserScramCredentials(req) if !a.cluster(Alter) => {
            use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
            let mut users: Vec<&str> = req.upsertions.iter().map(|u| u.name.as_str()).chain(req.deletions.iter().map(|d| d.name.as_str())).collect();
            users.sort_unstable();
            users.dedup();
            let why = a.why(Alter, ResourceType::Cluster, cluster_name);
            let results = users.into_iter().map(|u| AlterUserScramCredentialsResult::default().with_user(s(u)).with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why)))).collect();
            reply!(kafka_protocol::messages::AlterUserScramCredentialsResponse::default().with_results(results))
        }
        RequestKind::DescribeUserScramCredentials(_) if !a.cluster(Describe) => {
            let why = a.why(Describe, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::DescribeUserScramCredentialsResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))))
        }
        RequestKind::AlterUserScramCredentials(_) | RequestKind::DescribeUserScramCredentials(_) => Check::Pass,
        // Per group and per resource, after the handler: both only read.
        RequestKind::ListGroups(_) if !a.cluster(Describe) => Check::Filter,
        RequestKind::ListGroups(_) => Check::Pass,
        RequestKind::DescribeConfigs(_) => Check::Filter,
        // Per resource inside the handler: ALTER_CONFIGS on each topic or group, on the cluster
        // for a broker's configs.
        RequestKind::AlterConfigs(_) | RequestKind::IncrementalAlterConfigs(_) => {
            let names: Vec<(i8, String)> = match &request.body {
                RequestKind::AlterConfigs(r) => r.resources.iter().map(|x| (x.resource_type, x.resource_name.to_string())).collect(),
                RequestKind::IncrementalAlterConfigs(r) => r.resources.iter().map(|x| (x.resource_type, x.resource_name.to_string())).collect(),
                _ => unreachable!("matched above"),
            };
            let mut denied = Denied::none();
            for (kind, name) in &names {
                match *kind {
                    crate::kafka::config_resource::topic => denied.topic(a, AlterConfigs, name),
                    crate::kafka::config_resource::group if !a.can(AlterConfigs, Group, name) => _ = denied.groups.insert(name.clone(), Code::GroupAuthorizationFailed),
                    crate::kafka::config_resource::group => {}
                    _ if !a.cluster(AlterConfigs) => denied.cluster = Some((Code::ClusterAuthorizationFailed, a.why(AlterConfigs, ResourceType::Cluster, cluster_name))),
                    _ => {}
                }
            }
            Check::Within(denied)
        }
        // Kafka's per-resource checks: the answer keeps what the caller may see.
        RequestKind::ListTransactions(_) | RequestKind::DescribeTransactions(_) | RequestKind::DescribeProducers(_) => Check::Filter,
        RequestKind::DeleteRecords(req) => {
            let mut denied = Denied::none();
            req.topics.iter().for_each(|t| denied.topic(a, Delete, &t.name));
            Check::Within(denied)
        }
        RequestKind::OffsetDelete(req) => match a.can(Delete, Group, &req.group_id) {
            false => reply!(kafka_protocol::messages::OffsetDeleteResponse::default().with_error_code(Code::GroupAuthorizationFailed.code())),
            true => {
                let mut denied = Denied::none();
                req.topics.iter().for_each(|t| denied.topic(a, Read, &t.name));
                Check::Within(denied)
            }
        },
        RequestKind::ElectLeaders(req) if !a.cluster(Alter) => {
            use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
            let refused = |p: &i32| PartitionResult::default().with_partition_id(*p).with_error_code(Code::ClusterAuthorizationFailed.code());
            let each = req.topic_partitions.iter().flatten().map(|t| ReplicaElectionResult::default().with_topic(t.topic.clone()).with_partition_result(t.partitions.iter().map(refused).collect())).collect();
            reply!(kafka_protocol::messages::ElectLeadersResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_replica_election_results(each))
        }
        RequestKind::ElectLeaders(_) => Check::Pass,
        // Kafka's: ALTER on the cluster to reassign or unregister, DESCRIBE to list reassignments.
        RequestKind::AlterPartitionReassignments(_) if !a.cluster(Alter) => {
            let why = a.why(Alter, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::AlterPartitionReassignmentsResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))))
        }
        RequestKind::ListPartitionReassignments(_) if !a.cluster(Describe) => {
            let why = a.why(Describe, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::ListPartitionReassignmentsResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))))
        }
        RequestKind::UnregisterBroker(_) if !a.cluster(Alter) => {
            let why = a.why(Alter, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::UnregisterBrokerResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))))
        }
        RequestKind::AlterPartitionReassignments(_) | RequestKind::ListPartitionReassignments(_) | RequestKind::UnregisterBroker(_) => Check::Pass,
        // Kafka's: DESCRIBE_CONFIGS on the cluster to describe quotas, ALTER_CONFIGS to change them.
        RequestKind::DescribeClientQuotas(_) if !a.cluster(DescribeConfigs) => {
            let why = a.why(DescribeConfigs, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::DescribeClientQuotasResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why))).with_entries(None))
        }
        RequestKind::AlterClientQuotas(req) if !a.cluster(AlterConfigs) => {
            use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
            let why = a.why(AlterConfigs, ResourceType::Cluster, cluster_name);
            let each = req.entries.iter().map(|e| {
                let entity = e.entity.iter().map(|p| EntityData::default().with_entity_type(p.entity_type.clone()).with_entity_name(p.entity_name.clone())).collect();
                EntryData::default().with_entity(entity).with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message(Some(s(&why)))
            });
            reply!(kafka_protocol::messages::AlterClientQuotasResponse::default().with_entries(each.collect()))
        }
        RequestKind::DescribeClientQuotas(_) | RequestKind::AlterClientQuotas(_) => Check::Pass,
        // Kafka's: no check to list the brokers; DESCRIBE on the cluster for the log
        // directories (refused with an empty answer before v3's error code) and the quorum.
        RequestKind::DescribeCluster(_) => Check::Pass,
        RequestKind::DescribeLogDirs(_) if !a.cluster(Describe) => {
            let code = if version >= 3 { Code::ClusterAuthorizationFailed.code() } else { 0 };
            reply!(kafka_protocol::messages::DescribeLogDirsResponse::default().with_error_code(code))
        }
        RequestKind::DescribeQuorum(_) if !a.cluster(Describe) => {
            let why = a.why(Describe, ResourceType::Cluster, cluster_name);
            reply!(kafka_protocol::messages::DescribeQuorumResponse::default().with_error_code(Code::ClusterAuthorizationFailed.code()).with_error_message((version >= 2).then(|| s(&why))))
        }
        RequestKind::DescribeLogDirs(_) | RequestKind::DescribeQuorum(_) => Check::Pass,
        _ => cluster(a, ClusterAction, key),
    }
}

/// Takes out of `items` those `keep` refuses, each named by `refused`: [`Check::Pass`] when
/// none is, else [`Check::Without`] (handled without them, each answered with its error after).
fn strip<T>(items: &mut Vec<T>, keep: impl Fn(&T) -> bool, refused: impl Fn(T) -> Refused) -> Check {
    let (allowed, out): (Vec<T>, Vec<T>) = std::mem::take(items).into_iter().partition(|t| keep(t));
    *items = allowed;
    match out.is_empty() {
        true => Check::Pass,
        false => Check::Without { topics: out.into_iter().map(refused).collect(), hide: false },
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
    access.is_none_or(|a| a.exempt() || a.cluster(Operation::ClusterAction))
}

/// Whether a consumer's Fetch may read `topic` (READ on it), asked by the Fetch handler of
/// every partition it reads at every fetch: those the request names and those its session
/// holds (None: the node's own, or a test: everything).
pub(super) fn may_read(access: Option<&Access>, topic: &str) -> bool {
    access.is_none_or(|a| a.exempt() || a.can(Operation::Read, ResourceType::Topic, topic))
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

/// After ListGroups by a principal without DESCRIBE on the cluster: only the groups it may
/// DESCRIBE (Kafka's filter).
pub(super) fn list_groups_after(access: &Access, resp: &mut kafka_protocol::messages::ListGroupsResponse) {
    resp.groups.retain(|g| access.can(Operation::Describe, ResourceType::Group, &g.group_id));
}

/// After ListTransactions: only the transactional ids the caller may DESCRIBE.
pub(super) fn list_transactions_after(access: &Access, resp: &mut kafka_protocol::messages::ListTransactionsResponse) {
    resp.transaction_states.retain(|t| access.can(Operation::Describe, ResourceType::TransactionalId, &t.transactional_id));
}

/// After DescribeTransactions: an id the caller may not DESCRIBE answered
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, with nothing of its state.
pub(super) fn describe_transactions_after(access: &Access, resp: &mut kafka_protocol::messages::DescribeTransactionsResponse) {
    use kafka_protocol::messages::describe_transactions_response::TransactionState;
    for t in &mut resp.transaction_states {
        if !access.can(Operation::Describe, ResourceType::TransactionalId, &t.transactional_id) {
            *t = TransactionState::default().with_transactional_id(t.transactional_id.clone()).with_error_code(Code::TransactionalIdAuthorizationFailed.code()).with_producer_id((-1).into()).with_producer_epoch(-1);
        }
    }
}

/// After DescribeProducers: a topic the caller may not READ answered
/// TOPIC_AUTHORIZATION_FAILED per partition, with none of its producers.
pub(super) fn describe_producers_after(access: &Access, resp: &mut kafka_protocol::messages::DescribeProducersResponse) {
    for t in resp.topics.iter_mut().filter(|t| !access.can(Operation::Read, ResourceType::Topic, &t.name)) {
        for p in &mut t.partitions {
            p.active_producers.clear();
            p.error_code = Code::TopicAuthorizationFailed.code();
            p.error_message = Some(s(&access.why(Operation::Read, ResourceType::Topic, &t.name)));
        }
    }
}

/// After DescribeConfigs: a topic (group) the caller may not DESCRIBE_CONFIGS answered
/// TOPIC_ (GROUP_) AUTHORIZATION_FAILED, a broker's configs without DESCRIBE_CONFIGS on the cluster
/// CLUSTER_AUTHORIZATION_FAILED, with nothing of what they hold.
pub(super) fn describe_configs_after(access: &Access, resp: &mut kafka_protocol::messages::DescribeConfigsResponse) {
    for r in &mut resp.results {
        let (kind, name, code) = match r.resource_type {
            crate::kafka::config_resource::topic => (ResourceType::Topic, r.resource_name.as_str(), Code::TopicAuthorizationFailed),
            crate::kafka::config_resource::group => (ResourceType::Group, r.resource_name.as_str(), Code::GroupAuthorizationFailed),
            _ => (ResourceType::Cluster, cluster_name, Code::ClusterAuthorizationFailed),
        };
        if !access.can(Operation::DescribeConfigs, kind, name) {
            let why = access.why(Operation::DescribeConfigs, kind, name);
            r.configs.clear();
            r.error_code = code.code();
            r.error_message = Some(s(&why));
        }
    }
}

/// After OffsetFetch, for the caller's allowed groups: a topic it may not DESCRIBE is left out
/// of a listing of every committed offset (`named` false for the group, as Kafka filters it),
/// and answered TOPIC_AUTHORIZATION_FAILED per partition, with no offset, where it was named.
/// `named`: per group of the answer in order (the one group before v8).
pub(super) fn offset_fetch_topics_after(access: &Access, resp: &mut kafka_protocol::messages::OffsetFetchResponse, named: &[bool]) {
    let refuse = |p: &mut kafka_protocol::messages::offset_fetch_response::OffsetFetchResponsePartitions| {
        (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) = (-1, -1, None, Code::TopicAuthorizationFailed.code());
    };
    let hidden = |name: &str| !access.can(Operation::Describe, ResourceType::Topic, name);
    for (g, named) in resp.groups.iter_mut().zip(named.iter().copied()) {
        match named {
            false => g.topics.retain(|t| !hidden(&t.name)),
            true => g.topics.iter_mut().filter(|t| hidden(&t.name)).for_each(|t| t.partitions.iter_mut().for_each(refuse)),
        }
    }
    let old = |p: &mut kafka_protocol::messages::offset_fetch_response::OffsetFetchResponsePartition| {
        (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) = (-1, -1, None, Code::TopicAuthorizationFailed.code());
    };
    match named.first().copied().unwrap_or(false) {
        false => resp.topics.retain(|t| !hidden(&t.name)),
        true => resp.topics.iter_mut().filter(|t| hidden(&t.name)).for_each(|t| t.partitions.iter_mut().for_each(old)),
    }
}
