//! ShareFetch and ShareAcknowledge (KIP-932) at a share-partition leader: the request's share
//! session is checked and changed (`share::sessions`), its acknowledgements applied, records
//! acquired from each session partition's log (whole batches, with the acquired ranges and
//! their delivery counts), and the answer sent once the share-partition leader wrote every
//! change it made (`share::leader`). A fetch that finds nothing and changes nothing waits for
//! records (parked) up to its `max_wait_ms`. Topics travel by id; one this node does not know
//! is UNKNOWN_TOPIC_ID, one the caller may not READ (`authz::share`'s [`Denied`])
//! TOPIC_AUTHORIZATION_FAILED: not added to the session, fetched or acknowledged.

use super::authz::Denied;
use super::share_handlers::{coordinator_of, emit};
use super::{Attempt, Node, Outcome, Parts, Waiting};
use crate::broker::share_read::{first_batches, ReadAt, ShareRead, ShareReadJob, ShareReads};
use crate::broker::Action;
use crate::constants::{fetch_bytes_max, group_request_wait_ms_max};
use crate::kafka::Code;
use crate::protocol::Response;
use crate::share::leader::{Out, PartKey, Results};
use crate::share::partition::AckType;
use bytes::Bytes;
use kafka_protocol::messages::share_acknowledge_request::ShareAcknowledgeRequest;
use kafka_protocol::messages::share_acknowledge_response::{self as ack_resp, ShareAcknowledgeResponse};
use kafka_protocol::messages::share_fetch_request::ShareFetchRequest;
use kafka_protocol::messages::share_fetch_response::{AcquiredRecords, PartitionData, ShareFetchResponse, ShareFetchableTopicResponse};
use kafka_protocol::messages::ApiKey;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Acknowledgement batches as the share-partition takes them.
type Acks = Vec<(i64, i64, Vec<AckType>)>;

/// One partition's answer under construction.
#[derive(Debug, Default)]
struct Slot {
    error: i16,
    ack_error: Option<i16>,
    records: Bytes,
    acquired: Vec<AcquiredRecords>,
    /// The leader's id and epoch, where this node leads (else unknown: -1, -1).
    leader: Option<(i32, i32)>,
}

/// A ShareFetch or ShareAcknowledge answer under construction: its partitions by (topic id,
/// topic, partition), finished with the share-partition leader's results.
#[derive(Debug)]
pub(crate) struct ShareReply {
    fetch: bool,
    version: i16,
    cid: i32,
    error: Option<Code>,
    lock_ms: i32,
    slots: BTreeMap<(Uuid, String, i32), Slot>,
}

impl ShareReply {
    /// The response, given what the writes it waited on came to (None: the wait ran out).
    pub(crate) fn finish(mut self, results: Option<&Results>) -> Response {
        for ((_, topic, p), slot) in self.slots.iter_mut() {
            let at = (topic.clone(), *p);
            if results.is_some_and(|r| r.taken_back.contains(&at)) {
                // Gone back before the write was answered, maybe another member's by now.
                (slot.records, slot.acquired) = (Bytes::new(), Vec::new());
            }
            let result = match results {
                Some(r) => r.written.get(&at).copied().unwrap_or(Ok(())),
                None if slot.ack_error.is_some() || !slot.acquired.is_empty() => Err(Code::RequestTimedOut),
                None => Ok(()),
            };
            if let Err(code) = result {
                if !slot.acquired.is_empty() {
                    // Not written: no record of it may reach the member.
                    (slot.error, slot.records, slot.acquired) = (code.code(), Bytes::new(), Vec::new());
                }
                if slot.ack_error == Some(0) {
                    slot.ack_error = Some(code.code());
                }
            }
        }
        let error = self.error.map_or(0, |c| c.code());
        let mut by_topic: BTreeMap<Uuid, Vec<(i32, Slot)>> = BTreeMap::new();
        for ((id, _, p), slot) in self.slots {
            by_topic.entry(id).or_default().push((p, slot));
        }
        if self.fetch {
            let mut r = ShareFetchResponse::default();
            (r.error_code, r.acquisition_lock_timeout_ms) = (error, self.lock_ms);
            for (id, parts) in by_topic {
                let partitions = parts
                    .into_iter()
                    .map(|(p, slot)| {
                        let mut pd = PartitionData::default().with_partition_index(p).with_error_code(slot.error).with_acknowledge_error_code(slot.ack_error.unwrap_or(0));
                        (pd.current_leader.leader_id, pd.current_leader.leader_epoch) = slot.leader.unwrap_or((-1, -1));
                        // Never null: librdkafka reads a null set as a broken response.
                        pd.records = Some(slot.records);
                        pd.acquired_records = slot.acquired;
                        pd
                    })
                    .collect();
                r.responses.push(ShareFetchableTopicResponse::default().with_topic_id(id).with_partitions(partitions));
            }
            return Response::new(ApiKey::ShareFetch, self.version, self.cid, r);
        }
        let mut r = ShareAcknowledgeResponse::default();
        r.error_code = error;
        for (id, parts) in by_topic {
            let partitions = parts
                .into_iter()
                .map(|(p, slot)| {
                    let mut pd = ack_resp::PartitionData::default().with_partition_index(p).with_error_code(slot.ack_error.unwrap_or(slot.error));
                    (pd.current_leader.leader_id, pd.current_leader.leader_epoch) = slot.leader.unwrap_or((-1, -1));
                    pd
                })
                .collect();
            r.responses.push(ack_resp::ShareAcknowledgeTopicResponse::default().with_topic_id(id).with_partitions(partitions));
        }
        Response::new(ApiKey::ShareAcknowledge, self.version, self.cid, r)
    }
}

/// The acknowledgement batches of one partition, checked (INVALID_REQUEST: a type outside
/// 0–3, or batches out of order or overlapping).
fn acks_of(batches: impl Iterator<Item = (i64, i64, Vec<i8>)>) -> Result<Acks, Code> {
    let mut acks: Acks = Vec::new();
    for (first, last, types) in batches {
        let types = types.into_iter().map(AckType::from_wire).collect::<Option<Vec<_>>>().ok_or(Code::InvalidRequest)?;
        if acks.last().is_some_and(|(_, l, _)| first <= *l) {
            return Err(Code::InvalidRequest);
        }
        acks.push((first, last, types));
    }
    Ok(acks)
}

/// What a request names, resolved: (topic id, topic name or None if unknown here, partition, acks).
type Named = Vec<(Uuid, Option<String>, i32, Result<Acks, Code>)>;

/// What both APIs do with a request once named: the session's check and change, the
/// acknowledgements, then (for a fetch) the acquisition. Ok(None): nothing changed, so
/// nothing to wait for.
struct Asked<'a> {
    group: &'a str,
    member: &'a str,
    epoch: i32,
    named: Named,
    forgotten: Vec<(String, i32)>,
    fetch: Option<(usize, usize)>,
    /// How long a fetch that finds nothing may wait for records.
    wait_ms: u64,
    /// Topics the caller may not READ.
    denied: &'a Denied,
    /// The connection it came on: a session lives on the one that opened it.
    connection: Option<u64>,
    /// What was read for the fetch before the decision (`share_plan`).
    reads: ShareReads,
}

fn decide(parts: &mut Parts, mut reply: ShareReply, asked: Asked<'_>, attempt: Attempt, now: u64, actions: &mut Vec<Action>) -> Result<Outcome, String> {
    let Parts { broker: b, shares, .. } = parts;
    let ids = super::consumer_handlers::topic_ids(b);
    // Where each group with share-partitions here is coordinated (a flush writes them all).
    let mut groups = shares.groups();
    groups.insert(asked.group.to_string());
    let coordinators: std::collections::BTreeMap<String, Option<i32>> = groups.into_iter().map(|g| (g.clone(), coordinator_of(b, &g))).collect();
    let locate = |g: &str| coordinators.get(g).copied().flatten();
    let mut out = Out::default();
    let (group, member) = (asked.group.to_string(), asked.member.to_string());
    let lock_ms = super::share_handlers::lock_ms_of(b, &group);
    let read_committed = b.image().group_config(&group, crate::metadata::group_configs::share_isolation_level) == Some("read_committed");
    let first = attempt == Attempt::First;
    let has_acks = asked.named.iter().any(|(_, _, _, a)| a.as_ref().map_or(true, |a| !a.is_empty()));
    // A session takes only partitions that exist (what a client names is bounded by the image).
    let exists = |t: &str, p: i32| b.image().topics.get(t).is_some_and(|x| p >= 0 && (p as usize) < x.partitions.len());
    let refused = |t: &str| asked.denied.of(t).is_some();
    let added: Vec<(String, i32)> = asked.named.iter().filter_map(|(_, t, p, _)| Some((t.clone()?, *p))).filter(|(t, p)| exists(t, *p) && !refused(t)).collect();
    let begun = match first {
        true => shares.sessions.check_connection(&group, &member, asked.epoch, asked.connection).and_then(|()| shares.sessions.begin(&group, &member, asked.epoch, asked.fetch.is_some(), has_acks, &added, &asked.forgotten, now)),
        false => shares.sessions.partitions(&group, &member).cloned().map(|partitions| crate::share::sessions::Begun { partitions, closing: false }).ok_or(Code::ShareSessionNotFound),
    };
    let begun = match begun {
        Ok(b) => {
            let opened = first && asked.epoch == crate::share::sessions::open_epoch;
            if let (Some(c), true) = (asked.connection, opened) {
                shares.sessions.bind(&group, &member, c);
            }
            if opened {
                // The group may have been deleted and re-created since this node read its state.
                shares.session_opened(&group);
            }
            b
        }
        Err(e) => {
            reply.error = Some(e);
            return Ok(Outcome::Reply(reply.finish(None)));
        }
    };
    let ticket = shares.ticket();
    for (id, name, p, acks) in asked.named.into_iter().filter(|_| first) {
        let slot = reply.slots.entry((id, name.clone().unwrap_or_default(), p)).or_default();
        let Some(name) = name else {
            slot.error = Code::UnknownTopicId.code();
            continue;
        };
        if refused(&name) {
            slot.error = Code::TopicAuthorizationFailed.code();
            if acks.as_ref().map_or(true, |a| !a.is_empty()) {
                slot.ack_error = Some(slot.error);
            }
            continue;
        }
        let acks = match acks {
            Ok(a) if a.is_empty() => continue,
            Ok(a) => a,
            Err(e) => {
                slot.ack_error = Some(e.code());
                continue;
            }
        };
        // Taken only by this leadership's share-partition (records acquired under an earlier
        // one went back when it ended): NOT_LEADER_OR_FOLLOWER where this node does not lead.
        let key: PartKey = (group.clone(), name, p);
        let result = match b.share_bounds(&key.1, p) {
            Err(e) => Err(e.kafka_error(true)),
            Ok(bounds) if !shares.prepare(&key, *id.as_bytes(), bounds.leader_epoch, &locate, now, &mut out) => Err(Code::InvalidRecordState),
            Ok(_) => shares.acknowledge(&key, &member, &acks, ticket, now),
        };
        slot.ack_error = Some(result.err().map_or(0, |e| e.code()));
    }
    let mut reads = asked.reads;
    let mut missed = ShareReadJob::default();
    if let Some((mut records_left, mut bytes_left)) = asked.fetch.filter(|_| !begun.closing) {
        for (topic, p) in &begun.partitions {
            if records_left == 0 || bytes_left == 0 {
                break;
            }
            let Some(id) = ids.get(topic).copied() else { continue };
            let slot_key = (id, topic.clone(), *p);
            if refused(topic) {
                reply.slots.entry(slot_key).or_default().error = Code::TopicAuthorizationFailed.code();
                continue;
            }
            let bounds = match b.share_bounds(topic, *p) {
                Ok(x) => x,
                Err(e) => {
                    reply.slots.entry(slot_key).or_default().error = e.kafka_error(true).code();
                    continue;
                }
            };
            let key: PartKey = (group.clone(), topic.clone(), *p);
            if !shares.prepare(&key, *id.as_bytes(), bounds.leader_epoch, &locate, now, &mut out) {
                continue;
            }
            let Some(from) = shares.partition(&key).and_then(|x| x.fetch_from()).filter(|f| *f < bounds.upper(read_committed)) else { continue };
            let upper = bounds.upper(read_committed);
            let at = ReadAt { topic: topic.clone(), topic_id: *id.as_bytes(), partition: *p, leader_epoch: bounds.leader_epoch, read_committed };
            let Some(ShareRead { bytes, spans, skip_to }) = reads.take(&at, from, upper) else {
                // Not read for this point (acknowledgements moved it, the session took the
                // partition now, the leadership changed): bounded now, read after the decision.
                let room = bytes_left.saturating_sub(missed.len()).min(crate::constants::share_read_bytes_max);
                match (room > 0).then(|| b.share_slice(topic, *p, from, room, read_committed)) {
                    None => {}
                    Some(Ok(slice)) => missed.slices.extend(slice),
                    Some(Err(e)) => reply.slots.entry(slot_key).or_default().error = e.kafka_error(true).code(),
                }
                continue;
            };
            if let Some(&(base, _)) = spans.first().filter(|(base, _)| *base > from) {
                shares.log_gap(&key, from, base);
            }
            let a = shares.acquire(&key, &member, &spans, records_left, lock_ms, ticket, now);
            // Read to its end: what a committed read left out there is passed over.
            if let Some(to) = skip_to.filter(|_| a.batches_used == spans.len() && shares.partition(&key).is_some_and(|x| spans.last().is_none_or(|s| x.end() > s.1))) {
                shares.skip_to(&key, to);
            }
            if a.runs.is_empty() {
                continue;
            }
            let slot = reply.slots.entry(slot_key).or_default();
            slot.records = first_batches(&bytes, a.batches_used);
            slot.leader = Some((b.config().node_id, bounds.leader_epoch));
            slot.acquired = a.runs.iter().map(|r| AcquiredRecords::default().with_first_offset(r.first).with_last_offset(r.last).with_delivery_count(r.count)).collect();
            records_left = records_left.saturating_sub(a.runs.iter().map(|r| (r.last - r.first + 1) as usize).sum());
            bytes_left = bytes_left.saturating_sub(slot.records.len());
        }
    }
    if begun.closing {
        shares.release_member(&group, &member, &mut out);
    }
    shares.flush(&locate, now, &mut out);
    shares.take_answers(&mut out);
    // This request's own ticket may be settled already (a share-partition dropped on the way).
    let own = out.answers.iter().position(|(t, _)| *t == ticket).map(|i| out.answers.remove(i).1);
    let waits = shares.waits(ticket) && !shares.tells_before_write;
    emit(out, actions);
    if let Some(results) = own {
        return Ok(Outcome::Reply(reply.finish(Some(&results))));
    }
    if !waits {
        shares.forget(ticket);
        let idle = asked.fetch.is_some() && !begun.closing && reply.slots.is_empty();
        return match asked.fetch {
            // Records this decision found but had not read: read them, then decide again.
            Some(_) if idle && !reads.again && !missed.is_empty() => Ok(Outcome::ShareRead { job: missed, wait_ms: asked.wait_ms }),
            Some(_) if attempt != Attempt::Final && asked.wait_ms > 0 && idle => Ok(Outcome::Park { wait_ms: asked.wait_ms, metadata: false }),
            _ => Ok(Outcome::Reply(reply.finish(Some(&Results::default())))),
        };
    }
    let mut waiting = Waiting::share(reply, ticket, group_request_wait_ms_max);
    waiting.take_answers(actions);
    Ok(Outcome::Wait(waiting))
}

fn named_topics<'a, T: 'a>(node: &Node, topics: impl Iterator<Item = (Uuid, i32, T)>, acks: impl Fn(T) -> Result<Acks, Code>) -> Named {
    let ids = super::consumer_handlers::topic_ids(&node.broker());
    topics.map(|(id, p, t)| (id, ids.iter().find(|(_, x)| **x == id).map(|(n, _)| n.clone()), p, acks(t))).collect()
}

/// The request's group and member (None when either is missing: INVALID_REQUEST).
fn who(group: &Option<kafka_protocol::messages::GroupId>, member: &Option<kafka_protocol::protocol::StrBytes>) -> Option<(String, String)> {
    let group = group.as_ref().map(|g| g.0.to_string()).filter(|g| !g.is_empty())?;
    Some((group, member.as_ref().map(|m| m.to_string()).filter(|m| !m.is_empty())?))
}

fn names(node: &Node, forgotten: impl Iterator<Item = (Uuid, i32)>) -> Vec<(String, i32)> {
    let ids = super::consumer_handlers::topic_ids(&node.broker());
    forgotten.filter_map(|(id, p)| Some((ids.iter().find(|(_, x)| **x == id)?.0.clone(), p))).collect()
}

/// ShareFetch.
pub fn share_fetch(node: &Node, (version, cid): (i16, i32), req: ShareFetchRequest, (denied, connection): (&Denied, Option<u64>), (attempt, reads): (Attempt, ShareReads), now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let mut reply = ShareReply { fetch: true, version, cid, error: None, lock_ms: 0, slots: BTreeMap::new() };
    let Some((group, member)) = who(&req.group_id, &req.member_id) else {
        reply.error = Some(Code::InvalidRequest);
        return Ok(Outcome::Reply(reply.finish(None)));
    };
    reply.lock_ms = i32::try_from(super::share_handlers::lock_ms_of(&node.broker(), &group)).unwrap_or(i32::MAX);
    let parts = req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index, p)));
    let named = named_topics(node, parts, |p| acks_of(p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))));
    let forgotten = names(node, req.forgotten_topics_data.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))));
    let records = if req.max_records > 0 { req.max_records as usize } else { usize::MAX };
    let bytes = (req.max_bytes.max(1) as usize).min(fetch_bytes_max);
    let asked = Asked { group: &group, member: &member, epoch: req.share_session_epoch, named, forgotten, fetch: Some((records, bytes)), wait_ms: req.max_wait_ms.max(0) as u64, denied, connection, reads };
    decide(&mut node.parts(), reply, asked, attempt, now, out)
}

/// ShareAcknowledge.
pub fn share_acknowledge(node: &Node, (version, cid): (i16, i32), req: ShareAcknowledgeRequest, (denied, connection): (&Denied, Option<u64>), now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let mut reply = ShareReply { fetch: false, version, cid, error: None, lock_ms: 0, slots: BTreeMap::new() };
    let Some((group, member)) = who(&req.group_id, &req.member_id) else {
        reply.error = Some(Code::InvalidRequest);
        return Ok(Outcome::Reply(reply.finish(None)));
    };
    let parts = req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index, p)));
    let named = named_topics(node, parts, |p| acks_of(p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))));
    let asked = Asked { group: &group, member: &member, epoch: req.share_session_epoch, named, forgotten: Vec::new(), fetch: None, wait_ms: 0, denied, connection, reads: ShareReads::default() };
    decide(&mut node.parts(), reply, asked, Attempt::First, now, out)
}

/// What a ShareFetch will read, bounded before its decision (under the gate: batch headers
/// only) for the shell to read off it, so the decision finds the records in memory
/// (`Prepared::share_reads`): each partition its session holds after the request (the session's
/// and the request's, less the forgotten; only the request's for a new session, none for a
/// closing one) that this node leads, `refused` (`authz::share_refused`) does not name and
/// whose share-partition is ready, from where that share-partition will fetch next after the
/// request's acknowledgements: its fetch point now, or lower where the request gives records
/// back (RELEASE), or its end where it is at its lock limit and the request acknowledges
/// records (which may free locks); within the request's bytes. The decision takes a read from
/// at or below its fetch point (another member's acquisition moves it up meanwhile); what it
/// finds unread it reads after ([`Outcome::ShareRead`]). Only a `first` decision applies the
/// acknowledgements; a request decided again (parked) plans from the fetch points alone.
pub fn share_plan(node: &Node, req: &ShareFetchRequest, refused: &Denied, first: bool) -> ShareReadJob {
    let mut job = ShareReadJob::default();
    let Some((group, member)) = who(&req.group_id, &req.member_id) else { return job };
    if req.share_session_epoch == crate::share::sessions::final_epoch {
        return job;
    }
    // What the request acknowledges, by partition: whether it gives any record back, and from where.
    let acked = req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| ((t.topic_id, p.partition_index), &p.acknowledgement_batches)));
    let acked: Vec<((uuid::Uuid, i32), Option<i64>)> = acked
        .filter(|(_, batches)| first && !batches.is_empty())
        .map(|(at, batches)| (at, batches.iter().filter(|b| b.acknowledge_types.contains(&AckType::Release.wire())).map(|b| b.first_offset).min()))
        .collect();
    let named = names(node, req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index))));
    let forgotten = names(node, req.forgotten_topics_data.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))));
    let mut parts = node.parts();
    let Parts { broker: b, shares, .. } = &mut *parts;
    let ids = super::consumer_handlers::topic_ids(b);
    let mut partitions: std::collections::BTreeSet<(String, i32)> = match req.share_session_epoch {
        crate::share::sessions::open_epoch => Default::default(),
        _ => shares.sessions.partitions(&group, &member).cloned().unwrap_or_default(),
    };
    partitions.extend(named);
    let read_committed = b.image().group_config(&group, crate::metadata::group_configs::share_isolation_level) == Some("read_committed");
    let mut bytes_left = (req.max_bytes.max(1) as usize).min(fetch_bytes_max);
    for (topic, p) in partitions.iter().filter(|x| !forgotten.contains(x) && refused.of(&x.0).is_none()) {
        let key: PartKey = (group.clone(), topic.clone(), *p);
        let Some(share) = shares.partition(&key) else { continue };
        let acks = ids.get(topic).and_then(|id| acked.iter().find(|(at, _)| *at == (*id, *p))).map(|(_, released)| *released);
        let from = match (share.fetch_from(), acks) {
            (Some(f), Some(Some(released))) => f.min(released),
            (Some(f), _) => f,
            (None, Some(released)) => released.unwrap_or(share.end()),
            (None, None) => continue,
        };
        let room = bytes_left.min(crate::constants::share_read_bytes_max);
        if room == 0 {
            break;
        }
        if let Ok(Some(slice)) = b.share_slice(topic, *p, from, room, read_committed) {
            bytes_left = bytes_left.saturating_sub(slice.len());
            job.slices.push(slice);
        }
    }
    job
}
