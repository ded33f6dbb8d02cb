//! Raft log matching over the metadata quorum's committed entries: every voter that applies the
//! entry at an offset as committed applies the same entry (same epoch, same bytes). This is
//! Raft's State Machine Safety, which Log Matching and Leader Completeness exist to give; a
//! committed entry overwritten (the figure-8 bug) shows here as two voters, or one voter before
//! and after, applying different entries at one offset.

use crate::history::{History, Violation};
use broker_core::metadata::metadata_topic;
use broker_core::simprobe::Committed;
use std::collections::BTreeMap;

/// Every voter applies the same committed entry at each offset.
pub fn committed_entries_agree(h: &History, out: &mut Vec<Violation>) {
    let mut first: BTreeMap<i64, &Committed> = BTreeMap::new();
    let mut reported: BTreeMap<(i64, i32, u32), ()> = BTreeMap::new();
    for c in &h.raft.committed {
        // One violation per distinct disagreeing entry, not one per voter that applied it.
        if reported.contains_key(&(c.offset, c.entry_epoch, c.digest)) {
            continue;
        }
        match first.get(&c.offset) {
            Some(f) if (f.entry_epoch, f.digest) != (c.entry_epoch, c.digest) => {
                reported.insert((c.offset, c.entry_epoch, c.digest), ());
                out.push(Violation {
                    checker: "raft_log",
                    topic: metadata_topic.to_string(),
                    partition: 0,
                    offsets: vec![c.offset],
                    at_ms: 0,
                    detail: format!(
                        "voter {} applied the entry of epoch {} (crc {:08x}) at offset {} as committed, voter {} in epoch {} the entry of epoch {} (crc {:08x})",
                        f.node, f.entry_epoch, f.digest, c.offset, c.node, c.node_epoch, c.entry_epoch, c.digest
                    ),
                    loss: false,
                    acks: None,
                });
            }
            Some(_) => {}
            None => {
                first.insert(c.offset, c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn committed(node: i32, node_epoch: i32, leader: bool, offset: i64, entry_epoch: i32, digest: u32) -> Committed {
        Committed { node, node_epoch, leader, offset, entry_epoch, digest }
    }

    #[test]
    fn one_offset_two_entries_is_a_violation_once() {
        let mut h = History::default();
        h.raft.committed = vec![committed(0, 1, true, 0, 1, 7), committed(1, 1, false, 0, 1, 7), committed(2, 2, false, 1, 1, 8)];
        let mut out = Vec::new();
        committed_entries_agree(&h, &mut out);
        assert!(out.is_empty(), "{out:?}");
        h.raft.committed.extend([committed(1, 3, true, 1, 3, 9), committed(0, 3, false, 1, 3, 9)]);
        committed_entries_agree(&h, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].offsets, vec![1]);
    }
}
