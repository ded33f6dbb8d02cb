//! The controller's decisions on topic configs after creation (AlterConfigs and
//! IncrementalAlterConfigs): the new override set, checked against this controller's defaults
//! exactly as CreateTopics checks one, becomes one `TopicConfig` record that every broker
//! replays, so every replica applies the same values and they survive restarts.
//!
//! Like every decision here it returns records and never changes the image. A change that turns
//! `unclean.leader.election.enable` on is followed, in the same batch, by the elections it now
//! allows (leaderless partitions whose ISR is gone), decided on a scratch copy that holds the
//! new config exactly as replay will.
//!
//! Group configs (a GROUP resource, KIP-848 and KIP-932) are decided the same way: the new set,
//! each name known and each value checked (`metadata::group_configs`), becomes one
//! `GroupConfig` record; the group need not exist, as in Kafka.

use super::election::Draft;
use super::{Controller, Error};
use crate::metadata::configs::{self, Op, TopicSettings};
use crate::metadata::group_configs;
use crate::metadata::throttles;
use crate::metadata::MetadataRecord;
use std::collections::BTreeMap;

impl Controller {
    /// The settings a topic without overrides gets from this controller's node: what overrides
    /// are checked against, and what APPEND and SUBTRACT start from.
    pub fn topic_defaults(&self) -> TopicSettings {
        let c = &self.config;
        TopicSettings { log: c.log.clone(), min_insync: c.min_insync_replicas, unclean_leader_election: c.unclean_leader_election }
    }

    /// IncrementalAlterConfigs for topic `name`: `ops` applied in order to its overrides.
    /// Returns no records when nothing changes.
    pub fn alter_topic_config(&self, name: &str, ops: &[(String, Op)]) -> Result<Vec<MetadataRecord>, Error> {
        let current = self.topic_overrides(name)?;
        let defaults = self.topic_defaults();
        let next = configs::alter(current, ops, |k| defaults.value(k)).map_err(Error::InvalidConfig)?;
        self.set_topic_config(name, next)
    }

    /// AlterConfigs for topic `name`: `config` replaces its overrides whole, so a config left
    /// out goes back to its default (Kafka's semantics for the legacy API).
    pub fn replace_topic_config(&self, name: &str, config: BTreeMap<String, String>) -> Result<Vec<MetadataRecord>, Error> {
        self.topic_overrides(name)?;
        self.set_topic_config(name, config)
    }

    fn topic_overrides(&self, name: &str) -> Result<&BTreeMap<String, String>, Error> {
        self.image.topics.get(name).map(|t| &t.config).ok_or_else(|| Error::UnknownTopicOrPartition(name.to_string()))
    }

    fn set_topic_config(&self, name: &str, next: BTreeMap<String, String>) -> Result<Vec<MetadataRecord>, Error> {
        TopicSettings::resolve(&self.topic_defaults(), &next).map_err(Error::InvalidConfig)?;
        if self.image.topics.get(name).is_some_and(|t| t.config == next) {
            return Ok(Vec::new());
        }
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        draft.push(MetadataRecord::TopicConfig { name: name.to_string(), config: next });
        // Only leaderless partitions can change here, and only if unclean election is now on
        // for them: with nobody removed, reelect elects where nobody leads.
        draft.reelect(&[]);
        Ok(draft.records)
    }

    /// A BROKER resource's dynamic configs (`name`: a broker id, or "" for the cluster's
    /// default), and the id they are kept under.
    pub fn broker_config(&self, name: &str) -> Result<(i32, BTreeMap<String, String>), Error> {
        let id = match name.trim() {
            "" => throttles::cluster_default,
            n => n.parse::<i32>().ok().filter(|id| *id >= 0).ok_or_else(|| Error::InvalidRequest(format!("broker resource name {name:?} is not a broker id")))?,
        };
        Ok((id, self.image.broker_configs.get(&id).cloned().unwrap_or_default()))
    }

    /// A broker's dynamic configs become `next` (one `BrokerConfig` record; none when nothing
    /// changes): only the replication throttle rates may change while brokers run.
    pub fn set_broker_config(&self, id: i32, next: BTreeMap<String, String>) -> Result<Vec<MetadataRecord>, Error> {
        for (k, v) in &next {
            throttles::check_rate(k, v).map_err(Error::InvalidConfig)?;
        }
        if self.image.broker_configs.get(&id).map_or(next.is_empty(), |c| *c == next) {
            return Ok(Vec::new());
        }
        Ok(vec![MetadataRecord::BrokerConfig { broker: id, config: next }])
    }

    /// IncrementalAlterConfigs for group `group`: `ops` applied in order to its configs. Every
    /// name an operation gives must be a group config, DELETE's too (Kafka: INVALID_CONFIG).
    /// Returns no records when nothing changes.
    pub fn alter_group_config(&self, group: &str, ops: &[(String, Op)]) -> Result<Vec<MetadataRecord>, Error> {
        group_configs::check_group_name(group).map_err(Error::InvalidRequest)?;
        for (name, _) in ops {
            group_configs::known(name).map_err(Error::InvalidConfig)?;
        }
        let current = self.image.group_configs.get(group).cloned().unwrap_or_default();
        let next = configs::alter(&current, ops, |_| None).map_err(Error::InvalidConfig)?;
        self.set_group_config(group, next)
    }

    /// AlterConfigs for group `group`: `config` replaces its configs whole.
    pub fn replace_group_config(&self, group: &str, config: BTreeMap<String, String>) -> Result<Vec<MetadataRecord>, Error> {
        group_configs::check_group_name(group).map_err(Error::InvalidRequest)?;
        self.set_group_config(group, config)
    }

    fn set_group_config(&self, group: &str, next: BTreeMap<String, String>) -> Result<Vec<MetadataRecord>, Error> {
        let next = group_configs::checked(&next).map_err(Error::InvalidConfig)?;
        if self.image.group_configs.get(group).map_or(next.is_empty(), |c| *c == next) {
            return Ok(Vec::new());
        }
        Ok(vec![MetadataRecord::GroupConfig { group: group.to_string(), config: next }])
    }
}
