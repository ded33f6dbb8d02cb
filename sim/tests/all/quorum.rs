//! The metadata quorum under the simulator (`cargo simtest` only): the Raft checkers have
//! something to judge on every three-voter run, and a voter that forgets its vote on power loss
//! (planted `RaftStateUnsynced`) is caught by `raft_votes` on a seed that passes without it.

use crate::run;
use broker_core::broker::PlantedBug;
use sim::scenario::Scenario;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn scenario(name: &str) -> (String, Scenario) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/controller").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), Scenario::parse(&text).unwrap())
}

#[test]
fn a_controller_failover_run_gives_the_raft_checkers_elections_commits_and_votes() {
    let (path, s) = scenario("leader-killed");
    let r = run(&s, &path, 0, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    let raft = &r.history.raft;
    let leaders: BTreeSet<i32> = raft.elected.iter().map(|e| e.node).collect();
    assert!(leaders.len() >= 2, "the killed controller's successor is another voter: {:?}", raft.elected);
    let appliers: BTreeSet<i32> = raft.committed.iter().map(|c| c.node).collect();
    assert_eq!(appliers.len(), 3, "every voter applies committed entries");
    assert!(raft.committed.iter().any(|c| c.leader) && raft.committed.iter().any(|c| !c.leader));
    assert!(raft.states.iter().any(|v| v.voted_for.is_some() && !v.restored), "votes are synced and reported");
    assert!(raft.active.iter().any(|&(at, _, _)| at >= r.history.healed_at_ms), "an active controller after healing");
}

#[test]
fn a_vote_written_without_a_sync_is_caught_by_raft_votes() {
    let (path, s) = scenario("leader-power-loss");
    let bug = PlantedBug::RaftStateUnsynced;
    let seed = (0..100)
        .find(|&seed| run(&s, &path, seed, Some(bug)).violations.iter().any(|v| v.checker == "raft_votes"))
        .unwrap_or_else(|| panic!("raft_votes caught {bug:?} on no seed of {} in 0..100", s.name));
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "{} seed {seed} fails without the bug: {:?}", s.name, clean.violations.first());
}
