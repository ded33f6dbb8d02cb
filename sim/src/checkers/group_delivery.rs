//! group_delivery: at-least-once through a group. A member taking a partition over starts at
//! the group's committed offset: never past any commit invoked before (that would skip
//! records), never below a commit acknowledged before it joined that generation (that would be
//! a lost commit) — unless a commit whose outcome its committer never learned (timed out, the
//! connection broke) holds that lower offset: such a request can reach the coordinator after a
//! later one, on the connection the committer gave up, and Kafka writes offsets last writer
//! wins, with no order check (issue 26, group-commit-lag seed 65804). And every acknowledged
//! record that survives in the final log is delivered to some member, once the group had time
//! after healing to read it.

use super::group_history::{acked_commits, groups};
use crate::history::{GroupEventKind, History, Outcome, Violation};
use std::collections::BTreeSet;

pub fn at_least_once(h: &History, out: &mut Vec<Violation>) {
    for (group, topic) in groups(h) {
        starts(h, &group, &topic, out);
        delivered(h, &group, &topic, out);
    }
}

/// Where each member began each partition it was given.
fn starts(h: &History, group: &str, topic: &str, out: &mut Vec<Violation>) {
    for e in h.group_events.iter().filter(|e| e.group == group) {
        let GroupEventKind::Owned { generation, starts, .. } = &e.kind else { continue };
        let joined = h.group_events.iter().filter(|j| j.process == e.process && j.at_ms <= e.at_ms).filter_map(|j| match &j.kind {
            GroupEventKind::Joined { generation: g, .. } if g == generation => Some(j.at_ms),
            _ => None,
        });
        let joined_ms = joined.last().unwrap_or(e.at_ms);
        for (p, start) in starts {
            let invoked = h.commits.iter().filter(|c| c.group == group && c.invoke_ms <= e.at_ms && !matches!(c.outcome, Outcome::Fail(_))).filter_map(|c| c.offsets.iter().find(|(q, _)| q == p).map(|(_, o)| *o)).max().unwrap_or(0);
            if *start > invoked {
                out.push(violation(topic, *p, e.at_ms, format!("group {group}: {} started partition {p} at {start} in generation {generation}, past every commit made before ({invoked}): records skipped", e.process), false));
            }
            let acked: Vec<(i64, i32)> = acked_commits(h, group, topic, *p).into_iter().filter(|(_, c)| c.complete_ms < joined_ms).map(|(o, c)| (o, c.generation)).collect();
            // The generation a late commit must carry to be written after every acknowledged
            // one above the start: the coordinator takes only the group's current generation.
            let above = acked.iter().filter(|(o, _)| o > start).map(|(_, g)| *g).max();
            let explained = above.is_some_and(|g| late_unknown_commit(h, group, topic, *p, *start, joined_ms, g..=*generation));
            if let Some(a) = acked.iter().map(|(o, _)| *o).max().filter(|a| start < a && !explained) {
                out.push(violation(topic, *p, e.at_ms, format!("group {group}: {} started partition {p} at {start} in generation {generation}, below the commit of {a} acknowledged before it joined", e.process), true));
            }
        }
    }
}

/// Whether a commit of `offset` for partition `p` whose outcome was never learned, of a
/// generation in `generations`, was invoked before `joined_ms`: it may have landed after every
/// acknowledged one (a request left on a connection its client gave up reaches the coordinator
/// late, and Kafka applies offset commits in the order they arrive, whatever offsets they
/// carry) — but only at the group's generation then, so at least the generation of the
/// acknowledged commits it overwrote and at most the joining member's. Starting there
/// re-delivers records, which at-least-once allows; it loses no commit.
fn late_unknown_commit(h: &History, group: &str, topic: &str, p: i32, offset: i64, joined_ms: u64, generations: std::ops::RangeInclusive<i32>) -> bool {
    h.commits.iter().any(|c| {
        c.group == group && c.topic == topic && c.invoke_ms < joined_ms && generations.contains(&c.generation) && matches!(c.outcome, Outcome::Unknown(_)) && c.offsets.contains(&(p, offset))
    })
}

/// Acknowledged, surviving records written early enough are read by some member.
fn delivered(h: &History, group: &str, topic: &str, out: &mut Vec<Violation>) {
    let members: BTreeSet<&str> = h.group_events.iter().filter(|e| e.group == group).map(|e| e.process.as_str()).collect();
    let read: BTreeSet<(i32, i64)> = h.reads.iter().filter(|r| r.topic == topic && members.contains(r.process.as_str())).map(|r| (r.partition, r.offset)).collect();
    // The group reads until `members_until_ms`: what was acknowledged a quarter of the healing
    // phase before that had time to be read.
    let due_ms = h.members_until_ms.saturating_sub(h.heal_ms / 4);
    for w in h.writes.iter().filter(|w| w.topic == topic && w.complete_ms < due_ms) {
        let Some(offset) = w.acknowledged() else { continue };
        let survives = h.final_read.get(&(w.topic.clone(), w.partition)).is_some_and(|log| log.binary_search_by_key(&offset, |(o, _)| *o).is_ok_and(|i| log[i].1 == w.value));
        if survives && !read.contains(&(w.partition, offset)) {
            out.push(violation(topic, w.partition, w.complete_ms, format!("group {group}: the record at offset {offset} (acknowledged at {} ms) was never delivered to a member", w.complete_ms), false));
        }
    }
}

fn violation(topic: &str, partition: i32, at_ms: u64, detail: String, loss: bool) -> Violation {
    Violation { checker: "group_delivery", topic: topic.to_string(), partition, offsets: vec![], at_ms, detail, loss, acks: loss.then_some(-1) }
}
