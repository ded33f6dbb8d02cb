//! Brokers added to and removed from the cluster while the run goes, as an operator grows or
//! shrinks it: a broker that `joins` late (its process first started at `at_ms`; it registers
//! with the controller quorum like any broker) and a broker `decommissioned` (every replica
//! moved off it, then its process stopped for good and its registration removed).
//! Declarations and their validation only; `cluster::membership` makes them happen and
//! `checkers::membership` judges where they leave the cluster.

use super::Scenario;
use serde::{Deserialize, Serialize};

/// Most joins, and most decommissions, a scenario may ask for: a cluster has at most
/// `brokers_max` brokers, and each change is a task of the harness.
pub const membership_changes_max: usize = super::brokers_max as usize;

/// Broker `broker` (one of `0..brokers`) is not started with the others: its process first
/// starts at `at_ms` (from the run's start, within the safety phase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinSpec {
    pub at_ms: u64,
    pub broker: u32,
}

/// At `at_ms` the admin moves every replica off broker `broker` (a plan from
/// `broker_core::client::plan`, as `seedlog reassign generate --remove-broker` makes it), waits
/// for the moves to complete, stops the broker's process for good and unregisters it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecommissionSpec {
    pub at_ms: u64,
    pub broker: u32,
}

impl Scenario {
    /// When broker `id` joins, if it joins late.
    pub fn join_ms(&self, id: u32) -> Option<u64> {
        self.joins.iter().find(|j| j.broker == id).map(|j| j.at_ms)
    }

    /// When broker `id` is decommissioned, if it is.
    pub fn decommission_ms(&self, id: u32) -> Option<u64> {
        self.decommissions.iter().find(|d| d.broker == id).map(|d| d.at_ms)
    }

    /// The brokers started with the cluster (every broker that does not join late).
    pub fn initial_brokers(&self) -> Vec<u32> {
        (0..self.brokers).filter(|&i| self.join_ms(i).is_none()).collect()
    }

    /// Joins and decommissions: in the safety phase, each of a broker of this cluster that is
    /// not a controller voter (a voter leaves the quorum only through KIP-853's RemoveRaftVoter,
    /// which the harness does not send), each broker at most once, a decommission after its
    /// broker's join; every topic's replicas fit on the brokers started with the cluster and on
    /// those left after the decommissions; a reassignment names a joining broker only from its
    /// join and a decommissioned one only before its decommission.
    pub(super) fn validate_membership(&self) -> Result<(), String> {
        let voters = self.broker.controller_voters.unwrap_or(1);
        for (field, list) in [("joins", self.joins.iter().map(|j| (j.at_ms, j.broker)).collect::<Vec<_>>()), ("decommissions", self.decommissions.iter().map(|d| (d.at_ms, d.broker)).collect())] {
            if list.len() > membership_changes_max {
                return Err(format!("scenario: {} {field}; at most {membership_changes_max}", list.len()));
            }
            for (i, &(at_ms, broker)) in list.iter().enumerate() {
                let what = format!("scenario: {field}: the one at {at_ms} ms of broker {broker}");
                if at_ms >= self.duration_ms {
                    return Err(format!("{what}: at_ms must be within the safety phase, below duration_ms {}", self.duration_ms));
                }
                if broker >= self.brokers {
                    return Err(format!("{what}: broker {broker} is not one of 0..{}", self.brokers));
                }
                if broker < voters {
                    return Err(format!("{what}: broker {broker} is a controller voter (the first {voters}); only a broker that is not one may join late or be decommissioned"));
                }
                if list[..i].iter().any(|&(_, b)| b == broker) {
                    return Err(format!("{what}: broker {broker} is named twice in {field}"));
                }
            }
        }
        for d in &self.decommissions {
            if self.join_ms(d.broker).is_some_and(|j| j >= d.at_ms) {
                return Err(format!("scenario: decommissions: broker {} is decommissioned at {} ms, not after it joins", d.broker, d.at_ms));
            }
        }
        let (initial, last) = (self.initial_brokers().len(), self.brokers as usize - self.decommissions.len());
        if let Some(t) = self.topics.iter().find(|t| t.replication_factor as usize > initial.min(last)) {
            return Err(format!("scenario: topic '{}' has {} replicas; {initial} brokers start with the cluster and {last} are left after the decommissions", t.name, t.replication_factor));
        }
        for r in &self.reassignments {
            for &b in r.replicas.iter().flatten().filter(|&&b| b >= 0) {
                let b = b as u32;
                if self.join_ms(b).is_some_and(|j| r.at_ms < j) {
                    return Err(format!("scenario: reassignments: the one at {} ms of {}-{} names broker {b}, which joins only at {} ms", r.at_ms, r.topic, r.partition, self.join_ms(b).unwrap_or(0)));
                }
                if self.decommission_ms(b).is_some_and(|d| r.at_ms >= d) {
                    return Err(format!("scenario: reassignments: the one at {} ms of {}-{} names broker {b}, decommissioned from {} ms", r.at_ms, r.topic, r.partition, self.decommission_ms(b).unwrap_or(0)));
                }
            }
        }
        Ok(())
    }
}
