//! Which partitions of a coordinator's state topic (`__consumer_offsets`,
//! `__transaction_state`) this node leads, at which leader epoch, and how far each has loaded:
//! the part of ownership the group and transaction coordinators share. A key (a group id, a
//! transactional id) belongs to the partition Kafka places it on ([`partition_for`]); a
//! coordinator serves it only once that partition is led here and loaded. What a coordinator
//! drops when it resigns a partition is its own.

use super::partition_for;
use crate::kafka::Code;
use std::collections::BTreeMap;

/// A state partition this node leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Led {
    pub leader_epoch: i32,
    /// The next offset to load, while loading.
    pub loading: Option<i64>,
}

/// The state topic's partitions, and those led here.
#[derive(Debug, Default)]
pub struct Hosting {
    /// Partitions of the state topic in the metadata (0: not created yet).
    partitions: i32,
    led: BTreeMap<i32, Led>,
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
        self.led.insert(p, Led { leader_epoch, loading: Some(start) });
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
