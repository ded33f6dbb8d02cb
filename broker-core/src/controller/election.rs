//! How a partition's leader and ISR change when brokers are fenced, re-register or come back:
//! Kafka's PartitionChangeBuilder and generateLeaderAndIsrUpdates, for the changes this
//! controller makes. Decisions only: it changes a scratch copy of the image, never the real one.

use super::partition_record;
use crate::metadata::topic::{parse_bool, unclean_leader_election_config};
use crate::metadata::{no_leader, Image, MetadataRecord, PartitionInfo};
use std::collections::BTreeSet;

/// Records being decided, applied to a scratch copy of the image as they are made, so each
/// decision in a batch sees the ones before it exactly as replay will.
pub(super) struct Draft<'a> {
    image: Image,
    /// Brokers this controller has heard from since it started: only they may be elected.
    heard: &'a BTreeSet<i32>,
    pub(super) records: Vec<MetadataRecord>,
}

impl<'a> Draft<'a> {
    pub(super) fn new(image: &Image, heard: &'a BTreeSet<i32>) -> Draft<'a> {
        Draft { image: image.clone(), heard, records: Vec::new() }
    }

    pub(super) fn push(&mut self, record: MetadataRecord) {
        self.image.apply(self.image.offset.saturating_add(1), &record);
        self.records.push(record);
    }

    /// Takes `removed` out of every ISR (but never the last member) and out of leadership,
    /// then elects a leader wherever the current one is gone or was removed: Kafka's
    /// generateLeaderAndIsrUpdates. With nobody removed, this elects leaderless partitions.
    pub(super) fn reelect(&mut self, removed: &[i32], default_unclean: bool) {
        let mut changes = Vec::new();
        for (name, t) in &self.image.topics {
            let unclean = t.config.get(unclean_leader_election_config).and_then(|v| parse_bool(v)).unwrap_or(default_unclean);
            for (p, part) in (0..).zip(&t.partitions) {
                let touched = removed.iter().any(|r| part.isr.contains(r) || part.leader == *r);
                if !(touched || part.leader == no_leader) {
                    continue;
                }
                // A current leader stays while it is live and not removed. A broker this
                // controller has not heard from may have restarted and lost its log while no
                // controller was watching: it is not newly elected until it speaks.
                let keep = |r: i32| !removed.contains(&r) && self.image.is_live(r);
                let eligible = |r: i32| keep(r) && self.heard.contains(&r);
                if let Some(next) = elect(part, removed, keep, eligible, unclean) {
                    changes.push(partition_record(name, p, next));
                }
            }
        }
        for record in changes {
            self.push(record);
        }
    }
}

/// The next state of one partition, or None if it does not change. The ISR loses `removed`
/// one at a time while more than one member is left: KRaft keeps the last member, which holds
/// every committed record, so the partition can come back without loss when that broker does.
/// The current leader stays if still live and not removed; else the first replica (replica order) that is
/// in the ISR and eligible; else, with unclean election, the first eligible replica alone in a
/// new ISR (committed records may be lost); else none.
fn elect(part: &PartitionInfo, removed: &[i32], keep: impl Fn(i32) -> bool, eligible: impl Fn(i32) -> bool, unclean: bool) -> Option<PartitionInfo> {
    let mut isr = part.isr.clone();
    for r in removed {
        if isr.len() > 1 {
            isr.retain(|x| x != r);
        }
    }
    let in_isr = |r: i32| isr.contains(&r) && eligible(r);
    let leader = if isr.contains(&part.leader) && keep(part.leader) {
        Some(part.leader)
    } else {
        part.replicas.iter().copied().find(|&r| in_isr(r))
    };
    let leader = match leader {
        Some(l) => l,
        None if unclean => match part.replicas.iter().copied().find(|&r| eligible(r)) {
            Some(l) => {
                isr = vec![l];
                l
            }
            None => no_leader,
        },
        None => no_leader,
    };
    if leader == part.leader && isr == part.isr {
        return None;
    }
    let leader_epoch = if leader == part.leader { part.leader_epoch } else { part.leader_epoch.saturating_add(1) };
    Some(PartitionInfo { replicas: part.replicas.clone(), isr, leader, leader_epoch, partition_epoch: part.partition_epoch.saturating_add(1) })
}
