//! Reassignment plans, as `seedlog reassign generate` makes them (kafka-reassign-partitions.sh's
//! `--generate`): given where partitions' replicas are now and the brokers they may be on, a
//! new assignment that keeps every partition's replication factor, moves as few replicas as it
//! can, spreads replicas and then leaders (first replicas) evenly over the brokers, and puts a
//! partition's replicas on distinct racks wherever there are enough racks. Moving everything
//! off a broker is the same question with that broker left out of the list.
//!
//! A pure function over ordered maps: the same input gives the same plan, byte for byte. The
//! plan file is Kafka's JSON (`{"version":1,"partitions":[{"topic","partition","replicas"}]}`),
//! so a plan made by either tool can be executed by the other.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Each partition's replicas, in preference order (the first leads), by topic and partition.
pub type Assignment = BTreeMap<(String, i32), Vec<i32>>;

/// Why no plan can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no brokers to place replicas on")]
    NoBrokers,
    #[error("{topic}-{partition} has {replicas} replicas, more than the {brokers} brokers given")]
    TooFewBrokers { topic: String, partition: i32, replicas: usize, brokers: usize },
}

/// The plan for `current` over `brokers`, with each broker's rack where known (`racks`).
pub fn plan(current: &Assignment, brokers: &[i32], racks: &BTreeMap<i32, String>) -> Result<Assignment, PlanError> {
    let brokers: Vec<i32> = brokers.iter().copied().collect::<BTreeSet<i32>>().into_iter().collect();
    if brokers.is_empty() {
        return Err(PlanError::NoBrokers);
    }
    if let Some(((topic, partition), replicas)) = current.iter().find(|(_, r)| r.len() > brokers.len()) {
        return Err(PlanError::TooFewBrokers { topic: topic.clone(), partition: *partition, replicas: replicas.len(), brokers: brokers.len() });
    }
    let distinct_racks = brokers.iter().filter_map(|b| racks.get(b)).collect::<BTreeSet<_>>().len();
    let rack_of = |b: i32| racks.get(&b);
    // Racks must differ within a partition only where there are enough of them.
    let rack_free = |chosen: &[i32], b: i32, rf: usize| rf > distinct_racks || rack_of(b).is_none() || !chosen.iter().any(|&c| rack_of(c) == rack_of(b));
    let mut load: BTreeMap<i32, usize> = brokers.iter().map(|&b| (b, 0)).collect();
    // Pass 1: keep every replica that may stay.
    let mut next: Assignment = BTreeMap::new();
    for (key, replicas) in current {
        let mut kept = Vec::new();
        for &r in replicas {
            if load.contains_key(&r) && rack_free(&kept, r, replicas.len()) {
                kept.push(r);
                *load.get_mut(&r).expect("a listed broker") += 1;
            }
        }
        next.insert(key.clone(), kept);
    }
    // Pass 2: fill each partition's missing replicas with the least loaded brokers (ties by id),
    // on a new rack where one is needed and left.
    for (key, replicas) in current {
        let chosen = next.get_mut(key).expect("inserted above");
        while chosen.len() < replicas.len() {
            let pick = |strict: bool| brokers.iter().copied().filter(|b| !chosen.contains(b) && (!strict || rack_free(chosen, *b, replicas.len()))).min_by_key(|b| (load[b], *b));
            let b = pick(true).or_else(|| pick(false)).expect("fewer replicas than brokers");
            chosen.push(b);
            *load.get_mut(&b).expect("a listed broker") += 1;
        }
    }
    // Pass 3: one replica at a time from the most to the least loaded broker, until they are
    // within one of each other (each move narrows the gap, so this ends).
    loop {
        let (&most, &high) = load.iter().max_by_key(|(b, n)| (**n, -**b)).expect("brokers");
        let (&least, &low) = load.iter().min_by_key(|(b, n)| (**n, **b)).expect("brokers");
        if high <= low + 1 {
            break;
        }
        let movable = next.iter_mut().find(|(_, r)| {
            let others: Vec<i32> = r.iter().copied().filter(|&x| x != most).collect();
            r.contains(&most) && !r.contains(&least) && rack_free(&others, least, r.len())
        });
        let Some((_, replicas)) = movable else { break };
        let at = replicas.iter().position(|&r| r == most).expect("found by it");
        replicas[at] = least;
        *load.get_mut(&most).expect("a listed broker") -= 1;
        *load.get_mut(&least).expect("a listed broker") += 1;
    }
    balance_leaders(&mut next, current, brokers.len());
    Ok(next)
}

/// Puts first in each partition the replica leading the fewest partitions so far, keeping the
/// current leader where it is still a replica and under its fair share of leaderships.
fn balance_leaders(next: &mut Assignment, current: &Assignment, brokers: usize) {
    let cap = next.len().div_ceil(brokers.max(1));
    let mut leads: BTreeMap<i32, usize> = BTreeMap::new();
    for (key, replicas) in next.iter_mut() {
        let was = current.get(key).and_then(|r| r.first().copied());
        let stays = was.filter(|w| replicas.contains(w) && leads.get(w).copied().unwrap_or(0) < cap);
        let leader = stays.unwrap_or_else(|| *replicas.iter().min_by_key(|r| (leads.get(r).copied().unwrap_or(0), replicas.iter().position(|x| x == *r))).expect("a partition has replicas"));
        let at = replicas.iter().position(|&r| r == leader).expect("chosen among them");
        replicas[..=at].rotate_right(1);
        *leads.entry(leader).or_default() += 1;
    }
}

/// Kafka's reassignment JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFile {
    pub version: i32,
    pub partitions: Vec<PlannedPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedPartition {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
}

impl PlanFile {
    pub fn from_assignment(a: &Assignment) -> PlanFile {
        PlanFile { version: 1, partitions: a.iter().map(|((topic, partition), replicas)| PlannedPartition { topic: topic.clone(), partition: *partition, replicas: replicas.clone() }).collect() }
    }

    pub fn assignment(&self) -> Assignment {
        self.partitions.iter().map(|p| ((p.topic.clone(), p.partition), p.replicas.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(rows: &[(&str, i32, &[i32])]) -> Assignment {
        rows.iter().map(|(t, p, r)| ((t.to_string(), *p), r.to_vec())).collect()
    }

    fn loads(a: &Assignment) -> BTreeMap<i32, (usize, usize)> {
        let mut out: BTreeMap<i32, (usize, usize)> = BTreeMap::new();
        for replicas in a.values() {
            for (i, r) in replicas.iter().enumerate() {
                let e = out.entry(*r).or_default();
                e.0 += 1;
                e.1 += usize::from(i == 0);
            }
        }
        out
    }

    fn moved(before: &Assignment, after: &Assignment) -> usize {
        before.iter().map(|(k, r)| r.iter().filter(|b| !after[k].contains(b)).count()).sum()
    }

    #[test]
    fn removing_a_broker_moves_only_its_replicas_and_stays_balanced() {
        // Six partitions, RF 2, round robin over 0..4.
        let now = assignment(&[("t", 0, &[0, 1]), ("t", 1, &[1, 2]), ("t", 2, &[2, 3]), ("t", 3, &[3, 0]), ("t", 4, &[0, 1]), ("t", 5, &[1, 2])]);
        let next = plan(&now, &[1, 2, 3], &BTreeMap::new()).unwrap();
        assert!(next.values().all(|r| r.len() == 2 && !r.contains(&0)), "{next:?}");
        assert_eq!(moved(&now, &next), 3, "only broker 0's three replicas move: {next:?}");
        let l = loads(&next);
        assert_eq!(l.values().map(|x| x.0).collect::<Vec<_>>(), vec![4, 4, 4], "replicas even: {l:?}");
        assert!(l.values().all(|x| x.1 == 2), "leaders even: {l:?}");
        assert_eq!(plan(&now, &[3, 2, 1], &BTreeMap::new()).unwrap(), next, "the order of the list does not matter");
    }

    #[test]
    fn balancing_onto_a_new_broker_fills_it_to_its_share() {
        let now = assignment(&[("a", 0, &[0, 1]), ("a", 1, &[1, 0]), ("b", 0, &[0, 1]), ("b", 1, &[1, 0])]);
        let next = plan(&now, &[0, 1, 2], &BTreeMap::new()).unwrap();
        let l = loads(&next);
        assert!(l.values().all(|x| (2..=3).contains(&x.0)), "replicas within one of even: {l:?}");
        assert!(l[&2].0 >= 2, "the new broker gets its share: {next:?}");
        assert_eq!(moved(&now, &next), l[&2].0, "every move is onto the new broker");
        assert_eq!(plan(&next, &[0, 1, 2], &BTreeMap::new()).unwrap(), next, "a balanced assignment is left alone");
    }

    #[test]
    fn replicas_go_to_distinct_racks_when_there_are_enough() {
        let racks: BTreeMap<i32, String> = [(0, "a"), (1, "a"), (2, "b"), (3, "b")].into_iter().map(|(b, r)| (b, r.to_string())).collect();
        let now = assignment(&[("t", 0, &[0, 1]), ("t", 1, &[2, 3]), ("t", 2, &[0, 1]), ("t", 3, &[2, 3])]);
        let next = plan(&now, &[0, 1, 2, 3], &racks).unwrap();
        for (k, r) in &next {
            assert_ne!(racks[&r[0]], racks[&r[1]], "{k:?} on one rack: {next:?}");
        }
        // RF 3 over two racks cannot be spread: placed anyway.
        let three = assignment(&[("u", 0, &[0, 1, 2])]);
        assert_eq!(plan(&three, &[0, 1, 2, 3], &racks).unwrap()[&("u".to_string(), 0)].len(), 3);
    }

    #[test]
    fn impossible_plans_say_why() {
        let now = assignment(&[("t", 0, &[0, 1, 2])]);
        assert_eq!(plan(&now, &[0, 1], &BTreeMap::new()), Err(PlanError::TooFewBrokers { topic: "t".into(), partition: 0, replicas: 3, brokers: 2 }));
        assert_eq!(plan(&now, &[], &BTreeMap::new()), Err(PlanError::NoBrokers));
    }

    #[test]
    fn the_plan_file_is_kafkas_json() {
        let a = assignment(&[("t", 0, &[1, 2])]);
        let text = serde_json::to_string(&PlanFile::from_assignment(&a)).unwrap();
        assert_eq!(text, r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}"#);
        let kafka = r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}"#;
        assert_eq!(serde_json::from_str::<PlanFile>(kafka).unwrap().assignment(), a, "Kafka's log_dirs are ignored");
    }
}
