//! share_delivery: what a share group (KIP-932) promises its members, record by record. A
//! record's deliveries carry delivery counts that only go up (each is written before the member
//! hears of it, so a leader taking over counts on from there) and never pass the brokers'
//! delivery-count limit; once an acceptance or rejection of a record was taken (the broker said
//! so), the record is never handed to anyone again, and it is taken at most once. After
//! healing, every surviving acknowledged record was handed to some member, and every record
//! first handed out in time ended: accepted, rejected, or delivered to the limit (archived) —
//! or an acceptance or rejection after its last delivery got no answer that could say, or
//! enough fetches after it got none (each may have delivered it unseen) to reach the limit.

use crate::history::{History, ShareDelivery, Violation};
use std::collections::BTreeMap;

pub fn share_delivery(h: &History, out: &mut Vec<Violation>) {
    for (group, topic) in &h.share_groups {
        let mut deliveries: BTreeMap<(i32, i64), Vec<&ShareDelivery>> = BTreeMap::new();
        for d in h.share_deliveries.iter().filter(|d| &d.group == group) {
            deliveries.entry((d.partition, d.offset)).or_default().push(d);
        }
        // Acceptances and rejections: those taken, and those that may have been.
        let mut ended: BTreeMap<(i32, i64), Vec<(u64, &str, &str)>> = BTreeMap::new();
        let mut maybe: BTreeMap<(i32, i64), Vec<u64>> = BTreeMap::new();
        for a in h.share_acks.iter().filter(|a| &a.group == group && matches!(a.kind, "accept" | "reject" | "gap")) {
            match a.outcome {
                "taken" => ended.entry((a.partition, a.offset)).or_default().push((a.at_ms, a.kind, a.process.as_str())),
                "unknown" => maybe.entry((a.partition, a.offset)).or_default().push(a.at_ms),
                _ => {}
            }
        }
        for (&(p, offset), ds) in &deliveries {
            let v = |at_ms, detail: String| Violation { checker: "share_delivery", topic: topic.clone(), partition: p, offsets: vec![offset], at_ms, detail: format!("group {group}: {detail}"), loss: false, acks: None };
            for w in ds.windows(2) {
                if w[1].delivery_count <= w[0].delivery_count {
                    out.push(v(w[1].at_ms, format!("offset {offset} delivered to {} with delivery count {} after {} had it with count {}: counts must go up", w[1].process, w[1].delivery_count, w[0].process, w[0].delivery_count)));
                }
            }
            if let Some(d) = ds.iter().find(|d| d.delivery_count < 1 || d.delivery_count > h.share_delivery_limit) {
                out.push(v(d.at_ms, format!("offset {offset} delivered to {} with delivery count {}, outside 1..={}", d.process, d.delivery_count, h.share_delivery_limit)));
            }
            let Some(acks) = ended.get(&(p, offset)) else { continue };
            if acks.len() > 1 {
                out.push(v(acks[1].0, format!("offset {offset} was taken as ended twice: {} by {} and {} by {}", acks[0].1, acks[0].2, acks[1].1, acks[1].2)));
            }
            // (At the same ms too: a record taken as ended is never acquired again, so no answer
            // carrying it can come after the acceptance's.)
            if let Some(d) = ds.iter().find(|d| d.at_ms >= acks[0].0 && !(d.process == acks[0].2 && d.at_ms == acks[0].0)) {
                out.push(v(d.at_ms, format!("offset {offset} handed to {} at {} ms (count {}) after {}'s {} of it was taken at {} ms", d.process, d.at_ms, d.delivery_count, acks[0].2, acks[0].1, acks[0].0)));
            }
        }
        liveness(h, group, topic, &deliveries, &ended, &maybe, out);
    }
}

/// After healing: every surviving acknowledged record reached a member, and every record first
/// handed out early enough ended.
fn liveness(h: &History, group: &str, topic: &str, deliveries: &BTreeMap<(i32, i64), Vec<&ShareDelivery>>, ended: &BTreeMap<(i32, i64), Vec<(u64, &str, &str)>>, maybe: &BTreeMap<(i32, i64), Vec<u64>>, out: &mut Vec<Violation>) {
    // Members stop at `members_until_ms`; what came a quarter of the healing phase before had
    // time to be handed out (and released records to come back to the limit).
    let due_ms = h.members_until_ms.saturating_sub(h.heal_ms / 4);
    let v = |p, offset, at_ms, detail: String| Violation { checker: "share_delivery", topic: topic.to_string(), partition: p, offsets: vec![offset], at_ms, detail: format!("group {group}: {detail}"), loss: false, acks: None };
    for w in h.writes.iter().filter(|w| w.topic == topic && w.complete_ms < due_ms) {
        let Some(offset) = w.acknowledged() else { continue };
        let survives = h.final_read.get(&(w.topic.clone(), w.partition)).is_some_and(|log| log.binary_search_by_key(&offset, |(o, _)| *o).is_ok_and(|i| log[i].1 == w.value));
        if survives && !deliveries.contains_key(&(w.partition, offset)) {
            out.push(v(w.partition, offset, w.complete_ms, format!("the record at offset {offset} (acknowledged at {} ms) was never handed to a member", w.complete_ms)));
        }
    }
    for (&(p, offset), ds) in deliveries {
        let (first_ms, last_ms) = (ds[0].at_ms, ds[ds.len() - 1].at_ms);
        let at_limit = ds.iter().any(|d| d.delivery_count >= h.share_delivery_limit);
        // An acceptance after the last delivery whose answer never came may have ended it; so
        // may fetches whose answers never came, each a delivery no member saw, up to the limit.
        let unseen = h.share_unanswered.iter().filter(|(g, q, t)| g == group && *q == p && *t >= last_ms).count();
        let last_count = ds[ds.len() - 1].delivery_count as usize;
        let maybe_ended = maybe.get(&(p, offset)).is_some_and(|ts| ts.iter().any(|t| *t >= last_ms)) || last_count + unseen >= h.share_delivery_limit as usize;
        if first_ms < due_ms && !ended.contains_key(&(p, offset)) && !at_limit && !maybe_ended {
            out.push(v(p, offset, first_ms, format!("offset {offset}, first handed out at {first_ms} ms, never ended: not accepted, not rejected, and delivered {} times (limit {})", ds.len(), h.share_delivery_limit)));
        }
    }
}
