//! Traces: JSON Lines — a header (scenario, seed, version, derived parameters), one event per
//! line in simulated-time order (`t` ms, `node`, `event`, fields), and a summary carrying the
//! digest of every line before it. No wall clock, no task ids, keys in sorted order: the same
//! scenario, seed and commit give a byte-identical file.
//!
//! The digest names the run, not where its file was found: it is taken with the header's
//! `scenario_path` left out (so `./scenarios/x.toml` and `scenarios/x.toml` agree), and the
//! header's `scenario_digest` (of the scenario's contents) makes an edited scenario differ.

use broker_core::hash::{fnv1a, fnv_offset};
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Default)]
pub struct Trace {
    lines: Vec<String>,
    /// The header line as the digest sees it: without `scenario_path`.
    digest_header: String,
}

/// FNV-1a over bytes (`broker_core::hash`): small, stable across platforms and releases.
fn fnv64(h: u64, bytes: &[u8]) -> u64 {
    fnv1a(h, bytes.iter().copied())
}

impl Trace {
    /// `scenario_digest` fingerprints the scenario's contents (see [`scenario_digest`]);
    /// `scenario_path` is only where replay finds the file again.
    pub fn header(scenario: &str, scenario_path: &str, scenario_digest: u64, seed: u64, derived: &Map<String, Value>) -> Trace {
        let mut line = json!({
            "type": "header",
            "scenario": scenario,
            "scenario_digest": format!("{scenario_digest:016x}"),
            "seed": seed,
            "version": env!("CARGO_PKG_VERSION"),
            "derived": derived,
        });
        let digest_header = line.to_string();
        line["scenario_path"] = json!(scenario_path);
        Trace { lines: vec![line.to_string()], digest_header }
    }

    /// Appends an event; `fields` must be a JSON object (its keys are merged in).
    pub fn event(&mut self, t_ms: u64, node: &str, event: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("t".into(), json!(t_ms));
        m.insert("node".into(), json!(node));
        m.insert("event".into(), json!(event));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        self.lines.push(Value::Object(m).to_string());
    }

    /// Digest of every line so far, the header without its `scenario_path`.
    pub fn digest(&self) -> u64 {
        let lines = std::iter::once(&self.digest_header).chain(self.lines.iter().skip(1));
        lines.fold(fnv_offset, |h, l| fnv64(fnv64(h, l.as_bytes()), b"\n"))
    }

    /// Closes the trace with its summary line; returns the digest.
    pub fn finish(&mut self, verdicts: Value) -> u64 {
        let digest = self.digest();
        let line = json!({"type": "summary", "events": self.lines.len() - 1, "verdicts": verdicts, "digest": format!("{digest:016x}")});
        self.lines.push(line.to_string());
        digest
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn to_jsonl(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }
}

/// FNV-1a 64 of a scenario's contents, taken over its canonical TOML (the parsed scenario
/// serialized again), so comments and layout do not count but every setting does.
pub fn scenario_digest(s: &crate::scenario::Scenario) -> u64 {
    // Serializing fails only for values TOML cannot hold (u64 above i64::MAX), which
    // validation already refuses; Debug output is just as deterministic for those.
    let text = toml::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    fnv64(fnv_offset, text.as_bytes())
}

/// The scenario path and seed recorded in a trace's header.
pub fn read_header(text: &str) -> Result<(String, u64), String> {
    let v = header_value(text)?;
    let path = v["scenario_path"].as_str().ok_or("trace header has no scenario_path")?.to_string();
    let seed = v["seed"].as_u64().ok_or("trace header has no seed")?;
    Ok((path, seed))
}

/// The transaction version a trace's run had (`derived.transaction_version`), if its scenario
/// or a `--transaction-version` override set one.
pub fn read_transaction_version(text: &str) -> Result<Option<i64>, String> {
    Ok(header_value(text)?["derived"]["transaction_version"].as_i64())
}

/// The planted bug a trace's run had (`derived.planted_bug`), if any.
pub fn read_planted_bug(text: &str) -> Result<Option<String>, String> {
    Ok(header_value(text)?["derived"]["planted_bug"].as_str().map(str::to_string))
}

fn header_value(text: &str) -> Result<Value, String> {
    let first = text.lines().next().ok_or("empty trace")?;
    serde_json::from_str(first).map_err(|e| format!("trace header: {e}"))
}

/// The first line where two traces differ (1-based), with both lines; `None` if identical.
pub fn first_divergence(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => return Some((n, x.unwrap_or("<end>").to_string(), y.unwrap_or("<end>").to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(path: &str, scenario_digest: u64) -> Trace {
        let mut derived = Map::new();
        derived.insert("disk_seed".into(), json!(7));
        let mut t = Trace::header("smoke", path, scenario_digest, 1, &derived);
        t.event(3, "producer-0", "produce", json!({"ok": 0}));
        t
    }

    #[test]
    fn the_digest_does_not_depend_on_how_the_scenario_path_is_spelled() {
        let (mut a, mut b) = (trace("scenarios/fast/smoke.toml", 1), trace("./scenarios/fast/smoke.toml", 1));
        assert_ne!(a.lines()[0], b.lines()[0], "the header keeps the path as given, for replay");
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.finish(json!({})), b.finish(json!({})));
        assert_ne!(trace("scenarios/fast/smoke.toml", 2).digest(), trace("scenarios/fast/smoke.toml", 1).digest(), "another scenario, another digest");
        assert_eq!(read_header(&a.to_jsonl()).unwrap(), ("scenarios/fast/smoke.toml".to_string(), 1));
    }

    #[test]
    fn the_scenario_digest_follows_settings_not_layout() {
        let text = "name = \"s\"\nduration_ms = 1000\ntopics = [{ name = \"t\" }]\n";
        let s = crate::scenario::Scenario::parse(text).unwrap();
        let commented = crate::scenario::Scenario::parse(&format!("# a comment\n{}", text.replace(" = ", "="))).unwrap();
        assert_eq!(scenario_digest(&s), scenario_digest(&commented));
        let longer = crate::scenario::Scenario::parse(&text.replace("1000", "2000")).unwrap();
        assert_ne!(scenario_digest(&s), scenario_digest(&longer));
    }

    #[test]
    fn every_fast_scenario_serializes_to_toml_and_round_trips() {
        // Otherwise scenario_digest falls back to Debug output, still deterministic but not
        // the canonical form it documents.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast");
        for e in std::fs::read_dir(&dir).unwrap() {
            let s = crate::scenario::Scenario::parse(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap();
            let text = toml::to_string(&s).unwrap_or_else(|err| panic!("{}: {err}", s.name));
            assert_eq!(crate::scenario::Scenario::parse(&text).unwrap(), s);
        }
        for row in crate::matrix::rows() {
            let text = toml::to_string(&row.scenario).unwrap();
            assert_eq!(crate::scenario::Scenario::parse(&text).unwrap(), row.scenario);
        }
    }
}
