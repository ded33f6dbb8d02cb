//! The state (the [`Image`]) that replaying the metadata records builds: brokers with their
//! epochs and fencing, topics with their config, for every partition its replicas, ISR,
//! leader and epochs, the users' SCRAM credentials, ACLs, quotas, and dynamic broker and group
//! configs.
//!
//! [`Image::apply`] must stay total and deterministic: every broker and every future controller
//! rebuilds its view by replaying these records, so a record that does not fit the image (an
//! unknown topic, a partition out of range, a stale broker epoch) is ignored, never a panic, and
//! nothing here may depend on anything but the records and their order. No IO, no clock.

use super::records::{no_leader, Endpoint, MetadataRecord};
use super::topic;
use crate::constants::partitions_per_topic_max;
use crate::security::scram::{Credential, Mechanism};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub id: i32,
    /// Offset of the broker's latest RegisterBroker record.
    pub epoch: i64,
    /// The inter-broker listener's endpoint.
    pub host: String,
    pub port: i32,
    /// Every listener's endpoint by name, when the broker has more than one.
    pub listeners: Vec<Endpoint>,
    /// A fenced broker leads nothing and joins no ISR.
    pub fenced: bool,
}

impl BrokerInfo {
    /// Where clients of the listener `name` reach this broker: its one endpoint when it
    /// registered one, else the endpoint of that name, if it has one (Kafka leaves a broker
    /// without the client's listener out of the answers to that client).
    pub fn endpoint(&self, name: &str) -> Option<(&str, i32)> {
        match self.listeners.is_empty() {
            true => Some((&self.host, self.port)),
            false => self.listeners.iter().find(|e| e.name == name).map(|e| (e.host.as_str(), e.port)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The assignment, in preference order: elections pick the first eligible replica.
    pub replicas: Vec<i32>,
    /// In-sync replicas, kept in replica order.
    pub isr: Vec<i32>,
    pub leader: i32,
    /// Bumped whenever the leader changes (including to and from [`no_leader`]).
    pub leader_epoch: i32,
    /// Bumped on every change; AlterPartition must name the current one.
    pub partition_epoch: i32,
    /// KIP-966 eligible leader replicas, in replica order: out of the ISR, but holding every
    /// record below the high watermark (the ISR was below `min.insync.replicas` when they left
    /// it, so the mark stood still). Empty unless `eligible.leader.replicas.enable`.
    pub elr: Vec<i32>,
    /// KIP-966's last-known ELR: members that left the ELR after an unclean shutdown (or were
    /// in the ISR when it went below the minimum), kept for the operator. Cleared, like the
    /// ELR, once the ISR is back at `min.insync.replicas`.
    pub last_known_elr: Vec<i32>,
    /// A reassignment in progress (Kafka's addingReplicas): replicas of the target that are not
    /// yet in the ISR's reach; the reassignment completes once every one is in the ISR.
    pub adding: Vec<i32>,
    /// A reassignment in progress (Kafka's removingReplicas): replicas that leave the
    /// assignment, and delete their data, when it completes. `replicas` minus these is the target.
    pub removing: Vec<i32>,
}

impl PartitionInfo {
    /// A partition named by a Topic record whose Partition record has not been applied yet.
    fn unassigned() -> PartitionInfo {
        PartitionInfo { replicas: Vec::new(), isr: Vec::new(), leader: no_leader, leader_epoch: 0, partition_epoch: 0, elr: Vec::new(), last_known_elr: Vec::new(), adding: Vec::new(), removing: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub id: [u8; 16],
    /// The topic's config overrides, Kafka-named: as given at creation, then as the last
    /// `TopicConfig` record set them.
    pub config: BTreeMap<String, String>,
    pub partitions: Vec<PartitionInfo>,
}

/// The metadata as of one offset of the metadata log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub brokers: BTreeMap<i32, BrokerInfo>,
    pub topics: BTreeMap<String, TopicInfo>,
    /// SCRAM credentials by user and mechanism (SASL, `security/`).
    pub scram: BTreeMap<(String, Mechanism), Credential>,
    /// Every ACL, sorted by resource (type, name, pattern) first.
    pub acls: std::collections::BTreeSet<crate::security::acl::Acl>,
    /// Client quotas by entity (`quotas`).
    pub quotas: super::quotas::Quotas,
    /// Dynamic broker configs by broker id, -1 the cluster's default (`throttles`).
    pub broker_configs: BTreeMap<i32, BTreeMap<String, String>>,
    /// Dynamic group configs by group id (`group_configs`); a group with none is absent.
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Offset of the last applied record; -1 before any.
    pub offset: i64,
}

impl Default for Image {
    fn default() -> Self {
        Image { brokers: BTreeMap::new(), topics: BTreeMap::new(), scram: BTreeMap::new(), acls: Default::default(), quotas: Default::default(), broker_configs: BTreeMap::new(), group_configs: BTreeMap::new(), offset: -1 }
    }
}

impl Image {
    /// Applies the record committed at `offset`. Records that do not fit are ignored (see the
    /// module header); the offset is taken either way, since the record was committed.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) {
        self.offset = offset;
        match record {
            MetadataRecord::RegisterBroker { id, epoch, host, port, listeners } => {
                let info = BrokerInfo { id: *id, epoch: *epoch, host: host.clone(), port: *port, listeners: listeners.clone(), fenced: true };
                self.brokers.insert(*id, info);
            }
            MetadataRecord::FenceBroker { id, epoch } => self.set_fenced(*id, *epoch, true),
            MetadataRecord::UnregisterBroker { id, epoch } => {
                if self.brokers.get(id).is_some_and(|b| b.epoch == *epoch) {
                    self.brokers.remove(id);
                }
            }
            MetadataRecord::UnfenceBroker { id, epoch } => self.set_fenced(*id, *epoch, false),
            MetadataRecord::Topic { name, id, partitions, config } => self.add_topic(name, id, *partitions, config),
            MetadataRecord::Partition { topic, partition, replicas, isr, leader, leader_epoch, partition_epoch, elr, last_known_elr, adding, removing } => {
                // The next partition of a topic adds it (CreatePartitions); others are ignored.
                if let Some(t) = self.topics.get_mut(topic).filter(|t| *partition as usize == t.partitions.len() && *partition < partitions_per_topic_max) {
                    t.partitions.push(PartitionInfo::unassigned());
                }
                if let Some(slot) = self.partition_mut(topic, *partition) {
                    *slot = PartitionInfo {
                        replicas: replicas.clone(),
                        isr: isr.clone(),
                        leader: *leader,
                        leader_epoch: *leader_epoch,
                        partition_epoch: *partition_epoch,
                        elr: elr.clone(),
                        last_known_elr: last_known_elr.clone(),
                        adding: adding.clone(),
                        removing: removing.clone(),
                    };
                }
            }
            MetadataRecord::RemoveTopic { name } => {
                self.topics.remove(name);
            }
            MetadataRecord::TopicConfig { name, config } => {
                if let Some(t) = self.topics.get_mut(name) {
                    t.config = config.clone();
                }
            }
            MetadataRecord::ScramCredential { user, credential } => {
                self.scram.insert((user.clone(), credential.mechanism), credential.clone());
            }
            MetadataRecord::RemoveScramCredential { user, mechanism } => {
                self.scram.remove(&(user.clone(), *mechanism));
            }
            MetadataRecord::Acl { acl } => {
                self.acls.insert(acl.clone());
            }
            MetadataRecord::RemoveAcl { acl } => {
                self.acls.remove(acl);
            }
            MetadataRecord::BrokerConfig { broker, config } => {
                match config.is_empty() {
                    true => self.broker_configs.remove(broker),
                    false => self.broker_configs.insert(*broker, config.clone()),
                };
            }
            MetadataRecord::GroupConfig { group, config } => {
                match config.is_empty() {
                    true => self.group_configs.remove(group),
                    false => self.group_configs.insert(group.clone(), config.clone()),
                };
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                let values = self.quotas.entry(entity.clone()).or_default();
                match value {
                    Some(v) => values.insert(key.clone(), *v),
                    None => values.remove(key),
                };
                if values.is_empty() {
                    self.quotas.remove(entity);
                }
            }
            MetadataRecord::LeaderChange { .. } => {}
        }
    }

    /// `user`'s SCRAM credential for `mechanism`.
    pub fn scram_credential(&self, user: &str, mechanism: Mechanism) -> Option<&Credential> {
        self.scram.get(&(user.to_string(), mechanism))
    }

    /// The value of group config `key` set on `group` (`group_configs`'s names); None when it
    /// is not set, and the broker's default applies.
    pub fn group_config(&self, group: &str, key: &str) -> Option<&str> {
        self.group_configs.get(group)?.get(key).map(String::as_str)
    }

    /// Nothing was ever registered, created or stored: the metadata log of a cluster being
    /// formed, where the operator's bootstrap records (`--add-scram`) go first.
    pub fn is_fresh(&self) -> bool {
        self.brokers.is_empty() && self.topics.is_empty() && self.scram.is_empty() && self.acls.is_empty() && self.quotas.is_empty() && self.broker_configs.is_empty() && self.group_configs.is_empty()
    }

    /// The records that rebuild this image from nothing (offsets aside): each broker's latest
    /// registration and, if live, its unfencing; each topic with its config; each assigned
    /// partition's whole state. A metadata snapshot is these records. Every field is named
    /// below, so a field added to the image fails to compile until it is written here too.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        for b in self.brokers.values() {
            let BrokerInfo { id, epoch, host, port, listeners, fenced } = b;
            out.push(MetadataRecord::RegisterBroker { id: *id, epoch: *epoch, host: host.clone(), port: *port, listeners: listeners.clone() });
            if !fenced {
                out.push(MetadataRecord::UnfenceBroker { id: *id, epoch: *epoch });
            }
        }
        for (name, t) in &self.topics {
            let TopicInfo { id, config, partitions } = t;
            out.push(MetadataRecord::Topic { name: name.clone(), id: topic::hex(id), partitions: partitions.len() as i32, config: config.clone() });
            for (i, p) in partitions.iter().enumerate().filter(|(_, p)| **p != PartitionInfo::unassigned()) {
                let PartitionInfo { replicas, isr, leader, leader_epoch, partition_epoch, elr, last_known_elr, adding, removing } = p;
                out.push(MetadataRecord::Partition {
                    topic: name.clone(),
                    partition: i as i32,
                    replicas: replicas.clone(),
                    isr: isr.clone(),
                    leader: *leader,
                    leader_epoch: *leader_epoch,
                    partition_epoch: *partition_epoch,
                    elr: elr.clone(),
                    last_known_elr: last_known_elr.clone(),
                    adding: adding.clone(),
                    removing: removing.clone(),
                });
            }
        }
        for ((user, _), credential) in &self.scram {
            out.push(MetadataRecord::ScramCredential { user: user.clone(), credential: credential.clone() });
        }
        out.extend(self.acls.iter().map(|acl| MetadataRecord::Acl { acl: acl.clone() }));
        out.extend(self.broker_configs.iter().map(|(broker, config)| MetadataRecord::BrokerConfig { broker: *broker, config: config.clone() }));
        out.extend(self.group_configs.iter().map(|(group, config)| MetadataRecord::GroupConfig { group: group.clone(), config: config.clone() }));
        for (entity, values) in &self.quotas {
            out.extend(values.iter().map(|(key, v)| MetadataRecord::ClientQuota { entity: entity.clone(), key: key.clone(), value: Some(*v) }));
        }
        out
    }

    /// A fence change for an older registration is ignored: the broker has re-registered since,
    /// and its new registration starts fenced on its own.
    fn set_fenced(&mut self, id: i32, epoch: i64, fenced: bool) {
        if let Some(b) = self.brokers.get_mut(&id).filter(|b| b.epoch == epoch) {
            b.fenced = fenced;
        }
    }

    /// Ignores a Topic record for a name that exists (the controller never writes one), with
    /// an id that is not 32 hex digits, or with a partition count out of range (which would
    /// otherwise let one corrupt record allocate without bound).
    fn add_topic(&mut self, name: &str, id: &str, partitions: i32, config: &BTreeMap<String, String>) {
        let Some(id) = topic::unhex(id) else { return };
        if self.topics.contains_key(name) || !(0..=partitions_per_topic_max).contains(&partitions) {
            return;
        }
        let partitions = (0..partitions).map(|_| PartitionInfo::unassigned()).collect();
        self.topics.insert(name.to_string(), TopicInfo { id, config: config.clone(), partitions });
    }

    fn partition_mut(&mut self, topic: &str, partition: i32) -> Option<&mut PartitionInfo> {
        self.topics.get_mut(topic)?.partitions.get_mut(usize::try_from(partition).ok()?)
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionInfo> {
        self.topics.get(topic)?.partitions.get(usize::try_from(partition).ok()?)
    }

    /// Unfenced brokers, by id.
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerInfo> + '_ {
        self.brokers.values().filter(|b| !b.fenced)
    }

    /// Whether `id` is registered and unfenced: eligible to lead and to be in an ISR.
    pub fn is_live(&self, id: i32) -> bool {
        self.brokers.get(&id).is_some_and(|b| !b.fenced)
    }

    /// The broker epoch (latest registration) of broker `id`, -1 if it is not registered.
    pub fn broker_epoch(&self, id: i32) -> i64 {
        self.brokers.get(&id).map_or(-1, |b| b.epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, partitions: i32) -> MetadataRecord {
        MetadataRecord::Topic { name: name.into(), id: topic::hex(&[7; 16]), partitions, config: BTreeMap::new() }
    }

    fn part(topic: &str, partition: i32, leader: i32) -> MetadataRecord {
        MetadataRecord::Partition { topic: topic.into(), partition, replicas: vec![1], isr: vec![1], leader, leader_epoch: 0, partition_epoch: 0, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] }
    }

    #[test]
    fn records_that_do_not_fit_are_ignored_but_advance_the_offset() {
        let mut image = Image::default();
        let ignored = [
            part("nope", 0, 1),
            MetadataRecord::FenceBroker { id: 9, epoch: 0 },
            MetadataRecord::RemoveTopic { name: "nope".into() },
            MetadataRecord::TopicConfig { name: "nope".into(), config: BTreeMap::new() },
            MetadataRecord::Topic { name: "bad-id".into(), id: "xyz".into(), partitions: 1, config: BTreeMap::new() },
            topic("huge", i32::MAX),
            topic("negative", -1),
        ];
        for (offset, r) in ignored.iter().enumerate() {
            image.apply(offset as i64, r);
        }
        assert_eq!(image, Image { offset: 6, ..Image::default() });
        image.apply(7, &topic("t", 1));
        for (offset, p) in [(8, -1), (9, 2), (10, i32::MIN)] {
            image.apply(offset, &part("t", p, 1));
        }
        image.apply(11, &topic("t", 5)); // a second Topic record for the same name
        assert_eq!(image.topics["t"].partitions, vec![PartitionInfo::unassigned()]);
        assert_eq!(image.offset, 11);
        // The topic's next partition adds it (CreatePartitions).
        image.apply(12, &part("t", 1, 1));
        assert_eq!(image.topics["t"].partitions.len(), 2);
        assert_eq!(image.partition("t", 1).map(|p| p.leader), Some(1));
    }

    #[test]
    fn a_topic_config_record_replaces_the_whole_override_set() {
        let mut image = Image::default();
        let created = BTreeMap::from([("retention.ms".to_string(), "1000".to_string()), ("segment.ms".to_string(), "50".to_string())]);
        image.apply(0, &MetadataRecord::Topic { name: "t".into(), id: topic::hex(&[7; 16]), partitions: 1, config: created });
        let changed = BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]);
        image.apply(1, &MetadataRecord::TopicConfig { name: "t".into(), config: changed.clone() });
        assert_eq!(image.topics["t"].config, changed, "retention.ms and segment.ms are back at the default");
        let r = MetadataRecord::TopicConfig { name: "t".into(), config: changed };
        assert_eq!(MetadataRecord::decode(&r.encode()), Ok(r));
    }

    #[test]
    fn fencing_for_an_old_registration_is_ignored() {
        let mut image = Image::default();
        image.apply(0, &MetadataRecord::RegisterBroker { id: 1, epoch: 0, host: "h".into(), port: 1, listeners: Vec::new() });
        image.apply(1, &MetadataRecord::RegisterBroker { id: 1, epoch: 1, host: "h".into(), port: 1, listeners: Vec::new() });
        image.apply(2, &MetadataRecord::UnfenceBroker { id: 1, epoch: 0 });
        assert!(!image.is_live(1));
        image.apply(3, &MetadataRecord::UnfenceBroker { id: 1, epoch: 1 });
        assert_eq!(image.live_brokers().map(|b| b.id).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn records_round_trip_and_garbage_is_an_error() {
        let r = MetadataRecord::Partition { topic: "t".into(), partition: 2, replicas: vec![1, 2], isr: vec![2], leader: 2, leader_epoch: 3, partition_epoch: 4, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] };
        assert_eq!(MetadataRecord::decode(&r.encode()), Ok(r.clone()));
        // Without ELR the bytes are what they were before KIP-966, and such a record decodes.
        let old = r#"{"type":"Partition","topic":"t","partition":2,"replicas":[1,2],"isr":[2],"leader":2,"leader_epoch":3,"partition_epoch":4}"#;
        assert_eq!(String::from_utf8(r.encode()).unwrap(), old);
        let with = MetadataRecord::Partition { topic: "t".into(), partition: 2, replicas: vec![1, 2, 3], isr: vec![], leader: -1, leader_epoch: 3, partition_epoch: 4, elr: vec![2], last_known_elr: vec![1], adding: vec![], removing: vec![] };
        assert!(String::from_utf8(with.encode()).unwrap().ends_with(r#""elr":[2],"last_known_elr":[1]}"#));
        assert_eq!(MetadataRecord::decode(&with.encode()), Ok(with));
        assert!(String::from_utf8(topic("t", 1).encode()).unwrap().contains("\"type\":\"Topic\""));
        for bad in [&b""[..], b"{}", b"{\"type\":\"Nope\"}", b"\xff\xfe", b"{\"type\":\"FenceBroker\",\"id\":\"1\"}"] {
            assert!(MetadataRecord::decode(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod group_config_tests {
    use super::*;

    /// A `GroupConfig` record replaces the group's whole set, an empty one removes it, a group
    /// need not exist, and what is set reaches snapshots (`to_records`) and comes back on replay.
    #[test]
    fn group_configs_are_replaced_whole_and_survive_to_records() {
        let set = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
        let mut image = Image::default();
        image.apply(0, &MetadataRecord::GroupConfig { group: "g".into(), config: set(&[("share.auto.offset.reset", "earliest"), ("share.session.timeout.ms", "9000")]) });
        image.apply(1, &MetadataRecord::GroupConfig { group: "g".into(), config: set(&[("share.auto.offset.reset", "by_duration:PT1H")]) });
        image.apply(2, &MetadataRecord::GroupConfig { group: "h".into(), config: set(&[("share.isolation.level", "read_committed")]) });
        image.apply(3, &MetadataRecord::GroupConfig { group: "gone".into(), config: set(&[("share.isolation.level", "read_committed")]) });
        image.apply(4, &MetadataRecord::GroupConfig { group: "gone".into(), config: BTreeMap::new() });
        assert_eq!(image.group_config("g", "share.auto.offset.reset"), Some("by_duration:PT1H"));
        assert_eq!(image.group_config("g", "share.session.timeout.ms"), None, "left out of the new set: back at the default");
        assert_eq!((image.group_config("gone", "share.isolation.level"), image.group_config("nobody", "x")), (None, None));
        assert_eq!(image.group_configs.keys().collect::<Vec<_>>(), ["g", "h"]);
        assert!(!image.is_fresh());
        let mut replayed = Image::default();
        for (offset, r) in (0..).zip(image.to_records()) {
            replayed.apply(offset, &r);
        }
        assert_eq!(replayed.group_configs, image.group_configs);
        let r = MetadataRecord::GroupConfig { group: "g".into(), config: set(&[("share.auto.offset.reset", "earliest")]) };
        assert_eq!(String::from_utf8(r.encode()).unwrap(), r#"{"type":"GroupConfig","group":"g","config":{"share.auto.offset.reset":"earliest"}}"#);
        assert_eq!(MetadataRecord::decode(&r.encode()), Ok(r));
    }
}

#[cfg(test)]
mod elr_snapshot_tests {
    use super::*;

    /// KIP-966's fields reach snapshots: an image with an ELR, written as records and replayed,
    /// is the same image.
    #[test]
    fn an_elr_survives_to_records_and_replay() {
        let mut image = Image::default();
        image.apply(0, &MetadataRecord::Topic { name: "t".into(), id: topic::hex(&[7; 16]), partitions: 1, config: BTreeMap::new() });
        let part = MetadataRecord::Partition { topic: "t".into(), partition: 0, replicas: vec![1, 2, 3], isr: vec![], leader: no_leader, leader_epoch: 2, partition_epoch: 5, elr: vec![2], last_known_elr: vec![1], adding: vec![], removing: vec![] };
        image.apply(1, &part);
        let mut replayed = Image::default();
        for (offset, r) in (0..).zip(image.to_records()) {
            replayed.apply(offset, &r);
        }
        assert_eq!(replayed.topics, image.topics);
    }
}
