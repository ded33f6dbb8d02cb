//! The coordinator's KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe):
//! one [`ConsumerGroup`] per group id beside the classic groups, sharing their offsets (a
//! consumer group's committed offsets live in the classic map's Empty entry, so OffsetFetch,
//! DeleteGroups and expiry treat both alike). A group id is one kind at a time: a
//! ConsumerGroupHeartbeat for a classic group with members is GROUP_ID_NOT_FOUND, a JoinGroup
//! for a consumer group with members INCONSISTENT_GROUP_PROTOCOL. Calls on [`Coordinator`]
//! with an explicit `now`; no IO.
//!
//! Not built yet (issue 29): the groups' records in `__consumer_offsets` (a coordinator that
//! takes over starts them empty: members rejoin, fenced), classic members inside a consumer
//! group (KIP-848's online migration).

use super::consumer::{Answer, ConsumerGroup, Heartbeat};
use super::{Coordinator, State};
use crate::kafka::Code;
use std::collections::BTreeMap;

impl Coordinator {
    /// ConsumerGroupHeartbeat, its fields already [`Heartbeat::validate`]d. `topics` are the
    /// partition counts of every topic that exists.
    pub fn consumer_heartbeat(&mut self, group: &str, hb: Heartbeat, topics: &BTreeMap<String, i32>, now: u64) -> Result<Answer, Code> {
        if group.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(group)?;
        if self.groups.get(group).is_some_and(|g| !matches!(g.state, State::Empty | State::Dead)) {
            return Err(Code::GroupIdNotFound);
        }
        let config = &self.config;
        let g = self.consumer_groups.entry(group.to_string()).or_insert_with(|| ConsumerGroup::new(group, &config.consumer_assignors, config.consumer_session_timeout_ms));
        if hb.member_epoch == 0 && !g.members.contains_key(&hb.member_id) && g.members.values().filter(|m| !m.away).count() >= config.max_size {
            return Err(Code::GroupMaxSizeReached);
        }
        g.heartbeat(hb, topics, now)
    }

    /// A consumer group for ConsumerGroupDescribe (None: no such group here).
    pub fn consumer_group(&self, group: &str) -> Result<Option<&ConsumerGroup>, Code> {
        self.owner(group)?;
        Ok(self.consumer_groups.get(group))
    }

    /// Every consumer group this node coordinates (ListGroups).
    pub fn consumer_groups(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.consumer_groups.values().filter(|g| self.owner(&g.id).is_ok())
    }

    /// Whether `group` is a consumer group with members: no classic member may join it, and it
    /// cannot be deleted.
    pub(super) fn consumer_members(&self, group: &str) -> bool {
        self.consumer_groups.get(group).is_some_and(|g| !g.members.is_empty())
    }

    /// An OffsetCommit's or OffsetFetch's member check when `group` is a consumer group (None:
    /// it is not one, the classic rules apply).
    pub fn consumer_member_check(&self, group: &str, member: &str, epoch: i32) -> Option<Result<(), Code>> {
        self.consumer_groups.get(group).map(|g| g.check_member(member, epoch))
    }

    /// Sessions and rebalance timeouts run out; a group left with no members goes (its
    /// offsets stay with the classic entry).
    pub(super) fn tick_consumer_groups(&mut self, now: u64) {
        for g in self.consumer_groups.values_mut() {
            g.expire(now);
        }
        self.consumer_groups.retain(|_, g| !g.members.is_empty());
    }

    /// The next time a consumer group's member times out.
    pub(super) fn consumer_deadline(&self) -> Option<u64> {
        self.consumer_groups().filter_map(ConsumerGroup::next_deadline).min()
    }

    /// This node no longer coordinates offsets partition `p`: its consumer groups leave memory.
    pub(super) fn resign_consumer_groups(&mut self, p: i32) {
        let partitions = self.hosting.partitions();
        self.consumer_groups.retain(|g, _| super::partition_for(g, partitions) != p);
    }
}
