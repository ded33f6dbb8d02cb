//! The server-side assignors of KIP-848 consumer groups (`group.consumer.assignors`: `uniform`,
//! Kafka's default, and `range`): the target assignment of a group's members, computed by the
//! coordinator from their subscriptions, the topics' partition counts and the previous target.
//! Pure functions: no IO, no clock, no randomness, no hash order; the same group gives the same
//! target on every coordinator, every run. Reconciliation (a partition revoked by its owner
//! before another member is given it) is the coordinator's, not theirs: a target may move a
//! partition in one step.
//!
//! | name      | Kafka class       | what it promises                                                  |
//! |-----------|-------------------|-------------------------------------------------------------------|
//! | `uniform` | `UniformAssignor` | a partition goes only to a subscriber of its topic; counts balanced (within one with equal subscriptions); as much of the previous target kept as balance allows |
//! | `range`   | `RangeAssignor`   | per topic, each subscriber gets its quota (n / m, one more for the first n % m in member order); it keeps what its previous target holds within its quota, the rest fill in ascending order; with no previous target these are Kafka's ranges, the same partition numbers for members subscribed alike (co-partitioning) |
//!
//! `uniform` is the sticky assignor's plan (`client::assignor`, Kafka's KIP-54 guarantees) run
//! on the previous target instead of members' claims. Member order is Kafka's: static members
//! by `group.instance.id`, then the others by member id, so a static member that returns under
//! a new member id keeps its place and, the coordinator handing it its previous target, its
//! partitions. Not built yet: the consumer group protocol that runs them (ConsumerGroupHeartbeat,
//! issue 29).

use crate::client::assignor::{member_order, Assignor, GroupAssignment, MemberSubscription, Members, TopicPartitions};
use std::collections::{BTreeMap, BTreeSet};

/// One member as the assignor sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSpec {
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// The topics it subscribes to (a regex already resolved to names).
    pub topics: BTreeSet<String>,
    /// Its previous target assignment (empty for a new member).
    pub target: TopicPartitions,
}

/// The group: member id → spec.
pub type GroupSpec = BTreeMap<String, MemberSpec>;

/// The assignors a consumer group may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerAssignor {
    Uniform,
    Range,
}

impl ServerAssignor {
    /// Kafka's `group.consumer.assignors` default order: the first is used unless a member asks.
    pub const ALL: [ServerAssignor; 2] = [ServerAssignor::Uniform, ServerAssignor::Range];

    /// The name members ask for (`group.remote.assignor`, ConsumerGroupHeartbeat's
    /// `ServerAssignor`).
    pub fn name(self) -> &'static str {
        match self {
            ServerAssignor::Uniform => "uniform",
            ServerAssignor::Range => "range",
        }
    }

    pub fn by_name(name: &str) -> Option<ServerAssignor> {
        ServerAssignor::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The target for `members` over the topics' partition counts; every member has an entry
    /// (possibly empty). Topics missing from `partitions` (not created yet) are skipped.
    pub fn assign(self, members: &GroupSpec, partitions: &BTreeMap<String, i32>) -> GroupAssignment {
        match self {
            ServerAssignor::Uniform => uniform(members, partitions),
            ServerAssignor::Range => range(members, partitions),
        }
    }
}

/// The group as the classic assignors' input: each previous target as the member's claim, all
/// of one generation (the coordinator never gives a partition to two targets, so no claims
/// conflict and the sticky plan keeps all it can).
fn as_claims(members: &GroupSpec) -> Members {
    members
        .iter()
        .map(|(id, m)| (id.clone(), MemberSubscription { group_instance_id: m.instance_id.clone(), topics: m.topics.clone(), owned: m.target.clone(), generation: 1 }))
        .collect()
}

fn uniform(members: &GroupSpec, partitions: &BTreeMap<String, i32>) -> GroupAssignment {
    Assignor::Sticky.assign(&as_claims(members), partitions)
}

fn range(members: &GroupSpec, partitions: &BTreeMap<String, i32>) -> GroupAssignment {
    let claims = as_claims(members);
    let order: Vec<&str> = member_order(&claims).into_iter().map(|(id, _)| id).collect();
    let mut out: GroupAssignment = members.keys().map(|id| (id.clone(), TopicPartitions::new())).collect();
    for (topic, &count) in partitions.iter().filter(|(_, n)| **n > 0) {
        let subscribers: Vec<&str> = order.iter().copied().filter(|id| members[*id].topics.contains(topic)).collect();
        if subscribers.is_empty() {
            continue;
        }
        let n = count as usize;
        let (quota, extra) = (n / subscribers.len(), n % subscribers.len());
        let quota_of = |i: usize| quota + usize::from(i < extra);
        let mut taken = vec![false; n];
        let mut given: Vec<Vec<i32>> = vec![Vec::new(); subscribers.len()];
        // What each keeps of its previous target, within its quota.
        for (i, id) in subscribers.iter().enumerate() {
            let previous = members[*id].target.get(topic).map(Vec::as_slice).unwrap_or_default();
            for &p in previous.iter().filter(|&&p| (0..count).contains(&p)) {
                if given[i].len() < quota_of(i) && !taken[p as usize] {
                    taken[p as usize] = true;
                    given[i].push(p);
                }
            }
        }
        // The rest, ascending, to whoever is below its quota, in member order.
        let mut free = (0..count).filter(|p| !taken[*p as usize]);
        for (i, parts) in given.iter_mut().enumerate() {
            while parts.len() < quota_of(i) {
                parts.push(free.next().expect("the quotas add up to the partition count"));
            }
        }
        for (id, mut parts) in subscribers.into_iter().zip(given).filter(|(_, parts)| !parts.is_empty()) {
            parts.sort_unstable();
            out.get_mut(id).expect("every member has an entry").insert(topic.clone(), parts);
        }
    }
    out
}

#[cfg(test)]
mod tests;
