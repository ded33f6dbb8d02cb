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
