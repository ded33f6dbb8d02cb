//! Brokers added and removed while the run goes (`scenario::membership`), judged on the cluster
//! after healing: a decommissioned broker holds no replica and is no longer registered; a
//! broker that joined late is registered and serves the replicas it was given.
//!
//! What it reads, and why there. Every partition's replicas and the brokers registered are
//! asked of the active controller after healing (`History::final_assignment`,
//! `final_registered`: Metadata and DescribeCluster with fenced brokers), what an operator's
//! `kafka-reassign-partitions.sh --verify` and `kafka-cluster.sh list-endpoints` would show;
//! what a joined broker keeps is read from its disk after the clean stop
//! (`History::replica_logs`), since only the disk shows that the replica exists. A
//! decommissioned broker's disk is not read: its machine has left the cluster.
//!
//! Durability across the change (no acknowledged acks=all record lost while replicas leave a
//! broker for good) is not judged here: `acknowledged_durable`, `lost_write`,
//! `committed_consistent` and `isr_complete` judge every run, and each move a decommission
//! makes is in `History::reassignments`, judged by `reassignment_done` like any other.

use crate::history::{Decommission, History, Violation};
use broker_core::kafka::Code;

fn violation(checker: &'static str, (topic, partition): (&str, i32), detail: String) -> Violation {
    Violation { checker, topic: topic.to_string(), partition, offsets: Vec::new(), at_ms: 0, detail, loss: false, acks: None }
}

/// Whether the decommission got to its end: the moves done, the process stopped, and
/// UnregisterBroker accepted — or refused BROKER_ID_NOT_REGISTERED after an attempt whose
/// outcome the admin never learned (that attempt unregistered it).
fn completed(d: &Decommission) -> bool {
    let unregistered = d.unregister_code == Some(0) || (d.unregister_earlier_unknown && d.unregister_code == Some(Code::BrokerIdNotRegistered.code()));
    d.drained_ms.is_some() && d.stopped_ms.is_some() && unregistered
}

/// broker-decommissioned: every decommission completed (its replicas moved off, its process
/// stopped, its registration removed), and after healing no partition lists the broker among
/// its replicas and the controller no longer has it registered.
pub fn broker_decommissioned(h: &History, out: &mut Vec<Violation>) {
    let v = |topic: (&str, i32), detail| violation("broker_decommissioned", topic, detail);
    for d in &h.decommissions {
        if !completed(d) {
            let steps = format!("moves done at {:?} ms, stopped at {:?} ms, UnregisterBroker answered {:?}", d.drained_ms, d.stopped_ms, d.unregister_code);
            out.push(v(("", 0), format!("the decommission of broker-{} begun at {} ms did not complete ({steps}) though faults were healed", d.broker, d.invoke_ms)));
        }
        if h.placement_error.is_some() {
            continue; // reassignment_done reports that the final cluster could not be read
        }
        for ((topic, partition), replicas) in h.final_assignment.iter().filter(|(_, r)| r.contains(&d.broker)) {
            out.push(v((topic, *partition), format!("the replicas after healing are {replicas:?}: broker-{}, decommissioned from {} ms, is still one", d.broker, d.invoke_ms)));
        }
        if let Some(fenced) = h.final_registered.get(&d.broker) {
            out.push(v(("", 0), format!("broker-{}, decommissioned from {} ms, is still registered after healing (fenced: {fenced})", d.broker, d.invoke_ms)));
        }
    }
}

/// broker-joined: after healing, a broker that joined late (and was not decommissioned since)
/// is registered and unfenced; it is among the replicas of each partition whose last
/// reassignment (accepted, and none after it of unknown outcome) named it; and its disk holds
/// a log that opens of every partition the final assignment places on it.
pub fn broker_joined(h: &History, out: &mut Vec<Violation>) {
    if h.placement_error.is_some() {
        return; // reassignment_done reports that the final cluster could not be read
    }
    let v = |topic: (&str, i32), detail| violation("broker_joined", topic, detail);
    for &(id, at_ms) in &h.joins {
        if h.decommissions.iter().any(|d| d.broker == id) {
            continue;
        }
        let name = format!("broker-{id}");
        match h.final_registered.get(&id) {
            Some(false) => {}
            Some(true) => out.push(v(("", 0), format!("{name}, joined at {at_ms} ms, is registered but fenced after healing"))),
            None => out.push(v(("", 0), format!("{name}, joined at {at_ms} ms, is not registered after healing"))),
        }
        let keys: std::collections::BTreeSet<(&String, i32)> = h.reassignments.iter().map(|r| (&r.topic, r.partition)).collect();
        for (topic, partition) in keys {
            let asked: Vec<_> = h.reassignments.iter().filter(|r| r.topic == *topic && r.partition == partition).collect();
            let Some(last) = asked.last() else { continue };
            let given = last.code == Some(0) && last.target.as_ref().is_some_and(|t| t.contains(&id));
            let Some(replicas) = h.final_assignment.get(&(topic.clone(), partition)) else { continue };
            if given && !replicas.contains(&id) {
                out.push(v((topic, partition), format!("{name} was given a replica (accepted at {} ms: target {:?}) but the replicas after healing are {replicas:?}", last.invoke_ms, last.target)));
            }
        }
        for ((topic, partition), _) in h.final_assignment.iter().filter(|(_, r)| r.contains(&id)) {
            let key = (topic.clone(), *partition);
            if !h.replica_logs.get(&key).is_some_and(|logs| logs.contains_key(&name)) {
                let why = h.replica_errors.get(&key).and_then(|e| e.get(&name)).map_or("no directory".to_string(), |e| format!("a log that does not open: {e}"));
                out.push(v((topic, *partition), format!("{name}, joined at {at_ms} ms, is a replica after healing but its disk holds {why}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::judged;
    use crate::history::Reassignment;

    fn done(broker: i32) -> Decommission {
        Decommission { broker, invoke_ms: 100, onto: vec![0, 2, 3], moved: vec![("t".into(), 0)], drained_ms: Some(200), stopped_ms: Some(200), unregister_code: Some(0), unregister_earlier_unknown: false }
    }

    /// t-0 on `replicas` after healing, `registered` brokers (id, fenced), broker 3 joined.
    fn history(replicas: &[i32], registered: &[(i32, bool)]) -> History {
        let mut h = History::default();
        h.final_assignment.insert(("t".into(), 0), replicas.to_vec());
        h.final_registered = registered.iter().copied().collect();
        h.joins.push((3, 50));
        h
    }

    fn details(check: crate::checkers::Checker, h: &History) -> Vec<String> {
        judged(check, h).into_iter().map(|v| v.detail).collect()
    }

    #[test]
    fn a_decommissioned_broker_holds_no_replica_and_is_not_registered() {
        let mut h = history(&[0, 2], &[(0, false), (2, false), (3, false)]);
        h.decommissions.push(done(1));
        assert!(details(broker_decommissioned, &h).is_empty());
        h.final_assignment.insert(("t".into(), 1), vec![1, 2]);
        h.final_registered.insert(1, true);
        let found = details(broker_decommissioned, &h);
        assert!(found.len() == 2 && found[0].contains("[1, 2]: broker-1") && found[1].contains("still registered"), "{found:?}");
    }

    #[test]
    fn a_decommission_must_complete_and_a_lost_unregister_answer_counts() {
        let mut h = history(&[0, 2], &[(0, false), (2, false)]);
        h.decommissions.push(Decommission { stopped_ms: None, unregister_code: None, ..done(1) });
        assert!(details(broker_decommissioned, &h)[0].contains("did not complete"));
        let not_registered = Code::BrokerIdNotRegistered.code();
        h.decommissions[0] = Decommission { unregister_code: Some(not_registered), ..done(1) };
        assert_eq!(details(broker_decommissioned, &h).len(), 1, "refused with no attempt before it");
        h.decommissions[0].unregister_earlier_unknown = true;
        assert!(details(broker_decommissioned, &h).is_empty());
    }

    #[test]
    fn a_joined_broker_is_registered_and_holds_what_it_was_given() {
        let asked = |target: &[i32], code| Reassignment { topic: "t".into(), partition: 0, target: Some(target.to_vec()), invoke_ms: 60, complete_ms: Some(70), code: Some(code), earlier_unknown: false };
        let mut h = history(&[3, 0], &[(0, false), (3, false)]);
        h.reassignments.push(asked(&[3, 0], 0));
        h.replica_logs.entry(("t".into(), 0)).or_default().insert("broker-3".into(), vec![(0, b"a".to_vec())]);
        assert!(details(broker_joined, &h).is_empty());
        h.replica_logs.clear();
        assert!(details(broker_joined, &h)[0].contains("its disk holds no directory"));
        let mut h = history(&[0, 1], &[(0, false), (3, true)]);
        h.reassignments.push(asked(&[3, 0], 0));
        let found = details(broker_joined, &h);
        assert!(found.len() == 2 && found[0].contains("fenced") && found[1].contains("was given a replica"), "{found:?}");
        // Refused, or moved off again: not given.
        h.reassignments[0].code = Some(39);
        h.final_registered.remove(&3);
        assert_eq!(details(broker_joined, &h), vec!["broker-3, joined at 50 ms, is not registered after healing".to_string()]);
    }
}
