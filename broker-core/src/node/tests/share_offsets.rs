//! The share-group offsets admin APIs through `handle_from`, as real request bytes:
//! DescribeShareGroupOffsets of named topics and of every initialized share-partition,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets refused (NON_EMPTY_GROUP) while the group
//! has a member and taken once it is empty, a share-partition leader's write of the old state
//! fenced after them; duplicates collapsed, oversized requests refused, a group-level error
//! alone; and the ACLs Kafka checks (DESCRIBE, READ, DELETE on the group; DESCRIBE or READ on
//! each topic) refused with its codes, without telling which topics exist.

use super::*;
use crate::security::acl::Caller;
use kafka_protocol::messages::alter_share_group_offsets_request::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic};
use kafka_protocol::messages::alter_share_group_offsets_response::AlterShareGroupOffsetsResponse;
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
use kafka_protocol::messages::delete_share_group_offsets_request::{DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequestTopic};
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponse;
use kafka_protocol::messages::describe_share_group_offsets_request::{DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic};
use kafka_protocol::messages::describe_share_group_offsets_response::DescribeShareGroupOffsetsResponse;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use kafka_protocol::messages::share_group_heartbeat_response::ShareGroupHeartbeatResponse;
use kafka_protocol::messages::write_share_group_state_request::{PartitionData, WriteShareGroupStateRequest, WriteStateData};
use kafka_protocol::messages::write_share_group_state_response::WriteShareGroupStateResponse;
use kafka_protocol::messages::GroupId;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// A node leading the offsets partition (loaded), with topics `t` (2 partitions) and `secret`;
/// `authorizer`: ACLs enforced, `User:admin` a super user.
fn coordinator(dir: &std::path::Path, authorizer: bool) -> (Node, [u8; 16]) {
    let mut config = crate::testing::config(dir);
    config.groups.offsets_partitions = 1;
    config.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: authorizer, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    let node = crate::testing::one_node(config);
    let id = crate::testing::create(&node, "t", 2, Default::default()).unwrap();
    crate::testing::create(&node, "secret", 1, Default::default()).unwrap();
    let find = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g")]);
    handle(&node, &frame(ApiKey::FindCoordinator, 4, &find), 0, Attempt::First, &mut Vec::new());
    crate::testing::sync(&node, 0);
    (node, id)
}

fn who(principal: &str) -> Caller {
    Caller { principal: principal.into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None }
}

/// Handles a request from `caller` and decodes its answer; one that waits (a write) is polled
/// until the node's own ticks and syncs (or, for an ACL change, the metadata applied) answer it.
fn ask<Q: Encodable + HeaderVersion, R: Decodable>(node: &Node, caller: &Caller, key: ApiKey, version: i16, req: &Q) -> R {
    let prepared = prepare(decode_request(&frame(key, version, req), true).unwrap());
    let mut out = Vec::new();
    let outcome = match handle_from(node, prepared, Some(caller), 0, Attempt::First, &mut out) {
        Outcome::Wait(mut waiting) => {
            let mut answered = None;
            for now in 0..50 {
                crate::testing::apply_metadata(node, now);
                let actions = crate::testing::run_syncs(&mut node.broker(), std::mem::take(&mut out), now);
                let mut actions = [actions, node.input(Input::Tick { checkpoint: false }, now)].concat();
                node.parts().settle(now, &mut actions);
                waiting.take_answers(&mut actions);
                out = actions;
                if let Some(o) = waiting.poll(node, false) {
                    answered = Some(o);
                    break;
                }
            }
            answered.expect("a write on one node is answered within a few rounds")
        }
        other => other,
    };
    reply(outcome, key, version)
}

fn beat(node: &Node, epoch: i32) -> ShareGroupHeartbeatResponse {
    let mut req = ShareGroupHeartbeatRequest::default().with_group_id(GroupId(s("g"))).with_member_id(s("member-1")).with_member_epoch(epoch);
    if epoch == 0 {
        req.subscribed_topic_names = Some(vec![TopicName(s("t"))]);
    }
    ask(node, &who("User:admin"), ApiKey::ShareGroupHeartbeat, 1, &req)
}

/// A share-partition leader's write of t-`p`'s state: its error code.
fn leader_writes(node: &Node, id: [u8; 16], p: i32, state_epoch: i32, start: i64) -> i16 {
    let part = PartitionData::default().with_partition(p).with_state_epoch(state_epoch).with_leader_epoch(0).with_start_offset(start);
    let req = WriteShareGroupStateRequest::default().with_group_id(s("g")).with_topics(vec![WriteStateData::default().with_topic_id(uuid::Uuid::from_bytes(id)).with_partitions(vec![part])]);
    let r: WriteShareGroupStateResponse = ask(node, &who("User:admin"), ApiKey::WriteShareGroupState, 0, &req);
    r.results[0].partitions[0].error_code
}

fn describe_req(group: &str, topics: Option<&[(&str, &[i32])]>) -> DescribeShareGroupOffsetsRequest {
    let topics = topics.map(|ts| ts.iter().map(|(t, ps)| DescribeShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s(t))).with_partitions(ps.to_vec())).collect());
    DescribeShareGroupOffsetsRequest::default().with_groups(vec![DescribeShareGroupOffsetsRequestGroup::default().with_group_id(GroupId(s(group))).with_topics(topics)])
}

/// A described partition: topic, partition, start offset, leader epoch, error.
type Row = (String, i32, i64, i32, i16);

/// The one group's error and its rows.
fn describe(node: &Node, caller: &str, group: &str, topics: Option<&[(&str, &[i32])]>) -> (i16, Vec<Row>) {
    let r: DescribeShareGroupOffsetsResponse = ask(node, &who(caller), ApiKey::DescribeShareGroupOffsets, 0, &describe_req(group, topics));
    let g = &r.groups[0];
    let rows = g.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_name.to_string(), p.partition_index, p.start_offset, p.leader_epoch, p.error_code))).collect();
    (g.error_code, rows)
}

fn alter_req(offsets: &[(&str, i32, i64)]) -> AlterShareGroupOffsetsRequest {
    let topics = offsets.iter().map(|(t, p, o)| AlterShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s(t))).with_partitions(vec![AlterShareGroupOffsetsRequestPartition::default().with_partition_index(*p).with_start_offset(*o)])).collect();
    AlterShareGroupOffsetsRequest::default().with_group_id(GroupId(s("g"))).with_topics(topics)
}

/// The top-level error and each partition's.
fn alter(node: &Node, caller: &str, offsets: &[(&str, i32, i64)]) -> (i16, Vec<i16>) {
    let r: AlterShareGroupOffsetsResponse = ask(node, &who(caller), ApiKey::AlterShareGroupOffsets, 0, &alter_req(offsets));
    (r.error_code, r.responses.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect())
}

fn delete(node: &Node, caller: &str, topics: &[&str]) -> (i16, Vec<i16>) {
    let req = DeleteShareGroupOffsetsRequest::default().with_group_id(GroupId(s("g"))).with_topics(topics.iter().map(|t| DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s(t)))).collect());
    let r: DeleteShareGroupOffsetsResponse = ask(node, &who(caller), ApiKey::DeleteShareGroupOffsets, 0, &req);
    (r.error_code, r.responses.iter().map(|t| t.error_code).collect())
}

const ok: i16 = 0;

#[test]
fn share_group_offsets_are_described_and_changed_only_while_the_group_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, id) = coordinator(tmp.path(), false);
    let admin = "User:admin";
    assert_eq!(describe(&n, admin, "g", None).0, Code::GroupIdNotFound.code(), "no such share group");
    assert_eq!(beat(&n, 0).error_code, ok, "a member joins");
    assert_eq!(leader_writes(&n, id, 0, 0, 5), ok, "t-0's leader writes start offset 5");
    let t = |p, start, epoch| ("t".to_string(), p, start, epoch, ok);
    assert_eq!(describe(&n, admin, "g", None), (ok, vec![t(0, 5, 0)]), "every initialized share-partition");
    let named: &[(&str, &[i32])] = &[("t", &[0, 1]), ("nope", &[3])];
    assert_eq!(describe(&n, admin, "g", Some(named)), (ok, vec![t(0, 5, 0), t(1, -1, 0), ("nope".into(), 3, -1, 0, ok)]), "no state, no topic: -1 (Kafka's)");

    assert_eq!(alter(&n, admin, &[("t", 0, 0)]).0, Code::NonEmptyGroup.code(), "a member is in the group");
    assert_eq!(delete(&n, admin, &["t"]).0, Code::NonEmptyGroup.code());
    assert_eq!(beat(&n, -1).error_code, ok, "the member leaves");
    assert_eq!(alter(&n, admin, &[("t", 0, 1), ("t", 9, 0)]), (ok, vec![ok, Code::UnknownTopicOrPartition.code()]));
    assert_eq!(describe(&n, admin, "g", None), (ok, vec![t(0, 1, 0)]), "the altered start offset");
    assert_eq!(leader_writes(&n, id, 0, 0, 5), Code::FencedStateEpoch.code(), "the leader holding the old state cannot undo the alter");
    assert_eq!(delete(&n, admin, &["t", "nope"]), (ok, vec![ok, Code::UnknownTopicOrPartition.code()]));
    assert_eq!(describe(&n, admin, "g", None), (ok, vec![]), "deleted");
    assert_eq!(leader_writes(&n, id, 0, 1, 1), Code::FencedStateEpoch.code(), "nor the delete");
}

fn creation(resource_type: i8, name: &str, operation: i8) -> AclCreation {
    AclCreation::default().with_resource_type(resource_type).with_resource_name(s(name)).with_resource_pattern_type(3).with_principal(s("User:alice")).with_host(s("*")).with_operation(operation).with_permission_type(3)
}

/// Kafka's ACL resource types and operations, as the wire numbers them.
const group_type: i8 = 3;
const topic_type: i8 = 2;
const read: i8 = 3;
const delete_op: i8 = 6;
const describe_op: i8 = 8;

fn grant(n: &Node, acls: Vec<AclCreation>) {
    let c: CreateAclsResponse = ask(n, &who("User:admin"), ApiKey::CreateAcls, 3, &CreateAclsRequest::default().with_creations(acls));
    assert!(c.results.iter().all(|r| r.error_code == 0), "{c:?}");
    crate::testing::apply_metadata(n, 0);
}

#[test]
fn share_group_offsets_need_kafkas_acls() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, _) = coordinator(tmp.path(), true);
    assert_eq!(beat(&n, 0).error_code, ok);
    assert_eq!(beat(&n, -1).error_code, ok, "an empty group");
    let (alice, denied_group, denied_topic) = ("User:alice", Code::GroupAuthorizationFailed.code(), Code::TopicAuthorizationFailed.code());
    assert_eq!(describe(&n, alice, "g", None).0, denied_group, "DESCRIBE on the group");
    assert_eq!(alter(&n, alice, &[("t", 0, 0)]).0, denied_group, "READ on the group");
    assert_eq!(delete(&n, alice, &["t"]).0, denied_group, "DELETE on the group");

    // The admin gives secret a start offset: a listing that did not filter would show it.
    assert_eq!(alter(&n, "User:admin", &[("secret", 0, 7)]), (ok, vec![ok]));
    assert_eq!(describe(&n, "User:admin", "g", None), (ok, vec![("secret".into(), 0, 7, -1, ok)]));

    grant(&n, vec![creation(group_type, "g", describe_op), creation(group_type, "g", read), creation(group_type, "g", delete_op), creation(topic_type, "t", describe_op)]);
    let named: &[(&str, &[i32])] = &[("t", &[0]), ("secret", &[0]), ("nope", &[0])];
    let (code, rows) = describe(&n, alice, "g", Some(named));
    assert_eq!(code, ok);
    let refused = |t: &str| (t.to_string(), 0, -1, 0, denied_topic);
    assert_eq!(rows, vec![("t".into(), 0, -1, 0, ok), refused("secret"), refused("nope")], "DESCRIBE on each topic named, existing or not");
    let r: DescribeShareGroupOffsetsResponse = ask(&n, &who(alice), ApiKey::DescribeShareGroupOffsets, 0, &describe_req("g", Some(named)));
    let ids: Vec<bool> = r.groups[0].topics.iter().map(|t| t.topic_id.is_nil()).collect();
    assert_eq!(ids, vec![false, true, true], "a refused topic has the zero id: whether it exists does not show");
    assert_eq!(describe(&n, alice, "g", None), (ok, vec![]), "secret is left out of alice's listing");
    let r: AlterShareGroupOffsetsResponse = ask(&n, &who(alice), ApiKey::AlterShareGroupOffsets, 0, &alter_req(&[("secret", 0, 0)]));
    assert!(r.responses[0].topic_id.is_nil(), "{r:?}");
    let req = DeleteShareGroupOffsetsRequest::default().with_group_id(GroupId(s("g"))).with_topics(vec![DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s("secret")))]);
    let r: DeleteShareGroupOffsetsResponse = ask(&n, &who(alice), ApiKey::DeleteShareGroupOffsets, 0, &req);
    assert_eq!((r.responses[0].error_code, r.responses[0].topic_id.is_nil()), (denied_topic, true));
    assert_eq!(alter(&n, alice, &[("t", 0, 0)]), (ok, vec![denied_topic]), "DESCRIBE is not READ on the topic");
    assert_eq!(delete(&n, alice, &["t"]), (ok, vec![denied_topic]));

    grant(&n, vec![creation(topic_type, "t", read)]);
    assert_eq!(alter(&n, alice, &[("t", 0, 0), ("secret", 0, 0)]), (ok, vec![ok, denied_topic]), "READ on t, not on secret");
    assert_eq!(describe(&n, alice, "g", None), (ok, vec![("t".into(), 0, 0, -1, ok)]), "a listing of every topic shows what alice may describe, not secret");
    assert_eq!(delete(&n, alice, &["t"]), (ok, vec![ok]));
}

#[test]
fn alter_collapses_duplicates_refuses_oversize_and_a_group_error_comes_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, _) = coordinator(tmp.path(), false);
    let admin = who("User:admin");
    assert_eq!(beat(&n, 0).error_code, ok);
    let r: AlterShareGroupOffsetsResponse = ask(&n, &admin, ApiKey::AlterShareGroupOffsets, 0, &alter_req(&[("t", 0, 1)]));
    assert_eq!((r.error_code, r.responses.len()), (Code::NonEmptyGroup.code(), 0), "no topics beside a group-level error (Kafka's)");
    let req = DeleteShareGroupOffsetsRequest::default().with_group_id(GroupId(s("g"))).with_topics(vec![DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s("t")))]);
    let r: DeleteShareGroupOffsetsResponse = ask(&n, &admin, ApiKey::DeleteShareGroupOffsets, 0, &req);
    assert_eq!((r.error_code, r.responses.len()), (Code::NonEmptyGroup.code(), 0));
    let r: DescribeShareGroupOffsetsResponse = ask(&n, &admin, ApiKey::DescribeShareGroupOffsets, 0, &describe_req("nope", None));
    assert_eq!((r.groups[0].error_code, r.groups[0].topics.len()), (Code::GroupIdNotFound.code(), 0));
    assert_eq!(beat(&n, -1).error_code, ok);

    // Each partition once, the last offset named for it; a negative partition does not exist.
    assert_eq!(alter(&n, "User:admin", &[("t", 0, 5), ("t", 0, 3), ("t", -1, 0)]), (ok, vec![ok, ok, Code::UnknownTopicOrPartition.code()]));
    assert_eq!(describe(&n, "User:admin", "g", None), (ok, vec![("t".into(), 0, 3, -1, ok)]), "the last offset wins");
    assert_eq!(delete(&n, "User:admin", &["t", "t"]), (ok, vec![ok, ok]), "a topic named twice is deleted once");
    assert_eq!(delete(&n, "User:admin", &["t"]), (ok, vec![ok]), "only fences: deleted again");
    assert_eq!(delete(&n, "User:admin", &["secret"]), (ok, vec![Code::UnknownTopicOrPartition.code()]), "no state: nothing to delete");
    // More partitions than one request may name: refused whole, before anything is built.
    let many = (0..=crate::constants::share_offsets_alter_partitions_max as i32).map(|p| AlterShareGroupOffsetsRequestPartition::default().with_partition_index(p)).collect();
    let req = AlterShareGroupOffsetsRequest::default().with_group_id(GroupId(s("g"))).with_topics(vec![AlterShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s("t"))).with_partitions(many)]);
    let r: AlterShareGroupOffsetsResponse = ask(&n, &admin, ApiKey::AlterShareGroupOffsets, 0, &req);
    assert_eq!((r.error_code, r.responses.len()), (Code::InvalidRequest.code(), 0));

    // On one node the offsets partition's write is replicated as it is appended, so the
    // Alter is answered at once (its waiting is the coordinator's tests'), written.
    let prepared = prepare(decode_request(&frame(ApiKey::AlterShareGroupOffsets, 0, &alter_req(&[("t", 1, 1)])), true).unwrap());
    let mut out = Vec::new();
    let r: AlterShareGroupOffsetsResponse = reply(handle_from(&n, prepared, Some(&admin), 0, Attempt::First, &mut out), ApiKey::AlterShareGroupOffsets, 0);
    assert_eq!(r.responses[0].partitions[0].error_code, ok);
    assert_eq!(describe(&n, "User:admin", "g", None), (ok, vec![("t".into(), 1, 1, -1, ok)]), "in effect once written");
}
