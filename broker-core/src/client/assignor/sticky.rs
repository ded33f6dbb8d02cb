//! Kafka's `sticky` and `cooperative-sticky` assignors: a balanced assignment that keeps as much
//! of what members own as balance allows (KIP-54), and its cooperative form (KIP-429), which
//! never hands a partition straight from one member to another.
//!
//! The plan, in three steps:
//! 1. Claims: each member keeps what it owns of topics it still subscribes to. Two members
//!    claiming one partition (one missed a rebalance) is settled by generation, the highest
//!    wins; a tie at the highest leaves it to nobody. Kafka's `AbstractStickyAssignor` has two
//!    paths that differ here: with equal subscriptions it drops every claim of a member behind
//!    the newest generation and gives a tied partition to nobody; otherwise it settles
//!    partition by partition and a tie goes to whichever claim it read first (hash order).
//!    This takes the general path's rule with the equal path's tie: an uncontested stale claim
//!    is kept (nobody else holds it), and no hash order decides anything.
//! 2. Unowned partitions go, those with the fewest possible takers first, each to its least
//!    loaded taker.
//! 3. Balance: while a member holds more than one partition more than some member that could
//!    take one of them, the most loaded such member gives one away (the receiver being the
//!    least loaded, the partition preferably one it did not own before, else its highest).
//!    Each move lowers the sum of squared counts, so this ends; at the end no single move
//!    improves balance, which is Kafka's `isBalanced` criterion. With equal subscriptions that
//!    means counts differ by at most one.
//!
//! The result matches Java's in its guarantees, not partition for partition: only the leader
//! runs the assignor, so members need not agree on the algorithm, only on the bytes it sends.
//!
//! Cooperative: where the plan gives a member a partition that another member claims and it
//! does not, that partition is left out this round. Its owner sees it missing and revokes it,
//! everyone rejoins, and the next round places it (Kafka's `CooperativeStickyAssignor`
//! `adjustAssignment`). The assignor must never give out a partition someone else still
//! claims: two members would consume it at once.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::{empty_assignment, give, member_order, normalize, subscribed_topics, GroupAssignment, Members};

/// A partition: topic and index.
type Tp<'a> = (&'a str, i32);

pub(super) fn assign(members: &Members, partitions_per_topic: &BTreeMap<String, i32>) -> GroupAssignment {
    let topics = subscribed_topics(members, partitions_per_topic);
    let mut plan = Plan::new(members, &topics);
    plan.place_unowned(&topics);
    plan.balance();
    plan.into_assignment(members)
}

pub(super) fn assign_cooperative(members: &Members, partitions_per_topic: &BTreeMap<String, i32>) -> GroupAssignment {
    let mut out = assign(members, partitions_per_topic);
    for (member, topic, partition) in in_transit(members, &out) {
        if let Some(parts) = out.get_mut(&member).and_then(|a| a.get_mut(&topic)) {
            parts.retain(|p| *p != partition);
        }
    }
    out.values_mut().for_each(normalize);
    out
}

/// `(new owner, topic, partition)` for each partition the plan gives to a member that does not
/// claim it while another member does: it must be revoked before it is handed over.
pub(super) fn in_transit(members: &Members, plan: &GroupAssignment) -> Vec<(String, String, i32)> {
    let mut claimants: BTreeMap<(&str, i32), BTreeSet<&str>> = BTreeMap::new();
    for (id, m) in members {
        for (topic, parts) in &m.owned {
            for p in parts {
                claimants.entry((topic.as_str(), *p)).or_default().insert(id.as_str());
            }
        }
    }
    let mut out = Vec::new();
    for (member, assignment) in plan {
        for (topic, parts) in assignment {
            for p in parts {
                if claimants.get(&(topic.as_str(), *p)).is_some_and(|c| !c.contains(member.as_str())) {
                    out.push((member.clone(), topic.clone(), *p));
                }
            }
        }
    }
    out
}

/// The assignment being worked out. Members are indices in Kafka's member order, which breaks
/// every tie.
struct Plan<'a> {
    ids: Vec<&'a str>,
    /// For each existing subscribed topic, the members subscribed to it.
    takers: BTreeMap<&'a str, Vec<usize>>,
    held: Vec<BTreeSet<Tp<'a>>>,
    /// What each member kept from its claim: moving one of these costs stickiness.
    kept: Vec<BTreeSet<Tp<'a>>>,
}

impl<'a> Plan<'a> {
    /// Step 1: every member holds what it wins of its claims.
    fn new(members: &'a Members, topics: &BTreeMap<&'a str, i32>) -> Self {
        let order = member_order(members);
        let ids: Vec<&str> = order.iter().map(|(id, _)| *id).collect();
        let mut takers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, (_, m)) in order.iter().enumerate() {
            for topic in m.topics.iter().filter_map(|t| topics.get_key_value(t.as_str()).map(|(t, _)| *t)) {
                takers.entry(topic).or_default().push(i);
            }
        }
        let mut kept = vec![BTreeSet::new(); ids.len()];
        for (tp, winner) in winning_claims(&order, topics) {
            kept[winner].insert(tp);
        }
        Plan { ids, takers, held: kept.clone(), kept }
    }

    /// Step 2: partitions nobody holds, fewest possible takers first, each to the least loaded.
    fn place_unowned(&mut self, topics: &BTreeMap<&'a str, i32>) {
        let held: BTreeSet<Tp> = self.held.iter().flatten().copied().collect();
        let mut free: Vec<(usize, Tp)> = Vec::new();
        for (topic, count) in topics {
            let choices = self.takers.get(topic).map_or(0, Vec::len);
            free.extend((0..*count).map(|p| (choices, (*topic, p))).filter(|(_, tp)| !held.contains(tp)));
        }
        free.sort_unstable();
        for (_, tp) in free {
            if let Some(i) = self.lightest(tp.0) {
                self.held[i].insert(tp);
            }
        }
    }

    /// Step 3: single moves from the most to the least loaded until none helps.
    fn balance(&mut self) {
        // Terminates: each move takes a partition from a member with `c` to one with at most
        // `c - 2`, lowering the sum of squared counts by at least 2.
        while let Some((from, tp, to)) = self.best_move() {
            self.held[from].remove(&tp);
            self.held[to].insert(tp);
        }
    }

    fn best_move(&self) -> Option<(usize, Tp<'a>, usize)> {
        let lightest: BTreeMap<&str, usize> = self.takers.keys().filter_map(|t| self.lightest(t).map(|i| (*t, i))).collect();
        let mut givers: Vec<usize> = (0..self.ids.len()).collect();
        givers.sort_by_key(|&i| (Reverse(self.held[i].len()), i));
        for from in givers {
            let best = self.held[from]
                .iter()
                .filter_map(|tp| {
                    let to = *lightest.get(tp.0)?;
                    let helps = self.held[from].len() > self.held[to].len() + 1;
                    helps.then_some(((self.held[to].len(), self.kept[from].contains(tp), Reverse(*tp)), *tp, to))
                })
                .min_by_key(|(key, ..)| *key);
            if let Some((_, tp, to)) = best {
                return Some((from, tp, to));
            }
        }
        None
    }

    /// The member subscribed to `topic` holding fewest partitions (ties: member order).
    fn lightest(&self, topic: &str) -> Option<usize> {
        self.takers.get(topic)?.iter().copied().min_by_key(|&i| (self.held[i].len(), i))
    }

    fn into_assignment(self, members: &Members) -> GroupAssignment {
        let mut out = empty_assignment(members);
        for (id, held) in self.ids.iter().zip(&self.held) {
            // BTreeSet order: by topic, then ascending partition, as TopicPartitions wants.
            for (topic, p) in held {
                give(&mut out, id, topic, *p);
            }
        }
        out
    }
}

/// Each claimed partition of an existing subscribed topic, with the member that keeps it: the
/// claimant at the highest generation, or nobody when two tie there.
fn winning_claims<'a>(order: &[(&'a str, &'a super::MemberSubscription)], topics: &BTreeMap<&'a str, i32>) -> BTreeMap<Tp<'a>, usize> {
    let mut best: BTreeMap<Tp, (i32, Option<usize>)> = BTreeMap::new();
    for (i, (_, m)) in order.iter().enumerate() {
        for (topic, parts) in &m.owned {
            let Some((&topic, &count)) = topics.get_key_value(topic.as_str()) else { continue };
            if !m.topics.contains(topic) {
                continue;
            }
            for &p in parts.iter().filter(|p| (0..count).contains(*p)) {
                let entry = best.entry((topic, p)).or_insert((m.generation, Some(i)));
                if m.generation > entry.0 {
                    *entry = (m.generation, Some(i));
                } else if m.generation == entry.0 && entry.1 != Some(i) {
                    entry.1 = None;
                }
            }
        }
    }
    best.into_iter().filter_map(|(tp, (_, winner))| winner.map(|w| (tp, w))).collect()
}
