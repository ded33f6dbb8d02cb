//! Partition reassignment in the simulator (issue 30 item 6): `scenarios/fast/reassign.toml`'s
//! admin really moves partitions — every reassignment answered through the faults, the
//! partitions read where the file's header says they start and at rest where they end — so
//! `reassignment_done` and `removed_replica_deleted` judge moves that happened; and a controller
//! that completes a move before its new replicas caught up is caught, on a seed that passes
//! without it. `scenarios/fast/grow-shrink.toml` grows the cluster (a broker joining late,
//! given replicas) and shrinks it (a broker decommissioned) under faults, on pinned seeds.

use crate::run;
use broker_core::broker::PlantedBug;
use sim::scenario::Scenario;
use std::path::PathBuf;

fn reassign() -> (String, Scenario) {
    fast("reassign")
}

fn fast(name: &str) -> (String, Scenario) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/fast/{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), Scenario::parse(&text).unwrap())
}

#[test]
fn the_admin_moves_partitions_and_reads_where_they_end() {
    let (path, s) = reassign();
    let r = run(&s, &path, 0, None);
    assert!(r.passed(), "reassign seed 0: {:?}", r.violations.first());
    let h = &r.history;
    assert_eq!(h.placement_error, None);
    let key = |t: &str, p: i32| (t.to_string(), p);
    let initial = [(key("audit", 0), vec![2]), (key("ledger", 0), vec![1, 2, 0]), (key("orders", 0), vec![0, 1]), (key("orders", 1), vec![1, 2])];
    assert_eq!(h.initial_replicas, initial.into_iter().collect(), "the placement the scenario's header describes");
    assert_eq!(h.reassignments.len(), s.reassignments.len());
    assert!(h.reassignments.iter().all(|m| m.complete_ms.is_some()), "every reassignment answered: {:?}", h.reassignments);
    let accepted = h.reassignments.iter().filter(|m| m.code == Some(0)).count();
    assert!(accepted >= s.reassignments.len() - 2, "only the cancels may find their move done: {:?}", h.reassignments);
    assert_eq!(h.final_placements.len(), 4);
    assert!(h.final_placements.values().all(|p| p.adding.is_empty() && p.removing.is_empty()));
    // Each moved replica's directory is gone, and only those: two or three copies of each
    // partition but audit's one.
    let copies: Vec<usize> = h.final_placements.keys().map(|k| h.replica_logs.get(k).map_or(0, |logs| logs.len())).collect();
    let expected: Vec<usize> = h.final_placements.values().map(|p| p.replicas.len()).collect();
    assert_eq!(copies, expected, "{:?}", h.final_placements);
}

#[test]
fn a_controller_that_skips_catch_up_is_caught() {
    let (path, s) = reassign();
    let caught = |seed: u64| run(&s, &path, seed, Some(PlantedBug::ReassignmentSkipsCatchUp)).violations.iter().any(|v| v.checker == "isr_complete");
    let seed = (0..5).find(|&seed| caught(seed)).expect("a reassignment onto empty replicas survived 5 seeds");
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "reassign seed {seed} fails without the bug: {:?}", clean.violations.first());
}

/// Pinned seeds of `grow-shrink` (fresh ones are swept, docs/simulation.md): each passes, with
/// broker-3 joined and given replicas, broker-1 decommissioned to the end, the faults kept off
/// both while they have no process, and no replica read from broker-1's disk.
#[test]
fn a_cluster_grows_and_shrinks_under_faults_and_loses_nothing() {
    let (path, s) = fast("grow-shrink");
    for seed in [0, 1, 70400, 70437] {
        let r = run(&s, &path, seed, None);
        assert!(r.passed(), "grow-shrink seed {seed}: {:?}", r.violations.first());
        let h = &r.history;
        assert_eq!(h.joins.iter().map(|(id, at)| (*id, *at >= 6_000)).collect::<Vec<_>>(), vec![(3, true)], "seed {seed}");
        let [d] = &h.decommissions[..] else { panic!("seed {seed}: {:?}", h.decommissions) };
        assert!(d.broker == 1 && d.stopped_ms.is_some() && !d.moved.is_empty() && d.onto == vec![0, 2, 3], "seed {seed}: {d:?}");
        assert!(h.final_assignment.values().all(|r| !r.contains(&1)) && h.final_assignment.values().filter(|r| r.contains(&3)).count() >= 2, "seed {seed}: {:?}", h.final_assignment);
        assert_eq!(h.final_registered.keys().copied().collect::<Vec<_>>(), vec![0, 2, 3], "seed {seed}");
        assert!(h.replica_logs.values().all(|logs| !logs.contains_key("broker-1")), "seed {seed}: broker-1's disk was read");
        let stopped = d.stopped_ms.unwrap_or(0);
        let touched = |f: &sim::history::FaultSpan, name: &str| f.target == name || f.link().is_some_and(|(a, b)| a == name || b == name);
        assert!(h.faults.iter().all(|f| !(touched(f, "broker-3") && f.from_ms < 6_000) && !(touched(f, "broker-1") && f.from_ms >= stopped)), "seed {seed}: {:?}", h.faults);
    }
}
