//! Properties of the final read of every partition, after healing.

use crate::history::{History, Violation};
use std::collections::BTreeMap;

/// offsets-dense: consecutive records of the final log have consecutive offsets. In a
/// compacted topic records the cleaner removed leave gaps (batches keep their offsets, and
/// still tile them, but hold fewer records), so there it is only that offsets increase.
pub fn offsets_dense(h: &History, out: &mut Vec<Violation>) {
    for ((topic, partition), log) in &h.final_read {
        // Transaction markers take offsets no reader is given.
        let compacted = h.compacted_topics.contains_key(topic) || h.transactional_topics().contains(topic.as_str());
        for w in log.windows(2) {
            if (compacted && w[1].0 <= w[0].0) || (!compacted && w[1].0 != w[0].0 + 1) {
                out.push(Violation {
                    checker: "offsets_dense",
                    topic: topic.clone(),
                    partition: *partition,
                    offsets: vec![w[0].0, w[1].0],
                    at_ms: 0,
                    detail: format!("offset {} is followed by {}", w[0].0, w[1].0),
                    loss: false,
                    acks: None,
                });
            }
        }
    }
}

/// duplicate: a value written by an idempotent producer (values are unique per write) appears
/// at most once in the final log. Non-idempotent retries may legitimately duplicate.
pub fn duplicate(h: &History, out: &mut Vec<Violation>) {
    let idempotent: std::collections::BTreeSet<&[u8]> = h.writes.iter().filter(|w| w.idempotent).map(|w| w.value.as_slice()).collect();
    for ((topic, partition), log) in &h.final_read {
        let mut first: BTreeMap<&[u8], i64> = BTreeMap::new();
        for (offset, value) in log.iter().filter(|(_, v)| idempotent.contains(v.as_slice())) {
            if let Some(&earlier) = first.get(value.as_slice()) {
                out.push(Violation {
                    checker: "duplicate",
                    topic: topic.clone(),
                    partition: *partition,
                    offsets: vec![earlier, *offset],
                    at_ms: 0,
                    detail: format!("value {:?} appears at {earlier} and {offset}", String::from_utf8_lossy(value)),
                    loss: false,
                    acks: None,
                });
            } else {
                first.insert(value, *offset);
            }
        }
    }
}

/// liveness: after the healing phase every partition could be read in full.
pub fn liveness(h: &History, out: &mut Vec<Violation>) {
    for ((topic, partition), why) in &h.final_errors {
        out.push(Violation {
            checker: "liveness",
            topic: topic.clone(),
            partition: *partition,
            offsets: vec![],
            at_ms: 0,
            detail: format!("not readable after healing: {why}"),
            loss: false,
            acks: None,
        });
    }
}
