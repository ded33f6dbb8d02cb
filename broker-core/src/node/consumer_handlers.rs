//! KIP-848's APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe. Field-by-field
//! translation between the wire (topics by id) and the coordinator (topics by name, every
//! decision `group::consumer`'s); a topic id this node does not know is left out of what a
//! member says it owns, as a deleted topic is. The caller's DESCRIBE on topics, as `authz`
//! answers it, goes with a heartbeat (its regex's matches are cut to it) and filters a
//! describe (a group holding a topic the caller may not see is refused, as Kafka 4 does);
//! only the topics in question are checked (a regex's matches, a described group's), never
//! every topic of the image, and a heartbeat without a regex costs no check.

use super::authz::{regex, Access};
use super::group_handlers::{finish, group_operations, with_groups, At};
use super::group_reply::{code, GroupReply};
use super::{Node, Outcome};
use crate::broker::{Action, Broker};
use crate::client::assignor::TopicPartitions;
use crate::group::consumer::{ConsumerGroup, Heartbeat};
use crate::constants::group_request_wait_ms_max;
use crate::group::{Answer, Coordinator};
use crate::kafka::Code;
use crate::protocol::{s, topic_name, uuid};
use crate::security::acl::Caller;
use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::consumer_group_describe_response::{self as describe, ConsumerGroupDescribeResponse, DescribedGroup};
use kafka_protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kafka_protocol::messages::consumer_group_heartbeat_response::{self as heartbeat, ConsumerGroupHeartbeatResponse};
use std::collections::{BTreeMap, BTreeSet};

/// The topics of the image by name, with their ids.
struct Topics {
    ids: BTreeMap<String, uuid::Uuid>,
}

/// The image's topic ids by name, as the wire carries them.
pub(super) fn topic_ids(b: &crate::broker::Broker) -> BTreeMap<String, uuid::Uuid> {
    b.image().topics.iter().map(|(n, t)| (n.clone(), uuid(t.id))).collect()
}

impl Topics {
    fn of(node: &Node) -> Topics {
        Topics { ids: topic_ids(&node.broker()) }
    }

    fn name_of(&self, id: uuid::Uuid) -> Option<&String> {
        self.ids.iter().find(|(_, x)| **x == id).map(|(n, _)| n)
    }

    /// Partitions by topic id, for the wire.
    fn by_id<'a>(&'a self, tps: &'a TopicPartitions) -> impl Iterator<Item = (&'a String, uuid::Uuid, Vec<i32>)> + 'a {
        tps.iter().filter_map(|(t, ps)| Some((t, *self.ids.get(t)?, ps.clone())))
    }
}

/// What the heartbeat's regex (else the member's) matches now that `caller` may DESCRIBE
/// ([`Heartbeat::regex_allowed`]); None when every check lets the caller through. Only the
/// matches are checked: a member without a regex costs no check at all. A static member
/// rejoining under a new member id without naming its regex is looked up by that id, finds
/// none and is given none of its matches until its next heartbeat (fail closed).
fn regex_allowed(b: &Broker, c: &Coordinator, group: &str, hb: &Heartbeat, caller: Option<&Caller>) -> Option<BTreeSet<String>> {
    let access = caller.map(|x| Access::of(b, x));
    let a = regex::restricted(access.as_ref())?;
    Some(regex::describable(a, c.consumer_regex_matches(group, &hb.member_id, hb.regex.as_deref())))
}

/// ConsumerGroupHeartbeat (v0: the coordinator names a joining member; v1, KIP-1082: the
/// member names itself), answered once what it changed in the group is replicated.
pub fn consumer_group_heartbeat(node: &Node, (version, cid): (i16, i32), (client_id, peer): (&str, Option<std::net::IpAddr>), req: ConsumerGroupHeartbeatRequest, caller: Option<&Caller>, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let topics = Topics::of(node);
    let owned = req.topic_partitions.as_ref().map(|tps| {
        let mut owned = TopicPartitions::new();
        for t in tps {
            if let Some(name) = topics.name_of(t.topic_id) {
                let ps = owned.entry(name.clone()).or_default();
                ps.extend(&t.partitions);
                ps.sort_unstable();
                ps.dedup();
            }
        }
        owned
    });
    let hb = Heartbeat {
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|x| x.to_string()),
        rack: req.rack_id.as_ref().map(|x| x.to_string()),
        client_id: client_id.to_string(),
        client_host: peer.map_or(String::new(), |ip| format!("/{ip}")),
        rebalance_timeout_ms: (req.rebalance_timeout_ms >= 0).then_some(req.rebalance_timeout_ms as u64),
        topics: req.subscribed_topic_names.as_ref().map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
        regex: req.subscribed_topic_regex.as_ref().map(|x| x.to_string()),
        regex_allowed: None,
        assignor: req.server_assignor.as_ref().map(|x| x.to_string()),
        owned,
    };
    let reply = GroupReply::ConsumerHeartbeat { version, cid };
    if let Err((e, why)) = hb.validate(version) {
        let r = ConsumerGroupHeartbeatResponse::default().with_error_code(code(e)).with_error_message(Some(s(why)));
        return Ok(Outcome::Reply(crate::protocol::Response::new(crate::kafka::ApiKey::ConsumerGroupHeartbeat, version, cid, r)));
    }
    let group = req.group_id.0.to_string();
    let pending = with_groups(node, now, out, |b, c, w| {
        let hb = Heartbeat { regex_allowed: regex_allowed(b, c, &group, &hb, caller), ..hb };
        c.consumer_heartbeat(&group, hb, now, w)
    });
    finish(At { node, out }, reply, pending, group_request_wait_ms_max)
}

/// The response to a heartbeat the coordinator answered.
pub(super) fn heartbeat_response(answer: Option<&Answer>) -> ConsumerGroupHeartbeatResponse {
    let mut r = ConsumerGroupHeartbeatResponse::default();
    match answer {
        Some(Answer::Consumer(Ok(a))) => {
            r.member_id = Some(s(&a.member_id));
            r.member_epoch = a.member_epoch;
            r.heartbeat_interval_ms = i32::try_from(a.heartbeat_interval_ms).unwrap_or(i32::MAX);
            r.assignment = a.assignment.as_ref().map(|tps| {
                let each = tps.iter().map(|(id, ps)| heartbeat::TopicPartitions::default().with_topic_id(uuid(*id)).with_partitions(ps.clone()));
                heartbeat::Assignment::default().with_topic_partitions(each.collect())
            });
        }
        Some(Answer::Consumer(Err(e))) => r.error_code = code(*e),
        _ => r.error_code = code(Code::UnknownServerError),
    }
    r
}

/// ConsumerGroupDescribe: each group's epochs, assignor and members, each member's current
/// and target assignment. A group that is not a consumer group here is GROUP_ID_NOT_FOUND; one
/// whose assignments or targets hold a topic `caller` may not DESCRIBE is
/// TOPIC_AUTHORIZATION_FAILED, with nothing of it (Kafka 4's KAFKA-18813).
pub fn consumer_group_describe(node: &Node, req: ConsumerGroupDescribeRequest, caller: Option<&Caller>, now: u64, out: &mut Vec<Action>) -> ConsumerGroupDescribeResponse {
    let topics = Topics::of(node);
    let mut r = ConsumerGroupDescribeResponse::default();
    with_groups(node, now, out, |b, c, _| {
        let access = caller.map(|x| Access::of(b, x));
        let restricted = regex::restricted(access.as_ref());
        for id in &req.group_ids {
            let mut d = DescribedGroup::default();
            d.group_id = id.clone();
            d.authorized_operations = if req.include_authorized_operations { group_operations } else { i32::MIN };
            match c.consumer_group(id.0.as_str()) {
                Err(e) => d.error_code = code(e),
                Ok(None) => {
                    d.error_code = code(Code::GroupIdNotFound);
                    d.error_message = Some(s(&format!("Group {} not found.", id.0.as_str())));
                }
                Ok(Some(g)) if restricted.is_some_and(|a| !regex::may_describe_all(a, held(g, &topics).into_iter())) => {
                    d.error_code = code(Code::TopicAuthorizationFailed);
                    d.error_message = Some(s(regex::undescribable_group));
                }
                Ok(Some(g)) => describe_group(&mut d, g, &topics),
            }
            r.groups.push(d);
        }
    });
    r
}

/// The topics of `g`'s members' assignments and targets that still exist (a deleted one is
/// never described): those a describe of `g` must let its caller DESCRIBE, as Kafka checks.
fn held<'g>(g: &'g ConsumerGroup, topics: &Topics) -> BTreeSet<&'g String> {
    let assigned = g.members.values().flat_map(|m| m.assignment.assigned.keys());
    assigned.chain(g.target.values().flat_map(|t| t.keys())).filter(|t| topics.ids.contains_key(*t)).collect()
}

fn describe_group(d: &mut DescribedGroup, g: &ConsumerGroup, topics: &Topics) {
    let assignment = |tps: &TopicPartitions| {
        let each = topics.by_id(tps).map(|(name, id, ps)| describe::TopicPartitions::default().with_topic_id(id).with_topic_name(topic_name(name)).with_partitions(ps));
        describe::Assignment::default().with_topic_partitions(each.collect())
    };
    d.group_state = s(g.state().name());
    d.group_epoch = g.epoch;
    d.assignment_epoch = g.target_epoch;
    d.assignor_name = s(g.assignor.name());
    d.members = g
        .members
        .iter()
        .map(|(id, m)| {
            let mut dm = describe::Member::default();
            dm.member_id = s(id);
            dm.instance_id = m.instance_id.as_deref().map(s);
            dm.rack_id = m.rack.as_deref().map(s);
            dm.member_epoch = m.assignment.epoch;
            dm.client_id = s(&m.client_id);
            dm.client_host = s(&m.client_host);
            dm.subscribed_topic_names = m.topics.iter().map(|t| topic_name(t)).collect();
            dm.subscribed_topic_regex = m.regex.as_deref().map(s);
            dm.assignment = assignment(&m.assignment.assigned);
            dm.target_assignment = assignment(&g.target.get(id).cloned().unwrap_or_default());
            // KIP-1099's member type (v1): 0 a classic member (KIP-848's migration), 1 a
            // consumer-protocol one.
            dm.member_type = if m.classic.is_some() { 0 } else { 1 };
            dm
        })
        .collect();
}

/// A ConsumerGroupDescribe answered without the groups the caller may not describe, given
/// them back with their errors.
pub(super) fn consumer_group_describe_after(resp: &mut ConsumerGroupDescribeResponse, refused: &[super::authz::Refused]) {
    resp.groups.extend(refused.iter().map(|(g, code, _)| DescribedGroup::default().with_group_id(s(g).into()).with_error_code(code.code())));
}
