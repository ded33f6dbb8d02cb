//! Raft leader completeness over the metadata quorum: an entry a leader committed in epoch T is
//! in the log of every leader of a later epoch, at its offset with its epoch (Raft's Leader
//! Completeness; KRaft's high watermark rule). Time plays no part: a voter acknowledges an
//! entry only in the epoch it was written in, so a majority that committed it in T holds it
//! before any of them can vote in a later epoch. A leader's log below its snapshot counts as
//! holding what it covers (a snapshot holds only committed entries).

use crate::history::{History, Violation};
use broker_core::metadata::metadata_topic;
use broker_core::simprobe::Elected;
use std::collections::BTreeMap;

/// Every leader holds every entry committed by a leader of an earlier epoch.
pub fn leaders_hold_committed(h: &History, out: &mut Vec<Violation>) {
    // offset → (entry epoch, the earliest epoch whose leader committed it).
    let mut committed: BTreeMap<i64, (i32, i32)> = BTreeMap::new();
    for c in h.raft.committed.iter().filter(|c| c.leader) {
        let slot = committed.entry(c.offset).or_insert((c.entry_epoch, c.node_epoch));
        if slot.0 == c.entry_epoch {
            slot.1 = slot.1.min(c.node_epoch);
        }
    }
    for leader in &h.raft.elected {
        let missing = committed.iter().find(|(&offset, &(entry_epoch, in_epoch))| in_epoch < leader.epoch && offset >= leader.log_start && epoch_at(leader, offset) != Some(entry_epoch));
        if let Some((&offset, &(entry_epoch, in_epoch))) = missing {
            out.push(Violation {
                checker: "raft_completeness",
                topic: metadata_topic.to_string(),
                partition: 0,
                offsets: vec![offset],
                at_ms: 0,
                detail: format!(
                    "voter {} became leader of epoch {} with {} at offset {offset} (log {}..{}), but the entry of epoch {entry_epoch} there was committed in epoch {in_epoch}",
                    leader.node,
                    leader.epoch,
                    epoch_at(leader, offset).map_or("nothing".to_string(), |e| format!("an entry of epoch {e}")),
                    leader.log_start,
                    leader.log_end
                ),
                loss: false,
                acks: None,
            });
        }
    }
}

/// The epoch of the leader's entry at `offset`, if its log holds one there.
fn epoch_at(leader: &Elected, offset: i64) -> Option<i32> {
    if offset < leader.log_start || offset >= leader.log_end {
        return None;
    }
    leader.epoch_starts.iter().take_while(|(_, start)| *start <= offset).last().map(|(e, _)| *e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::simprobe::Committed;

    fn committed(node: i32, node_epoch: i32, offset: i64, entry_epoch: i32) -> Committed {
        Committed { node, node_epoch, leader: true, offset, entry_epoch, digest: 0 }
    }

    #[test]
    fn a_later_leader_without_a_committed_entry_is_a_violation() {
        let mut h = History::default();
        h.raft.committed = vec![committed(0, 1, 0, 1), committed(0, 1, 1, 1)];
        // Epoch 2's leader holds both; epoch 1's own election is not judged by its commits.
        h.raft.elected = vec![
            Elected { node: 0, epoch: 1, log_start: 0, log_end: 1, epoch_starts: vec![(1, 0)] },
            Elected { node: 1, epoch: 2, log_start: 0, log_end: 3, epoch_starts: vec![(1, 0), (2, 2)] },
            // Below its snapshot: covered.
            Elected { node: 2, epoch: 3, log_start: 2, log_end: 4, epoch_starts: vec![(2, 2), (3, 3)] },
        ];
        let mut out = Vec::new();
        leaders_hold_committed(&h, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Epoch 4's leader has another epoch's entry at offset 1.
        h.raft.elected.push(Elected { node: 0, epoch: 4, log_start: 0, log_end: 3, epoch_starts: vec![(1, 0), (3, 1)] });
        leaders_hold_committed(&h, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].offsets, vec![1]);
        assert!(out[0].detail.contains("an entry of epoch 3"), "{}", out[0].detail);
    }
}
