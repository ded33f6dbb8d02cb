//! group_owners: no partition is owned by two members of a group in one generation, and no
//! two members that are still members own it at the same moment (a zombie — lost, crashed or
//! stalled past its session — excepted: Kafka cannot stop it until it next hears from the
//! coordinator). Kafka's consumer-group contract; under cooperative-sticky (KIP-429) the
//! second half is the point of the protocol.

use super::group_history::tenures;
use crate::history::{GroupEventKind, History, Violation};
use std::collections::BTreeMap;

pub fn exclusive_owners(h: &History, out: &mut Vec<Violation>) {
    // One generation: different members' Owned sets must not intersect. A member is its
    // process: a static member restarting takes its instance's place under a new member id,
    // in the same generation (KIP-345).
    let mut by_gen: BTreeMap<(&str, i32, i32), (&str, &str)> = BTreeMap::new();
    for e in &h.group_events {
        let GroupEventKind::Owned { generation, member_id, partitions, .. } = &e.kind else { continue };
        for p in partitions {
            match by_gen.get(&(e.group.as_str(), *generation, *p)) {
                Some((other, other_id)) if *other != e.process.as_str() => out.push(violation(&e.topic, *p, e.at_ms, format!("group {} generation {generation}: partition {p} owned by {other} ({other_id}) and by {} ({member_id})", e.group, e.process))),
                _ => drop(by_gen.insert((e.group.as_str(), *generation, *p), (e.process.as_str(), member_id.as_str()))),
            }
        }
    }
    // In time: tenures of different live members never overlap.
    let ts = tenures(h);
    for (i, a) in ts.iter().enumerate() {
        for b in &ts[i + 1..] {
            if a.group != b.group || a.partition != b.partition || a.process == b.process || a.zombie || b.zombie {
                continue;
            }
            if a.to_ms.is_none_or(|end| end > b.from_ms) {
                out.push(violation(&a.topic, a.partition, b.from_ms, format!("group {}: {} owned partition {} (generation {}) from {} ms until {:?}, and {} took it at {} ms (generation {})", a.group, a.process, a.partition, a.generation, a.from_ms, a.to_ms, b.process, b.from_ms, b.generation)));
            }
        }
    }
}

fn violation(topic: &str, partition: i32, at_ms: u64, detail: String) -> Violation {
    Violation { checker: "group_owners", topic: topic.to_string(), partition, offsets: vec![], at_ms, detail, loss: false, acks: None }
}
