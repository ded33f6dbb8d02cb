//! What the group checkers read out of the history: each member's ownership of each partition
//! as time intervals, and the commits per (group, partition). Derivation only, no verdicts.

use crate::history::{Commit, GroupEventKind, History, Outcome};
use std::collections::{BTreeMap, BTreeSet};

/// One member process owning one partition from `from_ms` until `to_ms` (None: the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    pub process: String,
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub generation: i32,
    pub from_ms: u64,
    pub to_ms: Option<u64>,
    /// It ended without the member giving the partition up: lost (fenced, expired), crashed,
    /// or the member stalled past its session meanwhile. Kafka cannot keep such a zombie from
    /// overlapping the next owner, so exclusivity is not asked of it.
    pub zombie: bool,
}

/// Every tenure of every member, in the order they began.
pub fn tenures(h: &History) -> Vec<Tenure> {
    let mut open: BTreeMap<(String, i32), Tenure> = BTreeMap::new();
    let mut done = Vec::new();
    let close = |open: &mut BTreeMap<(String, i32), Tenure>, process: &str, parts: Option<&[i32]>, at: u64, zombie: bool, done: &mut Vec<Tenure>| {
        let keys: Vec<(String, i32)> = open.keys().filter(|(p, q)| p == process && parts.is_none_or(|ps| ps.contains(q))).cloned().collect();
        for k in keys {
            let mut t = open.remove(&k).expect("listed");
            t.to_ms = Some(at);
            t.zombie |= zombie;
            done.push(t);
        }
    };
    for e in &h.group_events {
        match &e.kind {
            GroupEventKind::Owned { generation, partitions, .. } => {
                let gone: Vec<i32> = open.keys().filter(|(p, q)| *p == e.process && !partitions.contains(q)).map(|(_, q)| *q).collect();
                close(&mut open, &e.process, Some(&gone), e.at_ms, false, &mut done);
                for p in partitions {
                    let t = open.entry((e.process.clone(), *p)).or_insert_with(|| Tenure { process: e.process.clone(), group: e.group.clone(), topic: e.topic.clone(), partition: *p, generation: *generation, from_ms: e.at_ms, to_ms: None, zombie: false });
                    t.generation = *generation;
                }
            }
            GroupEventKind::Revoked(ps) => close(&mut open, &e.process, Some(ps), e.at_ms, false, &mut done),
            GroupEventKind::Lost(ps) => close(&mut open, &e.process, Some(ps), e.at_ms, true, &mut done),
            GroupEventKind::Left => close(&mut open, &e.process, None, e.at_ms, false, &mut done),
            GroupEventKind::Crashed => close(&mut open, &e.process, None, e.at_ms, true, &mut done),
            GroupEventKind::Stalled { .. } => {
                for ((p, _), t) in open.iter_mut() {
                    if *p == e.process {
                        t.zombie = true;
                    }
                }
            }
            GroupEventKind::Joined { .. } => {}
        }
    }
    done.extend(open.into_values());
    done.sort_by_key(|t| (t.from_ms, t.process.clone(), t.partition));
    done
}

/// Acknowledged commits of one partition of one group, as (offset, commit).
pub fn acked_commits<'a>(h: &'a History, group: &str, topic: &str, partition: i32) -> Vec<(i64, &'a Commit)> {
    h.commits
        .iter()
        .filter(|c| c.group == group && c.topic == topic && matches!(c.outcome, Outcome::Ok(_)))
        .filter_map(|c| c.offsets.iter().find(|(p, _)| *p == partition).map(|(_, o)| (*o, c)))
        .collect()
}

/// Every (group, topic) with members in the history.
pub fn groups(h: &History) -> BTreeSet<(String, String)> {
    h.group_events.iter().map(|e| (e.group.clone(), e.topic.clone())).collect()
}

/// Partitions of `topic` as the final read saw them.
pub fn partitions(h: &History, topic: &str) -> Vec<i32> {
    h.final_read.keys().chain(h.final_errors.keys()).filter(|(t, _)| t == topic).map(|(_, p)| *p).collect::<BTreeSet<_>>().into_iter().collect()
}
