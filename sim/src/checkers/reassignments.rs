//! Partition reassignment (KIP-455), judged on where each reassigned partition ends after
//! healing: on the replica set its answered reassignments lead to, with none left in progress,
//! and with no copy left on a broker that is no longer a replica.
//!
//! What it reads, and why there. A partition's final placement is asked of the cluster the way
//! an operator verifies a move (`kafka-reassign-partitions.sh --verify`): Metadata and
//! ListPartitionReassignments, answered by the active controller after healing
//! (`cluster::reassign`, `History::final_placements`). That is the controller's committed
//! image through the real request path, what every client is told. The brokers' observations
//! (`broker_core::observe::Observation::PartitionCommitted`) carry a partition's leader and ISR
//! but not its replicas, and rebuilding the assignment from the voters' Raft entries would
//! decode the metadata log a second time beside the broker's own code. What a broker keeps
//! is read from its disk after the clean stop (`History::replica_logs` and `replica_errors`:
//! every partition directory that exists, whether its log opens or not): only the disk shows
//! what a removed replica left behind; the broker's own account (its "removed" log line, its
//! Metadata) could claim a removal its disk does not show.
//!
//! Durability across a move (no acknowledged acks=all record lost while replicas come and go)
//! is not judged here: `acknowledged_durable`, `lost_write`, `committed_consistent` and
//! `isr_complete` judge every run, reassigned or not.

use crate::history::{History, Reassignment, Violation};
use broker_core::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// reassignment-done: after healing, every reassigned partition ends with no reassignment in
/// progress, on a replica set its answered reassignments lead to — the last accepted target's,
/// or after an accepted cancel the replicas from before the move it cancelled.
///
/// Which set that is follows a model of KIP-455's steps (`Move`), kept here rather than
/// borrowed from the controller so the two are judged against each other: a target adds the
/// replicas it lacks and marks the ones it drops as leaving; the move completes at some moment
/// (once its new replicas are in sync, which the history does not see, so any moment counts);
/// a cancel drops the replicas still being added. An attempt whose outcome the admin never
/// learned may have taken effect or not; a refusal after one such attempt too, and a cancel
/// refused NO_REASSIGNMENT_IN_PROGRESS (a broker that forwarded it may have retried an
/// envelope the controller had already applied).
pub fn reassignment_done(h: &History, out: &mut Vec<Violation>) {
    let v = |(topic, partition): &(String, i32), detail: String| Violation { checker: "reassignment_done", topic: topic.clone(), partition: *partition, offsets: Vec::new(), at_ms: 0, detail, loss: false, acks: None };
    if let Some(why) = &h.placement_error {
        let first = h.reassignments.first().map(|r| (r.topic.clone(), r.partition)).unwrap_or_default();
        out.push(v(&first, format!("the reassigned partitions' replicas could not be read from the active controller {why}")));
    }
    let mut asked: BTreeMap<(String, i32), Vec<&Reassignment>> = BTreeMap::new();
    for r in &h.reassignments {
        asked.entry((r.topic.clone(), r.partition)).or_default().push(r);
    }
    for (key, asked) in &asked {
        let Some(end) = h.final_placements.get(key) else { continue };
        if !end.adding.is_empty() || !end.removing.is_empty() {
            out.push(v(key, format!("a reassignment is still in progress after healing: replicas {:?}, adding {:?}, removing {:?}", end.replicas, end.adding, end.removing)));
            continue;
        }
        let Some(initial) = h.initial_replicas.get(key) else { continue };
        let ends = Move::ends(initial, asked);
        let replicas: BTreeSet<i32> = end.replicas.iter().copied().collect();
        if !ends.contains(&replicas) {
            let last = asked.iter().rev().find(|r| r.code == Some(0)).map_or("none accepted".to_string(), |r| format!("the last accepted, at {} ms: {}", r.invoke_ms, asked_text(r)));
            out.push(v(key, format!("ends on replicas {:?}; from {initial:?} the answered reassignments lead to one of {ends:?} ({last})", end.replicas)));
        }
    }
}

/// removed-replica-deleted: after healing, a broker that is not among a reassigned partition's
/// final replicas holds no directory of it (Kafka deletes a removed replica's log, and a
/// stray one left on disk is data nothing serves, cleans or retires).
pub fn removed_replica_deleted(h: &History, out: &mut Vec<Violation>) {
    for (key, end) in &h.final_placements {
        let holders = h.replica_logs.get(key).into_iter().flat_map(|logs| logs.keys()).chain(h.replica_errors.get(key).into_iter().flat_map(|errors| errors.keys()));
        for broker in holders.collect::<BTreeSet<&String>>() {
            if broker_id(broker).is_some_and(|id| !end.replicas.contains(&id)) {
                let records = h.replica_logs.get(key).and_then(|logs| logs.get(broker)).map_or("a log that does not open".to_string(), |log| format!("{} records", log.len()));
                out.push(Violation {
                    checker: "removed_replica_deleted",
                    topic: key.0.clone(),
                    partition: key.1,
                    offsets: Vec::new(),
                    at_ms: 0,
                    detail: format!("{broker} still holds its directory ({records}) though the partition's replicas are {:?}", end.replicas),
                    loss: false,
                    acks: None,
                });
            }
        }
    }
}

/// `broker-N`'s id.
fn broker_id(name: &str) -> Option<i32> {
    name.strip_prefix("broker-")?.parse().ok()
}

fn asked_text(r: &Reassignment) -> String {
    r.target.as_ref().map_or("cancel".to_string(), |t| format!("target {t:?}"))
}

/// A partition's replicas as KIP-455 moves them: the set, and the replicas being added and
/// removed (both empty when no move is in progress).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Move {
    replicas: BTreeSet<i32>,
    adding: BTreeSet<i32>,
    removing: BTreeSet<i32>,
}

impl Move {
    fn moving(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// A new target: the replicas it lacks join (still being added, as are the ones an earlier
    /// target was adding that it keeps), the ones it drops are leaving.
    fn started(&self, target: &[i32]) -> Move {
        let target: BTreeSet<i32> = target.iter().copied().collect();
        let adding = target.iter().copied().filter(|r| !self.replicas.contains(r) || self.adding.contains(r)).collect();
        let removing = self.replicas.difference(&target).copied().collect();
        Move { replicas: self.replicas.union(&target).copied().collect(), adding, removing }
    }

    /// The move done: the leaving replicas gone.
    fn completed(&self) -> Move {
        Move { replicas: self.replicas.difference(&self.removing).copied().collect(), adding: BTreeSet::new(), removing: BTreeSet::new() }
    }

    /// A cancel: the replicas being added leave; refused (nothing changes) with no move on.
    fn cancelled(&self) -> Move {
        match self.moving() {
            true => Move { replicas: self.replicas.difference(&self.adding).copied().collect(), adding: BTreeSet::new(), removing: BTreeSet::new() },
            false => self.clone(),
        }
    }

    /// Every state a move in progress may have completed to, beside the states themselves.
    fn or_completed(states: BTreeSet<Move>) -> BTreeSet<Move> {
        let done: Vec<Move> = states.iter().filter(|s| s.moving()).map(Move::completed).collect();
        states.into_iter().chain(done).collect()
    }

    /// The replica sets the partition may end on, at rest, from `initial` through `asked` in
    /// the order the admin asked them (each answered or given up on before the next was sent).
    fn ends(initial: &[i32], asked: &[&Reassignment]) -> BTreeSet<BTreeSet<i32>> {
        let mut states: BTreeSet<Move> = [Move { replicas: initial.iter().copied().collect(), adding: BTreeSet::new(), removing: BTreeSet::new() }].into();
        for r in asked {
            states = Move::or_completed(states);
            let applied: BTreeSet<Move> = states.iter().map(|s| r.target.as_ref().map_or_else(|| s.cancelled(), |t| s.started(t))).collect();
            let maybe_done_before = r.earlier_unknown || (r.target.is_none() && r.code == Some(Code::NoReassignmentInProgress.code()));
            states = match (r.code, maybe_done_before) {
                // An accepted cancel found a move in progress (else it is refused).
                (Some(0), _) if r.target.is_none() => states.iter().filter(|s| s.moving()).map(Move::cancelled).collect(),
                (Some(0), _) => applied,
                (Some(_), false) => states,
                _ => states.union(&applied).cloned().collect(),
            };
        }
        Move::or_completed(states).into_iter().filter(|s| !s.moving()).map(|s| s.replicas).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::judged;
    use crate::history::Placement;

    /// A placement with no move in progress.
    fn at_rest(replicas: &[i32]) -> Placement {
        Placement { replicas: replicas.to_vec(), adding: Vec::new(), removing: Vec::new() }
    }

    fn asked(target: Option<&[i32]>, code: Option<i16>, earlier_unknown: bool) -> Reassignment {
        Reassignment { topic: "t".into(), partition: 0, target: target.map(<[i32]>::to_vec), invoke_ms: 1, complete_ms: code.map(|_| 2), code, earlier_unknown }
    }

    /// `t-0` on [0, 1] at first, the requests `asked`, and where it ended.
    fn history(asked: Vec<Reassignment>, end: Placement) -> History {
        let mut h = History::default();
        h.initial_replicas.insert(("t".into(), 0), vec![0, 1]);
        h.reassignments = asked;
        h.final_placements.insert(("t".into(), 0), end);
        h
    }

    fn done(h: &History) -> Vec<String> {
        judged(reassignment_done, h).into_iter().map(|v| v.detail).collect()
    }

    #[test]
    fn a_partition_ends_on_its_last_accepted_target() {
        let moved = vec![asked(Some(&[1, 2]), Some(0), false), asked(Some(&[2, 0]), Some(0), false)];
        assert_eq!(done(&history(moved.clone(), at_rest(&[0, 2]))), Vec::<String>::new(), "a set, in any order");
        let wrong = done(&history(moved.clone(), at_rest(&[1, 2])));
        assert!(wrong.len() == 1 && wrong[0].contains("target [2, 0]"), "{wrong:?}");
        // A refusal with no attempt before it changed nothing.
        let refused = vec![asked(Some(&[1, 2]), Some(0), false), asked(Some(&[2, 0]), Some(39), false)];
        assert!(done(&history(refused.clone(), at_rest(&[1, 2]))).is_empty());
        assert_eq!(done(&history(refused, at_rest(&[0, 2]))).len(), 1);
        // Nothing accepted: nothing moves.
        assert_eq!(done(&history(vec![asked(Some(&[2]), Some(39), false)], at_rest(&[2]))).len(), 1);
        assert!(done(&history(vec![asked(Some(&[2]), None, true)], at_rest(&[2]))).is_empty(), "never answered: it may have landed");
    }

    #[test]
    fn a_move_left_in_progress_is_a_violation() {
        let end = Placement { replicas: vec![1, 2, 0], adding: vec![2], removing: vec![0] };
        let found = done(&history(vec![asked(Some(&[1, 2]), Some(0), false)], end));
        assert!(found.len() == 1 && found[0].contains("still in progress"), "{found:?}");
    }

    #[test]
    fn a_cancel_returns_to_the_replicas_before_the_move_it_cancelled_or_finds_it_done() {
        let cancelled = vec![asked(Some(&[1, 2]), Some(0), false), asked(None, Some(0), false)];
        assert!(done(&history(cancelled.clone(), at_rest(&[0, 1]))).is_empty());
        assert_eq!(done(&history(cancelled, at_rest(&[1, 2]))).len(), 1, "an accepted cancel undid the move");
        // Refused, NO_REASSIGNMENT_IN_PROGRESS: the move had completed.
        let too_late = vec![asked(Some(&[1, 2]), Some(0), false), asked(None, Some(85), false)];
        assert!(done(&history(too_late, at_rest(&[1, 2]))).is_empty());
        // A target changed midway, then cancelled: broker 2 was added by the first and kept, 3 is dropped.
        let mut h = history(vec![asked(Some(&[1, 2]), Some(0), false), asked(Some(&[1, 3]), Some(0), false), asked(None, Some(0), false)], at_rest(&[0, 1, 2]));
        assert!(done(&h).is_empty(), "{:?}", done(&h));
        h.final_placements.insert(("t".into(), 0), at_rest(&[1, 2]));
        assert!(done(&h).is_empty(), "or the first move completed before the second came");
        for wrong in [&[0, 1][..], &[1, 3]] {
            h.final_placements.insert(("t".into(), 0), at_rest(wrong));
            assert_eq!(done(&h).len(), 1, "{wrong:?}");
        }
    }

    #[test]
    fn a_broker_that_is_no_replica_holds_no_directory() {
        let mut h = history(vec![asked(Some(&[1, 2]), Some(0), false)], at_rest(&[1, 2]));
        let logs = |names: &[&str]| names.iter().map(|n| (n.to_string(), vec![(0, b"a".to_vec())])).collect::<BTreeMap<_, _>>();
        h.replica_logs.insert(("t".into(), 0), logs(&["broker-1", "broker-2"]));
        assert!(judged(removed_replica_deleted, &h).is_empty());
        h.replica_logs.insert(("t".into(), 0), logs(&["broker-0", "broker-1", "broker-2"]));
        let stray = judged(removed_replica_deleted, &h);
        assert!(stray.len() == 1 && stray[0].detail.starts_with("broker-0 still holds"), "{stray:?}");
        h.replica_logs.insert(("t".into(), 0), logs(&["broker-1", "broker-2"]));
        h.replica_errors.entry(("t".into(), 0)).or_default().insert("broker-0".into(), "torn".into());
        assert_eq!(judged(removed_replica_deleted, &h).len(), 1, "a directory whose log does not open is still there");
    }
}
