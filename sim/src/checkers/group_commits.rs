//! group_commits: a group's committed offset of a partition never moves back (an acknowledged
//! commit that follows another in real time carries an offset at least as high), an
//! acknowledged commit survives every fault the scenario promises to survive (the offset read
//! after healing is at least the highest acknowledged), and no committed offset lies past the
//! log's end. Commits are acks=all writes to `__consumer_offsets`, answered once replicated.
//! And a commit is fenced by its generation: none carrying a generation the group had already
//! left when it was sent is acknowledged (Kafka answers ILLEGAL_GENERATION, or
//! UNKNOWN_MEMBER_ID to a member no longer in it), whether it comes from a zombie or from a
//! current member whose commit raced a rebalance. A KIP-848 member's epoch is its own (members
//! of one group reconcile to the group's epoch each at its pace), so there the fence is per
//! member: a commit carrying an epoch older than one its member already owned partitions at.

use super::group_history::{acked_commits, groups, partitions};
use crate::history::{GroupEventKind, History, Outcome, Violation};
use std::collections::BTreeMap;

pub fn commits_durable(h: &History, out: &mut Vec<Violation>) {
    fenced_by_generation(h, out);
    for (group, topic) in groups(h) {
        if let Some(why) = h.final_commit_errors.get(&group) {
            out.push(violation(&topic, -1, h.members_until_ms, format!("group {group}: committed offsets unreadable after healing: {why}"), false));
            continue;
        }
        for p in partitions(h, &topic) {
            let acked = acked_commits(h, &group, &topic, p);
            for (i, (a, ca)) in acked.iter().enumerate() {
                for (b, cb) in &acked[i + 1..] {
                    let (first, second) = if ca.complete_ms < cb.invoke_ms { ((a, ca), (b, cb)) } else if cb.complete_ms < ca.invoke_ms { ((b, cb), (a, ca)) } else { continue };
                    if second.0 < first.0 {
                        let detail = format!("group {group}: commit of {} by {} (generation {}) acknowledged at {} ms, then {} by {} (generation {}) acknowledged at {} ms: the committed offset moved back", first.0, first.1.process, first.1.generation, first.1.complete_ms, second.0, second.1.process, second.1.generation, second.1.complete_ms);
                        out.push(violation(&topic, p, second.1.complete_ms, detail, false));
                    }
                }
            }
            let highest = acked.iter().max_by_key(|(o, c)| (*o, c.complete_ms));
            let fin = h.final_commits.get(&(group.clone(), topic.clone(), p)).copied();
            if let Some((o, c)) = highest {
                if fin.is_none_or(|f| f < *o) {
                    out.push(violation(&topic, p, c.complete_ms, format!("group {group}: commit of {o} by {} acknowledged at {} ms, but the committed offset after healing is {fin:?}", c.process, c.complete_ms), true));
                }
            }
            let end = h.final_read.get(&(topic.clone(), p)).and_then(|log| log.last()).map_or(0, |(o, _)| o + 1);
            if let Some(f) = fin.filter(|f| *f > end && !h.final_errors.contains_key(&(topic.clone(), p))) {
                out.push(violation(&topic, p, h.members_until_ms, format!("group {group}: committed offset {f} is past the log end {end}"), true));
            }
        }
    }
}

/// A member owning partitions of generation G' has had its SyncGroup answered, which the
/// coordinator does only once G' is stored in `__consumer_offsets` (acks=all): from then on the
/// group's generation is at least G', every coordinator after a failover included, so a commit
/// of an older generation sent after that moment must be refused. (A JoinGroup answer is not
/// such evidence: a coordinator failing before storing the generation comes back without it.)
/// Commits with no generation (-1: a consumer outside group management, taken by an Empty
/// group) are not fenced. Under KIP-848 the same holds member by member: a member owning
/// partitions at epoch E heard E in a heartbeat answer, sent once E was stored.
fn fenced_by_generation(h: &History, out: &mut Vec<Violation>) {
    // Per group (per member of a KIP-848 group): each generation owned in, and when first.
    let scope = |group: &str, member: &str| if h.kip848_groups.contains(group) { member.to_string() } else { String::new() };
    let mut stored: BTreeMap<(&str, String), BTreeMap<i32, u64>> = BTreeMap::new();
    for e in &h.group_events {
        if let GroupEventKind::Owned { generation, member_id, .. } = &e.kind {
            let first = stored.entry((e.group.as_str(), scope(&e.group, member_id))).or_default().entry(*generation).or_insert(e.at_ms);
            *first = (*first).min(e.at_ms);
        }
    }
    for c in h.commits.iter().filter(|c| c.generation >= 0 && matches!(c.outcome, Outcome::Ok(_))) {
        let Some(gens) = stored.get(&(c.group.as_str(), scope(&c.group, &c.member_id))) else { continue };
        let newer = gens.range(c.generation + 1..).filter(|(_, at)| **at < c.invoke_ms).min_by_key(|(_, at)| **at);
        if let Some((g, at)) = newer {
            let p = c.offsets.first().map_or(-1, |(p, _)| *p);
            let detail = format!("group {}: commit of {:?} by {} ({}, generation {}) sent at {} ms and acknowledged at {} ms, though generation {g} was in place at {at} ms: a stale generation's commit was taken", c.group, c.offsets, c.process, c.member_id, c.generation, c.invoke_ms, c.complete_ms);
            out.push(violation(&c.topic, p, c.complete_ms, detail, false));
        }
    }
}

fn violation(topic: &str, partition: i32, at_ms: u64, detail: String, loss: bool) -> Violation {
    Violation { checker: "group_commits", topic: topic.to_string(), partition, offsets: vec![], at_ms, detail, loss, acks: loss.then_some(-1) }
}
