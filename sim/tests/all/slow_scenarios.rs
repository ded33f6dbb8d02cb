//! The nightly scenarios in `scenarios/slow/` (run with `cargo sim sweep scenarios/slow`, not in
//! CI: each run is minutes of simulated time and about a minute of wall time) parse, validate
//! and stay what they are for: long, large and full of faults.

use sim::scenario::Scenario;
use std::path::PathBuf;

#[test]
fn slow_scenarios_are_long_large_and_faulty() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/slow");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(!paths.is_empty(), "no scenarios in {}", dir.display());
    for p in paths {
        let s = Scenario::parse(&std::fs::read_to_string(&p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        s.validate().unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let name = p.display();
        assert!(s.duration_ms >= 600_000, "{name}: under 10 simulated minutes");
        assert!(s.brokers >= 5, "{name}: fewer than 5 brokers");
        let clients = s.node_names().len() - s.brokers as usize;
        assert!(clients >= 20, "{name}: {clients} clients, fewer than 20");
        let partitions: i32 = s.topics.iter().map(|t| t.partitions).sum();
        assert!(partitions >= 12, "{name}: {partitions} partitions");
        assert!(s.random_faults.as_ref().is_some_and(|r| r.max >= 50), "{name}: fewer than 50 random faults");
    }
}
