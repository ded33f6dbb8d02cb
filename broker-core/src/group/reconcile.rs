//! KIP-848's incremental reconciliation of one consumer-group member (Kafka's
//! `CurrentAssignmentBuilder`): from what the member was last given, the group's target for it
//! and what it says it owns, the next assignment the coordinator tells it. A partition moves
//! between members in two steps: its owner is told to revoke it, and only once that owner's
//! heartbeat shows it let go is the partition given to its new member. So no partition is ever
//! assigned to two members, whatever order their heartbeats come in. A plain function of its
//! inputs; no IO, no clock.
//!
//! A member's states, as Kafka names them:
//! * `Stable`: it has all of its target at the target's epoch;
//! * `UnrevokedPartitions`: it must first give up `revoking`; its epoch stays until its
//!   heartbeat's owned partitions no longer hold any of them, and nothing new is given meanwhile;
//! * `UnreleasedPartitions`: it is at the target's epoch and has what is free of its target;
//!   the rest still belongs to members revoking it, and comes with a later heartbeat.
//!
//! A heartbeat's member epoch is checked first ([`check_epoch`], KIP-848's fencing): a member
//! that missed the answer to its last heartbeat may repeat its previous epoch, nothing else
//! behind or ahead is taken.
//!
//! Not built yet: the consumer group protocol that runs it (ConsumerGroupHeartbeat, issue 29).

use crate::client::assignor::TopicPartitions;

/// Where a member stands against its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    Stable,
    UnrevokedPartitions,
    UnreleasedPartitions,
}

/// What the coordinator last told a member, and where that leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    /// The member epoch: the target epoch it reached.
    pub epoch: i32,
    /// The epoch before it (a member that missed an answer may still send it).
    pub previous_epoch: i32,
    pub state: MemberState,
    /// The partitions it is given (it may consume them).
    pub assigned: TopicPartitions,
    /// The partitions it must revoke before it moves on.
    pub revoking: TopicPartitions,
}

impl MemberAssignment {
    /// A member that just joined: epoch 0, nothing given.
    pub fn joined() -> MemberAssignment {
        MemberAssignment { epoch: 0, previous_epoch: 0, state: MemberState::Stable, assigned: TopicPartitions::new(), revoking: TopicPartitions::new() }
    }

    /// Whether it holds `topic`-`partition`, given or still to revoke: no other member may be
    /// given it meanwhile.
    pub fn holds(&self, topic: &str, partition: i32) -> bool {
        [&self.assigned, &self.revoking].iter().any(|tp| tp.get(topic).is_some_and(|ps| ps.contains(&partition)))
    }
}

/// The member's next assignment. `target` is its part of the group's target at `target_epoch`;
/// `owned` what its heartbeat says it owns (None: it did not say, so nothing is known to be let
/// go); `held_elsewhere(topic, partition)` whether another member holds the partition (given
/// or still to revoke, [`MemberAssignment::holds`]).
pub fn next(current: &MemberAssignment, target_epoch: i32, target: &TopicPartitions, owned: Option<&TopicPartitions>, held_elsewhere: impl Fn(&str, i32) -> bool) -> MemberAssignment {
    if current.state == MemberState::UnrevokedPartitions {
        let let_go = owned.is_some_and(|owned| !intersects(owned, &current.revoking));
        if !let_go {
            return current.clone();
        }
    }
    if current.state == MemberState::Stable && current.epoch == target_epoch {
        return current.clone();
    }
    let kept = intersection(&current.assigned, target);
    let revoking = difference(&current.assigned, target);
    if !revoking.is_empty() {
        return MemberAssignment { epoch: current.epoch, previous_epoch: current.previous_epoch, state: MemberState::UnrevokedPartitions, assigned: kept, revoking };
    }
    let mut assigned = kept;
    let mut unreleased = false;
    for (topic, parts) in target {
        for &p in parts {
            if assigned.get(topic).is_some_and(|ps| ps.contains(&p)) {
                continue;
            }
            if held_elsewhere(topic, p) {
                unreleased = true;
            } else {
                assigned.entry(topic.clone()).or_default().push(p);
            }
        }
    }
    assigned.values_mut().for_each(|ps| ps.sort_unstable());
    let state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
    let previous_epoch = if target_epoch == current.epoch { current.previous_epoch } else { current.epoch };
    MemberAssignment { epoch: target_epoch, previous_epoch, state, assigned, revoking: TopicPartitions::new() }
}

/// Whether a heartbeat's `epoch` may be taken from a member whose last assignment is `current`:
/// its own epoch, or the previous one when the partitions it says it owns are all still given
/// to it (it missed the answer that moved it on, and owns nothing it should not). Anything else
/// is FENCED_MEMBER_EPOCH: the member must rejoin at epoch 0.
pub fn check_epoch(current: &MemberAssignment, epoch: i32, owned: Option<&TopicPartitions>) -> Result<(), crate::kafka::Code> {
    let repeats_previous = epoch == current.previous_epoch && owned.is_some_and(|owned| difference(owned, &current.assigned).is_empty());
    match epoch == current.epoch || repeats_previous {
        true => Ok(()),
        false => Err(crate::kafka::Code::FencedMemberEpoch),
    }
}

fn intersects(a: &TopicPartitions, b: &TopicPartitions) -> bool {
    a.iter().any(|(t, ps)| b.get(t).is_some_and(|qs| ps.iter().any(|p| qs.contains(p))))
}

fn intersection(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    filter(a, |t, p| b.get(t).is_some_and(|qs| qs.contains(&p)))
}

fn difference(a: &TopicPartitions, b: &TopicPartitions) -> TopicPartitions {
    filter(a, |t, p| !b.get(t).is_some_and(|qs| qs.contains(&p)))
}

/// `a`'s partitions that `keep` keeps, no topic left with an empty list.
fn filter(a: &TopicPartitions, keep: impl Fn(&str, i32) -> bool) -> TopicPartitions {
    a.iter()
        .map(|(t, ps)| (t.clone(), ps.iter().copied().filter(|p| keep(t, *p)).collect::<Vec<i32>>()))
        .filter(|(_, ps)| !ps.is_empty())
        .collect()
}

#[cfg(test)]
mod tests;
