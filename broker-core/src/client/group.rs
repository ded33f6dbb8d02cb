//! Group consumer: subscribe to topics and let a group coordinator share their partitions among
//! the members (Kafka's classic protocol). It finds the coordinator, joins (taking its member id
//! first, KIP-394), runs the chosen assignor when it is the leader, syncs, heartbeats, commits
//! (automatically or on demand), and fetches through the assign-mode [`Consumer`]. What happens
//! to its partitions comes back as [`GroupEvent`]s from every [`GroupConsumer::poll`], so a
//! caller (the simulator's history, a test) sees each generation's assignment, revocation and
//! loss. Eager assignors give everything up before rejoining; cooperative-sticky (KIP-429) keeps
//! what it is not told to give up and rejoins once more after a revocation.
//!
//! Heartbeats go out from `poll`, as in Kafka clients before KIP-62: a caller that stops
//! polling for longer than the session timeout is removed from the group, which is what the
//! simulator's paused members exercise. Timers are tokio's (simulated time under madsim).

use super::assignor::{by_name, user_data, wire, Assignor, Members, RebalanceProtocol, TopicPartitions};
use super::consumer::Consumer;
use super::group_config::stamp;
pub use super::group_config::{GroupConfig, GroupEvent, GroupMetadata, GroupProtocol, Polled, Reset, Stamped};
use super::ClientError;
use crate::kafka::{list_offsets, Code};
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::{BrokerId, GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;

/// How much longer than the rebalance timeout a JoinGroup may take (Kafka's clients: 5 s).
const join_grace_ms: u64 = 5_000;

pub struct GroupConsumer {
    pub(super) config: GroupConfig,
    pub(super) consumer: Consumer,
    pub(super) topics: BTreeSet<String>,
    coordinator: Option<SocketAddr>,
    pub(super) member_id: String,
    /// The generation (classic) or member epoch (KIP-848); -1 outside the group.
    pub(super) generation: i32,
    protocol: Option<Assignor>,
    pub(super) owned: TopicPartitions,
    pub(super) rejoin: bool,
    pub(super) next_heartbeat: Instant,
    next_commit: Instant,
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

pub(super) fn partitions_of(tp: &TopicPartitions) -> impl Iterator<Item = (String, i32)> + '_ {
    tp.iter().flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
}

pub(super) fn minus(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (t, p) in partitions_of(a) {
        if !b.get(&t).is_some_and(|ps| ps.contains(&p)) {
            out.entry(t).or_default().push(p);
        }
    }
    out
}

impl GroupConsumer {
    pub fn new(bootstrap: Vec<SocketAddr>, config: GroupConfig) -> GroupConsumer {
        let consumer = Consumer::with_bootstrap(bootstrap, &config.client_id, config.request_timeout);
        let now = Instant::now();
        GroupConsumer { config, consumer, topics: BTreeSet::new(), coordinator: None, member_id: String::new(), generation: -1, protocol: None, owned: TopicPartitions::new(), rejoin: true, next_heartbeat: now, next_commit: now }
    }

    /// The topics to consume; the group rebalances on the next poll.
    pub fn subscribe(&mut self, topics: &[&str]) {
        self.topics = topics.iter().map(|t| t.to_string()).collect();
        self.rejoin = true;
    }

    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    pub fn generation(&self) -> i32 {
        self.generation
    }

    /// The partitions this member owns now.
    pub fn assignment(&self) -> &TopicPartitions {
        &self.owned
    }

    /// Next offset to read of an owned partition.
    pub fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        self.consumer.position(topic, partition)
    }

    /// Rejoins if needed, heartbeats and auto-commits when due, then fetches from the owned
    /// partitions (waiting up to `max_wait_ms`).
    pub async fn poll(&mut self, max_wait_ms: i32) -> Polled {
        let mut out = Polled::default();
        if let Err(e) = self.maintain(&mut out.events).await {
            out.error = Some(e);
            return out;
        }
        if self.owned.is_empty() {
            tokio::time::sleep(Duration::from_millis(max_wait_ms.max(0) as u64)).await;
            return out;
        }
        match self.consumer.poll(max_wait_ms).await {
            Ok(records) => out.records = records,
            Err(e) => out.error = Some(e),
        }
        out
    }

    async fn maintain(&mut self, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let kip848 = matches!(self.config.protocol, GroupProtocol::Consumer { .. });
        if kip848 {
            self.maintain_kip848(events).await?;
        } else if self.rejoin || self.generation < 0 {
            self.join(events).await?;
        }
        let now = Instant::now();
        if !kip848 && now >= self.next_heartbeat {
            self.next_heartbeat = now + Duration::from_millis(self.config.heartbeat_interval_ms);
            self.heartbeat(events).await?;
        }
        if self.config.auto_commit && now >= self.next_commit && !self.owned.is_empty() {
            self.next_commit = now + Duration::from_millis(self.config.auto_commit_interval_ms);
            self.commit(events).await?;
        }
        Ok(())
    }

    async fn coordinator(&mut self) -> Result<SocketAddr, ClientError> {
        if let Some(c) = self.coordinator {
            return Ok(c);
        }
        let addr = self.consumer.cluster().any_broker();
        let req = super::cluster::find_coordinator(crate::kafka::coordinator_type::group, &self.config.group_id);
        let resp = self.send_to(addr, &req).await;
        let resp = resp.inspect_err(|_| self.consumer.cluster().rotate())?;
        let addr = super::cluster::coordinator_in(&resp, || format!("finding the coordinator of {}", self.config.group_id))?;
        self.coordinator = Some(addr);
        Ok(addr)
    }

    async fn send_to<R: kafka_protocol::protocol::Request<Response: 'static>>(&mut self, addr: SocketAddr, req: &R) -> Result<R::Response, ClientError> {
        // A JoinGroup is answered when the rebalance completes: Kafka's clients wait the
        // rebalance timeout plus 5 s for it.
        let timeout = match R::KEY == kafka_protocol::messages::ApiKey::JoinGroup as i16 {
            true => self.config.request_timeout.max(Duration::from_millis(self.config.rebalance_timeout_ms.max(0) as u64 + join_grace_ms)),
            false => self.config.request_timeout,
        };
        let cluster = self.consumer.cluster();
        let sent = match cluster.conn(addr).await {
            Ok(conn) => conn.send_within(req, timeout).await,
            Err(e) => Err(e),
        };
        if sent.is_err() {
            cluster.drop_conn(addr);
        }
        sent
    }

    /// A request to the coordinator; a failed connection forgets it.
    pub(super) async fn ask_coordinator<R: kafka_protocol::protocol::Request<Response: 'static>>(&mut self, req: &R) -> Result<R::Response, ClientError> {
        let addr = self.coordinator().await?;
        self.send_to(addr, req).await.inspect_err(|_| self.coordinator = None)
    }

    /// An error code from the coordinator: what the member must do about it, and the error.
    pub(super) fn on_error(&mut self, code: i16, what: &str, events: &mut Vec<Stamped>) -> ClientError {
        let e = ClientError::kafka(code, format!("{what} in group {}", self.config.group_id));
        match crate::kafka::error(code) {
            Some(Code::NotCoordinator | Code::CoordinatorNotAvailable | Code::CoordinatorLoadInProgress) => self.coordinator = None,
            Some(Code::RebalanceInProgress) => self.rejoin = true,
            // GROUP_ID_NOT_FOUND: a KIP-848 member's group became a classic group while it was
            // away (KIP-848's downgrade), without it: Kafka's clients lose everything too.
            Some(Code::IllegalGeneration | Code::UnknownMemberId | Code::FencedInstanceId | Code::FencedMemberEpoch | Code::GroupIdNotFound) => {
                if code == Code::UnknownMemberId.code() {
                    self.member_id.clear();
                }
                self.lose(events);
            }
            _ => {}
        }
        e
    }

    /// Fenced or expired: the partitions may already be someone else's.
    fn lose(&mut self, events: &mut Vec<Stamped>) {
        let lost = std::mem::take(&mut self.owned);
        for (t, p) in partitions_of(&lost) {
            self.consumer.unassign(&t, p);
        }
        if !lost.is_empty() {
            events.push(stamp(GroupEvent::Lost(lost)));
        }
        self.generation = -1;
        self.rejoin = true;
    }

    /// JoinGroup then SyncGroup: one generation's assignment.
    async fn join(&mut self, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let eager = self.config.assignors.first().map(|a| a.rebalance_protocol()) != Some(RebalanceProtocol::Cooperative);
        if eager && !self.owned.is_empty() {
            if self.config.auto_commit && self.generation >= 0 {
                // Kafka commits before giving partitions up; a failed commit is the next owner's repeat.
                let _ = self.commit(events).await;
            }
            let revoked = std::mem::take(&mut self.owned);
            for (t, p) in partitions_of(&revoked) {
                self.consumer.unassign(&t, p);
            }
            events.push(stamp(GroupEvent::Revoked(revoked)));
        }
        let resp = loop {
            let req = self.join_request()?;
            let resp = self.ask_coordinator(&req).await?;
            match crate::kafka::error(resp.error_code) {
                None => break resp,
                Some(Code::MemberIdRequired) => self.member_id = resp.member_id.to_string(),
                Some(_) => return Err(self.on_error(resp.error_code, "JoinGroup", events)),
            }
        };
        self.member_id = resp.member_id.to_string();
        self.generation = resp.generation_id;
        let name = resp.protocol_name.as_ref().map_or(String::new(), |n| n.to_string());
        let assignor = by_name(&name).ok_or_else(|| ClientError::Protocol(format!("the group chose protocol '{name}', which this client does not know")))?;
        self.protocol = Some(assignor);
        let leader = resp.leader.as_str() == self.member_id;
        events.push(stamp(GroupEvent::Joined { generation: self.generation, member_id: self.member_id.clone(), leader, protocol: name.clone() }));
        let assignments = match leader {
            true => self.assign(assignor, &resp.members).await?,
            false => Vec::new(),
        };
        let mut req = SyncGroupRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.generation_id = self.generation;
        req.member_id = s(&self.member_id);
        req.group_instance_id = self.config.instance_id.as_deref().map(s);
        req.protocol_type = Some(s("consumer"));
        req.protocol_name = Some(s(&name));
        req.assignments = assignments;
        let resp = self.ask_coordinator(&req).await?;
        if resp.error_code != 0 {
            return Err(self.on_error(resp.error_code, "SyncGroup", events));
        }
        let assigned = wire::decode_assignment(&resp.assignment).map_err(|e| ClientError::Protocol(format!("assignment: {e}")))?.partitions;
        self.rejoin = false;
        self.adopt(assigned, assignor, events).await
    }

    fn join_request(&self) -> Result<JoinGroupRequest, ClientError> {
        let mut req = JoinGroupRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.session_timeout_ms = self.config.session_timeout_ms;
        req.rebalance_timeout_ms = self.config.rebalance_timeout_ms;
        req.member_id = s(&self.member_id);
        req.group_instance_id = self.config.instance_id.as_deref().map(s);
        req.protocol_type = s("consumer");
        for a in &self.config.assignors {
            let sub = wire::Subscription {
                topics: self.topics.clone(),
                user_data: user_data::subscription_user_data(*a, &self.owned, self.generation).map_err(|e| ClientError::Protocol(e.to_string()))?,
                owned: self.owned.clone(),
                generation: self.generation,
                rack: None,
            };
            let metadata = wire::encode_subscription(&sub, wire::subscription_version_max).map_err(|e| ClientError::Protocol(e.to_string()))?;
            req.protocols.push(JoinGroupRequestProtocol::default().with_name(s(a.name())).with_metadata(metadata));
        }
        Ok(req)
    }

    /// The leader's part: every member's subscription in, one assignment per member out.
    async fn assign(&mut self, assignor: Assignor, members: &[kafka_protocol::messages::join_group_response::JoinGroupResponseMember]) -> Result<Vec<SyncGroupRequestAssignment>, ClientError> {
        let mut subs = Members::new();
        for m in members {
            let sub = wire::decode_subscription(&m.metadata).map_err(|e| ClientError::Protocol(format!("subscription of {}: {e}", m.member_id)))?;
            subs.insert(m.member_id.to_string(), user_data::member_subscription(assignor, m.group_instance_id.as_ref().map(|i| i.to_string()), &sub));
        }
        let topics: Vec<String> = subs.values().flat_map(|m| m.topics.iter().cloned()).collect::<BTreeSet<_>>().into_iter().collect();
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        // A topic not created yet is left out of the assignment, as Kafka's leaders do. But an
        // unanswered metadata request tells nothing: assigning from what is cached (nothing for
        // a new consumer, fewer partitions after `forget`) would leave partitions unowned in a
        // Stable group that nothing rebalances again. Fail the join instead; the next poll
        // rejoins (the same generation's answer again) and asks another broker.
        match self.consumer.cluster().refresh(&names).await {
            Err(e) if !matches!(e, ClientError::Kafka { .. }) => return Err(e),
            _ => {}
        }
        let counts: BTreeMap<String, i32> = topics.iter().filter_map(|t| self.consumer.cluster().partition_count(t).map(|n| (t.clone(), n))).collect();
        let plan = assignor.assign(&subs, &counts);
        plan.into_iter()
            .map(|(member, partitions)| {
                let bytes = wire::encode_assignment(&wire::Assignment { partitions, user_data: None }, 0).map_err(|e| ClientError::Protocol(e.to_string()))?;
                Ok(SyncGroupRequestAssignment::default().with_member_id(s(&member)).with_assignment(bytes))
            })
            .collect()
    }

    /// Takes a generation's assignment: revokes what is no longer ours (cooperative), starts
    /// what is new at its committed offset (or the reset point).
    async fn adopt(&mut self, assigned: TopicPartitions, assignor: Assignor, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        // KIP-429: after giving partitions up, rejoin so they can go to their new owner.
        if self.move_to(assigned, events).await? && assignor.rebalance_protocol() == RebalanceProtocol::Cooperative {
            self.rejoin = true;
        }
        Ok(())
    }

    /// Moves to owning `assigned`: revokes what is no longer in it (its progress committed first
    /// with auto-commit), then starts what is new at its committed offset (or the reset point);
    /// if that fails the new partitions stay unowned and the member rejoins. Whether anything was
    /// revoked. Both protocols take their assignments here.
    pub(super) async fn move_to(&mut self, assigned: TopicPartitions, events: &mut Vec<Stamped>) -> Result<bool, ClientError> {
        let revoked = minus(&self.owned, &assigned);
        let added = minus(&assigned, &self.owned);
        let revoked_any = !revoked.is_empty();
        if revoked_any {
            if self.config.auto_commit {
                let _ = self.commit_partitions(&revoked, events).await;
            }
            for (t, p) in partitions_of(&revoked) {
                self.consumer.unassign(&t, p);
            }
            events.push(stamp(GroupEvent::Revoked(revoked)));
        }
        if added.is_empty() {
            self.owned = assigned;
            return Ok(revoked_any);
        }
        // The new partitions are owned once they have positions: an owned partition without one
        // has nothing to fetch, and every poll would return at once, empty, without waiting.
        self.owned = minus(&assigned, &added);
        if let Err(e) = self.start_positions(&added).await {
            for (t, p) in partitions_of(&added) {
                self.consumer.unassign(&t, p);
            }
            self.rejoin = true;
            return Err(e);
        }
        self.owned = assigned;
        let starts = partitions_of(&added).filter_map(|(t, p)| self.consumer.position(&t, p).map(|o| ((t, p), o))).collect();
        events.push(stamp(GroupEvent::Assigned { partitions: added, starts }));
        Ok(revoked_any)
    }

    /// Positions for `added`: each at its committed offset, or the reset point.
    async fn start_positions(&mut self, added: &TopicPartitions) -> Result<(), ClientError> {
        let committed = self.committed(added).await?;
        let mut missing = Vec::new();
        for (t, p) in partitions_of(added) {
            match committed.get(&(t.clone(), p)) {
                Some(&o) if o >= 0 => self.consumer.assign(&t, p, o),
                _ => missing.push((t, p)),
            }
        }
        for (t, p) in missing {
            let o = self.reset_offset(&t, p).await?;
            self.consumer.assign(&t, p, o);
        }
        Ok(())
    }

    async fn heartbeat(&mut self, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let mut req = HeartbeatRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.generation_id = self.generation;
        req.member_id = s(&self.member_id);
        req.group_instance_id = self.config.instance_id.as_deref().map(s);
        let resp = self.ask_coordinator(&req).await?;
        match resp.error_code {
            0 => Ok(()),
            c => Err(self.on_error(c, "Heartbeat", events)),
        }
    }

    /// Commits the positions of every owned partition.
    pub async fn commit(&mut self, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let owned = self.owned.clone();
        self.commit_partitions(&owned, events).await
    }

    pub(super) async fn commit_partitions(&mut self, parts: &TopicPartitions, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let offsets: BTreeMap<(String, i32), i64> = partitions_of(parts).filter_map(|(t, p)| self.consumer.position(&t, p).map(|o| ((t, p), o))).collect();
        self.commit_offsets(offsets, events).await
    }

    /// Commits `offsets` (the next offset to read, Kafka's convention) in this generation.
    pub async fn commit_offsets(&mut self, offsets: BTreeMap<(String, i32), i64>, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        if offsets.is_empty() {
            return Ok(());
        }
        let req = self.commit_request(&self.group_metadata(), &offsets);
        let resp = self.ask_coordinator(&req).await?;
        if let Some(bad) = resp.topics.iter().flat_map(|t| &t.partitions).find(|p| p.error_code != 0) {
            return Err(self.on_error(bad.error_code, "OffsetCommit", events));
        }
        events.push(stamp(GroupEvent::Committed(offsets)));
        Ok(())
    }

    /// Who this member is now (the Java consumer's `groupMetadata()`, KIP-447): what a commit
    /// made on its behalf by another client carries.
    pub fn group_metadata(&self) -> GroupMetadata {
        GroupMetadata { member_id: self.member_id.clone(), generation: self.generation, instance_id: self.config.instance_id.clone() }
    }

    /// Commits `offsets` on behalf of the member `meta` names, perhaps captured a rebalance ago
    /// (a producer's `sendOffsetsToTransaction` with a consumer's group metadata, KIP-447): the
    /// coordinator fences it as it would the member's own commit. This client is not that
    /// member, so an answer tells it nothing about its own state but where the coordinator is.
    pub async fn commit_for(&mut self, meta: &GroupMetadata, offsets: &BTreeMap<(String, i32), i64>) -> Result<(), ClientError> {
        if offsets.is_empty() {
            return Ok(());
        }
        let req = self.commit_request(meta, offsets);
        let resp = self.ask_coordinator(&req).await?;
        let Some(bad) = resp.topics.iter().flat_map(|t| &t.partitions).find(|p| p.error_code != 0) else { return Ok(()) };
        if matches!(crate::kafka::error(bad.error_code), Some(Code::NotCoordinator | Code::CoordinatorNotAvailable | Code::CoordinatorLoadInProgress)) {
            self.coordinator = None;
        }
        Err(ClientError::kafka(bad.error_code, format!("OffsetCommit for {} (generation {}) in group {}", meta.member_id, meta.generation, self.config.group_id)))
    }

    fn commit_request(&self, meta: &GroupMetadata, offsets: &BTreeMap<(String, i32), i64>) -> OffsetCommitRequest {
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.generation_id_or_member_epoch = meta.generation;
        req.member_id = s(&meta.member_id);
        req.group_instance_id = meta.instance_id.as_deref().map(s);
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for ((t, p), o) in offsets {
            topics.entry(t).or_default().push(OffsetCommitRequestPartition::default().with_partition_index(*p).with_committed_offset(*o).with_committed_leader_epoch(-1));
        }
        req.topics = topics.into_iter().map(|(t, ps)| OffsetCommitRequestTopic::default().with_name(TopicName(s(t))).with_partitions(ps)).collect();
        req
    }

    /// The group's committed offsets of `parts` (-1: none). Asked with `require_stable`, as
    /// Kafka's read_committed consumers ask: an offset a transaction still holds open is
    /// UNSTABLE_OFFSET_COMMIT (retriable) rather than the offset before it.
    pub async fn committed(&mut self, parts: &TopicPartitions) -> Result<BTreeMap<(String, i32), i64>, ClientError> {
        let mut req = OffsetFetchRequest::default();
        let mut g = OffsetFetchRequestGroup::default();
        g.group_id = GroupId(s(&self.config.group_id));
        g.member_epoch = -1;
        g.topics = Some(parts.iter().map(|(t, ps)| OffsetFetchRequestTopics::default().with_name(TopicName(s(t))).with_partition_indexes(ps.clone())).collect());
        req.groups = vec![g];
        req.require_stable = true;
        let resp = self.ask_coordinator(&req).await?;
        let g = resp.groups.into_iter().next().ok_or_else(|| ClientError::Protocol("OffsetFetch answered no group".into()))?;
        if g.error_code != 0 {
            return Err(self.on_error(g.error_code, "OffsetFetch", &mut Vec::new()));
        }
        if let Some((t, p)) = g.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t, p))).find(|(_, p)| p.error_code != 0) {
            return Err(ClientError::kafka(p.error_code, format!("OffsetFetch for {}-{} in group {}", t.name.0.as_str(), p.partition_index, self.config.group_id)));
        }
        Ok(g.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| ((t.name.0.to_string(), p.partition_index), p.committed_offset))).collect())
    }

    /// `auto.offset.reset` for a partition with no committed offset: ListOffsets at its leader.
    async fn reset_offset(&mut self, topic: &str, partition: i32) -> Result<i64, ClientError> {
        let leader = self.consumer.cluster().leader(topic, partition).await?;
        let ts = match self.config.reset {
            Reset::Earliest => list_offsets::earliest,
            Reset::Latest => list_offsets::latest,
        };
        let mut req = ListOffsetsRequest::default();
        req.replica_id = BrokerId(-1);
        req.topics = vec![ListOffsetsTopic::default().with_name(TopicName(s(topic))).with_partitions(vec![ListOffsetsPartition::default().with_partition_index(partition).with_current_leader_epoch(-1).with_timestamp(ts)])];
        let resp = self.send_to(leader, &req).await?;
        let p = resp.topics.first().and_then(|t| t.partitions.first()).ok_or_else(|| ClientError::Protocol("ListOffsets answered no partition".into()))?;
        if p.error_code != 0 {
            self.consumer.cluster().forget(topic, partition);
            return Err(ClientError::kafka(p.error_code, format!("ListOffsets {topic}-{partition}")));
        }
        Ok(p.offset)
    }

    /// Leaves the group: commits first with auto-commit; a static member stays a member (its
    /// session keeps its place, KIP-345), a dynamic one sends LeaveGroup.
    pub async fn close(&mut self) -> Vec<Stamped> {
        let mut events = Vec::new();
        if self.config.auto_commit && self.generation >= 0 {
            let _ = self.commit(&mut events).await;
        }
        if !self.owned.is_empty() {
            events.push(stamp(GroupEvent::Revoked(std::mem::take(&mut self.owned))));
        }
        if matches!(self.config.protocol, GroupProtocol::Consumer { .. }) {
            self.leave_kip848().await;
        } else if self.config.instance_id.is_none() && !self.member_id.is_empty() {
            let mut req = LeaveGroupRequest::default();
            req.group_id = GroupId(s(&self.config.group_id));
            req.members = vec![MemberIdentity::default().with_member_id(s(&self.member_id))];
            let _ = self.ask_coordinator(&req).await;
        }
        self.generation = -1;
        self.member_id.clear();
        events
    }
}
