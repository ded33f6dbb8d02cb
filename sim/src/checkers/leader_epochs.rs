//! Partition leadership by leader epoch: the controller gives each leader epoch of a partition
//! to one broker, and a broker follows the metadata log in order. So no two brokers may become
//! leader of one partition at one leader epoch, and a broker never becomes leader again at an
//! epoch below one it led at before (a topic created again, under a new id, starts over).
//! Brokers do not become leader in epoch order across each other: one that lags in the metadata
//! log may take an old epoch after another took a newer one, and is then fenced by its epoch;
//! that is allowed.

use crate::history::{History, Leadership, Violation};
use std::collections::BTreeMap;

/// (topic, topic id, partition): one incarnation of a partition.
type PartitionId<'a> = (&'a str, [u8; 16], i32);

/// At most one leader per (partition, leader epoch); each broker's epochs never go back.
pub fn leader_epochs(h: &History, out: &mut Vec<Violation>) {
    let mut by_epoch: BTreeMap<(PartitionId, i32), &Leadership> = BTreeMap::new();
    let mut last: BTreeMap<(PartitionId, &str), &Leadership> = BTreeMap::new();
    for l in &h.leaderships {
        let part = (l.topic.as_str(), l.topic_id, l.partition);
        match by_epoch.get(&(part, l.leader_epoch)) {
            Some(first) if first.broker != l.broker => out.push(violation(l, format!("{} became leader at epoch {} at {} ms, and {} at the same epoch", first.broker, l.leader_epoch, first.at_ms, l.broker))),
            Some(_) => {}
            None => {
                by_epoch.insert((part, l.leader_epoch), l);
            }
        }
        if let Some(before) = last.get(&(part, l.broker.as_str())).filter(|b| b.leader_epoch > l.leader_epoch) {
            out.push(violation(l, format!("{} led at epoch {} at {} ms, then became leader at the older epoch {}", l.broker, before.leader_epoch, before.at_ms, l.leader_epoch)));
        }
        last.insert((part, l.broker.as_str()), l);
    }
}

fn violation(l: &Leadership, detail: String) -> Violation {
    Violation { checker: "leader_epochs", topic: l.topic.clone(), partition: l.partition, offsets: Vec::new(), at_ms: l.at_ms, detail, loss: false, acks: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn led(at_ms: u64, broker: &str, epoch: i32) -> Leadership {
        Leadership { at_ms, broker: broker.into(), topic: "t".into(), topic_id: [1; 16], partition: 0, leader_epoch: epoch }
    }

    fn check(leaderships: Vec<Leadership>) -> Vec<Violation> {
        let h = History { leaderships, ..History::default() };
        let mut out = Vec::new();
        leader_epochs(&h, &mut out);
        out
    }

    #[test]
    fn failovers_in_order_and_a_lagging_broker_pass() {
        assert!(check(vec![led(1, "broker-0", 0), led(5, "broker-1", 1), led(9, "broker-0", 2)]).is_empty());
        // broker-2 applies epoch 1 after broker-0 applied epoch 2: a lagging broker, fenced later.
        assert!(check(vec![led(1, "broker-0", 0), led(5, "broker-0", 2), led(6, "broker-2", 1)]).is_empty());
        // The same broker taking its epoch again after a restart.
        assert!(check(vec![led(1, "broker-0", 3), led(9, "broker-0", 3)]).is_empty());
    }

    #[test]
    fn two_leaders_in_one_epoch_and_an_epoch_going_back_are_caught() {
        let two = check(vec![led(1, "broker-0", 4), led(2, "broker-1", 4)]);
        assert_eq!(two.len(), 1, "{two:?}");
        assert!(two[0].detail.contains("same epoch"), "{}", two[0].detail);
        let back = check(vec![led(1, "broker-1", 5), led(2, "broker-1", 3)]);
        assert_eq!(back.len(), 1, "{back:?}");
        assert!(back[0].detail.contains("older epoch"), "{}", back[0].detail);
        let recreated = Leadership { topic_id: [2; 16], ..led(3, "broker-1", 0) };
        assert!(check(vec![led(1, "broker-1", 5), recreated]).is_empty(), "a new topic id starts over");
    }
}
