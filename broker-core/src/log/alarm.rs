//! The failure alarm: how the owner of many logs learns that one of them went offline without
//! asking each of them. A log given an alarm rings it when it takes itself offline (a failed
//! sync, a failed undo, a cleaning swap that failed halfway); the owner takes the ring and only
//! then looks for the failed logs. The broker's 100 ms upkeep used to ask every partition's log
//! at every tick (4,000 questions a tick at 4,000 partitions, docs/journal/benchmarks.md).
//!
//! It holds one flag, set and taken inside the owner's own calls (the logs are the owner's, and
//! rung only during its calls into them), so it is as deterministic as the rest of the core.
//! It never says which log failed: the owner looks, and a ring it takes finds at least one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Shared by an owner and its logs (clones ring the same flag).
#[derive(Debug, Clone, Default)]
pub struct FailureAlarm(Arc<AtomicBool>);

impl FailureAlarm {
    /// A log went offline.
    pub fn ring(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a log went offline since the last take; silences the alarm.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_is_taken_once_by_any_clone() {
        let owner = FailureAlarm::default();
        let log = owner.clone();
        assert!(!owner.take());
        log.ring();
        log.ring();
        assert!(owner.take());
        assert!(!owner.take(), "taken: silent until the next ring");
    }
}
