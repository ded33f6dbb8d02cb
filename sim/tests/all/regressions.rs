//! Seeds that fresh sweeps found failing (issue 26), each kept as a regression scenario that
//! tells its story in its header (`scenarios/regression/`), shrunk on the commit that failed and
//! pinned to its seed here. Each must pass: the bug it found (in the harness, a checker, the
//! broker or the client) stays fixed.

use crate::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

/// (scenario under scenarios/regression/, seed, what was wrong).
const found_by_fresh_seeds: &[(&str, u64, &str)] = &[
    ("harness-pause-of-a-powered-off-broker", 135, "a pause of a dead broker was recorded as holding after its restart"),
    ("harness-power-loss-inside-a-power-loss", 64, "the first of two overlapping crashes restarted the node"),
    ("harness-kill-inside-a-power-loss", 129, "a kill inside a power loss restarted the node at its own end"),
    ("harness-kill-of-a-paused-broker", 184, "a pause outlived the crash of its process in the history"),
    ("handover-active-controller-disk-fails", 7123, "leader_handover gave an active controller a session, without the controller failover"),
    ("handover-active-controller-disk-fails", 50920, "a voter's Raft work waited behind its partitions' late disk completions under the node's gate"),
    ("handover-broken-controller-names-itself", 7165, "a broken metadata quorum still named itself leader"),
    ("group-leader-assigns-without-metadata", 7557, "the client's group leader assigned from no metadata after a failed request"),
    ("group-churn-runs-into-healing", 7593, "member churn ran into the healing phase"),
    ("group-commit-answered-not-coordinator", 50195, "a commit answered NOT_COORDINATOR counted as not made, though it survived"),
    ("group-emptied-waits-one-delay", 50875, "an emptied group's rebalance was delayed again for each member joining"),
    ("group-member-keeps-leaderless-partition", 50427, "the client kept a leaderless partition's metadata and never fetched it again"),
    ("isr-probe-misses-a-partial-follower-append", 52111, "a follower's failed append wrote a prefix the ISR watch never saw"),
    ("group-churn-lone-voter-elected-empty", 60244, "the lone voter shrank its own ISRs while cut off and was elected back empty (the scenario needed ELR)"),
    ("isr-expansion-resent-after-restart", 55194, "an ISR expansion resent after its member restarted admitted the new, shorter log (KIP-903)"),
    ("replication-last-isr-member-elected-empty", 63207, "the last ISR member lost power and was elected back empty (replication-mixed-faults had no fault budget)"),
    ("refused-retry-by-a-deposed-leader", 63093, "refused_retry judged a deposed leader's refusal for a gap, which says nothing of where the batch went"),
    ("group-commit-lands-after-a-later-one", 65804, "group_delivery judged a start at a timed-out commit that landed after a later acknowledged one, Kafka's last writer wins"),
    ("replication-cut-off-leader-shrinks-isr-to-itself", 65812, "a leader cut off shrank its ISR to itself and lost power, and was elected back short (replicated needed ELR)"),
    ("reassign-new-leader-elected-read-as-refusal", 19, "an ISR expansion answered NEW_LEADER_ELECTED left the maximal ISR, and the old leader acknowledged records its successor never had"),
    ("reassign-stray-replica-after-power-loss", 70195, "a replica moved away while its broker was down kept its directory for good"),
    ("open-failed-read-of-a-marker-empties-the-replica", 71630, "a reopen whose claim failed reading the marker removed it after a failed sync, and a later reopen emptied the replica"),
];

#[test]
fn seeds_fresh_sweeps_found_stay_green() {
    let mut failures = Vec::new();
    for (name, seed, bug) in found_by_fresh_seeds {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/regression").join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let s = Scenario::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&s.name, name, "{}: the scenario is named after its file", path.display());
        let r = run(&s, &path.display().to_string(), *seed, None);
        if !r.passed() {
            failures.push(format!("{name} seed {seed} ({bug}): {}", r.violations[0]));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `sim sweep` (and the nightly fresh sweep) report every checker a failing seed fired, in the
/// checkers' order, not only the first; and a budget that runs out makes no further run.
#[test]
fn a_sweep_names_every_checker_that_fired_and_stops_when_told() {
    use broker_core::broker::PlantedBug;
    use sim::sweep::{jobs, sweep, Options};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast/fsync-power-bursts.toml");
    let s = Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let bug = Some(PlantedBug::FlushSkipsBatches);
    let all = Options { jobs: 1, bug, until_found: false, transaction_version: None, keep_going: &|| true, on_done: &|_| {} };
    let outcomes = sweep(jobs(&[(path.clone(), s.clone())], 10_000..10_001), &all);
    let o = &outcomes[0];
    assert!(!o.passed, "fresh seed 10000 finds FlushSkipsBatches (sim/tests/all/fresh_seeds.rs)");
    let r = run(&s, &path.display().to_string(), 10_000, bug);
    let order: Vec<&str> = sim::checkers::CHECKERS.iter().map(|(name, _)| *name).filter(|name| r.violations.iter().any(|v| v.checker == *name)).collect();
    assert_eq!(o.checkers, order, "every checker that fired, each once, in the checkers' order");
    assert!(o.json().to_string().contains("\"checkers\":[\"acknowledged_durable\""), "{}", o.json());
    let started = AtomicUsize::new(0);
    let budget = || started.fetch_add(1, Ordering::SeqCst) < 1;
    let one = Options { jobs: 1, bug: None, until_found: false, transaction_version: None, keep_going: &budget, on_done: &|_| {} };
    assert_eq!(sweep(jobs(&[(path, s)], 0..5), &one).len(), 1, "the budget ran out after the first run");
}

/// A seed that never ended: the log cleaner, failing on a full disk, took turn after turn while
/// simulated time crawled (`scenarios/regression/cleaner-full-disk-spins.toml`). The recorder
/// now fails such a run (a panic, about 20 s in: `recorder::events_per_second_max`); each seed
/// also runs on a thread of its own with a deadline, so a spin the guard misses fails this test
/// rather than hanging the suite (a normal run takes about a second).
#[test]
fn a_cleaner_failing_on_a_full_disk_waits_for_its_backoff() {
    let name = "cleaner-full-disk-spins";
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/regression").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = Scenario::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (tx, rx) = std::sync::mpsc::channel();
    for seed in [73413, 73429] {
        let (s, path, tx) = (s.clone(), path.display().to_string(), tx.clone());
        std::thread::spawn(move || tx.send((seed, run(&s, &path, seed, None).passed())));
    }
    for _ in 0..2 {
        let (seed, passed) = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("a run panicked (a livelock?) or did not end within 120 s");
        assert!(passed, "{name} seed {seed} failed");
    }
}
