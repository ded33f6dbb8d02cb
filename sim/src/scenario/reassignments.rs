//! The scenario's partition reassignments (KIP-455): at each `at_ms` the harness's admin asks
//! the active controller to move a partition to a target replica set, or to cancel the
//! reassignment in progress. Declarations and their validation only; `cluster::reassign`
//! sends them and `checkers::reassignments` judges where they lead.

use super::Scenario;
use serde::{Deserialize, Serialize};

/// Most reassignments a scenario may ask for: each is a request retried until answered.
pub const reassignments_max: usize = 64;

/// One reassignment: at `at_ms` (from the run's start, within the safety phase) move
/// `topic`-`partition` to `replicas` (broker ids, the first the preferred leader), or with
/// `cancel = true` send a null target, which cancels the reassignment in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReassignmentSpec {
    pub at_ms: u64,
    pub topic: String,
    pub partition: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
}

impl ReassignmentSpec {
    /// The target to send: the replicas, or None for a cancel.
    pub fn target(&self) -> Option<Vec<i32>> {
        self.replicas.clone().filter(|_| !self.cancel)
    }
}

impl Scenario {
    /// Each reassignment in the safety phase, of a declared partition, to a target of
    /// distinct brokers of this cluster (or a cancel).
    pub(super) fn validate_reassignments(&self) -> Result<(), String> {
        if self.reassignments.len() > reassignments_max {
            return Err(format!("scenario: {} reassignments; at most {reassignments_max}", self.reassignments.len()));
        }
        for r in &self.reassignments {
            let what = format!("scenario: reassignments: the one at {} ms of {}-{}", r.at_ms, r.topic, r.partition);
            if r.at_ms >= self.duration_ms {
                return Err(format!("{what}: at_ms must be within the safety phase, below duration_ms {}", self.duration_ms));
            }
            let Some(topic) = self.topics.iter().find(|t| t.name == r.topic) else {
                return Err(format!("{what}: topic '{}' is not among the scenario's topics", r.topic));
            };
            if !(0..topic.partitions).contains(&r.partition) {
                return Err(format!("{what}: partition {} is not one of {}'s 0..{}", r.partition, r.topic, topic.partitions));
            }
            let replicas = match (&r.replicas, r.cancel) {
                (Some(replicas), false) => replicas,
                (None, true) => continue,
                (Some(_), true) => return Err(format!("{what}: names replicas and cancel = true; a cancel has no target")),
                (None, false) => return Err(format!("{what}: names neither replicas nor cancel = true")),
            };
            if replicas.is_empty() {
                return Err(format!("{what}: replicas is empty; a target names at least one broker"));
            }
            if let Some(b) = replicas.iter().find(|&&b| !(0..self.brokers as i32).contains(&b)) {
                return Err(format!("{what}: broker {b} in replicas {replicas:?} is not one of 0..{}", self.brokers));
            }
            if let Some((i, b)) = replicas.iter().enumerate().find(|(i, b)| replicas[..*i].contains(b)) {
                return Err(format!("{what}: broker {b} is named twice in replicas {replicas:?} (at {i})"));
            }
        }
        Ok(())
    }
}
