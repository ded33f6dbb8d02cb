//! Replication in the simulator: planted replication bugs are caught by the right checker
//! within 100 seeds of the replicated fast scenario, and the seeds that found real replication
//! bugs while it was built stay green (scenarios/regression/, each named after its bug).

use broker_core::broker::PlantedBug;
use crate::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

fn scenario(rel: &str) -> (String, Scenario) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), Scenario::parse(&text).unwrap())
}

/// The first seed in 0..100 where `checker` reports the planted bug; that seed must pass
/// without the bug (the checker caught the bug, not the seed).
fn seeds_to_catch(rel: &str, bug: PlantedBug, checker: &str) -> Option<u64> {
    let (path, s) = scenario(rel);
    let seed = (0..100).find(|&seed| run(&s, &path, seed, Some(bug)).violations.iter().any(|v| v.checker == checker))?;
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "{rel} seed {seed} fails without the bug: {:?}", clean.violations.first());
    Some(seed)
}

#[test]
fn acks_all_answered_without_the_isr_is_caught_by_acknowledged_durable() {
    let seed = seeds_to_catch("scenarios/fast/replicated.toml", PlantedBug::AcksAllWithoutIsr, "acknowledged_durable");
    assert!(seed.is_some(), "a leader acknowledging acks=all without its ISR survived 100 seeds of 3-broker faults");
}

#[test]
fn a_follower_that_skips_truncation_is_caught_by_committed_consistent() {
    let seed = seeds_to_catch("scenarios/fast/replicated.toml", PlantedBug::FollowerSkipsTruncation, "committed_consistent");
    assert!(seed.is_some(), "followers keeping divergent tails survived 100 seeds of 3-broker faults");
}

#[test]
fn every_replica_log_is_read_and_agrees_after_a_clean_run() {
    let (path, s) = scenario("scenarios/fast/replicated.toml");
    let r = run(&s, &path, 1, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    let partitions: usize = s.topics.iter().map(|t| t.partitions as usize).sum();
    let logs: usize = r.history.replica_logs.values().map(|by_broker| by_broker.len()).sum();
    assert_eq!(logs, partitions * 3, "every partition has a log on each of its three replicas");
}

/// Seeds that found replication bugs, each with the bug it found (all fixed).
const regressions: &[(&str, u64, &str)] = &[
    (
        "scenarios/regression/replication-mixed-faults.toml",
        111,
        "a broker restarted after power loss acted on stale metadata as leader of an emptied log \
         before re-registering, and its followers truncated to it; brokers also re-registered on \
         every reconnect, leaving the emptied broker the last ISR member",
    ),
    (
        "scenarios/regression/replication-mixed-faults.toml",
        54,
        "an acks=all produce whose leadership changed while it waited got FENCED_LEADER_EPOCH (a \
         definite error) though appended; the idempotent producer reused the sequence and the next \
         batch was 'deduplicated' against it, acknowledged at the wrong offset",
    ),
    (
        "scenarios/fast/replicated.toml",
        470,
        "the single controller voter, cut off, fenced every other broker and elected itself for \
         everything; losing power then lost committed records (fixed by check-quorum fencing; \
         with ELR on since issue 26 the same seed loses nothing with the bug re-planted, and \
         fence_quorum is what catches it)",
    ),
    (
        "scenarios/fast/replicated-fsync.toml",
        211,
        "ISR proposals not sent after an earlier one failed stayed in flight forever, so the ISR \
         never grew back and acks=all writes failed after healing",
    ),
    (
        "scenarios/regression/replication-stale-follower-progress.toml",
        1,
        "a leader re-admitted a follower that had lost its log on restart, from fetch progress \
         recorded before the crash (a fetch parked before the crash kept refreshing it); the \
         leader then died and the emptied follower was elected",
    ),
    (
        "scenarios/regression/replication-lost-isr-answer.toml",
        7,
        "an ISR expansion whose answer was lost (controller killed after committing it) was \
         dropped from the maximal ISR, so the high watermark passed the new member, which was \
         later elected without those records",
    ),
];

#[test]
fn seeds_that_found_replication_bugs_stay_green() {
    for (rel, seed, bug) in regressions {
        let (path, s) = scenario(rel);
        let r = run(&s, &path, *seed, None);
        assert!(r.passed(), "{rel} seed {seed} ({bug}): {:?}", r.violations.first());
    }
}

#[test]
fn a_leader_whose_log_fails_hands_its_leadership_over() {
    // Why: a partition whose leader's disk fails must fail over to its healthy replicas, not
    // refuse every write until the disk heals.
    let (path, s) = scenario("scenarios/regression/replication-leader-log-failure.toml");
    let r = run(&s, &path, 1, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    let (from, to) = (5_000 + 3_000, 5_000 + 15_000);
    let during = r.history.writes.iter().filter(|w| w.invoke_ms >= from && w.invoke_ms < to);
    let acked = during.filter(|w| w.acknowledged().is_some()).count();
    assert!(acked > 500, "only {acked} writes acknowledged between {from} and {to} ms, while the leader's log was failing");
}

/// KIP-966 without its unclean-shutdown check (planted `ElrKeepsUncleanReplica`): the matrix's
/// ELR row (the last ISR member loses power while the others are cut off) elects it from the
/// ELR again, and acknowledged records are lost; the same seed passes with the real rule.
#[test]
fn an_elr_member_kept_after_an_unclean_shutdown_is_caught_by_acknowledged_durable() {
    let row = sim::matrix::rows().into_iter().find(|r| r.scenario.name == "matrix-acksall-never-last-replica-standing-elr").expect("the ELR row");
    let (s, path) = (&row.scenario, "<matrix:last-replica-standing-elr>");
    let caught = |seed: u64| run(s, path, seed, Some(PlantedBug::ElrKeepsUncleanReplica)).violations.iter().any(|v| v.checker == "acknowledged_durable");
    let seed = (0..100).find(|&seed| caught(seed)).expect("an unclean ELR member elected again survived 100 seeds");
    let clean = run(s, path, seed, None);
    assert!(clean.passed(), "seed {seed} fails without the bug: {:?}", clean.violations.first());
}
