//! Traces: JSON Lines — a header (scenario, seed, version, derived parameters), one event per
//! line in simulated-time order (`t` ms, `node`, `event`, fields), and a summary carrying the
//! digest of every line before it. No wall clock, no task ids, keys in sorted order: the same
//! scenario, seed and commit give a byte-identical file.

use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Default)]
pub struct Trace {
    lines: Vec<String>,
}

/// FNV-1a over bytes: small, stable across platforms and releases.
pub fn fnv64(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
}

pub const fnv_offset: u64 = 0xcbf2_9ce4_8422_2325;

impl Trace {
    pub fn header(scenario: &str, scenario_path: &str, seed: u64, derived: &Map<String, Value>) -> Trace {
        let line = json!({
            "type": "header",
            "scenario": scenario,
            "scenario_path": scenario_path,
            "seed": seed,
            "version": env!("CARGO_PKG_VERSION"),
            "derived": derived,
        });
        Trace { lines: vec![line.to_string()] }
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

    /// Digest of every line so far.
    pub fn digest(&self) -> u64 {
        self.lines.iter().fold(fnv_offset, |h, l| fnv64(fnv64(h, l.as_bytes()), b"\n"))
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

/// The scenario path and seed recorded in a trace's header.
pub fn read_header(text: &str) -> Result<(String, u64), String> {
    let first = text.lines().next().ok_or("empty trace")?;
    let v: Value = serde_json::from_str(first).map_err(|e| format!("trace header: {e}"))?;
    let path = v["scenario_path"].as_str().ok_or("trace header has no scenario_path")?.to_string();
    let seed = v["seed"].as_u64().ok_or("trace header has no seed")?;
    Ok((path, seed))
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
