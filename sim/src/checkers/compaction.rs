//! compaction: in a compacted topic, the final log holds each key's latest value. For every
//! key, the last record of that key in the final log is its last acknowledged write (the one
//! acknowledged at the highest offset), or a later write of it whose outcome was not known;
//! and a key may be missing only when its last such write is a tombstone whose
//! `delete.retention.ms` had passed by the end of the final read.
//!
//! What it flags, each for certain:
//! - the last record of a key sits *below* the key's last acknowledged write: that write is
//!   gone and an older value (or an older delete) shows instead — the cleaner kept the wrong
//!   record, or the write was lost (a loss: allowed where the scenario allows loss);
//! - the last record of a key is a write acknowledged at another offset (an old value
//!   reappearing later in the log);
//! - a key whose last acknowledged write is in no record at all, unless a tombstone of it
//!   (that write, or one with an unknown outcome) could have reached its retention (a loss,
//!   or a tombstone dropped early).
//!
//! Left to others: that record offsets increase in a compacted log is `offsets_dense`'s; a
//! record at its acknowledged offset holding another value is `acknowledged_durable`'s; a
//! refused write that landed is `definite_failure`'s.
//!
//! Not checked: "no record of a key survives below a newer record of it that sat in a segment
//! the cleaner had already passed". The history does not know what any cleaner pass covered
//! (passes run on each broker's own copy, unseen by clients), and even a broker-side record of
//! passes would not make it sound: a follower keeps its own uncleaned prefix and fetches a
//! leader's cleaned suffix, and a truncation can put uncleaned bytes back under a clean point,
//! so a stale record below a newer one is legitimate in a replicated log.

use super::keyed::Keys;
use crate::history::{History, Outcome, Violation, Write};
use std::collections::{BTreeMap, BTreeSet};

pub fn compaction(h: &History, out: &mut Vec<Violation>) {
    let keys = Keys::new(h);
    for ((topic, partition), log) in &h.final_read {
        if keys.compacted(topic).is_none() {
            continue;
        }
        // The last record of each key in the final log.
        let mut last: BTreeMap<&[u8], (i64, &Write)> = BTreeMap::new();
        for (offset, value) in log {
            if let Some(w) = keys.write(topic, *partition, value) {
                if let Some(k) = w.key.as_deref() {
                    last.insert(k, (*offset, w));
                }
            }
        }
        // The last acknowledged write of each key: highest offset, the later one on a tie (an
        // offset reused after a loss).
        let mut acked: BTreeMap<&[u8], (i64, &Write)> = BTreeMap::new();
        for w in h.writes.iter().filter(|w| &w.topic == topic && w.partition == *partition) {
            let (Some(k), Some(o)) = (w.key.as_deref(), w.acknowledged()) else { continue };
            if acked.get(k).is_none_or(|(a, aw)| (o, w.complete_ms) >= (*a, aw.complete_ms)) {
                acked.insert(k, (o, w));
            }
        }
        let all: BTreeSet<&[u8]> = last.keys().chain(acked.keys()).copied().collect();
        for k in all {
            let v = |detail: String, offsets: Vec<i64>, loss: Option<&Write>| Violation {
                checker: "compaction",
                topic: topic.clone(),
                partition: *partition,
                offsets,
                at_ms: 0,
                detail: format!("key {:?}: {detail}", String::from_utf8_lossy(k)),
                loss: loss.is_some(),
                acks: loss.map(|w| w.acks),
            };
            match (last.get(k), acked.get(k)) {
                (Some(&(lo, lw)), Some(&(ao, aw))) if lo < ao => out.push(v(format!("the final log's last record is {} at {lo}, below {} acknowledged at {ao}", name(lw), name(aw)), vec![lo, ao], Some(aw))),
                // Else it is at its own offset, or its outcome was unknown, or acks=0, or it was
                // refused (definite_failure's).
                (Some(&(lo, lw)), _) => {
                    if let Some(o) = lw.acknowledged().filter(|&o| o != lo) {
                        out.push(v(format!("the final log's last record is {} at {lo}, acknowledged at {o}", name(lw)), vec![lo, o], None));
                    }
                }
                (None, Some(&(ao, aw))) => {
                    let may_be_deleted = |t: &Write| t.tombstone && keys.tombstone_may_be_gone(t);
                    let unknown_tombstones = h.writes.iter().filter(|t| &t.topic == topic && t.partition == *partition && t.key.as_deref() == Some(k) && t.acknowledged().is_none() && !matches!(t.outcome, Outcome::Fail(_)));
                    if may_be_deleted(aw) || unknown_tombstones.clone().any(may_be_deleted) {
                        continue;
                    }
                    let detail = match aw.tombstone {
                        true => format!("gone from the final log, though its last acknowledged write, {} at {ao}, is a tombstone written at {} ms and delete.retention.ms had not passed when the final read ended ({} ms)", name(aw), aw.invoke_ms, h.final_read_ms),
                        false => format!("gone from the final log; its last acknowledged write is {} at {ao}", name(aw)),
                    };
                    out.push(v(detail, vec![ao], Some(aw)));
                }
                (None, None) => {}
            }
        }
    }
}

/// A write as a violation names it.
fn name(w: &Write) -> String {
    let what = if w.tombstone { "tombstone" } else { "value" };
    format!("{what} {:?} by {}", String::from_utf8_lossy(&w.value), w.process)
}
