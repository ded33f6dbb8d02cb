//! The search against a stand-in for the simulator: a run "fails" `acknowledged_durable` when
//! one particular kill is in its schedule for at least 250 ms, the safety phase lasts a second
//! past it and a producer writes at least 30 records/s; any consumer makes `liveness` fail too.
//! So the answer is known, and every pass has something to remove.

use super::*;
use crate::cluster::schedule;
use crate::scenario::FaultKind;

const SCENARIO: &str = r#"
name = "swarm"
duration_ms = 20000
brokers = 3
topics = [{ name = "t", partitions = 2, replication_factor = 2 }]
producers = [{ topic = "t", rate = 200, count = 2 }, { topic = "t", rate = 50 }]
consumers = [{ topic = "t" }, { topic = "t" }]
random_faults = { kinds = ["kill", "pause", "isolate", "clog_link"], max = 12, for_max_ms = 2000 }
"#;

/// A seed whose schedule has at least six faults, a kill among them, and that kill.
fn seed_and_kill(s: &Scenario) -> (u64, FaultSpec) {
    (0..200)
        .find_map(|seed| {
            let (faults, _) = schedule(s, seed);
            let kill = faults.iter().find(|f| f.kind == FaultKind::Kill)?.clone();
            (faults.len() >= 6).then_some((seed, kill))
        })
        .expect("a seed with six faults and a kill")
}

fn request(seed: u64) -> Request {
    Request { scenario: Scenario::parse(SCENARIO).unwrap(), scenario_path: "swarm.toml".into(), seed, bug: None, checker: None, runs_max: shrink_runs_max, out_path: "out.toml".into() }
}

/// The stand-in run: what `cluster::run` would schedule, judged by the rule above.
fn stand_in(seed: u64, kill: FaultSpec) -> impl FnMut(&Scenario) -> Failing {
    move |s| {
        let (faults, _) = schedule(s, seed);
        let mut failing = Failing::new();
        let killed = faults.iter().any(|f| (f.kind, f.at, &f.target) == (kill.kind, kill.at, &kill.target) && f.for_ms >= 250);
        if killed && s.duration_ms >= kill.at + 1_000 && s.producers.iter().any(|p| p.rate >= 30) {
            failing.insert("acknowledged_durable".into(), 3);
        }
        if !s.consumers.is_empty() {
            failing.insert("liveness".into(), 1);
        }
        failing
    }
}

#[test]
fn shrinks_to_the_one_fault_and_the_settings_the_failure_needs() {
    let req = request(0);
    let (seed, kill) = seed_and_kill(&req.scenario);
    let req = Request { seed, ..req };
    let mut steps = 0;
    let out = shrink(&req, &mut stand_in(seed, kill.clone()), &mut |_| steps += 1).unwrap();
    assert_eq!(out.checker, "acknowledged_durable", "the first failing checker in table order");
    assert_eq!((out.runs, out.limited), (steps, false));
    assert!(out.faults_before >= 6);
    let s = &out.scenario;
    assert_eq!((s.faults.len(), s.faults[0].at, s.faults[0].target.as_str(), s.random_faults.is_none()), (1, kill.at, kill.target.as_str(), true), "{}", out.text);
    assert!((250..=250 + 250 / 8 + 1).contains(&s.faults[0].for_ms), "fault for {} ms", s.faults[0].for_ms);
    assert!(s.duration_ms >= kill.at + 1_000 && s.duration_ms <= kill.at + 1_000 + s.duration_ms / 8 + 1, "duration {}", s.duration_ms);
    assert_eq!((s.producers.len(), s.producers[0].count, s.consumers.len()), (1, 1, 0), "{}", out.text);
    assert!((30..=34).contains(&s.producers[0].rate), "rate {}", s.producers[0].rate);
    // RF 2 lets one broker go, unless the kill is on it.
    assert_eq!(s.brokers, if kill.target == "broker-2" { 3 } else { 2 });
    assert_eq!(out.text.contains("#   - brokers 3 → 2"), s.brokers == 2);
    assert_eq!(s.pinned_disk_seed(), Some(schedule(&req.scenario, seed).1));
    assert_eq!(out.after, Failing::from([("acknowledged_durable".to_string(), 3)]));
    assert_eq!(&Scenario::parse(&out.text).unwrap(), s);
    for line in ["# Shrunk by `cargo sim shrink` from swarm.toml --seed", "which failed: acknowledged_durable (3), liveness (1).", "Still fails `acknowledged_durable` (3 violations).", "#   - consumers 2 → 0", "a further round changed nothing", &format!("# Reproduce: cargo sim run out.toml --seed {seed} --trace")] {
        assert!(out.text.contains(line), "no {line:?} in\n{}", out.text);
    }
    let again = shrink(&req, &mut stand_in(seed, kill), &mut |_| {}).unwrap();
    assert_eq!(again.text, out.text, "same input, same output");
}

#[test]
fn the_run_limit_stops_the_search_and_the_output_says_so() {
    let (seed, kill) = seed_and_kill(&request(0).scenario);
    let req = Request { seed, runs_max: 4, ..request(seed) };
    let out = shrink(&req, &mut stand_in(seed, kill), &mut |_| {}).unwrap();
    // The first run, four search runs, the check of the written file.
    assert_eq!((out.runs, out.limited), (6, true));
    assert!(out.text.contains("STOPPED by the run limit (4)"), "{}", out.text);
    assert!(out.after.contains_key("acknowledged_durable"));
}

#[test]
fn a_passing_run_or_a_checker_it_does_not_fail_is_an_error() {
    let req = request(0);
    let passing = shrink(&req, &mut |_: &Scenario| Failing::new(), &mut |_| {}).unwrap_err();
    assert!(passing.contains("nothing to shrink"), "{passing}");
    let (seed, kill) = seed_and_kill(&req.scenario);
    let asked = Request { checker: Some("duplicate".into()), ..request(seed) };
    let err = shrink(&asked, &mut stand_in(seed, kill.clone()), &mut |_| {}).unwrap_err();
    assert!(err.contains("does not fail duplicate"), "{err}");
    let unknown = Request { checker: Some("dupe".into()), ..request(seed) };
    assert!(shrink(&unknown, &mut stand_in(seed, kill.clone()), &mut |_| {}).unwrap_err().contains("no such checker"));
    // Asked for liveness, it keeps a consumer and drops every fault.
    let live = Request { checker: Some("liveness".into()), ..request(seed) };
    let out = shrink(&live, &mut stand_in(seed, kill), &mut |_| {}).unwrap();
    assert_eq!((out.scenario.faults.len(), out.scenario.consumers.len()), (0, 1), "{}", out.text);
}

#[test]
fn a_run_that_does_not_follow_from_its_schedule_is_an_error() {
    // Fails only with the random mix in the scenario: written out as fixed faults it passes.
    let req = request(3);
    let err = shrink(&req, &mut |s: &Scenario| if s.random_faults.is_some() { Failing::from([("duplicate".to_string(), 1)]) } else { Failing::new() }, &mut |_| {}).unwrap_err();
    assert!(err.contains("no longer fail duplicate"), "{err}");
}
