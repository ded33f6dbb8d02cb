//! The APIs the controller serves: broker registration and heartbeats, ISR changes from
//! partition leaders (AlterPartition), topic creation and deletion, and Fetch of the metadata
//! log; CreatePartitions. Each decision is committed by the metadata quorum before it is answered. On a node that
//! is not the active controller (not a voter, or not the quorum leader, or a leader whose
//! epoch's first entry is not committed yet) they are answered with NOT_CONTROLLER (41), or for
//! the metadata log NOT_LEADER_OR_FOLLOWER (6), so the asker looks elsewhere; topic creation
//! and deletion there are then forwarded to the active controller (`forward`).

use crate::protocol::Response;
use crate::kafka::Code;
use super::handlers::FetchDecision;
use crate::protocol::{s, topic_name, uuid};
use super::{Node, Outcome, Waiting};
use crate::metadata::configs::describe_topic;
use crate::controller::quorum::Quorum;
use crate::metadata::metadata_topic;
use crate::controller::AlterPartition;
use crate::metadata::{Endpoint, MetadataRecord};
use kafka_protocol::messages::alter_partition_request::AlterPartitionRequest;
use kafka_protocol::messages::alter_partition_response::{AlterPartitionResponse, PartitionData as AlterPartitionData, TopicData};
use kafka_protocol::messages::broker_heartbeat_request::BrokerHeartbeatRequest;
use kafka_protocol::messages::broker_heartbeat_response::BrokerHeartbeatResponse;
use kafka_protocol::messages::broker_registration_request::BrokerRegistrationRequest;
use kafka_protocol::messages::broker_registration_response::BrokerRegistrationResponse;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsRequest;
use kafka_protocol::messages::create_partitions_response::{CreatePartitionsResponse, CreatePartitionsTopicResult};
use kafka_protocol::messages::create_topics_request::CreateTopicsRequest;
use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse};
use kafka_protocol::messages::delete_topics_request::DeleteTopicsRequest;
use kafka_protocol::messages::delete_topics_response::{DeletableTopicResult, DeleteTopicsResponse};
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::fetch_response::{FetchResponse, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, BrokerId};
use std::collections::BTreeMap;
use std::sync::MutexGuard;

pub(super) const not_controller: i16 = Code::NotController.code();

/// This node's controller, if it is the active one.
pub(super) fn active(node: &Node) -> Option<MutexGuard<'_, Quorum>> {
    node.controller().filter(|q| q.is_active())
}

/// Answers a decision whose last record is at `last`: with `reply` once the quorum committed it
/// (at once if it already is, as on a lone voter) and, with `applied`, once this node's broker
/// applied it too (or `timeout_ms` passed); with `refused` if the leadership ends first.
pub(super) fn after_commit(q: &Quorum, last: i64, reply: Response, refused: Response, applied: bool, timeout_ms: u64) -> Outcome {
    match (q.is_committed(last) && !applied, q.active_epoch()) {
        (true, _) => Outcome::Reply(reply),
        (false, Some(epoch)) => Outcome::Wait(Waiting::committed(last, epoch, reply, refused, applied, timeout_ms)),
        (false, None) => Outcome::Reply(refused),
    }
}

/// Whether a Fetch asks for the metadata log (brokers following the controller).
pub fn is_metadata_fetch(req: &FetchRequest) -> bool {
    req.topics.iter().any(|t| t.topic.0.as_str() == metadata_topic)
}

/// Fetch of the metadata log: committed records from the asked offset, parked like any fetch
/// while there is nothing new. Below the log start (the log before the newest snapshot is
/// gone) the answer is that snapshot's records instead, whole, with `log_start_offset` = its
/// end: the broker rebuilds its image from them and fetches on from there.
pub fn metadata_fetch(node: &Node, req: FetchRequest, final_attempt: bool, now: u64) -> FetchDecision {
    let mut r = FetchResponse::default();
    let mut total = 0usize;
    let mut quorum = active(node);
    // A broker reading the metadata log is one of the quorum's observers (DescribeQuorum).
    let asked = req.topics.iter().filter(|t| t.topic.0.as_str() == metadata_topic).flat_map(|t| &t.partitions).find(|p| p.partition == 0);
    if let (Some(q), Some(p)) = (quorum.as_deref_mut(), asked) {
        q.observed(crate::protocol::fetch_replica(&req).0, p.fetch_offset, now);
    }
    for t in &req.topics {
        let mut tr = FetchableTopicResponse::default();
        tr.topic = t.topic.clone();
        for fp in &t.partitions {
            let mut pd = PartitionData::default();
            pd.partition_index = fp.partition;
            pd.aborted_transactions = Some(Vec::new());
            let result = match &quorum {
                Some(q) if t.topic.0.as_str() == metadata_topic && fp.partition == 0 => match q.snapshot().filter(|s| fp.fetch_offset < s.id.end) {
                    Some(s) => Ok((s.bytes.clone(), q.committed_end(), s.id.end)),
                    None => Ok((q.read(fp.fetch_offset, (fp.partition_max_bytes.max(1) as usize).min(crate::constants::fetch_bytes_max)), q.committed_end(), q.log_start())),
                },
                Some(_) => Err(Code::UnknownTopicOrPartition.code()),
                None => Err(Code::NotLeaderOrFollower.code()),
            };
            match result {
                Ok((bytes, end, start)) => {
                    total += bytes.len();
                    pd.high_watermark = end;
                    pd.last_stable_offset = end;
                    pd.log_start_offset = start;
                    pd.records = Some(bytes);
                }
                Err(code) => {
                    pd.error_code = code;
                    pd.high_watermark = -1;
                    pd.records = Some(Default::default());
                    // The quorum leader this voter knows, so the asker goes there (KIP-595). The
                    // active controller's own lock is already held here: lock it only if not.
                    let leader = match &quorum {
                        Some(q) => q.leader(),
                        None => node.controller().and_then(|q| q.leader()),
                    };
                    if let Some(leader) = leader {
                        pd.current_leader.leader_id = BrokerId(leader);
                    }
                    return FetchDecision::Respond(with(r, tr, pd), Vec::new());
                }
            }
            tr.partitions.push(pd);
        }
        r.responses.push(tr);
    }
    if !final_attempt && req.max_wait_ms > 0 && total == 0 {
        return FetchDecision::Park(req.max_wait_ms as u64);
    }
    FetchDecision::Respond(r, Vec::new())
}

fn with(mut r: FetchResponse, mut tr: FetchableTopicResponse, pd: PartitionData) -> FetchResponse {
    tr.partitions.push(pd);
    r.responses.push(tr);
    r
}

pub fn broker_registration(node: &Node, version: i16, correlation_id: i32, req: BrokerRegistrationRequest, now: u64) -> Result<Outcome, String> {
    let mut r = BrokerRegistrationResponse::default();
    r.broker_epoch = -1;
    let mut refused = r.clone();
    refused.error_code = not_controller;
    let refused = Response::new(ApiKey::BrokerRegistration, version, correlation_id, refused);
    let Some(mut q) = active(node) else { return Ok(Outcome::Reply(refused)) };
    let endpoints: Vec<Endpoint> = req.listeners.iter().map(|l| Endpoint { name: l.name.to_string(), host: l.host.to_string(), port: i32::from(l.port) }).collect();
    let next = q.end_offset();
    let id = req.broker_id.0;
    // v0-2 carry no previous epoch: as after an unclean shutdown (Kafka's default, -1).
    let previous = if version >= 3 { req.previous_broker_epoch } else { crate::controller::no_previous_epoch };
    let result = q.controller_mut().register_broker(id, &endpoints, previous, next, now).map_err(|e| e.kafka_error().code());
    let last = match result.and_then(|records| q.commit(records, now).map_err(|e| e.kafka_error().code())) {
        Ok(last) => {
            r.broker_epoch = q.controller().image().brokers.get(&id).map_or(-1, |b| b.epoch);
            last
        }
        Err(code) => {
            r.error_code = code;
            -1
        }
    };
    let reply = Response::new(ApiKey::BrokerRegistration, version, correlation_id, r);
    Ok(after_commit(&q, last, reply, refused, false, crate::constants::controller_commit_wait_ms))
}

pub fn broker_heartbeat(node: &Node, version: i16, correlation_id: i32, req: BrokerHeartbeatRequest, now: u64) -> Result<Outcome, String> {
    let mut r = BrokerHeartbeatResponse::default();
    r.is_fenced = true;
    let mut refused = r.clone();
    refused.error_code = not_controller;
    let refused = Response::new(ApiKey::BrokerHeartbeat, version, correlation_id, refused);
    let Some(mut q) = active(node) else { return Ok(Outcome::Reply(refused)) };
    let decided = match req.want_shut_down {
        true => q.controller_mut().shut_down(req.broker_id.0, req.broker_epoch, now).map(|records| (None, records)),
        false => q.controller_mut().heartbeat(req.broker_id.0, req.broker_epoch, req.current_metadata_offset, now).map(|(reply, records)| (Some(reply), records)),
    };
    let decided = decided.map_err(|e| e.kafka_error().code());
    let last = match decided.and_then(|(reply, records)| q.commit(records, now).map(|last| (reply, last)).map_err(|e| e.kafka_error().code())) {
        Ok((Some(reply), last)) => {
            r.is_fenced = reply.fenced;
            r.is_caught_up = reply.caught_up;
            last
        }
        Ok((None, last)) => {
            r.should_shut_down = true;
            last
        }
        Err(code) => {
            r.error_code = code;
            -1
        }
    };
    let reply = Response::new(ApiKey::BrokerHeartbeat, version, correlation_id, r);
    Ok(after_commit(&q, last, reply, refused, false, crate::constants::controller_commit_wait_ms))
}

pub fn alter_partition(node: &Node, version: i16, correlation_id: i32, req: AlterPartitionRequest, now: u64) -> Result<Outcome, String> {
    let mut r = AlterPartitionResponse::default();
    let mut refused = r.clone();
    refused.error_code = not_controller;
    let refused = Response::new(ApiKey::AlterPartition, version, correlation_id, refused);
    let Some(mut q) = active(node) else { return Ok(Outcome::Reply(refused)) };
    let mut last = -1;
    for t in req.topics {
        let mut tr = TopicData::default();
        tr.topic_id = t.topic_id;
        let name = q.controller().image().topics.iter().find(|(_, x)| uuid(x.id) == t.topic_id).map(|(n, _)| n.clone());
        for p in t.partitions {
            let mut pr = AlterPartitionData::default();
            pr.partition_index = p.partition_index;
            let Some(name) = &name else {
                pr.error_code = Code::UnknownTopicId.code();
                tr.partitions.push(pr);
                continue;
            };
            let ask = AlterPartition {
                broker_id: req.broker_id.0,
                broker_epoch: req.broker_epoch,
                topic: name.clone(),
                partition: p.partition_index,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                new_isr: match version {
                    v if v >= 3 => p.new_isr_with_epochs.iter().map(|b| b.broker_id.0).collect(),
                    _ => p.new_isr.iter().map(|b| b.0).collect(),
                },
                new_isr_epochs: p.new_isr_with_epochs.iter().map(|b| b.broker_epoch).collect(),
            };
            let result = q.controller().alter_partition(&ask).map_err(|e| e.kafka_error().code());
            match result.and_then(|(info, records)| q.commit(records, now).map(|o| (info, o)).map_err(|e| e.kafka_error().code())) {
                // The change completed a reassignment that moved the leadership away from the
                // asker (`controller::reassign`): committed, and Kafka's NEW_LEADER_ELECTED.
                Ok((info, offset)) if info.leader != ask.broker_id => {
                    last = last.max(offset);
                    pr.error_code = Code::NewLeaderElected.code();
                }
                Ok((info, offset)) => {
                    last = last.max(offset);
                    pr.leader_id = BrokerId(info.leader);
                    pr.leader_epoch = info.leader_epoch;
                    pr.isr = info.isr.iter().map(|&b| BrokerId(b)).collect();
                    pr.partition_epoch = info.partition_epoch;
                }
                Err(code) => pr.error_code = code,
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    let reply = Response::new(ApiKey::AlterPartition, version, correlation_id, r);
    Ok(after_commit(&q, last, reply, refused, false, crate::constants::controller_commit_wait_ms))
}

/// How long a topic change waits for this node's broker to apply it before answering anyway.
fn applied_wait_ms(timeout_ms: i32) -> u64 {
    (timeout_ms.max(0) as u64).min(crate::constants::produce_wait_ms_max)
}

pub fn create_topics(node: &Node, version: i16, correlation_id: i32, req: CreateTopicsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let mut r = CreateTopicsResponse::default();
    let mut quorum = active(node);
    let mut last = -1;
    for t in req.topics {
        let mut tr = CreatableTopicResult::default();
        tr.name = t.name.clone();
        let overrides: BTreeMap<String, String> = t.configs.iter().filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string()))).collect();
        let result = match quorum.as_deref_mut() {
            None => Err((not_controller, "this node is not the controller".to_string())),
            Some(_) if denied.of(&t.name).is_some() => Err(denied.of(&t.name).map(|e| (e.kafka_error(true).code(), e.to_string())).expect("just checked")),
            Some(_) if !t.assignments.is_empty() => Err((Code::InvalidRequest.code(), "manual replica assignment is not supported: give partitions and replication factor".into())),
            Some(q) => create_one(q, t.name.0.as_str(), t.num_partitions, t.replication_factor, overrides.clone(), req.validate_only, now).map(|(id, offset)| {
                last = last.max(offset);
                id
            }),
        };
        match result {
            Ok(id) => {
                tr.topic_id = uuid(id);
                if version >= 5 {
                    let q = quorum.as_deref().expect("created on the controller");
                    describe_created(q, &mut tr, t.num_partitions, t.replication_factor, &overrides);
                }
            }
            Err((code, message)) => {
                tr.error_code = code;
                tr.error_message = Some(s(&message));
                tr.num_partitions = -1;
                tr.replication_factor = -1;
            }
        }
        r.topics.push(tr);
    }
    Ok(answer_committed(quorum, (ApiKey::CreateTopics, version, correlation_id), r, (last, req.timeout_ms), "the topic", |r| r.topics.iter_mut().map(|t| (&mut t.error_code, &mut t.error_message)).collect()))
}

/// CreatePartitions (KIP-195): each topic grows to its `count` (`controller::partitions`), its
/// new partitions placed as a new topic's are; answered once committed and applied here.
/// A request's own assignments are refused (INVALID_REQUEST), as CreateTopics refuses them.
pub fn create_partitions(node: &Node, version: i16, correlation_id: i32, req: CreatePartitionsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let mut r = CreatePartitionsResponse::default();
    let mut quorum = active(node);
    let mut last = -1;
    for t in req.topics {
        let result = match quorum.as_deref_mut() {
            None => Err((not_controller, "this node is not the controller".to_string())),
            Some(_) if denied.of(&t.name).is_some() => Err(denied.of(&t.name).map(|e| (e.kafka_error(true).code(), e.to_string())).expect("just checked")),
            Some(_) if t.assignments.as_ref().is_some_and(|a| !a.is_empty()) => Err((Code::InvalidRequest.code(), "manual replica assignment is not supported: give the count alone".into())),
            Some(q) => q.controller().create_partitions(t.name.0.as_str(), t.count).map_err(|e| (e.kafka_error().code(), e.to_string())).and_then(|records| match req.validate_only {
                true => Ok(()),
                false => q.commit(records, now).map(|offset| last = last.max(offset)).map_err(|e| (e.kafka_error().code(), e.to_string())),
            }),
        };
        let (error_code, error_message) = result.err().map_or((0, None), |(code, message)| (code, Some(s(&message))));
        r.results.push(CreatePartitionsTopicResult::default().with_name(t.name).with_error_code(error_code).with_error_message(error_message));
    }
    Ok(answer_committed(quorum, (ApiKey::CreatePartitions, version, correlation_id), r, (last, req.timeout_ms), "the partitions", |r| r.results.iter_mut().map(|t| (&mut t.error_code, &mut t.error_message)).collect()))
}

/// An item's error code and message in a response under construction.
type ItemError<'a> = (&'a mut i16, &'a mut Option<kafka_protocol::protocol::StrBytes>);

/// Answers `r` once the records it decided (the last at `last`) are committed and applied on
/// this node, or after `timeout_ms`; if the leadership ends first, every item `items` finds
/// without an error is answered NOT_CONTROLLER instead (`what` was not committed). A node
/// that is not the active controller, or that decided no record (`last` < 0), answers at once.
pub(super) fn answer_committed<R>(quorum: Option<MutexGuard<'_, Quorum>>, (key, version, correlation_id): (ApiKey, i16, i32), mut r: R, (last, timeout_ms): (i64, i32), what: &str, items: impl for<'a> Fn(&'a mut R) -> Vec<ItemError<'a>>) -> Outcome
where
    R: Clone + kafka_protocol::protocol::Encodable + Into<kafka_protocol::messages::ResponseKind>,
{
    let reply = Response::new(key, version, correlation_id, r.clone());
    // Not the controller, or nothing was decided (every item refused, or validated only).
    let Some(q) = quorum.filter(|_| last >= 0) else { return Outcome::Reply(reply) };
    for (code, message) in items(&mut r).into_iter().filter(|(code, _)| **code == 0) {
        *code = not_controller;
        *message = Some(s(&format!("the controller lost its leadership before {what} was committed")));
    }
    let refused = Response::new(key, version, correlation_id, r);
    after_commit(&q, last, reply, refused, true, applied_wait_ms(timeout_ms))
}

/// Decides and commits one topic; returns its id and the offset of its last record.
fn create_one(q: &mut Quorum, name: &str, partitions: i32, rf: i16, overrides: BTreeMap<String, String>, validate_only: bool, now: u64) -> Result<([u8; 16], i64), (i16, String)> {
    let (id, records) = q.controller().create_topic(name, partitions, rf, overrides, now).map_err(|e| (e.kafka_error().code(), e.to_string()))?;
    if validate_only {
        return Ok((id, -1));
    }
    let offset = q.commit(records, now).map_err(|e| (e.kafka_error().code(), e.to_string()))?;
    Ok((id, offset))
}

/// CreateTopics v5+ tells the client what it got: partitions, replication factor, configs.
fn describe_created(q: &Quorum, tr: &mut CreatableTopicResult, partitions: i32, rf: i16, overrides: &BTreeMap<String, String>) {
    let c = q.controller().config();
    let name = tr.name.0.to_string();
    let created = q.controller().image().topics.get(&name);
    tr.num_partitions = created.map_or(if partitions == -1 { c.num_partitions } else { partitions }, |t| t.partitions.len() as i32);
    tr.replication_factor = created.and_then(|t| t.partitions.first()).map_or(if rf == -1 { c.default_replication_factor } else { rf }, |p| p.replicas.len() as i16);
    tr.configs = Some(
        describe_topic(&q.controller().topic_defaults(), overrides)
            .into_iter()
            .map(|d| {
                let mut x = CreatableTopicConfigs::default();
                x.name = s(d.name);
                x.value = Some(s(&d.value));
                x.config_source = d.source;
                x
            })
            .collect(),
    );
}

pub fn delete_topics(node: &Node, version: i16, correlation_id: i32, req: DeleteTopicsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let mut r = DeleteTopicsResponse::default();
    let mut quorum = active(node);
    let names: Vec<(Option<String>, uuid::Uuid)> = if version >= 6 {
        req.topics
            .iter()
            .map(|t| {
                let by_id = || quorum.as_ref()?.controller().image().topics.iter().find(|(_, x)| uuid(x.id) == t.topic_id).map(|(n, _)| n.clone());
                (t.name.as_ref().map(|n| n.0.to_string()).or_else(by_id), t.topic_id)
            })
            .collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.0.to_string()), uuid::Uuid::nil())).collect()
    };
    let mut last = -1;
    for (name, id) in names {
        let mut tr = DeletableTopicResult::default();
        tr.name = name.as_deref().map(topic_name);
        tr.topic_id = id;
        let result = match (quorum.as_deref_mut(), &name) {
            (None, _) => Err((not_controller, "this node is not the controller".to_string())),
            (Some(_), None) => Err((Code::UnknownTopicId.code(), "unknown topic id".to_string())),
            (Some(_), Some(n)) if denied.of(n).is_some() => Err(denied.of(n).map(|e| (e.kafka_error(true).code(), e.to_string())).expect("just checked")),
            (Some(q), Some(n)) => {
                if let Some(t) = q.controller().image().topics.get(n) {
                    tr.topic_id = uuid(t.id);
                }
                let records: Result<Vec<MetadataRecord>, _> = q.controller().delete_topic(n).map_err(|e| (e.kafka_error().code(), e.to_string()));
                records.and_then(|rs| q.commit(rs, now).map_err(|e| (e.kafka_error().code(), e.to_string())))
            }
        };
        match result {
            Ok(offset) => last = last.max(offset),
            Err((code, message)) => {
                tr.error_code = code;
                tr.error_message = Some(s(&message));
            }
        }
        r.responses.push(tr);
    }
    Ok(answer_committed(quorum, (ApiKey::DeleteTopics, version, correlation_id), r, (last, req.timeout_ms), "the deletion", |r| r.responses.iter_mut().map(|t| (&mut t.error_code, &mut t.error_message)).collect()))
}
