//! Properties across the replicas of a partition, read from every broker's disk at the end.

use crate::history::{History, Violation};
use std::collections::BTreeMap;

/// committed-consistent: below the high watermark of the final read (the committed records),
/// every replica that holds an offset holds the same value there as the final read. A replica
/// may lag (it holds fewer), never differ: a differing committed record on any replica is one
/// that replica would serve if it were elected.
pub fn committed_consistent(h: &History, out: &mut Vec<Violation>) {
    for (key, replicas) in &h.replica_logs {
        let Some(committed) = h.final_read.get(key) else { continue };
        let by_offset: BTreeMap<i64, &[u8]> = committed.iter().map(|(o, v)| (*o, v.as_slice())).collect();
        for (broker, log) in replicas {
            let differing: Vec<i64> = log.iter().filter(|(o, v)| by_offset.get(o).is_some_and(|c| *c != v.as_slice())).map(|(o, _)| *o).collect();
            if let Some(first) = differing.first() {
                out.push(Violation {
                    checker: "committed_consistent",
                    topic: key.0.clone(),
                    partition: key.1,
                    offsets: differing.iter().take(10).copied().collect(),
                    at_ms: 0,
                    detail: format!(
                        "{broker} holds {} committed offsets with other values than the final read, from offset {first}: {:?} instead of {:?}",
                        differing.len(),
                        String::from_utf8_lossy(log.iter().find(|(o, _)| o == first).map_or(&[][..], |(_, v)| v.as_slice())),
                        String::from_utf8_lossy(by_offset.get(first).copied().unwrap_or_default()),
                    ),
                    loss: false,
                    acks: None,
                });
            }
        }
    }
}

/// replica-readable: every replica's log opens and reads end to end once the brokers stop. A
/// log its own broker could not open is a replica that cannot serve or be elected; the
/// scenarios' faults (crashes, power loss, full or failing disks, all healed by then) never
/// justify one, and recovery must cut only what was never synced.
pub fn replica_readable(h: &History, out: &mut Vec<Violation>) {
    for (key, brokers) in &h.replica_errors {
        for (broker, why) in brokers {
            out.push(Violation {
                checker: "replica_readable",
                topic: key.0.clone(),
                partition: key.1,
                offsets: Vec::new(),
                at_ms: 0,
                detail: format!("{broker}'s log does not open: {why}"),
                loss: false,
                acks: None,
            });
        }
    }
}
