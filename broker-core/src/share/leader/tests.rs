use super::*;
use crate::share::partition::{RecordState, Snapshot};

fn shares() -> Shares {
    Shares::new(Limits { lock_ms: 1_000, delivery_limit: 3, max_locks: 100 }, 10, 45_000)
}

fn key() -> PartKey {
    ("g".into(), "t".into(), 0)
}

const coordinator: Locate = &|_| Some(7);

/// Serves `key` at leader epoch 1 from a state the coordinator holds (None: never written),
/// starting a new one at `start`.
fn ready(s: &mut Shares, stored: Option<Stored>, start: i64) {
    let mut out = Out::default();
    assert!(!s.prepare(&key(), [1; 16], 1, coordinator, 0, &mut out));
    let [Send { request, coordinator: 7, what: What::Read { leader_epoch: 1 }, .. }] = out.sends.as_slice() else { panic!("{out:?}") };
    let stored = stored.unwrap_or(Stored { snapshot: Snapshot { start: -1, batches: Vec::new() }, ..Default::default() });
    s.answered(*request, Ok(Some(stored)), &|_| Some((start, 0)), 0, &mut out);
    assert!(s.prepare(&key(), [1; 16], 1, coordinator, 0, &mut Out::default()));
}

/// The one write `out` asks for: its request and state.
fn write_of(out: &Out) -> (u64, Stored) {
    match out.sends.as_slice() {
        [Send { request, what: What::Write(st), .. }] => (*request, st.clone()),
        other => panic!("one write expected: {other:?}"),
    }
}

#[test]
fn an_acquisition_is_answered_only_once_its_write_is() {
    let mut s = shares();
    ready(&mut s, None, 5);
    let t = s.ticket();
    let a = s.acquire(&key(), "m", &[(5, 9)], 10, 1_000, t, 0);
    assert_eq!(a.runs.len(), 1);
    assert!(s.waits(t));
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, state) = write_of(&out);
    // The delivery count is in the write: after a failover the records come back counted.
    assert_eq!(state.snapshot.start, 5);
    assert!(state.snapshot.batches.iter().all(|b| b.state == RecordState::Available && b.count == 1), "{state:?}");
    let mut out = Out::default();
    s.answered(request, Ok(None), &|_| None, 0, &mut out);
    s.take_answers(&mut out);
    assert_eq!(out.answers, vec![(t, [(("t".to_string(), 0), Ok(()))].into_iter().collect())]);
}

#[test]
fn changes_made_during_a_write_go_in_the_next_and_failed_writes_go_again() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let (t1, t2) = (s.ticket(), s.ticket());
    s.acquire(&key(), "m", &[(0, 1)], 10, 1_000, t1, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (first, _) = write_of(&out);
    s.acknowledge(&key(), "m", &[(0, 1, vec![AckType::Accept])], t2, 0).unwrap();
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    assert!(out.sends.is_empty(), "one write in flight at a time");
    // The first write was not taken (the coordinator moved): it goes again with the ack.
    s.answered(first, Err(Code::NotCoordinator), &|_| None, 10, &mut out);
    s.flush(coordinator, 10, &mut out);
    assert!(out.sends.is_empty(), "not before the retry time");
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 10 + share_state_retry_ms, &mut out);
    let (second, state) = write_of(&out);
    assert_eq!(state.snapshot.start, 2, "both records accepted: {state:?}");
    let mut out = Out::default();
    s.answered(second, Ok(None), &|_| None, 500, &mut out);
    s.take_answers(&mut out);
    assert_eq!(out.answers.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![t1, t2]);
}

#[test]
fn a_fenced_write_drops_the_share_partition_and_fails_its_waiters() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let t = s.ticket();
    s.acquire(&key(), "m", &[(0, 0)], 10, 1_000, t, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, _) = write_of(&out);
    let mut out = Out::default();
    s.answered(request, Err(Code::FencedLeaderEpoch), &|_| None, 0, &mut out);
    assert_eq!(out.answers, vec![(t, [(("t".to_string(), 0), Err(Code::NotLeaderOrFollower))].into_iter().collect())]);
    assert!(s.partition(&key()).is_none());
}

#[test]
fn a_restored_state_keeps_what_was_accepted_and_locks_run_out() {
    let mut s = shares();
    let stored = Stored { state_epoch: 0, leader_epoch: 0, snapshot: Snapshot { start: 3, batches: vec![crate::share::partition::StateBatch { first: 3, last: 3, state: RecordState::Acknowledged, count: 1 }, crate::share::partition::StateBatch { first: 4, last: 4, state: RecordState::Available, count: 1 }] } };
    ready(&mut s, Some(stored), 0);
    let p = s.partition(&key()).unwrap();
    assert_eq!((p.start(), p.fetch_from()), (4, Some(4)));
    let t = s.ticket();
    let a = s.acquire(&key(), "m", &[(4, 6)], 10, 1_000, t, 0);
    assert_eq!(a.runs[0].count, 2, "delivered again: its second delivery");
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, _) = write_of(&out);
    s.answered(request, Ok(None), &|_| None, 0, &mut out);
    // The lock runs out: the records are available again, and written so.
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 1_000, &mut out);
    assert!(out.wake);
    let (_, state) = write_of(&out);
    assert!(state.snapshot.batches.iter().all(|b| b.state == RecordState::Available), "{state:?}");
}

#[test]
fn a_moved_leadership_drops_the_share_partition() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let mut out = Out::default();
    s.tick(&|_, _| Some(2), coordinator, 0, &mut out);
    assert!(s.partition(&key()).is_none());
    // Served again under the new epoch: read again first.
    let mut out = Out::default();
    assert!(!s.prepare(&key(), [1; 16], 2, coordinator, 0, &mut out));
    assert!(matches!(out.sends.as_slice(), [Send { what: What::Read { leader_epoch: 2 }, .. }]));
}

#[test]
fn a_groups_lock_duration_overrides_the_brokers() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let t = s.ticket();
    // The group's share.record.lock.duration.ms is 5 s, the broker's 1 s.
    s.acquire(&key(), "m", &[(0, 1)], 10, 5_000, t, 0);
    assert_eq!(s.partition(&key()).unwrap().next_deadline(), Some(5_000));
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, _) = write_of(&out);
    s.answered(request, Ok(None), &|_| None, 0, &mut out);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 1_000, &mut out);
    assert!(!out.wake && out.sends.is_empty(), "still locked at the broker's duration");
    s.tick(&|_, _| Some(1), coordinator, 5_000, &mut out);
    assert!(out.wake, "released at the group's");
}

#[test]
fn a_closed_connection_ends_its_sessions_and_gives_back_what_their_members_held() {
    let mut s = shares();
    ready(&mut s, None, 0);
    s.sessions.begin("g", "m", 0, true, false, &[("t".into(), 0)], &[], 0).unwrap();
    s.sessions.bind("g", "m", 7);
    let t = s.ticket();
    s.acquire(&key(), "m", &[(0, 1)], 10, 30_000, t, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, _) = write_of(&out);
    s.answered(request, Ok(None), &|_| None, 0, &mut out);
    // Another connection closing changes nothing.
    let mut out = Out::default();
    s.connection_closed(8, coordinator, 10, &mut out);
    assert!(!out.wake && out.sends.is_empty());
    // The member's own: its session is gone and its records are available again, written so,
    // long before their lock would run out.
    s.connection_closed(7, coordinator, 10, &mut out);
    assert!(out.wake);
    let (_, state) = write_of(&out);
    assert!(state.snapshot.batches.iter().all(|b| b.state == RecordState::Available && b.count == 1), "{state:?}");
    assert!(s.sessions.is_empty());
}

#[test]
fn a_topic_recreated_under_its_name_is_read_afresh_even_at_the_same_epoch() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let t = s.ticket();
    s.acquire(&key(), "m", &[(0, 1)], 10, 1_000, t, 0);
    // The same name and leader epoch, another topic id: the old state is not served.
    let mut out = Out::default();
    assert!(!s.prepare(&key(), [2; 16], 1, coordinator, 0, &mut out));
    assert!(matches!(out.sends.as_slice(), [Send { topic_id: [2, ..], what: What::Read { leader_epoch: 1 }, .. }]), "{out:?}");
    assert_eq!(out.answers, vec![(t, [(("t".to_string(), 0), Err(Code::NotLeaderOrFollower))].into_iter().collect())], "what waited on the old topic's state fails");
}

#[test]
fn a_group_without_sessions_here_is_forgotten_once_written_and_read_again() {
    let mut s = shares();
    ready(&mut s, None, 0);
    s.sessions.begin("g", "m", 0, true, false, &[("t".into(), 0)], &[], 0).unwrap();
    let t = s.ticket();
    s.acquire(&key(), "m", &[(0, 1)], 10, 1_000, t, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (request, _) = write_of(&out);
    s.answered(request, Ok(None), &|_| None, 0, &mut out);
    assert!(s.partition(&key()).is_some(), "a member's session holds it");
    // The member's session closes: its records go back, are written, and then the
    // share-partition is forgotten; the next fetch reads the state again.
    s.sessions.begin("g", "m", -1, false, false, &[], &[], 1).unwrap();
    let mut out = Out::default();
    s.release_member("g", "m", &mut out);
    s.flush(coordinator, 1, &mut out);
    let (request, _) = write_of(&out);
    assert!(s.partition(&key()).is_some(), "kept while its write is owed");
    s.answered(request, Ok(None), &|_| None, 1, &mut out);
    assert!(s.partition(&key()).is_none());
    let mut out = Out::default();
    assert!(!s.prepare(&key(), [1; 16], 1, coordinator, 2, &mut out));
    assert!(matches!(out.sends.as_slice(), [Send { what: What::Read { .. }, .. }]));
}

/// The one read `out` asks for: its request.
fn read_of(out: &Out) -> u64 {
    match out.sends.as_slice() {
        [Send { request, what: What::Read { .. }, .. }] => *request,
        other => panic!("one read expected: {other:?}"),
    }
}

#[test]
fn a_session_opening_checks_the_state_and_a_recreated_groups_starts_afresh() {
    let mut s = shares();
    // Everything of the old group was accepted: nothing left to hand out, no write owed.
    let done = Snapshot { start: 10, batches: Vec::new() };
    ready(&mut s, Some(Stored { state_epoch: 0, leader_epoch: 1, snapshot: done }), 0);
    s.sessions.begin("g", "old", 0, true, false, &[("t".into(), 0)], &[], 0).unwrap();
    // The group is deleted and re-created (at the coordinator); a new member's session opens
    // here while the old one still holds the share-partition.
    s.sessions.begin("g", "new", 0, true, false, &[("t".into(), 0)], &[], 1).unwrap();
    s.session_opened("g");
    let mut out = Out::default();
    assert!(s.prepare(&key(), [1; 16], 1, coordinator, 1, &mut out), "served while it checks");
    let request = read_of(&out);
    // The coordinator fenced the deleted group's state under the next state epoch.
    let fence = Stored { state_epoch: 1, leader_epoch: -1, snapshot: Snapshot { start: -1, batches: Vec::new() } };
    let mut out = Out::default();
    s.answered(request, Ok(Some(fence)), &|_| Some((0, 0)), 2, &mut out);
    assert!(out.wake);
    let p = s.partition(&key()).expect("read afresh");
    assert_eq!((p.start(), p.fetch_from()), (0, Some(0)), "the re-created group starts where its reset says");
    // Its first write is under the new state epoch, so the coordinator takes it.
    s.flush(coordinator, 2, &mut out);
    let (_, state) = write_of(&out);
    assert_eq!((state.state_epoch, state.snapshot.start), (1, 0));
}

#[test]
fn a_check_at_the_same_state_epoch_keeps_what_members_hold() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let t = s.ticket();
    s.acquire(&key(), "m", &[(0, 1)], 10, 30_000, t, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (write, _) = write_of(&out);
    s.answered(write, Ok(None), &|_| None, 0, &mut out);
    s.session_opened("g");
    let mut out = Out::default();
    assert!(s.prepare(&key(), [1; 16], 1, coordinator, 1, &mut out));
    let request = read_of(&out);
    let stored = Stored { state_epoch: 0, leader_epoch: -1, snapshot: Snapshot { start: 0, batches: vec![crate::share::partition::StateBatch { first: 0, last: 1, state: RecordState::Available, count: 1 }] } };
    let mut out = Out::default();
    s.answered(request, Ok(Some(stored)), &|_| Some((0, 0)), 2, &mut out);
    assert!(out.sends.is_empty() && out.answers.is_empty(), "{out:?}");
    assert_eq!(s.partition(&key()).unwrap().fetch_from(), Some(2), "records 0 and 1 still held by m");
    // Checked once: the next fetch reads nothing more.
    let mut out = Out::default();
    assert!(s.prepare(&key(), [1; 16], 1, coordinator, 3, &mut out));
    assert!(out.sends.is_empty());
}

/// The one membership question `out` asks: its request.
fn members_question(out: &Out) -> u64 {
    match out.sends.as_slice() {
        [Send { request, coordinator: 7, group, what: What::Members, .. }] if group == "g" => *request,
        other => panic!("one members question expected: {other:?}"),
    }
}

/// `member` acquires `first..=last` (locked 30 s), written.
fn held_by(s: &mut Shares, member: &str, first: i64, last: i64, now: u64) {
    let t = s.ticket();
    assert!(!s.acquire(&key(), member, &[(first, last)], 100, 30_000, t, now).runs.is_empty());
    let mut out = Out::default();
    s.flush(coordinator, now, &mut out);
    let (request, _) = write_of(&out);
    s.answered(request, Ok(None), &|_| None, now, &mut out);
}

#[test]
fn records_of_a_member_its_coordinator_no_longer_has_go_back_long_before_their_locks_run_out() {
    let mut s = shares();
    ready(&mut s, None, 0);
    held_by(&mut s, "gone", 0, 1, 0);
    held_by(&mut s, "live", 2, 3, 0);
    // Asked one check interval after records were first held, not before.
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 1, &mut out);
    assert!(out.sends.is_empty(), "{out:?}");
    assert_eq!(s.next_deadline(), Some(s.members_check_ms), "before the locks run out (30 s)");
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, s.members_check_ms, &mut out);
    let request = members_question(&out);
    // The coordinator ended "gone" (its group session timed out): its records go back,
    // written, their delivery counts kept; "live" keeps its own.
    let mut out = Out::default();
    s.members_answered(request, Ok(["live".to_string()].into()), coordinator, 5_002, &mut out);
    assert!(out.wake);
    let (_, state) = write_of(&out);
    assert_eq!(state.snapshot.batches.iter().map(|b| (b.first, b.last, b.state, b.count)).collect::<Vec<_>>(), vec![(0, 3, RecordState::Available, 1)]);
    let p = s.partition(&key()).unwrap();
    assert_eq!((p.acquired_by("gone"), p.acquired_by("live")), (0, 2));
    assert_eq!(p.fetch_from(), Some(0), "another member is handed them next");
}

#[test]
fn a_member_asked_about_after_it_acquired_keeps_its_records_and_a_failed_question_releases_nothing() {
    let mut s = shares();
    ready(&mut s, None, 0);
    held_by(&mut s, "old", 0, 1, 0);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, s.members_check_ms, &mut out);
    let first = members_question(&out);
    // The coordinator moved: nothing is released, and the next check asks again.
    let mut out = Out::default();
    s.members_answered(first, Err(Code::NotCoordinator), coordinator, 5_001, &mut out);
    assert!(!out.wake && out.sends.is_empty());
    assert_eq!(s.partition(&key()).unwrap().acquired_by("old"), 2);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 5_001 + s.members_check_ms, &mut out);
    let second = members_question(&out);
    // "new" joins after the coordinator answered, and acquires before the answer arrives: the
    // answer does not name it, yet it was not asked about, so it keeps what it holds.
    held_by(&mut s, "new", 2, 2, 10_002);
    let mut out = Out::default();
    s.members_answered(second, Err(Code::GroupIdNotFound), coordinator, 10_003, &mut out);
    let p = s.partition(&key()).unwrap();
    assert_eq!((p.acquired_by("old"), p.acquired_by("new")), (0, 1));
    // A repeated answer changes nothing.
    let mut out = Out::default();
    s.members_answered(second, Ok(BTreeSet::new()), coordinator, 10_004, &mut out);
    assert!(!out.wake && out.sends.is_empty());
}

/// The one answer `out` gives `ticket`.
fn answer_of(out: &Out, ticket: u64) -> &Results {
    match out.answers.as_slice() {
        [(t, r)] if *t == ticket => r,
        other => panic!("one answer for {ticket} expected: {other:?}"),
    }
}

#[test]
fn records_gone_back_before_their_write_was_answered_are_not_handed_out() {
    // Seed 2585 of share-churn: "a" acquired records while a write was stuck at a coordinator
    // cut off from the cluster; the membership check released them ("a" not in the answer),
    // "b" acquired them at the next delivery count, and one write answered both fetches: "a"
    // was told of records "b" held, at a lower count.
    let mut s = shares();
    ready(&mut s, None, 0);
    held_by(&mut s, "a", 0, 0, 0);
    let stuck = s.ticket();
    s.acknowledge(&key(), "a", &[(0, 0, vec![AckType::Accept])], stuck, 0).unwrap();
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (stuck_write, _) = write_of(&out);
    let ta = s.ticket();
    assert_eq!(s.acquire(&key(), "a", &[(1, 2)], 10, 30_000, ta, 1).runs[0].count, 1);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, s.members_check_ms, &mut out);
    let question = members_question(&out);
    let mut out = Out::default();
    s.members_answered(question, Ok(BTreeSet::new()), coordinator, s.members_check_ms, &mut out);
    assert!(out.wake && out.sends.is_empty(), "the next write waits for the one in flight: {out:?}");
    let tb = s.ticket();
    let b = s.acquire(&key(), "b", &[(1, 2)], 10, 30_000, tb, s.members_check_ms);
    assert_eq!(b.runs[0].count, 2, "handed to b at its second delivery");
    // The stuck write is answered at last: "a"'s acceptance is taken; the acquisition it waits
    // for is in the next write, which carries "b"'s too.
    let mut out = Out::default();
    s.answered(stuck_write, Ok(None), &|_| None, 6_000, &mut out);
    s.flush(coordinator, 6_000, &mut out);
    s.take_answers(&mut out);
    assert_eq!(answer_of(&out, stuck).written, [(("t".to_string(), 0), Ok(()))].into_iter().collect());
    let (next, _) = write_of(&out);
    let mut out = Out::default();
    s.answered(next, Ok(None), &|_| None, 6_001, &mut out);
    s.take_answers(&mut out);
    let results: BTreeMap<u64, Results> = out.answers.into_iter().collect();
    let at = ("t".to_string(), 0);
    assert_eq!(results[&ta].written.get(&at), Some(&Ok(())), "written (the release is)");
    assert!(results[&ta].taken_back.contains(&at), "but not a's any more: not handed out");
    assert!(results[&tb].taken_back.is_empty(), "b's, handed out: {results:?}");
}

#[test]
fn records_whose_lock_ran_out_before_their_write_was_answered_are_not_handed_out() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let ta = s.ticket();
    s.acquire(&key(), "a", &[(0, 1)], 10, 1_000, ta, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let (slow, _) = write_of(&out);
    // The write takes longer than the lock: the records go back, and "b" acquires them.
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, 1_000, &mut out);
    assert!(out.wake);
    let tb = s.ticket();
    assert_eq!(s.acquire(&key(), "b", &[(0, 1)], 10, 1_000, tb, 1_000).runs[0].count, 2);
    let mut out = Out::default();
    s.answered(slow, Ok(None), &|_| None, 1_001, &mut out);
    s.flush(coordinator, 1_001, &mut out);
    s.take_answers(&mut out);
    assert!(answer_of(&out, ta).taken_back.contains(&("t".to_string(), 0)), "{out:?}");
    let (next, _) = write_of(&out);
    let mut out = Out::default();
    s.answered(next, Ok(None), &|_| None, 1_002, &mut out);
    s.take_answers(&mut out);
    assert!(answer_of(&out, tb).taken_back.is_empty(), "{out:?}");
}

#[test]
fn records_gone_back_while_the_requests_other_share_partition_was_written_are_not_handed_out() {
    let mut s = shares();
    ready(&mut s, None, 0);
    let other: PartKey = ("g".into(), "t".into(), 1);
    let mut out = Out::default();
    assert!(!s.prepare(&other, [1; 16], 1, coordinator, 0, &mut out));
    let [Send { request, .. }] = out.sends.as_slice() else { panic!("{out:?}") };
    s.answered(*request, Ok(None), &|_| Some((0, 0)), 0, &mut out);
    // One fetch acquires at both; partition 0's records are locked for less (the group's
    // lock duration changed in between).
    let t = s.ticket();
    s.acquire(&key(), "a", &[(0, 0)], 10, 1_000, t, 0);
    s.acquire(&other, "a", &[(0, 0)], 10, 30_000, t, 0);
    let mut out = Out::default();
    s.flush(coordinator, 0, &mut out);
    let write = |p: i32| out.sends.iter().find(|x| x.partition == p).map(|x| x.request).expect("a write each");
    let (w0, w1) = (write(0), write(1));
    let mut out = Out::default();
    s.answered(w0, Ok(None), &|_| None, 10, &mut out);
    s.take_answers(&mut out);
    assert!(out.answers.is_empty(), "partition 1 is not written yet");
    // Partition 0's lock runs out before partition 1's write is answered.
    s.tick(&|_, _| Some(1), coordinator, 1_000, &mut out);
    let mut out = Out::default();
    s.answered(w1, Ok(None), &|_| None, 1_001, &mut out);
    s.take_answers(&mut out);
    let r = answer_of(&out, t);
    assert_eq!(r.taken_back, [("t".to_string(), 0)].into_iter().collect(), "partition 1's records are still a's: {r:?}");
}

#[test]
fn an_answer_from_a_node_no_longer_the_groups_coordinator_releases_nothing() {
    // Seed 2585 of share-churn: the question went to a coordinator cut off from the cluster;
    // it arrived after the cut healed, before that node learnt it had been replaced, and was
    // answered from its memory, where the members' sessions had run out (never replicated).
    let mut s = shares();
    ready(&mut s, None, 0);
    held_by(&mut s, "live", 0, 1, 0);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, s.members_check_ms, &mut out);
    let question = members_question(&out);
    let moved: Locate = &|_| Some(8);
    let mut out = Out::default();
    s.members_answered(question, Ok(BTreeSet::new()), moved, 5_001, &mut out);
    assert!(!out.wake && out.sends.is_empty(), "{out:?}");
    assert_eq!(s.partition(&key()).unwrap().acquired_by("live"), 2);
    // The next check asks the new coordinator.
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), moved, 5_001 + s.members_check_ms, &mut out);
    assert!(matches!(out.sends.as_slice(), [Send { coordinator: 8, what: What::Members, .. }]), "{out:?}");
}

#[test]
fn a_member_its_coordinator_no_longer_has_keeps_its_share_session_as_in_kafka() {
    let mut s = shares();
    ready(&mut s, None, 0);
    s.sessions.begin("g", "gone", 0, true, false, &[("t".into(), 0)], &[], 0).unwrap();
    s.sessions.bind("g", "gone", 7);
    held_by(&mut s, "gone", 0, 1, 0);
    let mut out = Out::default();
    s.tick(&|_, _| Some(1), coordinator, s.members_check_ms, &mut out);
    let question = members_question(&out);
    let now = s.members_check_ms + 1;
    let mut out = Out::default();
    s.members_answered(question, Ok(BTreeSet::new()), coordinator, now, &mut out);
    assert_eq!(s.partition(&key()).unwrap().acquired_by("gone"), 0, "what it held went back");
    let (release, _) = write_of(&out);
    s.answered(release, Ok(None), &|_| None, now, &mut Out::default());
    // Its share session is not ended: Kafka's share-partition leader checks no member id
    // against the group, and the coordinator tells it of no removal (a member fenced rejoins
    // under the same id, KIP-1082). Its next fetch goes on at the session's epoch, on its
    // connection, and is handed records; the next check gives them back if it is still gone.
    assert_eq!(s.sessions.check_connection("g", "gone", 1, Some(7)), Ok(()));
    assert!(s.sessions.begin("g", "gone", 1, true, false, &[], &[], now).is_ok_and(|b| b.partitions.contains(&("t".to_string(), 0))));
    held_by(&mut s, "gone", 0, 1, now);
    assert_eq!(s.partition(&key()).unwrap().acquired_by("gone"), 2);
}
