//! The coordinator's KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe): one
//! [`ShareGroup`] per group id beside the classic and consumer groups. A group id is one kind
//! at a time: a share heartbeat for a classic group with members or a consumer group is
//! GROUP_ID_NOT_FOUND ("not a share group"), and a JoinGroup or ConsumerGroupHeartbeat for a
//! share group is refused the same way.
//!
//! Membership is kept in memory only: a coordinator that takes a partition over knows none of
//! its share groups' members, which heartbeat again, are told UNKNOWN_MEMBER_ID and rejoin
//! under their own ids (a share group hands out no exclusive ownership, so nothing is read twice
//! for it; what each member holds is the share-partition leader's, and durable:
//! `share_state`). Kafka writes the membership too (record types 10–15).

use super::share::{ShareAnswer, ShareGroup, ShareHeartbeat};
use super::{Coordinator, State};
use crate::kafka::Code;
use std::collections::BTreeMap;

impl Coordinator {
    fn partition_counts(&self) -> BTreeMap<String, i32> {
        self.topics.iter().map(|(n, (_, count))| (n.clone(), *count)).collect()
    }

    /// ShareGroupHeartbeat, its fields already [`ShareHeartbeat::validate`]d: answered at once.
    pub fn share_heartbeat(&mut self, group: &str, hb: ShareHeartbeat, now: u64) -> Result<ShareAnswer, Code> {
        if group.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(group)?;
        let classic_busy = self.groups.get(group).is_some_and(|g| g.state != State::Empty);
        if classic_busy || self.consumer_groups.contains_key(group) {
            return Err(Code::GroupIdNotFound);
        }
        let partitions = self.partition_counts();
        let (timeout, max_size) = (self.config.share_session_timeout_ms, self.config.share_max_size);
        // Only a join makes a group: a leave or a heartbeat of a member it never had leaves
        // nothing behind.
        if !self.share_groups.contains_key(group) {
            if hb.member_epoch != 0 {
                return match hb.member_epoch {
                    -1 => Ok(ShareAnswer { member_id: hb.member_id, member_epoch: -1, assignment: None }),
                    _ => Err(Code::UnknownMemberId),
                };
            }
            self.share_groups.insert(group.to_string(), ShareGroup::new(group, timeout));
        }
        let g = self.share_groups.get_mut(group).expect("present or inserted");
        if hb.member_epoch == 0 && !g.members.contains_key(&hb.member_id) && g.members.len() >= max_size {
            return Err(Code::GroupMaxSizeReached);
        }
        g.heartbeat(hb, &partitions, now)
    }

    /// Whether `group` is a share group (no classic or consumer member may use its id).
    pub fn is_share_group(&self, group: &str) -> bool {
        self.share_groups.contains_key(group)
    }

    /// A share group for ShareGroupDescribe (None: no such share group here).
    pub fn share_group(&self, group: &str) -> Result<Option<&ShareGroup>, Code> {
        self.owner(group)?;
        Ok(self.share_groups.get(group))
    }

    /// Every share group this node coordinates (ListGroups).
    pub fn share_groups(&self) -> impl Iterator<Item = &ShareGroup> {
        self.share_groups.values().filter(|g| self.owner(&g.id).is_ok())
    }

    /// Members whose session ended leave their share groups.
    pub(super) fn tick_share_groups(&mut self, now: u64) {
        let partitions = self.partition_counts();
        for g in self.share_groups.values_mut() {
            if g.next_deadline().is_some_and(|t| t <= now) {
                g.expire(now, &partitions);
            }
        }
    }

    pub(super) fn share_deadline(&self) -> Option<u64> {
        self.share_groups().filter_map(ShareGroup::next_deadline).min()
    }

    /// Offsets partition `p` is no longer led here: its share groups leave memory.
    pub(super) fn resign_share_groups(&mut self, p: i32) {
        let partitions = self.hosting.partitions();
        self.share_groups.retain(|g, _| super::partition_for(g, partitions) != p);
        self.resign_share_states(p);
    }
}
