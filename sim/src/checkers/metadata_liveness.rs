//! Metadata liveness: within half the healing phase after every fault was undone (the time
//! `write_liveness` also gives the cluster to recover), some voter is the active controller
//! (it reported itself active; the Raft task does so at every tick while it is). A history
//! with no quorum record at all (built by hand) is not judged.

use crate::history::{History, Violation};
use broker_core::metadata::metadata_topic;

/// An active controller within `heal_ms / 2` of healing.
pub fn controller_after_healing(h: &History, out: &mut Vec<Violation>) {
    if h.raft.elected.is_empty() && h.raft.active.is_empty() {
        return;
    }
    let until = h.healed_at_ms.saturating_add(h.heal_ms / 2);
    if h.raft.active.iter().any(|&(at, _, _)| at >= h.healed_at_ms && at <= until) {
        return;
    }
    let last = h.raft.active.iter().filter(|(at, _, _)| *at < h.healed_at_ms).last();
    out.push(Violation {
        checker: "metadata_liveness",
        topic: metadata_topic.to_string(),
        partition: 0,
        offsets: Vec::new(),
        at_ms: until,
        detail: format!(
            "no active controller between healing at {} ms and {until} ms (the last before healing: {})",
            h.healed_at_ms,
            last.map_or("none".to_string(), |(at, node, epoch)| format!("voter {node} in epoch {epoch} at {at} ms"))
        ),
        loss: false,
        acks: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_active_controller_in_time_after_healing_is_a_violation() {
        let mut h = History { healed_at_ms: 10_000, heal_ms: 8_000, ..History::default() };
        let mut out = Vec::new();
        controller_after_healing(&h, &mut out);
        assert!(out.is_empty(), "a hand-built history is not judged");
        h.raft.active = vec![(2_000, 0, 1), (15_000, 1, 2)];
        controller_after_healing(&h, &mut out);
        assert_eq!(out.len(), 1, "15 s is past 10 s + 4 s");
        assert!(out[0].detail.contains("voter 0 in epoch 1 at 2000 ms"), "{}", out[0].detail);
        h.raft.active.push((13_999, 1, 2));
        out.clear();
        controller_after_healing(&h, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
