//! Consumer groups through the coordinator and its log: heartbeats answered only once their
//! records are replicated, and a coordinator that takes the partition over loads the group as
//! it was, so its members go on at their epochs without a rebalance.

use super::super::*;
use crate::client::assignor::TopicPartitions;
use crate::group::consumer::Heartbeat;

const leader_epoch: i32 = 3;

/// A coordinator leading the one offsets partition, and the records it appended there.
struct Node {
    c: Coordinator,
    log: Vec<Loaded>,
    /// Writes appended, not yet replicated.
    pending: Vec<u64>,
}

fn topics() -> BTreeMap<String, ([u8; 16], i32)> {
    [("t".to_string(), ([1u8; 16], 4))].into()
}

impl Node {
    fn new(log: Vec<Loaded>) -> Node {
        let (c, _) = crate::group::test_log::leading(GroupConfig::default(), topics(), &log, leader_epoch);
        Node { c, log, pending: Vec::new() }
    }

    fn append(&mut self, work: Work) {
        for a in work.appends {
            self.pending.push(a.write);
            crate::group::test_log::append(&mut self.c, &mut self.log, a, leader_epoch, 0);
        }
    }

    /// Everything appended is replicated: the answers that waited for it.
    fn replicate(&mut self) -> Vec<(Ticket, Answer)> {
        let mut work = Work::default();
        self.c.settle(|_, _| Ok(true), 0, &mut work);
        self.pending.clear();
        work.answers
    }

    /// One heartbeat, appended and replicated: its answer.
    fn beat(&mut self, hb: Heartbeat, now: u64) -> HeartbeatAnswer {
        let mut work = Work::default();
        let pending = self.c.consumer_heartbeat("g", hb, now, &mut work);
        self.append(work);
        let answer = match pending {
            Pending::Now(a) => a,
            Pending::Wait(t) => {
                let answers = self.replicate();
                answers.into_iter().find(|(x, _)| *x == t).expect("answered once replicated").1
            }
        };
        match answer {
            Answer::Consumer(Ok(a)) => a,
            other => panic!("heartbeat refused: {other:?}"),
        }
    }
}

fn join(member: &str) -> Heartbeat {
    Heartbeat { member_id: member.into(), topics: Some(["t".to_string()].into()), rebalance_timeout_ms: Some(60_000), owned: Some(TopicPartitions::new()), ..Heartbeat::default() }
}

fn beat(member: &str, member_epoch: i32, owned: &[i32]) -> Heartbeat {
    Heartbeat { member_id: member.into(), member_epoch, owned: Some([("t".to_string(), owned.to_vec())].into_iter().filter(|(_, ps)| !ps.is_empty()).collect()), ..Heartbeat::default() }
}

fn partitions(a: &HeartbeatAnswer) -> Vec<i32> {
    a.assignment.iter().flatten().flat_map(|(_, ps)| ps.clone()).collect()
}

#[test]
fn a_heartbeat_that_changes_the_group_is_answered_only_once_replicated() {
    let mut n = Node::new(Vec::new());
    let mut work = Work::default();
    let Pending::Wait(ticket) = n.c.consumer_heartbeat("g", join("a"), 0, &mut work) else { panic!("a join changes the group") };
    assert!(work.answers.is_empty());
    n.append(work);
    assert!(!n.log.is_empty(), "the join's records are appended");
    let answers = n.replicate();
    assert!(matches!(&answers[..], [(t, Answer::Consumer(Ok(a)))] if *t == ticket && a.member_epoch == 1));
    // A heartbeat that changes nothing writes nothing and is answered at once.
    let mut work = Work::default();
    assert!(matches!(n.c.consumer_heartbeat("g", beat("a", 1, &[0, 1, 2, 3]), 1, &mut work), Pending::Now(_)));
    assert!(work.appends.is_empty());
}

#[test]
fn a_coordinator_taking_over_loads_the_group_and_its_members_go_on_at_their_epochs() {
    let mut n = Node::new(Vec::new());
    let a = n.beat(join("a"), 0);
    n.beat(beat("a", a.member_epoch, &[0, 1, 2, 3]), 1);
    let b = n.beat(join("b"), 2);
    // a is told to revoke two partitions; b waits for them.
    let a2 = n.beat(beat("a", a.member_epoch, &[0, 1, 2, 3]), 3);
    assert_eq!(partitions(&a2).len(), 2);
    let view = n.c.consumer_groups["g"].view();
    let group_epoch = n.c.consumer_groups["g"].epoch;

    // Another coordinator loads what was written: the same group, epoch for epoch.
    let mut m = Node::new(n.log.clone());
    assert_eq!(m.c.consumer_groups["g"].view(), view);
    // a lets go; b gets the two partitions, at the epochs the first coordinator gave.
    let a3 = m.beat(beat("a", a.member_epoch, &partitions(&a2)), 10);
    let b2 = m.beat(beat("b", b.member_epoch, &[]), 11);
    assert_eq!(m.c.consumer_groups["g"].epoch, group_epoch, "no rebalance at the takeover");
    assert_eq!(a3.member_epoch, group_epoch);
    assert_eq!(b2.member_epoch, group_epoch);
    assert_eq!(a3.assignment, None, "a's partitions stay as it was told");
    let mut all = partitions(&a2).into_iter().chain(partitions(&b2)).collect::<Vec<_>>();
    all.sort_unstable();
    assert_eq!(all, [0, 1, 2, 3]);
}

#[test]
fn a_deleted_consumer_group_is_gone_after_a_reload() {
    let mut n = Node::new(Vec::new());
    let a = n.beat(join("a"), 0);
    n.beat(Heartbeat { member_id: "a".into(), member_epoch: -1, ..Heartbeat::default() }, 1);
    assert!(n.c.consumer_groups["g"].members.is_empty());
    assert_eq!(a.member_epoch, 1);
    let mut work = Work::default();
    let Ok(Pending::Wait(_)) = n.c.delete_group("g", 2, &mut work) else { panic!("an empty consumer group is deleted") };
    n.append(work);
    n.replicate();
    assert!(!n.c.consumer_groups.contains_key("g"));
    let m = Node::new(n.log.clone());
    assert!(!m.c.consumer_groups.contains_key("g"), "its records were tombstoned");
}

#[test]
fn after_a_takeover_a_member_joining_moves_the_epoch_and_gets_its_share() {
    let mut n = Node::new(Vec::new());
    let a = n.beat(join("a"), 0);
    n.beat(beat("a", a.member_epoch, &[0, 1, 2, 3]), 1);
    let epoch = n.c.consumer_groups["g"].epoch;
    let mut m = Node::new(n.log.clone());
    let b = m.beat(join("b"), 10);
    assert_eq!(m.c.consumer_groups["g"].epoch, epoch + 1, "a join after the load is a new epoch");
    assert_eq!(m.c.consumer_groups["g"].target["b"].get("t").map(Vec::len), Some(2), "b's share is in the target");
    assert_eq!(b.member_epoch, epoch + 1);
}

#[test]
fn a_failed_write_makes_the_next_one_whole_and_a_reload_agrees_with_memory() {
    let mut n = Node::new(Vec::new());
    let a = n.beat(join("a"), 0);
    n.beat(beat("a", a.member_epoch, &[0, 1, 2, 3]), 1);
    // b joins; the write fails (the partition's ISR shrank below min.insync, say).
    let mut work = Work::default();
    let Pending::Wait(t) = n.c.consumer_heartbeat("g", join("b"), 2, &mut work) else { panic!("a join writes") };
    let failed = work.appends[0].write;
    let mut out = Work::default();
    n.c.appended(failed, Err(Code::NotEnoughReplicas), 2, &mut out);
    assert!(matches!(&out.answers[..], [(x, Answer::Consumer(Err(_)))] if *x == t), "the join is answered with the write's error");
    // b's client retries; a leaves meanwhile. Memory moved on; the log has only a's records.
    n.beat(Heartbeat { member_id: "a".into(), member_epoch: -1, ..Heartbeat::default() }, 3);
    let view = n.c.consumer_groups["g"].view();
    let m = Node::new(n.log.clone());
    assert_eq!(m.c.consumer_groups["g"].view(), view, "the write after the failure carried the whole group");
}

#[test]
fn an_answer_with_nothing_new_waits_for_the_write_still_in_flight() {
    let mut n = Node::new(Vec::new());
    let mut work = Work::default();
    let Pending::Wait(first) = n.c.consumer_heartbeat("g", join("a"), 0, &mut work) else { panic!("a join writes") };
    n.append(work);
    // a's answer was lost; it says everything again. Nothing changes, but what it is told is
    // in the write not yet replicated.
    let mut work = Work::default();
    let again = n.c.consumer_heartbeat("g", join("a"), 1, &mut work);
    let Pending::Wait(second) = again else { panic!("answered before the first write replicated: {again:?}") };
    n.append(work);
    let answered: Vec<Ticket> = n.replicate().into_iter().map(|(t, _)| t).collect();
    assert_eq!(answered, [first, second]);
}

#[test]
fn a_static_members_temporary_leave_survives_a_takeover() {
    let mut n = Node::new(Vec::new());
    let static_join = Heartbeat { instance_id: Some("i".into()), ..join("s1") };
    let a = n.beat(static_join.clone(), 0);
    n.beat(beat("s1", a.member_epoch, &[0, 1, 2, 3]), 1);
    n.beat(Heartbeat { member_id: "s1".into(), member_epoch: -2, instance_id: Some("i".into()), ..Heartbeat::default() }, 2);
    let mut m = Node::new(n.log.clone());
    assert!(m.c.consumer_groups["g"].members["s1"].away, "stored at epoch -2");
    // The old incarnation's heartbeat is fenced; the new one takes its place and partitions.
    let mut work = Work::default();
    let fenced = m.c.consumer_heartbeat("g", beat("s1", a.member_epoch, &[0, 1, 2, 3]), 3, &mut work);
    assert!(matches!(fenced, Pending::Now(Answer::Consumer(Err(Code::FencedMemberEpoch)))), "{fenced:?}");
    let back = m.beat(Heartbeat { instance_id: Some("i".into()), ..join("s2") }, 4);
    assert_eq!(partitions(&back), [0, 1, 2, 3]);
    assert_eq!(back.member_epoch, a.member_epoch, "no rebalance");
}
