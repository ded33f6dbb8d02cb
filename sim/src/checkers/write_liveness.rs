//! Liveness of writes after healing: a broker that refuses every write once its faults are
//! gone (a lost producer state it never forgives, a partition that stays offline) keeps every
//! safety property and the final read, so only this checker sees it. It must never judge a
//! write made while a fault was active: the window opens half a healing phase after the last
//! fault was undone.

use crate::history::{History, Outcome, Violation, Write};
use std::collections::BTreeMap;

/// write-liveness: for each producer and each partition it wrote to from
/// `healed_at_ms + heal_ms / 2` on, at least one of those writes succeeded — acknowledged,
/// or for acks=0 (which hears nothing back) sent without error. A write the ACLs refused
/// (TOPIC_AUTHORIZATION_FAILED) is the authorizer's answer, not unavailability: not judged
/// (`authorized` judges what the ACLs let through).
pub fn write_liveness(h: &History, out: &mut Vec<Violation>) {
    let from = h.healed_at_ms.saturating_add(h.heal_ms / 2);
    // (producer, topic, partition) -> (writes invoked in the window, any succeeded, last one).
    let mut by: BTreeMap<(&str, &str, i32), (usize, bool, &Write)> = BTreeMap::new();
    let denied = format!("broker error {}:", broker_core::kafka::Code::TopicAuthorizationFailed.code());
    let refused = |w: &Write| matches!(&w.outcome, Outcome::Fail(e) if e.starts_with(&denied));
    for w in h.writes.iter().filter(|w| w.invoke_ms >= from && !refused(w)) {
        let e = by.entry((&w.process, &w.topic, w.partition)).or_insert((0, false, w));
        e.0 += 1;
        e.1 |= matches!(w.outcome, Outcome::Ok(_));
        e.2 = w;
    }
    for ((process, topic, partition), (n, ok, last)) in by {
        if ok {
            continue;
        }
        out.push(Violation {
            checker: "write_liveness",
            topic: topic.to_string(),
            partition,
            offsets: vec![],
            at_ms: last.complete_ms,
            detail: format!("{process}: none of {n} writes invoked from {from} ms (healed at {} ms + half of heal_ms {}) succeeded; the last: {:?}", h.healed_at_ms, h.heal_ms, last.outcome),
            loss: false,
            acks: None,
        });
    }
}
