//! Properties of what consumers received during the run.

use super::keyed::Keys;
use crate::history::{History, Read, Violation};
use std::collections::BTreeMap;

fn violation(checker: &'static str, r: &Read, offsets: Vec<i64>, detail: String) -> Violation {
    Violation { checker, topic: r.topic.clone(), partition: r.partition, offsets, at_ms: r.at_ms, detail, loss: false, acks: None }
}

/// read-above-hw: a record is only served below the high watermark of its response.
pub fn read_above_hw(h: &History, out: &mut Vec<Violation>) {
    for r in &h.reads {
        if r.offset >= r.high_watermark {
            out.push(violation("read_above_hw", r, vec![r.offset], format!("{} read offset {} with high watermark {}", r.process, r.offset, r.high_watermark)));
        }
    }
}

/// inconsistent-offsets: every read of an offset (and the final log) agrees on its value.
pub fn inconsistent_offsets(h: &History, out: &mut Vec<Violation>) {
    let acks_of: BTreeMap<&[u8], i16> = h.writes.iter().map(|w| (w.value.as_slice(), w.acks)).collect();
    let mut value_at: BTreeMap<(&str, i32, i64), &[u8]> = BTreeMap::new();
    for ((topic, partition), log) in &h.final_read {
        for (offset, value) in log {
            value_at.insert((topic, *partition, *offset), value);
        }
    }
    for r in &h.reads {
        match value_at.get(&(r.topic.as_str(), r.partition, r.offset)) {
            Some(v) if *v != r.value.as_slice() => out.push(Violation {
                // An offset that changed value means what was there first is gone: where the
                // scenario allows loss, this is how that loss shows to consumers.
                loss: true,
                // The value read first is the one that is gone: its write's acks say what was promised.
                acks: acks_of.get(r.value.as_slice()).copied(),
                ..violation(
                    "inconsistent_offsets",
                    r,
                    vec![r.offset],
                    format!("{} read {:?} at offset {}, elsewhere it holds {:?}", r.process, String::from_utf8_lossy(&r.value), r.offset, String::from_utf8_lossy(v)),
                )
            }),
            Some(_) => {}
            None => {
                value_at.insert((r.topic.as_str(), r.partition, r.offset), &r.value);
            }
        }
    }
}

/// dirty-read: every value a consumer received is in the final log. A read value that is
/// gone was either never committed (served too early) or committed and then lost; where the
/// scenario allows loss of that write's acks setting, the violation counts as allowed loss.
/// Offsets below the final log's start are skipped (retention may have removed them). In a
/// compacted topic a value read may since have been compacted away, when the cleaner could
/// remove it at all (a later write of its key: see `keyed`).
pub fn dirty_read(h: &History, out: &mut Vec<Violation>) {
    let keys = Keys::new(h);
    /// A partition's final log: its first offset and the values it holds.
    type Present<'a> = (i64, std::collections::BTreeSet<&'a [u8]>);
    let acks_of: BTreeMap<&[u8], i16> = h.writes.iter().map(|w| (w.value.as_slice(), w.acks)).collect();
    let mut present: BTreeMap<(&str, i32), Present> = BTreeMap::new();
    for ((topic, partition), log) in &h.final_read {
        let start = log.first().map_or(i64::MAX, |(o, _)| *o);
        present.insert((topic, *partition), (start, log.iter().map(|(_, v)| v.as_slice()).collect()));
    }
    for r in &h.reads {
        let key = (r.topic.clone(), r.partition);
        if h.final_errors.contains_key(&key) {
            continue; // liveness reports the unreadable partition
        }
        let (start, values) = match present.get(&(r.topic.as_str(), r.partition)) {
            Some((start, values)) => (*start, Some(values)),
            None => (i64::MAX, None),
        };
        if r.offset < start && values.is_some() {
            continue;
        }
        let cleaned = || keys.write(&r.topic, r.partition, &r.value).is_some_and(|w| keys.may_be_cleaned(w, r.offset));
        if values.is_none_or(|v| !v.contains(r.value.as_slice())) && !cleaned() {
            out.push(Violation {
                loss: true,
                acks: acks_of.get(r.value.as_slice()).copied(),
                ..violation("dirty_read", r, vec![r.offset], format!("{} read {:?} at offset {} (high watermark {}); it is not in the final log", r.process, String::from_utf8_lossy(&r.value), r.offset, r.high_watermark))
            });
        }
    }
}

/// Consecutive reads of one partition within one consumer session.
fn session_pairs(h: &History) -> Vec<(&Read, &Read)> {
    let mut last: BTreeMap<(&str, u32, &str, i32), &Read> = BTreeMap::new();
    let mut pairs = Vec::new();
    for r in &h.reads {
        let key = (r.process.as_str(), r.session, r.topic.as_str(), r.partition);
        if let Some(prev) = last.insert(key, r) {
            pairs.push((prev, r));
        }
    }
    pairs
}

/// nonmonotonic-poll: offsets a session receives from a partition strictly increase.
pub fn nonmonotonic_poll(h: &History, out: &mut Vec<Violation>) {
    for (a, b) in session_pairs(h) {
        if b.offset <= a.offset {
            out.push(violation("nonmonotonic_poll", b, vec![a.offset, b.offset], format!("{} received offset {} after {}", b.process, b.offset, a.offset)));
        }
    }
}

/// poll-skip: in assign mode a session receives every offset after the first, none skipped.
/// A compacted topic's log has gaps where the cleaner removed records, and replicas clean
/// independently (a later leader may still hold what an earlier one served without), so there
/// no skip is certain and none is judged; order is still `nonmonotonic_poll`'s.
pub fn poll_skip(h: &History, out: &mut Vec<Violation>) {
    for (a, b) in session_pairs(h) {
        if b.offset > a.offset + 1 && !h.compacted_topics.contains_key(&b.topic) && !h.transactional_topics().contains(b.topic.as_str()) {
            out.push(violation("poll_skip", b, vec![a.offset, b.offset], format!("{} jumped from offset {} to {}", b.process, a.offset, b.offset)));
        }
    }
}
