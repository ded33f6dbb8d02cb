//! Scripted tests of single rules, driving nodes by hand (no simulated network).

use crate::controller::raft::{Action, Body, Error, FetchResult, Message, Node, NodeId, QuorumState, RaftConfig, Role};

fn node(id: NodeId, voters: i32) -> Node {
    Node::restart(RaftConfig::new(id, 0..voters), QuorumState::default(), Vec::new(), id as u64, 0).unwrap()
}

fn sends(actions: &[Action]) -> Vec<&Message> {
    actions.iter().filter_map(|a| if let Action::Send(m) = a { Some(m) } else { None }).collect()
}

/// Performs every IO action at once (an instant disk), feeding completions back.
fn sync_all(n: &mut Node, now: u64, mut actions: Vec<Action>) -> Vec<Action> {
    let mut out = Vec::new();
    while !actions.is_empty() {
        let mut next = Vec::new();
        for a in actions {
            match a {
                Action::Persist { id, .. } | Action::WriteLog { id, .. } => next.extend(n.io_done(now, id).unwrap()),
                other => out.push(other),
            }
        }
        actions = next;
    }
    out
}

#[test]
fn a_single_voter_elects_itself_once_its_vote_is_synced() {
    let mut n = node(0, 1);
    let t = n.next_deadline();
    let actions = n.tick(t);
    assert!(matches!(n.role(), Role::Candidate(_)), "pre-vote of one wins at once: {:?}", n.role());
    let Some(Action::Persist { id, state }) = actions.first().cloned() else { panic!("persists its vote first: {actions:?}") };
    assert_eq!(state, QuorumState { epoch: 1, voted_for: Some(0), leader: None });
    let after = n.io_done(t, id).unwrap();
    assert!(n.is_leader());
    let rest = sync_all(&mut n, t, after);
    assert!(rest.contains(&Action::Commit { high_watermark: 1 }), "its LeaderChange entry commits once synced: {rest:?}");
    let (base, actions) = n.propose(t, &[b"a", b"b"]).unwrap();
    assert_eq!(base, 1);
    assert_eq!(sync_all(&mut n, t, actions), vec![Action::Commit { high_watermark: 3 }]);
}

#[test]
fn a_vote_is_answered_only_after_it_is_synced() {
    let mut voter = node(1, 3);
    let ask = Message { from: 0, to: 1, body: Body::Vote { epoch: 1, pre_vote: false, last_epoch: 0, end_offset: 0 } };
    let actions = voter.receive(10, ask.clone());
    assert!(sends(&actions).is_empty(), "no answer before the vote is durable: {actions:?}");
    // The new epoch, then the vote in it.
    let [Action::Persist { id: first, .. }, Action::Persist { id, state }] = &actions[..] else { panic!("{actions:?}") };
    assert_eq!(*state, QuorumState { epoch: 1, voted_for: Some(0), leader: None });
    assert!(sends(&voter.io_done(11, *first).unwrap()).is_empty(), "the vote itself is not durable yet");
    let released = voter.io_done(11, *id).unwrap();
    let [m] = sends(&released)[..] else { panic!("{released:?}") };
    assert_eq!(m.body, Body::VoteResponse { epoch: 1, pre_vote: false, granted: true, leader: None });
    // A rival in the same epoch is refused, at once.
    let rival = voter.receive(12, Message { from: 2, ..ask });
    assert!(matches!(sends(&rival)[0].body, Body::VoteResponse { granted: false, .. }));
    assert_eq!(voter.io_done(13, 99), Err(Error::IoOrder { got: 99, expected: None }));
}

#[test]
fn a_pre_vote_is_refused_while_a_leader_is_heard_and_changes_nothing() {
    let mut f = node(1, 3);
    let a = f.receive(0, Message { from: 0, to: 1, body: Body::BeginQuorumEpoch { epoch: 4 } });
    sync_all(&mut f, 0, a);
    assert_eq!(f.leader(), Some(0));
    let pre = Message { from: 2, to: 1, body: Body::Vote { epoch: 5, pre_vote: true, last_epoch: 4, end_offset: 9 } };
    let a = f.receive(10, pre.clone());
    assert!(matches!(sends(&a)[0].body, Body::VoteResponse { granted: false, pre_vote: true, leader: Some(0), .. }));
    let mut later = 0;
    while !matches!(f.role(), Role::Prospective(_)) {
        later = f.next_deadline(); // the leader went quiet: this follower becomes prospective
        let _ = f.tick(later);
    }
    assert_eq!(later, 2_000, "after the fetch timeout");
    let a = f.receive(later, pre);
    assert!(matches!(sends(&a)[0].body, Body::VoteResponse { granted: true, pre_vote: true, .. }));
    assert_eq!(f.epoch(), 4, "a pre-vote moves no epoch");
}

#[test]
fn a_follower_truncates_where_the_leader_says_its_log_diverges() {
    // Leader 0 of epoch 2 over an epoch-1 entry; follower 1 holds a different epoch-1 tail.
    let mut leader = node(0, 3);
    let t = leader.next_deadline();
    let mut a = leader.tick(t);
    for v in [1, 2] {
        a.extend(leader.receive(t, Message { from: v, to: 0, body: Body::VoteResponse { epoch: 0, pre_vote: true, granted: true, leader: None } }));
    }
    let a = sync_all(&mut leader, t, a);
    let _ = a;
    for v in [1, 2] {
        let a = leader.receive(t, Message { from: v, to: 0, body: Body::VoteResponse { epoch: 1, pre_vote: false, granted: true, leader: None } });
        sync_all(&mut leader, t, a);
    }
    assert!(leader.is_leader() && leader.epoch() == 1);
    let fetch = |offset, epoch| Message { from: 1, to: 0, body: Body::Fetch { epoch: 1, fetch_offset: offset, last_fetched_epoch: epoch } };
    let a = leader.receive(t, fetch(5, 1));
    let [m] = sends(&a)[..] else { panic!("{a:?}") };
    assert!(matches!(m.body, Body::FetchResponse { result: FetchResult::Diverging { epoch: 1, end_offset: 1 }, .. }), "{m:?}");
    let a = leader.receive(t, fetch(1, 1));
    let [m] = sends(&a)[..] else { panic!("{a:?}") };
    assert!(matches!(m.body, Body::FetchResponse { result: FetchResult::Entries(ref e), .. } if e.is_empty()), "caught up: {m:?}");
}

#[test]
fn a_leader_that_no_majority_fetches_from_resigns() {
    let mut leader = node(0, 3);
    let t = leader.next_deadline();
    let mut a = leader.tick(t);
    a.extend(leader.receive(t, Message { from: 1, to: 0, body: Body::VoteResponse { epoch: 0, pre_vote: true, granted: true, leader: None } }));
    let a = sync_all(&mut leader, t, a);
    let _ = a;
    let a = leader.receive(t, Message { from: 1, to: 0, body: Body::VoteResponse { epoch: 1, pre_vote: false, granted: true, leader: None } });
    sync_all(&mut leader, t, a);
    assert!(leader.is_leader());
    let mut now = t;
    while leader.is_leader() {
        now = leader.next_deadline();
        let a = leader.tick(now);
        sync_all(&mut leader, now, a);
    }
    assert_eq!(now, t + 3_000, "1.5 fetch timeouts without a fetch");
    assert!(matches!(leader.propose(now, &[b"x"]), Err(Error::NotLeader { .. })));
}

#[test]
fn restoring_a_log_newer_than_the_quorum_state_is_refused() {
    let mut n = node(0, 1);
    let t = n.next_deadline();
    let a = n.tick(t);
    sync_all(&mut n, t, a);
    let entries: Vec<_> = n.log().iter().cloned().collect();
    let old = QuorumState::default();
    assert!(matches!(Node::restart(RaftConfig::new(0, [0]), old, entries, 0, 0), Err(Error::Restore(_))));
    assert!(matches!(Node::restart(RaftConfig::new(0, 0..9), old, Vec::new(), 0, 0), Err(Error::Config(_))));
}

/// Hostile input: random messages, ticks and IO completions in any order never panic a node,
/// and its epoch never goes back.
#[test]
fn random_input_never_panics_a_node() {
    use crate::log::batch;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    for seed in 0..300 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut r = move |n: u64| (rng.next_u64() % n) as i64;
        let mut n = node((r(3)) as NodeId, 3);
        let (mut now, mut epoch) = (0u64, 0);
        for _ in 0..300 {
            now += r(400) as u64;
            let epoch_field = r(6) as i32 - 1;
            let offset = r(24) - 3;
            let entries = (0..r(3))
                .map(|i| {
                    let mut b = batch::build(&[b"x"], 0);
                    batch::stamp(&mut b, offset + i, 1 + r(5) as i32);
                    crate::controller::raft::Entry::from_batch(b.into()).unwrap()
                })
                .collect();
            let body = match r(7) {
                0 => Body::Vote { epoch: epoch_field, pre_vote: r(2) == 0, last_epoch: r(6) as i32 - 1, end_offset: offset },
                1 => Body::VoteResponse { epoch: epoch_field, pre_vote: r(2) == 0, granted: r(2) == 0, leader: (r(2) == 0).then(|| r(4) as NodeId - 1) },
                2 => Body::BeginQuorumEpoch { epoch: epoch_field },
                3 => Body::Fetch { epoch: epoch_field, fetch_offset: offset, last_fetched_epoch: r(6) as i32 - 1 },
                4 => {
                    let result = match r(4) {
                        0 => FetchResult::Entries(entries),
                        1 => FetchResult::Diverging { epoch: r(6) as i32 - 1, end_offset: r(24) - 3 },
                        2 => FetchResult::FencedEpoch,
                        _ => FetchResult::NotLeader,
                    };
                    Body::FetchResponse { epoch: epoch_field, leader: (r(2) == 0).then(|| r(4) as NodeId - 1), fetch_offset: offset, high_watermark: (r(2) == 0).then(|| r(30) - 3), result }
                }
                _ => Body::BeginQuorumEpoch { epoch: epoch_field },
            };
            let _ = match r(4) {
                0 => n.tick(now),
                1 => n.io_done(now, r(8) as u64).unwrap_or_default(),
                2 => n.propose(now, &[b"v"]).map(|(_, a)| a).unwrap_or_default(),
                _ => n.receive(now, Message { from: r(5) as NodeId - 1, to: n.id(), body }),
            };
            assert!(n.epoch() >= epoch, "seed {seed}: epoch went back");
            epoch = n.epoch();
        }
    }
}
