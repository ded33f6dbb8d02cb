//! group_commits: a group's committed offset of a partition never moves back (an acknowledged
//! commit that follows another in real time carries an offset at least as high), an
//! acknowledged commit survives every fault the scenario promises to survive (the offset read
//! after healing is at least the highest acknowledged), and no committed offset lies past the
//! log's end. Commits are acks=all writes to `__consumer_offsets`, answered once replicated.

use super::group_history::{acked_commits, groups, partitions};
use crate::history::{History, Violation};

pub fn commits_durable(h: &History, out: &mut Vec<Violation>) {
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

fn violation(topic: &str, partition: i32, at_ms: u64, detail: String, loss: bool) -> Violation {
    Violation { checker: "group_commits", topic: topic.to_string(), partition, offsets: vec![], at_ms, detail, loss, acks: loss.then_some(-1) }
}
