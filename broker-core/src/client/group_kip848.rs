//! The member side of KIP-848 (`group.protocol=consumer`): one ConsumerGroupHeartbeat every
//! interval the coordinator sets, joining at member epoch 0 with the whole subscription, then
//! saying what it owns each time. The coordinator assigns; the member takes what it is given
//! incrementally: partitions taken away are revoked at once (committed first with auto-commit)
//! and reported with the very next heartbeat, since their next owner waits for that; partitions
//! added start at their committed offsets. FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or
//! GROUP_ID_NOT_FOUND (the group went back to the classic protocol without it, KIP-848's
//! downgrade) lose everything and rejoin. Calls on [`GroupConsumer`]; timers are tokio's.

use super::assignor::TopicPartitions;
use super::group::GroupConsumer;
use super::group_config::{stamp, GroupEvent, GroupProtocol, Stamped};
use super::ClientError;
use kafka_protocol::messages::consumer_group_heartbeat_request::{ConsumerGroupHeartbeatRequest, TopicPartitions as Owned};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::time::Duration;
use tokio::time::Instant;

/// A heartbeat's epoch that leaves the group; a static member's leaves it for a while.
const leave_epoch: i32 = -1;
const static_leave_epoch: i32 = -2;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

impl GroupConsumer {
    /// Heartbeats when due (at once when joining or after a revocation), and takes the
    /// assignment the answer brings.
    pub(super) async fn maintain_kip848(&mut self, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        let now = Instant::now();
        let joining = self.generation < 0;
        if !(joining || self.rejoin || now >= self.next_heartbeat) {
            return Ok(());
        }
        self.next_heartbeat = now + Duration::from_millis(self.config.heartbeat_interval_ms);
        let full = joining || self.rejoin;
        let topics: Vec<String> = self.topics.iter().cloned().collect();
        if full {
            // The topics' ids name what the coordinator assigns; a topic not created yet is
            // not an error here (it joins the assignment once it exists).
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            let _ = self.consumer.cluster().refresh(&names).await;
        }
        let mut req = ConsumerGroupHeartbeatRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.member_id = s(&self.member_id);
        req.member_epoch = if joining { 0 } else { self.generation };
        req.instance_id = self.config.instance_id.as_deref().map(s);
        req.rebalance_timeout_ms = -1;
        if full {
            req.rebalance_timeout_ms = self.config.rebalance_timeout_ms;
            req.subscribed_topic_names = Some(topics.iter().map(|t| TopicName(s(t))).collect());
            if let GroupProtocol::Consumer { assignor } = &self.config.protocol {
                req.server_assignor = assignor.as_deref().map(s);
            }
        }
        let owned = if joining { TopicPartitions::new() } else { self.owned.clone() };
        let cluster = self.consumer.cluster();
        req.topic_partitions = Some(owned.iter().filter_map(|(t, ps)| Some(Owned::default().with_topic_id(cluster.topic_id(t)?).with_partitions(ps.clone()))).collect());
        // A heartbeat that failed may have been taken, its answer lost: the next one says
        // everything, and is answered with the whole assignment (Kafka's clients do the same).
        self.rejoin = true;
        let resp = self.ask_coordinator(&req).await?;
        if resp.error_code != 0 {
            return Err(self.on_error(resp.error_code, "ConsumerGroupHeartbeat", events));
        }
        self.rejoin = false;
        self.member_id = resp.member_id.map_or(String::new(), |m| m.to_string());
        if resp.heartbeat_interval_ms > 0 {
            self.config.heartbeat_interval_ms = resp.heartbeat_interval_ms as u64;
        }
        if resp.member_epoch != self.generation {
            self.generation = resp.member_epoch;
            events.push(stamp(GroupEvent::Joined { generation: self.generation, member_id: self.member_id.clone(), leader: false, protocol: "consumer".into() }));
        }
        let Some(assignment) = resp.assignment else { return Ok(()) };
        let mut target = TopicPartitions::new();
        for t in &assignment.topic_partitions {
            if self.consumer.cluster().topic_name(t.topic_id).is_none() {
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                let _ = self.consumer.cluster().refresh(&names).await;
            }
            match self.consumer.cluster().topic_name(t.topic_id) {
                Some(name) => target.entry(name.to_string()).or_default().extend(&t.partitions),
                // A topic it cannot name yet: nothing of this assignment is taken (a partial one
                // would revoke the rest), and the whole of it is asked for again next time.
                None => {
                    self.rejoin = true;
                    return Ok(());
                }
            }
        }
        target.values_mut().for_each(|ps| ps.sort_unstable());
        self.take(target, events).await
    }

    /// Moves to `target` (revoking first); a revocation is said with the very next heartbeat,
    /// since the partitions' next owner waits for it. If the new partitions cannot start, the
    /// next heartbeat asks for the whole assignment again (`rejoin`).
    async fn take(&mut self, target: TopicPartitions, events: &mut Vec<Stamped>) -> Result<(), ClientError> {
        if self.move_to(target, events).await? {
            self.next_heartbeat = Instant::now();
        }
        Ok(())
    }

    /// Leaves the group: epoch -1, or -2 for a static member (its place is kept for its
    /// session, KIP-848's KIP-345).
    pub(super) async fn leave_kip848(&mut self) {
        if self.member_id.is_empty() {
            return;
        }
        let mut req = ConsumerGroupHeartbeatRequest::default();
        req.group_id = GroupId(s(&self.config.group_id));
        req.member_id = s(&self.member_id);
        req.instance_id = self.config.instance_id.as_deref().map(s);
        req.member_epoch = if self.config.instance_id.is_some() { static_leave_epoch } else { leave_epoch };
        req.rebalance_timeout_ms = -1;
        let _ = self.ask_coordinator(&req).await;
    }
}
