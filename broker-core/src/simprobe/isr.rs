//! The ISR's promise, watched while a simulated run goes (Kafka's definition of the ISR): every
//! replica the controller has committed into a partition's ISR holds every record below the
//! highest high watermark a leader of that partition reached while its ISR had at least
//! `min.insync.replicas` members. A leader that lets the mark pass a member the controller may
//! have added, a follower cut below it, a member admitted without it, a leader elected without
//! it: each breaks it at once, long before (or without) an acknowledged write being lost, which
//! is what makes the bugs that break it findable by fresh seeds (issue 11 item 2).
//!
//! What the probe sees: each replica's log end as its broker changes it (opened, appended,
//! truncated; forgotten when closed or failed), each high watermark a leader reaches, and each
//! Partition record the active controller applies as committed. A broker that crashes keeps
//! its last reported log end until its replica opens again: a power loss under
//! `flush.messages` > 1 shortens a log the probe still sees whole, so the probe never blames a
//! crashed replica for what its broker forgot — the controller removes a re-registering
//! broker from every ISR before its replicas open (`Controller::register`).
//!
//! Observation only, like the rest of `simprobe`: nothing reads it back; empty in the real build.

/// A moment the promise was broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrBreach {
    /// The reporting node's clock (simulated ms since the epoch).
    pub at_ms: u64,
    pub topic: String,
    pub partition: i32,
    pub detail: String,
}

/// The watch itself: plain logic (unit-tested in every build); only the simulated build keeps
/// one per run (`simprobe`'s registry).
#[cfg_attr(not(madsim), allow(dead_code))]
pub(super) mod watch {
    use super::IsrBreach;
    use crate::simprobe::Part;
    use std::collections::{BTreeMap, BTreeSet};

    /// At most this many breaches are kept per run (the first ones say what happened).
    const breaches_max: usize = 64;

    #[derive(Debug, Default)]
    pub struct Watch {
        /// Each open replica's log end, by (partition, node).
        log_end: BTreeMap<(Part, i32), i64>,
        /// Each partition's committed ISR, and the metadata offset of the record that set it.
        isr: BTreeMap<Part, (i64, Vec<i32>)>,
        /// Each partition's highest high watermark reached under min ISR, and by which leader.
        committed: BTreeMap<Part, (i64, i32)>,
        /// (partition, node) pairs already reported: one breach each.
        reported: BTreeSet<(Part, i32)>,
        pub breaches: Vec<IsrBreach>,
    }

    impl Watch {
        pub fn log_end(&mut self, node: i32, topic: &str, part: Part, leo: Option<i64>, now: u64) {
            match leo {
                Some(leo) => {
                    self.log_end.insert((part, node), leo);
                    self.check(topic, part, node, now, "its log now ends there");
                }
                None => {
                    self.log_end.remove(&(part, node));
                }
            }
        }

        pub fn high_watermark(&mut self, node: i32, topic: &str, part: Part, hw: i64, below_min_isr: bool, now: u64) {
            if below_min_isr || self.committed.get(&part).is_some_and(|&(c, _)| c >= hw) {
                return;
            }
            self.committed.insert(part, (hw, node));
            for m in self.members(part) {
                self.check(topic, part, m, now, "the leader moved the mark past it");
            }
        }

        pub fn isr(&mut self, topic: &str, part: Part, offset: i64, isr: &[i32], now: u64) {
            if self.isr.get(&part).is_some_and(|&(o, _)| o >= offset) {
                return; // a voter applying an older record again (a new leader catching up)
            }
            self.isr.insert(part, (offset, isr.to_vec()));
            for &m in isr {
                self.check(topic, part, m, now, "the controller committed it into the ISR");
            }
        }

        fn members(&self, part: Part) -> Vec<i32> {
            self.isr.get(&part).map(|(_, isr)| isr.clone()).unwrap_or_default()
        }

        /// Whether node `m`'s replica, if it is open and in the ISR, holds the committed mark.
        fn check(&mut self, topic: &str, part: Part, m: i32, now: u64, when: &str) {
            let (Some(&(hw, leader)), Some(&leo)) = (self.committed.get(&part), self.log_end.get(&(part, m))) else { return };
            if leo >= hw || !self.members(part).contains(&m) || self.breaches.len() >= breaches_max || !self.reported.insert((part, m)) {
                return;
            }
            let isr = self.members(part);
            let detail = format!("broker-{m} is in the committed ISR {isr:?} with its log ending at {leo}, below the high watermark {hw} that broker-{leader} reached under min ISR ({when})");
            self.breaches.push(IsrBreach { at_ms: now, topic: topic.to_string(), partition: part.1, detail });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::watch::Watch;

    const t: [u8; 16] = [7; 16];

    #[test]
    fn members_that_hold_the_mark_pass_and_a_shrink_committed_first_lets_it_pass_one() {
        let mut w = Watch::default();
        w.isr("orders", (t, 0), 10, &[1, 2, 3], 0);
        for n in [1, 2, 3] {
            w.log_end(n, "orders", (t, 0), Some(50), 1);
        }
        w.high_watermark(1, "orders", (t, 0), 50, false, 2);
        // Broker 3 falls behind; the shrink is committed before the mark passes it.
        w.log_end(1, "orders", (t, 0), Some(90), 3);
        w.log_end(2, "orders", (t, 0), Some(90), 3);
        w.isr("orders", (t, 0), 11, &[1, 2], 4);
        w.high_watermark(1, "orders", (t, 0), 90, false, 5);
        // A voter replaying the older record does not bring broker 3 back.
        w.isr("orders", (t, 0), 10, &[1, 2, 3], 6);
        assert!(w.breaches.is_empty(), "{:?}", w.breaches);
    }

    #[test]
    fn the_mark_passing_a_member_a_member_cut_below_it_and_a_member_admitted_without_it_are_breaches() {
        let mut w = Watch::default();
        w.isr("orders", (t, 0), 10, &[1, 2, 3], 0);
        for n in [1, 2, 3] {
            w.log_end(n, "orders", (t, 0), Some(50), 1);
        }
        w.log_end(1, "orders", (t, 0), Some(60), 1);
        w.high_watermark(1, "orders", (t, 0), 60, false, 2);
        assert_eq!(w.breaches.len(), 2, "brokers 2 and 3 do not hold 60: {:?}", w.breaches);
        assert!(w.breaches[0].detail.contains("broker-2") && w.breaches[0].detail.contains("below the high watermark 60"), "{}", w.breaches[0].detail);

        let mut w = Watch::default();
        w.isr("orders", (t, 1), 10, &[1, 2], 0);
        w.log_end(1, "orders", (t, 1), Some(50), 1);
        w.log_end(2, "orders", (t, 1), Some(50), 1);
        w.high_watermark(1, "orders", (t, 1), 50, false, 2);
        w.log_end(2, "orders", (t, 1), Some(40), 3); // truncated below the mark while in the ISR
        assert_eq!(w.breaches.len(), 1, "{:?}", w.breaches);
        assert_eq!((w.breaches[0].partition, w.breaches[0].at_ms), (1, 3));

        let mut w = Watch::default();
        w.isr("orders", (t, 2), 10, &[1], 0);
        w.log_end(1, "orders", (t, 2), Some(50), 1);
        w.log_end(3, "orders", (t, 2), Some(10), 1);
        w.high_watermark(1, "orders", (t, 2), 50, false, 2);
        w.isr("orders", (t, 2), 12, &[1, 3], 3); // admitted without the records below 50
        assert_eq!(w.breaches.len(), 1, "{:?}", w.breaches);
    }

    #[test]
    fn a_mark_reached_below_min_isr_a_closed_replica_and_another_incarnation_are_not_judged() {
        let mut w = Watch::default();
        w.isr("orders", (t, 0), 10, &[1, 2], 0);
        w.log_end(1, "orders", (t, 0), Some(50), 1);
        w.log_end(2, "orders", (t, 0), Some(20), 1);
        w.high_watermark(1, "orders", (t, 0), 50, true, 2); // an ISR below min.insync.replicas
        w.log_end(2, "orders", (t, 0), None, 3); // closed (failed, or deleted)
        w.high_watermark(1, "orders", (t, 0), 50, false, 4);
        w.log_end(2, "orders", ([8; 16], 0), Some(0), 5); // a re-created topic's replica
        assert!(w.breaches.is_empty(), "{:?}", w.breaches);
    }
}
