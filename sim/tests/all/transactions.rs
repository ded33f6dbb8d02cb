//! Transactions in the simulator (`cargo simtest` only): the `transactions` scenario's
//! transactional producers run under faults and a read_committed reader judges them; a leader
//! that commits what it was asked to abort is caught by `txn_aborted_read` alone; the late
//! requests of `scenarios/anomalies/` end later transactions under the classic protocol only.

use super::in_flight::{caught, scenario};
use crate::run;
use broker_core::broker::PlantedBug;

#[test]
fn an_abort_marker_written_as_a_commit_is_caught_by_txn_aborted_read_alone() {
    let (path, s) = scenario("transactions");
    let seed = caught(&s, &path, PlantedBug::AbortMarkerCommits, "txn_aborted_read");
    let r = run(&s, &path, seed, Some(PlantedBug::AbortMarkerCommits));
    let others: Vec<_> = r.violations.iter().filter(|v| v.checker != "txn_aborted_read").collect();
    assert!(others.is_empty(), "seed {seed}: {:?}", others.first());
    assert!(r.history.txns.iter().filter(|t| !t.commit).count() > 10, "the run aborts transactions on purpose");
}

#[test]
fn a_commit_marker_written_as_an_abort_is_caught_by_txn_lost_write_alone() {
    let (path, s) = scenario("transactions");
    let seed = caught(&s, &path, PlantedBug::CommitMarkerAborts, "txn_lost_write");
    let r = run(&s, &path, seed, Some(PlantedBug::CommitMarkerAborts));
    let others: Vec<_> = r.violations.iter().filter(|v| v.checker != "txn_lost_write").collect();
    assert!(others.is_empty(), "seed {seed}: {:?}", others.first());
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
