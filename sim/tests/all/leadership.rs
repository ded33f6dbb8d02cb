//! Preferred-leader election in the simulator (`scenarios/controller/preferred-leader.toml`):
//! after its first replica is killed and restarts, every partition ends led by its first
//! replica again (the controller moved it back with a new leader epoch), and every checker
//! passes. The same scenario with `auto_leader_rebalance` off ends with orders-1 still away,
//! so the test can tell the two apart.

use crate::run;
use sim::history::Leadership;
use sim::scenario::Scenario;
use std::path::PathBuf;

const rel: &str = "scenarios/controller/preferred-leader.toml";

fn scenario() -> (String, Scenario) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), Scenario::parse(&text).unwrap())
}

/// The last leadership of `orders-p`.
fn last_leader(leaderships: &[Leadership], p: i32) -> &Leadership {
    leaderships.iter().filter(|l| l.topic == "orders" && l.partition == p).last().expect("orders-p had a leader")
}

#[test]
fn leadership_goes_back_to_the_first_replica_after_a_restart() {
    let (path, s) = scenario();
    for seed in 0..4 {
        let r = run(&s, &path, seed, None);
        assert!(r.passed(), "seed {seed}: {:?}", r.violations.first());
        let l = &r.history.leaderships;
        let back = last_leader(l, 1);
        assert_eq!(back.broker, "broker-1", "seed {seed}: orders-1 ends led by its first replica");
        assert!(back.leader_epoch >= 2, "seed {seed}: away to broker-2, then back: two elections, not {back:?}");
        assert_eq!(last_leader(l, 0).broker, "broker-0", "seed {seed}");
        assert_eq!(last_leader(l, 2).broker, "broker-2", "seed {seed}");
    }
    let mut off = s.clone();
    off.broker.auto_leader_rebalance = Some(false);
    let r = run(&off, &path, 0, None);
    assert!(r.passed(), "{:?}", r.violations.first());
    assert_ne!(last_leader(&r.history.leaderships, 1).broker, "broker-1", "without rebalance leadership stays where failover put it");
}
