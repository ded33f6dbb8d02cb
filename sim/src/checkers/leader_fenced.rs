//! The controller elects only brokers it has heard from: Kafka's controller makes a broker
//! eligible to lead only while it is unfenced, and fences one whose heartbeats stopped for a
//! session timeout; a controller that takes over has heard from nobody yet, and waits for a
//! broker's heartbeat before it lets it lead (one that went down before may have restarted and
//! lost its log while no controller watched). A leader elected against either rule cannot
//! serve: the partition waits until the broker is back and the controller sees its
//! registration. Two ways to catch it, both sound against a correct controller:
//! - the new leader had been down (crashed, paused, cut off) since before the controller that
//!   wrote the record became active (less a slack for a heartbeat in flight): that
//!   controller never heard from it;
//! - it had been down for over a session timeout (plus the slack), while faults touched fewer
//!   than half the brokers: the controller should have fenced it (with no majority heard it
//!   rightly holds fencing back — check-quorum: the fault may be its own) — unless the
//!   controller's own process was stopped (paused) in that window: heartbeats a broker sent
//!   before it went down wait in the stopped controller's socket and count when they are read
//!   (Kafka's BrokerHeartbeatManager, too, stamps a heartbeat when it handles it), so the
//!   session it should have fenced by may have begun only when the controller resumed.
//!
//! The voters report each change of committed leader with its metadata offset
//! (`broker_core::simprobe::leadership`); the Raft history says which epoch wrote that entry
//! and when its controller first reported itself active.

use crate::history::{FaultSpan, History, Violation};
use crate::scenario::FaultKind;

/// Slack for a heartbeat sent just before the broker went down (slow links delay messages by
/// up to 300 ms), the controller's tick, and the active controller's report (once a tick).
const heartbeat_slack_ms: u64 = 500;

/// A broker committed as leader while down since before its controller took over, or since
/// over a session timeout while a majority of brokers could be heard.
pub fn leader_fenced(h: &History, out: &mut Vec<Violation>) {
    if h.session_ms == 0 || h.brokers == 0 {
        return;
    }
    for e in h.elections.iter().filter(|e| e.leader >= 0) {
        let broker = format!("broker-{}", e.leader);
        let down_since = |from: u64| h.faults.iter().find(|s| silences(s.kind) && s.target == broker && s.from_ms <= from && s.until_ms > e.at_ms);
        // Rule 1: down since before its controller took over; rule 2: down for a session.
        let unheard = h.writer_of(e.offset).filter(|w| w.active_from_ms >= heartbeat_slack_ms).and_then(|w| {
            let down = down_since(w.active_from_ms - heartbeat_slack_ms)?;
            Some((down, format!("since before the controller of epoch {} became active at {} ms: it never heard from it", w.epoch, w.active_from_ms)))
        });
        let unfenced = || {
            let from = e.at_ms.checked_sub(h.session_ms + heartbeat_slack_ms)?;
            let stopped = h.writer_of(e.offset).is_some_and(|w| {
                let controller = format!("broker-{}", w.node);
                h.faults.iter().any(|s| s.kind == FaultKind::Pause && s.target == controller && s.from_ms < e.at_ms && s.until_ms > from)
            });
            let down = down_since(from).filter(|_| majority_heard(h, from, e.at_ms) && !stopped)?;
            Some((down, format!("for over a session timeout ({} ms) plus {heartbeat_slack_ms} ms: it should have been fenced", h.session_ms)))
        };
        let Some((down, why)) = unheard.or_else(unfenced) else { continue };
        out.push(Violation {
            checker: "leader_fenced",
            topic: e.topic.clone(),
            partition: e.partition,
            offsets: Vec::new(),
            at_ms: e.at_ms,
            detail: format!("the controller committed {broker} as leader at {} ms (metadata offset {}), but it had been down ({:?} from {} ms to {} ms) {why}", e.at_ms, e.offset, down.kind, down.from_ms, down.until_ms),
            loss: false,
            acks: None,
        });
    }
}

/// Whether faults touched fewer than half the brokers over `from..until`.
fn majority_heard(h: &History, from: u64, until: u64) -> bool {
    let touched = (0..h.brokers).filter(|b| h.faults.iter().any(|s| touches(s, &format!("broker-{b}")) && s.from_ms < until && s.until_ms > from)).count();
    (touched as u64) * 2 < u64::from(h.brokers)
}

/// Faults after which the controller hears nothing from the broker.
fn silences(kind: FaultKind) -> bool {
    matches!(kind, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss | FaultKind::Pause | FaultKind::Isolate | FaultKind::IsolateOut)
}

/// Whether the fault touches `broker` (on it, or on a link of it).
fn touches(s: &FaultSpan, broker: &str) -> bool {
    match s.kind.is_link() {
        true => s.link().is_some_and(|(a, b)| a == broker || b == broker),
        false => s.target == broker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::simprobe::Election;

    fn history(elected_at: u64, crash_from: u64) -> History {
        let elections = vec![Election { at_ms: elected_at, offset: 40, topic: "orders".into(), partition: 0, leader: 2 }];
        let crash = FaultSpan { kind: FaultKind::Kill, target: "broker-2".into(), from_ms: crash_from, until_ms: 9_000 };
        History { elections, faults: vec![crash], session_ms: 1_500, brokers: 5, ..History::default() }
    }

    fn judged(h: &History) -> Vec<Violation> {
        super::super::judged(leader_fenced, h)
    }

    #[test]
    fn a_broker_down_for_over_a_session_elected_is_a_violation() {
        let v = judged(&history(6_000, 3_000));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("committed broker-2 as leader at 6000 ms") && v[0].detail.contains("Kill from 3000 ms"), "{}", v[0].detail);
        assert!(judged(&history(4_900, 3_000)).is_empty(), "down 1.9 s: within the session and its slack");
        assert!(judged(&history(9_500, 3_000)).is_empty(), "elected after its restart");
    }

    #[test]
    fn a_broker_down_since_before_its_controller_took_over_elected_is_a_violation() {
        use broker_core::simprobe::Committed;
        let mut h = history(4_000, 3_000); // down 1 s only: not judged by the session rule
        let entry = |offset, entry_epoch| Committed { node: 1, node_epoch: entry_epoch, leader: true, offset, entry_epoch, digest: 0 };
        h.raft.committed = vec![entry(30, 3), entry(38, 4), entry(45, 4)];
        h.raft.active = vec![(2_000, 0, 3), (3_600, 1, 4), (3_900, 1, 4)];
        let v = judged(&h);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("controller of epoch 4 became active at 3600 ms"), "{}", v[0].detail);
        h.raft.active = vec![(2_000, 0, 3), (3_400, 1, 4)];
        assert!(judged(&h).is_empty(), "the broker went down within the slack of the takeover");
        h.raft.committed = vec![entry(30, 3), entry(45, 4)];
        assert!(judged(&h).is_empty(), "the record was written in epoch 3, whose controller heard it");
    }

    #[test]
    fn faults_on_half_the_brokers_hold_fencing_back() {
        let mut h = history(6_000, 3_000);
        h.faults.push(FaultSpan { kind: FaultKind::Isolate, target: "broker-3".into(), from_ms: 5_000, until_ms: 5_500 });
        assert_eq!(judged(&h).len(), 1, "two of five touched: a majority heard");
        h.faults.push(FaultSpan { kind: FaultKind::ClogLink, target: "broker-0>broker-4".into(), from_ms: 5_000, until_ms: 5_500 });
        assert!(judged(&h).is_empty(), "three of five touched");
    }

    /// fsync-storm seed 54003: the lone controller (broker-0) was paused over the broker's
    /// power loss; on resume it read the heartbeat the broker sent before it went down.
    #[test]
    fn a_controller_stopped_in_the_window_may_elect_before_it_fences() {
        use broker_core::simprobe::Committed;
        let mut h = history(6_000, 3_000);
        h.raft.committed = vec![Committed { node: 0, node_epoch: 1, leader: true, offset: 40, entry_epoch: 1, digest: 0 }];
        h.raft.active = vec![(100, 0, 1)];
        assert_eq!(judged(&h).len(), 1, "a running controller should have fenced it");
        h.faults.push(FaultSpan { kind: FaultKind::Pause, target: "broker-0".into(), from_ms: 2_500, until_ms: 5_990 });
        assert!(judged(&h).is_empty(), "its controller was paused over the session");
        h.faults.last_mut().unwrap().target = "broker-1".into();
        assert_eq!(judged(&h).len(), 1, "another broker's pause excuses nothing");
    }
}
