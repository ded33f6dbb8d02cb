//! The Raft checkers, run over what the simulated cluster observed: election safety (at most
//! one leader per epoch), log matching across voters, leader completeness (a new leader holds
//! every entry committed in an earlier epoch), committed entries never lost or changed, and
//! liveness after healing. Each pushes a readable violation; none panics.

use crate::controller::raft::{Entry, Node, NodeId};
use std::collections::BTreeMap;

/// What the checkers need to know, gathered while the cluster runs.
#[derive(Default)]
pub struct History {
    /// The leader of each epoch seen.
    pub leaders: BTreeMap<i32, NodeId>,
    /// The committed log as the nodes applied it, each entry with the lowest epoch in which
    /// any node applied it.
    pub committed: Vec<(Entry, i32)>,
    pub violations: Vec<String>,
}

impl History {
    /// Election safety: `node` became leader of `epoch`. Leader completeness: its log must
    /// hold every entry committed in an earlier epoch.
    pub fn became_leader(&mut self, now: u64, node: &Node) {
        let epoch = node.epoch();
        match self.leaders.get(&epoch) {
            Some(&other) if other != node.id() => self.violations.push(format!("t={now}: epoch {epoch} has two leaders, {other} and {}", node.id())),
            _ => {
                self.leaders.insert(epoch, node.id());
            }
        }
        let log: Vec<&Entry> = node.log().iter().collect();
        for (i, (entry, at)) in self.committed.iter().enumerate() {
            if *at < epoch && log.get(i).is_none_or(|e| *e != entry) {
                self.violations.push(format!(
                    "t={now}: leader {} of epoch {epoch} lacks the entry at {} committed in epoch {at}",
                    node.id(),
                    entry.base_offset
                ));
                break;
            }
        }
    }

    /// `node` applied its log up to `high_watermark`: every entry must agree with what any
    /// node applied before (committed entries are never lost or changed).
    pub fn applied(&mut self, now: u64, node: &Node, from: i64, high_watermark: i64) {
        for entry in node.log().iter().skip_while(|e| e.next_offset <= from).take_while(|e| e.base_offset < high_watermark) {
            let i = self.committed.partition_point(|(c, _)| c.next_offset <= entry.base_offset);
            let end = self.committed_end();
            match self.committed.get_mut(i) {
                Some((c, at)) if c == entry => *at = (*at).min(node.epoch()),
                Some((c, at)) => {
                    let what = format!("t={now}: node {} applied [{}, {}) of epoch {} where [{}, {}) of epoch {} was committed in epoch {at}", node.id(), entry.base_offset, entry.next_offset, entry.epoch, c.base_offset, c.next_offset, c.epoch);
                    self.violations.push(what);
                    return;
                }
                None if end == entry.base_offset => self.committed.push((entry.clone(), node.epoch())),
                None => {
                    self.violations.push(format!("t={now}: node {} applied [{}, {}) past the committed end {end}", node.id(), entry.base_offset, entry.next_offset));
                    return;
                }
            }
        }
    }

    pub fn committed_end(&self) -> i64 {
        self.committed.last().map_or(0, |(e, _)| e.next_offset)
    }
}

/// Log matching: two logs holding an entry with the same offset and epoch are identical up to
/// and including it.
pub fn log_matching(logs: &[(NodeId, Vec<Entry>)], out: &mut Vec<String>) {
    for (i, (a, la)) in logs.iter().enumerate() {
        for (b, lb) in &logs[i + 1..] {
            let by_base: BTreeMap<i64, (usize, &Entry)> = lb.iter().enumerate().map(|(j, e)| (e.base_offset, (j, e))).collect();
            let last_same = la.iter().enumerate().rev().find(|(_, e)| by_base.get(&e.base_offset).is_some_and(|(_, o)| o.epoch == e.epoch && o.next_offset == e.next_offset));
            if let Some((k, e)) = last_same {
                let (j, _) = by_base[&e.base_offset];
                if j != k || la[..=k] != lb[..=j] {
                    out.push(format!("nodes {a} and {b} both hold [{}, {}) of epoch {} but their logs differ before it", e.base_offset, e.next_offset, e.epoch));
                }
            }
        }
    }
}

/// Committed entries never lost or changed: where a voter's log reaches, it holds exactly the
/// committed entries (a voter still catching up is liveness's business).
pub fn nothing_committed_lost(history: &History, logs: &[(NodeId, Vec<Entry>)], out: &mut Vec<String>) {
    for (id, log) in logs {
        if let Some(((c, at), _)) = history.committed.iter().zip(log.iter()).find(|((c, _), e)| c != *e) {
            out.push(format!("node {id} lost or changed the entry at {} committed in epoch {at}", c.base_offset));
        }
    }
}
