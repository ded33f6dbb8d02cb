//! `sim shrink`: a failing scenario and seed in, the smallest scenario found that still fails
//! the same checker out, as TOML whose header says what was removed and how to reproduce it.
//!
//! The seed's drawn faults are first written out as fixed faults, with the seed's disk seed
//! pinned (`edits::explicit`): under the same seed that run is the original run, and each fault
//! can now go on its own. Then, round after round until a round changes nothing: delta
//! debugging over the faults, shorter faults, a shorter safety phase, lower producer rates,
//! fewer clients and brokers. Every candidate is one whole simulated run under the same seed
//! and planted bug; it is kept if the target checker still reports a violation.
//!
//! The search is pure: runs come from the `run` closure the caller passes (`runner` under
//! madsim), so it is deterministic — same input, same runs, same output — and testable
//! without a simulator. Its cost is bounded by a number of runs, and the output says when that
//! bound stopped it. The written text is parsed and run once more before it is returned: it
//! must fail exactly as the search's last kept run did.

mod edits;
mod reduce;

use crate::scenario::{FaultSpec, Scenario};
use broker_core::broker::PlantedBug;
use std::collections::BTreeMap;

/// Most simulated runs one shrink spends searching (the first run and the final check come on
/// top). A fast scenario's run takes 0.03–0.5 s of wall time, so this bounds a shrink to a few
/// minutes; the planted-bug shrinks measured in docs/journal/scenarios.md (up to 8 faults drawn) took
/// 16–92 runs in all.
pub const shrink_runs_max: usize = 400;

/// What one run failed: checker name → number of violations (checkers with none left out).
pub type Failing = BTreeMap<String, usize>;

/// The violations of one run, counted per checker.
pub fn failing(violations: &[crate::history::Violation]) -> Failing {
    let mut out = Failing::new();
    for v in violations {
        *out.entry(v.checker.to_string()).or_default() += 1;
    }
    out
}

/// What to shrink.
#[derive(Debug, Clone)]
pub struct Request {
    pub scenario: Scenario,
    /// Where the scenario came from, for the output's header.
    pub scenario_path: String,
    pub seed: u64,
    pub bug: Option<PlantedBug>,
    /// The checker that must keep failing; by default the first failing one in
    /// `checkers::CHECKERS` order.
    pub checker: Option<String>,
    /// Bound on search runs (see [`shrink_runs_max`]).
    pub runs_max: usize,
    /// Where the output will be written, for its reproduce line.
    pub out_path: String,
}

/// One simulated run of the search, for progress lines.
#[derive(Debug)]
pub struct Step<'a> {
    /// Runs so far, this one included.
    pub run: usize,
    pub runs_max: usize,
    /// The pass: `first`, `explicit`, `faults`, `fault time`, `duration`, `rates`, `nodes`,
    /// `check`.
    pub pass: &'static str,
    /// The candidate, in words.
    pub what: &'a str,
    /// Faults in the candidate.
    pub faults: usize,
    /// Whether the target checker failed (for `first`: whether anything failed).
    pub fails: bool,
}

/// The result of a shrink.
#[derive(Debug, Clone)]
pub struct Shrunk {
    pub scenario: Scenario,
    /// The scenario as TOML, with the header comment: what to write to the output file.
    pub text: String,
    pub checker: String,
    /// Simulated runs in all, the first run and the final check included.
    pub runs: usize,
    /// Whether the run bound stopped the search before a round changed nothing.
    pub limited: bool,
    /// Faults the seed's schedule had (drawn and fixed).
    pub faults_before: usize,
    /// What the original run failed, and what the shrunk one fails.
    pub before: Failing,
    pub after: Failing,
}

/// Shrinks `req`'s failing run. `run` runs one scenario under the request's seed and planted
/// bug and says what it failed; `progress` hears of every run. Errors: the run does not fail
/// (or not the checker asked for), or the written-out schedule or the output does not fail as
/// the run it came from did (a harness bug: the run is not reproducible).
pub fn shrink(req: &Request, run: &mut dyn FnMut(&Scenario) -> Failing, progress: &mut dyn FnMut(&Step)) -> Result<Shrunk, String> {
    if req.runs_max == 0 {
        return Err("the run bound must allow at least one search run (--max-runs 1 or more)".into());
    }
    let mut o = Oracle { run, progress, checker: String::new(), runs: 0, searched: 0, runs_max: req.runs_max, limited: false, tried: BTreeMap::new() };
    let (schedule, disk_seed) = crate::cluster::schedule(&req.scenario, req.seed);
    let faults_before = schedule.len();
    let before = o.run(&req.scenario, "first", &format!("the scenario as given ({faults_before} faults drawn and fixed)"), None);
    let checker = target(req.checker.as_deref(), &before)?;
    o.checker = checker.clone();
    let mut s = edits::explicit(&req.scenario, schedule.clone(), disk_seed);
    if !o.fails(&s, "explicit", "the seed's faults written out as fixed faults") {
        return Err(format!("the seed's {faults_before} faults written out as fixed faults (disk seed {disk_seed}) no longer fail {checker}: the run does not follow from its schedule"));
    }
    loop {
        let was = s.clone();
        s = o.fewer_faults(s);
        s = o.shorter_faults(s);
        s = o.shorter_duration(s);
        s = o.lower_rates(s);
        s = o.fewer_nodes(s);
        if s == was || o.limited {
            break;
        }
    }
    let after = o.tried.get(&key(&s)).cloned().unwrap_or_default();
    let text = render(req, &checker, &schedule, &before, &s, &after, o.runs, o.limited)?;
    let again = Scenario::parse(&text).map_err(|e| format!("the shrunk scenario does not parse: {e}"))?;
    let checked = o.run(&again, "check", "the written scenario", Some(&checker));
    if checked != after {
        return Err(format!("the written scenario fails {checked:?}, its last search run failed {after:?}: the run is not reproducible"));
    }
    Ok(Shrunk { scenario: again, text, checker, runs: o.runs, limited: o.limited, faults_before, before, after })
}

/// The checker to keep failing: the one asked for, or the first failing one in table order.
fn target(asked: Option<&str>, before: &Failing) -> Result<String, String> {
    let known: Vec<&str> = crate::checkers::CHECKERS.iter().map(|(name, _)| *name).collect();
    match asked {
        Some(name) if !known.contains(&name) => Err(format!("--checker {name}: no such checker; one of {known:?}")),
        Some(name) if before.contains_key(name) => Ok(name.to_string()),
        Some(name) => Err(format!("the run does not fail {name}; it fails {:?}", before.keys().collect::<Vec<_>>())),
        None => known.into_iter().find(|name| before.contains_key(*name)).map(str::to_string).ok_or_else(|| "the run passes every checker: nothing to shrink".to_string()),
    }
}

/// A candidate's identity: its canonical TOML (a scenario TOML cannot hold falls back to Debug).
fn key(s: &Scenario) -> String {
    toml::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// The runs of one shrink: counted, bounded, remembered (ddmin asks some candidates twice).
struct Oracle<'r> {
    run: &'r mut dyn FnMut(&Scenario) -> Failing,
    progress: &'r mut dyn FnMut(&Step),
    checker: String,
    runs: usize,
    /// Runs of the search alone, which `runs_max` bounds.
    searched: usize,
    runs_max: usize,
    limited: bool,
    tried: BTreeMap<String, Failing>,
}

impl Oracle<'_> {
    /// One run, outside the bound (the first run and the final check).
    fn run(&mut self, s: &Scenario, pass: &'static str, what: &str, checker: Option<&str>) -> Failing {
        let failing = (self.run)(s);
        self.runs += 1;
        let fails = checker.map_or(!failing.is_empty(), |c| failing.contains_key(c));
        (self.progress)(&Step { run: self.runs, runs_max: self.runs_max, pass, what, faults: s.faults.len(), fails });
        failing
    }

    /// Whether `s` still fails the target checker. A candidate that does not validate, or one
    /// past the run bound, counts as not failing (so it is not kept).
    fn fails(&mut self, s: &Scenario, pass: &'static str, what: &str) -> bool {
        if s.validate().is_err() {
            return false;
        }
        let key = key(s);
        if let Some(failing) = self.tried.get(&key) {
            return failing.contains_key(&self.checker);
        }
        if self.searched >= self.runs_max {
            self.limited = true;
            return false;
        }
        self.searched += 1;
        let checker = self.checker.clone();
        let failing = self.run(s, pass, what, Some(&checker));
        let fails = failing.contains_key(&checker);
        self.tried.insert(key, failing);
        fails
    }

    /// Delta debugging over the fixed faults.
    fn fewer_faults(&mut self, s: Scenario) -> Scenario {
        let total = s.faults.len();
        let faults = reduce::ddmin(&s.faults, &mut |subset| self.fails(&Scenario { faults: subset.to_vec(), ..s.clone() }, "faults", &format!("{} of {total} faults", subset.len())));
        Scenario { faults, ..s }
    }

    /// Each fault as short as still fails, down to 0 ms (applied and at once undone).
    fn shorter_faults(&mut self, mut s: Scenario) -> Scenario {
        for i in 0..s.faults.len() {
            let f = s.faults[i].clone();
            let what = |ms| format!("{} {} at {} for {ms} ms (was {})", f.kind.name(), f.target, f.at, f.for_ms);
            s.faults[i].for_ms = reduce::smallest_failing(0, f.for_ms, &mut |ms| {
                let mut c = s.clone();
                c.faults[i].for_ms = ms;
                self.fails(&c, "fault time", &what(ms))
            });
        }
        s
    }

    /// The safety phase as short as still fails, every fault still starting inside it.
    fn shorter_duration(&mut self, s: Scenario) -> Scenario {
        let lo = s.faults.iter().map(|f| f.at + 1).max().unwrap_or(1);
        let duration_ms = reduce::smallest_failing(lo, s.duration_ms, &mut |ms| self.fails(&Scenario { duration_ms: ms, ..s.clone() }, "duration", &format!("duration_ms {ms}")));
        Scenario { duration_ms, ..s }
    }

    /// Each producer as slow as still fails: fewer records to read in the trace.
    fn lower_rates(&mut self, mut s: Scenario) -> Scenario {
        for k in 0..s.producers.len() {
            let was = s.producers[k].rate;
            let rate = reduce::smallest_failing(1, was as u64, &mut |rate| {
                let mut c = s.clone();
                c.producers[k].rate = rate as u32;
                self.fails(&c, "rates", &format!("producer spec {k} at {rate}/s (was {was})"))
            });
            s.producers[k].rate = rate as u32;
        }
        s
    }

    /// Clients and brokers removed one at a time while the run still fails.
    fn fewer_nodes(&mut self, mut s: Scenario) -> Scenario {
        while let Some((_, smaller)) = edits::removals(&s).into_iter().find(|(what, c)| self.fails(c, "nodes", &format!("without {what}"))) {
            s = smaller;
        }
        s
    }
}

/// The output: a header comment (where it came from, what fails, what was removed, how to
/// reproduce) over the scenario's TOML. Everything in it follows from the runs: no wall time.
#[allow(clippy::too_many_arguments)]
fn render(req: &Request, checker: &str, schedule: &[FaultSpec], before: &Failing, s: &Scenario, after: &Failing, runs: usize, limited: bool) -> Result<String, String> {
    let plant = req.bug.map(|b| format!(" --plant {b:?}")).unwrap_or_default();
    let list = |f: &Failing| f.iter().map(|(c, n)| format!("{c} ({n})")).collect::<Vec<_>>().join(", ");
    let others: Failing = after.iter().filter(|(c, _)| *c != checker).map(|(c, n)| (c.clone(), *n)).collect();
    let mut h = vec![
        format!("Shrunk by `cargo sim shrink` from {} --seed {}{plant}, which failed: {}.", req.scenario_path, req.seed, list(before)),
        format!("Still fails `{checker}` ({} violations){}.", after.get(checker).copied().unwrap_or(0), if others.is_empty() { String::new() } else { format!("; also {}", list(&others)) }),
        "Removed:".to_string(),
    ];
    h.extend(changes(&req.scenario, schedule, s).into_iter().map(|c| format!("  - {c}")));
    h.push(format!("The faults are the seed's schedule (drawn and fixed) written out; disk_seed is what seed {} drew, so the same seed runs the same disks.", req.seed));
    h.push(match limited {
        true => format!("{runs} runs (and one more to check this file); STOPPED by the run limit ({}) before a round changed nothing: --max-runs may shrink it further.", req.runs_max),
        false => format!("{runs} runs (and one more to check this file); a further round changed nothing."),
    });
    h.push(format!("Reproduce: cargo sim run {} --seed {}{plant} --trace T.jsonl   (then: cargo sim view T.jsonl)", req.out_path, req.seed));
    let toml = toml::to_string(s).map_err(|e| format!("the shrunk scenario cannot be written as TOML: {e}"))?;
    let mut text: String = h.iter().map(|l| format!("# {l}\n")).collect();
    text.push_str(&toml);
    Ok(text)
}

/// What shrinking changed, one item per kind of change.
fn changes(original: &Scenario, schedule: &[FaultSpec], s: &Scenario) -> Vec<String> {
    let drawn = schedule.len() - original.faults.len().min(schedule.len());
    let mut out = vec![format!("faults {} ({drawn} drawn from the seed) → {}", schedule.len(), s.faults.len())];
    let fault_ms = |faults: &[FaultSpec]| faults.iter().map(|f| f.for_ms).sum::<u64>();
    let mut changed = |what: &str, was: u64, now: u64| {
        if was != now {
            out.push(format!("{what} {was} → {now}"));
        }
    };
    changed("fault time in all, ms", fault_ms(schedule), fault_ms(&s.faults));
    changed("duration_ms", original.duration_ms, s.duration_ms);
    let records = |x: &Scenario| x.producers.iter().map(|p| p.rate as u64 * p.count as u64).sum::<u64>();
    let producers = |x: &Scenario| x.producers.iter().map(|p| p.count as u64).sum::<u64>();
    changed("producers", producers(original), producers(s));
    changed("records/s produced", records(original), records(s));
    changed("consumers", original.consumers.len() as u64, s.consumers.len() as u64);
    let members = |x: &Scenario| x.groups.iter().map(|g| g.members as u64).sum::<u64>();
    changed("group members", members(original), members(s));
    changed("brokers", original.brokers as u64, s.brokers as u64);
    out
}

/// The run closure `shrink` wants, under madsim: `cluster::run` under `seed` with `bug`. A
/// candidate the harness refuses to run fails nothing, so it is never kept.
#[cfg(madsim)]
pub fn runner(seed: u64, bug: Option<PlantedBug>) -> impl FnMut(&Scenario) -> Failing {
    move |s| crate::cluster::run(s, "<shrink candidate>", seed, bug).map(|r| failing(&r.violations)).unwrap_or_default()
}

#[cfg(test)]
mod tests;
