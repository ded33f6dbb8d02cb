//! Several batches in flight (`cargo simtest` only): the `idempotent-in-flight` scenario
//! exercises the broker's five-batch idempotence window (a retry of any of the five is answered
//! with its offsets, never appended again or refused), and planted bugs that only show there
//! (or only at the final open of a replica's log) are caught by their checker on a seed that
//! passes without them.

use crate::run;
use broker_core::broker::PlantedBug;
use sim::scenario::Scenario;

pub(crate) fn scenario(name: &str) -> (String, Scenario) {
    let path = format!("{}/../scenarios/fast/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let s = Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, s)
}

/// The first seed in 0..100 where `checker` reports `bug`; that seed must pass without it.
pub(crate) fn caught(s: &Scenario, path: &str, bug: PlantedBug, checker: &str) -> u64 {
    let seed = (0..100)
        .find(|&seed| run(s, path, seed, Some(bug)).violations.iter().any(|v| v.checker == checker))
        .unwrap_or_else(|| panic!("{checker} caught {bug:?} on no seed of {} in 0..100", s.name));
    let clean = run(s, path, seed, None);
    assert!(clean.passed(), "{} seed {seed} fails without the bug: {:?}", s.name, clean.violations.first());
    seed
}

#[test]
fn a_producer_has_several_writes_outstanding_and_the_run_passes() {
    let (path, s) = scenario("idempotent-in-flight");
    let r = run(&s, &path, 1, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    // Several writes of one producer outstanding at once: a batch invoked before another of
    // the same producer completed.
    let w = &r.history.writes;
    let overlapping = w.windows(2).filter(|p| p[0].process == p[1].process && p[0].value != p[1].value && p[1].invoke_ms < p[0].complete_ms && p[0].partition != p[1].partition).count();
    assert!(overlapping > 100, "only {overlapping} overlapping writes");
}

#[test]
fn a_duplicate_check_against_the_last_batch_only_is_caught_only_with_several_in_flight() {
    let (path, s) = scenario("idempotent-in-flight");
    let seed = caught(&s, &path, PlantedBug::DuplicateCheckLastBatchOnly, "duplicate");
    // One batch in flight: the only retry is of the last batch, and the bug cannot show.
    let mut one = s.clone();
    one.producers[0].in_flight = 1;
    let r = run(&one, &path, seed, Some(PlantedBug::DuplicateCheckLastBatchOnly));
    assert!(r.passed(), "seed {seed} with one batch in flight: {:?}", r.violations.first());
}

/// The run of the first seed of 0..100 where `checker` catches `bug` (a seed that passes
/// without it, [`caught`]), where no other checker fires.
pub(crate) fn caught_alone(s: &Scenario, path: &str, bug: PlantedBug, checker: &str) -> sim::cluster::RunResult {
    let seed = caught(s, path, bug, checker);
    let r = run(s, path, seed, Some(bug));
    assert!(r.violations.iter().all(|v| v.checker == checker), "seed {seed}: {:?}", r.violations.iter().find(|v| v.checker != checker));
    r
}

#[test]
fn a_retry_refused_though_its_batch_is_in_the_log_is_caught_by_refused_retry_alone() {
    // A window of one refusing older sequences, as Kafka refuses one older than its window:
    // the producer gets OUT_OF_ORDER_SEQUENCE_NUMBER for a batch it had appended, and rightly
    // calls the outcome unknown, so no checker of writes, reads or the final log can object.
    let (path, s) = scenario("idempotent-in-flight");
    let r = caught_alone(&s, &path, PlantedBug::ProducerWindowOfOne, "refused_retry");
    assert!(r.history.writes.iter().any(|w| w.retry_refused && matches!(w.outcome, sim::history::Outcome::Unknown(_))), "a refused retry is an unknown outcome");
}

#[test]
fn a_checkpoint_written_in_place_is_caught_by_replica_readable() {
    let (path, s) = scenario("replicated");
    let seed = caught(&s, &path, PlantedBug::CheckpointInPlace, "replica_readable");
    let r = run(&s, &path, seed, Some(PlantedBug::CheckpointInPlace));
    assert!(r.trace.lines().iter().any(|l| l.contains("replica_unreadable")), "seed {seed}: the trace notes the unreadable replica");
    // Before replica_readable, that note was all: no other checker sees the bug here.
    let others: Vec<_> = r.violations.iter().filter(|v| v.checker != "replica_readable").collect();
    assert!(others.is_empty(), "seed {seed}: {:?}", others.first());
}
