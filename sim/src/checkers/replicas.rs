//! Properties across the replicas of a partition, read from every broker's disk at the end.

use super::keyed::Keys;
use crate::history::{History, Violation};
use std::collections::BTreeMap;

/// committed-consistent: below the high watermark of the final read (the committed records),
/// every replica that holds an offset holds the same value there as the final read. A replica
/// may lag (it holds fewer), never differ: a differing committed record on any replica is one
/// that replica would serve if it were elected.
///
/// Replicas of a compacted topic clean their own copies, each at its own pace, so an offset
/// one holds may be gone from another, and the comparison above only covers offsets both
/// hold. Below the final log's last offset (committed) it also compares what compaction must
/// keep alike (`compacted_consistent`): any offset two replicas hold has one value, and a
/// replica that reaches a key's latest record in the final read has that record as the key's
/// latest too — or, for a tombstone whose retention was up when the brokers stopped, nothing.
pub fn committed_consistent(h: &History, out: &mut Vec<Violation>) {
    let keys = Keys::new(h);
    for (key, replicas) in &h.replica_logs {
        let Some(committed) = h.final_read.get(key) else { continue };
        if keys.compacted(&key.0).is_some() {
            compacted_consistent(&keys, key, committed, replicas, h.replica_logs_ms, out);
        }
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

/// The compacted topic's extra comparisons (see [`committed_consistent`]).
fn compacted_consistent(keys: &Keys, (topic, partition): &(String, i32), committed: &[(i64, Vec<u8>)], replicas: &BTreeMap<String, Vec<(i64, Vec<u8>)>>, replica_logs_ms: u64, out: &mut Vec<Violation>) {
    let Some(&(bound, _)) = committed.last() else { return };
    let v = |offsets: Vec<i64>, detail: String| Violation { checker: "committed_consistent", topic: topic.clone(), partition: *partition, offsets, at_ms: 0, detail, loss: false, acks: None };
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // Any offset two replicas hold has one value (the final read's are compared above).
    let mut first_holder: BTreeMap<i64, (&str, &[u8])> = BTreeMap::new();
    for (broker, log) in replicas {
        for (o, value) in log.iter().filter(|(o, _)| *o <= bound) {
            match first_holder.get(o) {
                Some((other, v0)) if *v0 != value.as_slice() => {
                    out.push(v(vec![*o], format!("{broker} holds {:?} at committed offset {o}, {other} holds {:?}", show(value), show(v0))));
                }
                Some(_) => {}
                None => {
                    first_holder.insert(*o, (broker, value));
                }
            }
        }
    }
    // A replica holding a key's latest committed record (it reaches that far) has it as the
    // key's latest: cleaning only ever drops records a later one of their key supersedes.
    let latest = |log: &'_ [(i64, Vec<u8>)]| -> BTreeMap<&[u8], i64> {
        log.iter().filter(|(o, _)| *o <= bound).filter_map(|(o, value)| Some((keys.key_of(topic, *partition, value)?, *o))).collect()
    };
    let want = latest(committed);
    for (broker, log) in replicas {
        let reach = log.last().map_or(-1, |(o, _)| *o);
        let have = latest(log);
        for (k, &o) in want.iter().filter(|(_, &o)| o <= reach) {
            let mine = have.get(k).copied();
            // Each replica drops a tombstone on its own pass once its retention is up: by the
            // time the brokers stopped, this one may have and the final read's leader not yet.
            let dropped = || committed.iter().find(|(c, _)| *c == o).and_then(|(_, value)| keys.write(topic, *partition, value)).is_some_and(|w| keys.tombstone_may_be_gone_by(w, replica_logs_ms));
            if mine != Some(o) && !(mine.is_none() && dropped()) {
                let what = mine.map_or("missing".to_string(), |m| format!("at {m}"));
                out.push(v(vec![o], format!("key {:?}: its latest committed record is at {o} in the final read, {broker}'s (which reaches {reach}) is {what}", show(k))));
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
