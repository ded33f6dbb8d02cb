//! Preferred-leader election (`auto.leader.rebalance.enable`): every
//! `leader.imbalance.check.interval.seconds` the active controller moves leadership back to each
//! partition's preferred replica — the first of its assignment — where that replica is in the
//! ISR, eligible (unfenced, heard by this controller) and the broker's imbalance is over
//! `leader.imbalance.per.broker.percentage` (Kafka's checkAndTriggerAutoLeaderRebalance: per
//! preferred broker, the share of the partitions it is preferred for that others lead). A
//! move bumps the leader epoch as any election does; the ISR and ELR stay.
//!
//! ElectLeaders (API 43) of type PREFERRED asks for the same move for named partitions, at
//! once and whatever the imbalance; of type UNCLEAN, for a leader where none is left, from
//! outside the ISR if it must ([`Controller::elect_leaders`]).
//!
//! A decision like the others: records out, the image untouched; its only state is when it
//! is next due, volatile like the sessions (a new controller waits one interval).

use super::{partition_record, Controller};
use crate::kafka::Code;
use crate::metadata::{no_leader, MetadataRecord, PartitionInfo};
use std::collections::BTreeMap;

impl Controller {
    /// When the next rebalance is due, if it is on.
    pub(super) fn rebalance_deadline(&self) -> Option<u64> {
        self.config.auto_leader_rebalance.then_some(self.next_rebalance_ms)
    }

    /// The preferred-leader elections due at `now` (none before the interval has passed).
    pub(super) fn rebalance_if_due(&mut self, now: u64) -> Vec<MetadataRecord> {
        if !self.config.auto_leader_rebalance || now < self.next_rebalance_ms {
            return Vec::new();
        }
        self.next_rebalance_ms = now.saturating_add(self.config.leader_imbalance_check_interval_ms.max(1));
        self.preferred_elections(self.config.leader_imbalance_per_broker_percentage)
    }

    /// Moves leadership to the preferred replica of every partition whose preferred broker is
    /// imbalanced by more than `percentage`, where that replica may lead. Brokers in id order,
    /// partitions in name order: deterministic.
    pub(super) fn preferred_elections(&self, percentage: u32) -> Vec<MetadataRecord> {
        // Per preferred broker: how many partitions it is preferred for, and which are led elsewhere.
        let mut by_broker: BTreeMap<i32, (usize, Vec<(&str, i32, &PartitionInfo)>)> = BTreeMap::new();
        for (name, t) in &self.image.topics {
            for (p, part) in (0..).zip(&t.partitions) {
                let Some(&preferred) = part.replicas.first() else { continue };
                let entry = by_broker.entry(preferred).or_default();
                entry.0 += 1;
                if part.leader != preferred {
                    entry.1.push((name, p, part));
                }
            }
        }
        let mut records = Vec::new();
        for (broker, (preferred_for, elsewhere)) in by_broker {
            let imbalanced = elsewhere.len() * 100 > preferred_for * percentage as usize;
            if !imbalanced || !self.image.is_live(broker) || !self.heard.contains(&broker) {
                continue;
            }
            for (name, p, part) in elsewhere {
                if let Ok(next) = self.preferred_move(part) {
                    records.push(partition_record(name, p, next));
                }
            }
        }
        records
    }

    /// The partition led by its preferred replica, or why it cannot be (Kafka's answers to
    /// ElectLeaders): ELECTION_NOT_NEEDED if it already leads, PREFERRED_LEADER_NOT_AVAILABLE if
    /// it is not in the ISR, fenced, or not heard by this controller.
    fn preferred_move(&self, part: &PartitionInfo) -> Result<PartitionInfo, Code> {
        let Some(&preferred) = part.replicas.first() else { return Err(Code::PreferredLeaderNotAvailable) };
        if part.leader == preferred {
            return Err(Code::ElectionNotNeeded);
        }
        if !part.isr.contains(&preferred) || !self.image.is_live(preferred) || !self.heard.contains(&preferred) {
            return Err(Code::PreferredLeaderNotAvailable);
        }
        Ok(PartitionInfo { leader: preferred, leader_epoch: part.leader_epoch.saturating_add(1), partition_epoch: part.partition_epoch.saturating_add(1), ..part.clone() })
    }

    /// An UNCLEAN election of `part` (KIP-460): only where no live leader is left; the first
    /// live ISR member if any (a clean election), else the first live replica alone in a new
    /// ISR, whose log becomes the truth (committed records may be lost, as the operator asked).
    fn unclean_move(&self, part: &PartitionInfo) -> Result<PartitionInfo, Code> {
        let live = |r: i32| self.image.is_live(r) && self.heard.contains(&r);
        if part.leader != no_leader && live(part.leader) {
            return Err(Code::ElectionNotNeeded);
        }
        let (leader, isr, elr, last_known_elr) = match part.replicas.iter().copied().find(|&r| part.isr.contains(&r) && live(r)) {
            Some(l) => (l, part.isr.clone(), part.elr.clone(), part.last_known_elr.clone()),
            None => match part.replicas.iter().copied().find(|&r| live(r)) {
                Some(l) => (l, vec![l], Vec::new(), Vec::new()),
                None => return Err(Code::EligibleLeadersNotAvailable),
            },
        };
        Ok(PartitionInfo { leader, isr, elr, last_known_elr, leader_epoch: part.leader_epoch.saturating_add(1), partition_epoch: part.partition_epoch.saturating_add(1), ..part.clone() })
    }

    /// ElectLeaders (API 43) with election type UNCLEAN (`unclean`) or PREFERRED: each named
    /// partition moves where it can — to its preferred replica (whatever the imbalance), or for
    /// an unclean election to a live replica where no live leader is left — or gets the error
    /// Kafka answers (UNKNOWN_TOPIC_OR_PARTITION for one that does not exist). `None` asks for
    /// every partition, and then, as Kafka, answers only those that moved or could not. One
    /// record per move, in the order asked.
    pub fn elect_leaders(&self, unclean: bool, partitions: Option<&[(String, i32)]>) -> (Vec<(String, i32, Option<Code>)>, Vec<MetadataRecord>) {
        let every: Vec<(String, i32)>;
        let asked = match partitions {
            Some(list) => list,
            None => {
                every = self.image.topics.iter().flat_map(|(name, t)| (0..t.partitions.len() as i32).map(move |p| (name.clone(), p))).collect();
                &every
            }
        };
        let (mut results, mut records) = (Vec::new(), Vec::new());
        for (name, p) in asked {
            let outcome = match self.image.partition(name, *p) {
                None => Err(Code::UnknownTopicOrPartition),
                Some(part) if unclean => self.unclean_move(part),
                Some(part) => self.preferred_move(part),
            };
            match outcome {
                Ok(next) => {
                    if records.iter().any(|r| matches!(r, MetadataRecord::Partition { topic, partition, .. } if topic == name && partition == p)) {
                        continue; // named twice: moved once
                    }
                    records.push(partition_record(name, *p, next));
                    results.push((name.clone(), *p, None));
                }
                Err(Code::ElectionNotNeeded) if partitions.is_none() => {}
                Err(code) => results.push((name.clone(), *p, Some(code))),
            }
        }
        (results, records)
    }
}
