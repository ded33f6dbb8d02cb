//! Raft election safety over the metadata quorum: at most one voter becomes leader in any one
//! epoch (Raft's Election Safety; KRaft's one leader per epoch). A voter reporting the same
//! epoch twice (its store reopened) is the same leadership.

use crate::history::{History, Violation};
use broker_core::metadata::metadata_topic;
use std::collections::BTreeMap;

/// At most one leader per epoch.
pub fn one_leader_per_epoch(h: &History, out: &mut Vec<Violation>) {
    let mut by_epoch: BTreeMap<i32, i32> = BTreeMap::new();
    for e in &h.raft.elected {
        match by_epoch.get(&e.epoch) {
            Some(&first) if first != e.node => out.push(Violation {
                checker: "raft_leaders",
                topic: metadata_topic.to_string(),
                partition: 0,
                offsets: Vec::new(),
                at_ms: 0,
                detail: format!("voters {first} and {} both became leader in epoch {}", e.node, e.epoch),
                loss: false,
                acks: None,
            }),
            Some(_) => {}
            None => {
                by_epoch.insert(e.epoch, e.node);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::simprobe::Elected;

    fn elected(node: i32, epoch: i32) -> Elected {
        Elected { node, epoch, log_start: 0, log_end: 1, epoch_starts: vec![(epoch, 0)] }
    }

    #[test]
    fn two_voters_leading_one_epoch_is_a_violation_and_a_reopened_leader_is_not() {
        let mut h = History::default();
        h.raft.elected = vec![elected(1, 3), elected(1, 3), elected(2, 4)];
        let mut out = Vec::new();
        one_leader_per_epoch(&h, &mut out);
        assert!(out.is_empty(), "{out:?}");
        h.raft.elected.push(elected(0, 4));
        one_leader_per_epoch(&h, &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].detail.contains("voters 2 and 0 both became leader in epoch 4"), "{}", out[0].detail);
    }
}
