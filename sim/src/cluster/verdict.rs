//! The verdict: every checker over the run's history, the violations the scenario's
//! expectations allow (reported, not failed: allowed losses, an expected anomaly), and the
//! trace's summary line with the digest.
//!
//! It judges the history as recorded and must never look at the cluster again, so a history
//! and a scenario always give the same verdict.

use crate::checkers;
use crate::history::{History, Outcome, Violation};
use crate::scenario::Scenario;
use crate::trace::Trace;
use serde_json::{json, Map, Value};

pub struct RunResult {
    pub trace: Trace,
    pub history: History,
    pub violations: Vec<Violation>,
    /// Violations that are allowed losses under the scenario's `expect.loss_allowed`.
    pub allowed: Vec<Violation>,
    /// Violations that are the scenario's expected anomaly (`Scenario::expected_anomaly`):
    /// found, not failed.
    pub anomalies: Vec<Violation>,
    pub derived: Map<String, Value>,
    pub digest: u64,
    /// Simulated milliseconds the run covered.
    pub simulated_ms: u64,
}

impl RunResult {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Runs the checkers, splits allowed losses from violations and closes the trace.
pub(crate) fn judge(scenario: &Scenario, mut trace: Trace, history: History, derived: Map<String, Value>, simulated_ms: u64) -> RunResult {
    let (anomalies, rest): (Vec<_>, Vec<_>) = checkers::check_all(&history).into_iter().partition(|v| scenario.expected_anomaly().iter().any(|c| c == v.checker));
    let (allowed, violations): (Vec<_>, Vec<_>) = rest.into_iter().partition(|v| allowed_loss(scenario, v));
    let mut summary = summary(&history, &violations, &allowed);
    if !anomalies.is_empty() {
        summary["anomalies"] = anomalies.iter().map(violation).collect();
    }
    let digest = trace.finish(summary);
    RunResult { trace, history, violations, allowed, anomalies, derived, digest, simulated_ms }
}

/// Whether the scenario's `expect` allows this violation: a loss, with loss allowed for every
/// write or for acks=1 writes.
fn allowed_loss(scenario: &Scenario, v: &Violation) -> bool {
    v.loss && (scenario.expect.loss_allowed || (scenario.expect.acks1_loss_allowed && v.acks == Some(1)))
}

/// The trace's summary: counts, every violation and every allowed loss, each structured (as
/// `sim view` places them in time). The digest covers the lines before it, so the summary's
/// shape never changes a digest.
fn summary(history: &History, violations: &[Violation], allowed: &[Violation]) -> Value {
    json!({
        "writes": history.writes.len(),
        // acks=0 writes are never acknowledged: `Ok(-1)` only says they were sent.
        "acknowledged": history.writes.iter().filter(|w| w.acknowledged().is_some()).count(),
        "sent_acks0": history.writes.iter().filter(|w| w.acks == 0 && matches!(w.outcome, Outcome::Ok(_))).count(),
        "reads": history.reads.len(),
        "violations": violations.iter().map(violation).collect::<Vec<_>>(),
        "allowed_losses": allowed.len(),
        "allowed": allowed.iter().map(violation).collect::<Vec<_>>(),
    })
}

/// One violation as the summary carries it: every field of [`Violation`].
fn violation(v: &Violation) -> Value {
    json!({"checker": v.checker, "topic": v.topic, "partition": v.partition, "offsets": v.offsets, "at_ms": v.at_ms, "detail": v.detail, "loss": v.loss, "acks": v.acks})
}
