//! FindCoordinator v6's share-partition keys (KIP-932, key type 2) through `handle_from`, as
//! real request bytes, answered as Kafka 4.1's KafkaApis answers them: a key "group:topic
//! id:partition" with the coordinator of its group (which keeps share-partition states here),
//! the offsets topic created on first use; a malformed key INVALID_REQUEST beside a good one;
//! the key type below v6 INVALID_REQUEST, whatever the caller's ACLs; and a caller without
//! CLUSTER_ACTION on the cluster CLUSTER_AUTHORIZATION_FAILED on every key.

use super::*;
use crate::security::acl::Caller;
use base64::Engine;
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

const share: i8 = crate::kafka::coordinator_type::share;

/// A node with topic `t` (its id as Kafka writes it returned) and two offsets partitions, the
/// offsets topic not yet created; `authorizer`: ACLs enforced, `User:admin` a super user.
fn node(dir: &std::path::Path, authorizer: bool) -> (Node, String) {
    let mut config = crate::testing::config(dir);
    config.groups.offsets_partitions = 2;
    config.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: authorizer, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    let node = crate::testing::one_node(config);
    let id = crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    (node, base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id))
}

fn who(principal: &str) -> Caller {
    Caller { principal: principal.into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None }
}

/// Handles `req` at `version` from `caller` (None: the node's own); one that waits for
/// metadata is answered once this node's broker applied it.
fn ask<Q: Encodable + HeaderVersion, R: Decodable>(node: &Node, caller: Option<&Caller>, key: ApiKey, version: i16, req: &Q) -> R {
    let prepared = prepare(decode_request(&frame(key, version, req), true).unwrap());
    let outcome = match handle_from(node, prepared, caller, 0, Attempt::First, &mut Vec::new()) {
        Outcome::Wait(mut waiting) => {
            crate::testing::apply_metadata(node, 0);
            waiting.poll(node, false).expect("answered once applied")
        }
        other => other,
    };
    reply(outcome, key, version)
}

/// FindCoordinator of `keys` of `key_type` at `version` (v4+: batched): each key's error code
/// and node.
fn find(node: &Node, caller: Option<&Caller>, version: i16, key_type: i8, keys: &[&str]) -> Vec<(String, i16, i32)> {
    let req = FindCoordinatorRequest::default().with_key_type(key_type).with_coordinator_keys(keys.iter().map(|k| s(k)).collect());
    let r: FindCoordinatorResponse = ask(node, caller, ApiKey::FindCoordinator, version, &req);
    r.coordinators.iter().map(|c| (c.key.to_string(), c.error_code, c.node_id.0)).collect()
}

/// An ACL allowing `operation` on the literal resource `name` of `resource_type` to `User:alice`.
fn allow(node: &Node, resource_type: i8, name: &str, operation: i8) {
    let acl = AclCreation::default().with_resource_type(resource_type).with_resource_name(s(name)).with_resource_pattern_type(3).with_principal(s("User:alice")).with_host(s("*")).with_operation(operation).with_permission_type(3);
    let r: CreateAclsResponse = ask(node, Some(&who("User:admin")), ApiKey::CreateAcls, 3, &CreateAclsRequest::default().with_creations(vec![acl]));
    assert_eq!(r.results[0].error_code, 0);
}

#[test]
fn a_share_partition_key_is_answered_with_its_groups_coordinator() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, id) = node(tmp.path(), false);
    let key = format!("g:{id}:0");
    // Its group's coordinator: the offsets topic, created on first use (Kafka's
    // `__share_group_state` is not: the states are kept with the group here).
    assert_eq!(find(&n, None, 6, share, &[&key]), vec![(key.clone(), Code::CoordinatorNotAvailable.code(), -1)]);
    crate::testing::sync(&n, 0);
    assert!(n.broker().image().topics.contains_key(crate::group::offsets_topic), "the offsets topic was created");
    // The partition need not exist, nor the topic id name a topic (Kafka checks neither); a
    // trailing colon is dropped, as Java's `split` drops it.
    let (other, trailing) = (format!("g:{id}:7"), format!("g:{}:0:", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([9u8; 16])));
    assert_eq!(find(&n, None, 6, share, &[&key, &other, &trailing]), vec![(key, 0, 0), (other, 0, 0), (trailing, 0, 0)]);
    // The group's own lookup at v6 answers the same node.
    assert_eq!(find(&n, None, 6, crate::kafka::coordinator_type::group, &["g"]), vec![("g".to_string(), 0, 0)]);
}

#[test]
fn a_malformed_share_partition_key_is_invalid_request_beside_a_good_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, id) = node(tmp.path(), false);
    find(&n, None, 6, crate::kafka::coordinator_type::group, &["g"]);
    crate::testing::sync(&n, 0);
    let good = format!("g:{id}:0");
    let bad = [
        "g".to_string(),
        format!("g:{id}"),
        format!("g:{id}:x"),
        format!("g:{id}:2147483648"),
        "g:not-a-topic-id:0".to_string(),
        format!("g:{}:0", &id[..20]),
        format!(" :{id}:0"),
        format!("g::{id}:0"),
        // Kafka 4.1 splits at every colon: a group id with one has no key.
        format!("a:b:{id}:0"),
        String::new(),
    ];
    let keys: Vec<&str> = std::iter::once(good.as_str()).chain(bad.iter().map(String::as_str)).collect();
    let answers = find(&n, None, 6, share, &keys);
    assert_eq!(answers[0], (good.clone(), 0, 0), "the good key is answered");
    for (k, code, node) in &answers[1..] {
        assert_eq!((*code, *node), (Code::InvalidRequest.code(), -1), "key {k:?}");
    }
    assert_eq!(answers.len(), keys.len());
}

#[test]
fn the_share_key_type_below_v6_is_invalid_request_whatever_the_callers_acls() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, id) = node(tmp.path(), true);
    let alice = who("User:alice");
    let key = format!("g:{id}:0");
    // Alice has no ACL at all: Kafka checks no ACL for this key type below v6.
    for version in [4, 5] {
        assert_eq!(find(&n, Some(&alice), version, share, &[&key]), vec![(key.clone(), Code::InvalidRequest.code(), -1)], "v{version}");
    }
    let req = FindCoordinatorRequest::default().with_key_type(share).with_key(s(&key));
    let r: FindCoordinatorResponse = ask(&n, Some(&alice), ApiKey::FindCoordinator, 3, &req);
    assert_eq!((r.error_code, r.node_id.0), (Code::InvalidRequest.code(), -1), "v3");
}

#[test]
fn a_share_partition_key_needs_cluster_action_on_the_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, id) = node(tmp.path(), true);
    find(&n, None, 6, crate::kafka::coordinator_type::group, &["g"]);
    crate::testing::sync(&n, 0);
    let alice = who("User:alice");
    let (good, bad) = (format!("g:{id}:0"), "g".to_string());
    let refused = |keys: Vec<(String, i16, i32)>| keys.into_iter().map(|(k, code, node)| (k, code == Code::ClusterAuthorizationFailed.code() && node == -1)).collect::<Vec<_>>();
    // Every key refused, the malformed one too: Kafka's refusal comes before any key is read.
    assert_eq!(refused(find(&n, Some(&alice), 6, share, &[&good, &bad])), vec![(good.clone(), true), (bad.clone(), true)]);
    // DESCRIBE on the group is what a group's key needs, not a share-partition's.
    allow(&n, 3, "g", 8);
    assert_eq!(find(&n, Some(&alice), 6, crate::kafka::coordinator_type::group, &["g"]), vec![("g".to_string(), 0, 0)]);
    assert_eq!(refused(find(&n, Some(&alice), 6, share, &[&good])), vec![(good.clone(), true)]);
    // CLUSTER_ACTION on the cluster (a broker's principal): answered, the malformed key invalid.
    allow(&n, 4, crate::security::acl::cluster_name, 9);
    assert_eq!(find(&n, Some(&alice), 6, share, &[&good, &bad]), vec![(good, 0, 0), (bad, Code::InvalidRequest.code(), -1)]);
}

#[test]
fn a_share_partition_keys_group_is_what_comes_before_its_topic_id() {
    use crate::node::group_handlers::share_key_group;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([1u8; 16]);
    assert_eq!(share_key_group(&format!("orders-workers:{id}:3")), Some("orders-workers"));
    // Kafka's decoder takes its padding, and a negative partition.
    assert_eq!(share_key_group(&format!("w:{id}==:-1")), Some("w"));
    assert_eq!(share_key_group(&format!("w:{id}=:0")), None);
    assert_eq!(share_key_group(&format!("w:{id}AA:0")), None, "18 bytes are no topic id");
}
