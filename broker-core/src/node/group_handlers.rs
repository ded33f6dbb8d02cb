//! The group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, TxnOffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups,
//! OffsetDelete.
//! Field-by-field translation between the wire and the [`Coordinator`]; every decision is the
//! coordinator's (docs/groups.md). Requests the coordinator answers later wait on their tickets
//! ([`Waiting::group`]).

use super::coordinator_link::{perform, sync_ownership};
use super::group_reply::{code, err_code, GroupReply};
use crate::protocol::{s, topic_name};
use super::{Node, Outcome, Parts, Waiting};
use crate::broker::{Action, Broker};
use crate::constants::{group_join_wait_margin_ms, group_request_wait_ms_max};
use crate::group::records::OffsetValue;
use crate::group::{offsets_topic, Committed, partition_for, Answer, Coordinator, JoinRequest, Pending, State, Ticket, Work};
use crate::kafka::Code;
use kafka_protocol::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_protocol::messages::delete_groups_response::{DeletableGroupResult, DeleteGroupsResponse};
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::describe_groups_response::{DescribeGroupsResponse, DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::{Coordinator as Located, FindCoordinatorResponse};
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::heartbeat_response::HeartbeatResponse;
use kafka_protocol::messages::join_group_request::JoinGroupRequest;
use kafka_protocol::messages::leave_group_request::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_response::{LeaveGroupResponse, MemberResponse};
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::list_groups_response::{ListGroupsResponse, ListedGroup};
use kafka_protocol::messages::offset_commit_request::OffsetCommitRequest;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_delete_request::OffsetDeleteRequest;
use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_protocol::messages::offset_fetch_response::{OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics};
use kafka_protocol::messages::sync_group_request::SyncGroupRequest;
use kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use kafka_protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
use kafka_protocol::messages::{BrokerId, GroupId};
use kafka_protocol::protocol::StrBytes;

/// Runs `f` on the coordinator with ownership brought up to date, then performs its work.
pub(super) fn with_groups<T>(node: &Node, now: u64, out: &mut Vec<Action>, f: impl FnOnce(&Broker, &mut Coordinator, &mut Work) -> T) -> T {
    let mut parts = node.parts();
    let Parts { broker: b, groups: c, .. } = &mut *parts;
    let mut work = Work::default();
    sync_ownership(b, c, now, &mut work);
    let result = f(b, c, &mut work);
    perform(b, c, work, now, out);
    result
}

/// FindCoordinator (v0–v6; v4 batches keys), for groups, transactional ids and (v6)
/// share-partitions, with the coordinator's endpoint on `listener`, the client's. Creates the
/// coordinator's state topic on first use. A share-partition's state is kept by its group's
/// coordinator here (docs/share-groups.md), so its key is answered with that; Kafka's
/// KafkaApis checks the key type's version and the key's form, each INVALID_REQUEST per key
/// (the CLUSTER_ACTION it needs is `authz`'s).
pub fn find_coordinator(b: &mut Broker, version: i16, req: FindCoordinatorRequest, listener: &str) -> FindCoordinatorResponse {
    use crate::kafka::coordinator_type as kind;
    let keys = if version >= 4 { req.coordinator_keys.clone() } else { vec![req.key.clone()] };
    let mut r = FindCoordinatorResponse::default();
    for key in keys {
        let located = match req.key_type {
            kind::group => locate(b, offsets_topic, key.as_str(), listener),
            kind::transaction => locate(b, crate::txn::transaction_state_topic, key.as_str(), listener),
            kind::share if version < crate::kafka::since::find_coordinator_share => Err((Code::InvalidRequest, "a share-partition key needs FindCoordinator v6")),
            kind::share => match share_key_group(key.as_str()) {
                Some(g) => locate(b, offsets_topic, g, listener),
                None => Err((Code::InvalidRequest, "a share-partition key is group:topic id:partition")),
            },
            _ => Err((Code::InvalidRequest, "unknown coordinator key type")),
        };
        let mut c = Located::default();
        c.key = key;
        match located {
            Ok((id, host, port)) => (c.node_id, c.host, c.port) = (BrokerId(id), s(&host), port),
            Err((e, why)) => {
                (c.node_id, c.host, c.port, c.error_code) = (BrokerId(-1), s(""), -1, code(e));
                c.error_message = Some(s(why));
            }
        }
        r.coordinators.push(c);
    }
    if version < 4 {
        let c = r.coordinators.pop().unwrap_or_default();
        (r.node_id, r.host, r.port, r.error_code) = (c.node_id, c.host, c.port, c.error_code);
        r.error_message = if version >= 1 { c.error_message } else { None };
    }
    r
}

/// The leader of the key's partition of `topic` (the offsets topic for a group, the
/// transaction state topic for a transactional id: the same placement), or why there is none
/// yet. Creates the topic on first use.
fn locate(b: &mut Broker, topic: &str, key: &str, listener: &str) -> Result<(i32, String, i32), (Code, &'static str)> {
    let unavailable = |why| Err((Code::CoordinatorNotAvailable, why));
    let Some(t) = b.image().topics.get(topic) else {
        let _ = b.request_auto_create(topic);
        return unavailable("the coordinator's state topic is being created");
    };
    let p = partition_for(key, t.partitions.len() as i32);
    let leader = t.partitions.get(p as usize).map_or(-1, |i| i.leader);
    if leader == b.config().node_id && b.replica_pending(topic, p) {
        return unavailable("the key's state partition is being opened on its leader");
    }
    let Some(x) = b.image().brokers.get(&leader).filter(|x| !x.fenced) else { return unavailable("the key's state partition has no leader") };
    match x.endpoint(listener) {
        Some((host, port)) => Ok((x.id, host.to_string(), port)),
        None => unavailable("the coordinator has no listener of the name this client connected to"),
    }
}

/// The group of share-partition key `key` ("group:topic id:partition"), or None where it is
/// not one as Kafka 4.1's `SharePartitionKey.validate` reads it: split at every colon (trailing
/// empty parts dropped, as Java's `split`), exactly three parts, none blank, the topic id
/// Kafka's base64 (16 bytes), the partition an i32. So a group id with a colon has no key.
pub(super) fn share_key_group(key: &str) -> Option<&str> {
    use base64::engine::{general_purpose::GeneralPurposeConfig, DecodePaddingMode, GeneralPurpose};
    use base64::Engine;
    // Java's URL-safe decoder: whole padding or none, trailing bits not checked.
    const kafka_uuid: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireNone).with_decode_allow_trailing_bits(true));
    let mut parts: Vec<&str> = key.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    let blank = |p: &str| p.chars().all(|c| c <= ' ');
    let [group, topic_id, partition] = parts[..] else { return None };
    let id_ok = topic_id.len() <= 24 && kafka_uuid.decode(topic_id.strip_suffix("==").unwrap_or(topic_id)).is_ok_and(|b| b.len() == 16);
    (!blank(group) && !blank(topic_id) && !blank(partition) && id_ok && partition.parse::<i32>().is_ok()).then_some(group)
}

fn str_opt(v: &Option<StrBytes>) -> Option<String> {
    v.as_ref().map(|x| x.to_string())
}

/// JoinGroup: answered when the rebalance completes (or at once for errors and KIP-394).
pub fn join_group(node: &Node, version: i16, cid: i32, (client_id, peer): (&str, Option<std::net::IpAddr>), req: JoinGroupRequest, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let session = req.session_timeout_ms.max(0) as u64;
    let rebalance = if version >= 1 { req.rebalance_timeout_ms.max(0) as u64 } else { session };
    let jr = JoinRequest {
        member_id: req.member_id.to_string(),
        instance_id: str_opt(&req.group_instance_id),
        client_id: client_id.to_string(),
        // Kafka's form: the connection's address after a slash.
        client_host: peer.map_or(String::new(), |ip| format!("/{ip}")),
        session_timeout_ms: session,
        rebalance_timeout_ms: rebalance,
        protocol_type: req.protocol_type.to_string(),
        protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
        require_known_member_id: version >= 4,
    };
    let group = req.group_id.0.to_string();
    let pending = with_groups(node, now, out, |_, c, w| c.join(&group, jr, now, w));
    let reply = GroupReply::Join { version, cid };
    let wait = rebalance.min(group_request_wait_ms_max) + group_join_wait_margin_ms;
    finish(At { node, out }, reply, pending.map(Answer::Join), wait)
}

/// SyncGroup: a follower waits for the leader's assignment; the leader waits for it to be stored.
pub fn sync_group(node: &Node, version: i16, cid: i32, req: SyncGroupRequest, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.0.to_string();
    let instance = str_opt(&req.group_instance_id);
    let protocol = match (&req.protocol_type, &req.protocol_name) {
        (Some(t), Some(n)) if version >= 5 => Some((t.to_string(), n.to_string())),
        _ => None,
    };
    let assignments = req.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.clone())).collect();
    let (pending, protocol) = with_groups(node, now, out, |_, c, w| {
        let p = protocol.as_ref().map(|(t, n)| (t.as_str(), n.as_str()));
        let pending = c.sync(&group, req.member_id.as_str(), instance.as_deref(), req.generation_id, p, assignments, now, w);
        // A classic member of a consumer group is answered with the protocol it asked for
        // (Kafka's answer; the sync checked it).
        let asked = protocol.clone().map(|(t, n)| (Some(t), Some(n)));
        (pending, c.describe(&group).ok().flatten().map(|g| (g.protocol_type.clone(), g.protocol.clone())).or(asked))
    });
    finish(At { node, out }, GroupReply::Sync { version, cid, protocol }, pending.map(Answer::Sync), group_request_wait_ms_max)
}

/// Heartbeat.
pub fn heartbeat(node: &Node, req: HeartbeatRequest, now: u64, out: &mut Vec<Action>) -> HeartbeatResponse {
    let group = req.group_id.0.to_string();
    let instance = str_opt(&req.group_instance_id);
    let result = with_groups(node, now, out, |_, c, _| c.heartbeat(&group, req.member_id.as_str(), instance.as_deref(), req.generation_id, now));
    let mut r = HeartbeatResponse::default();
    r.error_code = err_code(&result);
    r
}

/// LeaveGroup (v3+: a batch of members, each answered).
pub fn leave_group(node: &Node, version: i16, req: LeaveGroupRequest, now: u64, out: &mut Vec<Action>) -> LeaveGroupResponse {
    let group = req.group_id.0.to_string();
    let members: Vec<(String, Option<String>)> = match version >= 3 {
        true => req.members.iter().map(|m| (m.member_id.to_string(), str_opt(&m.group_instance_id))).collect(),
        false => vec![(req.member_id.to_string(), None)],
    };
    let result = with_groups(node, now, out, |_, c, w| c.leave(&group, &members, now, w));
    let mut r = LeaveGroupResponse::default();
    match result {
        Err(e) => r.error_code = code(e),
        Ok(results) if version < 3 => r.error_code = results.first().map_or(0, err_code),
        Ok(results) => {
            r.members = members
                .iter()
                .zip(&results)
                .map(|((id, instance), res)| {
                    let mut m = MemberResponse::default();
                    m.member_id = s(id);
                    m.group_instance_id = instance.as_deref().map(s);
                    m.error_code = err_code(res);
                    m
                })
                .collect();
        }
    }
    r
}

/// OffsetCommit: unknown partitions and oversized metadata are refused one by one; the rest
/// are written together and answered once replicated.
pub fn offset_commit(node: &Node, (version, cid): (i16, i32), req: OffsetCommitRequest, denied: &super::authz::Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.0.to_string();
    let instance = str_opt(&req.group_instance_id);
    let asked = req.topics.iter().map(|t| (t.name.0.to_string(), t.partitions.iter().map(|p| (p.partition_index, p.committed_offset, if version >= 6 { p.committed_leader_epoch } else { -1 }, p.committed_metadata.as_ref())).collect()));
    let (codes, slots, offsets) = checked_offsets(node, asked, denied, now);
    let mut r = OffsetCommitResponse::default();
    for (t, ps) in req.topics.iter().zip(codes) {
        let partitions = t.partitions.iter().zip(ps).map(|(p, e)| OffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(e)).collect();
        r.topics.push(OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(partitions));
    }
    let result = with_groups(node, now, out, |_, c, w| c.commit(&group, req.member_id.as_str(), instance.as_deref(), req.generation_id_or_member_epoch, offsets, now, w));
    let pending = match result {
        Ok(p) => p.map(|()| Answer::Written(Ok(()))),
        Err(e) => Pending::Now(Answer::Written(Err(e))),
    };
    finish(At { node, out }, GroupReply::Commit { version, cid, response: r, slots }, pending, group_request_wait_ms_max)
}

/// TxnOffsetCommit (v0–3, the classic protocol): offsets committed inside the producer's
/// transaction, pending until its marker reaches the group's offsets partition.
pub fn txn_offset_commit(node: &Node, (version, cid): (i16, i32), req: TxnOffsetCommitRequest, denied: &super::authz::Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.0.to_string();
    let instance = if version >= 3 { str_opt(&req.group_instance_id) } else { None };
    let (member, generation) = if version >= 3 { (req.member_id.to_string(), req.generation_id) } else { (String::new(), -1) };
    let asked = req.topics.iter().map(|t| (t.name.0.to_string(), t.partitions.iter().map(|p| (p.partition_index, p.committed_offset, if version >= 2 { p.committed_leader_epoch } else { -1 }, p.committed_metadata.as_ref())).collect()));
    let (codes, slots, offsets) = checked_offsets(node, asked, denied, now);
    let mut r = TxnOffsetCommitResponse::default();
    for (t, ps) in req.topics.iter().zip(codes) {
        let partitions = t.partitions.iter().zip(ps).map(|(p, e)| TxnOffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(e)).collect();
        r.topics.push(TxnOffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(partitions));
    }
    let producer = (req.producer_id.0, req.producer_epoch);
    let result = with_groups(node, now, out, |_, c, w| c.txn_commit(&group, producer, &member, instance.as_deref(), generation, offsets, now, w));
    let pending = match result {
        Ok(p) => p.map(|()| Answer::Written(Ok(()))),
        Err(e) => Pending::Now(Answer::Written(Err(e))),
    };
    finish(At { node, out }, GroupReply::TxnCommit { version, cid, response: r, slots }, pending, group_request_wait_ms_max)
}

/// A commit's partitions, as asked: (topic, [(partition, offset, leader epoch, metadata)]).
type AskedOffsets<'a> = (String, Vec<(i32, i64, i32, Option<&'a StrBytes>)>);

/// Checks each asked partition (a topic the caller may READ, a known partition, metadata within
/// `offset.metadata.max.bytes`): per topic, each partition's code (0 for those going on to
/// the coordinator, which get the commit's outcome later), their (topic, partition) slots in
/// the response, and their offsets.
#[allow(clippy::type_complexity)]
fn checked_offsets<'a>(node: &Node, asked: impl Iterator<Item = AskedOffsets<'a>>, denied: &super::authz::Denied, now: u64) -> (Vec<Vec<i16>>, Vec<(usize, usize)>, Vec<((String, i32), OffsetValue)>) {
    let parts = node.parts();
    let (b, metadata_max) = (&parts.broker, parts.groups.config().offset_metadata_max_bytes);
    let (mut codes, mut slots, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    for (ti, (topic, partitions)) in asked.enumerate() {
        let known = b.image().topics.get(topic.as_str()).map(|x| x.partitions.len() as i32);
        let mut tc = Vec::new();
        for (pi, (p, offset, leader_epoch, metadata)) in partitions.into_iter().enumerate() {
            let metadata = metadata.map_or(String::new(), |m| m.to_string());
            let e = if let Some(refused) = denied.of(&topic) {
                refused.kafka_error(true).code()
            } else if !known.is_some_and(|n| (0..n).contains(&p)) {
                code(Code::UnknownTopicOrPartition)
            } else if metadata.len() > metadata_max {
                code(Code::OffsetMetadataTooLarge)
            } else {
                slots.push((ti, pi));
                offsets.push(((topic.clone(), p), OffsetValue { offset, leader_epoch, metadata, commit_timestamp: now as i64 }));
                0
            };
            tc.push(e);
        }
        codes.push(tc);
    }
    (codes, slots, offsets)
}

/// OffsetFetch: one group (v1–v7) or several (v8+); null topics mean every committed offset.
pub fn offset_fetch(node: &Node, version: i16, req: OffsetFetchRequest, now: u64, out: &mut Vec<Action>) -> OffsetFetchResponse {
    let mut r = OffsetFetchResponse::default();
    if version >= 8 {
        for g in &req.groups {
            let wanted = g.topics.as_ref().map(|ts| ts.iter().flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.0.to_string(), *p))).collect::<Vec<_>>());
            // v9: a KIP-848 member's fetch is checked against its member epoch, as its commits are.
            let member = g.member_id.as_ref().map(|m| m.to_string());
            let result = with_groups(node, now, out, |_, c, _| {
                let checked = member.as_ref().and_then(|m| c.consumer_member_check(g.group_id.0.as_str(), m, g.member_epoch));
                checked.unwrap_or(Ok(())).and_then(|()| stable_offsets(c, g.group_id.0.as_str(), wanted.as_deref(), req.require_stable))
            });
            let mut gr = OffsetFetchResponseGroup::default();
            gr.group_id = g.group_id.clone();
            match result {
                Err(e) => gr.error_code = code(e),
                Ok(found) => {
                    for (((t, p), v), unstable) in found {
                        if gr.topics.last().is_none_or(|x: &OffsetFetchResponseTopics| x.name.0.as_str() != t) {
                            let mut tr = OffsetFetchResponseTopics::default();
                            tr.name = topic_name(&t);
                            gr.topics.push(tr);
                        }
                        let mut pr = OffsetFetchResponsePartitions::default();
                        pr.partition_index = p;
                        (pr.committed_offset, pr.committed_leader_epoch, pr.metadata) = committed(v);
                        if unstable {
                            pr.error_code = code(Code::UnstableOffsetCommit);
                        }
                        gr.topics.last_mut().expect("pushed").partitions.push(pr);
                    }
                }
            }
            r.groups.push(gr);
        }
        return r;
    }
    let wanted = req.topics.as_ref().map(|ts| ts.iter().flat_map(|t| t.partition_indexes.iter().map(|p| (t.name.0.to_string(), *p))).collect::<Vec<_>>());
    let require_stable = version >= 7 && req.require_stable;
    let result = with_groups(node, now, out, |_, c, _| stable_offsets(c, req.group_id.0.as_str(), wanted.as_deref(), require_stable));
    let found = match result {
        Ok(found) => found,
        // v1 has no group-level error: each asked partition carries it.
        Err(e) if version < 2 => {
            r.topics = group_by_topic(wanted.unwrap_or_default().into_iter().map(|tp| ((tp, None), false)).collect(), code(e));
            return r;
        }
        Err(e) => {
            r.error_code = code(e);
            return r;
        }
    };
    r.topics = group_by_topic(found, 0);
    r
}

/// OffsetFetch's offsets, each with whether it is unstable: with `require_stable` (v7+,
/// KIP-447), an offset an open transaction has committed to (UNSTABLE_OFFSET_COMMIT: the
/// client asks again once the transaction ends).
fn stable_offsets(c: &Coordinator, group: &str, wanted: Option<&[(String, i32)]>, require_stable: bool) -> Result<Vec<(Committed, bool)>, Code> {
    let found = c.fetch_offsets(group, wanted)?;
    Ok(found.into_iter().map(|(tp, v)| {
        let unstable = require_stable && c.unstable(group, &tp);
        ((tp, v), unstable)
    }).collect())
}

fn committed(v: Option<OffsetValue>) -> (i64, i32, Option<StrBytes>) {
    match v {
        Some(v) => (v.offset, v.leader_epoch, Some(s(&v.metadata))),
        None => (-1, -1, Some(s(""))),
    }
}

/// v1–v7's topics; `error` for every partition, else UNSTABLE_OFFSET_COMMIT where unstable.
fn group_by_topic(found: Vec<(Committed, bool)>, error: i16) -> Vec<OffsetFetchResponseTopic> {
    let mut topics: Vec<OffsetFetchResponseTopic> = Vec::new();
    for (((t, p), v), unstable) in found {
        if topics.last().is_none_or(|x| x.name.0.as_str() != t) {
            let mut tr = OffsetFetchResponseTopic::default();
            tr.name = topic_name(&t);
            topics.push(tr);
        }
        let mut pr = OffsetFetchResponsePartition::default();
        pr.partition_index = p;
        pr.error_code = if error == 0 && unstable { code(Code::UnstableOffsetCommit) } else { error };
        (pr.committed_offset, pr.committed_leader_epoch, pr.metadata) = committed(v);
        topics.last_mut().expect("pushed").partitions.push(pr);
    }
    topics
}

/// ListGroups (v4 filters by state, v5 by type: "classic" or "consumer").
pub fn list_groups(node: &Node, version: i16, req: ListGroupsRequest, now: u64, out: &mut Vec<Action>) -> ListGroupsResponse {
    let states: Vec<String> = req.states_filter.iter().map(|x| x.to_lowercase()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|x| x.to_lowercase()).collect();
    let mut r = ListGroupsResponse::default();
    let typed = |t: &str| types.is_empty() || types.iter().any(|x| x == t);
    r.groups = with_groups(node, now, out, |_, c, _| {
        if !c.loading().is_empty() {
            // Some groups here are still loading: the client asks again rather than miss them.
            r.error_code = code(Code::CoordinatorLoadInProgress);
        }
        let consumer = c.consumer_groups().filter(|_| typed("consumer")).filter(|g| states.is_empty() || states.contains(&g.state().name().to_lowercase())).map(|g| {
            let mut l = ListedGroup::default();
            (l.group_id, l.protocol_type, l.group_state) = (GroupId(s(&g.id)), s("consumer"), s(g.state().name()));
            l.group_type = if version >= 5 { s("consumer") } else { s("") };
            l
        });
        let share = c.share_groups().filter(|_| typed("share")).filter(|g| states.is_empty() || states.contains(&g.state().to_lowercase())).map(|g| {
            let mut l = ListedGroup::default();
            (l.group_id, l.protocol_type, l.group_state) = (GroupId(s(&g.id)), s("share"), s(g.state()));
            l.group_type = if version >= 5 { s("share") } else { s("") };
            l
        });
        c.groups()
            .filter(|_| typed("classic"))
            .filter(|g| states.is_empty() || states.contains(&g.state.name().to_lowercase()))
            .map(|g| {
                let mut l = ListedGroup::default();
                l.group_id = GroupId(s(&g.id));
                l.protocol_type = s(g.protocol_type.as_deref().unwrap_or(""));
                l.group_state = s(g.state.name());
                l.group_type = if version >= 5 { s("classic") } else { s("") };
                l
            })
            .chain(consumer)
            .chain(share)
            .collect()
    });
    r
}

/// Kafka's AclOperation codes a group has: READ (3), DELETE (6), DESCRIBE (8), as a bit set.
pub(super) const group_operations: i32 = (1 << 3) | (1 << 6) | (1 << 8);

/// DescribeGroups: members with metadata and assignment while Stable; an unknown group is Dead.
pub fn describe_groups(node: &Node, req: DescribeGroupsRequest, now: u64, out: &mut Vec<Action>) -> DescribeGroupsResponse {
    let mut r = DescribeGroupsResponse::default();
    with_groups(node, now, out, |_, c, _| {
        for id in &req.groups {
            let mut d = DescribedGroup::default();
            d.group_id = id.clone();
            // Kafka without an authorizer: every group operation (READ, DELETE, DESCRIBE), and
            // i32::MIN when not asked for.
            d.authorized_operations = if req.include_authorized_operations { group_operations } else { i32::MIN };
            match c.describe(id.0.as_str()) {
                Err(e) => d.error_code = code(e),
                Ok(None) => d.group_state = s(State::Dead.name()),
                Ok(Some(g)) => {
                    let stable = g.state == State::Stable;
                    let protocol = g.protocol.clone().unwrap_or_default();
                    d.group_state = s(g.state.name());
                    d.protocol_type = s(g.protocol_type.as_deref().unwrap_or(""));
                    d.protocol_data = s(if stable { &protocol } else { "" });
                    d.members = g
                        .members
                        .values()
                        .map(|m| {
                            let mut dm = DescribedGroupMember::default();
                            dm.member_id = s(&m.id);
                            dm.group_instance_id = m.instance_id.as_deref().map(s);
                            dm.client_id = s(&m.client_id);
                            dm.client_host = s(&m.client_host);
                            if stable {
                                dm.member_metadata = m.protocols.iter().find(|(n, _)| *n == protocol).map(|(_, b)| b.clone()).unwrap_or_default();
                                dm.member_assignment = m.assignment.clone();
                            }
                            dm
                        })
                        .collect();
                }
            }
            r.groups.push(d);
        }
    });
    r
}

/// DeleteGroups: each Empty group's offsets and metadata are tombstoned; answered once replicated.
pub fn delete_groups(node: &Node, (version, cid): (i16, i32), req: DeleteGroupsRequest, denied: &super::authz::Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let mut r = DeleteGroupsResponse::default();
    let mut tickets = Vec::new();
    with_groups(node, now, out, |_, c, w| {
        for (i, id) in req.groups_names.iter().enumerate() {
            let mut d = DeletableGroupResult::default();
            d.group_id = id.clone();
            match denied.groups.get(id.0.as_str()).map_or_else(|| c.delete_group(id.0.as_str(), now, w), |refused| Err(*refused)) {
                Err(e) => d.error_code = code(e),
                Ok(Pending::Now(())) => {}
                Ok(Pending::Wait(t)) => tickets.push((t, i)),
            }
            r.results.push(d);
        }
    });
    let reply = GroupReply::DeleteGroups { version, cid, response: r, slots: tickets.clone() };
    wait_all(At { node, out }, reply, tickets.into_iter().map(|(t, _)| t).collect(), group_request_wait_ms_max)
}

/// OffsetDelete: refused (GROUP_SUBSCRIBED_TO_TOPIC) for topics the group consumes, and per
/// partition for a topic the caller may not READ (`denied`).
pub fn offset_delete(node: &Node, (version, cid): (i16, i32), req: OffsetDeleteRequest, denied: &super::authz::Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let mut r = OffsetDeleteResponse::default();
    let mut parts = Vec::new();
    for t in &req.topics {
        let mut tr = OffsetDeleteResponseTopic::default();
        tr.name = t.name.clone();
        let refused = denied.of(t.name.0.as_str()).map(|e| e.kafka_error(true).code());
        for p in &t.partitions {
            let mut pr = OffsetDeleteResponsePartition::default();
            pr.partition_index = p.partition_index;
            match refused {
                Some(code) => pr.error_code = code,
                None => parts.push((t.name.0.to_string(), p.partition_index)),
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    let result = with_groups(node, now, out, |_, c, w| c.delete_offsets(req.group_id.0.as_str(), parts, now, w));
    let pending = match result {
        Ok(p) => p.map(|()| Answer::Written(Ok(()))),
        Err(e) => Pending::Now(Answer::Written(Err(e))),
    };
    finish(At { node, out }, GroupReply::OffsetDelete { version, cid, response: r }, pending, group_request_wait_ms_max)
}

impl<T> Pending<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Pending<U> {
        match self {
            Pending::Now(t) => Pending::Now(f(t)),
            Pending::Wait(t) => Pending::Wait(t),
        }
    }
}

/// Where a request's waiting happens: the node, and the actions its decision collected.
pub(super) struct At<'a> {
    pub(super) node: &'a Node,
    pub(super) out: &'a mut Vec<Action>,
}

pub(super) fn finish(at: At<'_>, reply: GroupReply, pending: Pending<Answer>, wait_ms: u64) -> Result<Outcome, String> {
    match pending {
        Pending::Now(a) => Ok(Outcome::Reply(reply.finish(&[a]))),
        Pending::Wait(t) => wait_all(at, reply, vec![t], wait_ms),
    }
}

/// Waits for every ticket; answered at once if this decision answered them already (a commit
/// on a one-replica offsets partition is replicated as it is appended).
fn wait_all(at: At<'_>, reply: GroupReply, tickets: Vec<Ticket>, wait_ms: u64) -> Result<Outcome, String> {
    if tickets.is_empty() {
        return Ok(Outcome::Reply(reply.finish(&[])));
    }
    let mut waiting = Waiting::group(reply, tickets, wait_ms);
    waiting.take_answers(at.out);
    Ok(waiting.poll(at.node, false).unwrap_or(Outcome::Wait(waiting)))
}
