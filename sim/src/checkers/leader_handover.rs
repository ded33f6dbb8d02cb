//! Availability while a leader's disk fails: a broker whose log of a partition it leads fails
//! (a write or sync refused) must hand the partition over — register again so the controller
//! moves leadership away, as Kafka's broker reports a failed log directory — within a broker
//! session timeout, the time in which the controller replaces a broker that died outright. When
//! the failed broker was the active controller, its metadata log failed with the disk: there
//! is no controller to hand over to until the voters elect another, and a broker that died as
//! active controller is replaced a session after that failover (Kafka halts a node whose
//! metadata log fails, and the next controller gives every broker a fresh session), so the
//! bound is then a controller failover plus a session timeout (issue 26, swarm-quorum seeds
//! 7123 and 7165). A
//! leader that keeps its leadership loses nothing and breaks no safety property; its
//! producers wait for the disk to come back although another replica could lead.
//!
//! Judged only where nothing else could explain a slow handover: no other fault (on any node
//! or link) within a session timeout before the failure or during the window after it, and
//! the quorum able to commit without the failed broker (a voter whose own disk failed may be
//! the one that cannot write the metadata log). The brokers and voters report failures and
//! their ends (`broker_core::simprobe::leadership`).

use crate::history::{FaultSpan, History, Violation};
use crate::scenario::FaultKind;

/// A failed leader not replaced, nor back, within `session_ms`, while no other fault ran.
pub fn leader_handover(h: &History, out: &mut Vec<Violation>) {
    if h.session_ms == 0 {
        return;
    }
    for f in &h.failed_leaders {
        // The active controller's metadata log is on the same disk: when it fails too, the
        // broker has no controller to hand over to until the voters elect another (Kafka halts
        // such a node, and its partitions move a session after the next controller starts).
        let failover = if was_active_controller(h, f.node, f.failed_ms) { h.controller_failover_ms } else { 0 };
        let deadline = f.failed_ms.saturating_add(h.session_ms + failover);
        let broker = format!("broker-{}", f.node);
        if f.ended_ms.is_some_and(|e| e <= deadline) || deadline > h.healed_at_ms || !quorum_without(h, f.node) {
            continue;
        }
        let window = (f.failed_ms.saturating_sub(h.session_ms), deadline);
        if h.faults.iter().any(|s| overlaps(s, window) && !own_disk_fault(s, &broker)) {
            continue;
        }
        let ended = match f.ended_ms {
            Some(e) => format!("until {e} ms ({})", f.how),
            None => "until the run ended".to_string(),
        };
        out.push(Violation {
            checker: "leader_handover",
            topic: f.topic.clone(),
            partition: f.partition,
            offsets: Vec::new(),
            at_ms: deadline,
            detail: format!("{broker}'s log failed at {} ms while it led, and it stayed the committed leader {ended}: no handover within the session timeout ({} ms){}, with no other fault running", f.failed_ms, h.session_ms, if failover > 0 { format!(" plus a controller failover ({failover} ms): it was the active controller") } else { String::new() }),
            loss: false,
            acks: None,
        });
    }
}

/// Whether `node` was the active controller when its log failed: the newest epoch reported
/// active by then is its.
fn was_active_controller(h: &History, node: i32, at_ms: u64) -> bool {
    h.raft.active.iter().filter(|&&(t, _, _)| t <= at_ms).max_by_key(|&&(t, _, e)| (e, t)).is_some_and(|&(_, n, _)| n == node)
}

/// Whether the voters other than `node` are a majority of the voters.
fn quorum_without(h: &History, node: i32) -> bool {
    let others = h.voters.iter().filter(|&&v| v != node).count();
    others > h.voters.len() / 2
}

fn overlaps(s: &FaultSpan, (from, until): (u64, u64)) -> bool {
    s.from_ms < until && s.until_ms > from
}

fn own_disk_fault(s: &FaultSpan, broker: &str) -> bool {
    matches!(s.kind, FaultKind::DiskEio | FaultKind::DiskFull | FaultKind::SlowDisk) && s.target == broker
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::simprobe::FailedLeader;

    fn history(ended_ms: Option<u64>) -> History {
        let failed = FailedLeader { node: 1, topic: "orders".into(), partition: 0, failed_ms: 5_000, ended_ms, how: "the controller committed another leader" };
        let eio = FaultSpan { kind: FaultKind::DiskEio, target: "broker-1".into(), from_ms: 4_900, until_ms: 9_000 };
        History { failed_leaders: vec![failed], faults: vec![eio], session_ms: 1_500, voters: vec![0], healed_at_ms: 20_000, ..History::default() }
    }

    fn judged(h: &History) -> Vec<Violation> {
        super::super::judged(leader_handover, h)
    }

    #[test]
    fn a_leader_that_keeps_a_failed_partition_past_a_session_is_a_violation() {
        assert!(judged(&history(Some(6_000))).is_empty(), "handed over after 1 s");
        let v = judged(&history(Some(9_100)));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("broker-1's log failed at 5000 ms") && v[0].detail.contains("until 9100 ms"), "{}", v[0].detail);
        assert_eq!(judged(&history(None)).len(), 1, "never handed over");
    }

    #[test]
    fn another_fault_a_quorum_that_needs_the_failed_voter_or_the_end_of_the_run_excuse_it() {
        let mut h = history(None);
        h.faults.push(FaultSpan { kind: FaultKind::Isolate, target: "broker-2".into(), from_ms: 4_000, until_ms: 4_200 });
        assert!(judged(&h).is_empty(), "a partition 0.8 s before");
        let mut h = history(None);
        h.faults.push(FaultSpan { kind: FaultKind::DiskFull, target: "broker-0".into(), from_ms: 6_000, until_ms: 7_000 });
        assert!(judged(&h).is_empty(), "another broker's disk during the window");
        let mut h = history(None);
        h.voters = vec![1];
        assert!(judged(&h).is_empty(), "the only voter's own disk failed");
        h.voters = vec![0, 1, 2];
        assert_eq!(judged(&h).len(), 1, "two voters of three are left");
        let mut h = history(None);
        h.healed_at_ms = 6_000;
        assert!(judged(&h).is_empty(), "the window runs past the safety phase");
    }

    #[test]
    fn the_active_controller_gets_a_controller_failover_more() {
        let mut h = history(Some(7_500));
        h.controller_failover_ms = 1_200;
        assert_eq!(judged(&h).len(), 1, "not the controller: a session timeout only");
        h.raft.active = vec![(1_000, 0, 1), (2_000, 1, 2), (4_000, 1, 2)];
        assert!(judged(&h).is_empty(), "the active controller: 2.5 s is within 1.5 s + 1.2 s");
        h.failed_leaders[0].ended_ms = Some(7_800);
        assert_eq!(judged(&h).len(), 1, "2.8 s is not");
        h.failed_leaders[0].ended_ms = Some(7_500);
        h.raft.active.push((5_200, 0, 3));
        assert!(judged(&h).is_empty(), "only reports before the failure count");
        h.raft.active.push((4_500, 0, 3));
        assert_eq!(judged(&h).len(), 1, "another controller had taken over before the failure");
    }
}
