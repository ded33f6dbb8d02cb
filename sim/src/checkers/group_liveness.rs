//! group_liveness: after healing, a group settles. When the members stop, every partition of
//! the topic is owned by a member, and in the second half of the healing phase (membership no
//! longer changing) the group does not rebalance more than once: a rebalance storm is a
//! failure. VOPR's two phases: safety under faults, then liveness once they are gone.

use super::group_history::{groups, partitions, tenures};
use crate::history::{GroupEventKind, History, Violation};
use std::collections::BTreeSet;

/// New generations allowed in the second half of the healing phase.
const late_generations_max: usize = 1;

pub fn group_settles(h: &History, out: &mut Vec<Violation>) {
    let ts = tenures(h);
    for (group, topic) in groups(h) {
        // A member still holding a partition at the end owns it: every member is polling by
        // then, so one that had been expired has heard so (and lost it).
        let owned: BTreeSet<i32> = ts.iter().filter(|t| t.group == group && t.to_ms.is_none()).map(|t| t.partition).collect();
        for p in partitions(h, &topic) {
            if !owned.contains(&p) {
                out.push(violation(&topic, p, h.members_until_ms, format!("group {group}: no member owns partition {p} when the members stop")));
            }
        }
        let late_from = h.healed_at_ms + h.heal_ms / 2;
        let late: BTreeSet<i32> = h.group_events.iter().filter(|e| e.group == group && e.at_ms >= late_from).filter_map(|e| match e.kind {
            GroupEventKind::Joined { generation, .. } => Some(generation),
            _ => None,
        }).collect();
        if late.len() > late_generations_max {
            out.push(violation(&topic, -1, late_from, format!("group {group}: {} rebalances (generations {late:?}) after {late_from} ms, with membership unchanged", late.len())));
        }
    }
}

fn violation(topic: &str, partition: i32, at_ms: u64, detail: String) -> Violation {
    Violation { checker: "group_liveness", topic: topic.to_string(), partition, offsets: vec![], at_ms, detail, loss: false, acks: None }
}
