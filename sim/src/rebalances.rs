//! A group run's rebalance timeline as a readable table: one row per member event (joins with
//! their generation, what each member owns after a sync and where the partitions new to it
//! start, revocations, losses, and the churn that caused them). Snapshot tests keep it in a
//! reviewable diff; `sim run --timeline` prints it. Rendering only.

use crate::history::{GroupEventKind, History};
use std::fmt::Write as _;

/// The timeline of every group in `h`, in the order events happened.
pub fn timeline(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:>8}  {:<8}  {:<12}  {:<8}  {:>4}  what", "ms", "group", "member", "event", "gen");
    // Members record their events after each poll, stamped when they happened: order by time.
    let mut events: Vec<_> = h.group_events.iter().collect();
    events.sort_by_key(|e| e.at_ms);
    for e in events {
        let (name, generation, what) = match &e.kind {
            GroupEventKind::Joined { generation, leader, .. } => ("joined", Some(*generation), if *leader { "leader".to_string() } else { String::new() }),
            GroupEventKind::Owned { generation, partitions, starts, .. } => {
                let moved: Vec<String> = starts.iter().map(|(p, o)| format!("{p}@{o}")).collect();
                ("owns", Some(*generation), format!("{} {:?}  new: {}", e.topic, partitions, if moved.is_empty() { "-".into() } else { moved.join(" ") }))
            }
            GroupEventKind::Revoked(ps) => ("revoked", None, format!("{} {ps:?}", e.topic)),
            GroupEventKind::Lost(ps) => ("lost", None, format!("{} {ps:?}", e.topic)),
            GroupEventKind::Left => ("left", None, "LeaveGroup".into()),
            GroupEventKind::Crashed => ("crashed", None, "gone without leaving".into()),
            GroupEventKind::Stalled { ms } => ("stalled", None, format!("{ms} ms between poll and commit")),
        };
        let generation = generation.map_or(String::new(), |g| g.to_string());
        let _ = writeln!(out, "{:>8}  {:<8}  {:<12}  {:<8}  {:>4}  {what}", e.at_ms, e.group, e.process, name, generation);
    }
    let generations = h.group_events.iter().filter_map(|e| match e.kind {
        GroupEventKind::Joined { generation, .. } => Some(generation),
        _ => None,
    });
    let commits = h.commits.iter().filter(|c| matches!(c.outcome, crate::history::Outcome::Ok(_))).count();
    let _ = writeln!(out, "generations: {}; commits acknowledged: {commits} of {}", generations.max().unwrap_or(0), h.commits.len());
    out
}
