//! The share-group offsets APIs through the coordinator and its log: Describe of named topics
//! and of every initialized share-partition; Alter and Delete only of an empty share group,
//! answered once replicated, fencing a leader that still holds the old state; a failed write
//! changing nothing, and nothing moving while one is in flight; what cannot be written or
//! fenced refused; and a coordinator taking the partition over (or a restart) loads the
//! altered start offset, or, once deleted, the fences.

use super::super::*;
use crate::group::share::ShareHeartbeat;
use crate::group::share_offsets::{Asked, ShareOffset};
use std::collections::BTreeSet;
use crate::group::share_state::{ShareKey, Stored};
use crate::share::partition::{RecordState, Snapshot, StateBatch};

const offsets_leader_epoch: i32 = 3;
const topic_id: [u8; 16] = [1u8; 16];

/// A coordinator leading the one offsets partition (topic `t`, 2 partitions), and its log.
struct Node {
    c: Coordinator,
    log: Vec<Loaded>,
}

impl Node {
    fn new(log: Vec<Loaded>) -> Node {
        let (c, work) = crate::group::test_log::leading(GroupConfig::default(), [("t".to_string(), (topic_id, 2))].into(), &log, offsets_leader_epoch);
        let mut n = Node { c, log };
        n.append(work);
        n
    }

    fn append(&mut self, work: Work) {
        for a in work.appends {
            crate::group::test_log::append(&mut self.c, &mut self.log, a, offsets_leader_epoch, 0);
        }
    }

    /// Appends and replicates what `work` asks: the answer of `ticket`, if one waited.
    fn settle(&mut self, work: Work, ticket: Option<Ticket>) -> Option<Answer> {
        self.append(work);
        let mut done = Work::default();
        self.c.settle(|_, _| Ok(true), 0, &mut done);
        ticket.map(|t| done.answers.into_iter().find(|(x, _)| *x == t).expect("answered once replicated").1)
    }

    fn beat(&mut self, member: &str, epoch: i32, topics: Option<&[&str]>) {
        let hb = ShareHeartbeat { member_id: member.into(), member_epoch: epoch, topics: topics.map(|t| t.iter().map(|x| x.to_string()).collect()), ..Default::default() };
        let mut work = Work::default();
        let pending = self.c.share_heartbeat("g", hb, 0, &mut work);
        let ticket = match pending {
            Pending::Wait(t) => Some(t),
            Pending::Now(_) => None,
        };
        self.settle(work, ticket);
    }

    /// A leader's write of `state` to partition `p`, replicated: its result.
    fn leader_writes(&mut self, p: i32, state: Stored) -> Result<(), Code> {
        let mut work = Work::default();
        let Pending::Wait(t) = self.c.write_share_state(("g".into(), topic_id, p), state, 0, &mut work)? else { panic!("a write waits") };
        match self.settle(work, Some(t)) {
            Some(Answer::ShareState(r)) => r.map(drop),
            other => panic!("{other:?}"),
        }
    }

    fn alter(&mut self, offsets: &[(&str, i32, i64)]) -> Result<Vec<Result<(), Code>>, Code> {
        let offsets: Asked = offsets.iter().map(|(t, p, o)| ((*t, *p), *o)).collect();
        let mut work = Work::default();
        let (mut results, ticket) = self.c.alter_share_offsets("g", &offsets, 0, &mut work)?;
        written(&mut results, self.settle(work, ticket));
        Ok(results)
    }

    fn delete(&mut self, topics: &[&str]) -> Result<Vec<Result<(), Code>>, Code> {
        let topics: BTreeSet<&str> = topics.iter().copied().collect();
        let mut work = Work::default();
        let (mut results, ticket) = self.c.delete_share_offsets("g", &topics, 0, &mut work)?;
        written(&mut results, self.settle(work, ticket));
        Ok(results)
    }

    fn described(&self, topics: Option<&[(String, Vec<i32>)]>) -> Result<Vec<(String, Vec<ShareOffset>)>, Code> {
        Ok(self.c.describe_share_offsets("g", topics)?.into_iter().map(|(t, _, o)| (t, o)).collect())
    }
}

/// The write's answer given to the results that waited for it.
fn written(results: &mut [Result<(), Code>], answer: Option<Answer>) {
    if let Some(Answer::ShareState(Err(e))) = answer {
        results.iter_mut().filter(|r| r.is_ok()).for_each(|r| *r = Err(e));
    }
}

fn at(partition: i32, start_offset: i64, leader_epoch: i32) -> ShareOffset {
    ShareOffset { partition, start_offset, leader_epoch }
}

fn held(state_epoch: i32, start: i64) -> Stored {
    Stored { state_epoch, leader_epoch: 7, snapshot: Snapshot { start, batches: vec![StateBatch { first: start, last: start + 4, state: RecordState::Acknowledged, count: 1 }] } }
}

#[test]
fn offsets_of_an_empty_share_group_are_described_altered_and_deleted() {
    let mut n = Node::new(Vec::new());
    assert_eq!(n.described(None), Err(Code::GroupIdNotFound), "no such share group");
    assert_eq!(n.alter(&[("t", 0, 0)]), Err(Code::GroupIdNotFound));
    n.beat("a", 0, Some(&["t"]));
    // The leader of t-0 read the state (state epoch 0) and wrote its start 10.
    n.leader_writes(0, held(0, 10)).expect("the leader's write");
    let named = [("t".to_string(), vec![0, 1]), ("gone".to_string(), vec![0])];
    assert_eq!(
        n.described(Some(&named)),
        Ok(vec![("t".into(), vec![at(0, 10, 7), at(1, -1, 0)]), ("gone".into(), vec![at(0, -1, 0)])]),
        "a partition without state and a topic that does not exist: -1, no error (as Kafka)"
    );
    assert_eq!(n.described(None), Ok(vec![("t".into(), vec![at(0, 10, 7)])]), "all: the initialized ones");
    assert_eq!(n.alter(&[("t", 0, 0)]), Err(Code::NonEmptyGroup), "a member is in the group");
    assert_eq!(n.delete(&["t"]), Err(Code::NonEmptyGroup));

    n.beat("a", -1, None);
    // One result per distinct (topic, partition), in their order; t-1 named twice: the last wins.
    let results = n.alter(&[("t", 0, 2), ("t", 5, 0), ("nope", 0, 0), ("t", 1, -3), ("t", -1, 0), ("t", 1, 4)]).expect("an empty group");
    assert_eq!(results, vec![Err(Code::UnknownTopicOrPartition), Err(Code::UnknownTopicOrPartition), Ok(()), Ok(()), Err(Code::UnknownTopicOrPartition)], "nope-0, t--1, t-0, t-1, t-5");
    assert_eq!(n.alter(&[("t", 1, -3)]), Ok(vec![Err(Code::InvalidRequest)]), "a negative offset");
    assert_eq!(n.described(None), Ok(vec![("t".into(), vec![at(0, 2, 7), at(1, 4, -1)])]));
    // The leader still holding t-0's old state cannot write it back: it is fenced and reads again.
    assert_eq!(n.leader_writes(0, held(0, 10)), Err(Code::FencedStateEpoch), "the alter is not undone");
    let mut work = Work::default();
    let Ok(Pending::Wait(t)) = n.c.read_share_state(("g".into(), topic_id, 0), 8, 0, &mut work) else { panic!("a read waits") };
    let read = n.settle(work, Some(t));
    assert!(matches!(&read, Some(Answer::ShareState(Ok(Some(s)))) if s.snapshot.start == 2 && s.snapshot.batches.is_empty() && s.state_epoch == 1), "{read:?}");

    // A coordinator taking the partition over loads the altered start offsets.
    let mut m = Node::new(n.log.clone());
    assert_eq!(m.described(None), Ok(vec![("t".into(), vec![at(0, 2, 8), at(1, 4, -1)])]));
    assert_eq!(m.delete(&["t", "nope", "t"]), Ok(vec![Err(Code::UnknownTopicOrPartition), Ok(())]), "one result per distinct name: nope, t");
    assert_eq!(m.described(None), Ok(vec![]), "deleted: nothing initialized");
    assert_eq!(m.leader_writes(0, Stored { leader_epoch: 8, ..held(1, 2) }), Err(Code::FencedStateEpoch), "a leader holding the deleted state is fenced");
    // And after a restart the fences are loaded: nothing initialized, an old leader still fenced.
    let mut r = Node::new(m.log.clone());
    assert_eq!(r.described(Some(&[("t".to_string(), vec![0])])), Ok(vec![("t".into(), vec![at(0, -1, 0)])]));
    assert_eq!(r.leader_writes(0, Stored { leader_epoch: 8, ..held(1, 2) }), Err(Code::FencedStateEpoch), "the fence was written");
}

#[test]
fn a_failed_write_answers_its_error_and_nothing_is_answered_before_replication() {
    let mut n = Node::new(Vec::new());
    n.beat("a", 0, Some(&["t"]));
    n.beat("a", -1, None);
    let mut work = Work::default();
    let (results, Some(ticket)) = n.c.alter_share_offsets("g", &[(("t", 0), 3)].into(), 0, &mut work).expect("empty") else { panic!("a write") };
    assert_eq!(results, vec![Ok(())]);
    assert!(work.answers.is_empty(), "not answered before the write is replicated");
    let mut failed = Work::default();
    n.c.appended(work.appends[0].write, Err(Code::NotLeaderOrFollower), 0, &mut failed);
    assert!(matches!(&failed.answers[..], [(t, Answer::ShareState(Err(_)))] if *t == ticket), "{:?}", failed.answers);
    // Another coordinator owning nothing: NOT_COORDINATOR before anything else.
    let mut other = Coordinator::new(GroupConfig::default());
    other.set_partitions(1, 0, &mut Work::default());
    assert_eq!(other.describe_share_offsets("g", None).err(), Some(Code::NotCoordinator));
    assert_eq!(other.delete_share_offsets("g", &BTreeSet::new(), 0, &mut Work::default()).err(), Some(Code::NotCoordinator));
}

#[test]
fn a_failed_alter_or_delete_leaves_the_stored_states_and_nothing_moves_while_it_is_written() {
    let mut n = Node::new(Vec::new());
    n.beat("a", 0, Some(&["t"]));
    n.leader_writes(0, held(0, 10)).expect("the leader's write");
    n.beat("a", -1, None);
    let key: ShareKey = ("g".into(), topic_id, 0);
    for change in ["alter", "delete"] {
        let mut work = Work::default();
        let (results, ticket) = match change {
            "alter" => n.c.alter_share_offsets("g", &[(("t", 0), 3)].into(), 0, &mut work),
            _ => n.c.delete_share_offsets("g", &["t"].into(), 0, &mut work),
        }
        .expect("an empty group");
        assert_eq!((results, ticket.is_some()), (vec![Ok(())], true), "{change}: one write");
        // While it is written: described as stored, states neither read nor written, no join,
        // no other change, no deletion of the group.
        assert_eq!(n.described(None), Ok(vec![("t".into(), vec![at(0, 10, 7)])]), "{change}: not yet in effect");
        assert_eq!(n.c.read_share_state(key.clone(), 8, 0, &mut Work::default()).err(), Some(Code::CoordinatorLoadInProgress));
        assert_eq!(n.c.write_share_state(key.clone(), held(0, 11), 0, &mut Work::default()).err(), Some(Code::CoordinatorLoadInProgress));
        assert_eq!(n.c.alter_share_offsets("g", &[(("t", 1), 3)].into(), 0, &mut Work::default()).err(), Some(Code::CoordinatorLoadInProgress));
        assert_eq!(n.c.delete_share_offsets("g", &["t"].into(), 0, &mut Work::default()).err(), Some(Code::CoordinatorLoadInProgress));
        let join = ShareHeartbeat { member_id: "b".into(), member_epoch: 0, topics: Some(vec!["t".into()]), ..Default::default() };
        assert!(matches!(n.c.share_heartbeat("g", join, 0, &mut Work::default()), Pending::Now(Answer::Consumer(Err(Code::CoordinatorNotAvailable)))), "{change}: no join");
        let mut failed = Work::default();
        n.c.appended(work.appends[0].write, Err(Code::NotLeaderOrFollower), 0, &mut failed);
        assert!(matches!(&failed.answers[..], [(_, Answer::ShareState(Err(_)))]), "{change}: {:?}", failed.answers);
        assert_eq!(n.described(None), Ok(vec![("t".into(), vec![at(0, 10, 7)])]), "{change} failed: the old start offset");
        let mut work = Work::default();
        let Ok(Pending::Wait(t)) = n.c.read_share_state(key.clone(), 7, 0, &mut work) else { panic!("a read waits") };
        let read = n.settle(work, Some(t));
        assert!(matches!(&read, Some(Answer::ShareState(Ok(Some(s)))) if *s == held(0, 10)), "{change} failed: the old snapshot is read (and rewritten): {read:?}");
    }
    // And the leader holding that state still writes: nothing was fenced.
    assert_eq!(n.leader_writes(0, held(0, 12)), Ok(()));
}

#[test]
fn alter_and_delete_refuse_what_they_cannot_write_or_fence() {
    let mut n = Node::new(Vec::new());
    n.beat("a", 0, Some(&["t"]));
    n.beat("a", -1, None);
    assert_eq!(n.delete(&["t"]), Ok(vec![Err(Code::UnknownTopicOrPartition)]), "no state: nothing to delete (Kafka's)");
    // A state epoch at its maximum cannot move on: the fence would not hold.
    n.leader_writes(1, held(i32::MAX, 10)).expect("the leader's write");
    assert_eq!(n.alter(&[("t", 0, 1), ("t", 1, 1)]), Ok(vec![Ok(()), Err(Code::InvalidRequest)]));
    assert_eq!(n.delete(&["t"]), Ok(vec![Err(Code::InvalidRequest)]), "nothing of t is deleted");
    assert_eq!(n.described(None), Ok(vec![("t".into(), vec![at(0, 1, -1), at(1, 10, 7)])]));
    // More distinct partitions than one request may name: refused before anything is built.
    n.c.topics.insert("wide".into(), ([2; 16], i32::MAX));
    let wide: Asked = (0..=crate::constants::share_offsets_alter_partitions_max as i32).map(|p| (("wide", p), 0)).collect();
    assert_eq!(n.c.alter_share_offsets("g", &wide, 0, &mut Work::default()).err(), Some(Code::InvalidRequest));
    // A batch the offsets topic would not take: a long group id makes each record large.
    let long = "g".repeat(crate::constants::group_id_bytes_max);
    let join = ShareHeartbeat { member_id: "a".into(), member_epoch: 0, topics: Some(vec!["t".into()]), ..Default::default() };
    let mut work = Work::default();
    n.c.share_heartbeat(&long, join, 0, &mut work);
    n.settle(work, None);
    let leave = ShareHeartbeat { member_id: "a".into(), member_epoch: -1, ..Default::default() };
    let mut work = Work::default();
    n.c.share_heartbeat(&long, leave, 0, &mut work);
    n.settle(work, None);
    let many: Asked = (0..1_000).map(|p| (("wide", p), 0)).collect();
    let mut work = Work::default();
    assert_eq!(n.c.alter_share_offsets(&long, &many, 0, &mut work).err(), Some(Code::RecordListTooLarge));
    assert!(work.appends.is_empty());
    let fewer: Asked = (0..100).map(|p| (("wide", p), 0)).collect();
    assert!(n.c.alter_share_offsets(&long, &fewer, 0, &mut Work::default()).is_ok(), "a batch that fits");
}
