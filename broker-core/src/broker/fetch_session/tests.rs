//! The session rules: opening, incremental epochs, what an answer carries, errors, eviction.

use super::*;

fn wanted(offset: i64) -> Wanted {
    Wanted { fetch_offset: offset, log_start_offset: 0, leader_epoch: 3, max_bytes: 1 << 20 }
}

fn asked(ps: &[(i32, i64)]) -> Vec<(&'static str, i32, Wanted)> {
    ps.iter().map(|&(p, o)| ("t", p, wanted(o))).collect()
}

/// Opens a session as the Fetch handler does once a full fetch is answered: every partition
/// told (high watermark 10, log start 0).
fn open(s: &mut FetchSessions, now: u64, replica: Option<i32>, ps: &[(i32, i64)]) -> Context {
    let a = asked(ps);
    assert_eq!(s.begin(now, replica, (0, 0), false, true, &a, &[]), Ok(Plan::Asked { open: true }));
    s.open(now, replica, false, a.iter().map(|&(n, p, w)| (n, p, w, (10, 0))))
}

/// The partitions an incremental fetch reads, as (index, fetch offset), in the order read.
fn read(plan: &Plan) -> Vec<(i32, i64)> {
    match plan {
        Plan::Session { partitions, .. } => partitions.iter().map(|(_, p, w)| (*p, w.fetch_offset)).collect(),
        Plan::Asked { .. } => panic!("not a session: {plan:?}"),
    }
}

#[test]
fn without_a_session_everything_is_asked_and_answered() {
    let mut s = FetchSessions::new();
    assert_eq!(s.begin(0, None, (0, -1), false, true, &asked(&[(0, 5), (1, 7)]), &[]), Ok(Plan::Asked { open: false }));
    assert!(s.is_empty(), "nothing opened, nothing kept");
}

#[test]
fn an_incremental_fetch_names_and_gets_only_what_changed() {
    let mut s = FetchSessions::new();
    let full = open(&mut s, 10, Some(2), &[(0, 5), (1, 7), (2, 9)]);
    assert_eq!(full, Context::Full { id: 1 });
    // Epoch 1 names nothing: the session's three partitions are read at their cached offsets,
    // from the second on (the start moves with the epoch).
    let inc = s.begin(20, Some(2), (1, 1), false, true, &[], &[]).unwrap();
    assert_eq!(read(&inc), vec![(1, 7), (2, 9), (0, 5)]);
    assert!(!s.carries(1, "t", 0, false, (10, 0)), "idle: left out");
    assert!(s.carries(1, "t", 1, true, (10, 0)), "records: carried");
    assert!(s.carries(1, "t", 2, false, (11, 0)), "a new high watermark: carried");
    assert!(!s.carries(1, "t", 2, false, (11, 0)), "and remembered");
    assert!(s.carries(1, "t", 0, false, (10, 4)), "a new log start: carried");
    // Epoch 2 moves partition 1 on, forgets 2 and adds 3.
    let inc = s.begin(30, Some(2), (1, 2), false, true, &asked(&[(1, 12), (3, 0)]), &[("t", 2)]).unwrap();
    assert_eq!(read(&inc), vec![(3, 0), (0, 5), (1, 12)]);
    assert!(s.carries(1, "t", 1, false, (10, 0)), "a partition named again is answered again, news or not");
    assert!(!s.carries(1, "t", 1, false, (10, 0)), "once");
    assert!(s.carries(1, "t", 3, false, (10, 0)), "a new partition is carried once");
    assert!(!s.carries(1, "t", 3, false, (10, 0)));
}

#[test]
fn a_parked_fetch_handled_again_takes_no_new_epoch() {
    let mut s = FetchSessions::new();
    open(&mut s, 0, Some(1), &[(0, 5), (1, 7)]);
    let first = s.begin(1, Some(1), (1, 1), false, true, &asked(&[(1, 8)]), &[]).unwrap();
    let again = s.begin(2, Some(1), (1, 1), false, false, &asked(&[(1, 8)]), &[]).unwrap();
    assert_eq!(read(&first), read(&again), "the same partitions, the same offsets");
    assert_eq!(s.begin(3, Some(1), (1, 2), false, false, &[], &[]), Err(Code::InvalidFetchSessionEpoch), "a later handling is of the epoch already taken");
    assert!(s.begin(3, Some(1), (1, 2), false, true, &[], &[]).is_ok(), "the next fetch takes epoch 2");
    // A full fetch handled again opens nothing: only its answer opens the session.
    assert_eq!(s.begin(4, None, (0, 0), false, false, &asked(&[(0, 0)]), &[]), Ok(Plan::Asked { open: true }));
    assert_eq!(s.len(), 1);
}

#[test]
fn a_wrong_epoch_or_an_unknown_session_is_refused() {
    let mut s = FetchSessions::new();
    let id = open(&mut s, 0, Some(1), &[(0, 0)]).id();
    assert_eq!(s.begin(1, Some(1), (id, 2), false, true, &[], &[]), Err(Code::InvalidFetchSessionEpoch), "epoch 1 expected");
    assert_eq!(s.begin(1, Some(1), (id + 1, 1), false, true, &[], &[]), Err(Code::FetchSessionIdNotFound));
    assert_eq!(s.begin(1, Some(2), (id, 1), false, true, &[], &[]), Err(Code::FetchSessionIdNotFound), "another replica's session");
    assert_eq!(s.begin(1, Some(1), (0, 1), false, true, &[], &[]), Err(Code::FetchSessionIdNotFound), "no session named");
    assert!(s.begin(1, Some(1), (id, 1), false, true, &[], &[]).is_ok(), "refusals leave the session as it was");
    assert_eq!(s.begin(2, Some(1), (id, 1), false, true, &[], &[]), Err(Code::InvalidFetchSessionEpoch), "an epoch is used once");
}

#[test]
fn epoch_zero_reopens_and_the_final_epoch_closes() {
    let mut s = FetchSessions::new();
    let first = open(&mut s, 0, None, &[(0, 0)]).id();
    assert_eq!(s.begin(1, None, (first, 0), false, true, &asked(&[(1, 0)]), &[]), Ok(Plan::Asked { open: true }));
    let second = s.open(1, None, false, asked(&[(1, 0)]).into_iter().map(|(n, p, w)| (n, p, w, (0, 0)))).id();
    assert_ne!(first, second);
    assert_eq!(s.len(), 1, "the session named was closed");
    assert_eq!(s.begin(2, None, (first, 1), false, true, &[], &[]), Err(Code::FetchSessionIdNotFound));
    assert_eq!(s.begin(3, None, (second, -1), false, true, &asked(&[(1, 0)]), &[]), Ok(Plan::Asked { open: false }));
    assert!(s.is_empty());
    assert_eq!(next(i32::MAX), 1, "epochs wrap past i32::MAX to 1, never 0 or -1");
}

#[test]
fn a_full_cache_makes_room_for_followers_and_for_no_one_else_until_sessions_go_idle() {
    let mut s = FetchSessions::new();
    for i in 0..fetch_sessions_max {
        assert!(matches!(open(&mut s, i as u64, None, &[(0, 0)]), Context::Full { .. }));
    }
    let now = fetch_sessions_max as u64;
    assert_eq!(open(&mut s, now, None, &[(0, 0)]), Context::Sessionless, "a consumer gets no slot: every session is fresh");
    assert!(matches!(open(&mut s, now, Some(1), &[(0, 0)]), Context::Full { .. }), "a follower takes the least recently used consumer's slot");
    assert_eq!(s.len(), fetch_sessions_max);
    assert_eq!(s.begin(now, None, (1, 1), false, true, &[], &[]), Err(Code::FetchSessionIdNotFound), "session 1 (used at 0) went");
    assert!(matches!(open(&mut s, now + fetch_session_eviction_ms, None, &[(0, 0)]), Context::Full { .. }), "an idle session's slot is anyone's");
    // Followers' sessions are never evicted for a consumer while fresh.
    let mut f = FetchSessions::new();
    for i in 0..fetch_sessions_max {
        open(&mut f, i as u64, Some(1), &[(0, 0)]);
    }
    assert_eq!(open(&mut f, fetch_sessions_max as u64, Some(2), &[(0, 0)]), Context::Sessionless);
}
