//! One KIP-848 consumer group as its coordinator decides it: members join, heartbeat and leave
//! by ConsumerGroupHeartbeat; the group epoch moves whenever its membership or subscriptions or
//! the subscribed topics' partition counts change; a new target assignment is then computed at
//! that epoch by the group's server-side assignor (`assignors`), and each member reconciles
//! toward its part of it heartbeat by heartbeat (`reconcile`), so no partition is ever given to
//! two members. A plain struct with an explicit `now`; no IO, no clock, no randomness (member
//! ids are the client's, KIP-848 v1, or derived from the group's own counter).
//!
//! Rules, as Kafka's:
//! * a heartbeat at member epoch 0 joins; -1 leaves; -2 is a static member's temporary leave:
//!   it stays in the group, holding its partitions, until its session ends, and a member
//!   joining with its `group.instance.id` meanwhile takes its place, epoch and partitions
//!   without the group epoch moving (KIP-345's point: a restart is no rebalance); a second live
//!   member with one instance id is UNRELEASED_INSTANCE_ID;
//! * any other epoch must pass [`reconcile::check_epoch`], else FENCED_MEMBER_EPOCH; an unknown
//!   member id is UNKNOWN_MEMBER_ID;
//! * a member not heard from for the session timeout is removed (the group epoch moves).
//!
//! Not built yet: the wire (ConsumerGroupHeartbeat/Describe handlers), the group's records in
//! `__consumer_offsets`, rebalance timeouts, regex subscriptions (issue 29).

use super::assignors::{GroupSpec, MemberSpec, ServerAssignor};
use super::reconcile::{self, MemberAssignment};
use crate::client::assignor::{GroupAssignment, TopicPartitions};
use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// One member as the coordinator keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub instance_id: Option<String>,
    pub topics: BTreeSet<String>,
    pub assignment: MemberAssignment,
    /// What it said it owns at its last heartbeat (None until it says).
    pub owned: Option<TopicPartitions>,
    /// When its session ends unless it heartbeats again.
    pub expires_at: u64,
    /// A static member away on a temporary leave (-2), until it returns or its session ends.
    pub away: bool,
}

/// A heartbeat's fields the group decides on.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    /// Empty when the member joins without an id of its own (v0): one is given.
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    /// The topics it subscribes to; None: unchanged since its last heartbeat.
    pub topics: Option<BTreeSet<String>>,
    /// What it owns; None: unchanged.
    pub owned: Option<TopicPartitions>,
}

/// The answer to a heartbeat that was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub member_id: String,
    pub member_epoch: i32,
    /// Its partitions, when they changed since it last heard (None: as before).
    pub assignment: Option<TopicPartitions>,
}

/// Leaving epochs of a heartbeat.
const leave_epoch: i32 = -1;
const static_leave_epoch: i32 = -2;

#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    pub id: String,
    /// Moves with every change of membership, subscriptions or partition counts.
    pub epoch: i32,
    /// The epoch `target` was computed at.
    pub target_epoch: i32,
    pub assignor: ServerAssignor,
    pub members: BTreeMap<String, Member>,
    pub target: GroupAssignment,
    /// Partition counts the target was computed over.
    partitions: BTreeMap<String, i32>,
    session_timeout_ms: u64,
    ids_given: u64,
}

impl ConsumerGroup {
    pub fn new(id: &str, assignor: ServerAssignor, session_timeout_ms: u64) -> ConsumerGroup {
        ConsumerGroup { id: id.to_string(), epoch: 0, target_epoch: 0, assignor, members: BTreeMap::new(), target: GroupAssignment::new(), partitions: BTreeMap::new(), session_timeout_ms, ids_given: 0 }
    }

    /// Decides one heartbeat. `partitions` are the partition counts of the topics that exist.
    pub fn heartbeat(&mut self, hb: Heartbeat, partitions: &BTreeMap<String, i32>, now: u64) -> Result<Answer, Code> {
        self.expire(now);
        let mut changed = self.partitions != *partitions;
        let member_id = match hb.member_epoch {
            0 => {
                let (member_id, joined) = self.join(&hb, now)?;
                changed |= joined;
                member_id
            }
            static_leave_epoch if self.members.get(&hb.member_id).is_some_and(|m| m.instance_id.is_some()) => {
                self.members.get_mut(&hb.member_id).expect("looked up").away = true;
                return Ok(Answer { member_id: hb.member_id, member_epoch: hb.member_epoch, assignment: None });
            }
            leave_epoch | static_leave_epoch => {
                self.members.remove(&hb.member_id).ok_or(Code::UnknownMemberId)?;
                self.target.remove(&hb.member_id);
                self.partitions = partitions.clone();
                self.bump();
                return Ok(Answer { member_id: hb.member_id, member_epoch: hb.member_epoch, assignment: None });
            }
            epoch => {
                let member = self.members.get_mut(&hb.member_id).ok_or(Code::UnknownMemberId)?;
                reconcile::check_epoch(&member.assignment, epoch, hb.owned.as_ref().or(member.owned.as_ref()))?;
                member.expires_at = now + self.session_timeout_ms;
                if let Some(owned) = &hb.owned {
                    member.owned = Some(owned.clone());
                }
                if let Some(topics) = &hb.topics {
                    changed |= member.topics != *topics;
                    member.topics = topics.clone();
                }
                hb.member_id.clone()
            }
        };
        if changed {
            self.partitions = partitions.clone();
            self.bump();
        }
        Ok(self.reconcile(&member_id))
    }

    /// A member at epoch 0: new, or a static member back in the place it left. Returns its
    /// member id (one given here when it brought none) and whether the group changed (a static
    /// member back with the same subscriptions changes nothing).
    fn join(&mut self, hb: &Heartbeat, now: u64) -> Result<(String, bool), Code> {
        let before = hb.instance_id.as_ref().and_then(|instance| self.members.iter().find(|(id, m)| m.instance_id.as_ref() == Some(instance) && **id != hb.member_id).map(|(id, m)| (id.clone(), m.away)));
        if matches!(before, Some((_, false))) {
            return Err(Code::UnreleasedInstanceId);
        }
        let member_id = match hb.member_id.is_empty() {
            true => {
                self.ids_given += 1;
                format!("{}-member-{}", self.id, self.ids_given)
            }
            false => hb.member_id.clone(),
        };
        let expires_at = now + self.session_timeout_ms;
        let mut member = Member { instance_id: hb.instance_id.clone(), topics: hb.topics.clone().unwrap_or_default(), assignment: MemberAssignment::joined(), owned: None, expires_at, away: false };
        let mut target = TopicPartitions::new();
        let mut changed = true;
        // A static member back: it takes the place (epoch, partitions, target) it left.
        if let Some((old, _)) = before {
            let left = self.members.remove(&old).expect("found");
            target = self.target.remove(&old).unwrap_or_default();
            changed = hb.topics.as_ref().is_some_and(|t| *t != left.topics);
            member = Member { topics: hb.topics.clone().unwrap_or(left.topics), assignment: left.assignment, ..member };
        }
        self.members.insert(member_id.clone(), member);
        self.target.insert(member_id.clone(), target);
        Ok((member_id, changed))
    }

    /// Removes the members whose session ended; the group epoch moves if any did.
    pub fn expire(&mut self, now: u64) {
        let gone: Vec<String> = self.members.iter().filter(|(_, m)| m.expires_at <= now).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            self.members.remove(id);
            self.target.remove(id);
        }
        if !gone.is_empty() {
            self.bump();
        }
    }

    /// A new group epoch and the target at it, from each member's previous target.
    fn bump(&mut self) {
        self.epoch += 1;
        let spec: GroupSpec = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), MemberSpec { instance_id: m.instance_id.clone(), topics: m.topics.clone(), target: self.target.get(id).cloned().unwrap_or_default() }))
            .collect();
        self.target = self.assignor.assign(&spec, &self.partitions);
        self.target_epoch = self.epoch;
    }

    /// The member's next assignment toward its target; its partitions in the answer when they
    /// changed.
    fn reconcile(&mut self, member_id: &str) -> Answer {
        let others: Vec<&MemberAssignment> = self.members.iter().filter(|(id, _)| id.as_str() != member_id).map(|(_, m)| &m.assignment).collect();
        let member = &self.members[member_id];
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let next = reconcile::next(&member.assignment, self.target_epoch, &target, member.owned.as_ref(), |t, p| others.iter().any(|o| o.holds(t, p)));
        let changed = next.assigned != member.assignment.assigned || member.owned.is_none();
        let answer = Answer { member_id: member_id.to_string(), member_epoch: next.epoch, assignment: changed.then(|| next.assigned.clone()) };
        self.members.get_mut(member_id).expect("reconciled a member").assignment = next;
        answer
    }
}

#[cfg(test)]
mod tests;
