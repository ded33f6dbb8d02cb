//! The assignors' contracts over generated groups (a seeded xorshift, so every run checks the
//! same cases), and Kafka's own documented examples.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

pub(super) use crate::testing::XorShift;

/// Cases checked per property.
const cases: u64 = 400;

type Partitions = BTreeMap<String, i32>;

/// A random group: up to 4 topics of up to 8 partitions (one may be missing from metadata),
/// up to 6 members (some static), subscriptions equal or not, and claims that are sometimes
/// stale, conflicting, out of range or for topics no longer subscribed.
fn group(rng: &mut XorShift, equal: bool) -> (Members, Partitions) {
    let topics: Vec<String> = (0..1 + rng.below(4)).map(|t| format!("t{t}")).collect();
    let mut partitions: Partitions = topics.iter().map(|t| (t.clone(), rng.below(9) as i32)).collect();
    if rng.below(4) == 0 {
        partitions.remove(&topics[0]);
    }
    let shared = subset(rng, &topics);
    let mut members = Members::new();
    for i in 0..1 + rng.below(6) {
        let topics = if equal { shared.clone() } else { subset(rng, &topics) };
        let group_instance_id = (rng.below(3) == 0).then(|| format!("static-{}", 9 - i));
        members.insert(format!("m{i}"), MemberSubscription { group_instance_id, topics, owned: TopicPartitions::new(), generation: 1 + rng.below(3) as i32 });
    }
    let ids: Vec<String> = members.keys().cloned().collect();
    for (topic, count) in &partitions {
        for p in 0..count + 1 {
            for _ in 0..rng.below(3) {
                if let Some(m) = members.get_mut(&ids[rng.below(ids.len())]) {
                    m.owned.entry(topic.clone()).or_default().push(p);
                }
            }
        }
    }
    members.values_mut().for_each(|m| normalize(&mut m.owned));
    (members, partitions)
}

fn subset(rng: &mut XorShift, topics: &[String]) -> BTreeSet<String> {
    let mut s: BTreeSet<String> = topics.iter().filter(|_| rng.below(2) == 0).cloned().collect();
    if s.is_empty() {
        s.insert(topics[rng.below(topics.len())].clone());
    }
    s
}

/// Every partition the group must consume: existing topics somebody subscribes to.
fn wanted(members: &Members, partitions: &Partitions) -> BTreeSet<(String, i32)> {
    subscribed_topics(members, partitions).into_iter().flat_map(|(t, n)| (0..n).map(move |p| (t.to_string(), p))).collect()
}

/// Each (topic, partition) given out, with how many members got it; checks every member has
/// an entry, lists are ascending without duplicates and only subscribed topics appear.
fn given(members: &Members, out: &GroupAssignment) -> BTreeMap<(String, i32), usize> {
    assert_eq!(out.keys().collect::<Vec<_>>(), members.keys().collect::<Vec<_>>(), "one entry per member");
    let mut seen = BTreeMap::new();
    for (id, a) in out {
        for (topic, parts) in a {
            assert!(members[id].topics.contains(topic), "{id} got {topic} it does not subscribe to");
            assert!(!parts.is_empty() && parts.windows(2).all(|w| w[0] < w[1]), "{id} {topic}: {parts:?}");
            for p in parts {
                *seen.entry((topic.clone(), *p)).or_insert(0) += 1;
            }
        }
    }
    seen
}

fn counts(out: &GroupAssignment) -> Vec<usize> {
    out.values().map(|a| a.values().map(Vec::len).sum()).collect()
}

#[test]
fn every_partition_goes_to_exactly_one_subscriber() {
    let mut rng = XorShift::new(1);
    for case in 0..cases {
        let (members, partitions) = group(&mut rng, case % 2 == 0);
        for assignor in [Assignor::Range, Assignor::RoundRobin, Assignor::Sticky] {
            let seen = given(&members, &assignor.assign(&members, &partitions));
            let expected: BTreeMap<(String, i32), usize> = wanted(&members, &partitions).into_iter().map(|tp| (tp, 1)).collect();
            assert_eq!(seen, expected, "{} case {case}: {members:?} {partitions:?}", assignor.name());
        }
    }
}

/// Partitions claimed by somebody, in range, with their claimants.
fn claimants(members: &Members) -> BTreeMap<(String, i32), BTreeSet<String>> {
    let mut out: BTreeMap<(String, i32), BTreeSet<String>> = BTreeMap::new();
    for (id, m) in members {
        for (topic, parts) in &m.owned {
            for p in parts {
                out.entry((topic.clone(), *p)).or_default().insert(id.clone());
            }
        }
    }
    out
}

#[test]
fn cooperative_leaves_out_exactly_the_partitions_being_revoked() {
    let mut rng = XorShift::new(2);
    for case in 0..cases {
        let (members, partitions) = group(&mut rng, case % 2 == 0);
        let coop = Assignor::CooperativeSticky.assign(&members, &partitions);
        let sticky = Assignor::Sticky.assign(&members, &partitions);
        let seen = given(&members, &coop);
        assert!(seen.values().all(|n| *n == 1), "case {case}: a partition given twice");
        let claims = claimants(&members);
        // Never straight from one member to another: a new owner is the only claimant.
        for (id, a) in &coop {
            for (topic, p) in a.iter().flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p))) {
                let c = claims.get(&(topic.clone(), p));
                assert!(c.is_none_or(|c| c.contains(id)), "case {case}: {topic}-{p} handed to {id} while {c:?} claim it");
                assert!(sticky[id].get(&topic).is_some_and(|ps| ps.contains(&p)), "case {case}: cooperative strays from sticky's target");
            }
        }
        // Left out: exactly the claimed partitions none of whose claimants keeps them.
        let left_out: BTreeSet<(String, i32)> = wanted(&members, &partitions).into_iter().filter(|tp| !seen.contains_key(tp)).collect();
        let revoked: BTreeSet<(String, i32)> = wanted(&members, &partitions)
            .into_iter()
            .filter(|tp| claims.get(tp).is_some_and(|c| c.iter().all(|m| coop[m].get(&tp.0).is_none_or(|ps| !ps.contains(&tp.1)))))
            .collect();
        assert_eq!(left_out, revoked, "case {case}: {members:?}");
    }
}

/// The group after everyone adopts `out` at the next generation.
fn rejoin(members: &Members, out: &GroupAssignment) -> Members {
    let generation = members.values().map(|m| m.generation).max().unwrap_or(0) + 1;
    members.iter().map(|(id, m)| (id.clone(), MemberSubscription { owned: out[id].clone(), generation, ..m.clone() })).collect()
}

#[test]
fn sticky_keeps_what_is_already_balanced() {
    let mut rng = XorShift::new(3);
    for case in 0..cases {
        let (members, partitions) = group(&mut rng, case % 2 == 0);
        let first = Assignor::Sticky.assign(&members, &partitions);
        let again = rejoin(&members, &first);
        assert_eq!(Assignor::Sticky.assign(&again, &partitions), first, "sticky case {case}");
        assert_eq!(Assignor::CooperativeSticky.assign(&again, &partitions), first, "cooperative case {case}");
        // A balanced deal that is not sticky's own choice is kept too, when subscriptions match.
        if case % 2 == 0 {
            let dealt = shuffled_deal(&mut rng, &members, &partitions);
            let owning = rejoin(&members, &dealt);
            assert_eq!(Assignor::Sticky.assign(&owning, &partitions), dealt, "sticky case {case}");
            assert_eq!(Assignor::CooperativeSticky.assign(&owning, &partitions), dealt, "cooperative case {case}");
        }
    }
}

/// The wanted partitions shuffled and dealt one each in turn: balanced when subscriptions are
/// equal, and unlike any assignor's own choice.
fn shuffled_deal(rng: &mut XorShift, members: &Members, partitions: &Partitions) -> GroupAssignment {
    let mut all: Vec<(String, i32)> = wanted(members, partitions).into_iter().collect();
    for i in (1..all.len()).rev() {
        all.swap(i, rng.below(i + 1));
    }
    let ids: Vec<&String> = members.keys().collect();
    let mut out = empty_assignment(members);
    for (k, (topic, p)) in all.into_iter().enumerate() {
        if let Some(a) = out.get_mut(ids[k % ids.len()]) {
            a.entry(topic).or_default().push(p);
        }
    }
    out.values_mut().for_each(normalize);
    out
}

#[test]
fn the_newest_claim_wins_and_a_tie_goes_to_nobody() {
    let claim = |generation, owned: &[(&str, &[i32])]| MemberSubscription { owned: parts(owned), generation, ..member(&["t"], None) };
    let partitions: Partitions = [("t".to_string(), 2)].into();
    // B missed a rebalance: its claim on t-0 is older than A's.
    let members: Members = [("A", claim(3, &[("t", &[0])])), ("B", claim(2, &[("t", &[0, 1])]))].map(|(id, m)| (id.to_string(), m)).into();
    for assignor in [Assignor::Sticky, Assignor::CooperativeSticky] {
        let out = assignor.assign(&members, &partitions);
        assert_eq!((&out["A"], &out["B"]), (&parts(&[("t", &[0])]), &parts(&[("t", &[1])])), "{}", assignor.name());
    }
    // A tie at the newest generation: neither keeps t-0, so it goes where balance says, and
    // cooperative holds it back from a member that does not claim it.
    let members: Members = [("A", claim(2, &[("t", &[0, 1])])), ("B", claim(2, &[("t", &[0])]))].map(|(id, m)| (id.to_string(), m)).into();
    let sticky = Assignor::Sticky.assign(&members, &partitions);
    assert_eq!((&sticky["A"], &sticky["B"]), (&parts(&[("t", &[1])]), &parts(&[("t", &[0])])));
    let coop = Assignor::CooperativeSticky.assign(&members, &partitions);
    assert_eq!((&coop["A"], &coop["B"]), (&parts(&[("t", &[1])]), &parts(&[("t", &[0])])), "B claims t-0 too, so it may take it now");
}

#[test]
fn cooperative_settles_in_two_rounds_with_equal_subscriptions() {
    let mut rng = XorShift::new(4);
    for case in 0..cases {
        let (members, partitions) = group(&mut rng, true);
        let round1 = Assignor::CooperativeSticky.assign(&members, &partitions);
        let round2 = Assignor::CooperativeSticky.assign(&rejoin(&members, &round1), &partitions);
        assert_eq!(given(&members, &round2).len(), wanted(&members, &partitions).len(), "case {case}: round 2 leaves some out");
        for (id, a) in &round1 {
            for (topic, parts) in a {
                assert!(parts.iter().all(|p| round2[id][topic].contains(p)), "case {case}: round 2 moves {id}'s {topic}");
            }
        }
    }
}

#[test]
fn sticky_balance_bound_holds() {
    let mut rng = XorShift::new(5);
    for case in 0..cases {
        let equal = case % 2 == 0;
        let (members, partitions) = group(&mut rng, equal);
        let out = Assignor::Sticky.assign(&members, &partitions);
        let c = counts(&out);
        if equal {
            let (min, max) = (c.iter().min(), c.iter().max());
            assert!(max.zip(min).is_none_or(|(max, min)| max - min <= 1), "case {case}: counts {c:?}");
            let rr = counts(&Assignor::RoundRobin.assign(&members, &partitions));
            assert!(rr.iter().max().zip(rr.iter().min()).is_none_or(|(max, min)| max - min <= 1), "roundrobin case {case}");
        }
        // Kafka's isBalanced: no partition could move to a subscriber holding two fewer.
        let load: BTreeMap<&String, usize> = out.keys().zip(c.iter().copied()).collect();
        for (id, a) in &out {
            for topic in a.keys() {
                for (other, m) in &members {
                    assert!(!m.topics.contains(topic) || load[id] <= load[other] + 1, "case {case}: {id} ({}) could give {topic} to {other} ({})", load[id], load[other]);
                }
            }
        }
    }
}

fn member(topics: &[&str], instance: Option<&str>) -> MemberSubscription {
    MemberSubscription { group_instance_id: instance.map(str::to_string), topics: topics.iter().map(|t| t.to_string()).collect(), owned: TopicPartitions::new(), generation: -1 }
}

fn parts(list: &[(&str, &[i32])]) -> TopicPartitions {
    list.iter().map(|(t, p)| (t.to_string(), p.to_vec())).collect()
}

#[test]
fn range_and_roundrobin_match_kafkas_documented_examples() {
    // RangeAssignor's and RoundRobinAssignor's javadoc: C0, C1 over t0 and t1 of 3 each.
    let members: Members = [("C0", member(&["t0", "t1"], None)), ("C1", member(&["t0", "t1"], None))].map(|(id, m)| (id.to_string(), m)).into();
    let partitions: Partitions = [("t0".to_string(), 3), ("t1".to_string(), 3)].into();
    let range = Assignor::Range.assign(&members, &partitions);
    assert_eq!((&range["C0"], &range["C1"]), (&parts(&[("t0", &[0, 1]), ("t1", &[0, 1])]), &parts(&[("t0", &[2]), ("t1", &[2])])));
    let rr = Assignor::RoundRobin.assign(&members, &partitions);
    assert_eq!((&rr["C0"], &rr["C1"]), (&parts(&[("t0", &[0, 2]), ("t1", &[1])]), &parts(&[("t0", &[1]), ("t1", &[0, 2])])));

    // RoundRobinAssignor's javadoc, unequal subscriptions: t0, t1, t2 of 1, 2, 3 partitions.
    let members: Members = [("C0", member(&["t0"], None)), ("C1", member(&["t0", "t1"], None)), ("C2", member(&["t0", "t1", "t2"], None))].map(|(id, m)| (id.to_string(), m)).into();
    let partitions: Partitions = [("t0".to_string(), 1), ("t1".to_string(), 2), ("t2".to_string(), 3)].into();
    let rr = Assignor::RoundRobin.assign(&members, &partitions);
    assert_eq!(rr["C0"], parts(&[("t0", &[0])]));
    assert_eq!(rr["C1"], parts(&[("t1", &[0])]));
    assert_eq!(rr["C2"], parts(&[("t1", &[1]), ("t2", &[0, 1, 2])]));
}

#[test]
fn static_members_come_first_by_instance_id() {
    let members: Members = [("a", member(&["t"], None)), ("b", member(&["t"], Some("y"))), ("c", member(&["t"], Some("x")))].map(|(id, m)| (id.to_string(), m)).into();
    let order: Vec<&str> = member_order(&members).into_iter().map(|(id, _)| id).collect();
    assert_eq!(order, ["c", "b", "a"]);
    let range = Assignor::Range.assign(&members, &[("t".to_string(), 3)].into());
    assert_eq!((&range["c"], &range["b"], &range["a"]), (&parts(&[("t", &[0])]), &parts(&[("t", &[1])]), &parts(&[("t", &[2])])));
}

#[test]
fn by_name_knows_kafkas_protocol_names() {
    for a in Assignor::ALL {
        assert_eq!(by_name(a.name()), Some(a));
    }
    assert_eq!(by_name("cooperative-sticky").map(Assignor::rebalance_protocol), Some(RebalanceProtocol::Cooperative));
    assert_eq!(by_name("range").map(Assignor::rebalance_protocol), Some(RebalanceProtocol::Eager));
    assert_eq!(by_name("Range"), None);
    assert_eq!(by_name("uniform"), None);
}
