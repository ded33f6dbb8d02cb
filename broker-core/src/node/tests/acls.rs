//! ACLs through `handle_from`, as real request bytes from named callers: CreateAcls,
//! DescribeAcls and DeleteAcls as the super user; what a principal without ACLs is refused and
//! with which code; Metadata hiding what a principal may not describe; a produce refused per
//! topic; KIP-848's heartbeat and describe refused, KIP-932's topics (READ to fetch and acknowledge,
//! DESCRIBE to subscribe), Metadata asked by topic id checked by the
//! topic's name; and every ACL API answering SECURITY_DISABLED without an authorizer.

use super::*;
use crate::security::acl::Caller;
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
use kafka_protocol::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol::messages::describe_acls_response::DescribeAclsResponse;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

fn node(dir: &std::path::Path, enabled: bool) -> Node {
    let mut c = crate::testing::config(dir);
    c.security.authorizer = crate::security::acl::AuthorizerConfig { enabled, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    crate::testing::one_node(c)
}

pub(super) fn who(principal: &str) -> Caller {
    Caller { principal: principal.into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None }
}

/// Handles a request from `caller`; one that waits (for metadata, or for a group's write) is
/// answered once this node's broker applied and replicated what it waits for.
pub(super) fn ask<R: Encodable + HeaderVersion>(node: &Node, caller: &Caller, key: ApiKey, version: i16, req: &R) -> Outcome {
    let prepared = prepare(decode_request(&frame(key, version, req), true).unwrap());
    match handle_from(node, prepared, Some(caller), 0, Attempt::First, &mut Vec::new()) {
        Outcome::Wait(mut waiting) => {
            crate::testing::apply_metadata(node, 0);
            crate::testing::sync(node, 0);
            waiting.poll(node, false).expect("answered once applied")
        }
        other => other,
    }
}

fn describe_all() -> DescribeAclsRequest {
    DescribeAclsRequest::default().with_resource_type_filter(1).with_resource_name_filter(None).with_principal_filter(None).with_host_filter(None).with_pattern_type_filter(1).with_operation(1).with_permission_type(1)
}

fn creation(resource_type: i8, name: &str, pattern: i8, operation: i8, permission: i8) -> AclCreation {
    AclCreation::default().with_resource_type(resource_type).with_resource_name(s(name)).with_resource_pattern_type(pattern).with_principal(s("User:alice")).with_host(s("*")).with_operation(operation).with_permission_type(permission)
}

#[test]
fn acls_are_created_described_and_enforced_per_principal() {
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    crate::testing::create(&n, "secret", 1, Default::default()).unwrap();
    // No ACL: alice may not describe the ACLs, sees no topic, and her produce is refused.
    let r: DescribeAclsResponse = reply(ask(&n, &alice, ApiKey::DescribeAcls, 3, &describe_all()), ApiKey::DescribeAcls, 3);
    assert_eq!(r.error_code, Code::ClusterAuthorizationFailed.code());
    let all = MetadataRequest::default().with_topics(None);
    let m: MetadataResponse = reply(ask(&n, &alice, ApiKey::Metadata, 12, &all), ApiKey::Metadata, 12);
    assert!(m.topics.is_empty(), "alice sees {:?}", m.topics.iter().map(|t| t.name.clone()).collect::<Vec<_>>());
    let p: ProduceResponse = reply(ask(&n, &alice, ApiKey::Produce, 9, &produce_req("orders", build(&[b"x"], 1), 1)), ApiKey::Produce, 9);
    assert_eq!(p.responses[0].partition_responses[0].error_code, Code::TopicAuthorizationFailed.code());
    // Admin (a super user) creates two: WRITE on orders, and a bad one (MATCH is a filter's).
    let create = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 4, 3), creation(2, "x", 2, 4, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert_eq!(c.results.iter().map(|r| r.error_code).collect::<Vec<_>>(), vec![0, Code::InvalidRequest.code()]);
    let d: DescribeAclsResponse = reply(ask(&n, &admin, ApiKey::DescribeAcls, 3, &describe_all()), ApiKey::DescribeAcls, 3);
    assert_eq!((d.error_code, d.resources.len()), (0, 1));
    assert_eq!((d.resources[0].resource_name.as_str(), d.resources[0].acls[0].operation), ("orders", 4));
    // Now alice writes orders, sees it (WRITE implies DESCRIBE) and not secret.
    let p: ProduceResponse = reply(ask(&n, &alice, ApiKey::Produce, 9, &produce_req("orders", build(&[b"x"], 1), 1)), ApiKey::Produce, 9);
    assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
    let m: MetadataResponse = reply(ask(&n, &alice, ApiKey::Metadata, 12, &all), ApiKey::Metadata, 12);
    assert_eq!(m.topics.iter().filter_map(|t| t.name.as_ref().map(|n| n.to_string())).collect::<Vec<_>>(), vec!["orders".to_string()]);
    let named = MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(TopicName(s("secret"))))]));
    let m: MetadataResponse = reply(ask(&n, &alice, ApiKey::Metadata, 12, &named), ApiKey::Metadata, 12);
    assert_eq!(m.topics[0].error_code, Code::TopicAuthorizationFailed.code(), "a named topic she may not describe");
    // A broker's API from alice closes the connection (CLUSTER_ACTION).
    let f = fetch_req("orders", 0, 0).with_replica_id(kafka_protocol::messages::BrokerId(1));
    assert!(matches!(ask(&n, &alice, ApiKey::Fetch, 12, &f), Outcome::Close(_)));
}

#[test]
fn without_an_authorizer_everything_is_allowed_and_the_acl_apis_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), false);
    let alice = who("User:alice");
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    let d: DescribeAclsResponse = reply(ask(&n, &alice, ApiKey::DescribeAcls, 3, &describe_all()), ApiKey::DescribeAcls, 3);
    assert_eq!(d.error_code, Code::SecurityDisabled.code());
    let create = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 4, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &alice, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert_eq!(c.results[0].error_code, Code::SecurityDisabled.code());
    let p: ProduceResponse = reply(ask(&n, &alice, ApiKey::Produce, 9, &produce_req("orders", build(&[b"x"], 1), 1)), ApiKey::Produce, 9);
    assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
}

#[test]
fn group_and_transaction_refusals_answer_kafkas_codes() {
    use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic};
    use kafka_protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
    use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
    use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
    use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kafka_protocol::messages::offset_commit_response::OffsetCommitResponse;
    use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestGroup};
    use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponse;
    use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId, TransactionalId};
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    crate::testing::create(&n, "other", 1, Default::default()).unwrap();
    let create = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 4, 3), creation(5, "tx", 3, 4, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0));
    let group = || GroupId(s("g"));
    let commit = OffsetCommitRequest::default().with_group_id(group()).with_topics(vec![OffsetCommitRequestTopic::default().with_name(TopicName(s("orders"))).with_partitions(vec![OffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(1)])]);
    let r: OffsetCommitResponse = reply(ask(&n, &alice, ApiKey::OffsetCommit, 8, &commit), ApiKey::OffsetCommit, 8);
    assert_eq!(r.topics[0].partitions[0].error_code, Code::GroupAuthorizationFailed.code());
    let fetch = OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(group()).with_topics(None)]);
    let r: OffsetFetchResponse = reply(ask(&n, &alice, ApiKey::OffsetFetch, 8, &fetch), ApiKey::OffsetFetch, 8);
    assert_eq!(r.groups[0].error_code, Code::GroupAuthorizationFailed.code());
    let find = FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![s("g")]);
    let r: FindCoordinatorResponse = reply(ask(&n, &alice, ApiKey::FindCoordinator, 4, &find), ApiKey::FindCoordinator, 4);
    assert_eq!(r.coordinators[0].error_code, Code::GroupAuthorizationFailed.code());
    let describe = DescribeGroupsRequest::default().with_groups(vec![group()]);
    let r: DescribeGroupsResponse = reply(ask(&n, &alice, ApiKey::DescribeGroups, 5, &describe), ApiKey::DescribeGroups, 5);
    assert_eq!(r.groups[0].error_code, Code::GroupAuthorizationFailed.code());
    // WRITE on `tx` and on orders, not on other: Kafka's per-topic answer.
    let add = |id: &str| AddPartitionsToTxnRequest::default().with_v3_and_below_transactional_id(TransactionalId(s(id))).with_v3_and_below_producer_id((1).into()).with_v3_and_below_topics(vec![
        AddPartitionsToTxnTopic::default().with_name(TopicName(s("orders"))).with_partitions(vec![0]),
        AddPartitionsToTxnTopic::default().with_name(TopicName(s("other"))).with_partitions(vec![0]),
    ]);
    let codes = |r: AddPartitionsToTxnResponse| r.results_by_topic_v3_and_below.iter().map(|t| (t.name.to_string(), t.results_by_partition[0].partition_error_code)).collect::<Vec<_>>();
    let r: AddPartitionsToTxnResponse = reply(ask(&n, &alice, ApiKey::AddPartitionsToTxn, 3, &add("tx")), ApiKey::AddPartitionsToTxn, 3);
    assert_eq!(codes(r), vec![("orders".to_string(), Code::OperationNotAttempted.code()), ("other".to_string(), Code::TopicAuthorizationFailed.code())]);
    let r: AddPartitionsToTxnResponse = reply(ask(&n, &alice, ApiKey::AddPartitionsToTxn, 3, &add("not-hers")), ApiKey::AddPartitionsToTxn, 3);
    assert!(codes(r).iter().all(|(_, c)| *c == Code::TransactionalIdAuthorizationFailed.code()));
    // DESCRIBE on group `mine` only: requests naming both are answered per group, as Kafka does.
    let create = CreateAclsRequest::default().with_creations(vec![creation(3, "mine", 3, 8, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert_eq!(c.results[0].error_code, 0);
    let both = || vec![GroupId(s("mine")), group()];
    let describe = DescribeGroupsRequest::default().with_groups(both());
    let r: DescribeGroupsResponse = reply(ask(&n, &alice, ApiKey::DescribeGroups, 5, &describe), ApiKey::DescribeGroups, 5);
    let mut each: Vec<(String, i16)> = r.groups.iter().map(|g| (g.group_id.to_string(), g.error_code)).collect();
    each.sort();
    let denied = |each: &[(String, i16)]| each.iter().map(|(g, code)| (g.clone(), *code == Code::GroupAuthorizationFailed.code())).collect::<Vec<_>>();
    // `mine` is handled (here: no coordinator yet, the offsets topic being created).
    assert_eq!(denied(&each), vec![("g".to_string(), true), ("mine".to_string(), false)]);
    let find = FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![s("mine"), s("g")]);
    let r: FindCoordinatorResponse = reply(ask(&n, &alice, ApiKey::FindCoordinator, 4, &find), ApiKey::FindCoordinator, 4);
    let refused: Vec<String> = r.coordinators.iter().filter(|c| c.error_code == Code::GroupAuthorizationFailed.code()).map(|c| c.key.to_string()).collect();
    assert_eq!((r.coordinators.len(), refused), (2, vec!["g".to_string()]));
    let fetch = OffsetFetchRequest::default().with_groups(both().into_iter().map(|g| OffsetFetchRequestGroup::default().with_group_id(g).with_topics(None)).collect());
    let r: OffsetFetchResponse = reply(ask(&n, &alice, ApiKey::OffsetFetch, 8, &fetch), ApiKey::OffsetFetch, 8);
    let mut each: Vec<(String, i16)> = r.groups.iter().map(|g| (g.group_id.to_string(), g.error_code)).collect();
    each.sort();
    assert_eq!(denied(&each), vec![("g".to_string(), true), ("mine".to_string(), false)]);
}

#[test]
fn config_changes_are_authorized_per_resource() {
    use crate::kafka::{config_op, config_resource};
    use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest};
    use kafka_protocol::messages::incremental_alter_configs_response::IncrementalAlterConfigsResponse;
    use kafka_protocol::messages::describe_configs_request::{DescribeConfigsRequest, DescribeConfigsResource};
    use kafka_protocol::messages::describe_configs_response::DescribeConfigsResponse;
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    let change = |kind: i8, name: &str| {
        let config = AlterableConfig::default().with_name(s("retention.ms")).with_config_operation(config_op::set).with_value(Some(s("60000")));
        IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default().with_resource_type(kind).with_resource_name(s(name)).with_configs(vec![config])])
    };
    let codes = |caller: &Caller, kind: i8, name: &str| {
        let r: IncrementalAlterConfigsResponse = reply(ask(&n, caller, ApiKey::IncrementalAlterConfigs, 1, &change(kind, name)), ApiKey::IncrementalAlterConfigs, 1);
        r.responses[0].error_code
    };
    assert_eq!(codes(&alice, config_resource::topic, "orders"), Code::TopicAuthorizationFailed.code());
    assert_eq!(codes(&alice, config_resource::broker, "0"), Code::ClusterAuthorizationFailed.code());
    let create = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 11, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert_eq!(c.results[0].error_code, 0);
    assert_eq!(codes(&alice, config_resource::topic, "orders"), 0, "ALTER_CONFIGS on the topic");
    // A group's configs: ALTER_CONFIGS on the group to change them, DESCRIBE_CONFIGS to read them.
    let group_change = |name: &str| {
        let config = AlterableConfig::default().with_name(s("share.auto.offset.reset")).with_config_operation(config_op::set).with_value(Some(s("earliest")));
        IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default().with_resource_type(config_resource::group).with_resource_name(s(name)).with_configs(vec![config])])
    };
    let group_code = |caller: &Caller, name: &str| {
        let r: IncrementalAlterConfigsResponse = reply(ask(&n, caller, ApiKey::IncrementalAlterConfigs, 1, &group_change(name)), ApiKey::IncrementalAlterConfigs, 1);
        r.responses[0].error_code
    };
    let describe_code = |caller: &Caller, name: &str| {
        let res = DescribeConfigsResource::default().with_resource_type(config_resource::group).with_resource_name(s(name));
        let r: DescribeConfigsResponse = reply(ask(&n, caller, ApiKey::DescribeConfigs, 4, &DescribeConfigsRequest::default().with_resources(vec![res])), ApiKey::DescribeConfigs, 4);
        (r.results[0].error_code, r.results[0].configs.len())
    };
    assert_eq!(group_code(&alice, "share-g"), Code::GroupAuthorizationFailed.code());
    assert_eq!(describe_code(&alice, "share-g"), (Code::GroupAuthorizationFailed.code(), 0));
    let create = CreateAclsRequest::default().with_creations(vec![creation(3, "share-g", 3, 11, 3), creation(3, "share-g", 3, 10, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0));
    assert_eq!(group_code(&alice, "share-g"), 0, "ALTER_CONFIGS on the group");
    assert_eq!(describe_code(&alice, "share-g"), (0, crate::metadata::group_configs::CATALOG.len()), "DESCRIBE_CONFIGS on the group");
    assert_eq!(group_code(&alice, "other"), Code::GroupAuthorizationFailed.code(), "only that group");
}


#[test]
fn admin_apis_are_authorized_per_resource() {
    use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
    use kafka_protocol::messages::delete_records_response::DeleteRecordsResponse;
    use kafka_protocol::messages::describe_producers_request::{DescribeProducersRequest, TopicRequest};
    use kafka_protocol::messages::describe_producers_response::DescribeProducersResponse;
    use kafka_protocol::messages::offset_delete_request::{OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic};
    use kafka_protocol::messages::offset_delete_response::OffsetDeleteResponse;
    use kafka_protocol::messages::GroupId;
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    crate::testing::create(&n, "other", 1, Default::default()).unwrap();
    // DELETE and READ on orders, DELETE on group g.
    let create = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 6, 3), creation(2, "orders", 3, 3, 3), creation(3, "g", 3, 6, 3), creation(3, "g", 3, 3, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0), "{c:?}");
    let topic = |name: &str| DeleteRecordsTopic::default().with_name(TopicName(s(name))).with_partitions(vec![DeleteRecordsPartition::default().with_partition_index(0).with_offset(0)]);
    let delete = DeleteRecordsRequest::default().with_topics(vec![topic("orders"), topic("other")]).with_timeout_ms(1000);
    let r: DeleteRecordsResponse = reply(ask(&n, &alice, ApiKey::DeleteRecords, 2, &delete), ApiKey::DeleteRecords, 2);
    let codes: Vec<(String, i16)> = r.topics.iter().map(|t| (t.name.to_string(), t.partitions[0].error_code)).collect();
    assert_eq!(codes, vec![("orders".to_string(), 0), ("other".to_string(), Code::TopicAuthorizationFailed.code())]);
    let describe = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default().with_name(TopicName(s("orders"))).with_partition_indexes(vec![0]), TopicRequest::default().with_name(TopicName(s("other"))).with_partition_indexes(vec![0])]);
    let r: DescribeProducersResponse = reply(ask(&n, &alice, ApiKey::DescribeProducers, 0, &describe), ApiKey::DescribeProducers, 0);
    let codes: Vec<(String, i16)> = r.topics.iter().map(|t| (t.name.to_string(), t.partitions[0].error_code)).collect();
    assert_eq!(codes, vec![("orders".to_string(), 0), ("other".to_string(), Code::TopicAuthorizationFailed.code())]);
    let offsets = |group: &str, topic: &str| OffsetDeleteRequest::default().with_group_id(GroupId(s(group))).with_topics(vec![OffsetDeleteRequestTopic::default().with_name(TopicName(s(topic))).with_partitions(vec![OffsetDeleteRequestPartition::default().with_partition_index(0)])]);
    let r: OffsetDeleteResponse = reply(ask(&n, &alice, ApiKey::OffsetDelete, 0, &offsets("h", "orders")), ApiKey::OffsetDelete, 0);
    assert_eq!(r.error_code, Code::GroupAuthorizationFailed.code());
    let r: OffsetDeleteResponse = reply(ask(&n, &alice, ApiKey::OffsetDelete, 0, &offsets("g", "other")), ApiKey::OffsetDelete, 0);
    assert_eq!(r.topics[0].partitions[0].error_code, Code::TopicAuthorizationFailed.code());
    // Mixed: the topic she may not READ refused per partition, the other handled.
    let mut both = offsets("g", "orders");
    both.topics.extend(offsets("g", "other").topics);
    let r: OffsetDeleteResponse = reply(ask(&n, &alice, ApiKey::OffsetDelete, 0, &both), ApiKey::OffsetDelete, 0);
    let codes: Vec<i16> = r.topics.iter().map(|t| t.partitions[0].error_code).collect();
    assert!(codes[0] != Code::TopicAuthorizationFailed.code() && codes[1] == Code::TopicAuthorizationFailed.code(), "{r:?}");
    // An OffsetCommit to an allowed group: a topic she may not READ refused, the other committed.
    use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kafka_protocol::messages::offset_commit_response::OffsetCommitResponse;
    let to = |name: &str| OffsetCommitRequestTopic::default().with_name(TopicName(s(name))).with_partitions(vec![OffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(1)]);
    let commit = OffsetCommitRequest::default().with_group_id(GroupId(s("g"))).with_generation_id_or_member_epoch(-1).with_topics(vec![to("orders"), to("other")]);
    let r: OffsetCommitResponse = reply(ask(&n, &alice, ApiKey::OffsetCommit, 8, &commit), ApiKey::OffsetCommit, 8);
    let codes: Vec<(String, i16)> = r.topics.iter().map(|t| (t.name.to_string(), t.partitions[0].error_code)).collect();
    assert_eq!(codes[1], ("other".to_string(), Code::TopicAuthorizationFailed.code()), "{codes:?}");
    assert!(![Code::TopicAuthorizationFailed.code(), Code::GroupAuthorizationFailed.code()].contains(&codes[0].1), "{codes:?}");
    // DeleteGroups naming g (DELETE allowed) and h: h refused, g handled.
    use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
    let del = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s("g")), GroupId(s("h"))]);
    let r: DeleteGroupsResponse = reply(ask(&n, &alice, ApiKey::DeleteGroups, 2, &del), ApiKey::DeleteGroups, 2);
    let codes: Vec<(String, i16)> = r.results.iter().map(|g| (g.group_id.to_string(), g.error_code)).collect();
    assert_eq!(codes[1], ("h".to_string(), Code::GroupAuthorizationFailed.code()), "{codes:?}");
    assert_ne!(codes[0].1, Code::GroupAuthorizationFailed.code(), "{codes:?}");
    // A consumer's OffsetForLeaderEpoch: the topic she may not DESCRIBE answered per partition.
    use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic};
    use kafka_protocol::messages::offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;
    let epochs = |name: &str| OffsetForLeaderTopic::default().with_topic(TopicName(s(name))).with_partitions(vec![OffsetForLeaderPartition::default().with_partition(0).with_leader_epoch(0).with_current_leader_epoch(-1)]);
    let req = OffsetForLeaderEpochRequest::default().with_replica_id((-1).into()).with_topics(vec![epochs("orders"), epochs("other")]);
    let r: OffsetForLeaderEpochResponse = reply(ask(&n, &alice, ApiKey::OffsetForLeaderEpoch, 4, &req), ApiKey::OffsetForLeaderEpoch, 4);
    let codes: Vec<(String, i16)> = r.topics.iter().map(|t| (t.topic.to_string(), t.partitions[0].error_code)).collect();
    assert_eq!(codes, vec![("orders".to_string(), 0), ("other".to_string(), Code::TopicAuthorizationFailed.code())]);
    // The cluster's admin APIs answer CLUSTER_AUTHORIZATION_FAILED where Kafka does.
    use kafka_protocol::messages::alter_user_scram_credentials_request::{AlterUserScramCredentialsRequest, ScramCredentialDeletion};
    use kafka_protocol::messages::elect_leaders_request::{ElectLeadersRequest, TopicPartitions};
    use kafka_protocol::messages::{AlterUserScramCredentialsResponse, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ElectLeadersResponse};
    let alter = AlterUserScramCredentialsRequest::default().with_deletions(vec![ScramCredentialDeletion::default().with_name(s("bob")).with_mechanism(1)]);
    let r: AlterUserScramCredentialsResponse = reply(ask(&n, &alice, ApiKey::AlterUserScramCredentials, 0, &alter), ApiKey::AlterUserScramCredentials, 0);
    assert_eq!((r.results.len(), r.results[0].user.as_str(), r.results[0].error_code), (1, "bob", Code::ClusterAuthorizationFailed.code()));
    let r: DescribeUserScramCredentialsResponse = reply(ask(&n, &alice, ApiKey::DescribeUserScramCredentials, 0, &DescribeUserScramCredentialsRequest::default()), ApiKey::DescribeUserScramCredentials, 0);
    assert_eq!(r.error_code, Code::ClusterAuthorizationFailed.code());
    let elect = ElectLeadersRequest::default().with_topic_partitions(Some(vec![TopicPartitions::default().with_topic(TopicName(s("orders"))).with_partitions(vec![0])]));
    let r: ElectLeadersResponse = reply(ask(&n, &alice, ApiKey::ElectLeaders, 2, &elect), ApiKey::ElectLeaders, 2);
    assert_eq!((r.error_code, r.replica_election_results[0].partition_result[0].error_code), (Code::ClusterAuthorizationFailed.code(), Code::ClusterAuthorizationFailed.code()));
}

#[test]
fn offset_fetch_answers_hide_or_refuse_the_topics_the_caller_may_not_describe() {
    use crate::node::authz::{offset_fetch_topics_after, Access};
    use crate::security::acl::{Acl, AuthorizerConfig, Operation, PatternType, Permission, ResourceType};
    use kafka_protocol::messages::offset_fetch_response::{OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics};
    let mut image = crate::metadata::Image::default();
    image.acls.insert(Acl { resource_type: ResourceType::Topic, resource_name: "orders".into(), pattern: PatternType::Literal, principal: "User:alice".into(), host: "*".into(), operation: Operation::Read, permission: Permission::Allow });
    let config = AuthorizerConfig { enabled: true, ..Default::default() };
    let alice = who("User:alice");
    let access = Access::new(&config, &image, &alice);
    let topic = |name: &str| OffsetFetchResponseTopics::default().with_name(TopicName(s(name))).with_partitions(vec![OffsetFetchResponsePartitions::default().with_partition_index(0).with_committed_offset(42)]);
    let group = || OffsetFetchResponseGroup::default().with_topics(vec![topic("orders"), topic("secret")]);
    let mut resp = OffsetFetchResponse::default().with_groups(vec![group(), group()]);
    offset_fetch_topics_after(&access, &mut resp, &[false, true]);
    // A listing of every committed offset leaves `secret` out; a request naming it is refused.
    let listed: Vec<String> = resp.groups[0].topics.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(listed, vec!["orders".to_string()]);
    let named: Vec<(String, i64, i16)> = resp.groups[1].topics.iter().map(|t| (t.name.to_string(), t.partitions[0].committed_offset, t.partitions[0].error_code)).collect();
    assert_eq!(named, vec![("orders".to_string(), 42, 0), ("secret".to_string(), -1, Code::TopicAuthorizationFailed.code())]);
}

#[test]
fn kip848_refusals_answer_kafkas_codes_and_metadata_by_id_is_checked_by_name() {
    use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
    use kafka_protocol::messages::consumer_group_describe_response::ConsumerGroupDescribeResponse;
    use kafka_protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
    use kafka_protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
    use kafka_protocol::messages::GroupId;
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    crate::testing::create(&n, "other", 1, Default::default()).unwrap();
    let join = |topic: &str| {
        ConsumerGroupHeartbeatRequest::default().with_group_id(GroupId(s("g"))).with_member_id(s("m")).with_member_epoch(0).with_rebalance_timeout_ms(1000).with_subscribed_topic_names(Some(vec![TopicName(s(topic))])).with_topic_partitions(Some(vec![]))
    };
    let beat = |r: ConsumerGroupHeartbeatRequest| -> ConsumerGroupHeartbeatResponse { reply(ask(&n, &alice, ApiKey::ConsumerGroupHeartbeat, 1, &r), ApiKey::ConsumerGroupHeartbeat, 1) };
    assert_eq!(beat(join("orders")).error_code, Code::GroupAuthorizationFailed.code(), "no READ on the group");
    let describe = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s("g"))]);
    let d: ConsumerGroupDescribeResponse = reply(ask(&n, &alice, ApiKey::ConsumerGroupDescribe, 1, &describe), ApiKey::ConsumerGroupDescribe, 1);
    assert_eq!(d.groups[0].error_code, Code::GroupAuthorizationFailed.code(), "no DESCRIBE on the group");
    // READ on group g and on topic orders (READ implies DESCRIBE), nothing on other.
    let create = CreateAclsRequest::default().with_creations(vec![creation(3, "g", 3, 3, 3), creation(2, "orders", 3, 3, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0));
    let refused = beat(join("other"));
    assert_eq!(refused.error_code, Code::TopicAuthorizationFailed.code(), "subscribing by name to a topic it may not describe");
    assert!(refused.error_message.is_some_and(|m| m.contains("other")));
    assert_ne!(beat(join("orders")).error_code, Code::GroupAuthorizationFailed.code());
    // Metadata asked by id: answered by name where alice may describe it, refused where not.
    let all: MetadataResponse = reply(ask(&n, &admin, ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(None)), ApiKey::Metadata, 12);
    let id = |name: &str| all.topics.iter().find(|t| t.name.as_ref().is_some_and(|x| x.as_str() == name)).expect("listed").topic_id;
    let by_id = MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default().with_name(None).with_topic_id(id("orders")), MetadataRequestTopic::default().with_name(None).with_topic_id(id("other"))]));
    let m: MetadataResponse = reply(ask(&n, &alice, ApiKey::Metadata, 12, &by_id), ApiKey::Metadata, 12);
    let named = |name: &str| m.topics.iter().find(|t| t.name.as_ref().is_some_and(|x| x.as_str() == name)).map(|t| t.error_code);
    assert_eq!(named("orders"), Some(0));
    assert_eq!(named("other"), Some(Code::TopicAuthorizationFailed.code()));
}

#[test]
fn kip932_needs_read_on_each_topic_fetched_and_describe_on_each_subscribed() {
    use kafka_protocol::messages::share_acknowledge_request::{AcknowledgeTopic, AcknowledgePartition, AcknowledgementBatch, ShareAcknowledgeRequest};
    use kafka_protocol::messages::share_acknowledge_response::ShareAcknowledgeResponse;
    use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic, ShareFetchRequest};
    use kafka_protocol::messages::share_fetch_response::ShareFetchResponse;
    use kafka_protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
    use kafka_protocol::messages::share_group_heartbeat_response::ShareGroupHeartbeatResponse;
    use kafka_protocol::messages::GroupId;
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let (admin, alice) = (who("User:admin"), who("User:alice"));
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    crate::testing::create(&n, "other", 1, Default::default()).unwrap();
    let all: MetadataResponse = reply(ask(&n, &admin, ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(None)), ApiKey::Metadata, 12);
    let id = |name: &str| all.topics.iter().find(|t| t.name.as_ref().is_some_and(|x| x.as_str() == name)).expect("listed").topic_id;
    // READ on group g and on topic orders, nothing on other.
    let create = CreateAclsRequest::default().with_creations(vec![creation(3, "g", 3, 3, 3), creation(2, "orders", 3, 3, 3)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &create), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0));

    let join = |topic: &str| ShareGroupHeartbeatRequest::default().with_group_id(GroupId(s("g"))).with_member_id(s("m")).with_member_epoch(0).with_subscribed_topic_names(Some(vec![TopicName(s(topic))]));
    let beat = |r: ShareGroupHeartbeatRequest| -> ShareGroupHeartbeatResponse { reply(ask(&n, &alice, ApiKey::ShareGroupHeartbeat, 1, &r), ApiKey::ShareGroupHeartbeat, 1) };
    let refused = beat(join("other"));
    assert_eq!(refused.error_code, Code::TopicAuthorizationFailed.code(), "subscribing to a topic it may not describe");
    assert!(refused.error_message.is_some_and(|m| m.contains("other")));
    assert_ne!(beat(join("orders")).error_code, Code::TopicAuthorizationFailed.code());

    let fetch = |epoch: i32, topics: &[&str]| {
        let topics = topics.iter().map(|t| FetchTopic::default().with_topic_id(id(t)).with_partitions(vec![FetchPartition::default().with_partition_index(0)])).collect();
        let req = ShareFetchRequest::default().with_group_id(Some(GroupId(s("g")))).with_member_id(Some(s("m"))).with_share_session_epoch(epoch).with_max_wait_ms(0).with_max_bytes(1 << 20).with_max_records(10).with_topics(topics);
        let r: ShareFetchResponse = reply(ask(&n, &alice, ApiKey::ShareFetch, 1, &req), ApiKey::ShareFetch, 1);
        assert_eq!(r.error_code, 0);
        r.responses.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.error_code))).collect::<Vec<_>>()
    };
    // A session opened with both: other is refused (and left out of the session), orders goes on.
    let r = fetch(0, &["orders", "other"]);
    assert!(r.contains(&(id("other"), Code::TopicAuthorizationFailed.code())), "{r:?}");
    assert!(!r.iter().any(|(t, e)| *t == id("orders") && *e != 0), "{r:?}");
    let ack = ShareAcknowledgeRequest::default().with_group_id(Some(GroupId(s("g")))).with_member_id(Some(s("m"))).with_share_session_epoch(1).with_topics(vec![AcknowledgeTopic::default().with_topic_id(id("other")).with_partitions(vec![
        AcknowledgePartition::default().with_partition_index(0).with_acknowledgement_batches(vec![AcknowledgementBatch::default().with_first_offset(0).with_last_offset(0).with_acknowledge_types(vec![1])]),
    ])]);
    let a: ShareAcknowledgeResponse = reply(ask(&n, &alice, ApiKey::ShareAcknowledge, 1, &ack), ApiKey::ShareAcknowledge, 1);
    assert_eq!(a.responses[0].partitions[0].error_code, Code::TopicAuthorizationFailed.code(), "acknowledging records of a topic it may not read");
    // READ on orders taken away (a DENY): the session's partition, not named again, is refused.
    let deny = CreateAclsRequest::default().with_creations(vec![creation(2, "orders", 3, 3, 2)]);
    let c: CreateAclsResponse = reply(ask(&n, &admin, ApiKey::CreateAcls, 3, &deny), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0));
    assert_eq!(fetch(2, &[]), vec![(id("orders"), Code::TopicAuthorizationFailed.code())]);
}

#[test]
fn a_raft_message_from_the_cluster_is_decided_without_the_brokers_lock() {
    use crate::controller::raft::{Body, Message};
    let tmp = tempfile::tempdir().unwrap();
    let n = node(tmp.path(), true);
    let message = || prepare(Decoded::Raft(Message { from: 7, to: 0, body: Body::BeginQuorumEpoch { epoch: 0 } }));
    let (cluster, alice) = (Caller { internal: true, ..who("User:broker") }, who("User:alice"));
    std::thread::scope(|s| {
        // A decision under the node's gate holds the broker's lock (across its disk work).
        let held = n.broker();
        let (tx, rx) = std::sync::mpsc::channel();
        let (n, cluster) = (&n, &cluster);
        let decide = s.spawn(move || {
            let outcome = handle_from(n, message(), Some(cluster), 0, Attempt::First, &mut Vec::new());
            tx.send(()).unwrap();
            outcome
        });
        let decided = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(held);
        assert!(decided.is_ok(), "the cluster's own Raft message waited for the broker's lock");
        assert!(!matches!(decide.join().unwrap(), Outcome::Close(_)));
    });
    // A caller the checks apply to is still checked, over the image.
    match handle_from(&n, message(), Some(&alice), 0, Attempt::First, &mut Vec::new()) {
        Outcome::Close(why) => assert!(why.contains("CLUSTER_ACTION"), "{why}"),
        _ => panic!("a Raft message from User:alice was taken"),
    }
}
