//! The simulator end to end (`cargo simtest` only): every fast scenario over a fixed seed range
//! passes its checkers; every fast scenario run twice gives a byte-identical trace; a replay
//! reports "identical"; and planted broker bugs are caught by the right checker.

use broker_core::broker::PlantedBug;
use sim::cluster::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

fn fast() -> Vec<(String, Scenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(paths.len() >= 4, "expected the fast scenarios in {}", dir.display());
    paths.into_iter().map(|p| (p.display().to_string(), Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap())).collect()
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

/// Seeds until `checker` reports the planted bug, or None within 100 seeds.
fn seeds_to_catch(name: &str, bug: PlantedBug, checker: &str) -> Option<u64> {
    let (path, s) = fast().into_iter().find(|(_, s)| s.name == name).unwrap();
    (0..100).find(|&seed| run(&s, &path, seed, Some(bug)).violations.iter().any(|v| v.checker == checker))
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


#[test]
fn durability_matrix_rows_keep_their_promises() {
    for row in sim::matrix::rows() {
        let mut lost = 0;
        for seed in 0..4 {
            let r = run(&row.scenario, "<matrix>", seed, None);
            assert!(r.violations.iter().all(|v| v.loss), "{}: {:?}", row.scenario.name, r.violations.first());
            lost += r.allowed.iter().chain(&r.violations).filter(|v| v.checker == "acknowledged_durable").count();
        }
        if !row.loss_allowed {
            assert_eq!(lost, 0, "{} promises no acknowledged loss", row.scenario.name);
        } else if row.acks != "0" {
            assert!(lost > 0, "{}: the fault never cost data, so the row proves nothing", row.scenario.name);
        }
    }
}
