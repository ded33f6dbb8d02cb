//! One KIP-932 share group's membership: its epoch, its members and what each is assigned.
//! A share group has no ownership to hand over (many members may read one partition; the
//! share-partition leader decides which records each gets), so there is no revocation: every
//! heartbeat gives a member the group's current target at once, and its member epoch becomes
//! the group epoch. The one invariant: the target is the simple assignor's plan over the
//! members and the subscribed partitions as of `epoch`, and `epoch` moves whenever either
//! changes. A plain struct driven with an explicit `now`; no IO.
//!
//! The simple assignor (Kafka's `simple`): each subscribed topic's partitions are dealt to its
//! subscribers in turn, starting where the previous topic left off; where a topic has more
//! subscribers than partitions, each subscriber gets one partition and partitions are shared
//! (`ceil(subscribers / partitions)` readers at most).

use crate::client::assignor::TopicPartitions;
use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// A ShareGroupHeartbeat's fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareHeartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Subscribed topics (None: unchanged).
    pub topics: Option<Vec<String>>,
}

impl ShareHeartbeat {
    /// Kafka's checks of a heartbeat's fields (INVALID_REQUEST and its message).
    pub fn validate(&self) -> Result<(), (Code, &'static str)> {
        if self.member_id.is_empty() {
            return Err((Code::InvalidRequest, "MemberId can't be empty."));
        }
        if self.rack.as_deref() == Some("") {
            return Err((Code::InvalidRequest, "RackId can't be empty."));
        }
        if self.member_epoch == 0 && self.topics.as_ref().is_none_or(|t| t.is_empty()) {
            return Err((Code::InvalidRequest, "SubscribedTopicNames must be set in first request."));
        }
        if self.member_epoch < -1 {
            return Err((Code::InvalidRequest, "MemberEpoch is invalid."));
        }
        Ok(())
    }
}

/// What a heartbeat is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    /// The member's partitions when they changed, or it joined or said its subscription
    /// (None: as before).
    pub assignment: Option<TopicPartitions>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareMember {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topics: BTreeSet<String>,
    pub assigned: TopicPartitions,
    /// When its session ends unless it heartbeats again.
    pub deadline: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroup {
    pub id: String,
    pub epoch: i32,
    /// The epoch the target was computed at.
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
    pub target: BTreeMap<String, TopicPartitions>,
    /// The partition counts of the subscribed topics the target was computed with.
    pub(super) subscribed: BTreeMap<String, i32>,
    pub(super) session_timeout_ms: u64,
    /// The hash of `subscribed` as stored, from a load until the load ends (`share_stored`).
    pub(super) loaded_hash: Option<i64>,
    /// After a write failed: the members that write may have stored (the next write is the
    /// whole group, with their tombstones).
    pub(super) unsynced: Option<BTreeSet<String>>,
    /// Its deletion is being written: nothing joins it, and its share-partition states are
    /// neither read nor written, until that write is replicated (or failed).
    pub deleting: bool,
}

impl ShareGroup {
    pub fn new(id: &str, session_timeout_ms: u64) -> ShareGroup {
        ShareGroup { id: id.to_string(), epoch: 0, assignment_epoch: 0, members: BTreeMap::new(), target: BTreeMap::new(), subscribed: BTreeMap::new(), session_timeout_ms, loaded_hash: None, unsynced: None, deleting: false }
    }

    /// Kafka's share-group states: Empty without members, Stable with.
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() { "Empty" } else { "Stable" }
    }

    /// A heartbeat: joins (epoch 0), leaves (-1) or keeps the member, fenced by its epoch.
    /// `partitions` are the cluster's topics and partition counts.
    pub fn heartbeat(&mut self, hb: ShareHeartbeat, partitions: &BTreeMap<String, i32>, now: u64) -> Result<ShareAnswer, Code> {
        let id = hb.member_id.clone();
        match hb.member_epoch {
            -1 => {
                if self.members.remove(&id).is_some() {
                    self.recompute(partitions);
                }
                return Ok(ShareAnswer { member_id: id, member_epoch: -1, assignment: None });
            }
            0 => {
                let m = self.members.entry(id.clone()).or_default();
                m.client_id = hb.client_id.clone();
                m.client_host = hb.client_host.clone();
            }
            epoch => {
                let m = self.members.get(&id).ok_or(Code::UnknownMemberId)?;
                if epoch > m.epoch || (epoch < m.epoch && epoch != m.previous_epoch) {
                    return Err(Code::FencedMemberEpoch);
                }
            }
        }
        let full = hb.member_epoch == 0 || hb.topics.is_some();
        let asked_epoch = hb.member_epoch;
        let m = self.members.get_mut(&id).expect("joined or known");
        m.deadline = now + self.session_timeout_ms;
        let mut changed = hb.member_epoch == 0 && m.epoch == 0 && m.topics.is_empty();
        if let Some(topics) = hb.topics {
            let topics: BTreeSet<String> = topics.into_iter().collect();
            changed |= topics != m.topics;
            m.topics = topics;
        }
        if hb.rack.is_some() {
            m.rack = hb.rack;
        }
        if changed || self.subscribed_now(partitions) != self.subscribed {
            self.recompute(partitions);
        }
        let target = self.target.get(&id).cloned().unwrap_or_default();
        let m = self.members.get_mut(&id).expect("known");
        let moved = m.assigned != target || m.epoch != self.assignment_epoch;
        if m.epoch != self.assignment_epoch {
            m.previous_epoch = m.epoch;
            m.epoch = self.assignment_epoch;
        }
        m.assigned = target;
        // A member at an epoch other than its own missed an answer (it was lost, or timed out
        // while its write replicated): it is told its partitions again, as Kafka does.
        let missed = asked_epoch != m.epoch;
        Ok(ShareAnswer { member_id: id, member_epoch: m.epoch, assignment: (moved || full || missed).then(|| m.assigned.clone()) })
    }

    /// Members whose session ended leave.
    pub fn expire(&mut self, now: u64, partitions: &BTreeMap<String, i32>) -> bool {
        let before = self.members.len();
        self.members.retain(|_, m| m.deadline > now);
        let gone = self.members.len() != before;
        if gone {
            self.recompute(partitions);
        }
        gone
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.members.values().map(|m| m.deadline).min()
    }

    /// The partition counts of the topics the members subscribe to, as the cluster has them.
    pub(super) fn subscribed_now(&self, partitions: &BTreeMap<String, i32>) -> BTreeMap<String, i32> {
        self.members.values().flat_map(|m| &m.topics).filter_map(|t| Some((t.clone(), *partitions.get(t)?))).collect()
    }

    /// A new epoch and its target.
    pub(super) fn recompute(&mut self, partitions: &BTreeMap<String, i32>) {
        self.epoch += 1;
        self.subscribed = self.subscribed_now(partitions);
        self.target = simple_assignment(&self.members, &self.subscribed);
        self.assignment_epoch = self.epoch;
    }
}

/// Kafka's `simple` assignor, as the module header describes it: every member subscribed to a
/// topic gets at least one of its partitions, every partition at least one reader, and the
/// counts differ by at most one across a topic's subscribers.
pub fn simple_assignment(members: &BTreeMap<String, ShareMember>, subscribed: &BTreeMap<String, i32>) -> BTreeMap<String, TopicPartitions> {
    let mut plan: BTreeMap<String, TopicPartitions> = members.keys().map(|m| (m.clone(), TopicPartitions::new())).collect();
    let mut turn = 0usize;
    for (topic, &count) in subscribed {
        let readers: Vec<&String> = members.iter().filter(|(_, m)| m.topics.contains(topic)).map(|(id, _)| id).collect();
        if readers.is_empty() || count <= 0 {
            continue;
        }
        let count = count as usize;
        let mut give = |member: &String, p: usize| plan.get_mut(member).expect("a member").entry(topic.clone()).or_default().push(p as i32);
        if readers.len() <= count {
            for p in 0..count {
                give(readers[(p + turn) % readers.len()], p);
            }
        } else {
            for (i, member) in readers.iter().enumerate() {
                give(member, (i + turn) % count);
            }
        }
        turn += count.max(readers.len());
    }
    for tps in plan.values_mut() {
        tps.values_mut().for_each(|ps| ps.sort_unstable());
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> ShareHeartbeat {
        ShareHeartbeat { member_id: member.into(), member_epoch: epoch, topics: topics.map(|t| t.iter().map(|x| x.to_string()).collect()), ..Default::default() }
    }

    fn two() -> BTreeMap<String, i32> {
        [("t".to_string(), 2)].into_iter().collect()
    }

    #[test]
    fn three_members_share_two_partitions_and_a_leave_moves_the_epoch() {
        let mut g = ShareGroup::new("g", 45_000);
        let a = g.heartbeat(hb("a", 0, Some(&["t"])), &two(), 0).unwrap();
        assert_eq!((a.member_epoch, a.assignment.clone().unwrap()["t"].clone()), (1, vec![0, 1]));
        g.heartbeat(hb("b", 0, Some(&["t"])), &two(), 0).unwrap();
        g.heartbeat(hb("c", 0, Some(&["t"])), &two(), 0).unwrap();
        assert_eq!(g.epoch, 3);
        let readers: Vec<i32> = ["a", "b", "c"].iter().flat_map(|m| g.target[*m]["t"].clone()).collect();
        assert_eq!(readers.len(), 3, "one partition each: {:?}", g.target);
        assert!(readers.contains(&0) && readers.contains(&1));
        // a heartbeats at its old epoch and is brought to the new one, with its new partitions.
        let a = g.heartbeat(hb("a", 1, None), &two(), 10).unwrap();
        assert_eq!(a.member_epoch, 3);
        assert_eq!(a.assignment.unwrap()["t"].len(), 1);
        // Nothing changed: no assignment in the answer.
        assert_eq!(g.heartbeat(hb("a", 3, None), &two(), 20).unwrap().assignment, None);
        g.heartbeat(hb("c", -1, None), &two(), 30).unwrap();
        assert_eq!(g.epoch, 4);
        assert!(g.target.values().all(|t| t["t"].len() == 1));
    }

    #[test]
    fn a_member_that_missed_its_answer_is_told_its_partitions_again() {
        let mut g = ShareGroup::new("g", 45_000);
        g.heartbeat(hb("a", 0, Some(&["t"])), &two(), 0).unwrap();
        g.heartbeat(hb("b", 0, Some(&["t"])), &two(), 0).unwrap();
        // a's answer moving it to epoch 2 (one partition) is lost: it heartbeats at epoch 1.
        let first = g.heartbeat(hb("a", 1, None), &two(), 10).unwrap();
        assert_eq!(first.member_epoch, 2);
        let again = g.heartbeat(hb("a", 1, None), &two(), 20).unwrap();
        assert_eq!((again.member_epoch, again.assignment), (2, first.assignment), "the same partitions, sent again");
        assert_eq!(g.heartbeat(hb("a", 2, None), &two(), 30).unwrap().assignment, None, "in step: nothing to send");
    }

    #[test]
    fn fencing_and_unknown_members() {
        let mut g = ShareGroup::new("g", 45_000);
        g.heartbeat(hb("a", 0, Some(&["t"])), &two(), 0).unwrap();
        assert_eq!(g.heartbeat(hb("a", 7, None), &two(), 0), Err(Code::FencedMemberEpoch));
        assert_eq!(g.heartbeat(hb("x", 1, None), &two(), 0), Err(Code::UnknownMemberId));
        assert_eq!(hb("a", 0, None).validate().unwrap_err().0, Code::InvalidRequest);
        assert_eq!(hb("", 1, None).validate().unwrap_err().0, Code::InvalidRequest);
    }

    #[test]
    fn sessions_end_and_partitions_added_move_the_epoch() {
        let mut g = ShareGroup::new("g", 100);
        g.heartbeat(hb("a", 0, Some(&["t"])), &two(), 0).unwrap();
        g.heartbeat(hb("b", 0, Some(&["t"])), &two(), 50).unwrap();
        assert!(g.expire(100, &two()));
        assert_eq!(g.members.keys().collect::<Vec<_>>(), ["b"]);
        let three: BTreeMap<String, i32> = [("t".to_string(), 3)].into_iter().collect();
        let epoch = g.members["b"].epoch;
        let b = g.heartbeat(hb("b", epoch, None), &three, 120).unwrap();
        assert_eq!(b.assignment.unwrap()["t"], vec![0, 1, 2]);
    }

    #[test]
    fn more_subscribers_than_partitions_share_them() {
        let mut members = BTreeMap::new();
        for m in ["a", "b"] {
            members.insert(m.to_string(), ShareMember { topics: ["x", "y"].iter().map(|t| t.to_string()).collect(), ..Default::default() });
        }
        let subscribed = [("x".to_string(), 1), ("y".to_string(), 1)].into_iter().collect();
        let plan = simple_assignment(&members, &subscribed);
        assert_eq!(plan["a"].get("x"), Some(&vec![0]));
        assert_eq!(plan["b"].get("y"), Some(&vec![0]));
    }
}
