//! The ISR's promise: every replica the controller committed into a partition's ISR holds
//! every record below the highest high watermark a leader reached with at least
//! `min.insync.replicas` in its ISR (Kafka's definition of the ISR; what makes electing any
//! ISR member safe). The brokers and the active controller report while the run goes
//! (`broker_core::simprobe::isr` says what each report is and why a crashed broker is never
//! blamed for what its power loss forgot); this turns each breach into a violation. A breach
//! is a loss waiting to happen (the member may be elected), so it counts as one: scenarios
//! that allow loss (unclean elections, every replica losing power) allow it too.

use crate::history::{History, Violation};

/// Each reported breach is a violation.
pub fn isr_complete(h: &History, out: &mut Vec<Violation>) {
    for b in &h.isr_breaches {
        out.push(Violation { checker: "isr_complete", topic: b.topic.clone(), partition: b.partition, offsets: Vec::new(), at_ms: b.at_ms, detail: b.detail.clone(), loss: true, acks: None });
    }
}
