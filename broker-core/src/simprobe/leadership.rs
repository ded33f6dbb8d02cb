//! Leadership as the controller commits it, watched while a simulated run goes: every change of
//! a partition's committed leader (for `sim`'s `leader_fenced` checker: the controller elects
//! only brokers it has heard from), and leaders whose log failed.
//!
//! A leader whose log failed hands its partitions over. A broker that cannot write a partition it leads must tell the controller (it registers
//! again, and the controller moves leadership away in the same batch), or every producer of
//! that partition waits for the disk to come back: no write is lost, no safety checker sees it,
//! and the partition is unavailable for as long as the fault lasts although another replica
//! could lead it. What the probe keeps, for `sim`'s `leader_handover` checker: each moment a
//! leader's log failed (while the controller's committed leader was that broker), and when that
//! ended — another leader committed, or the broker's log open again.
//!
//! Observation only, like the rest of `simprobe`: nothing reads it back; empty in the real build.

/// A leader's log failed at `failed_ms`; `ended_ms` is when the partition stopped waiting on it
/// (`how`), if it did before the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedLeader {
    pub node: i32,
    pub topic: String,
    pub partition: i32,
    /// The reporting node's clock (simulated ms since the epoch; the harness makes it run time).
    pub failed_ms: u64,
    pub ended_ms: Option<u64>,
    pub how: &'static str,
}

/// The controller committed `leader` (-1: none) as the partition's leader, at `at_ms` (the
/// voter's clock; the harness makes it run time), where it had committed another before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    pub at_ms: u64,
    /// The record's metadata offset (its Raft entry tells which controller wrote it).
    pub offset: i64,
    pub topic: String,
    pub partition: i32,
    pub leader: i32,
}

/// The controller committed a FenceBroker record for `broker` at metadata `offset`, at `at_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub at_ms: u64,
    pub offset: i64,
    pub broker: i32,
}

/// The watch itself: plain logic (unit-tested in every build); only the simulated build keeps
/// one per run (`simprobe`'s registry).
#[cfg_attr(not(madsim), allow(dead_code))]
pub(super) mod watch {
    use super::{Election, FailedLeader, Fence};
    use crate::simprobe::Part;
    use std::collections::BTreeMap;

    /// At most this many failures, and elections, are kept per run.
    const failures_max: usize = 256;
    const elections_max: usize = 100_000;

    #[derive(Debug, Default)]
    pub struct Watch {
        /// Each partition's committed leader and the metadata offset of the record that named it.
        leader: BTreeMap<Part, (i64, i32)>,
        /// (partition, node) → index in `failed` of a failure not yet ended.
        open: BTreeMap<(Part, i32), usize>,
        pub failed: Vec<FailedLeader>,
        pub elections: Vec<Election>,
        pub fences: Vec<Fence>,
    }

    impl Watch {
        /// Node `node`'s log of a partition it leads failed. Not a failure of a leader if the
        /// controller had already committed another one (the broker had not heard yet).
        pub fn log_failed(&mut self, node: i32, topic: &str, part: Part, now: u64) {
            if self.leader.get(&part).is_none_or(|&(_, l)| l != node) || self.open.contains_key(&(part, node)) || self.failed.len() >= failures_max {
                return;
            }
            self.open.insert((part, node), self.failed.len());
            self.failed.push(FailedLeader { node, topic: topic.to_string(), partition: part.1, failed_ms: now, ended_ms: None, how: "" });
        }

        /// A voter applied the Partition record at metadata `offset` naming `leader` as committed.
        pub fn leader_committed(&mut self, topic: &str, part: Part, offset: i64, leader: i32, now: u64) {
            if self.leader.get(&part).is_some_and(|&(o, _)| o >= offset) {
                return; // a voter applying an older record again
            }
            if self.leader.insert(part, (offset, leader)).is_none_or(|(_, before)| before != leader) && self.elections.len() < elections_max {
                self.elections.push(Election { at_ms: now, offset, topic: topic.to_string(), partition: part.1, leader });
            }
            let ended: Vec<(Part, i32)> = self.open.range((part, i32::MIN)..=(part, i32::MAX)).map(|(&k, _)| k).filter(|&(_, n)| n != leader).collect();
            for k in ended {
                self.end(k, now, "the controller committed another leader");
            }
        }

        /// A voter applied the FenceBroker record at metadata `offset` as committed.
        pub fn broker_fenced(&mut self, broker: i32, offset: i64, now: u64) {
            if self.fences.last().is_some_and(|f| f.offset >= offset) || self.fences.len() >= elections_max {
                return; // a voter applying an older record again
            }
            self.fences.push(Fence { at_ms: now, offset, broker });
        }

        /// Node `node`'s replica opened again (its log end reported).
        pub fn log_open(&mut self, node: i32, part: Part, now: u64) {
            self.end((part, node), now, "its log opened again");
        }

        fn end(&mut self, key: (Part, i32), now: u64, how: &'static str) {
            if let Some(i) = self.open.remove(&key) {
                self.failed[i].ended_ms = Some(now);
                self.failed[i].how = how;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::watch::Watch;

    const t: [u8; 16] = [7; 16];

    #[test]
    fn a_failure_ends_at_another_committed_leader_or_at_its_log_opening_again() {
        let mut w = Watch::default();
        w.leader_committed("orders", (t, 0), 10, 1, 0);
        w.leader_committed("orders", (t, 1), 11, 1, 0);
        w.log_failed(1, "orders", (t, 0), 100);
        w.log_failed(1, "orders", (t, 1), 100);
        w.log_failed(1, "orders", (t, 1), 150); // the same failure seen again: one entry
        w.leader_committed("orders", (t, 0), 9, 2, 200); // an older record replayed: not a handover
        w.leader_committed("orders", (t, 0), 12, 2, 300);
        w.log_open(1, (t, 1), 400);
        assert_eq!(w.failed.len(), 2, "{:?}", w.failed);
        assert_eq!((w.failed[0].ended_ms, w.failed[0].how), (Some(300), "the controller committed another leader"));
        assert_eq!((w.failed[1].ended_ms, w.failed[1].how), (Some(400), "its log opened again"));
        let changes: Vec<(u64, i32, i32)> = w.elections.iter().map(|e| (e.at_ms, e.partition, e.leader)).collect();
        assert_eq!(changes, [(0, 0, 1), (0, 1, 1), (300, 0, 2)], "the first leaders and one change; not the replayed record");
        w.broker_fenced(3, 20, 500);
        w.broker_fenced(3, 20, 510); // another voter applying it
        assert_eq!(w.fences.len(), 1);
    }

    #[test]
    fn a_failure_that_never_ends_stays_open_and_a_stale_leader_is_not_counted() {
        let mut w = Watch::default();
        w.leader_committed("orders", (t, 0), 10, 1, 0);
        w.log_failed(1, "orders", (t, 0), 100);
        w.leader_committed("orders", (t, 0), 11, 1, 200); // the same leader committed again (an ISR change)
        w.log_failed(2, "orders", (t, 0), 250); // broker 2 thought it led: the controller says 1
        assert_eq!(w.failed.len(), 1, "{:?}", w.failed);
        assert_eq!(w.failed[0].ended_ms, None);
    }
}
