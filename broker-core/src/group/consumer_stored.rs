//! What of a KIP-848 consumer group is kept in `__consumer_offsets`, and how it comes back: the
//! records a change of the group needs (a view before, a view after, the difference as
//! Kafka's record types), and the group rebuilt from them when a coordinator loads its
//! partition. Plain functions over [`ConsumerGroup`]; topics go by id in the records, so the
//! caller gives the name → id lookup (and back).
//!
//! A loaded group's members get a fresh session and, if revoking, a fresh rebalance timeout
//! (Kafka's own choice at load; [`ConsumerGroup::loaded`]); what they own is unknown until
//! their next heartbeat, which is answered with their whole assignment. The group epoch moves
//! at load only if the subscribed topics' partitions differ from those the stored epoch was
//! computed over (the stored metadata hash). A static member away on a temporary leave is
//! stored at member epoch -2, its real epoch as the previous one.

use super::consumer::{ConsumerGroup, Member};
use super::consumer_records::{ConsumerKey, ConsumerValue, CurrentAssignment, MemberMetadata, TopicIdPartitions};
use super::reconcile::{MemberAssignment, MemberState};
use crate::client::assignor::TopicPartitions;
use std::collections::BTreeMap;

/// A record to write: key and value (None: a tombstone).
pub type Record = (ConsumerKey, Option<ConsumerValue>);

/// What of a group is stored, as of one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    epoch: i32,
    hash: i64,
    target_epoch: i32,
    members: BTreeMap<String, (MemberMetadata, TopicPartitions, MemberAssignment, bool)>,
}

impl View {
    /// The members it holds.
    pub fn member_ids(&self) -> impl Iterator<Item = &String> {
        self.members.keys()
    }

    /// The group epoch it holds.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// Whether a member it holds uses the consumer protocol (not the classic one).
    pub fn has_consumer_protocol_members(&self) -> bool {
        self.members.values().any(|(meta, _, _, _)| meta.classic.is_none())
    }
}

/// The member epoch a static member away on a temporary leave is stored with (Kafka's).
const away_epoch: i32 = -2;

impl ConsumerGroup {
    pub fn view(&self) -> View {
        let members = self.members.iter().map(|(id, m)| (id.clone(), (metadata(m), self.target.get(id).cloned().unwrap_or_default(), m.assignment.clone(), m.away))).collect();
        let hash = self.loaded_hash.unwrap_or_else(|| metadata_hash(&self.partitions));
        View { epoch: self.epoch, hash, target_epoch: self.target_epoch, members }
    }

    /// Every record of the group, tombstoned: it is deleted.
    pub fn tombstones(&self) -> Vec<Record> {
        let mut out = gone(self.members.keys());
        out.extend([(ConsumerKey::TargetEpoch, None), (ConsumerKey::Epoch, None)]);
        out
    }

    /// A record read back at load (value None: a tombstone). `name` turns a topic id into its
    /// name (None: the topic is gone; its partitions are dropped).
    pub fn restore(&mut self, key: ConsumerKey, value: Option<ConsumerValue>, name: &dyn Fn([u8; 16]) -> Option<String>, now: u64) {
        let names = |tps: TopicIdPartitions| -> TopicPartitions { tps.into_iter().filter_map(|(id, ps)| Some((name(id)?, ps))).collect() };
        match (key, value) {
            (ConsumerKey::Epoch, Some(ConsumerValue::Epoch { epoch, metadata_hash })) => (self.epoch, self.loaded_hash) = (epoch, Some(metadata_hash)),
            (ConsumerKey::TargetEpoch, Some(ConsumerValue::TargetEpoch(epoch))) => self.target_epoch = epoch,
            (ConsumerKey::Member(id), Some(ConsumerValue::Member(v))) => {
                let m = self.member_for_load(&id, now);
                (m.instance_id, m.rack, m.client_id, m.client_host) = (v.instance_id, v.rack, v.client_id, v.client_host);
                (m.topics, m.regex, m.rebalance_timeout_ms) = (v.topics.into_iter().collect(), v.regex, v.rebalance_timeout_ms.max(0) as u64);
                m.assignor = v.assignor.as_deref().and_then(super::assignors::ServerAssignor::by_name);
                m.classic = v.classic;
            }
            (ConsumerKey::Target(id), Some(ConsumerValue::Target(tps))) => drop(self.target.insert(id, names(tps))),
            (ConsumerKey::Current(id), Some(ConsumerValue::Current(c))) => {
                let state = match c.state {
                    1 => MemberState::UnrevokedPartitions,
                    2 => MemberState::UnreleasedPartitions,
                    _ => MemberState::Stable,
                };
                let m = self.member_for_load(&id, now);
                // Away on a temporary leave: its real epoch is kept as the previous one.
                m.away = c.epoch == away_epoch;
                let epoch = if m.away { c.previous_epoch } else { c.epoch };
                m.assignment = MemberAssignment { epoch, previous_epoch: c.previous_epoch, state, assigned: names(c.assigned), revoking: names(c.revoking) };
            }
            (ConsumerKey::Member(id), None) => drop(self.members.remove(&id)),
            (ConsumerKey::Target(id), None) => drop(self.target.remove(&id)),
            _ => {}
        }
    }

    fn member_for_load(&mut self, id: &str, now: u64) -> &mut Member {
        let expires_at = now + self.session_timeout_ms;
        self.members.entry(id.to_string()).or_insert_with(|| Member::new(expires_at))
    }
}

/// The records that take the stored group from `before` to `after`: removed members'
/// tombstones first, then (Kafka's order) member metadata, the group epoch, targets, the
/// target epoch, current assignments. `id` names a topic's id (None: the topic is gone).
pub fn changes(before: &View, after: &View, id: &dyn Fn(&str) -> Option<[u8; 16]>) -> Vec<Record> {
    let ids = |tps: &TopicPartitions| -> TopicIdPartitions { tps.iter().filter_map(|(t, ps)| Some((id(t)?, ps.clone()))).collect() };
    let mut out = gone(before.members.keys().filter(|m| !after.members.contains_key(*m)));
    let was = |m: &str| before.members.get(m);
    for (m, (meta, _, _, _)) in &after.members {
        if was(m).is_none_or(|(b, _, _, _)| b != meta) {
            out.push((ConsumerKey::Member(m.clone()), Some(ConsumerValue::Member(meta.clone()))));
        }
    }
    if (before.epoch, before.hash) != (after.epoch, after.hash) {
        out.push((ConsumerKey::Epoch, Some(ConsumerValue::Epoch { epoch: after.epoch, metadata_hash: after.hash })));
    }
    for (m, (_, target, _, _)) in &after.members {
        if was(m).is_none_or(|(_, b, _, _)| b != target) {
            out.push((ConsumerKey::Target(m.clone()), Some(ConsumerValue::Target(ids(target)))));
        }
    }
    if before.target_epoch != after.target_epoch {
        out.push((ConsumerKey::TargetEpoch, Some(ConsumerValue::TargetEpoch(after.target_epoch))));
    }
    for (m, (_, _, a, away)) in &after.members {
        if was(m).is_none_or(|(_, _, b, was_away)| b != a || was_away != away) {
            let state = match a.state {
                MemberState::Stable => 0,
                MemberState::UnrevokedPartitions => 1,
                MemberState::UnreleasedPartitions => 2,
            };
            let (epoch, previous_epoch) = if *away { (away_epoch, a.epoch) } else { (a.epoch, a.previous_epoch) };
            let c = CurrentAssignment { epoch, previous_epoch, state, assigned: ids(&a.assigned), revoking: ids(&a.revoking) };
            out.push((ConsumerKey::Current(m.clone()), Some(ConsumerValue::Current(c))));
        }
    }
    out
}

/// Tombstones of these members' records.
fn gone<'a>(members: impl Iterator<Item = &'a String>) -> Vec<Record> {
    members.flat_map(|m| tombstones_of(m)).collect()
}

/// Tombstones of one member's records.
pub fn tombstones_of(member: &str) -> [Record; 3] {
    [(ConsumerKey::Current(member.to_string()), None), (ConsumerKey::Target(member.to_string()), None), (ConsumerKey::Member(member.to_string()), None)]
}

fn metadata(m: &Member) -> MemberMetadata {
    MemberMetadata {
        instance_id: m.instance_id.clone(),
        rack: m.rack.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        topics: m.topics.iter().cloned().collect(),
        regex: m.regex.clone(),
        rebalance_timeout_ms: i32::try_from(m.rebalance_timeout_ms).unwrap_or(i32::MAX),
        assignor: m.assignor.map(|a| a.name().to_string()),
        classic: m.classic.clone(),
    }
}

/// The stored hash of the subscribed topics' partition counts: CRC32C over each topic's name
/// and count, in name order (only this broker reads it back).
pub fn metadata_hash(partitions: &BTreeMap<String, i32>) -> i64 {
    let bytes: Vec<u8> = partitions.iter().flat_map(|(t, n)| t.bytes().chain([0]).chain(n.to_be_bytes())).collect();
    i64::from(crc32c::crc32c(&bytes))
}
