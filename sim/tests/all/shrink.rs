//! `sim shrink` on real runs (`cargo simtest` only): a planted bug's failure under a mix of
//! drawn faults shrinks to at most 3 faults, the written scenario fails the same checker under
//! the same seed and passes without the bug, and shrinking again writes the same bytes. The
//! shrunk example checked in under `scenarios/shrunk/` keeps failing with its bug and passing
//! without it (a sweep of `scenarios` runs it without it); a change to what the simulator
//! schedules can make it pass, and `write_the_shrunk_example` writes it again.

use broker_core::broker::PlantedBug;
use crate::run;
use sim::cluster::schedule;
use sim::scenario::Scenario;
use sim::shrink::{self, shrink, Request};
use std::path::PathBuf;

/// One broker with fsync per batch and a mix of faults that lose nothing acknowledged on their
/// own; short, so each of the search's runs is cheap.
const SCENARIO: &str = r#"
name = "shrink-me"
duration_ms = 8000
heal_ms = 2000
broker = { flush_messages = 1 }
topics = [{ name = "orders", partitions = 2 }]
producers = [{ topic = "orders", acks = "all", rate = 300 }]
consumers = [{ topic = "orders" }]
random_faults = { kinds = ["kill", "pause", "isolate", "slow_disk", "clog_link"], max = 8, for_max_ms = 1500 }
"#;

const the_bug: PlantedBug = PlantedBug::AckBeforeAppend;
const the_checker: &str = "acknowledged_durable";

#[test]
fn a_planted_bug_shrinks_to_at_most_three_faults_and_the_result_reproduces() {
    let s = Scenario::parse(SCENARIO).unwrap();
    // The first seed with at least five faults drawn whose run the bug makes fail.
    let seed = (0..60)
        .filter(|&seed| schedule(&s, seed).0.len() >= 5)
        .find(|&seed| run(&s, "shrink-me", seed, Some(the_bug)).violations.iter().any(|v| v.checker == the_checker))
        .expect("no seed of 0..60 with five faults where AckBeforeAppend loses an acknowledged write");
    let req = Request { scenario: s, scenario_path: "shrink-me.toml".into(), seed, bug: Some(the_bug), checker: None, runs_max: shrink::shrink_runs_max, out_path: "shrunk.toml".into() };
    let out = shrink(&req, &mut shrink::runner(seed, Some(the_bug)), &mut |_| {}).unwrap();
    assert_eq!(out.checker, the_checker);
    assert!(out.faults_before >= 5 && out.scenario.faults.len() <= 3, "seed {seed}: {} faults → {}\n{}", out.faults_before, out.scenario.faults.len(), out.text);
    assert!(!out.limited, "the run bound stopped it: {}", out.text);

    // What `cargo sim run shrunk.toml --seed N --plant AckBeforeAppend` runs: the file's text.
    let written = Scenario::parse(&out.text).unwrap();
    assert!(written.random_faults.is_none() && written.disk_seed.is_some());
    let again = run(&written, "shrunk.toml", seed, Some(the_bug));
    assert!(again.violations.iter().any(|v| v.checker == the_checker), "the written scenario does not fail {the_checker}:\n{}", out.text);
    let clean = run(&written, "shrunk.toml", seed, None);
    assert!(clean.passed(), "the shrunk scenario fails without the bug: {:?}", clean.violations.first());

    let twice = shrink(&req, &mut shrink::runner(seed, Some(the_bug)), &mut |_| {}).unwrap();
    assert_eq!(twice.text, out.text, "shrinking twice wrote different scenarios");
}

/// The seed, planted bug and checker a checked-in shrunk scenario names in its header.
fn header(text: &str) -> (u64, Option<PlantedBug>, String) {
    let line = |prefix: &str| text.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line"));
    let words: Vec<&str> = line("# Reproduce: cargo sim run ").split_whitespace().collect();
    let after = |flag: &str| words.iter().position(|w| *w == flag).map(|i| words[i + 1]);
    let seed = after("--seed").expect("--seed").parse().unwrap();
    let planted = after("--plant").map(|name| PlantedBug::named(name).expect("a known planted bug"));
    let checker = line("# Still fails `").split('`').next().unwrap().to_string();
    (seed, planted, checker)
}

#[test]
fn checked_in_shrunk_scenarios_fail_with_their_bug_and_pass_without_it() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/shrunk");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    paths.sort();
    assert!(!paths.is_empty(), "no shrunk example in {}", dir.display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let s = Scenario::parse(&text).unwrap();
        let (seed, planted, named) = header(&text);
        assert!(s.faults.len() <= 3 && s.random_faults.is_none(), "{}: not a shrunk scenario", path.display());
        let name = path.display().to_string();
        let failing = run(&s, &name, seed, planted);
        assert!(
            failing.violations.iter().any(|v| v.checker == named),
            "{name} seed {seed} with {planted:?} no longer fails {named}: the simulator schedules differently since it was shrunk; write it again with `cargo simtest shrink::write_the_shrunk_example -- --ignored`"
        );
        if planted.is_some() {
            let clean = run(&s, &name, seed, None);
            assert!(clean.passed(), "{name} seed {seed} fails without its planted bug: {:?}", clean.violations.first());
        }
    }
}

/// Writes `scenarios/shrunk/replicated-fsync-acks-all-without-isr.toml` and its trace
/// `traces/replicated-fsync-shrunk.jsonl` (docs/simulation.md's example) again, from the first
/// seed of `replicated-fsync` with five or more faults where `AcksAllWithoutIsr` loses an
/// acknowledged write — as `cargo sim run … --trace` then `cargo sim shrink TRACE --out …`
/// would. `cargo simtest shrink::write_the_shrunk_example -- --ignored`.
#[test]
#[ignore]
fn write_the_shrunk_example() {
    let (from, out, trace) = ("scenarios/fast/replicated-fsync.toml", "scenarios/shrunk/replicated-fsync-acks-all-without-isr.toml", "traces/replicated-fsync-shrunk.jsonl");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let s = Scenario::parse(&std::fs::read_to_string(root.join(from)).unwrap()).unwrap();
    let planted = Some(PlantedBug::AcksAllWithoutIsr);
    let seed = (0..50)
        .filter(|&seed| schedule(&s, seed).0.len() >= 5)
        .find(|&seed| run(&s, from, seed, planted).violations.iter().any(|v| v.checker == the_checker))
        .expect("no seed of replicated-fsync in 0..50 with five faults where AcksAllWithoutIsr loses a write");
    let req = Request { scenario: s, scenario_path: from.into(), seed, bug: planted, checker: None, runs_max: shrink::shrink_runs_max, out_path: out.into() };
    let shrunk = shrink(&req, &mut shrink::runner(seed, planted), &mut |_| {}).unwrap();
    std::fs::write(root.join(out), &shrunk.text).unwrap();
    std::fs::write(root.join(trace), run(&shrunk.scenario, out, seed, planted).trace.to_jsonl()).unwrap();
    eprintln!("seed {seed}: {} faults → {}, {} runs; wrote {out} and {trace}", shrunk.faults_before, shrunk.scenario.faults.len(), shrunk.runs);
}
