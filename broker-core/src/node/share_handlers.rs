//! KIP-932's membership and state APIs: ShareGroupHeartbeat and ShareGroupDescribe (the
//! group coordinator's `group::share`), ReadShareGroupState and WriteShareGroupState (a
//! share-partition leader asking its group's coordinator, `group::share_state`), and the glue
//! that carries the share-partition leader's (`share::leader`) state requests out as
//! [`Action::ShareState`] and their answers back in. Field-by-field translation; every decision
//! is the coordinator's or the share-partition leader's. ShareFetch and ShareAcknowledge are
//! `share_fetch`'s.

use super::group_handlers::{finish, group_operations, with_groups, At};
use super::group_reply::{code, GroupReply};
use super::{Node, Outcome};
use crate::broker::{Action, Answer as NodeAnswer, Broker, Level, Ticket};
use crate::constants::group_request_wait_ms_max;
use crate::group::share::ShareHeartbeat;
use crate::group::share_state::{ShareKey, Stored};
use crate::group::{offsets_topic, partition_for, Answer};
use crate::kafka::Code;
use crate::protocol::{s, topic_name, uuid};
use crate::share::leader::{Out, PartKey, Send, Shares, What};
use crate::share::partition::{Limits, RecordState, Snapshot, StateBatch};
use kafka_protocol::messages::read_share_group_state_request::{self as read_req, ReadShareGroupStateRequest};
use kafka_protocol::messages::read_share_group_state_response::{self as read_resp, ReadShareGroupStateResponse};
use kafka_protocol::messages::share_group_describe_request::ShareGroupDescribeRequest;
use kafka_protocol::messages::share_group_describe_response::{self as describe, ShareGroupDescribeResponse};
use kafka_protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use kafka_protocol::messages::share_group_heartbeat_response::{self as heartbeat, ShareGroupHeartbeatResponse};
use kafka_protocol::messages::write_share_group_state_request::{self as write_req, WriteShareGroupStateRequest};
use kafka_protocol::messages::write_share_group_state_response::{self as write_resp, WriteShareGroupStateResponse};
use kafka_protocol::messages::ApiKey;

/// A node's share-partition leader, with the broker's settings.
pub fn new_shares(config: &crate::broker::BrokerConfig) -> Shares {
    let g = &config.groups;
    let limits = Limits { lock_ms: g.share_record_lock_duration_ms, delivery_limit: g.share_delivery_count_limit, max_locks: g.share_partition_max_record_locks };
    let mut shares = Shares::new(limits, g.share_max_share_sessions, g.share_session_timeout_ms);
    shares.tells_before_write = config.share_tells_before_write();
    shares.members_check_ms = g.share_heartbeat_interval_ms;
    shares
}

/// ShareGroupHeartbeat: answered once what it changed in the group is replicated.
pub fn share_group_heartbeat(node: &Node, (version, cid): (i16, i32), (client_id, peer): (&str, Option<std::net::IpAddr>), req: ShareGroupHeartbeatRequest, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let hb = ShareHeartbeat {
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        rack: req.rack_id.as_ref().map(|x| x.to_string()),
        client_id: client_id.to_string(),
        client_host: peer.map_or(String::new(), |ip| format!("/{ip}")),
        topics: req.subscribed_topic_names.as_ref().map(|ts| ts.iter().map(|t| t.0.to_string()).collect()),
    };
    let group = req.group_id.0.to_string();
    if let Err((e, why)) = hb.validate() {
        let r = ShareGroupHeartbeatResponse::default().with_error_code(code(e)).with_error_message(Some(s(why)));
        return Ok(Outcome::Reply(crate::protocol::Response::new(ApiKey::ShareGroupHeartbeat, version, cid, r)));
    }
    let reply = GroupReply::ShareHeartbeat { version, cid, group: group.clone() };
    let pending = with_groups(node, now, out, |_, c, w| c.share_heartbeat(&group, hb, now, w));
    finish(At { node, out }, reply, pending, group_request_wait_ms_max)
}

/// The response to a share heartbeat the coordinator answered.
pub(super) fn heartbeat_response(group: &str, answer: Option<&Answer>) -> ShareGroupHeartbeatResponse {
    let mut r = ShareGroupHeartbeatResponse::default();
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
        Some(Answer::Consumer(Err(e))) => {
            r.error_code = code(*e);
            if *e == Code::GroupIdNotFound {
                r.error_message = Some(s(&format!("Group {group} is not a share group.")));
            }
        }
        _ => r.error_code = code(Code::UnknownServerError),
    }
    r
}

/// ShareGroupDescribe: each share group's epochs and members with their assignments.
pub fn share_group_describe(node: &Node, req: ShareGroupDescribeRequest, now: u64, out: &mut Vec<Action>) -> ShareGroupDescribeResponse {
    let ids = crate::node::consumer_handlers::topic_ids(&node.broker());
    let mut r = ShareGroupDescribeResponse::default();
    with_groups(node, now, out, |_, c, _| {
        for id in &req.group_ids {
            let mut d = describe::DescribedGroup::default();
            d.group_id = id.clone();
            d.authorized_operations = if req.include_authorized_operations { group_operations } else { i32::MIN };
            match c.share_group(id.0.as_str()) {
                Err(e) => d.error_code = code(e),
                Ok(None) => {
                    d.error_code = code(Code::GroupIdNotFound);
                    d.error_message = Some(s(&format!("Group {} not found.", id.0.as_str())));
                }
                Ok(Some(g)) => {
                    (d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) = (s(g.state()), g.epoch, g.assignment_epoch, s("simple"));
                    d.members = g
                        .members
                        .iter()
                        .map(|(mid, m)| {
                            let mut dm = describe::Member::default();
                            (dm.member_id, dm.rack_id, dm.member_epoch) = (s(mid), m.rack.as_deref().map(s), m.epoch);
                            (dm.client_id, dm.client_host) = (s(&m.client_id), s(&m.client_host));
                            dm.subscribed_topic_names = m.topics.iter().map(|t| topic_name(t)).collect();
                            let each = m.assigned.iter().filter_map(|(t, ps)| Some(describe::TopicPartitions::default().with_topic_id(*ids.get(t)?).with_topic_name(topic_name(t)).with_partitions(ps.clone())));
                            dm.assignment = describe::Assignment::default().with_topic_partitions(each.collect());
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

/// The node currently coordinating `group` (the leader of its offsets partition), if any.
pub(super) fn coordinator_of(b: &Broker, group: &str) -> Option<i32> {
    let t = b.image().topics.get(offsets_topic)?;
    let info = t.partitions.get(partition_for(group, t.partitions.len() as i32) as usize)?;
    b.image().brokers.get(&info.leader).filter(|x| !x.fenced).map(|x| x.id)
}

/// What a share-partition leader's call asks of the shell, as actions.
pub(super) fn emit(out: Out, actions: &mut Vec<Action>) {
    actions.extend(out.sends.into_iter().map(Action::ShareState));
    actions.extend(out.answers.into_iter().map(|(t, r)| Action::Answer { ticket: Ticket::Share(t), answer: NodeAnswer::Share(r) }));
    actions.extend(out.lines.into_iter().map(|l| Action::Log(Level::Info, l)));
    if out.wake {
        actions.push(Action::Wake);
    }
}

/// Where a share-partition never initialized starts (the group's `share.auto.offset.reset`:
/// `latest` by default, the high watermark; `earliest`, the log start; `by_duration:`, the
/// first record with a timestamp at or after `now` less the duration, found in the time index
/// as ListOffsets finds it, else the high watermark, as Kafka does), and the log start.
fn start_of(b: &Broker, (group, topic, p): &PartKey, now: u64) -> Option<(i64, i64)> {
    use crate::metadata::group_configs::{share_auto_offset_reset, OffsetReset};
    let bounds = b.share_bounds(topic, *p).ok()?;
    let reset = b.image().group_config(group, share_auto_offset_reset).and_then(OffsetReset::parse).unwrap_or(OffsetReset::Latest);
    let start = match reset {
        OffsetReset::Earliest => bounds.log_start,
        OffsetReset::Latest => bounds.high_watermark,
        OffsetReset::ByDurationMs(ms) => {
            let since = i64::try_from(now.saturating_sub(ms)).unwrap_or(i64::MAX);
            match b.list_offset(topic, *p, since, -1, false) {
                Ok((_, offset)) if offset >= 0 => offset,
                _ => bounds.high_watermark,
            }
        }
    };
    Some((start, bounds.log_start))
}

/// How long a member of `group` holds what it acquires: the group's
/// `share.record.lock.duration.ms` (kept within Kafka's bounds when it was set), else the
/// broker's `group.share.record.lock.duration.ms`.
pub(super) fn lock_ms_of(b: &Broker, group: &str) -> u64 {
    use crate::constants::{share_record_lock_duration_ms_max as max, share_record_lock_duration_ms_min as min};
    let set = b.image().group_config(group, crate::metadata::group_configs::share_record_lock_duration_ms).and_then(|v| v.parse::<u64>().ok());
    set.map_or(b.config().groups.share_record_lock_duration_ms, |ms| ms.clamp(min, max))
}

/// The answer of a share-state request the shell sent.
pub fn state_answered(b: &mut Broker, shares: &mut Shares, request: u64, result: Result<Option<Stored>, Code>, now: u64) -> Vec<Action> {
    let mut out = Out::default();
    let locate = |g: &str| coordinator_of(b, g);
    shares.answered(request, result, &|k| start_of(b, k, now), now, &mut out);
    shares.flush(&locate, now, &mut out);
    shares.take_answers(&mut out);
    let mut actions = Vec::new();
    emit(out, &mut actions);
    actions
}

/// A client connection closed: the share sessions last used on it end (their records go back).
pub fn connection_closed(b: &mut Broker, shares: &mut Shares, connection: u64, now: u64) -> Vec<Action> {
    let mut out = Out::default();
    let locate = |g: &str| coordinator_of(b, g);
    shares.connection_closed(connection, &locate, now, &mut out);
    let mut actions = Vec::new();
    emit(out, &mut actions);
    actions
}

/// The share-partition leader's timers.
pub fn tick(b: &mut Broker, shares: &mut Shares, now: u64) -> Vec<Action> {
    let mut out = Out::default();
    let locate = |g: &str| coordinator_of(b, g);
    shares.tick(&|t, p| b.share_bounds(t, p).ok().map(|x| x.leader_epoch), &locate, now, &mut out);
    let mut actions = Vec::new();
    emit(out, &mut actions);
    actions
}

fn stored_of(state_epoch: i32, leader_epoch: i32, start: i64, batches: impl Iterator<Item = (i64, i64, i8, i16)>) -> Result<Stored, Code> {
    let batches = batches.map(|(first, last, state, count)| RecordState::from_wire(state).map(|state| StateBatch { first, last, state, count })).collect::<Option<Vec<_>>>().ok_or(Code::InvalidRequest)?;
    Ok(Stored { state_epoch, leader_epoch, snapshot: Snapshot { start, batches } })
}

/// The request a [`Send`] goes out as.
pub enum StateRequest {
    Read(ReadShareGroupStateRequest),
    Write(WriteShareGroupStateRequest),
    Members(ShareGroupDescribeRequest),
}

pub fn state_request(send: &Send) -> StateRequest {
    let group = s(&send.group);
    match &send.what {
        What::Read { leader_epoch } => {
            let p = read_req::PartitionData::default().with_partition(send.partition).with_leader_epoch(*leader_epoch);
            let t = read_req::ReadStateData::default().with_topic_id(uuid(send.topic_id)).with_partitions(vec![p]);
            StateRequest::Read(ReadShareGroupStateRequest::default().with_group_id(group).with_topics(vec![t]))
        }
        What::Write(st) => {
            let batches = st.snapshot.batches.iter().map(|b| write_req::StateBatch::default().with_first_offset(b.first).with_last_offset(b.last).with_delivery_state(b.state.wire()).with_delivery_count(b.count)).collect();
            let p = write_req::PartitionData::default().with_partition(send.partition).with_state_epoch(st.state_epoch).with_leader_epoch(st.leader_epoch).with_start_offset(st.snapshot.start).with_state_batches(batches);
            let t = write_req::WriteStateData::default().with_topic_id(uuid(send.topic_id)).with_partitions(vec![p]);
            StateRequest::Write(WriteShareGroupStateRequest::default().with_group_id(group).with_topics(vec![t]))
        }
        What::Members => StateRequest::Members(ShareGroupDescribeRequest::default().with_group_ids(vec![kafka_protocol::messages::GroupId(group)])),
    }
}

/// A ShareGroupDescribe's answer, as the share-partition leader takes it: the group's member
/// ids, or its error (GROUP_ID_NOT_FOUND once it is gone).
pub fn members_result(answer: ShareGroupDescribeResponse) -> Result<std::collections::BTreeSet<String>, Code> {
    let g = answer.groups.into_iter().next().ok_or(Code::UnknownServerError)?;
    if let Some(e) = crate::kafka::error(g.error_code) {
        return Err(e);
    }
    Ok(g.members.into_iter().map(|m| m.member_id.to_string()).collect())
}

/// The answer of a share-partition leader's question about its group's members.
pub fn members_answered(b: &mut Broker, shares: &mut Shares, request: u64, result: Result<std::collections::BTreeSet<String>, Code>, now: u64) -> Vec<Action> {
    let mut out = Out::default();
    let locate = |g: &str| coordinator_of(b, g);
    shares.members_answered(request, result, &locate, now, &mut out);
    let mut actions = Vec::new();
    emit(out, &mut actions);
    actions
}

/// A read's answer, as the share-partition leader takes it.
pub fn read_result(answer: ReadShareGroupStateResponse) -> Result<Option<Stored>, Code> {
    let p = answer.results.into_iter().flat_map(|t| t.partitions).next().ok_or(Code::UnknownServerError)?;
    if let Some(e) = crate::kafka::error(p.error_code) {
        return Err(e);
    }
    stored_of(p.state_epoch, -1, p.start_offset, p.state_batches.iter().map(|b| (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count))).map(Some)
}

/// A write's answer, as the share-partition leader takes it.
pub fn write_result(answer: WriteShareGroupStateResponse) -> Result<Option<Stored>, Code> {
    let p = answer.results.into_iter().flat_map(|t| t.partitions).next().ok_or(Code::UnknownServerError)?;
    crate::kafka::error(p.error_code).map_or(Ok(None), Err)
}

/// The one share-partition a state request names (Seedlog's leaders send one at a time).
fn one_key<T>(group: &str, topics: &[T], id: impl Fn(&T) -> uuid::Uuid, count: impl Fn(&T) -> usize) -> Result<[u8; 16], Code> {
    match topics {
        [t] if count(t) == 1 && !group.is_empty() => Ok(*id(t).as_bytes()),
        _ => Err(Code::InvalidRequest),
    }
}

/// ReadShareGroupState, at the group's coordinator.
pub fn read_share_group_state(node: &Node, (version, cid): (i16, i32), req: ReadShareGroupStateRequest, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.to_string();
    let reply = GroupReply::ReadShareState { version, cid, topic_id: req.topics.first().map(|t| t.topic_id), partition: req.topics.first().and_then(|t| t.partitions.first()).map_or(-1, |p| p.partition) };
    let pending = match one_key(&group, &req.topics, |t| t.topic_id, |t| t.partitions.len()) {
        Err(e) => crate::group::Pending::Now(Answer::ShareState(Err(e))),
        Ok(topic) => {
            let p = &req.topics[0].partitions[0];
            let key: ShareKey = (group.clone(), topic, p.partition);
            with_groups(node, now, out, |_, c, w| c.read_share_state(key, p.leader_epoch, now, w)).unwrap_or_else(|e| crate::group::Pending::Now(Answer::ShareState(Err(e))))
        }
    };
    finish(At { node, out }, reply, pending, group_request_wait_ms_max)
}

/// WriteShareGroupState, at the group's coordinator.
pub fn write_share_group_state(node: &Node, (version, cid): (i16, i32), req: WriteShareGroupStateRequest, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let group = req.group_id.to_string();
    let reply = GroupReply::WriteShareState { version, cid, topic_id: req.topics.first().map(|t| t.topic_id), partition: req.topics.first().and_then(|t| t.partitions.first()).map_or(-1, |p| p.partition) };
    let decided = one_key(&group, &req.topics, |t| t.topic_id, |t| t.partitions.len()).and_then(|topic| {
        let p = &req.topics[0].partitions[0];
        let state = stored_of(p.state_epoch, p.leader_epoch, p.start_offset, p.state_batches.iter().map(|b| (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)))?;
        let key: ShareKey = (group.clone(), topic, p.partition);
        with_groups(node, now, out, |_, c, w| c.write_share_state(key, state, now, w))
    });
    let pending = decided.unwrap_or_else(|e| crate::group::Pending::Now(Answer::ShareState(Err(e))));
    finish(At { node, out }, reply, pending, group_request_wait_ms_max)
}

/// The responses of the two state APIs, from the coordinator's answer.
pub(super) fn read_response(topic_id: Option<uuid::Uuid>, partition: i32, answer: Option<&Answer>) -> ReadShareGroupStateResponse {
    let mut p = read_resp::PartitionResult::default().with_partition(partition);
    match answer {
        Some(Answer::ShareState(Ok(Some(st)))) => {
            (p.state_epoch, p.start_offset) = (st.state_epoch, st.snapshot.start);
            p.state_batches = st.snapshot.batches.iter().map(|b| read_resp::StateBatch::default().with_first_offset(b.first).with_last_offset(b.last).with_delivery_state(b.state.wire()).with_delivery_count(b.count)).collect();
        }
        Some(Answer::ShareState(Err(e))) => p.error_code = code(*e),
        _ => p.error_code = code(Code::CoordinatorNotAvailable),
    }
    let t = read_resp::ReadStateResult::default().with_topic_id(topic_id.unwrap_or_default()).with_partitions(vec![p]);
    ReadShareGroupStateResponse::default().with_results(vec![t])
}

pub(super) fn write_response(topic_id: Option<uuid::Uuid>, partition: i32, answer: Option<&Answer>) -> WriteShareGroupStateResponse {
    let mut p = write_resp::PartitionResult::default().with_partition(partition);
    p.error_code = match answer {
        Some(Answer::ShareState(Ok(_))) => 0,
        Some(Answer::ShareState(Err(e))) => code(*e),
        _ => code(Code::CoordinatorNotAvailable),
    };
    let t = write_resp::WriteStateResult::default().with_topic_id(topic_id.unwrap_or_default()).with_partitions(vec![p]);
    WriteShareGroupStateResponse::default().with_results(vec![t])
}

/// A ShareGroupDescribe answered without the groups the caller may not describe, given them
/// back with their errors.
pub(super) fn share_group_describe_after(resp: &mut ShareGroupDescribeResponse, refused: &[super::authz::Refused]) {
    resp.groups.extend(refused.iter().map(|(g, code, _)| describe::DescribedGroup::default().with_group_id(s(g).into()).with_error_code(code.code())));
}
