//! Raft's durable term and vote over the metadata quorum (docs/controller.md, "The durability
//! contract"): a voter votes for at most one candidate in an epoch, and what its store synced
//! (epoch and vote) is what it reads back after any crash or power loss — never an older epoch,
//! never the same epoch without its vote. A voter that forgot its vote can vote again, and two
//! leaders of one epoch follow; this checker sees the forgetting itself, which happens at every
//! such power loss, not only when a second candidate happens to ask.

use crate::history::{History, Violation};
use broker_core::metadata::metadata_topic;
use std::collections::BTreeMap;

/// One vote per voter and epoch; a restart never goes back on a synced term or vote.
pub fn votes_durable(h: &History, out: &mut Vec<Violation>) {
    let mut synced: BTreeMap<i32, (i32, Option<i32>)> = BTreeMap::new();
    let mut votes: BTreeMap<(i32, i32), i32> = BTreeMap::new();
    let mut flag = |detail: String| out.push(Violation { checker: "raft_votes", topic: metadata_topic.to_string(), partition: 0, offsets: Vec::new(), at_ms: 0, detail, loss: false, acks: None });
    for s in &h.raft.states {
        if let Some(c) = s.voted_for {
            match votes.get(&(s.node, s.epoch)) {
                Some(&first) if first != c => flag(format!("voter {} voted for {first} and for {c} in epoch {}", s.node, s.epoch)),
                Some(_) => {}
                None => {
                    votes.insert((s.node, s.epoch), c);
                }
            }
        }
        let before = synced.get(&s.node).copied();
        if let (true, Some((epoch, vote))) = (s.restored, before) {
            if s.epoch < epoch || (s.epoch == epoch && vote.is_some() && s.voted_for.is_none()) {
                flag(format!("voter {} synced epoch {epoch} (vote {vote:?}) and restarted at epoch {} (vote {:?})", s.node, s.epoch, s.voted_for));
            }
        }
        if before.is_none_or(|(epoch, _)| s.epoch >= epoch) {
            synced.insert(s.node, (s.epoch, s.voted_for));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::simprobe::VoterState;

    fn state(node: i32, restored: bool, epoch: i32, voted_for: Option<i32>) -> VoterState {
        VoterState { node, restored, epoch, voted_for }
    }

    #[test]
    fn a_forgotten_vote_and_a_second_vote_are_violations() {
        let mut h = History::default();
        h.raft.states = vec![state(2, true, 0, None), state(2, false, 1, Some(0)), state(2, false, 1, Some(0)), state(2, true, 1, Some(0)), state(2, false, 2, None)];
        let mut out = Vec::new();
        votes_durable(&h, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Power loss: back to epoch 1, then a vote for another candidate in epoch 2.
        h.raft.states.extend([state(2, true, 1, Some(0)), state(2, false, 2, Some(1)), state(2, true, 2, None), state(2, false, 2, Some(0))]);
        votes_durable(&h, &mut out);
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out[0].detail.contains("synced epoch 2 (vote None) and restarted at epoch 1"), "{}", out[0].detail);
        assert!(out[1].detail.contains("synced epoch 2 (vote Some(1)) and restarted at epoch 2 (vote None)"), "{}", out[1].detail);
        assert!(out[2].detail.contains("voted for 1 and for 0 in epoch 2"), "{}", out[2].detail);
    }
}
