//! Availability while a leader's disk fails: a broker whose log of a partition it leads fails
//! (a write or sync refused) must hand the partition over — register again so the controller
//! moves leadership away, as Kafka's broker reports a failed log directory — within a broker
//! session timeout, the time in which the controller replaces a broker that died outright. A
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
        let deadline = f.failed_ms.saturating_add(h.session_ms);
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
            detail: format!("{broker}'s log failed at {} ms while it led, and it stayed the committed leader {ended}: no handover within the session timeout ({} ms), with no other fault running", f.failed_ms, h.session_ms),
            loss: false,
            acks: None,
        });
    }
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
}
