//! Share groups through the coordinator and its log: heartbeats answered only once their
//! records are replicated; a coordinator that takes the partition over loads the group as it
//! was (epoch, members, assignments), so its members heartbeat on at their epochs; an empty
//! group stays, and DeleteGroups deletes it with its share-partition states.

use super::super::*;
use crate::group::share::ShareHeartbeat;
use crate::group::share_state::{ShareKey, Stored};
use crate::share::partition::{RecordState, Snapshot, StateBatch};

const leader_epoch: i32 = 3;

/// A coordinator leading the one offsets partition, and the records it appended there.
struct Node {
    c: Coordinator,
    log: Vec<Loaded>,
}

fn topics() -> BTreeMap<String, ([u8; 16], i32)> {
    [("t".to_string(), ([1u8; 16], 2))].into()
}

impl Node {
    fn new(log: Vec<Loaded>) -> Node {
        let (c, work) = crate::group::test_log::leading(GroupConfig::default(), topics(), &log, leader_epoch);
        let mut n = Node { c, log };
        n.append(work);
        n
    }

    fn append(&mut self, work: Work) {
        for a in work.appends {
            crate::group::test_log::append(&mut self.c, &mut self.log, a, leader_epoch, 0);
        }
    }

    /// Everything appended is replicated: the answers that waited for it.
    fn replicate(&mut self) -> Vec<(Ticket, Answer)> {
        let mut work = Work::default();
        self.c.settle(|_, _| Ok(true), 0, &mut work);
        work.answers
    }

    /// One heartbeat, appended and replicated: its answer.
    fn beat(&mut self, hb: ShareHeartbeat, now: u64) -> Result<HeartbeatAnswer, Code> {
        let mut work = Work::default();
        let pending = self.c.share_heartbeat("g", hb, now, &mut work);
        self.append(work);
        let answer = match pending {
            Pending::Now(a) => a,
            Pending::Wait(t) => self.replicate().into_iter().find(|(x, _)| *x == t).expect("answered once replicated").1,
        };
        match answer {
            Answer::Consumer(r) => r,
            other => panic!("not a heartbeat answer: {other:?}"),
        }
    }

    fn delete(&mut self) -> Result<(), Code> {
        let mut work = Work::default();
        let pending = self.c.delete_group("g", 5, &mut work)?;
        self.append(work);
        let answers = self.replicate();
        match pending {
            Pending::Wait(t) => match answers.into_iter().find(|(x, _)| *x == t) {
                Some((_, Answer::Written(r))) => r,
                other => panic!("deletion answered {other:?}"),
            },
            Pending::Now(()) => Ok(()),
        }
    }
}

fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> ShareHeartbeat {
    ShareHeartbeat { member_id: member.into(), member_epoch: epoch, client_id: "c".into(), client_host: "/10.0.0.1".into(), topics: topics.map(|t| t.iter().map(|x| x.to_string()).collect()), ..Default::default() }
}

fn partitions(a: &HeartbeatAnswer) -> Vec<i32> {
    a.assignment.iter().flatten().flat_map(|(_, ps)| ps.clone()).collect()
}

#[test]
fn a_heartbeat_that_changes_the_group_is_answered_only_once_replicated() {
    let mut n = Node::new(Vec::new());
    let mut work = Work::default();
    let Pending::Wait(ticket) = n.c.share_heartbeat("g", hb("a", 0, Some(&["t"])), 0, &mut work) else { panic!("a join changes the group") };
    assert!(work.answers.is_empty());
    n.append(work);
    assert!(!n.log.is_empty(), "the join's records are appended");
    let answers = n.replicate();
    assert!(matches!(&answers[..], [(t, Answer::Consumer(Ok(a)))] if *t == ticket && a.member_epoch == 1 && partitions(a) == [0, 1]));
    // A heartbeat that changes nothing writes nothing and is answered at once.
    let mut work = Work::default();
    assert!(matches!(n.c.share_heartbeat("g", hb("a", 1, None), 1, &mut work), Pending::Now(Answer::Consumer(Ok(_)))));
    assert!(work.appends.is_empty());
    // A failed write is answered with its error, and the next write is the whole group.
    let mut work = Work::default();
    let Pending::Wait(ticket) = n.c.share_heartbeat("g", hb("b", 0, Some(&["t"])), 2, &mut work) else { panic!("b joins") };
    let write = work.appends[0].write;
    let mut failed = Work::default();
    n.c.appended(write, Err(Code::NotLeaderOrFollower), 2, &mut failed);
    assert_eq!(failed.answers, vec![(ticket, Answer::Consumer(Err(Code::NotCoordinator)))]);
    n.beat(hb("b", 0, Some(&["t"])), 3).expect("b joins again");
    let view = n.c.share_groups["g"].view();
    assert_eq!(Node::new(n.log.clone()).c.share_groups["g"].view(), view, "a reload agrees with memory");
}

#[test]
fn a_coordinator_taking_over_loads_the_group_and_its_members_go_on_at_their_epochs() {
    let mut n = Node::new(Vec::new());
    n.beat(hb("a", 0, Some(&["t"])), 0).unwrap();
    let b = n.beat(hb("b", 0, Some(&["t"])), 1).unwrap();
    let a = n.beat(hb("a", 1, None), 2).unwrap();
    assert_eq!((a.member_epoch, b.member_epoch), (2, 2));
    let g = &n.c.share_groups["g"];
    let (view, epoch) = (g.view(), g.epoch);

    // Another coordinator loads what was written: the same group, epoch for epoch.
    let mut m = Node::new(n.log.clone());
    let loaded = &m.c.share_groups["g"];
    assert_eq!(loaded.view(), view);
    assert_eq!(loaded.members["a"].client_host, "/10.0.0.1");
    assert!(m.log.len() == n.log.len(), "nothing changed at the load, nothing written");
    // Both members heartbeat on at their epochs: no UNKNOWN_MEMBER_ID, no new epoch.
    let a2 = m.beat(hb("a", a.member_epoch, None), 10).expect("a is known after the takeover");
    let b2 = m.beat(hb("b", b.member_epoch, None), 11).expect("b is known after the takeover");
    assert_eq!((a2.member_epoch, b2.member_epoch), (epoch, epoch));
    assert_eq!(a2.assignment, None, "a's partitions stay as it was told");
    let mut all = partitions(&a).into_iter().chain(partitions(&b)).collect::<Vec<_>>();
    all.sort_unstable();
    assert_eq!(all, [0, 1]);
    // A member of the loaded group whose session runs out leaves it (written).
    let timeout = GroupConfig::default().share_session_timeout_ms;
    m.c.tick(11 + timeout, &mut Work::default());
    m.beat(hb("a", epoch, None), 12 + timeout).unwrap_err();
}

#[test]
fn a_group_whose_topic_grew_while_unloaded_moves_its_epoch_at_load() {
    let mut n = Node::new(Vec::new());
    n.beat(hb("a", 0, Some(&["t"])), 0).unwrap();
    let mut log = n.log.clone();
    let mut c = Coordinator::new(GroupConfig::default());
    c.topics = [("t".to_string(), ([1u8; 16], 3))].into();
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, leader_epoch, 0);
    c.load(0, std::mem::take(&mut log), 0, true, 0, &mut work);
    assert_eq!(c.share_groups["g"].epoch, 2, "three partitions now: a new epoch");
    assert_eq!(c.share_groups["g"].target["a"]["t"], vec![0, 1, 2]);
    assert!(!work.appends.is_empty(), "the new epoch is written");
}

#[test]
fn an_empty_group_survives_a_reload_and_deletion_tombstones_it_and_fences_its_states_durably() {
    let mut n = Node::new(Vec::new());
    n.beat(hb("a", 0, Some(&["t"])), 0).unwrap();
    let key: ShareKey = ("g".into(), [1u8; 16], 0);
    let state = Stored { state_epoch: 0, leader_epoch: 7, snapshot: Snapshot { start: 5, batches: vec![StateBatch { first: 5, last: 9, state: RecordState::Acknowledged, count: 1 }] } };
    let mut work = Work::default();
    assert!(matches!(n.c.write_share_state(key.clone(), state.clone(), 1, &mut work), Ok(Pending::Wait(_))));
    n.append(work);
    n.replicate();
    assert_eq!(n.delete(), Err(Code::NonEmptyGroup), "a group with members is not deleted");
    n.beat(hb("a", -1, None), 2).unwrap();

    // After a restart the empty group is still there, with its epoch and its state.
    let mut m = Node::new(n.log.clone());
    let g = &m.c.share_groups["g"];
    assert!(g.members.is_empty());
    assert_eq!(g.epoch, 2);
    assert_eq!(m.c.share_states_of("g").count(), 1);
    // While the deletion is written, the state is neither read nor written.
    let mut work = Work::default();
    let Ok(Pending::Wait(t)) = m.c.delete_group("g", 3, &mut work) else { panic!("an empty share group is deleted") };
    assert_eq!(m.c.write_share_state(key.clone(), state.clone(), 3, &mut Work::default()).err(), Some(Code::CoordinatorLoadInProgress));
    assert!(matches!(m.c.share_heartbeat("g", hb("x", 0, Some(&["t"])), 3, &mut Work::default()), Pending::Now(Answer::Consumer(Err(Code::CoordinatorNotAvailable)))));
    m.append(work);
    assert!(m.replicate().contains(&(t, Answer::Written(Ok(())))));
    assert!(!m.c.is_share_group("g"));
    // The old leader's next write is fenced; a read starts afresh.
    assert_eq!(m.c.write_share_state(key.clone(), state.clone(), 4, &mut Work::default()).err(), Some(Code::FencedStateEpoch));
    let mut work = Work::default();
    let Ok(Pending::Wait(t)) = m.c.read_share_state(key.clone(), 7, 4, &mut work) else { panic!("a read waits for its write") };
    m.append(work);
    let read = m.replicate().into_iter().find(|(x, _)| *x == t).map(|(_, a)| a);
    assert!(matches!(&read, Some(Answer::ShareState(Ok(Some(s)))) if s.snapshot.start == -1 && s.state_epoch == 1), "{read:?}");

    // After another restart (from the log up to the deletion) the group is gone, and its
    // states' fences were written with it: a coordinator that loads the partition (a move, a
    // restart) still fences the old leader's write, and a read starts afresh.
    let upto = m.log.len() - 1;
    let mut r = Node::new(m.log[..upto].to_vec());
    assert!(!r.c.is_share_group("g"));
    let fences: Vec<_> = r.c.share_states_of("g").map(|(_, s)| (s.state_epoch, s.snapshot.start)).collect();
    assert_eq!(fences, vec![(1, -1)], "the deletion wrote a fence, not a tombstone");
    assert_eq!(r.c.write_share_state(key.clone(), state.clone(), 9, &mut Work::default()).err(), Some(Code::FencedStateEpoch), "the fence survives a load");
    assert_eq!(r.c.delete_group("g", 9, &mut Work::default()).err(), Some(Code::GroupIdNotFound));
}

#[test]
fn a_deletion_is_refused_where_a_states_epoch_has_no_next_to_fence_with() {
    let mut n = Node::new(Vec::new());
    n.beat(hb("a", 0, Some(&["t"])), 0).unwrap();
    n.beat(hb("a", -1, None), 1).unwrap();
    let (low, high): (ShareKey, ShareKey) = (("g".into(), [1u8; 16], 0), ("g".into(), [1u8; 16], 1));
    let at = |state_epoch| Stored { state_epoch, leader_epoch: 7, snapshot: Snapshot { start: 5, batches: Vec::new() } };
    for (key, epoch) in [(&low, 3), (&high, i32::MAX)] {
        let mut work = Work::default();
        assert!(matches!(n.c.write_share_state(key.clone(), at(epoch), 2, &mut work), Ok(Pending::Wait(_))));
        n.append(work);
        n.replicate();
    }
    // A fence at i32::MAX would not fence a leader holding that epoch: the whole group is
    // refused, as the offsets APIs refuse such a state, and nothing is written.
    let mut work = Work::default();
    assert_eq!(n.c.delete_group("g", 3, &mut work).err(), Some(Code::InvalidRequest));
    assert!(work.appends.is_empty(), "nothing written: {:?}", work.appends.len());
    assert!(n.c.is_share_group("g"));
    let states: Vec<_> = n.c.share_states_of("g").map(|(_, s)| (s.state_epoch, s.snapshot.start)).collect();
    assert_eq!(states, vec![(3, 5), (i32::MAX, 5)], "both states kept, neither fenced");
    // Not left half-deleted: the states are still written and a member joins.
    let mut work = Work::default();
    assert!(matches!(n.c.write_share_state(low.clone(), at(3), 4, &mut work), Ok(Pending::Wait(_))));
    n.append(work);
    n.replicate();
    assert!(n.beat(hb("b", 0, Some(&["t"])), 5).is_ok());
}
