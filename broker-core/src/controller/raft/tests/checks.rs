//! The Raft checkers, run over what the simulated cluster observed: election safety (at most
//! one leader per epoch), log matching across voters, leader completeness (a new leader holds
//! every entry committed in an earlier epoch), committed entries never lost or changed, and
//! liveness after healing. Each pushes a readable violation; none panics.

use crate::controller::raft::{Entry, Node, NodeId, Snapshot};
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
    /// Snapshots taken and installed, so a sweep can show it exercised them.
    pub snapshots: (u64, u64),
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
        // Below its log start it holds what its snapshot holds (checked on its own).
        let log: BTreeMap<i64, &Entry> = node.log().iter().map(|e| (e.base_offset, e)).collect();
        for (entry, at) in self.committed.iter().filter(|(e, _)| e.base_offset >= node.log().start()) {
            if *at < epoch && log.get(&entry.base_offset).is_none_or(|e| *e != entry) {
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

    /// A snapshot holds exactly the committed entries below its end (the cluster's snapshots
    /// are their bytes), and ends where one of them of its epoch ends.
    pub fn check_snapshot(&self, id: NodeId, s: &Snapshot, out: &mut Vec<String>) {
        let held: Vec<&(Entry, i32)> = self.committed.iter().take_while(|(e, _)| e.next_offset <= s.id.end).collect();
        let bytes: Vec<u8> = held.iter().flat_map(|(e, _)| e.batch.iter().copied()).collect();
        let ends_right = held.last().is_some_and(|(e, _)| e.next_offset == s.id.end && e.epoch == s.id.epoch);
        if !ends_right || bytes[..] != s.bytes[..] {
            out.push(format!("node {id}: snapshot {:?} is not the committed log below its end (committed end {})", s.id, self.committed_end()));
        }
    }

    /// [`History::check_snapshot`] at the moment a node takes or installs one.
    pub fn snapshot_holds_committed(&mut self, now: u64, id: NodeId, s: &Snapshot, how: &str) {
        let mut found = Vec::new();
        self.check_snapshot(id, s, &mut found);
        match how {
            "installed" => self.snapshots.1 += 1,
            _ => self.snapshots.0 += 1,
        }
        self.violations.extend(found.into_iter().map(|v| format!("t={now}: {how}: {v}")));
    }
}

/// Log matching: two logs holding an entry with the same offset and epoch are identical up to
/// and including it.
pub fn log_matching(logs: &[(NodeId, Vec<Entry>)], out: &mut Vec<String>) {
    for (i, (a, la)) in logs.iter().enumerate() {
        for (b, lb) in &logs[i + 1..] {
            // Compared where both still hold entries: below a log's start is its snapshot.
            let start = la.first().map_or(0, |e| e.base_offset).max(lb.first().map_or(0, |e| e.base_offset));
            let (la, lb) = (&la[la.partition_point(|e| e.base_offset < start)..], &lb[lb.partition_point(|e| e.base_offset < start)..]);
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
        let start = log.first().map_or(0, |e| e.base_offset);
        let committed = history.committed.iter().skip_while(|(c, _)| c.base_offset < start);
        if let Some(((c, at), _)) = committed.zip(log.iter()).find(|((c, _), e)| c != *e) {
            out.push(format!("node {id} lost or changed the entry at {} committed in epoch {at}", c.base_offset));
        }
    }
}
