//! The seeded sweeps: many seeds of the simulated cluster must pass every checker, and each
//! planted Raft bug must be caught within 100 seeds that pass without it.

use super::cluster::Cluster;
use crate::controller::raft::PlantedRaftBug;

/// Seeds per sweep: enough to exercise every fault mix many times over, bounded so the unit
/// tests stay quick.
const sweep_seeds: u64 = 100;

fn failures(seeds: std::ops::Range<u64>, plant: Option<PlantedRaftBug>) -> Vec<(u64, Vec<String>)> {
    seeds.filter_map(|seed| Some((seed, Cluster::new(seed, plant).run())).filter(|(_, v)| !v.is_empty())).collect()
}

fn report(failed: &[(u64, Vec<String>)]) -> String {
    failed.iter().take(5).map(|(seed, v)| format!("seed {seed}:\n  {}", v.join("\n  "))).collect::<Vec<_>>().join("\n")
}

#[test]
fn every_checker_passes_over_the_seed_sweep() {
    let failed = failures(0..sweep_seeds, None);
    assert!(failed.is_empty(), "{} of {sweep_seeds} seeds failed:\n{}", failed.len(), report(&failed));
}

#[test]
fn a_seed_replays_exactly() {
    let run = |seed| format!("{:?}", Cluster::new(seed, Some(PlantedRaftBug::VoteBeforeSync)).run());
    for seed in [1, 17, 99] {
        assert_eq!(run(seed), run(seed));
    }
}

/// Runs seeds 0..100 with `plant`: some must fail, and every one that fails must pass without
/// the bug (so the checker caught the bug, not a flaw of the harness).
fn caught_within_100_seeds(plant: PlantedRaftBug) -> Vec<u64> {
    let caught: Vec<u64> = failures(0..100, Some(plant)).into_iter().map(|(seed, _)| seed).collect();
    assert!(!caught.is_empty(), "{plant:?} was not caught in 100 seeds");
    for &seed in &caught {
        let clean = Cluster::new(seed, None).run();
        assert!(clean.is_empty(), "seed {seed} fails without {plant:?} too: {clean:?}");
    }
    caught
}

#[test]
fn a_vote_granted_before_it_is_synced_is_caught() {
    let caught = caught_within_100_seeds(PlantedRaftBug::VoteBeforeSync);
    eprintln!("VoteBeforeSync caught by seeds {caught:?}");
}

#[test]
fn an_old_epoch_entry_committed_by_counting_is_caught() {
    let caught = caught_within_100_seeds(PlantedRaftBug::CommitOldEpochByCount);
    eprintln!("CommitOldEpochByCount caught by seeds {caught:?}");
}

/// Prints the trace of one seed: `RAFT_SEED=14 [RAFT_PLANT=vote|commit] cargo test -p broker-core
/// --lib raft::tests::sweep::replay -- --ignored --nocapture`.
#[test]
#[ignore]
fn replay() {
    let seed = std::env::var("RAFT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let plant = match std::env::var("RAFT_PLANT").as_deref() {
        Ok("vote") => Some(PlantedRaftBug::VoteBeforeSync),
        Ok("commit") => Some(PlantedRaftBug::CommitOldEpochByCount),
        _ => None,
    };
    let mut c = Cluster::new(seed, plant);
    c.trace = Some(Vec::new());
    println!("seed {seed}: {:?}", c.faults);
    let (violations, trace) = c.run_traced();
    for line in trace {
        println!("{line}");
    }
    println!("violations: {violations:#?}");
}
