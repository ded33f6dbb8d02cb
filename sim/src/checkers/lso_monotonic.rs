//! The last stable offset never goes back while one leader leads in one leader epoch: a
//! read_committed consumer is told that everything below it has its outcome, and a leader
//! that later reports a lower one has let it read an open transaction. The brokers report it
//! while the run goes (`broker_core::simprobe::stable` says what is compared, and why a
//! restart or a new epoch starts over); this turns each regression into a violation. Not a
//! loss: nothing acknowledged is gone.

use crate::history::{History, Violation};

/// Each reported regression is a violation.
pub fn lso_monotonic(h: &History, out: &mut Vec<Violation>) {
    for g in &h.lso_regressions {
        let detail = format!("broker-{} as leader in epoch {} moved the last stable offset back from {} to {}", g.node, g.leader_epoch, g.from, g.to);
        out.push(Violation { checker: "lso_monotonic", topic: g.topic.clone(), partition: g.partition, offsets: vec![g.to, g.from], at_ms: g.at_ms, detail, loss: false, acks: None });
    }
}
