//! Transactions in the simulator (`cargo simtest` only): the `transactions` scenario's
//! transactional producers run under faults and a read_committed reader judges them; a leader
//! that commits what it was asked to abort is caught by `txn_aborted_read` alone; the late
//! requests of `scenarios/anomalies/` end later transactions under the classic protocol only;
//! exactly-once processors (`scenarios/transactions/ring.toml`, `processors.toml`) pass, and
//! `txn_wr_cycle`, `exactly_once` and `lso_monotonic` each catch a planted bug alone.

use super::in_flight::{caught_alone, scenario};
use crate::run;
use broker_core::broker::PlantedBug;

#[test]
fn an_abort_marker_written_as_a_commit_is_caught_by_txn_aborted_read_alone() {
    let (path, s) = scenario("transactions");
    let r = caught_alone(&s, &path, PlantedBug::AbortMarkerCommits, "txn_aborted_read");
    assert!(r.history.txns.iter().filter(|t| !t.commit).count() > 10, "the run aborts transactions on purpose");
}

#[test]
fn a_commit_marker_written_as_an_abort_is_caught_by_txn_lost_write_alone() {
    let (path, s) = scenario("transactions");
    caught_alone(&s, &path, PlantedBug::CommitMarkerAborts, "txn_lost_write");
}

/// The anomaly scenarios (`scenarios/anomalies/`), parsed.
fn anomalies() -> Vec<(String, sim::scenario::Scenario)> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/anomalies");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(paths.len() >= 2, "expected the anomaly scenarios in {}", dir.display());
    paths.into_iter().map(|p| (p.display().to_string(), sim::scenario::Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap())).collect()
}

/// docs/transactions.md section 4, seed by seed: under the classic protocol each schedule of
/// late requests shows its anomaly on some seed of 0..20 (the late request caught and
/// delivered, the checker the file names firing, nothing else failing), and with KIP-890 on the
/// same runs show nothing at all.
#[test]
fn each_late_request_anomaly_shows_under_the_classic_protocol_and_never_with_kip_890() {
    for (path, classic) in anomalies() {
        let shown = (0..20).find(|&seed| {
            let r = run(&classic, &path, seed, None);
            assert!(r.passed(), "{} seed {seed}: a failure that is not the expected anomaly: {:?}", classic.name, r.violations.first());
            !r.anomalies.is_empty()
        });
        let seed = shown.unwrap_or_else(|| panic!("{}: no seed of 0..20 shows its anomaly", classic.name));
        let r = run(&classic, &path, seed, None);
        assert!(r.trace.to_jsonl().contains("\"held\":\""), "{} seed {seed}: a request was held and delivered late", classic.name);
        let mut defended = classic.clone();
        defended.broker.transaction_version = Some(2);
        for seed in 0..20 {
            let r = run(&defended, &path, seed, None);
            assert!(r.passed() && r.anomalies.is_empty(), "{} seed {seed} with KIP-890: {:?}", classic.name, r.violations.first());
        }
    }
}

/// KIP-1228's rule is what stops the late marker under KIP-890: planted away (Kafka 4.0 and
/// 4.1's leaders took a version 2 marker at the producer's current epoch), the late marker of
/// `anomalies/late_marker` ends the next transaction again with `--transaction-version 2`, and
/// the same seed is clean without the plant.
#[test]
fn without_kip_1228_a_late_marker_ends_the_next_transaction_even_with_kip_890() {
    let (path, classic) = anomalies().into_iter().find(|(_, s)| s.name == "late_marker").expect("late_marker");
    let mut defended = classic.clone();
    defended.broker.transaction_version = Some(2);
    let bug = PlantedBug::MarkerEqualEpochAccepted;
    let seed = (0..60).find(|&seed| !run(&defended, &path, seed, Some(bug)).passed()).unwrap_or_else(|| panic!("no seed of 0..60 shows the late marker with {bug:?}"));
    let r = run(&defended, &path, seed, Some(bug));
    let txn = ["txn_lost_write", "txn_aborted_read", "txn_torn"];
    assert!(r.violations.iter().all(|v| txn.contains(&v.checker)), "seed {seed}: {:?}", r.violations.first());
    assert!(run(&defended, &path, seed, None).passed(), "seed {seed} fails without {bug:?}");
}

/// A consume-transform-produce scenario of `scenarios/transactions/`, parsed.
fn processing(name: &str) -> (String, sim::scenario::Scenario) {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/transactions/{name}.toml"));
    let s = sim::scenario::Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path.display().to_string(), s)
}

/// Exactly-once processors pass, under both transaction protocols: every input of the ring
/// comes out once per step, the processors' transactions commit their reads and outputs, and
/// under faults with aborts on purpose the processors start over from the group's offsets.
#[test]
fn exactly_once_processors_pass_under_both_protocols() {
    for name in ["ring", "processors"] {
        let (path, s) = processing(name);
        for tv in [1, 2] {
            let mut s = s.clone();
            s.broker.transaction_version = Some(tv);
            for seed in 0..3 {
                let r = run(&s, &path, seed, None);
                assert!(r.passed(), "{name} tv {tv} seed {seed}: {:?}", r.violations.first());
                let processed: Vec<_> = r.history.txns.iter().filter(|t| t.commit && !t.reads.is_empty()).collect();
                assert!(processed.len() > 50, "{name} tv {tv} seed {seed}: {} transactions read and committed", processed.len());
                let visible: usize = r.history.final_committed.iter().filter(|((t, _), _)| s.processors.iter().any(|p| p.to == *t)).map(|(_, log)| log.iter().filter(|(_, v)| sim::history::processed_from(v).is_some()).count()).sum();
                assert!(visible > 500, "{name} tv {tv} seed {seed}: {visible} outputs visible");
                if name == "processors" {
                    assert!(r.history.txns.iter().any(|t| !t.commit && !t.reads.is_empty()), "{name} seed {seed}: some processing aborted");
                }
            }
        }
    }
}

/// read_committed reading past the last stable offset, with nothing aborted: no checker of a
/// single transaction sees it (each one commits whole), but two processors of the ring read
/// each other's open transactions, a write-read cycle (`txn_wr_cycle` alone).
#[test]
fn reading_past_the_lso_is_caught_by_txn_wr_cycle_alone() {
    let (path, s) = processing("ring");
    caught_alone(&s, &path, PlantedBug::ReadCommittedPastLso, "txn_wr_cycle");
}

/// An aborted transaction's offsets kept by the group coordinator: a processor that starts
/// over skips the inputs whose outputs were aborted (`exactly_once` alone).
#[test]
fn an_aborted_transactions_offsets_kept_are_caught_by_exactly_once_alone() {
    let (path, s) = processing("processors");
    let r = caught_alone(&s, &path, PlantedBug::TxnOffsetsKeptOnAbort, "exactly_once");
    assert!(r.violations.iter().all(|v| v.loss), "inputs skipped: {:?}", r.violations.first());
}

/// A last stable offset held back by the latest open transaction instead of the earliest
/// steps back when the later one ends first: `lso_monotonic` alone (nothing reads with
/// read_committed while the transactions are open, and the final read comes after they end).
#[test]
fn an_lso_held_by_the_latest_open_transaction_is_caught_by_lso_monotonic_alone() {
    let (path, s) = scenario("transactions");
    caught_alone(&s, &path, PlantedBug::LsoFromLatestOpenTxn, "lso_monotonic");
}

/// A commit whose producer gave up waiting for its answer, fenced by the producer's next init
/// while its markers are on their way: the late partition aborts, the others committed. Its
/// outcome is unknown to the producer (neither acknowledged nor aborted), so only `txn_torn`
/// can tell; and the run shows such unknown outcomes without the bug, whole.
#[test]
fn a_prepared_commit_fenced_by_the_next_init_is_caught_by_txn_torn_alone() {
    let (path, s) = processing("impatient-commit");
    let r = caught_alone(&s, &path, PlantedBug::InitFencesPreparedCommit, "txn_torn");
    let torn = r.history.txns.iter().filter(|t| t.commit && matches!(t.end, Some(sim::history::Outcome::Unknown(_))));
    assert!(torn.count() > 0, "a commit given up on");
}

/// KIP-890 part 1 alone: the late produce of `anomalies/late_produce`, under the classic
/// protocol but with the leaders' verification on (the default), is refused (the coordinator
/// knows the producer only at its new epoch), so no seed shows the hanging transaction.
#[test]
fn verification_alone_refuses_the_late_produce() {
    let (path, classic) = anomalies().into_iter().find(|(_, s)| s.name == "late_produce").expect("late_produce");
    let mut verified = classic.clone();
    verified.broker.transaction_partition_verification = Some(true);
    for seed in 0..20 {
        let r = run(&verified, &path, seed, None);
        assert!(r.passed() && r.anomalies.is_empty(), "seed {seed} with verification: {:?}", r.anomalies.first().or(r.violations.first()));
    }
}
