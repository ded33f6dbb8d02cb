//! The scenario edits `sim shrink` tries: the seed's schedule written out as fixed faults, and
//! removals of clients and brokers with the faults renamed to the nodes' new names. Pure: a
//! scenario in, a candidate out (or `None` when the edit cannot be made: a fault still aims at
//! the node, or the result would not validate). Whether a candidate still fails is the
//! caller's run.

use crate::scenario::{FaultSpec, Scenario};
use std::collections::BTreeMap;

/// `s` with the schedule a seed drew (`faults`, the fixed ones included, in start order) as its
/// fixed faults, no random mix, and the disk seed that seed drew pinned: under the same seed it
/// runs the same faults on the same disks, and every fault can now be removed one by one.
/// Settings a fault's kind does not read are left at their defaults (not written).
pub fn explicit(s: &Scenario, faults: Vec<FaultSpec>, disk_seed: u64) -> Scenario {
    let faults = faults.iter().map(FaultSpec::without_unused).collect();
    Scenario { name: format!("{}-shrunk", s.name.trim_end_matches("-shrunk")), faults, random_faults: None, disk_seed: Some(disk_seed.to_string()), ..s.clone() }
}

/// Every one-step removal of a client or broker, as (what it removes, candidate), in a fixed
/// order: group members halved, groups, consumers, producer counts halved, producer specs (last
/// ones first), then the last broker. Candidates a fault still aims at are left out.
pub fn removals(s: &Scenario) -> Vec<(String, Scenario)> {
    let mut out = Vec::new();
    let mut push = |what: String, edit: &dyn Fn(&mut Scenario), removed: Vec<String>| {
        if let Some(c) = removing(s, edit, &removed) {
            out.push((what, c));
        }
    };
    for (g, spec) in s.groups.iter().enumerate().rev() {
        if spec.members > 1 {
            let keep = spec.members / 2;
            push(format!("group {} members {}→{keep}", spec.id, spec.members), &|c| c.groups[g].members = keep, (keep..spec.members).map(|i| format!("member-{g}-{i}")).collect());
        }
        push(format!("group {}", spec.id), &|c| {
            c.groups.remove(g);
        }, (0..spec.members).map(|i| format!("member-{g}-{i}")).collect());
    }
    for k in (0..s.consumers.len()).rev() {
        push(format!("consumer-{k}"), &|c| {
            c.consumers.remove(k);
        }, vec![format!("consumer-{k}")]);
    }
    // Producer nodes are numbered across specs: spec k's first is the sum of the counts before.
    let firsts: Vec<u32> = s.producers.iter().scan(0u32, |next, p| Some(std::mem::replace(next, next.saturating_add(p.count)))).collect();
    for (k, spec) in s.producers.iter().enumerate().rev() {
        let names = |range: std::ops::Range<u32>| range.map(|i| format!("producer-{}", firsts[k] + i)).collect::<Vec<_>>();
        if spec.count > 1 {
            let keep = spec.count / 2;
            push(format!("producers of spec {k} {}→{keep}", spec.count), &|c| c.producers[k].count = keep, names(keep..spec.count));
        }
        push(format!("producer spec {k} ({} on {})", spec.count, spec.topic), &|c| {
            c.producers.remove(k);
        }, names(0..spec.count));
    }
    if s.brokers > 1 {
        let last = s.brokers - 1;
        push(format!("broker-{last}"), &|c| c.brokers = last, vec![format!("broker-{last}")]);
    }
    out
}

/// `edit` applied to a copy of `s`, which removes the nodes `removed`; every other node keeps
/// its place in the node order, so the survivors of the old order take the new order's names
/// one for one, and faults follow their node. `None` if a fault aims at a removed node or the
/// result does not validate.
fn removing(s: &Scenario, edit: &dyn Fn(&mut Scenario), removed: &[String]) -> Option<Scenario> {
    let old = s.node_names();
    let mut c = s.clone();
    edit(&mut c);
    let new = c.node_names();
    let survivors: Vec<&String> = old.iter().filter(|n| !removed.contains(n)).collect();
    if survivors.len() != new.len() {
        return None;
    }
    let names: BTreeMap<&str, &str> = survivors.into_iter().map(String::as_str).zip(new.iter().map(String::as_str)).collect();
    for f in &mut c.faults {
        f.target = rename(&f.target, &names)?;
    }
    c.validate().ok()?;
    Some(c)
}

/// A fault target (`node` or `a>b`) under the new names; `None` if a node is gone.
fn rename(target: &str, names: &BTreeMap<&str, &str>) -> Option<String> {
    match target.split_once('>') {
        Some((a, b)) => Some(format!("{}>{}", names.get(a)?, names.get(b)?)),
        None => names.get(target).map(|n| n.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FaultKind;

    fn scenario() -> Scenario {
        Scenario::parse(
            r#"
name = "s"
duration_ms = 10000
brokers = 3
topics = [{ name = "t", partitions = 2, replication_factor = 2 }]
producers = [{ topic = "t", rate = 10, count = 2 }, { topic = "t", rate = 20 }]
consumers = [{ topic = "t" }, { topic = "t" }]
faults = [
  { at = 100, kind = "isolate", target = "producer-2" },
  { at = 200, kind = "clog_link", target = "consumer-1>broker-1" },
]
random_faults = { kinds = ["kill"], max = 3 }
"#,
        )
        .unwrap()
    }

    #[test]
    fn the_explicit_scenario_has_only_fixed_faults_and_a_pinned_disk_seed() {
        let s = scenario();
        let faults = vec![FaultSpec::new(50, FaultKind::Kill, "broker-2", 700)];
        let e = explicit(&s, faults.clone(), u64::MAX);
        assert_eq!((e.name.as_str(), &e.faults, &e.random_faults, e.pinned_disk_seed()), ("s-shrunk", &faults, &None, Some(u64::MAX)));
        let text = toml::to_string(&e).unwrap();
        assert_eq!(Scenario::parse(&text).unwrap(), e, "{text}");
        assert_eq!(explicit(&e, faults, 1).name, "s-shrunk", "shrinking a shrunk scenario keeps its name");
    }

    #[test]
    fn removing_a_node_renames_the_faults_of_the_nodes_after_it() {
        let s = scenario();
        let by_what: BTreeMap<String, Scenario> = removals(&s).into_iter().collect();
        // consumer-1 and producer-2 are fault targets: neither, nor their specs, can go.
        assert!(!by_what.contains_key("consumer-1") && !by_what.contains_key("producer spec 1 (1 on t)"), "{:?}", by_what.keys());
        // consumer-0 goes: consumer-1 becomes consumer-0, in the link fault too.
        let c = &by_what["consumer-0"];
        assert_eq!((c.consumers.len(), c.faults[1].target.as_str()), (1, "consumer-0>broker-1"));
        // producer spec 0 (producer-0, producer-1) goes: producer-2 becomes producer-0.
        let p = &by_what["producer spec 0 (2 on t)"];
        assert_eq!((p.producers.len(), p.faults[0].target.as_str()), (1, "producer-0"));
        // Its count halves: producer-1 goes, producer-2 becomes producer-1.
        let half = &by_what["producers of spec 0 2→1"];
        assert_eq!((half.producers[0].count, half.faults[0].target.as_str()), (1, "producer-1"));
        // broker-2 goes (RF 2 fits two brokers); the faults are on other nodes.
        assert_eq!(by_what["broker-2"].brokers, 2);
        for (what, c) in &by_what {
            c.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }

    #[test]
    fn a_broker_goes_only_where_the_replication_factor_and_the_faults_allow() {
        let mut s = scenario();
        s.faults.push(FaultSpec::new(300, FaultKind::Kill, "broker-2", 100));
        assert!(!removals(&s).iter().any(|(what, _)| what == "broker-2"), "a fault aims at broker-2");
        s.faults.pop();
        s.topics[0].replication_factor = 3;
        assert!(!removals(&s).iter().any(|(what, _)| what == "broker-2"), "RF 3 needs three brokers");
    }
}
