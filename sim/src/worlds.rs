//! Runs of both worlds side by side: the figures each run's JSON line carries (simulated
//! sweeps' summaries and `sim chaos` alike: acknowledged, lost, duplicated) and the table that
//! puts the lines of any number of files together, per scenario and world (`sim compare`).
//! Pure: lines in, text out.

use crate::cluster::RunResult;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What a run adds to its JSON line: acknowledged writes, lost ones (acknowledged writes
/// missing from the final log and committed transactions' records missing under
/// read_committed, allowed or not: what `matrix::measured` counts, but the acks=0 writes) and
/// duplicated ones (allowed or not).
pub fn counts(r: &RunResult) -> Value {
    let acknowledged = r.history.writes.iter().filter(|w| w.acknowledged().is_some()).count();
    let of = |checkers: &[&str]| r.violations.iter().chain(&r.allowed).filter(|v| checkers.contains(&v.checker)).count();
    let lost = of(&["acknowledged_durable", "txn_lost_write"]);
    let duplicated = of(&["duplicate"]);
    json!({"acknowledged": acknowledged, "lost": lost, "duplicated": duplicated})
}

/// One run's line: its world, scenario, seed, verdict and [`counts`].
pub fn line(world: &str, scenario: &str, seed: u64, r: &RunResult) -> Value {
    let mut l = json!({"world": world, "scenario": scenario, "seed": seed, "passed": r.passed()});
    if let (Some(l), Value::Object(c)) = (l.as_object_mut(), counts(r)) {
        l.extend(c);
    }
    l
}

/// Totals of one scenario in one world.
#[derive(Default)]
struct Tally {
    runs: u64,
    failed: u64,
    acknowledged: u64,
    lost: u64,
    runs_with_loss: u64,
    duplicated: u64,
}

/// The table of every run line in `lines` (other lines, such as a sweep's closing summary,
/// are skipped), a row per scenario and world; a line without `world` is a simulated one.
pub fn compare(lines: &[Value]) -> String {
    let mut rows: BTreeMap<(String, String), Tally> = BTreeMap::new();
    for l in lines {
        let (Some(scenario), Some(_)) = (l["scenario"].as_str(), l["seed"].as_u64()) else { continue };
        let world = l["world"].as_str().unwrap_or("sim").to_string();
        let t = rows.entry((scenario.to_string(), world)).or_default();
        let n = |k: &str| l[k].as_u64().unwrap_or(0);
        t.runs += 1;
        t.failed += u64::from(l["passed"] == json!(false));
        t.acknowledged += n("acknowledged");
        t.lost += n("lost");
        t.runs_with_loss += u64::from(n("lost") > 0);
        t.duplicated += n("duplicated");
    }
    let mut out = format!("{:<28} {:<5} {:>5} {:>7} {:>13} {:>9} {:>15} {:>10}\n", "scenario", "world", "runs", "failed", "acknowledged", "lost", "runs with loss", "duplicated");
    for ((scenario, world), t) in &rows {
        out += &format!("{scenario:<28} {world:<5} {:>5} {:>7} {:>13} {:>9} {:>15} {:>10}\n", t.runs, t.failed, t.acknowledged, t.lost, t.runs_with_loss, t.duplicated);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scenario_and_world_is_one_row_and_other_lines_are_skipped() {
        let lines = vec![
            json!({"scenario": "a", "seed": 1, "passed": true, "acknowledged": 10, "lost": 2, "duplicated": 0}),
            json!({"world": "real", "scenario": "a", "seed": 1, "passed": true, "acknowledged": 12, "lost": 0, "duplicated": 0}),
            json!({"world": "real", "scenario": "a", "seed": 2, "passed": false, "acknowledged": 8, "lost": 3, "duplicated": 1}),
            json!({"summary": {"runs": 1}}),
        ];
        let table = compare(&lines);
        let rows: Vec<Vec<&str>> = table.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows, vec![vec!["a", "real", "2", "1", "20", "3", "1", "1"], vec!["a", "sim", "1", "0", "10", "2", "1", "0"]], "{table}");
    }
}
