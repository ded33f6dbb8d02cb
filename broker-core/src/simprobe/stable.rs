//! The last stable offset, watched while a simulated run goes: a partition's leader never moves
//! it back while it leads in one leader epoch (Kafka's `Partition`: the high watermark only
//! grows under one leader, and a transaction opens at or above the log end, so the first
//! unstable offset only grows too). A read_committed consumer relies on it: what it was told is
//! stable stays stable.
//!
//! What the probe sees: each leader's high watermark and last stable offset as it reports them
//! (`Observation::LeaderHighWatermark`), keyed by node, partition and leader epoch; a replica
//! closed or failed, or a node started again, is forgotten (its next leadership starts over).
//!
//! Observation only, like the rest of `simprobe`: nothing reads it back; empty in the real build.

/// A leader moved its last stable offset back within one leader epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsoRegression {
    /// The reporting node's clock (simulated ms since the epoch).
    pub at_ms: u64,
    pub node: i32,
    pub topic: String,
    pub partition: i32,
    pub leader_epoch: i32,
    pub from: i64,
    pub to: i64,
}

/// The watch itself: plain logic (unit-tested in every build); only the simulated build keeps
/// one per run (`simprobe`'s registry).
#[cfg_attr(not(madsim), allow(dead_code))]
pub(super) mod watch {
    use super::LsoRegression;
    use crate::simprobe::Part;
    use std::collections::BTreeMap;

    /// At most this many regressions are kept per run (the first ones say what happened).
    const regressions_max: usize = 64;

    #[derive(Debug, Default)]
    pub struct Watch {
        /// (node, partition) → (leader epoch, last stable offset) last reported.
        last: BTreeMap<(i32, Part), (i32, i64)>,
        pub regressions: Vec<LsoRegression>,
    }

    impl Watch {
        /// Leader `node` reports `lso` in `leader_epoch`.
        pub fn stable(&mut self, node: i32, topic: &str, part: Part, leader_epoch: i32, lso: i64, now: u64) {
            let before = self.last.insert((node, part), (leader_epoch, lso));
            if let Some((epoch, from)) = before.filter(|&(epoch, from)| epoch == leader_epoch && lso < from) {
                if self.regressions.len() < regressions_max {
                    self.regressions.push(LsoRegression { at_ms: now, node, topic: topic.to_string(), partition: part.1, leader_epoch: epoch, from, to: lso });
                }
            }
        }

        /// `node`'s replica of `part` closed or failed: its next report starts over.
        pub fn closed(&mut self, node: i32, part: Part) {
            self.last.remove(&(node, part));
        }

        /// `node` started again: every report of it starts over.
        pub fn started(&mut self, node: i32) {
            self.last.retain(|(n, _), _| *n != node);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_step_back_within_an_epoch_is_kept_and_nothing_else() {
            let mut w = Watch::default();
            let p = ([1; 16], 0);
            w.stable(1, "t", p, 3, 10, 0);
            w.stable(1, "t", p, 3, 12, 1);
            w.stable(1, "t", p, 4, 5, 2); // a new epoch starts over
            w.stable(2, "t", p, 4, 4, 2); // another node
            w.closed(1, p);
            w.stable(1, "t", p, 4, 3, 3); // reopened
            w.started(2);
            w.stable(2, "t", p, 4, 1, 4); // restarted
            assert!(w.regressions.is_empty(), "{:?}", w.regressions);
            w.stable(1, "t", p, 4, 2, 5);
            assert_eq!(w.regressions, vec![LsoRegression { at_ms: 5, node: 1, topic: "t".into(), partition: 0, leader_epoch: 4, from: 3, to: 2 }]);
        }
    }
}
