//! The assignor catalogue: every assignor over named cases (joins, leaves, uneven
//! subscriptions, sticky carry-over, conflicting claims, cooperative two-phase moves), rendered
//! as one plain-text table per case and pinned with insta, so a change to any assignor shows up
//! as a diff a reviewer can judge by eye. The snapshot lives in `snapshots/`; CI never rewrites
//! it (to accept a change: `INSTA_UPDATE=always cargo test -p broker-core --lib assignor`, then
//! read the diff).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::sticky::in_transit;
use super::*;

struct Member {
    id: &'static str,
    instance: Option<&'static str>,
    topics: &'static [&'static str],
    generation: i32,
    owned: &'static [(&'static str, &'static [i32])],
}

struct Case {
    name: &'static str,
    story: &'static str,
    partitions: &'static [(&'static str, i32)],
    members: &'static [Member],
}

const fn fresh(id: &'static str, topics: &'static [&'static str]) -> Member {
    Member { id, instance: None, topics, generation: -1, owned: &[] }
}

const fn owner(id: &'static str, topics: &'static [&'static str], generation: i32, owned: &'static [(&'static str, &'static [i32])]) -> Member {
    Member { id, instance: None, topics, generation, owned }
}

const catalogue: &[Case] = &[
    Case { name: "fresh-two-members", story: "A and B start a group on t", partitions: &[("t", 3)], members: &[fresh("A", &["t"]), fresh("B", &["t"])] },
    Case { name: "fresh-two-topics", story: "range gives A the extra partition of every topic; the others spread it", partitions: &[("t1", 3), ("t2", 3)], members: &[fresh("A", &["t1", "t2"]), fresh("B", &["t1", "t2"])] },
    Case { name: "more-members-than-partitions", story: "three members, two partitions: one member idles", partitions: &[("t", 2)], members: &[fresh("A", &["t"]), fresh("B", &["t"]), fresh("C", &["t"])] },
    Case { name: "join", story: "C joins; A and B own half of t each", partitions: &[("t", 6)], members: &[owner("A", &["t"], 1, &[("t", &[0, 1, 2])]), owner("B", &["t"], 1, &[("t", &[3, 4, 5])]), fresh("C", &["t"])] },
    Case { name: "leave", story: "C (which owned t-4, t-5) left; A and B stay", partitions: &[("t", 6)], members: &[owner("A", &["t"], 1, &[("t", &[0, 1])]), owner("B", &["t"], 1, &[("t", &[2, 3])])] },
    Case { name: "uneven-subscriptions", story: "A wants t1 only, B wants t1 and t2", partitions: &[("t1", 3), ("t2", 2)], members: &[fresh("A", &["t1"]), fresh("B", &["t1", "t2"])] },
    Case { name: "uneven-join", story: "C joins for t2 only; B owned all of t2", partitions: &[("t1", 2), ("t2", 4)], members: &[owner("A", &["t1"], 2, &[("t1", &[0])]), owner("B", &["t1", "t2"], 2, &[("t1", &[1]), ("t2", &[0, 1, 2, 3])]), fresh("C", &["t2"])] },
    Case {
        name: "static-members",
        story: "static members (group.instance.id) come first in member order, whatever their member ids",
        partitions: &[("t", 5)],
        members: &[fresh("a-dynamic", &["t"]), Member { id: "x-static", instance: Some("consumer-2"), topics: &["t"], generation: -1, owned: &[] }, Member { id: "z-static", instance: Some("consumer-1"), topics: &["t"], generation: -1, owned: &[] }],
    },
    Case { name: "carry-over-from-range", story: "the group switches to sticky holding range's uneven result", partitions: &[("t1", 3), ("t2", 3)], members: &[owner("A", &["t1", "t2"], 4, &[("t1", &[0, 1]), ("t2", &[0, 1])]), owner("B", &["t1", "t2"], 4, &[("t1", &[2]), ("t2", &[2])])] },
    Case {
        name: "stale-claim",
        story: "B missed a rebalance (generation 2) and still claims t-1, now A's at generation 3",
        partitions: &[("t", 4)],
        members: &[owner("A", &["t"], 3, &[("t", &[0, 1])]), owner("B", &["t"], 2, &[("t", &[1, 2])]), owner("C", &["t"], 3, &[("t", &[3])])],
    },
    Case { name: "tied-claim", story: "A and B both claim t-0 at generation 2: neither keeps it", partitions: &[("t", 3)], members: &[owner("A", &["t"], 2, &[("t", &[0, 1])]), owner("B", &["t"], 2, &[("t", &[0, 2])]), fresh("C", &["t"])] },
    Case { name: "unsubscribe", story: "B drops t2 from its subscription but still owns t2-0 and t2-1", partitions: &[("t1", 2), ("t2", 2)], members: &[owner("A", &["t1", "t2"], 1, &[("t1", &[0])]), owner("B", &["t1"], 1, &[("t1", &[1]), ("t2", &[0, 1])])] },
    Case { name: "partitions-added", story: "t grows from 4 to 6 partitions; nothing owned moves", partitions: &[("t", 6)], members: &[owner("A", &["t"], 1, &[("t", &[0, 1])]), owner("B", &["t"], 1, &[("t", &[2, 3])])] },
];

fn members(case: &Case) -> Members {
    let member = |m: &Member| MemberSubscription {
        group_instance_id: m.instance.map(str::to_string),
        topics: m.topics.iter().map(|t| t.to_string()).collect(),
        owned: m.owned.iter().map(|(t, p)| (t.to_string(), p.to_vec())).collect(),
        generation: m.generation,
    };
    case.members.iter().map(|m| (m.id.to_string(), member(m))).collect()
}

/// `t1:0,1 t2:2`, or `-` for nothing.
fn show(a: &TopicPartitions) -> String {
    let parts: Vec<String> = a.iter().map(|(t, ps)| format!("{t}:{}", ps.iter().map(i32::to_string).collect::<Vec<_>>().join(","))).collect();
    if parts.is_empty() { "-".to_string() } else { parts.join(" ") }
}

/// Rows padded into columns split by ` | `, the header underlined.
fn table(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let line = |r: &Vec<String>| r.iter().zip(&widths).map(|(cell, w)| format!("{cell:w$}")).collect::<Vec<_>>().join(" | ").trim_end().to_string();
    let mut out = vec![line(&rows[0]), widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-+-")];
    out.extend(rows[1..].iter().map(line));
    out.join("\n")
}

/// Partitions whose owner changed from the members' claims (`t-2 A→C`, `t-0 A+B→A`), and
/// those nobody claimed (`t-2 →C`).
fn moves(members: &Members, out: &GroupAssignment) -> (String, String) {
    let mut claims: BTreeMap<(&str, i32), Vec<&str>> = BTreeMap::new();
    for (id, m) in members {
        for (t, ps) in &m.owned {
            ps.iter().for_each(|p| claims.entry((t.as_str(), *p)).or_default().push(id.as_str()));
        }
    }
    let (mut moved, mut placed) = (Vec::new(), Vec::new());
    for (id, a) in out {
        for (t, ps) in a {
            for p in ps {
                match claims.get(&(t.as_str(), *p)) {
                    Some(c) if c.len() > 1 || c[0] != id.as_str() => moved.push(format!("{t}-{p} {}→{id}", c.join("+"))),
                    Some(_) => {}
                    None => placed.push(format!("{t}-{p} →{id}")),
                }
            }
        }
    }
    (listed(moved), listed(placed))
}

fn listed(items: Vec<String>) -> String {
    if items.is_empty() { "none".to_string() } else { items.join(", ") }
}

/// What each member had that `out` does not give it back.
fn revoked(members: &Members, out: &GroupAssignment) -> String {
    let mut lost = Vec::new();
    for (id, m) in members {
        for (t, ps) in &m.owned {
            for p in ps.iter().filter(|p| !out[id].get(t).is_some_and(|kept| kept.contains(p))) {
                lost.push(format!("{t}-{p} from {id}"));
            }
        }
    }
    listed(lost)
}

fn render(case: &Case) -> String {
    let members = members(case);
    let partitions: BTreeMap<String, i32> = case.partitions.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    let run = |a: Assignor| a.assign(&members, &partitions);
    let (range, roundrobin, sticky, coop1) = (run(Assignor::Range), run(Assignor::RoundRobin), run(Assignor::Sticky), run(Assignor::CooperativeSticky));
    let next_generation = members.values().map(|m| m.generation).max().unwrap_or(0).max(0) + 1;
    let rejoined: Members = members.iter().map(|(id, m)| (id.clone(), MemberSubscription { owned: coop1[id].clone(), generation: next_generation, ..m.clone() })).collect();
    let coop2 = Assignor::CooperativeSticky.assign(&rejoined, &partitions);

    let header = ["member", "subscribes", "gen", "owned", "range", "roundrobin", "sticky", "coop round 1", "coop round 2"];
    let mut rows = vec![header.map(str::to_string).to_vec()];
    for (id, m) in member_order(&members) {
        let name = m.group_instance_id.as_ref().map_or(id.to_string(), |i| format!("{id} ({i})"));
        let subscribes = m.topics.iter().cloned().collect::<Vec<_>>().join(",");
        rows.push(vec![name, subscribes, m.generation.to_string(), show(&m.owned), show(&range[id]), show(&roundrobin[id]), show(&sticky[id]), show(&coop1[id]), show(&coop2[id])]);
    }
    let held_back: Vec<String> = in_transit(&members, &sticky).into_iter().map(|(to, t, p)| format!("{t}-{p} (for {to})")).collect();
    let mut out = String::new();
    let _ = writeln!(out, "## {}: {}", case.name, case.story);
    let _ = writeln!(out, "partitions: {}", case.partitions.iter().map(|(t, n)| format!("{t}={n}")).collect::<Vec<_>>().join(" "));
    let _ = writeln!(out, "{}", table(&rows));
    let _ = writeln!(out, "sticky moves: {}", moves(&members, &sticky).0);
    let _ = writeln!(out, "coop round 1 revokes: {}", revoked(&members, &coop1));
    let _ = writeln!(out, "coop round 1 leaves out until the rejoin: {}", listed(held_back));
    let (moved, placed) = moves(&rejoined, &coop2);
    let _ = writeln!(out, "coop round 2 (all rejoin at generation {next_generation} owning round 1): moves {moved}; places {placed}");
    let _ = writeln!(out, "coop round 2 reaches sticky's target: {}", if coop2 == sticky { "yes" } else { "no" });
    out
}

#[test]
fn assignor_catalogue() {
    let rendered: Vec<String> = catalogue.iter().map(render).collect();
    insta::assert_snapshot!("assignor_catalogue", rendered.join("\n"));
}
