//! The session rules: opening, incremental epochs, what an answer carries, errors, eviction.

use super::*;

fn key(p: i32) -> PartitionKey {
    ("t".to_string(), p)
}

fn wanted(offset: i64) -> Wanted {
    Wanted { fetch_offset: offset, log_start_offset: 0, leader_epoch: 3, max_bytes: 1 << 20 }
}

fn asked(ps: &[(i32, i64)]) -> Vec<(PartitionKey, Wanted)> {
    ps.iter().map(|&(p, o)| (key(p), wanted(o))).collect()
}

#[test]
fn without_a_session_everything_is_asked_and_answered() {
    let mut s = FetchSessions::new();
    let b = s.begin(0, None, 0, -1, asked(&[(0, 5), (1, 7)]), &[]).unwrap();
    assert_eq!((b.context, b.partitions.len()), (Context::Sessionless, 2));
    assert!(s.carries(b.context, &key(0), false, 5, 0) && s.carries(b.context, &key(0), false, 5, 0));
    assert!(s.is_empty());
}

#[test]
fn an_incremental_fetch_names_and_gets_only_what_changed() {
    let mut s = FetchSessions::new();
    let full = s.begin(10, Some(2), 0, 0, asked(&[(0, 5), (1, 7), (2, 9)]), &[]).unwrap();
    assert_eq!(full.context, Context::Full { id: 1 });
    for p in 0..3 {
        assert!(s.carries(full.context, &key(p), false, 10, 0), "a full answer carries every partition");
    }
    // Epoch 1 names nothing: the session's three partitions are fetched at their cached offsets.
    let inc = s.begin(20, Some(2), 1, 1, Vec::new(), &[]).unwrap();
    assert_eq!(inc.context, Context::Incremental { id: 1 });
    assert_eq!(inc.partitions, asked(&[(0, 5), (1, 7), (2, 9)]));
    assert!(!s.carries(inc.context, &key(0), false, 10, 0), "idle: left out");
    assert!(s.carries(inc.context, &key(1), true, 10, 0), "records: carried");
    assert!(s.carries(inc.context, &key(2), false, 11, 0), "a new high watermark: carried");
    assert!(!s.carries(inc.context, &key(2), false, 11, 0), "and remembered");
    assert!(s.carries(inc.context, &key(0), false, 10, 4), "a new log start: carried");
    // Epoch 2 moves partition 1 on, forgets 2 and adds 3.
    let inc = s.begin(30, Some(2), 1, 2, asked(&[(1, 12), (3, 0)]), &[key(2)]).unwrap();
    assert_eq!(inc.partitions, asked(&[(0, 5), (1, 12), (3, 0)]));
    assert!(!s.carries(inc.context, &key(1), false, 10, 0), "an update keeps what was last sent");
    assert!(s.carries(inc.context, &key(3), false, 10, 0), "a new partition is carried once");
}

#[test]
fn a_wrong_epoch_or_an_unknown_session_is_refused() {
    let mut s = FetchSessions::new();
    let id = s.begin(0, Some(1), 0, 0, asked(&[(0, 0)]), &[]).unwrap().context.id();
    assert_eq!(s.begin(1, Some(1), id, 2, Vec::new(), &[]), Err(Code::InvalidFetchSessionEpoch), "epoch 1 expected");
    assert_eq!(s.begin(1, Some(1), id + 1, 1, Vec::new(), &[]), Err(Code::FetchSessionIdNotFound));
    assert_eq!(s.begin(1, Some(2), id, 1, Vec::new(), &[]), Err(Code::FetchSessionIdNotFound), "another replica's session");
    assert_eq!(s.begin(1, Some(1), 0, 1, Vec::new(), &[]), Err(Code::FetchSessionIdNotFound), "no session named");
    assert!(s.begin(1, Some(1), id, 1, Vec::new(), &[]).is_ok(), "refusals leave the session as it was");
    assert_eq!(s.begin(2, Some(1), id, 1, Vec::new(), &[]), Err(Code::InvalidFetchSessionEpoch), "an epoch is used once");
}

#[test]
fn epoch_zero_reopens_and_the_final_epoch_closes() {
    let mut s = FetchSessions::new();
    let first = s.begin(0, None, 0, 0, asked(&[(0, 0)]), &[]).unwrap().context.id();
    let second = s.begin(1, None, first, 0, asked(&[(1, 0)]), &[]).unwrap().context.id();
    assert_ne!(first, second);
    assert_eq!(s.len(), 1, "the session named was closed");
    assert_eq!(s.begin(2, None, first, 1, Vec::new(), &[]), Err(Code::FetchSessionIdNotFound));
    let closed = s.begin(3, None, second, -1, asked(&[(1, 0)]), &[]).unwrap();
    assert_eq!(closed.context, Context::Sessionless);
    assert!(s.is_empty());
    assert_eq!(next(i32::MAX), 1, "epochs wrap past i32::MAX to 1, never 0 or -1");
}

#[test]
fn a_full_cache_makes_room_for_followers_and_for_no_one_else_until_sessions_go_idle() {
    let mut s = FetchSessions::new();
    for i in 0..fetch_sessions_max {
        assert!(matches!(s.begin(i as u64, None, 0, 0, asked(&[(0, 0)]), &[]).unwrap().context, Context::Full { .. }));
    }
    let now = fetch_sessions_max as u64;
    let consumer = s.begin(now, None, 0, 0, asked(&[(0, 0)]), &[]).unwrap();
    assert_eq!(consumer.context, Context::Sessionless, "a consumer gets no slot: every session is fresh");
    let follower = s.begin(now, Some(1), 0, 0, asked(&[(0, 0)]), &[]).unwrap();
    assert!(matches!(follower.context, Context::Full { .. }), "a follower takes the least recently used consumer's slot");
    assert_eq!(s.len(), fetch_sessions_max);
    assert_eq!(s.begin(now, None, 1, 1, Vec::new(), &[]), Err(Code::FetchSessionIdNotFound), "session 1 (used at 0) went");
    let later = s.begin(now + fetch_session_eviction_ms, None, 0, 0, asked(&[(0, 0)]), &[]).unwrap();
    assert!(matches!(later.context, Context::Full { .. }), "an idle session's slot is anyone's");
    // Followers' sessions are never evicted for a consumer while fresh.
    let mut f = FetchSessions::new();
    for i in 0..fetch_sessions_max {
        f.begin(i as u64, Some(1), 0, 0, asked(&[(0, 0)]), &[]).unwrap();
    }
    assert_eq!(f.begin(fetch_sessions_max as u64, Some(2), 0, 0, asked(&[(0, 0)]), &[]).unwrap().context, Context::Sessionless);
}
