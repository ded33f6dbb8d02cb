//! Properties of writes: acknowledged ones are durable in the final log and visible to
//! consumers that read past them; definitely refused ones are nowhere; a retry the log holds
//! was not refused.

use super::keyed::Keys;
use crate::history::{acks_name, History, Outcome, Violation, Write};
use std::collections::{BTreeMap, BTreeSet};

fn acked(h: &History) -> impl Iterator<Item = (&Write, i64)> {
    h.writes.iter().filter_map(|w| w.acknowledged().map(|offset| (w, offset)))
}

/// acknowledged-durable: the final read holds every acknowledged write at its offset.
///
/// In a compacted topic an acknowledged write may be *missing* (never replaced: compaction
/// keeps offsets) when the cleaner could have removed it — a later write of its key is in the
/// final log, or a tombstone of it may be (see `keyed`); whether the key's latest survived is
/// `compaction`'s to judge.
pub fn acknowledged_durable(h: &History, out: &mut Vec<Violation>) {
    let keys = Keys::new(h);
    for (w, offset) in acked(h) {
        let key = (w.topic.clone(), w.partition);
        if h.final_errors.contains_key(&key) {
            continue; // liveness reports the unreadable partition
        }
        let log = h.final_read.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        let found = log.binary_search_by_key(&offset, |(o, _)| *o).ok().map(|i| &log[i].1);
        if found.is_none() && keys.may_be_cleaned(w, offset) {
            continue;
        }
        if found != Some(&w.value) {
            let what = match found {
                None => "missing".to_string(),
                Some(v) => format!("holds {:?} instead", String::from_utf8_lossy(v)),
            };
            out.push(Violation {
                checker: "acknowledged_durable",
                topic: w.topic.clone(),
                partition: w.partition,
                offsets: vec![offset],
                at_ms: w.complete_ms,
                detail: format!("write {:?} by {} (acks={}) acknowledged at offset {offset}: {what}", String::from_utf8_lossy(&w.value), w.process, acks_name(w.acks)),
                loss: true,
                acks: Some(w.acks),
            });
        }
    }
}

/// lost-write: if any consumer read an offset beyond an acknowledged write's, some consumer
/// must have read that write. In a compacted topic the cleaner may have removed it before any
/// consumer got there, when it could remove it at all (see `keyed`).
pub fn lost_write(h: &History, out: &mut Vec<Violation>) {
    let keys = Keys::new(h);
    let mut max_read: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    let mut seen: BTreeSet<(&str, i32, &[u8])> = BTreeSet::new();
    for r in &h.reads {
        let m = max_read.entry((&r.topic, r.partition)).or_insert(-1);
        *m = (*m).max(r.offset);
        seen.insert((&r.topic, r.partition, &r.value));
    }
    for (w, offset) in acked(h) {
        let beyond = max_read.get(&(w.topic.as_str(), w.partition)).is_some_and(|&m| m > offset);
        if beyond && !seen.contains(&(w.topic.as_str(), w.partition, w.value.as_slice())) && !keys.may_be_cleaned(w, offset) {
            out.push(Violation {
                checker: "lost_write",
                topic: w.topic.clone(),
                partition: w.partition,
                offsets: vec![offset],
                at_ms: w.complete_ms,
                detail: format!("write {:?} acknowledged at {offset} was never read, though consumers read past it", String::from_utf8_lossy(&w.value)),
                loss: true,
                acks: Some(w.acks),
            });
        }
    }
}

/// definite-failure: a write the broker refused with a definite error ("certainly not
/// appended") is not in the final log. The client moves on as if it never happened (an
/// idempotent producer reuses nothing of it), so a refused write that lands anyway is a
/// record its producer believes absent.
pub fn definite_failure(h: &History, out: &mut Vec<Violation>) {
    let offset_of = final_offsets(h);
    for w in &h.writes {
        let Outcome::Fail(why) = &w.outcome else { continue };
        if let Some(offset) = offset_of.get(&(w.topic.as_str(), w.partition, w.value.as_slice())) {
            out.push(Violation {
                checker: "definite_failure",
                topic: w.topic.clone(),
                partition: w.partition,
                offsets: vec![*offset],
                at_ms: w.complete_ms,
                detail: format!("write {:?} by {} was refused ({why}) but is in the final log at offset {offset}", String::from_utf8_lossy(&w.value), w.process),
                loss: false,
                acks: Some(w.acks),
            });
        }
    }
}

/// refused-retry: an idempotent producer's retry is not refused for its sequence number when an
/// earlier attempt of it is in the log. The producer keeps at most five batches in flight
/// (`client::producer::in_flight_max`), so a retry repeats one of its last five batches of the
/// partition, and Kafka's producer state remembers exactly those (`batches_remembered`): the
/// broker holding the batch answers the retry with its offsets. A refusal
/// (OUT_OF_ORDER_SEQUENCE_NUMBER) is the broker forgetting a batch it holds — the producer is
/// told its batch failed, and its next batch restarts under a new producer id. The write's
/// outcome is unknown to its client, so `definite_failure` cannot see it; the final log can.
///
/// Only a refusal by a broker that had moved *past* the batch counts (it names a later
/// sequence than the batch's): a refusal for a gap comes from a broker lacking the batches
/// before it — a leader deposed without knowing it, as Kafka's is while it cannot reach the
/// controller — and an earlier attempt may sit in its successor's log and be committed there.
/// Kafka refuses alike; seed 63093 of replicated-fsync (regression
/// `refused-retry-by-a-deposed-leader`) is such a refusal, and not a violation.
pub fn refused_retry(h: &History, out: &mut Vec<Violation>) {
    let offset_of = final_offsets(h);
    for w in h.writes.iter().filter(|w| w.idempotent && w.retry_refused) {
        if let Some(offset) = offset_of.get(&(w.topic.as_str(), w.partition, w.value.as_slice())) {
            out.push(Violation {
                checker: "refused_retry",
                topic: w.topic.clone(),
                partition: w.partition,
                offsets: vec![*offset],
                at_ms: w.complete_ms,
                detail: format!("write {:?} by {} is in the final log at offset {offset}, but the retry of its batch was refused for its sequence number ({})", String::from_utf8_lossy(&w.value), w.process, outcome_text(&w.outcome)),
                loss: false,
                acks: Some(w.acks),
            });
        }
    }
}

/// Where each value of the final read is, by partition.
fn final_offsets(h: &History) -> BTreeMap<(&str, i32, &[u8]), i64> {
    let mut offset_of = BTreeMap::new();
    for ((topic, partition), log) in &h.final_read {
        for (offset, value) in log {
            offset_of.insert((topic.as_str(), *partition, value.as_slice()), *offset);
        }
    }
    offset_of
}

fn outcome_text(o: &Outcome) -> &str {
    match o {
        Outcome::Ok(_) => "acknowledged",
        Outcome::Fail(why) | Outcome::Unknown(why) => why,
    }
}
