//! The consumer protocol's partition assignors, as pure functions: the group leader decodes each
//! member's subscription ([`wire`]), turns it into a [`MemberSubscription`] ([`user_data`]),
//! runs the assignor every member agreed on, and encodes one assignment per member for
//! SyncGroup. Names and behaviour follow Kafka's Java client so a Rust leader can serve Java
//! and librdkafka members, and a Rust member can follow a Java leader.
//!
//! | protocol name        | rebalance   | Kafka class                 | what it promises                                    |
//! |----------------------|-------------|-----------------------------|-----------------------------------------------------|
//! | `range`              | eager       | `RangeAssignor`             | per topic, contiguous runs in member order (exact)  |
//! | `roundrobin`         | eager       | `RoundRobinAssignor`        | partitions dealt in turn to subscribers (exact)     |
//! | `sticky`             | eager       | `StickyAssignor`            | balanced, keeps what members own where balance lets |
//! | `cooperative-sticky` | cooperative | `CooperativeStickyAssignor` | sticky's target, a moving partition revoked first   |
//!
//! "Exact": the same partitions to the same members as Java's. The sticky pair keep Java's
//! guarantees, not its every choice (see `sticky.rs`); only the leader runs an assignor, so
//! members never need to agree on more than the bytes.
//!
//! An assignor never does IO, never reads a clock or randomness and never iterates a hash map:
//! the same members and partition counts give the same bytes on every leader, every run.

mod stateless;
mod sticky;
pub mod user_data;
pub mod wire;

#[cfg(test)]
mod catalogue;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wire_tests;

use std::collections::{BTreeMap, BTreeSet};

/// Partitions by topic: ascending, without duplicates, no topic with an empty list.
pub type TopicPartitions = BTreeMap<String, Vec<i32>>;

/// What the leader hands each member: member id → its partitions. Every member of the input
/// has an entry, possibly empty (SyncGroup sends every member an assignment).
pub type GroupAssignment = BTreeMap<String, TopicPartitions>;

/// The group as the leader sees it after JoinGroup: member id → subscription. Keyed by member
/// id so a member cannot appear twice.
pub type Members = BTreeMap<String, MemberSubscription>;

/// One member's subscription, as the assignors need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSubscription {
    /// `group.instance.id` of a static member (KIP-345): orders members before member ids do.
    pub group_instance_id: Option<String>,
    /// Topics the member wants.
    pub topics: BTreeSet<String>,
    /// What the member says it owns now (the sticky assignors start from it).
    pub owned: TopicPartitions,
    /// Generation the `owned` claim comes from; -1 when unknown. A higher generation's claim
    /// wins a conflict (a member that missed a rebalance claims stale partitions).
    pub generation: i32,
}

/// How members hand partitions over when the assignment changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebalanceProtocol {
    /// Every member gives up all its partitions before it rejoins.
    Eager,
    /// Members keep their partitions across the rejoin and give up only those taken from them.
    Cooperative,
}

/// The assignors Kafka's consumers know, by their protocol names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Assignor {
    Range,
    RoundRobin,
    Sticky,
    CooperativeSticky,
}

impl Assignor {
    /// Every assignor, in the order a consumer lists them by default in this crate.
    pub const ALL: [Assignor; 4] = [Assignor::Range, Assignor::RoundRobin, Assignor::Sticky, Assignor::CooperativeSticky];

    /// The protocol name in JoinGroup, exactly as Kafka's clients spell it.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// Whether members revoke everything before rejoining, or only what they are told to.
    pub fn rebalance_protocol(self) -> RebalanceProtocol {
        match self {
            Assignor::CooperativeSticky => RebalanceProtocol::Cooperative,
            _ => RebalanceProtocol::Eager,
        }
    }

    /// The assignment for `members` over the topics' partition counts. Topics missing from
    /// `partitions_per_topic` (not yet created, or unknown to the leader's metadata) are
    /// skipped, as Kafka's assignors skip them.
    pub fn assign(self, members: &Members, partitions_per_topic: &BTreeMap<String, i32>) -> GroupAssignment {
        match self {
            Assignor::Range => stateless::range(members, partitions_per_topic),
            Assignor::RoundRobin => stateless::roundrobin(members, partitions_per_topic),
            Assignor::Sticky => sticky::assign(members, partitions_per_topic),
            Assignor::CooperativeSticky => sticky::assign_cooperative(members, partitions_per_topic),
        }
    }
}

/// The assignor a JoinGroup protocol name selects; `None` for names this client does not know.
pub fn by_name(name: &str) -> Option<Assignor> {
    Assignor::ALL.into_iter().find(|a| a.name() == name)
}

/// Member ids in Kafka's member order (`AbstractPartitionAssignor.MemberInfo.compareTo`):
/// static members first by `group.instance.id`, then dynamic members by member id. Static
/// members keep their place across restarts, when their member id changes.
///
/// Rust compares strings by UTF-8 bytes, Java by UTF-16 units: the orders differ only between
/// characters above U+FFFF and those in U+E000..U+FFFF, which group ids do not mix in practice.
pub(crate) fn member_order(members: &Members) -> Vec<(&str, &MemberSubscription)> {
    let mut order: Vec<(&str, &MemberSubscription)> = members.iter().map(|(id, m)| (id.as_str(), m)).collect();
    order.sort_by(|(a_id, a), (b_id, b)| match (&a.group_instance_id, &b.group_instance_id) {
        (Some(a), Some(b)) => a.cmp(b).then(a_id.cmp(b_id)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a_id.cmp(b_id),
    });
    order
}

/// Topics someone subscribes to that exist, with their partition counts (non-positive counts
/// give no partitions).
fn subscribed_topics<'a>(members: &Members, partitions_per_topic: &'a BTreeMap<String, i32>) -> BTreeMap<&'a str, i32> {
    let wanted: BTreeSet<&str> = members.values().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
    partitions_per_topic.iter().filter(|(t, n)| **n > 0 && wanted.contains(t.as_str())).map(|(t, n)| (t.as_str(), *n)).collect()
}

/// An assignment with an empty entry for every member, for the assignors to fill.
fn empty_assignment(members: &Members) -> GroupAssignment {
    members.keys().map(|id| (id.clone(), TopicPartitions::new())).collect()
}

/// Adds one partition to a member's assignment. Assignors add each member's partitions of a
/// topic in ascending order, so the lists need no sorting after.
fn give(out: &mut GroupAssignment, member: &str, topic: &str, partition: i32) {
    if let Some(a) = out.get_mut(member) {
        let parts = a.entry(topic.to_string()).or_default();
        debug_assert!(parts.last().is_none_or(|last| *last < partition), "{member} {topic}: {partition} after {parts:?}");
        parts.push(partition);
    }
}

/// Sorts and dedups every partition list and drops empty topics: the [`TopicPartitions`]
/// invariant.
fn normalize(tp: &mut TopicPartitions) {
    for parts in tp.values_mut() {
        parts.sort_unstable();
        parts.dedup();
    }
    tp.retain(|_, parts| !parts.is_empty());
}
