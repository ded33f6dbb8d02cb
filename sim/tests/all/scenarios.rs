//! The simulator end to end (`cargo simtest` only): every fast scenario over a fixed seed range
//! passes its checkers; every fast scenario run twice gives a byte-identical trace; a replay
//! reports "identical"; and planted broker bugs are caught by the right checker.

use broker_core::broker::PlantedBug;
use crate::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

fn fast() -> Vec<(String, Scenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(paths.len() >= 4, "expected the fast scenarios in {}", dir.display());
    paths.into_iter().map(|p| (p.display().to_string(), Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap())).collect()
}

/// The scenarios that run in both worlds (`scenarios/real/`, docs/simulation.md "Real
/// processes"), simulated: each passes its checkers on seeds 0..4, and `acks1-leader-kill`
/// shows its known acks=1 loss (allowed) on each — what `sim chaos` shows for real too.
#[test]
fn real_scenarios_pass_in_the_simulator_and_the_known_loss_shows() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/real");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(paths.len() >= 5, "expected the scenarios of {}", dir.display());
    let mut failures = Vec::new();
    for p in paths {
        let (path, s) = (p.display().to_string(), Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap());
        for seed in 0..4 {
            let r = run(&s, &path, seed, None);
            if !r.passed() {
                failures.push(format!("{path} seed {seed}: {}", r.violations[0]));
            }
            if s.name == "acks1-leader-kill" && r.allowed.len() < 100 {
                failures.push(format!("{path} seed {seed}: only {} acks=1 writes lost (allowed), the scenario is made to lose about 1,600", r.allowed.len()));
            }
        }
    }
    assert!(failures.is_empty(), "{} failing runs:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn fast_scenarios_pass_over_a_fixed_seed_range() {
    let mut failures = Vec::new();
    for (path, s) in fast() {
        for seed in 0..16 {
            let r = run(&s, &path, seed, None);
            assert!(!r.history.writes.is_empty(), "{path} seed {seed}: the workload wrote nothing");
            if !r.passed() {
                failures.push(format!("{path} seed {seed}: {}", r.violations[0]));
            }
        }
    }
    assert!(failures.is_empty(), "{} failing runs:\n{}", failures.len(), failures.join("\n"));
}

/// Zero-copy fetch under faults: answers carry file regions (read into memory by the simulated
/// server as it sends them) while segments roll, are deleted and are cut by follower truncation
/// under crashes, power loss and partitions; every checker's promise still holds.
#[test]
fn zero_copy_fetch_keeps_the_promises_of_the_replicated_scenarios() {
    let mut failures = Vec::new();
    for name in ["replicated", "replicated-fsync", "crash-restart"] {
        let (path, mut s) = fast().into_iter().find(|(_, s)| s.name == name).unwrap_or_else(|| panic!("scenario {name}"));
        s.broker.fetch_zero_copy = Some(true);
        for seed in 0..8 {
            let r = run(&s, &path, seed, None);
            assert!(!r.history.reads.is_empty(), "{path} seed {seed}: nothing was read");
            if !r.passed() {
                failures.push(format!("{path} seed {seed} with fetch_zero_copy: {}", r.violations[0]));
            }
        }
    }
    assert!(failures.is_empty(), "{} failing runs:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn same_scenario_and_seed_give_a_byte_identical_trace() {
    for (path, s) in fast() {
        let a = run(&s, &path, 7, None).trace.to_jsonl();
        let b = run(&s, &path, 7, None).trace.to_jsonl();
        assert!(a == b, "{path}: traces differ at {:?}", sim::trace::first_divergence(&a, &b));
        let c = run(&s, &path, 8, None).trace.to_jsonl();
        assert_ne!(a, c, "{path}: another seed should give another trace");
    }
}

#[test]
fn smoke_moves_a_thousand_records_a_second_end_to_end() {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == "smoke").unwrap();
    let r = run(&s, &path, 1, None);
    let secs = s.duration_ms as f64 / 1000.0;
    assert!(r.history.writes.len() as f64 >= 900.0 * secs, "{} writes in {secs} s", r.history.writes.len());
    assert!(r.history.reads.len() as f64 >= 900.0 * secs, "{} reads in {secs} s", r.history.reads.len());
    assert!(r.passed());
}

#[test]
fn producers_keep_writing_into_the_healing_phase_where_write_liveness_judges_them() {
    for (path, s) in fast() {
        let r = run(&s, &path, 2, None);
        let h = &r.history;
        assert!(h.healed_at_ms >= s.duration_ms && h.heal_ms == s.heal_ms, "{path}: healed at {} ms", h.healed_at_ms);
        let judged = h.writes.iter().filter(|w| w.invoke_ms >= h.healed_at_ms + h.heal_ms / 2).count();
        assert!(judged > 0, "{path}: no write invoked in the second half of the healing phase");
        let last = h.writes.iter().map(|w| w.invoke_ms).max().unwrap();
        assert!(last < h.healed_at_ms + h.heal_ms * 3 / 4 + 10, "{path}: a write invoked at {last} ms, after producers should stop");
    }
}

#[test]
fn the_digest_does_not_depend_on_how_the_scenario_path_is_spelled() {
    let (_, s) = fast().into_iter().find(|(_, s)| s.name == "smoke").unwrap();
    let a = run(&s, "scenarios/fast/smoke.toml", 3, None);
    let b = run(&s, "./scenarios/fast/smoke.toml", 3, None);
    assert_ne!(a.trace.lines()[0], b.trace.lines()[0], "the header keeps the path as given, for replay");
    assert_eq!(a.digest, b.digest);
    let mut edited = s.clone();
    edited.topics[0].name = "other".into();
    edited.producers[0].topic = "other".into();
    edited.consumers[0].topic = "other".into();
    assert_ne!(run(&edited, "scenarios/fast/smoke.toml", 3, None).digest, a.digest, "another scenario, another digest");
}

#[test]
fn a_scenario_that_skipped_validation_does_not_crash_the_harness() {
    use sim::scenario::{FaultKind, FaultSpec, RandomFaults};
    let (_, mut s) = fast().into_iter().find(|(_, s)| s.name == "smoke").unwrap();
    // No clients at all, a mix of link faults only, far too many of them, and fixed faults
    // that name no node, lack a link, or aim a process fault at a client.
    s.producers.clear();
    s.consumers.clear();
    s.random_faults = Some(RandomFaults { kinds: vec![FaultKind::ClogLink, FaultKind::SlowLink, FaultKind::SlowDisk], max: u32::MAX, for_max_ms: 500, brokers_at_once: None, recovery_ms: 0, swarm: false, burst_ms: 0, leaders: false, controller: false });
    s.faults = vec![FaultSpec::new(100, FaultKind::ClogLink, "broker-0", 100), FaultSpec::new(200, FaultKind::Kill, "producer-0", 100), FaultSpec::new(300, FaultKind::Isolate, "nobody", 100)];
    assert!(s.validate().is_err());
    let r = run(&s, "<unvalidated>", 1, None);
    let drawn = r.derived["faults"].as_array().unwrap();
    assert!(drawn.len() <= 3 + sim::scenario::random_faults_max as usize, "{} faults", drawn.len());
    assert!(drawn.iter().all(|f| f["target"] == "broker-0" || f["target"] == "producer-0" || f["target"] == "nobody"), "no link fault without a client");
    let skipped = r.trace.lines().iter().filter(|l| l.contains("fault_skipped")).count();
    assert_eq!(skipped, 3, "{:#?}", r.trace.lines());
}

#[test]
fn a_scenario_the_harness_cannot_run_is_refused_with_the_validation_error() {
    let (path, mut s) = fast().into_iter().find(|(_, s)| s.name == "smoke").unwrap();
    // No broker (no controller to bootstrap from), or more than broker addresses hold.
    for brokers in [0, sim::scenario::brokers_max + 1, 300] {
        s.brokers = brokers;
        let e = sim::cluster::run(&s, &path, 1, None).err().expect("refused");
        assert_eq!(e, format!("scenario: brokers {brokers} must be 1..={}", sim::scenario::brokers_max));
    }
}

/// Seeds until `checker` reports the planted bug, or None within 100 seeds. The catching seed
/// must pass without the bug: the checker caught the bug, not the seed.
fn seeds_to_catch(name: &str, bug: PlantedBug, checker: &str) -> Option<u64> {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == name).unwrap();
    let seed = (0..100).find(|&seed| run(&s, &path, seed, Some(bug)).violations.iter().any(|v| v.checker == checker))?;
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "{name} seed {seed} fails without the bug: {:?}", clean.violations.first());
    Some(seed)
}

#[test]
fn acknowledging_before_appending_is_caught_by_acknowledged_durable() {
    let seed = seeds_to_catch("crash-restart", PlantedBug::AckBeforeAppend, "acknowledged_durable");
    assert!(seed.is_some(), "a broker that acks before appending survived 100 crash-restart seeds");
}

#[test]
fn serving_above_the_high_watermark_is_caught_by_read_above_hw() {
    let seed = seeds_to_catch("smoke", PlantedBug::FetchAboveHighWatermark, "read_above_hw");
    assert_eq!(seed, Some(0), "the smoke scenario reads continuously: the first seed must catch it");
}


/// Every matrix row over a few seeds (the full table is `cargo sim matrix`, docs/scenarios.md):
/// no checker but the loss checkers fails; rows that promise no acknowledged loss measure
/// none; loss-allowed rows show loss on some seed (for acks=0, records sent and missing), or
/// they prove nothing.
#[test]
fn durability_matrix_rows_keep_their_promises() {
    let seeds = 0..8;
    for row in sim::matrix::rows() {
        let name = &row.scenario.name;
        let mut lost = 0;
        for seed in seeds.clone() {
            let m = sim::matrix::measure(&row, seed, None);
            assert!(m.other.is_empty(), "{name} seed {seed}: {:?}", m.other.first());
            assert!(m.acknowledged + m.sent_acks0 > 0, "{name} seed {seed}: the workload wrote nothing");
            assert!(row.loss_allowed || m.lost == 0, "{name} seed {seed} promises no acknowledged loss and lost {}: {:?}\n  cargo sim matrix --row {name} --seeds {seed} (writes the scenario to traces/ and prints the `sim run` that reproduces it)", m.lost, m.losses);
            lost += m.lost;
        }
        if row.loss_allowed {
            assert!(lost > 0, "{name}: the fault never cost data over seeds {seeds:?}, so the row proves nothing");
        }
    }
}

/// `cargo sim matrix --dump` writes each row's scenario as TOML for `cargo sim run`: it must
/// read back as the same scenario, or the reproduce command would run something else.
#[test]
fn matrix_scenarios_read_back_from_their_toml() {
    for row in sim::matrix::rows() {
        let text = toml::to_string(&row.scenario).unwrap();
        assert_eq!(Scenario::parse(&text).unwrap(), row.scenario, "{}:\n{text}", row.scenario.name);
    }
}

#[test]
fn regression_partition_reopen_after_eio_crawled_on_a_slow_disk() {
    // Seed 584: an EIO burst takes orders-1 offline while the disk is slow; rebuilding producer
    // state read every batch header with its own disk operation, so the reopen owed tens of
    // simulated seconds and the partition missed the heal window (write_liveness). Fixed by
    // reading headers in chunks.
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == "random-faults").unwrap();
    let r = run(&s, &path, 584, None);
    assert!(r.passed(), "{:?}", r.violations.first());
}

/// The checkers that existed before `definite_failure`, `dirty_read` and `replica_readable`.
const older_checkers: &[&str] = &[
    "acknowledged_durable",
    "offsets_dense",
    "read_above_hw",
    "lost_write",
    "duplicate",
    "inconsistent_offsets",
    "nonmonotonic_poll",
    "poll_skip",
    "liveness",
    "committed_consistent",
    "write_liveness",
];

/// The first seed in 0..100 where `checker` reports `bug` and no older checker does (so the
/// new checker closes a real gap), checked to pass without the bug.
fn only_new_checker_catches(name: &str, bug: PlantedBug, checker: &str) -> u64 {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == name).unwrap();
    let seed = (0..100)
        .find(|&seed| {
            let v = run(&s, &path, seed, Some(bug)).violations;
            v.iter().any(|v| v.checker == checker) && !v.iter().any(|v| older_checkers.contains(&v.checker))
        })
        .unwrap_or_else(|| panic!("no seed of {name} in 0..100 where {checker} alone catches {bug:?}"));
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "{name} seed {seed} fails without the bug: {:?}", clean.violations.first());
    seed
}

#[test]
fn a_refused_write_that_lands_anyway_is_caught_by_definite_failure_alone() {
    only_new_checker_catches("smoke", PlantedBug::FailAfterAppend, "definite_failure");
}

/// Consumers served records the ISR does not hold yet (planted): matrix row 3 crashes leaders
/// whose followers lag, so what they served is truncated away. `dirty_read` catches it; the
/// older `inconsistent_offsets` also does whenever the lost offsets are refilled by later
/// writes, so this gap shows alone only when they are not (the unit test in
/// `checkers::tests` pins that case).
#[test]
fn consumers_served_unreplicated_records_are_caught_by_dirty_read() {
    let row = sim::matrix::rows().into_iter().find(|r| r.scenario.name == "matrix-acksall-never-leader-crash").expect("matrix row 3");
    let s = &row.scenario;
    let seed = (0..20)
        .find(|&seed| run(s, &s.name, seed, Some(PlantedBug::ConsumersReadToLogEnd)).violations.iter().any(|v| v.checker == "dirty_read"))
        .expect("consumers reading unreplicated records survived 20 seeds of leader crashes with lagging followers");
    let clean = run(s, &s.name, seed, None);
    assert!(clean.passed(), "{} seed {seed} fails without the bug: {:?}", s.name, clean.violations.first());
}

#[test]
fn a_planted_bug_run_names_its_bug_so_replay_plants_it_again() {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == "smoke").unwrap();
    let first = run(&s, &path, 0, Some(PlantedBug::FetchAboveHighWatermark)).trace.to_jsonl();
    let name = sim::trace::read_planted_bug(&first).unwrap().expect("the header names the planted bug");
    let again = run(&s, &path, 0, PlantedBug::named(&name)).trace.to_jsonl();
    assert_eq!(sim::trace::first_divergence(&first, &again), None);
    let clean = run(&s, &path, 0, None).trace.to_jsonl();
    assert_eq!(sim::trace::read_planted_bug(&clean).unwrap(), None, "a clean run's header is as before");
}

#[test]
fn a_repeated_batch_the_client_would_drop_is_caught_by_nonmonotonic_poll() {
    // Before, the client dropped records below its position before the history saw them, so
    // nonmonotonic_poll could never fire; now the history holds what the broker sent.
    let seed = seeds_to_catch("smoke", PlantedBug::FetchRepeatsFirstBatch, "nonmonotonic_poll");
    assert_eq!(seed, Some(0), "smoke reads continuously: the first seed must catch it");
}

/// A cleaner keeping each key's first record of its dirty range instead of its last (planted):
/// the `compacted` scenario's last quarter of healing has no writes, so the cleaners compact
/// closed segments whose latest records are no longer rewritten, and the final read shows an
/// older value as a key's last — which only the `compaction` checker states outright.
#[test]
fn a_cleaner_keeping_first_values_is_caught_by_compaction() {
    let seed = seeds_to_catch("compacted", PlantedBug::CleanerKeepsFirstValue, "compaction");
    let seed = seed.expect("a cleaner keeping each key's first value survived 100 compacted seeds");
    eprintln!("compacted: CleanerKeepsFirstValue caught on seed {seed}");
}

/// The compacted scenario really compacts: tombstones are written, the final log holds far
/// fewer records than were acknowledged, offsets have gaps, and its checkers all hold.
#[test]
fn the_compacted_scenario_compacts() {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == "compacted").unwrap();
    let r = run(&s, &path, 0, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    let h = &r.history;
    assert!(h.compacted_topics.contains_key("kv"));
    let acked = h.writes.iter().filter(|w| w.acknowledged().is_some()).count();
    let tombstones = h.writes.iter().filter(|w| w.tombstone && w.acknowledged().is_some()).count();
    let log = &h.final_read[&("kv".to_string(), 0)];
    assert!(tombstones > 50 && log.len() * 10 < acked, "{acked} acknowledged ({tombstones} tombstones), {} in the final log", log.len());
    assert!(log.windows(2).any(|w| w[1].0 > w[0].0 + 1), "no gap: nothing was cleaned");
}

/// The consumer-group scenarios (`scenarios/groups/`).
fn group_scenarios() -> Vec<(String, Scenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/groups");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(paths.len() >= 2, "expected the group scenarios in {}", dir.display());
    paths.into_iter().map(|p| (p.display().to_string(), Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap())).collect()
}

#[test]
fn group_scenarios_pass_and_replay_identically() {
    let mut failures = Vec::new();
    for (path, s) in group_scenarios() {
        for seed in 0..8 {
            let r = run(&s, &path, seed, None);
            // A share group commits no offsets: its members' acknowledgements are its progress.
            let progressed = match s.groups.iter().any(|g| g.protocol == "share") {
                true => r.history.share_acks.iter().any(|a| a.outcome == "taken"),
                false => !r.history.commits.is_empty(),
            };
            assert!(progressed, "{path} seed {seed}: the group committed (or had acknowledged) nothing");
            if !r.passed() {
                failures.push(format!("{path} seed {seed}: {}", r.violations[0]));
            }
        }
        let (a, b) = (run(&s, &path, 3, None), run(&s, &path, 3, None));
        assert_eq!(a.trace.to_jsonl(), b.trace.to_jsonl(), "{path}: seed 3 twice, two traces");
    }
    assert!(failures.is_empty(), "{} failing runs:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_commit_without_generation_fencing_is_caught_by_group_commits() {
    let (path, s) = group_scenarios().into_iter().find(|(_, s)| s.name == "group-churn").unwrap();
    let caught = (0..100).find(|&seed| run(&s, &path, seed, Some(PlantedBug::CommitIgnoresGeneration)).violations.iter().any(|v| v.checker == "group_commits"));
    let seed = caught.expect("a coordinator taking zombie commits survived 100 group-churn seeds");
    eprintln!("group-churn: CommitIgnoresGeneration caught on seed {seed}");
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "group-churn seed {seed} fails without the bug: {:?}", clean.violations.first());
}

/// Issue 8's third level of rebalance snapshots: a group scenario plus seed in the simulator,
/// its rebalance timeline (simulated ms, generation, member → partitions, what moved, and the
/// churn behind it) kept as a reviewable snapshot. Same seed, same timeline.
#[test]
fn a_seeded_group_run_has_a_stable_rebalance_timeline() {
    let (path, s) = group_scenarios().into_iter().find(|(_, s)| s.name == "group-cooperative-static").unwrap();
    let first = sim::rebalances::timeline(&run(&s, &path, 7, None).history);
    let again = sim::rebalances::timeline(&run(&s, &path, 7, None).history);
    assert_eq!(first, again, "seed 7 twice, two timelines");
    insta::assert_snapshot!(first);
}

/// The same under KIP-848 (`group.protocol = "consumer"`): epochs move member by member, a
/// partition is revoked by one member before another owns it, a crashed or stalled member is
/// fenced and rejoins at epoch 0.
#[test]
fn a_seeded_kip848_group_run_has_a_stable_rebalance_timeline() {
    let (path, s) = group_scenarios().into_iter().find(|(_, s)| s.name == "group-kip848-churn").unwrap();
    let first = sim::rebalances::timeline(&run(&s, &path, 7, None).history);
    let again = sim::rebalances::timeline(&run(&s, &path, 7, None).history);
    assert_eq!(first, again, "seed 7 twice, two timelines");
    insta::assert_snapshot!(first);
}
