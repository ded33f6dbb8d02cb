//! The fetcher's side: what a full and an incremental fetch name, forget, and how answers
//! and errors move the session.

use super::*;

fn w(offset: i64) -> Wanted {
    Wanted { fetch_offset: offset, log_start_offset: 0, leader_epoch: 1, max_bytes: 1 << 20 }
}

fn following(ps: &[(i32, i64)]) -> Vec<(Arc<str>, i32, Wanted)> {
    let t: Arc<str> = Arc::from("t");
    ps.iter().map(|&(p, o)| (t.clone(), p, w(o))).collect()
}

#[test]
fn a_full_fetch_then_only_what_moved() {
    let mut a = Asking::new();
    let full = a.next_fetch(&following(&[(0, 5), (1, 7), (2, 9)]));
    assert_eq!((full.session_id, full.epoch, full.named, full.forgotten.len()), (0, 0, vec![0, 1, 2], 0));
    a.answered(None, 42);
    let idle = a.next_fetch(&following(&[(0, 5), (1, 7), (2, 9)]));
    assert_eq!((idle.session_id, idle.epoch, idle.named.len(), idle.forgotten.len()), (42, 1, 0, 0), "nothing moved: nothing named");
    a.answered(None, 42);
    let moved = a.next_fetch(&following(&[(0, 5), (2, 11), (3, 0)]));
    assert_eq!((moved.epoch, moved.named), (2, vec![1, 2]), "2 moved on, 3 is new");
    assert_eq!(moved.forgotten, vec![(Arc::from("t"), 1)], "1 is no longer followed from this leader");
    a.answered(None, 42);
    assert_eq!(a.next_fetch(&following(&[(0, 5), (2, 11), (3, 0)])).named, Vec::<usize>::new());
}

#[test]
fn errors_and_lost_connections_start_over_with_a_full_fetch_closing_the_old_session() {
    let mut a = Asking::new();
    let ps = following(&[(0, 5), (1, 7)]);
    a.next_fetch(&ps);
    a.answered(None, 42);
    a.next_fetch(&ps);
    a.answered(Some(Code::InvalidFetchSessionEpoch), 0);
    let again = a.next_fetch(&ps);
    assert_eq!((again.session_id, again.epoch, again.named), (42, 0, vec![0, 1]), "full, closing session 42");
    a.answered(None, 43);
    a.next_fetch(&ps);
    a.reset();
    let after_reset = a.next_fetch(&ps);
    assert_eq!((after_reset.session_id, after_reset.epoch, after_reset.named.len()), (43, 0, 2));
    // A leader without a free slot answers a full fetch with no session: full fetches go on.
    a.answered(None, 0);
    let no_slot = a.next_fetch(&ps);
    assert_eq!((no_slot.session_id, no_slot.epoch, no_slot.named.len()), (0, 0, 2));
}
