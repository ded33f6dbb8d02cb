//! KIP-848 regex subscriptions under ACLs, through `handle_from` as real request bytes from
//! named callers (Kafka 4's KAFKA-18813): what a member's regex matches is cut to the topics
//! its principal may DESCRIBE; a topic it is let see later joins its assignment at its next
//! heartbeat and leaves once the ACL is deleted; a ConsumerGroupDescribe by a principal that
//! may not DESCRIBE a topic the group holds is refused TOPIC_AUTHORIZATION_FAILED.

use super::acls::{ask, who};
use super::*;
use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::consumer_group_describe_response::ConsumerGroupDescribeResponse;
use kafka_protocol::messages::consumer_group_heartbeat_request::{ConsumerGroupHeartbeatRequest, TopicPartitions as Owned};
use kafka_protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use kafka_protocol::messages::delete_acls_response::DeleteAclsResponse;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_protocol::messages::GroupId;
use std::collections::BTreeMap;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// An ALLOW for `principal` from any host: resource type (2 topic, 3 group), name, pattern
/// (3 literal, 4 prefixed), operation (3 READ, 8 DESCRIBE).
fn allow(resource_type: i8, name: &str, pattern: i8, operation: i8, principal: &str) -> AclCreation {
    AclCreation::default().with_resource_type(resource_type).with_resource_name(s(name)).with_resource_pattern_type(pattern).with_principal(s(principal)).with_host(s("*")).with_operation(operation).with_permission_type(3)
}

/// A node with the authorizer on (super user admin; nothing allowed without an ACL) leading
/// the offsets topic, with topics a-one (2 partitions), a-two and b-one.
fn coordinator(dir: &std::path::Path) -> Node {
    let mut c = crate::testing::config(dir);
    c.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: true, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    c.groups.offsets_partitions = 1;
    let n = crate::testing::one_node(c);
    for (t, p) in [("a-one", 2), ("a-two", 1), ("b-one", 1)] {
        crate::testing::create(&n, t, p, Default::default()).unwrap();
    }
    let find = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g")]);
    let _: FindCoordinatorResponse = reply(ask(&n, &who("User:admin"), ApiKey::FindCoordinator, 4, &find), ApiKey::FindCoordinator, 4);
    crate::testing::sync(&n, 0);
    let led: FindCoordinatorResponse = reply(ask(&n, &who("User:admin"), ApiKey::FindCoordinator, 4, &find), ApiKey::FindCoordinator, 4);
    assert_eq!(led.coordinators[0].error_code, 0, "the offsets topic is led here");
    n
}

fn acls(n: &Node, creations: Vec<AclCreation>) {
    let c: CreateAclsResponse = reply(ask(n, &who("User:admin"), ApiKey::CreateAcls, 3, &CreateAclsRequest::default().with_creations(creations)), ApiKey::CreateAcls, 3);
    assert!(c.results.iter().all(|r| r.error_code == 0), "{c:?}");
}

#[test]
fn a_regex_assigns_only_the_topics_the_member_may_describe_and_follows_acl_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let n = coordinator(tmp.path());
    let all: MetadataResponse = reply(ask(&n, &who("User:admin"), ApiKey::Metadata, 12, &MetadataRequest::default().with_topics(None)), ApiKey::Metadata, 12);
    let ids: BTreeMap<_, String> = all.topics.iter().filter_map(|t| Some((t.topic_id, t.name.as_ref()?.to_string()))).collect();
    // READ on group g; DESCRIBE on the topics prefixed `a-`, nothing on b-one.
    acls(&n, vec![allow(3, "g", 3, 3, "User:alice"), allow(2, "a-", 4, 8, "User:alice"), allow(3, "g", 3, 8, "User:bob"), allow(2, "a-", 4, 8, "User:bob")]);
    let alice = who("User:alice");
    let mut epoch = 0;
    let mut owned: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let mut beat = |n: &Node| -> BTreeMap<String, Vec<i32>> {
        let mut req = ConsumerGroupHeartbeatRequest::default().with_group_id(GroupId(s("g"))).with_member_id(s("m")).with_member_epoch(epoch);
        req.topic_partitions = Some(owned.iter().map(|(t, ps)| Owned::default().with_topic_id(*ids.iter().find(|(_, name)| *name == t).expect("known").0).with_partitions(ps.clone())).collect());
        if epoch == 0 {
            (req.rebalance_timeout_ms, req.subscribed_topic_regex) = (10_000, Some(s(".*")));
        }
        let r: ConsumerGroupHeartbeatResponse = reply(ask(n, &alice, ApiKey::ConsumerGroupHeartbeat, 1, &req), ApiKey::ConsumerGroupHeartbeat, 1);
        assert_eq!(r.error_code, 0, "{r:?}");
        epoch = r.member_epoch;
        if let Some(a) = r.assignment {
            owned = a.topic_partitions.iter().map(|tp| (ids[&tp.topic_id].clone(), tp.partitions.clone())).collect();
        }
        owned.clone()
    };
    let a_topics: BTreeMap<String, Vec<i32>> = [("a-one".to_string(), vec![0, 1]), ("a-two".to_string(), vec![0])].into();
    assert_eq!(beat(&n), a_topics, "`.*` matches b-one too, but alice may not describe it");
    assert_eq!(beat(&n), a_topics, "and never at a later heartbeat");
    // DESCRIBE on b-one given: it joins at alice's next heartbeat.
    acls(&n, vec![allow(2, "b-one", 3, 8, "User:alice")]);
    let with_b: BTreeMap<String, Vec<i32>> = [("a-one".to_string(), vec![0, 1]), ("a-two".to_string(), vec![0]), ("b-one".to_string(), vec![0])].into();
    assert_eq!(beat(&n), with_b);
    // Bob may describe group g and the a- topics: the group holds b-one, so he is refused it.
    let describe = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s("g"))]);
    let d: ConsumerGroupDescribeResponse = reply(ask(&n, &who("User:bob"), ApiKey::ConsumerGroupDescribe, 1, &describe), ApiKey::ConsumerGroupDescribe, 1);
    assert_eq!((d.groups[0].error_code, d.groups[0].members.len()), (Code::TopicAuthorizationFailed.code(), 0), "{d:?}");
    let d: ConsumerGroupDescribeResponse = reply(ask(&n, &alice, ApiKey::ConsumerGroupDescribe, 1, &describe), ApiKey::ConsumerGroupDescribe, 1);
    assert_eq!((d.groups[0].error_code, d.groups[0].members.len()), (0, 1), "alice may see every topic it holds: {d:?}");
    // The ACL deleted: b-one is revoked at her next heartbeat.
    let filter = DeleteAclsFilter::default().with_resource_type_filter(2).with_resource_name_filter(Some(s("b-one"))).with_pattern_type_filter(3).with_principal_filter(Some(s("User:alice"))).with_host_filter(None).with_operation(8).with_permission_type(3);
    let deleted: DeleteAclsResponse = reply(ask(&n, &who("User:admin"), ApiKey::DeleteAcls, 3, &DeleteAclsRequest::default().with_filters(vec![filter])), ApiKey::DeleteAcls, 3);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1, "{deleted:?}");
    assert_eq!(beat(&n), a_topics, "told to give b-one up");
    let d: ConsumerGroupDescribeResponse = reply(ask(&n, &who("User:bob"), ApiKey::ConsumerGroupDescribe, 1, &describe), ApiKey::ConsumerGroupDescribe, 1);
    assert_eq!(d.groups[0].error_code, 0, "nothing of b-one left in the group: {d:?}");
}
