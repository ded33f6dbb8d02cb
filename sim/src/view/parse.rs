//! A trace's text as the view reads it: the header, the events in simulated-time order, and
//! the summary's violations. Every malformed line is a [`ViewError::Line`] naming its number;
//! nothing here panics on input.

use super::ViewError;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct TraceEvent {
    /// 1-based line number in the file.
    pub line: usize,
    pub t: u64,
    pub node: String,
    pub event: String,
    /// The whole line as parsed (`t`, `node`, `event` and the event's fields).
    pub fields: Value,
    /// The line as written, shown when the event is clicked.
    pub raw: String,
}

/// One violation from the summary: structured in traces since the summary carried them so;
/// an older trace's string is kept as `detail`, its time read back from "at N ms" when there.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryViolation {
    pub checker: String,
    pub topic: String,
    pub partition: Option<i64>,
    pub offsets: Vec<i64>,
    /// 0 when the checker judged the final state rather than one moment.
    pub at_ms: Option<u64>,
    pub detail: String,
    pub loss: bool,
    /// A loss the scenario's `expect` allows: reported, not failed.
    pub allowed: bool,
}

#[derive(Debug, Clone)]
pub struct ParsedTrace {
    pub header: Value,
    pub events: Vec<TraceEvent>,
    pub summary: Option<Value>,
    /// The summary's 1-based line number (0 without one).
    pub summary_line: usize,
    pub violations: Vec<SummaryViolation>,
}

fn bad(line: usize, why: impl Into<String>) -> ViewError {
    ViewError::Line { line, why: why.into() }
}

pub fn parse(text: &str) -> Result<ParsedTrace, ViewError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let (n, first) = lines.next().ok_or(ViewError::Empty)?;
    let header: Value = serde_json::from_str(first).map_err(|e| bad(n, format!("not JSON: {e}")))?;
    if header.get("type").and_then(Value::as_str) != Some("header") {
        return Err(bad(n, "the first line must be the trace header (\"type\": \"header\")"));
    }
    let mut events: Vec<TraceEvent> = Vec::new();
    let mut summary = None;
    let mut summary_line = 0;
    for (n, raw) in lines {
        if summary.is_some() {
            return Err(bad(n, "a line after the summary"));
        }
        let v: Value = serde_json::from_str(raw).map_err(|e| bad(n, format!("not JSON: {e}")))?;
        if !v.is_object() {
            return Err(bad(n, "not a JSON object"));
        }
        match v.get("type").and_then(Value::as_str) {
            Some("summary") => (summary, summary_line) = (Some(v), n),
            Some(other) => return Err(bad(n, format!("unexpected line type `{other}`"))),
            None => events.push(event(n, raw, v, events.last().map(|e| e.t))?),
        }
    }
    let violations = match &summary {
        Some(s) => violations(s).map_err(|why| bad(summary_line, why))?,
        None => Vec::new(),
    };
    Ok(ParsedTrace { header, events, summary, summary_line, violations })
}

fn event(n: usize, raw: &str, v: Value, previous_t: Option<u64>) -> Result<TraceEvent, ViewError> {
    let t = v.get("t").and_then(Value::as_u64).ok_or_else(|| bad(n, "an event needs `t`, simulated milliseconds"))?;
    let node = v.get("node").and_then(Value::as_str).ok_or_else(|| bad(n, "an event needs a `node` string"))?.to_string();
    let event = v.get("event").and_then(Value::as_str).ok_or_else(|| bad(n, "an event needs an `event` string"))?.to_string();
    if previous_t.is_some_and(|p| t < p) {
        return Err(bad(n, format!("event at {t} ms after one at {} ms: a trace is in simulated-time order", previous_t.unwrap_or_default())));
    }
    Ok(TraceEvent { line: n, t, node, event, fields: v, raw: raw.to_string() })
}

/// The summary's `verdicts.violations` (failures) and `verdicts.allowed` (allowed losses).
fn violations(summary: &Value) -> Result<Vec<SummaryViolation>, String> {
    let verdicts = &summary["verdicts"];
    let mut out = Vec::new();
    for (key, allowed) in [("violations", false), ("allowed", true)] {
        let Some(list) = verdicts.get(key).and_then(Value::as_array) else { continue };
        for v in list {
            out.push(match v {
                Value::String(s) => from_text(s, allowed),
                Value::Object(_) => SummaryViolation {
                    checker: v["checker"].as_str().unwrap_or("?").to_string(),
                    topic: v["topic"].as_str().unwrap_or_default().to_string(),
                    partition: v["partition"].as_i64(),
                    offsets: v["offsets"].as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default(),
                    at_ms: v["at_ms"].as_u64(),
                    detail: v["detail"].as_str().unwrap_or_default().to_string(),
                    loss: v["loss"].as_bool().unwrap_or(false),
                    allowed,
                },
                _ => return Err(format!("summary: `verdicts.{key}` holds something that is neither a violation object nor a string")),
            });
        }
    }
    Ok(out)
}

/// A violation an older summary carried as its `Display` text:
/// `[checker] topic-p offsets [..] at N ms: detail`.
fn from_text(s: &str, allowed: bool) -> SummaryViolation {
    let checker = s.strip_prefix('[').and_then(|r| r.split_once(']')).map(|(c, _)| c.to_string()).unwrap_or_else(|| "?".into());
    let at_ms = s.split_once(" at ").and_then(|(_, r)| r.split_once(" ms")).and_then(|(n, _)| n.parse().ok());
    SummaryViolation { checker, topic: String::new(), partition: None, offsets: Vec::new(), at_ms, detail: s.to_string(), loss: false, allowed }
}
