//! A KIP-932 share-group member: ShareGroupHeartbeat to its group's coordinator (it names
//! itself; epoch 0 joins with the subscription, -1 leaves), ShareFetch to the leaders of the
//! partitions it is assigned, in a share session per broker (epoch 0 opens it; every answer
//! moves it on), and the acknowledgements the caller gives sent with the next fetch to the broker
//! the records came from. Records outside the acquired ranges of an answer are not the
//! member's and are dropped; each record comes with its delivery count. The simulator's share
//! workloads use it. Timers are tokio's; it never reads the wall clock.

use super::assignor::TopicPartitions;
use super::cluster::Cluster;
use super::ClientError;
use crate::kafka::Code;
use crate::share::partition::AckType;
use bytes::Bytes;
use kafka_protocol::messages::share_acknowledge_request::{self as ack_req, ShareAcknowledgeRequest};
use kafka_protocol::messages::share_fetch_request::{AcknowledgementBatch, FetchPartition, FetchTopic, ForgottenTopic, ShareFetchRequest};
use kafka_protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// One record handed to the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub value: Option<Bytes>,
    pub delivery_count: i16,
}

/// What became of an acknowledgement: the broker took it (Ok) or refused it, or it was never
/// sent (its session had to open again: the records come back after their lock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckOutcome {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub kind: AckType,
    pub result: Result<(), Code>,
}

/// What one poll brought.
#[derive(Debug, Default)]
pub struct SharePolled {
    pub records: Vec<ShareRecord>,
    pub acks: Vec<AckOutcome>,
    pub error: Option<ClientError>,
    /// ShareFetch requests (or partitions of one) answered with no records the member could
    /// take — no answer at all (a timeout, a broken connection) or a partition's error (its
    /// leadership moved, its write timed out): each may have acquired records for the member
    /// that it never saw, which count as delivered. By partition, once per such answer.
    pub unanswered: Vec<(String, i32)>,
}

#[derive(Debug, Clone)]
pub struct ShareConfig {
    pub group_id: String,
    /// The member's id (KIP-932 members name themselves).
    pub member_id: String,
    pub topics: Vec<String>,
    pub max_records: i32,
    pub request_timeout: Duration,
}

/// Acknowledgements by partition: offset and kind.
type Owed = BTreeMap<(String, i32), Vec<(i64, AckType)>>;

#[derive(Debug, Default)]
struct Session {
    /// The epoch the next request carries (0: open it).
    epoch: i32,
    partitions: BTreeSet<(String, i32)>,
}

pub struct ShareConsumer {
    cluster: Cluster,
    config: ShareConfig,
    coordinator: Option<SocketAddr>,
    epoch: i32,
    joined: bool,
    next_heartbeat: Instant,
    interval_ms: u64,
    assignment: TopicPartitions,
    sessions: BTreeMap<SocketAddr, Session>,
    /// Acknowledgements owed to each broker, by partition, in offset order.
    owed: BTreeMap<SocketAddr, Owed>,
    /// Which broker each partition's records came from last.
    came_from: BTreeMap<(String, i32), SocketAddr>,
}

impl ShareConsumer {
    pub fn new(bootstrap: Vec<SocketAddr>, config: ShareConfig) -> ShareConsumer {
        let cluster = Cluster::new(bootstrap, &config.member_id, config.request_timeout);
        ShareConsumer { cluster, config, coordinator: None, epoch: 0, joined: false, next_heartbeat: Instant::now(), interval_ms: 1_000, assignment: TopicPartitions::new(), sessions: BTreeMap::new(), owed: BTreeMap::new(), came_from: BTreeMap::new() }
    }

    pub fn assignment(&self) -> &TopicPartitions {
        &self.assignment
    }

    pub fn member_epoch(&self) -> i32 {
        self.epoch
    }

    /// Acknowledges a record given by the last polls: sent with the next fetch to its broker.
    pub fn acknowledge(&mut self, r: &ShareRecord, kind: AckType) {
        let tp = (r.topic.clone(), r.partition);
        let Some(addr) = self.came_from.get(&tp).copied() else { return };
        self.owed.entry(addr).or_default().entry(tp).or_default().push((r.offset, kind));
    }

    async fn send<R: kafka_protocol::protocol::Request<Response: 'static>>(&mut self, addr: SocketAddr, req: &R) -> Result<R::Response, ClientError> {
        let timeout = self.config.request_timeout;
        let sent = match self.cluster.conn(addr).await {
            Ok(conn) => conn.send_within(req, timeout).await,
            Err(e) => Err(e),
        };
        if sent.is_err() {
            self.cluster.drop_conn(addr);
        }
        sent
    }

    async fn coordinator(&mut self) -> Result<SocketAddr, ClientError> {
        if let Some(c) = self.coordinator {
            return Ok(c);
        }
        let addr = self.cluster.any_broker();
        let req = super::cluster::find_coordinator(crate::kafka::coordinator_type::group, &self.config.group_id);
        let resp = self.send(addr, &req).await.inspect_err(|_| self.cluster.rotate())?;
        let addr = super::cluster::coordinator_in(&resp, || format!("finding the coordinator of {}", self.config.group_id))?;
        self.coordinator = Some(addr);
        Ok(addr)
    }

    /// Heartbeats when due; takes the assignment an answer brings.
    async fn heartbeat(&mut self) -> Result<(), ClientError> {
        if self.joined && Instant::now() < self.next_heartbeat {
            return Ok(());
        }
        self.next_heartbeat = Instant::now() + Duration::from_millis(self.interval_ms);
        let names = self.config.topics.clone();
        let topics: Vec<&str> = names.iter().map(String::as_str).collect();
        let _ = self.cluster.refresh(&topics).await;
        let mut req = ShareGroupHeartbeatRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.member_id = s(&self.config.member_id);
        req.member_epoch = if self.joined { self.epoch } else { 0 };
        if !self.joined {
            req.subscribed_topic_names = Some(self.config.topics.iter().map(|t| TopicName(s(t))).collect());
        }
        let addr = self.coordinator().await?;
        let resp = self.send(addr, &req).await.inspect_err(|_| self.coordinator = None)?;
        if resp.error_code != 0 {
            match crate::kafka::error(resp.error_code) {
                Some(Code::NotCoordinator | Code::CoordinatorNotAvailable | Code::CoordinatorLoadInProgress) => self.coordinator = None,
                // Rejoin under the same id with the whole subscription.
                Some(Code::UnknownMemberId | Code::FencedMemberEpoch) => self.joined = false,
                _ => {}
            }
            return Err(ClientError::kafka(resp.error_code, format!("ShareGroupHeartbeat in group {}", self.config.group_id)));
        }
        self.joined = true;
        self.epoch = resp.member_epoch;
        if resp.heartbeat_interval_ms > 0 {
            self.interval_ms = resp.heartbeat_interval_ms as u64;
        }
        if let Some(a) = resp.assignment {
            let mut target = TopicPartitions::new();
            for t in &a.topic_partitions {
                if self.cluster.topic_name(t.topic_id).is_none() {
                    let _ = self.cluster.refresh(&topics).await;
                }
                if let Some(name) = self.cluster.topic_name(t.topic_id) {
                    target.entry(name.to_string()).or_default().extend(&t.partitions);
                }
            }
            self.assignment = target;
        }
        Ok(())
    }

    /// A heartbeat when due, then one ShareFetch to each leader of the assigned partitions
    /// (the first waiting up to `max_wait_ms`), carrying what is owed there.
    pub async fn poll(&mut self, max_wait_ms: i32) -> SharePolled {
        let mut polled = SharePolled::default();
        if let Err(e) = self.heartbeat().await {
            polled.error = Some(e);
        }
        let mut by_leader: BTreeMap<SocketAddr, BTreeSet<(String, i32)>> = BTreeMap::new();
        for (t, ps) in self.assignment.clone() {
            for p in ps {
                match self.cluster.leader(&t, p).await {
                    Ok(addr) => drop(by_leader.entry(addr).or_default().insert((t.clone(), p))),
                    Err(e) => polled.error = Some(e),
                }
            }
        }
        // Brokers owed acknowledgements or holding a session are asked too (to let go).
        for addr in self.owed.keys().chain(self.sessions.keys()).copied().collect::<Vec<_>>() {
            by_leader.entry(addr).or_default();
        }
        for (i, (addr, wanted)) in by_leader.into_iter().enumerate() {
            let wait = if i == 0 { max_wait_ms } else { 0 };
            if let Err(e) = self.fetch_from(addr, wanted, wait, &mut polled).await {
                polled.error = Some(e);
            }
        }
        polled
    }

    async fn fetch_from(&mut self, addr: SocketAddr, wanted: BTreeSet<(String, i32)>, wait: i32, polled: &mut SharePolled) -> Result<(), ClientError> {
        let session = self.sessions.entry(addr).or_default();
        if wanted.is_empty() && session.partitions.is_empty() && !self.owed.contains_key(&addr) {
            self.sessions.remove(&addr);
            return Ok(());
        }
        let opening = session.epoch == 0;
        let added: Vec<(String, i32)> = wanted.iter().filter(|tp| opening || !session.partitions.contains(*tp)).cloned().collect();
        let forgotten: Vec<(String, i32)> = if opening { Vec::new() } else { session.partitions.difference(&wanted).cloned().collect() };
        let epoch = session.epoch;
        let mut owed = self.owed.remove(&addr).unwrap_or_default();
        if opening {
            // A session that opens carries no acknowledgement (Kafka's rule): those owed here
            // are given up; the records come back once their locks run out.
            for ((t, p), acks) in std::mem::take(&mut owed) {
                polled.acks.extend(acks.into_iter().map(|(offset, kind)| AckOutcome { topic: t.clone(), partition: p, offset, kind, result: Err(Code::InvalidShareSessionEpoch) }));
            }
        }
        let mut topics: BTreeMap<uuid::Uuid, FetchTopic> = BTreeMap::new();
        for tp in added.iter().chain(owed.keys()) {
            let Some(id) = self.cluster.topic_id(&tp.0) else { continue };
            let t = topics.entry(id).or_insert_with(|| FetchTopic::default().with_topic_id(id));
            if t.partitions.iter().any(|p| p.partition_index == tp.1) {
                continue;
            }
            let batches = owed.get(tp).map_or_else(Vec::new, |acks| ack_batches(acks).into_iter().map(|(f, l, k)| AcknowledgementBatch::default().with_first_offset(f).with_last_offset(l).with_acknowledge_types(vec![k.wire()])).collect());
            t.partitions.push(FetchPartition::default().with_partition_index(tp.1).with_acknowledgement_batches(batches));
        }
        let mut forgotten_topics: BTreeMap<uuid::Uuid, Vec<i32>> = BTreeMap::new();
        for (t, p) in &forgotten {
            if let Some(id) = self.cluster.topic_id(t) {
                forgotten_topics.entry(id).or_default().push(*p);
            }
        }
        let mut req = ShareFetchRequest::default();
        req.group_id = Some(GroupId(s(&self.config.group_id)));
        req.member_id = Some(s(&self.config.member_id));
        (req.share_session_epoch, req.max_wait_ms, req.min_bytes, req.max_bytes) = (epoch, wait, 1, 1 << 20);
        (req.max_records, req.batch_size) = (self.config.max_records, self.config.max_records);
        req.topics = topics.into_values().collect();
        req.forgotten_topics_data = forgotten_topics.into_iter().map(|(id, ps)| ForgottenTopic::default().with_topic_id(id).with_partitions(ps)).collect();
        let asked: Vec<(String, i32)> = session.partitions.iter().chain(added.iter()).cloned().collect::<BTreeSet<_>>().into_iter().collect();
        let answer = self.send(addr, &req).await;
        let session = self.sessions.entry(addr).or_default();
        let resp = match answer {
            Ok(r) if r.error_code == 0 => r,
            other => {
                // Nothing is known of what the broker took: the session opens again, and the
                // acknowledgements sent are reported not taken.
                *session = Session::default();
                if other.is_err() {
                    polled.unanswered.extend(asked);
                }
                let code = other.as_ref().map_or(Code::NetworkException, |r| crate::kafka::error(r.error_code).unwrap_or(Code::UnknownServerError));
                report(&owed, Err(code), &mut polled.acks);
                return match other {
                    Ok(r) => Err(ClientError::kafka(r.error_code, "ShareFetch")),
                    Err(e) => Err(e),
                };
            }
        };
        session.epoch = if epoch == i32::MAX { 1 } else { epoch + 1 };
        session.partitions.extend(added);
        for tp in &forgotten {
            session.partitions.remove(tp);
        }
        for t in resp.responses {
            let Some(topic) = self.cluster.topic_name(t.topic_id).map(str::to_string) else { continue };
            for p in t.partitions {
                let tp = (topic.clone(), p.partition_index);
                if let Some(acks) = owed.remove(&tp) {
                    report(&BTreeMap::from([(tp.clone(), acks)]), crate::kafka::error(p.acknowledge_error_code).map_or(Ok(()), Err), &mut polled.acks);
                }
                if p.error_code != 0 {
                    polled.unanswered.push(tp.clone());
                    self.cluster.forget(&topic, p.partition_index);
                    continue;
                }
                if p.acquired_records.is_empty() {
                    continue;
                }
                self.came_from.insert(tp.clone(), addr);
                let counts: Vec<(i64, i64, i16)> = p.acquired_records.iter().map(|a| (a.first_offset, a.last_offset, a.delivery_count)).collect();
                for (offset, _, value) in super::consumer::decode_records(p.records.unwrap_or_default())? {
                    if let Some(&(_, _, delivery_count)) = counts.iter().find(|(f, l, _)| (*f..=*l).contains(&offset)) {
                        polled.records.push(ShareRecord { topic: topic.clone(), partition: p.partition_index, offset, value, delivery_count });
                    }
                }
            }
        }
        // Acknowledgements the answer did not speak of were not taken.
        report(&owed, Err(Code::InvalidRecordState), &mut polled.acks);
        Ok(())
    }

    /// Leaves: acknowledgements still owed go with a last ShareAcknowledge (epoch -1) to each
    /// broker with a session, then the heartbeat that leaves the group.
    pub async fn close(&mut self) -> Vec<AckOutcome> {
        let mut outcomes = Vec::new();
        for (addr, session) in std::mem::take(&mut self.sessions) {
            let owed = self.owed.remove(&addr).unwrap_or_default();
            if session.epoch == 0 {
                report(&owed, Err(Code::InvalidShareSessionEpoch), &mut outcomes);
                continue;
            }
            let mut topics: BTreeMap<uuid::Uuid, ack_req::AcknowledgeTopic> = BTreeMap::new();
            for (tp, acks) in &owed {
                let Some(id) = self.cluster.topic_id(&tp.0) else { continue };
                let batches = ack_batches(acks).into_iter().map(|(f, l, k)| ack_req::AcknowledgementBatch::default().with_first_offset(f).with_last_offset(l).with_acknowledge_types(vec![k.wire()])).collect();
                topics.entry(id).or_insert_with(|| ack_req::AcknowledgeTopic::default().with_topic_id(id)).partitions.push(ack_req::AcknowledgePartition::default().with_partition_index(tp.1).with_acknowledgement_batches(batches));
            }
            let mut req = ShareAcknowledgeRequest::default();
            req.group_id = Some(GroupId(s(&self.config.group_id)));
            req.member_id = Some(s(&self.config.member_id));
            req.share_session_epoch = -1;
            req.topics = topics.into_values().collect();
            let answer = self.send(addr, &req).await;
            // Each partition's own result; a partition the answer does not name was not taken.
            let mut results: BTreeMap<(String, i32), Result<(), Code>> = BTreeMap::new();
            match answer {
                Ok(r) if r.error_code == 0 => {
                    for t in &r.responses {
                        let Some(name) = self.cluster.topic_name(t.topic_id).map(str::to_string) else { continue };
                        for p in &t.partitions {
                            results.insert((name.clone(), p.partition_index), crate::kafka::error(p.error_code).map_or(Ok(()), Err));
                        }
                    }
                }
                other => {
                    let code = other.map_or(Code::NetworkException, |r| crate::kafka::error(r.error_code).unwrap_or(Code::UnknownServerError));
                    for tp in owed.keys() {
                        results.insert(tp.clone(), Err(code));
                    }
                }
            }
            for (tp, acks) in &owed {
                let result = results.get(tp).copied().unwrap_or(Err(Code::InvalidRecordState));
                report(&BTreeMap::from([(tp.clone(), acks.clone())]), result, &mut outcomes);
            }
        }
        if self.joined {
            let mut req = ShareGroupHeartbeatRequest::default();
            req.group_id = GroupId(s(&self.config.group_id));
            req.member_id = s(&self.config.member_id);
            req.member_epoch = -1;
            if let Ok(addr) = self.coordinator().await {
                let _ = self.send(addr, &req).await;
            }
            self.joined = false;
        }
        outcomes
    }
}

/// Acknowledgements as batches: runs of consecutive offsets of one kind.
fn ack_batches(acks: &[(i64, AckType)]) -> Vec<(i64, i64, AckType)> {
    let mut sorted = acks.to_vec();
    sorted.sort_by_key(|(o, _)| *o);
    sorted.dedup_by_key(|(o, _)| *o);
    let mut out: Vec<(i64, i64, AckType)> = Vec::new();
    for (o, k) in sorted {
        match out.last_mut() {
            Some((_, last, kind)) if *last + 1 == o && *kind == k => *last = o,
            _ => out.push((o, o, k)),
        }
    }
    out
}

fn report(owed: &Owed, result: Result<(), Code>, out: &mut Vec<AckOutcome>) {
    for ((t, p), acks) in owed {
        out.extend(acks.iter().map(|(offset, kind)| AckOutcome { topic: t.clone(), partition: *p, offset: *offset, kind: *kind, result }));
    }
}
