//! Check-quorum for fencing: a controller fences a broker whose heartbeats stopped for a
//! session timeout, but only while it hears from a majority of the brokers. A controller that
//! hears from none may be the one cut off; fencing every broker then takes every partition
//! from leaders that can serve, and with a single metadata voter it elects itself for
//! everything, on a log that is missing what the others acknowledged meanwhile.
//!
//! Judged where the controller certainly heard from no broker: while it was cut off from
//! receiving (`isolate`, `isolate_in`). Sessions that had not expired when the cut began count
//! as heard, so a correct controller may still fence the brokers whose sessions expire first —
//! but each fence needs a majority still heard besides, so over one cut it fences fewer than
//! half the brokers. Fencing half or more is the rule broken. The voters report each
//! FenceBroker record with its metadata offset (`broker_core::simprobe::leadership`); the Raft
//! history says which controller wrote it.
//!
//! A cut that begins while the controller's process is paused is not judged: what reached it
//! before the cut (heartbeats sent before it) is read only once the pause ends, inside the cut,
//! and renews sessions there — even that of a broker it fenced a moment before, since a resumed
//! process's expired timers may run before its sockets are read. grow-shrink seed 71390:
//! broker-0, the one voter, paused from 2159 ms to 3440 ms and isolated from 2853 ms, fenced
//! broker-2 on waking, then read broker-2's queued heartbeat and, with brokers 1 and 2 heard,
//! fenced itself: two of three, by the rule, though heard from none after the cut.

use crate::history::{History, Violation};
use crate::scenario::FaultKind;
use std::collections::BTreeSet;

/// Half the brokers or more fenced, while cut off from receiving, by the controller cut off.
pub fn fence_quorum(h: &History, out: &mut Vec<Violation>) {
    if h.brokers < 3 {
        return;
    }
    let deaf = |k: FaultKind| matches!(k, FaultKind::Isolate | FaultKind::IsolateIn);
    let paused_at = |node: &str, at: u64| h.faults.iter().any(|p| p.kind == FaultKind::Pause && p.target == node && p.from_ms <= at && at < p.until_ms);
    for cut in h.faults.iter().filter(|s| deaf(s.kind) && !paused_at(&s.target, s.from_ms)) {
        let by_it: Vec<_> = h.fences.iter().filter(|f| f.at_ms >= cut.from_ms && f.at_ms <= cut.until_ms && h.writer_of(f.offset).is_some_and(|w| format!("broker-{}", w.node) == cut.target)).collect();
        let fenced: BTreeSet<i32> = by_it.iter().map(|f| f.broker).collect();
        if fenced.len() * 2 < h.brokers as usize {
            continue;
        }
        let last = by_it.last().expect("fenced is not empty");
        out.push(Violation {
            checker: "fence_quorum",
            topic: broker_core::metadata::metadata_topic.to_string(),
            partition: 0,
            offsets: by_it.iter().map(|f| f.offset).collect(),
            at_ms: last.at_ms,
            detail: format!(
                "the controller {} fenced brokers {fenced:?} of {} while it heard from none ({:?} from {} ms to {} ms): a controller fences only while a majority is heard",
                cut.target, h.brokers, cut.kind, cut.from_ms, cut.until_ms
            ),
            loss: false,
            acks: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::FaultSpan;
    use broker_core::simprobe::{Committed, Fence};

    fn history(fenced: &[i32]) -> History {
        let mut h = History { session_ms: 1_500, brokers: 4, ..History::default() };
        h.fences = fenced.iter().enumerate().map(|(i, &b)| Fence { at_ms: 4_000 + i as u64, offset: 42 + i as i64, broker: b }).collect();
        h.raft.committed = vec![Committed { node: 0, node_epoch: 1, leader: true, offset: 40, entry_epoch: 1, digest: 0 }];
        h.raft.active = vec![(100, 0, 1)];
        h.faults = vec![FaultSpan { kind: FaultKind::Isolate, target: "broker-0".into(), from_ms: 2_500, until_ms: 6_000 }];
        h
    }

    fn judged(h: &History) -> Vec<Violation> {
        super::super::judged(fence_quorum, h)
    }

    #[test]
    fn a_controller_cut_off_that_fences_half_the_brokers_is_a_violation() {
        let v = judged(&history(&[1, 2, 3]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("broker-0 fenced brokers {1, 2, 3} of 4"), "{}", v[0].detail);
        assert_eq!(judged(&history(&[1, 2])).len(), 1, "two of four is half");
        assert!(judged(&history(&[2])).is_empty(), "one of four: the first session to expire, a majority still heard");
        let mut h = history(&[1, 2, 3]);
        h.faults[0].target = "broker-1".into();
        assert!(judged(&h).is_empty(), "another broker cut off: the controller heard the rest");
        h.brokers = 2;
        assert!(judged(&h).is_empty(), "two brokers: not judged");
    }

    #[test]
    fn a_cut_that_begins_while_the_controller_is_paused_is_not_judged() {
        let mut h = history(&[1, 2, 3]);
        h.faults.push(FaultSpan { kind: FaultKind::Pause, target: "broker-0".into(), from_ms: 2_000, until_ms: 3_000 });
        assert!(judged(&h).is_empty(), "what reached it before the cut is read inside it");
        h.faults[1].until_ms = 2_500;
        assert_eq!(judged(&h).len(), 1, "a pause that ended as the cut began");
        h.faults[1].target = "broker-1".into();
        h.faults[1].until_ms = 3_000;
        assert_eq!(judged(&h).len(), 1, "another broker's pause");
    }
}
