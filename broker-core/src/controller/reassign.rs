//! Partition reassignment (KIP-455: AlterPartitionReassignments, ListPartitionReassignments;
//! what `kafka-reassign-partitions.sh --execute` sends). A partition's replica set moves to a
//! target in three steps, each one `Partition` record:
//!
//! 1. **Start.** The assignment becomes the target followed by the current replicas that leave
//!    (`replicas = target + (current - target)`, Kafka's PartitionReassignmentReplicas), with
//!    `adding = target - current` and `removing = current - target`. Leader and ISR stay. The
//!    new replicas open an empty log and fetch from the leader like any follower.
//! 2. **Catch-up.** The leader adds a new replica to the ISR once it has caught up, by the
//!    ordinary AlterPartition.
//! 3. **Completion**, in the same record as the ISR change that makes it possible: once every
//!    adding replica is in the ISR (and the ISR without the leaving replicas is not empty), the
//!    assignment becomes the target, the leaving replicas leave the ISR, and a leader that
//!    leaves is replaced by the first target replica in the ISR that may lead (its epoch
//!    bumped). A broker that is no longer a replica removes its copy and its files
//!    (`broker::reconcile`).
//!
//! A target that only removes replicas completes at once when the ISR allows it. A new target
//! during a reassignment starts from the current (grown) assignment, so replicas it no longer
//! wants are removed as any other. Cancelling (a null target) reverts to the original
//! replicas: the adding ones leave the assignment and the ISR, refused
//! (INVALID_REPLICA_ASSIGNMENT) if that would empty the ISR.
//!
//! Decisions only, like every controller decision: records out, the image untouched.

use super::{partition_record, Controller, Error};
use crate::metadata::{no_leader, MetadataRecord, PartitionInfo};

/// One partition's reassignment as asked: its topic, index and target (None: cancel).
pub type Asked = (String, i32, Option<Vec<i32>>);

impl Controller {
    /// AlterPartitionReassignments: each partition's answer in the order asked, and the records
    /// of those that change. `keep_replication_factor` is v1's `allow_replication_factor_change
    /// = false` (KIP-860): a target of another size is then refused.
    pub fn alter_reassignments(&self, asked: &[Asked], keep_replication_factor: bool) -> (Vec<(String, i32, Result<(), Error>)>, Vec<MetadataRecord>) {
        let (mut answers, mut records) = (Vec::new(), Vec::new());
        for (name, p, target) in asked {
            if records.iter().any(|r| matches!(r, MetadataRecord::Partition { topic, partition, .. } if topic == name && partition == p)) {
                answers.push((name.clone(), *p, Err(Error::InvalidRequest(format!("{name}-{p} is named twice")))));
                continue;
            }
            let outcome = match self.image.partition(name, *p) {
                None => Err(Error::UnknownTopicOrPartition(format!("{name}-{p}"))),
                Some(part) => match target {
                    Some(target) => self.start_reassignment(part, target, keep_replication_factor),
                    None => self.cancel_reassignment(name, *p, part),
                },
            };
            match outcome {
                Ok(Some(next)) => {
                    records.push(partition_record(name, *p, next));
                    answers.push((name.clone(), *p, Ok(())));
                }
                Ok(None) => answers.push((name.clone(), *p, Ok(()))),
                Err(e) => answers.push((name.clone(), *p, Err(e))),
            }
        }
        (answers, records)
    }

    /// The partitions being reassigned, among `asked` (None: all), in name order.
    pub fn reassignments(&self, asked: Option<&[(String, i32)]>) -> Vec<(String, i32, PartitionInfo)> {
        let ongoing = |part: &PartitionInfo| !part.adding.is_empty() || !part.removing.is_empty();
        match asked {
            Some(list) => list.iter().filter_map(|(n, p)| self.image.partition(n, *p).filter(|x| ongoing(x)).map(|x| (n.clone(), *p, x.clone()))).collect(),
            None => self
                .image
                .topics
                .iter()
                .flat_map(|(n, t)| (0..).zip(&t.partitions).filter(|(_, x)| ongoing(x)).map(move |(p, x)| (n.clone(), p, x.clone())))
                .collect(),
        }
    }

    /// Step 1 (and 3, when it may complete at once). None: the target is the assignment already.
    fn start_reassignment(&self, part: &PartitionInfo, target: &[i32], keep_replication_factor: bool) -> Result<Option<PartitionInfo>, Error> {
        self.check_target(target)?;
        let original = part.replicas.len() - part.adding.len().min(part.replicas.len());
        if keep_replication_factor && target.len() != original {
            return Err(Error::InvalidReplicationFactor(format!("target {target:?} changes the replication factor from {original}, and the request does not allow that")));
        }
        let leaving: Vec<i32> = part.replicas.iter().copied().filter(|r| !target.contains(r)).collect();
        let replicas: Vec<i32> = target.iter().copied().chain(leaving.iter().copied()).collect();
        // Against the replicas before any reassignment: one still catching up for an earlier
        // target is still adding.
        let adding: Vec<i32> = target.iter().copied().filter(|r| !part.replicas.contains(r) || part.adding.contains(r)).collect();
        if replicas == part.replicas && adding == part.adding && leaving == part.removing {
            return Ok(None);
        }
        // The ISR and the ELRs are kept in replica order, as everywhere.
        let ordered = |list: &[i32]| replicas.iter().copied().filter(|r| list.contains(r)).collect::<Vec<i32>>();
        let (isr, elr, last_known_elr) = (ordered(&part.isr), ordered(&part.elr), ordered(&part.last_known_elr));
        let next = PartitionInfo { replicas, isr, elr, last_known_elr, adding, removing: leaving, partition_epoch: part.partition_epoch.saturating_add(1), ..part.clone() };
        Ok(Some(self.complete_if_ready(next)))
    }

    /// Kafka's validation of a manual assignment: not empty, no broker twice, every broker
    /// registered (INVALID_REPLICA_ASSIGNMENT).
    fn check_target(&self, target: &[i32]) -> Result<(), Error> {
        if target.is_empty() {
            return Err(Error::InvalidReplicaAssignment("the target replica list is empty".into()));
        }
        if let Some((i, r)) = target.iter().enumerate().find(|(i, r)| target[..*i].contains(r)) {
            return Err(Error::InvalidReplicaAssignment(format!("broker {r} is named twice in the target {target:?} (at {i})")));
        }
        match target.iter().find(|r| !self.image.brokers.contains_key(r)) {
            Some(r) => Err(Error::InvalidReplicaAssignment(format!("broker {r} in the target {target:?} is not registered"))),
            None => Ok(()),
        }
    }

    /// A null target: back to the replicas before the reassignment.
    fn cancel_reassignment(&self, name: &str, p: i32, part: &PartitionInfo) -> Result<Option<PartitionInfo>, Error> {
        if part.adding.is_empty() && part.removing.is_empty() {
            return Err(Error::NoReassignmentInProgress(format!("{name}-{p}")));
        }
        let isr: Vec<i32> = part.isr.iter().copied().filter(|r| !part.adding.contains(r)).collect();
        if isr.is_empty() {
            return Err(Error::InvalidReplicaAssignment(format!("cancelling the reassignment of {name}-{p} would leave no in-sync replica (ISR {:?}, adding {:?})", part.isr, part.adding)));
        }
        let replicas: Vec<i32> = part.replicas.iter().copied().filter(|r| !part.adding.contains(r)).collect();
        let next = PartitionInfo { replicas, isr, adding: Vec::new(), removing: Vec::new(), partition_epoch: part.partition_epoch.saturating_add(1), ..part.clone() };
        Ok(Some(self.keep_or_elect(part, next)))
    }

    /// Step 3 on a partition's next state (its partition epoch already bumped): the reassignment
    /// completes if every adding replica is in the ISR and the ISR keeps a member of the
    /// target; otherwise the state is returned as it is (Kafka's maybeCompleteReassignment).
    pub(super) fn complete_if_ready(&self, next: PartitionInfo) -> PartitionInfo {
        if next.adding.is_empty() && next.removing.is_empty() {
            return next;
        }
        let isr: Vec<i32> = match self.config.rules().reassignment_waits_for_catch_up() {
            true => next.isr.iter().copied().filter(|r| !next.removing.contains(r)).collect(),
            // A planted rule: every adding replica counts as in sync, caught up or not.
            false => next.replicas.iter().copied().filter(|r| (next.isr.contains(r) || next.adding.contains(r)) && !next.removing.contains(r)).collect(),
        };
        if isr.is_empty() || next.adding.iter().any(|r| !isr.contains(r)) {
            return next;
        }
        let replicas: Vec<i32> = next.replicas.iter().copied().filter(|r| !next.removing.contains(r)).collect();
        let kept = |list: &[i32]| list.iter().copied().filter(|r| replicas.contains(r)).collect::<Vec<i32>>();
        let (elr, last_known_elr) = (kept(&next.elr), kept(&next.last_known_elr));
        let done = PartitionInfo { replicas, isr, elr, last_known_elr, adding: Vec::new(), removing: Vec::new(), ..next.clone() };
        self.keep_or_elect(&next, done)
    }

    /// `next` with its leader kept if it is still in the ISR, else the first replica in the ISR
    /// that may lead (live, heard by this controller), else none; the leader epoch moves with
    /// the leader.
    fn keep_or_elect(&self, before: &PartitionInfo, mut next: PartitionInfo) -> PartitionInfo {
        if next.leader != no_leader && next.isr.contains(&next.leader) {
            return next;
        }
        let eligible = |r: i32| next.isr.contains(&r) && self.image.is_live(r) && self.heard.contains(&r);
        let leader = next.replicas.iter().copied().find(|&r| eligible(r)).unwrap_or(no_leader);
        next.leader = leader;
        if next.leader != before.leader {
            next.leader_epoch = before.leader_epoch.saturating_add(1);
        }
        next
    }
}
