//! KIP-932's share-group offsets admin APIs on the wire: DescribeShareGroupOffsets,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets, at the group's coordinator (clients find
//! it with FindCoordinator, as for any group request). Field-by-field translation of the
//! coordinator's decisions (`group::share_offsets`) and of the authorization's refusals
//! (`authz::share`): a topic the caller may not see or read is answered
//! TOPIC_AUTHORIZATION_FAILED (or, in a listing of every topic, left out) and never reaches the
//! coordinator. No decision is made here; Alter and Delete are answered once their write is
//! replicated.

use super::authz::Denied;
use super::group_handlers::{finish, with_groups, At};
use super::group_reply::{code, GroupReply};
use super::{Node, Outcome};
use crate::broker::Action;
use crate::constants::{group_request_wait_ms_max, share_offsets_alter_partitions_max, share_offsets_describe_groups_max};
use crate::group::share_offsets::{uninitialized_start_offset, Asked};
use crate::group::{Answer, Pending};
use crate::kafka::Code;
use crate::protocol::{topic_name, uuid};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::messages::alter_share_group_offsets_request::AlterShareGroupOffsetsRequest;
use kafka_protocol::messages::alter_share_group_offsets_response::{AlterShareGroupOffsetsResponse, AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic};
use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequest;
use kafka_protocol::messages::delete_share_group_offsets_response::{DeleteShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponseTopic};
use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest;
use std::collections::{BTreeMap, BTreeSet};
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponse, DescribeShareGroupOffsetsResponseGroup as DescribedGroup, DescribeShareGroupOffsetsResponsePartition as DescribedPartition,
    DescribeShareGroupOffsetsResponseTopic as DescribedTopic,
};

/// Kafka's standard text for a code these APIs answer (its `Errors.message()`), None for
/// others: a response carries it beside its error as Kafka's `getErrorResponse` does. Static
/// text: nothing is allocated per partition or topic refused.
fn message(c: Code) -> Option<StrBytes> {
    let text = match c {
        Code::GroupIdNotFound => "The group id does not exist.",
        Code::NonEmptyGroup => "The group is not empty.",
        Code::GroupAuthorizationFailed => "Group authorization failed.",
        Code::TopicAuthorizationFailed => "Topic authorization failed.",
        Code::UnknownTopicOrPartition => "This server does not host this topic-partition.",
        Code::NotCoordinator => "This is not the correct coordinator.",
        Code::CoordinatorNotAvailable => "The coordinator is not available.",
        Code::CoordinatorLoadInProgress => "The coordinator is loading and hence can't process requests.",
        Code::InvalidGroupId => "The configured groupId is invalid.",
        Code::RecordListTooLarge => "The request included message batch larger than the configured segment size on the server.",
        Code::InvalidRequest => "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
        Code::RequestTimedOut => "The request timed out.",
        Code::UnknownServerError => "The server experienced an unexpected error when processing the request.",
        _ => return None,
    };
    Some(StrBytes::from_static_str(text))
}

/// What Delete answers a topic without any state (Kafka's text for this case).
const nothing_to_delete: &str = "There is no offset information to delete.";

/// DescribeShareGroupOffsets: per group (GROUP_AUTHORIZATION_FAILED for one the caller may not
/// DESCRIBE; INVALID_REQUEST for those past `share_offsets_describe_groups_max`), each named
/// topic's partitions, or every topic with an initialized state (null topics) without those
/// the caller may not DESCRIBE. A group's error comes alone, without topics (as Kafka's); a
/// refused topic has the zero id, whether or not it exists.
pub fn describe(node: &Node, req: DescribeShareGroupOffsetsRequest, denied: &Denied, now: u64, out: &mut Vec<Action>) -> DescribeShareGroupOffsetsResponse {
    let ids = crate::node::consumer_handlers::topic_ids(&node.broker());
    let mut r = DescribeShareGroupOffsetsResponse::default();
    // Refused named topics are answered here; the others are the coordinator's, all groups
    // under one lock.
    let mut asks = Vec::new();
    for (i, g) in req.groups.iter().enumerate() {
        let group = g.group_id.0.to_string();
        if i >= share_offsets_describe_groups_max || denied.groups.contains_key(&group) {
            continue;
        }
        let asked: Vec<(String, Vec<i32>)> = g.topics.iter().flatten().filter(|t| !denied.topics.contains_key(t.topic_name.as_str())).map(|t| (t.topic_name.to_string(), t.partitions.clone())).collect();
        asks.push((i, group, g.topics.is_some().then_some(asked)));
    }
    let mut decided: Vec<(usize, Result<_, Code>)> = with_groups(node, now, out, |_, c, _| asks.iter().map(|(i, group, asked)| (*i, c.describe_share_offsets(group, asked.as_deref()))).collect());
    decided.reverse();
    for (i, g) in req.groups.into_iter().enumerate() {
        let d = DescribedGroup::default().with_group_id(g.group_id.clone());
        let refusal = match denied.groups.get(g.group_id.as_str()) {
            _ if i >= share_offsets_describe_groups_max => Some(Code::InvalidRequest),
            Some(c) => Some(*c),
            None => None,
        };
        let topics = match (refusal, decided.last().filter(|(at, _)| *at == i)) {
            (Some(e), _) => Err(e),
            (None, Some(_)) => decided.pop().expect("just seen").1,
            (None, None) => Err(Code::UnknownServerError),
        };
        let topics = match topics {
            Err(e) => {
                r.groups.push(d.with_error_code(code(e)).with_error_message(message(e)));
                continue;
            }
            Ok(topics) => topics,
        };
        let mut d = d;
        let each = topics.into_iter().filter(|(t, _, _)| !denied.topics.contains_key(t)).map(|(t, id, offsets)| {
            let parts = offsets.iter().map(|o| DescribedPartition::default().with_partition_index(o.partition).with_start_offset(o.start_offset).with_leader_epoch(o.leader_epoch));
            // A topic that does not exist has the zero id (Kafka's); one known by name has its own.
            let id = id.map(uuid).or_else(|| ids.get(&t).copied()).unwrap_or_default();
            DescribedTopic::default().with_topic_name(topic_name(&t)).with_topic_id(id).with_partitions(parts.collect())
        });
        d.topics = each.collect();
        let c = Code::TopicAuthorizationFailed;
        for t in g.topics.iter().flatten().filter(|t| denied.topics.contains_key(t.topic_name.as_str())) {
            let parts = t.partitions.iter().map(|p| DescribedPartition::default().with_partition_index(*p).with_start_offset(uninitialized_start_offset).with_error_code(code(c)).with_error_message(message(c)));
            d.topics.push(DescribedTopic::default().with_topic_name(t.topic_name.clone()).with_partitions(parts.collect()));
        }
        r.groups.push(d);
    }
    r
}

/// AlterShareGroupOffsets: each partition's start offset set (of an empty share group),
/// answered once written; a topic the caller may not READ is TOPIC_AUTHORIZATION_FAILED per
/// partition (zero id), a group-level refusal the top-level error alone (no topics). A
/// partition named twice is set to its last offset and both get its result; more than
/// `share_offsets_alter_partitions_max` partitions is INVALID_REQUEST before anything is built.
pub fn alter(node: &Node, (version, cid): (i16, i32), req: AlterShareGroupOffsetsRequest, denied: &Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.0.to_string();
    let asked_count = req.topics.iter().map(|t| t.partitions.len()).fold(0usize, usize::saturating_add);
    let decided = match asked_count > share_offsets_alter_partitions_max {
        true => Err(Code::InvalidRequest),
        false => {
            let mut asked = Asked::new();
            for t in req.topics.iter().filter(|t| !denied.topics.contains_key(t.topic_name.as_str())) {
                for p in &t.partitions {
                    asked.insert((t.topic_name.as_str(), p.partition_index), p.start_offset);
                }
            }
            with_groups(node, now, out, |_, c, w| c.alter_share_offsets(&group, &asked, now, w)).map(|(results, ticket)| (asked.into_keys().zip(results).collect::<BTreeMap<_, _>>(), ticket))
        }
    };
    let mut response = AlterShareGroupOffsetsResponse::default();
    let (results, ticket) = match decided {
        Err(e) => {
            let response = response.with_error_code(code(e)).with_error_message(message(e));
            return finish(At { node, out }, GroupReply::AlterShareOffsets { version, cid, response, slots: Vec::new() }, now_answer(), group_request_wait_ms_max);
        }
        Ok(d) => d,
    };
    let ids = crate::node::consumer_handlers::topic_ids(&node.broker());
    let mut slots = Vec::new();
    for (ti, t) in req.topics.iter().enumerate() {
        let name = t.topic_name.as_str();
        let refused = denied.topics.contains_key(name);
        let parts = t.partitions.iter().enumerate().map(|(pi, p)| {
            let result = match refused {
                true => Err(Code::TopicAuthorizationFailed),
                false => results.get(&(name, p.partition_index)).copied().unwrap_or(Err(Code::UnknownServerError)),
            };
            let part = AlterShareGroupOffsetsResponsePartition::default().with_partition_index(p.partition_index);
            match result {
                Ok(()) => {
                    slots.push((ti, pi));
                    part
                }
                Err(e) => part.with_error_code(code(e)).with_error_message(message(e)),
            }
        });
        let parts = parts.collect();
        let id = if refused { Default::default() } else { ids.get(name).copied().unwrap_or_default() };
        response.responses.push(AlterShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name.clone()).with_topic_id(id).with_partitions(parts));
    }
    finish(At { node, out }, GroupReply::AlterShareOffsets { version, cid, response, slots }, ticket.map_or_else(now_answer, Pending::Wait), group_request_wait_ms_max)
}

/// DeleteShareGroupOffsets: each named topic's states deleted (of an empty share group),
/// answered once written; a topic the caller may not READ is TOPIC_AUTHORIZATION_FAILED (zero
/// id), a group-level refusal the top-level error alone (no topics). A topic named twice is
/// deleted once, both answered its result.
pub fn delete(node: &Node, (version, cid): (i16, i32), req: DeleteShareGroupOffsetsRequest, denied: &Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.0.to_string();
    let asked: BTreeSet<&str> = req.topics.iter().map(|t| t.topic_name.as_str()).filter(|t| !denied.topics.contains_key(*t)).collect();
    let decided = with_groups(node, now, out, |_, c, w| c.delete_share_offsets(&group, &asked, now, w));
    let mut response = DeleteShareGroupOffsetsResponse::default();
    let (results, ticket) = match decided {
        Err(e) => {
            let response = response.with_error_code(code(e)).with_error_message(message(e));
            return finish(At { node, out }, GroupReply::DeleteShareOffsets { version, cid, response, slots: Vec::new() }, now_answer(), group_request_wait_ms_max);
        }
        Ok((results, ticket)) => (asked.iter().copied().zip(results).collect::<BTreeMap<_, _>>(), ticket),
    };
    let ids = crate::node::consumer_handlers::topic_ids(&node.broker());
    let mut slots = Vec::new();
    for (ti, t) in req.topics.iter().enumerate() {
        let name = t.topic_name.as_str();
        let mut r = DeleteShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name.clone());
        let result = match denied.topics.contains_key(name) {
            true => Err(Code::TopicAuthorizationFailed),
            false => {
                r.topic_id = ids.get(name).copied().unwrap_or_default();
                results.get(name).copied().unwrap_or(Err(Code::UnknownServerError))
            }
        };
        match result {
            Ok(()) => slots.push(ti),
            Err(Code::UnknownTopicOrPartition) => r = r.with_error_code(code(Code::UnknownTopicOrPartition)).with_error_message(Some(StrBytes::from_static_str(nothing_to_delete))),
            Err(e) => r = r.with_error_code(code(e)).with_error_message(message(e)),
        }
        response.responses.push(r);
    }
    finish(At { node, out }, GroupReply::DeleteShareOffsets { version, cid, response, slots }, ticket.map_or_else(now_answer, Pending::Wait), group_request_wait_ms_max)
}

/// What a request that writes nothing waits on: nothing.
fn now_answer() -> Pending<Answer> {
    Pending::Now(Answer::ShareState(Ok(None)))
}

/// The write's error (None: it was replicated), from the answer the request waited for.
fn write_error(answer: Option<&Answer>) -> Option<Code> {
    match answer {
        Some(Answer::ShareState(Ok(_)) | Answer::Written(Ok(()))) => None,
        Some(Answer::ShareState(Err(e)) | Answer::Written(Err(e))) => Some(*e),
        _ => Some(Code::UnknownServerError),
    }
}

/// An Alter's response once its write is answered: the slots that waited get its error.
pub(super) fn alter_finished(mut response: AlterShareGroupOffsetsResponse, slots: Vec<(usize, usize)>, answer: Option<&Answer>) -> AlterShareGroupOffsetsResponse {
    if let Some(e) = write_error(answer) {
        for (ti, pi) in slots {
            response.responses[ti].partitions[pi].error_code = code(e);
            response.responses[ti].partitions[pi].error_message = message(e);
        }
    }
    response
}

/// A Delete's response once its write is answered: the topics that waited get its error.
pub(super) fn delete_finished(mut response: DeleteShareGroupOffsetsResponse, slots: Vec<usize>, answer: Option<&Answer>) -> DeleteShareGroupOffsetsResponse {
    if let Some(e) = write_error(answer) {
        for ti in slots {
            response.responses[ti].error_code = code(e);
            response.responses[ti].error_message = message(e);
        }
    }
    response
}
