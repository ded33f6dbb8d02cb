//! Sweeps: many (scenario, seed) runs spread over a few threads, each judged on its own, and the
//! JSON-lines summary a sweep writes (one line per run, then one for the whole sweep), so a
//! nightly job or a shard of one can be read back by a script. The CLI (`sim sweep`) only parses
//! arguments, draws the progress bar and prints; the pool, the run order and the records are here.
//!
//! Runs go in seed-major order (every scenario's first seed, then every second seed, ...), so a
//! sweep stopped early — by a time budget, or at each scenario's first failure — has run each
//! scenario over the same leading seeds. Nothing here reads a clock: the caller decides when to
//! stop through `keep_going`.

use crate::cluster;
use crate::scenario::Scenario;
use broker_core::broker::PlantedBug;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One run to make.
#[derive(Clone)]
pub struct Job {
    pub path: PathBuf,
    pub scenario: Scenario,
    pub seed: u64,
}

/// What one run found.
pub struct Outcome {
    pub path: PathBuf,
    pub name: String,
    pub seed: u64,
    pub passed: bool,
    /// Every checker that reported a violation, in the checkers' order, each once.
    pub checkers: Vec<&'static str>,
    /// The scenario expects an anomaly (`Scenario::expected_anomaly`); which of its checkers
    /// showed it in this run.
    pub expects_anomaly: bool,
    pub anomalies: Vec<&'static str>,
    /// A `--transaction-version` the sweep ran every scenario with.
    pub transaction_version: Option<i64>,
    /// The first violation, as `sim run` prints it.
    pub first: Option<String>,
    /// The trace of a failing run (a passing run's is dropped: a sweep of thousands of seeds
    /// must not hold every trace in memory).
    pub trace: Option<String>,
    pub simulated_ms: u64,
    /// Acknowledged, lost and duplicated writes (`worlds::counts`), for `sim compare`.
    pub counts: serde_json::Value,
}

impl Outcome {
    /// The summary line of this run.
    pub fn json(&self) -> serde_json::Value {
        let mut line = json!({"world": "sim", "scenario": self.name, "path": self.path.display().to_string(), "seed": self.seed, "passed": self.passed, "checkers": self.checkers, "first": self.first, "simulated_ms": self.simulated_ms});
        if let (Some(l), Some(c)) = (line.as_object_mut(), self.counts.as_object()) {
            l.extend(c.clone());
        }
        if self.expects_anomaly {
            line["anomalies"] = json!(self.anomalies);
        }
        line
    }

    /// The command that reproduces this run.
    pub fn reproduce(&self, bug: Option<PlantedBug>) -> String {
        let plant = bug.map(|b| format!(" --plant {b:?}")).unwrap_or_default();
        let tv = self.transaction_version.map(|v| format!(" --transaction-version {v}")).unwrap_or_default();
        format!("cargo sim run {} --seed {}{plant}{tv}", self.path.display(), self.seed)
    }

    /// Writes a failing run's trace as `<dir>/<scenario>-<seed>.jsonl` (what `sim replay`,
    /// `view` and `shrink` take) and returns the file.
    pub fn write_trace(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let file = dir.join(format!("{}-{}.jsonl", self.name, self.seed));
        std::fs::write(&file, self.trace.as_deref().unwrap_or_default()).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(file)
    }

    /// The lines a sweep prints for a failing run: every checker that fired, the first
    /// violation, the trace and the command that reproduces it.
    pub fn report(&self, trace: &Path, bug: Option<PlantedBug>) -> String {
        format!("FAIL {} seed {} [{}]: {}\n  trace: {}\n  reproduce: {}", self.name, self.seed, self.checkers.join(", "), self.first.as_deref().unwrap_or("?"), trace.display(), self.reproduce(bug))
    }
}

/// How a sweep runs.
pub struct Options<'a> {
    /// Parallel runs (at least one).
    pub jobs: usize,
    /// A planted bug in every run.
    pub bug: Option<PlantedBug>,
    /// Stop sweeping a scenario at its first failing seed.
    pub until_found: bool,
    /// Every scenario runs with this `broker.transaction_version` (`--transaction-version`).
    pub transaction_version: Option<i64>,
    /// Asked before each run: false ends the sweep (the runs under way finish).
    pub keep_going: &'a (dyn Fn() -> bool + Sync),
    /// Told of each run as it ends, or is skipped for `until_found` (None), for a progress bar.
    pub on_done: &'a (dyn Fn(Option<&Outcome>) + Sync),
}

/// Every run of `scenarios` (path and parsed scenario) over `seeds`, seed-major.
pub fn jobs(scenarios: &[(PathBuf, Scenario)], seeds: impl Iterator<Item = u64>) -> Vec<Job> {
    seeds.flat_map(|seed| scenarios.iter().map(move |(path, scenario)| Job { path: path.clone(), scenario: scenario.clone(), seed })).collect()
}

/// Runs `work` and returns the outcome of every run made, in `work`'s order (runs not made —
/// stopped by `keep_going`, or skipped by `until_found` — are absent).
pub fn sweep(work: Vec<Job>, opts: &Options) -> Vec<Outcome> {
    let queue = Mutex::new(work.into_iter().enumerate());
    let results = Mutex::new(Vec::new());
    // Scenarios with a failing seed, when `until_found` stops them there: their later seeds are
    // skipped, the earlier ones all run (the queue is in seed order).
    let found = Mutex::new(BTreeSet::new());
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| loop {
                if !(opts.keep_going)() {
                    break;
                }
                let next = queue.lock().expect("queue").next();
                let Some((i, job)) = next else { break };
                if opts.until_found && found.lock().expect("found").contains(&job.path) {
                    (opts.on_done)(None);
                    continue;
                }
                let outcome = run_one(&job, opts.bug, opts.transaction_version);
                if opts.until_found && !outcome.passed {
                    found.lock().expect("found").insert(job.path.clone());
                }
                (opts.on_done)(Some(&outcome));
                results.lock().expect("results").push((i, outcome));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}

/// The outcome of a run that panicked: failed, its message as the first violation, no trace.
fn panicked(job: &Job, scenario: &Scenario, transaction_version: Option<i64>, e: &(dyn std::any::Any + Send)) -> Outcome {
    let why = e.downcast_ref::<String>().map(String::as_str).or_else(|| e.downcast_ref::<&str>().copied()).unwrap_or("a panic without a message");
    Outcome {
        path: job.path.clone(),
        name: job.scenario.name.clone(),
        seed: job.seed,
        passed: false,
        checkers: vec!["panicked"],
        expects_anomaly: !scenario.expected_anomaly().is_empty(),
        anomalies: Vec::new(),
        transaction_version,
        first: Some(format!("the run panicked: {why}")),
        trace: Some(String::new()),
        simulated_ms: 0,
        counts: serde_json::json!({"acknowledged": 0, "lost": 0, "duplicated": 0}),
    }
}

/// What a sweep's runs add up to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Per scenario name: runs made, runs failed, the first failing seed.
    pub by_scenario: BTreeMap<String, (usize, usize, Option<u64>)>,
    pub failures: usize,
    /// Per scenario expecting an anomaly: the runs that showed it, and the first such seed.
    /// One that none showed fails the sweep: the testbed no longer finds what it is for.
    pub anomalies: BTreeMap<String, (usize, Option<u64>)>,
    /// Simulated time over all runs.
    pub simulated_ms: u64,
}

/// Adds up `results` (in sweep order, so a scenario's first failing seed is its lowest).
pub fn tally(results: &[Outcome]) -> Tally {
    let mut t = Tally::default();
    for o in results {
        t.simulated_ms += o.simulated_ms;
        if o.expects_anomaly {
            let a = t.anomalies.entry(o.name.clone()).or_default();
            if !o.anomalies.is_empty() {
                a.0 += 1;
                a.1 = a.1.or(Some(o.seed));
            }
        }
        let e = t.by_scenario.entry(o.name.clone()).or_default();
        e.0 += 1;
        if !o.passed {
            e.1 += 1;
            e.2 = e.2.or(Some(o.seed));
            t.failures += 1;
        }
    }
    t
}

/// The JSON-lines summary of a sweep: one line per run, then `end` (the whole sweep's line).
pub fn summary_lines(results: &[Outcome], end: serde_json::Value) -> String {
    results.iter().map(|o| o.json().to_string()).chain(std::iter::once(end.to_string())).map(|l| l + "\n").collect()
}

fn run_one(job: &Job, bug: Option<PlantedBug>, transaction_version: Option<i64>) -> Outcome {
    let mut scenario = job.scenario.clone();
    if transaction_version.is_some() {
        scenario.broker.transaction_version = transaction_version;
    }
    let run = || cluster::run(&scenario, &job.path.display().to_string(), job.seed, bug).expect("load validated the scenario");
    // A run that panics (the recorder's livelock guard, a harness bug) fails its seed alone.
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(e) => return panicked(job, &scenario, transaction_version, e.as_ref()),
    };
    let in_order = |v: &[crate::history::Violation]| {
        let fired: BTreeSet<&str> = v.iter().map(|v| v.checker).collect();
        crate::checkers::CHECKERS.iter().map(|(name, _)| *name).filter(|name| fired.contains(name)).collect::<Vec<_>>()
    };
    let checkers = in_order(&r.violations);
    let passed = r.passed();
    Outcome {
        path: job.path.clone(),
        name: job.scenario.name.clone(),
        seed: job.seed,
        passed,
        checkers,
        expects_anomaly: !scenario.expected_anomaly().is_empty(),
        anomalies: in_order(&r.anomalies),
        transaction_version,
        first: r.violations.first().map(|v| v.to_string()),
        trace: (!passed).then(|| r.trace.to_jsonl()),
        simulated_ms: r.simulated_ms,
        counts: crate::worlds::counts(&r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, seed: u64, passed: bool) -> Outcome {
        let checkers = if passed { vec![] } else { vec!["acknowledged_durable"] };
        Outcome { path: PathBuf::from(format!("{name}.toml")), name: name.into(), seed, passed, checkers, expects_anomaly: false, anomalies: vec![], transaction_version: None, first: None, trace: None, simulated_ms: 1000, counts: json!({"acknowledged": 5}) }
    }

    #[test]
    fn an_anomaly_scenario_counts_the_seeds_that_showed_it() {
        let shown = |seed, shown: bool| Outcome { expects_anomaly: true, anomalies: if shown { vec!["txn_torn"] } else { vec![] }, ..outcome("late", seed, true) };
        let t = tally(&[shown(3, false), shown(4, true), shown(5, true), outcome("plain", 3, true)]);
        assert_eq!(t.anomalies.get("late"), Some(&(2, Some(4))));
        assert_eq!(t.anomalies.get("plain"), None, "no anomaly expected there");
        assert_eq!(tally(&[shown(3, false)]).anomalies.get("late"), Some(&(0, None)), "none shown: the sweep must fail");
        assert_eq!(shown(4, true).json()["anomalies"], json!(["txn_torn"]));
        assert_eq!(Outcome { transaction_version: Some(2), ..outcome("late", 9, false) }.reproduce(None), "cargo sim run late.toml --seed 9 --transaction-version 2");
    }

    #[test]
    fn a_tally_counts_each_scenarios_runs_failures_and_first_failing_seed_and_the_summary_ends_with_the_sweeps_line() {
        let results = [outcome("a", 7, true), outcome("b", 7, false), outcome("a", 8, false), outcome("b", 8, false)];
        let t = tally(&results);
        assert_eq!(t.by_scenario["a"], (2, 1, Some(8)));
        assert_eq!(t.by_scenario["b"], (2, 2, Some(7)));
        assert_eq!((t.failures, t.simulated_ms), (3, 4000));
        let lines = summary_lines(&results, json!({"summary": {"runs": 4}}));
        let rows: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[1]["checkers"], json!(["acknowledged_durable"]));
        assert_eq!((rows[1]["world"].as_str(), rows[1]["acknowledged"].as_u64()), (Some("sim"), Some(5)), "a run's line carries its world and counts");
        assert_eq!(rows[4]["summary"]["runs"], 4);
        assert!(lines.ends_with('\n'));
    }
}
