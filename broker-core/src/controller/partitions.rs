//! CreatePartitions: a topic grows (Kafka never shrinks one). The new partitions are placed as
//! a new topic's are — round robin over the live brokers, each the topic's replication factor,
//! the first replica leading — continuing from the topic's partition count, and become one
//! `Partition` record each, which the image takes as the topic's next partitions. Like every
//! decision here it returns records and never changes the image.

use super::{assign, partition_record, Controller, Error};
use crate::constants::partitions_per_topic_max;
use crate::metadata::{no_leader, MetadataRecord, PartitionInfo};

impl Controller {
    /// Topic `name` grows to `count` partitions.
    pub fn create_partitions(&self, name: &str, count: i32) -> Result<Vec<MetadataRecord>, Error> {
        let topic = self.image.topics.get(name).ok_or_else(|| Error::UnknownTopicOrPartition(name.to_string()))?;
        let current = topic.partitions.len() as i32;
        if count <= current {
            return Err(Error::InvalidPartitions(format!("topic {name} has {current} partitions; a topic only grows, to more than that, not to {count}")));
        }
        if count > partitions_per_topic_max {
            return Err(Error::InvalidPartitions(format!("{count} partitions; must be at most {partitions_per_topic_max}")));
        }
        // A partition being reassigned counts its target's size, not the grown set it has meanwhile.
        let rf = topic.partitions.iter().map(|p| p.replicas.len().saturating_sub(p.removing.len())).max().unwrap_or(1).max(1);
        let live: Vec<i32> = self.image.live_brokers().map(|b| b.id).collect();
        if rf > live.len() {
            return Err(Error::InvalidReplicationFactor(format!("topic {name}'s replication factor {rf} is larger than the {} live (unfenced) brokers", live.len())));
        }
        let assignment = assign(&live, current as usize, count - current, rf);
        self.check_broker_load(&assignment)?;
        Ok((current..)
            .zip(assignment)
            .map(|(p, replicas)| {
                let leader = replicas.first().copied().unwrap_or(no_leader);
                partition_record(name, p, PartitionInfo { leader, isr: replicas.clone(), replicas, leader_epoch: 0, partition_epoch: 0, elr: Vec::new(), last_known_elr: Vec::new(), adding: Vec::new(), removing: Vec::new() })
            })
            .collect())
    }
}
