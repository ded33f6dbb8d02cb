//! Reconciliation driven as a coordinator would drive it: members heartbeat in some order, each
//! reporting what it owns (what it was given, minus what it was told to revoke, which it lets go
//! at once); the target comes from the uniform assignor whenever the group changes. After every
//! heartbeat no partition is held by two members; once nothing changes, every member reaches
//! its target at the target's epoch within a few rounds.

use super::*;
use crate::group::assignors::{GroupSpec, MemberSpec, ServerAssignor};
use std::collections::BTreeMap;

struct Group {
    partitions: BTreeMap<String, i32>,
    spec: GroupSpec,
    target: BTreeMap<String, TopicPartitions>,
    epoch: i32,
    members: BTreeMap<String, MemberAssignment>,
    /// What each member told the coordinator it owns (after letting go of what it revokes).
    owned: BTreeMap<String, TopicPartitions>,
}

impl Group {
    fn new(partitions: &[(&str, i32)]) -> Group {
        Group { partitions: partitions.iter().map(|(t, n)| (t.to_string(), *n)).collect(), spec: GroupSpec::new(), target: BTreeMap::new(), epoch: 0, members: BTreeMap::new(), owned: BTreeMap::new() }
    }

    /// The group changed: a new target at the next epoch, each member's previous target kept.
    fn retarget(&mut self) {
        self.epoch += 1;
        for (id, m) in self.spec.iter_mut() {
            m.target = self.target.get(id).cloned().unwrap_or_default();
        }
        self.target = ServerAssignor::Uniform.assign(&self.spec, &self.partitions);
    }

    fn join(&mut self, id: &str) {
        let topics = self.partitions.keys().cloned().collect();
        self.spec.insert(id.into(), MemberSpec { instance_id: None, topics, target: TopicPartitions::new() });
        self.members.insert(id.into(), MemberAssignment::joined());
        self.retarget();
    }

    fn leave(&mut self, id: &str) {
        self.spec.remove(id);
        self.members.remove(id);
        self.owned.remove(id);
        self.target.remove(id);
        self.retarget();
    }

    /// One heartbeat of `id`; returns its new assignment.
    fn heartbeat(&mut self, id: &str) -> MemberAssignment {
        let current = self.members[id].clone();
        let others: Vec<&MemberAssignment> = self.members.iter().filter(|(m, _)| m.as_str() != id).map(|(_, a)| a).collect();
        let next = next(&current, self.epoch, &self.target[id], self.owned.get(id), |t, p| others.iter().any(|o| o.holds(t, p)));
        self.members.insert(id.into(), next.clone());
        self.owned.insert(id.into(), next.assigned.clone());
        self.check_exclusive();
        next
    }

    fn check_exclusive(&self) {
        for (topic, &n) in &self.partitions {
            for p in 0..n {
                let holders: Vec<&String> = self.members.iter().filter(|(_, a)| a.holds(topic, p)).map(|(id, _)| id).collect();
                assert!(holders.len() <= 1, "{topic}-{p} held by {holders:?}");
            }
        }
    }

    fn converged(&self) -> bool {
        self.members.iter().all(|(id, a)| a.state == MemberState::Stable && a.epoch == self.epoch && a.assigned == self.target[id])
    }
}

fn render(a: &MemberAssignment) -> String {
    let tp = |tp: &TopicPartitions| tp.iter().map(|(t, ps)| format!("{t}={}", ps.iter().map(i32::to_string).collect::<Vec<_>>().join(","))).collect::<Vec<_>>().join(" ");
    let revoking = if a.revoking.is_empty() { String::new() } else { format!(", revoking {}", tp(&a.revoking)) };
    format!("epoch {} {:?}: {}{revoking}", a.epoch, a.state, tp(&a.assigned))
}

#[test]
fn a_partition_moves_only_once_its_owner_let_go() {
    let mut g = Group::new(&[("a", 4)]);
    let mut text = String::new();
    let mut beat = |g: &mut Group, id: &str| {
        let a = g.heartbeat(id);
        text += &format!("{id} heartbeats at group epoch {}: {}\n", g.epoch, render(&a));
    };
    g.join("m1");
    beat(&mut g, "m1");
    g.join("m2");
    beat(&mut g, "m2");
    beat(&mut g, "m1");
    beat(&mut g, "m2");
    beat(&mut g, "m1");
    g.join("m3");
    beat(&mut g, "m3");
    beat(&mut g, "m3");
    beat(&mut g, "m2");
    beat(&mut g, "m1");
    beat(&mut g, "m3");
    beat(&mut g, "m1");
    beat(&mut g, "m2");
    g.leave("m1");
    beat(&mut g, "m3");
    beat(&mut g, "m2");
    beat(&mut g, "m3");
    assert!(g.converged(), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn a_heartbeat_at_another_epoch_is_fenced_unless_it_repeats_the_previous_one_owning_no_more() {
    let mut g = Group::new(&[("a", 4)]);
    g.join("m1");
    g.heartbeat("m1");
    g.join("m2");
    g.heartbeat("m1");
    let m1 = g.heartbeat("m1");
    assert_eq!((m1.epoch, m1.previous_epoch), (2, 1));
    let tp = |ps: &[i32]| -> TopicPartitions { [("a".to_string(), ps.to_vec())].into() };
    assert_eq!(check_epoch(&m1, 2, Some(&m1.assigned)), Ok(()), "its own epoch");
    assert_eq!(check_epoch(&m1, 1, Some(&m1.assigned)), Ok(()), "the previous epoch, owning only what it keeps");
    assert_eq!(check_epoch(&m1, 1, Some(&tp(&[0, 1, 2, 3]))), Err(crate::kafka::Code::FencedMemberEpoch), "the previous epoch, still owning what it revoked");
    assert_eq!(check_epoch(&m1, 1, None), Err(crate::kafka::Code::FencedMemberEpoch), "the previous epoch, saying nothing of what it owns");
    assert_eq!(check_epoch(&m1, 3, Some(&m1.assigned)), Err(crate::kafka::Code::FencedMemberEpoch), "ahead of its epoch");
    assert_eq!(check_epoch(&m1, 0, Some(&m1.assigned)), Err(crate::kafka::Code::FencedMemberEpoch), "older than the previous epoch");
}

/// Generated churn (a seeded xorshift): members join and leave between heartbeats in any
/// order; no partition is ever held twice, and once the churn stops every member reaches its
/// target within three rounds of heartbeats.
#[test]
fn churn_never_assigns_a_partition_twice_and_converges() {
    let mut rng = crate::testing::XorShift::new(0x2545_f491_4f6c_dd1d);
    let mut next_below = |n: u64| rng.below(n as usize) as u64;
    for _ in 0..200 {
        let mut g = Group::new(&[("a", 1 + next_below(8) as i32), ("b", next_below(5) as i32)]);
        let mut joined = 0;
        for _ in 0..40 {
            match next_below(6) {
                0 => {
                    joined += 1;
                    g.join(&format!("m{joined}"));
                }
                1 if g.members.len() > 1 => {
                    let ids: Vec<String> = g.members.keys().cloned().collect();
                    g.leave(&ids[next_below(ids.len() as u64) as usize]);
                }
                _ if !g.members.is_empty() => {
                    let ids: Vec<String> = g.members.keys().cloned().collect();
                    g.heartbeat(&ids[next_below(ids.len() as u64) as usize]);
                }
                _ => {}
            }
        }
        let ids: Vec<String> = g.members.keys().cloned().collect();
        for _ in 0..3 {
            for id in &ids {
                g.heartbeat(id);
            }
        }
        assert!(g.converged(), "not converged: {:?} against {:?}", g.members, g.target);
    }
}
