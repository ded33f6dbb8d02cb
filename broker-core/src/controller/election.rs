//! How a partition's leader and ISR change when brokers are fenced, re-register or come back:
//! Kafka's PartitionChangeBuilder and generateLeaderAndIsrUpdates, for the changes this
//! controller makes. Decisions only: it changes a scratch copy of the image, never the real one.
//! With `eligible.leader.replicas.enable` the ISR may empty into the ELR (KIP-966, `elr.rs`).

use super::{elr, partition_record, ControllerConfig};
use crate::metadata::topic::{parse_bool, unclean_leader_election_config};
use crate::metadata::{no_leader, Image, MetadataRecord, PartitionInfo, TopicInfo};
use std::collections::BTreeSet;

/// Records being decided, applied to a scratch copy of the image as they are made, so each
/// decision in a batch sees the ones before it exactly as replay will.
pub(super) struct Draft<'a> {
    image: Image,
    /// Brokers this controller has heard from since it started: only they may be elected.
    heard: &'a BTreeSet<i32>,
    config: &'a ControllerConfig,
    pub(super) records: Vec<MetadataRecord>,
}

impl<'a> Draft<'a> {
    pub(super) fn new(image: &Image, heard: &'a BTreeSet<i32>, config: &'a ControllerConfig) -> Draft<'a> {
        Draft { image: image.clone(), heard, config, records: Vec::new() }
    }

    pub(super) fn push(&mut self, record: MetadataRecord) {
        self.image.apply(self.image.offset.saturating_add(1), &record);
        self.records.push(record);
    }

    /// Takes `removed` out of every ISR (but never the last member, unless ELR is on) and out
    /// of leadership, then elects a leader wherever the current one is gone or was removed:
    /// Kafka's generateLeaderAndIsrUpdates. With nobody removed, this elects leaderless
    /// partitions.
    pub(super) fn reelect(&mut self, removed: &[i32]) {
        self.reelect_after(removed, &[]);
    }

    /// [`Draft::reelect`], where `unclean` brokers registered again after an unclean shutdown
    /// (KIP-966): they may have lost unflushed records, so with ELR on they also leave every
    /// ELR (into the last-known ELR) and are elected from nowhere but the ISR.
    pub(super) fn reelect_after(&mut self, removed: &[i32], unclean: &[i32]) {
        let elr_on = self.config.eligible_leader_replicas;
        let unclean = self.config.rules().unclean_shutdowns(unclean);
        let mut changes = Vec::new();
        for (name, t) in &self.image.topics {
            let rules = Rules {
                unclean_election: t.config.get(unclean_leader_election_config).and_then(|v| parse_bool(v)).unwrap_or(self.config.unclean_leader_election),
                min_isr: elr_on.then(|| min_insync(t, self.config.min_insync_replicas)),
            };
            for (p, part) in (0..).zip(&t.partitions) {
                let touched = removed.iter().any(|r| part.isr.contains(r) || part.leader == *r) || unclean.iter().any(|r| part.elr.contains(r));
                if !(touched || part.leader == no_leader) {
                    continue;
                }
                // A current leader stays while it is live and not removed. A broker this
                // controller has not heard from may have restarted and lost its log while no
                // controller was watching: it is not newly elected until it speaks.
                let keep = |r: i32| !removed.contains(&r) && self.image.is_live(r);
                let eligible = |r: i32| keep(r) && self.heard.contains(&r);
                if let Some(next) = elect(part, removed, unclean, keep, eligible, rules) {
                    changes.push(partition_record(name, p, next));
                }
            }
        }
        for record in changes {
            self.push(record);
        }
    }
}

/// The topic's `min.insync.replicas`: its override, else the controller's default.
pub(super) fn min_insync(t: &TopicInfo, default: i32) -> i32 {
    t.config.get("min.insync.replicas").and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// What one topic's elections may do.
#[derive(Clone, Copy)]
struct Rules {
    unclean_election: bool,
    /// With ELR on: the topic's `min.insync.replicas`. None: ELR off, today's rules exactly.
    min_isr: Option<i32>,
}

/// The next state of one partition, or None if it does not change. Without ELR the ISR loses
/// `removed` one at a time while more than one member is left: the last member holds every
/// committed record, so the partition can come back without loss when that broker does. With
/// ELR the ISR may empty: who left it while it was below `min.insync.replicas` is in the ELR.
/// The current leader stays if still live and not removed; else the first replica (replica
/// order) that is in the ISR and eligible; else (ELR on) the first eligible ELR member, alone
/// in a new ISR; else, with unclean election, the first eligible replica alone in a new ISR
/// (committed records may be lost); else none.
fn elect(part: &PartitionInfo, removed: &[i32], unclean: &[i32], keep: impl Fn(i32) -> bool, eligible: impl Fn(i32) -> bool, rules: Rules) -> Option<PartitionInfo> {
    let mut isr = part.isr.clone();
    for r in removed {
        if isr.len() > 1 || rules.min_isr.is_some() {
            isr.retain(|x| x != r);
        }
    }
    // With ELR on, who shut down uncleanly cannot be elected from the ELR: it leaves it first.
    let candidates: Vec<i32> = part.elr.iter().copied().filter(|r| !unclean.contains(r)).collect();
    let in_isr = |r: i32| isr.contains(&r) && eligible(r);
    let mut leader = if isr.contains(&part.leader) && keep(part.leader) {
        Some(part.leader)
    } else {
        part.replicas.iter().copied().find(|&r| in_isr(r))
    };
    if leader.is_none() && rules.min_isr.is_some() {
        // KIP-966: an ELR member holds every record below the high watermark.
        leader = part.replicas.iter().copied().find(|&r| candidates.contains(&r) && eligible(r));
        if let Some(l) = leader {
            isr = vec![l];
        }
    }
    let mut unclean_elected = false;
    let leader = match leader {
        Some(l) => l,
        None if rules.unclean_election => match part.replicas.iter().copied().find(|&r| eligible(r)) {
            Some(l) => {
                isr = vec![l];
                unclean_elected = true;
                l
            }
            None => no_leader,
        },
        None => no_leader,
    };
    let (elr, last_known_elr) = match rules.min_isr {
        None => (Vec::new(), Vec::new()),
        // An unclean election forgets what the ELR promised: the new leader's log is the truth.
        Some(_) if unclean_elected => (Vec::new(), Vec::new()),
        Some(min) => elr::next(part, &isr, min, unclean),
    };
    if leader == part.leader && isr == part.isr && elr == part.elr && last_known_elr == part.last_known_elr {
        return None;
    }
    let leader_epoch = if leader == part.leader { part.leader_epoch } else { part.leader_epoch.saturating_add(1) };
    Some(PartitionInfo { isr, leader, leader_epoch, partition_epoch: part.partition_epoch.saturating_add(1), elr, last_known_elr, ..part.clone() })
}
