//! Which partitions of a coordinator's state topic (`__consumer_offsets`,
//! `__transaction_state`) this node leads, at which leader epoch, and how far each has loaded:
//! the part of ownership the group and transaction coordinators share. A key (a group id, a
//! transactional id) belongs to the partition Kafka places it on ([`partition_for`]); a
//! coordinator serves it only once that partition is led here and loaded. What a coordinator
//! drops when it resigns a partition is its own. The load's steps are jobs the node runs off
//! its gate (`node::coordinator_load`); this keeps which job each partition waits for: one at a
//! time per partition, whatever leadership handed it out, and a step's records taken only by
//! the leadership that asked for them, from the offset it asked from.

use super::partition_for;
use crate::kafka::Code;
use std::collections::BTreeMap;

/// A state partition this node leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Led {
    pub leader_epoch: i32,
    /// The next offset to load, while loading.
    pub loading: Option<i64>,
    /// The load job handed out for this leadership, whose report it waits for.
    pub load_job: Option<u64>,
    /// A load step failed: asked again on the coordinator's next tick, not at once.
    pub load_held: bool,
}

/// The state topic's partitions, and those led here.
#[derive(Debug, Default)]
pub struct Hosting {
    /// Partitions of the state topic in the metadata (0: not created yet).
    partitions: i32,
    led: BTreeMap<i32, Led>,
    /// Load jobs out, by partition, whatever leadership handed them out: until its report
    /// comes, a job of a leadership since ended holds the partition's next step back.
    loads_out: BTreeMap<i32, u64>,
    /// The number of the last load job handed out.
    loads: u64,
}

impl Hosting {
    /// The state topic's partition count (0: it does not exist).
    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    /// The partition `key` is placed on.
    pub fn partition_of(&self, key: &str) -> i32 {
        partition_for(key, self.partitions)
    }

    /// The state topic has `partitions` partitions now: when that changed, every partition led
    /// here, for the caller to resign before [`Hosting::set_partitions`] (keys move).
    pub fn moved(&self, partitions: i32) -> Vec<i32> {
        match partitions != self.partitions {
            true => self.led.keys().copied().collect(),
            false => Vec::new(),
        }
    }

    pub fn set_partitions(&mut self, partitions: i32) {
        self.partitions = partitions;
    }

    /// This node now leads partition `p` under `leader_epoch`, its log starting at `start`:
    /// it loads from there.
    pub fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64) {
        self.led.insert(p, Led { leader_epoch, loading: Some(start), load_job: None, load_held: false });
    }

    /// This node no longer leads partition `p`.
    pub fn resign(&mut self, p: i32) {
        self.led.remove(&p);
    }

    pub fn get(&self, p: i32) -> Option<&Led> {
        self.led.get(&p)
    }

    pub fn get_mut(&mut self, p: i32) -> Option<&mut Led> {
        self.led.get_mut(&p)
    }

    /// Whether no partition is led here.
    pub fn is_empty(&self) -> bool {
        self.led.is_empty()
    }

    /// The partitions led here and their leader epochs.
    pub fn epochs(&self) -> BTreeMap<i32, i32> {
        self.led.iter().map(|(p, o)| (*p, o.leader_epoch)).collect()
    }

    /// Partitions still loading, with the next offset to load.
    pub fn loading(&self) -> Vec<(i32, i64)> {
        self.led.iter().filter_map(|(p, o)| o.loading.map(|n| (*p, n))).collect()
    }

    /// Partitions loading whose next step may be handed out (no job out for them, none held
    /// back after a failure), with their leader epoch and the next offset to load.
    pub fn loads_due(&self) -> Vec<(i32, i32, i64)> {
        let due = self.led.iter().filter(|(p, o)| !o.load_held && !self.loads_out.contains_key(p));
        due.filter_map(|(p, o)| o.loading.map(|next| (*p, o.leader_epoch, next))).collect()
    }

    /// A job for partition `p`'s next load step is handed out: its number.
    pub fn load_out(&mut self, p: i32) -> u64 {
        self.loads += 1;
        self.loads_out.insert(p, self.loads);
        if let Some(o) = self.led.get_mut(&p) {
            o.load_job = Some(self.loads);
        }
        self.loads
    }

    /// Load job `job` of partition `p` reported: it is out no more. Whether its step is the one
    /// `p` waits for: handed out under this leadership, at `leader_epoch`, and `p` still loads
    /// from `next`.
    pub fn load_back(&mut self, p: i32, job: u64, leader_epoch: i32, next: i64) -> bool {
        if self.loads_out.get(&p) == Some(&job) {
            self.loads_out.remove(&p);
        }
        let Some(o) = self.led.get_mut(&p).filter(|o| o.load_job == Some(job)) else { return false };
        o.load_job = None;
        o.leader_epoch == leader_epoch && o.loading == Some(next)
    }

    /// Partition `p`'s load step failed: it stays loading, asked again on the next tick.
    pub fn load_failed(&mut self, p: i32) {
        if let Some(o) = self.led.get_mut(&p) {
            o.load_held = true;
        }
    }

    /// The coordinator's tick: steps held back after a failure are asked again.
    pub fn retry_loads(&mut self) {
        self.led.values_mut().for_each(|o| o.load_held = false);
    }

    /// The partition of `key`, if this node serves it now: COORDINATOR_NOT_AVAILABLE before the
    /// topic exists, NOT_COORDINATOR where another node leads it, COORDINATOR_LOAD_IN_PROGRESS
    /// while it loads.
    pub fn owner(&self, key: &str) -> Result<i32, Code> {
        if self.partitions == 0 {
            return Err(Code::CoordinatorNotAvailable);
        }
        let p = self.partition_of(key);
        match self.led.get(&p) {
            None => Err(Code::NotCoordinator),
            Some(o) if o.loading.is_some() => Err(Code::CoordinatorLoadInProgress),
            Some(_) => Ok(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_job_out_holds_its_partition_until_reported_and_loads_only_for_its_leadership() {
        let mut h = Hosting::default();
        h.set_partitions(2);
        h.take_over(0, 5, 0);
        h.take_over(1, 5, 10);
        assert_eq!(h.loads_due(), vec![(0, 5, 0), (1, 5, 10)]);
        let job = h.load_out(0);
        assert_eq!(h.loads_due(), vec![(1, 5, 10)], "one job at a time");
        // The partition moves away and back while the job runs: that job still holds it.
        h.resign(0);
        h.take_over(0, 6, 0);
        assert_eq!(h.loads_due(), vec![(1, 5, 10)]);
        assert!(!h.load_back(0, job, 5, 0), "another leadership's step");
        assert_eq!(h.loads_due(), vec![(0, 6, 0), (1, 5, 10)], "asked again once reported");
        let job = h.load_out(0);
        assert!(!h.load_back(0, job, 6, 3), "a step from another offset");
        let job = h.load_out(0);
        assert!(h.load_back(0, job, 6, 0));
        assert!(!h.load_back(0, job, 6, 0), "a report taken twice");
        // A failed step waits for the next tick.
        let job = h.load_out(1);
        assert!(h.load_back(1, job, 5, 10));
        h.load_failed(1);
        assert_eq!(h.loads_due(), vec![(0, 6, 0)]);
        h.retry_loads();
        assert_eq!(h.loads_due(), vec![(0, 6, 0), (1, 5, 10)]);
    }
}
