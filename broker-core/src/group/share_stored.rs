//! What of a KIP-932 share group is kept in `__consumer_offsets`, and how it comes back: the
//! records a change of the group needs (a view before, a view after, the difference as
//! Kafka's record types, `share_records`), and the group rebuilt from them when a coordinator
//! loads its partition. Plain functions over [`ShareGroup`]; topics go by id in the records, so
//! the caller gives the name → id lookup (and back). Never decides membership itself.
//!
//! A loaded group's members get a fresh session (Kafka's choice at load too) and keep their
//! member epochs, so they heartbeat on as before. The group epoch moves at load only if the
//! subscribed topics' partitions differ from those the stored epoch was computed over (the
//! stored metadata hash).

use super::consumer_records::TopicIdPartitions;
use super::consumer_stored::metadata_hash;
use super::share::{ShareGroup, ShareMember};
use super::share_records::{ShareCurrent, ShareGroupKey, ShareGroupValue, ShareMemberMetadata};
use crate::client::assignor::TopicPartitions;
use std::collections::BTreeMap;

/// A record to write: key and value (None: a tombstone).
pub type Record = (ShareGroupKey, Option<ShareGroupValue>);

/// A member as stored: its metadata, its target, and its current assignment (epoch, previous
/// epoch, partitions).
type StoredMember = (ShareMemberMetadata, TopicPartitions, (i32, i32, TopicPartitions));

/// What of a group is stored, as of one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    epoch: i32,
    hash: i64,
    target_epoch: i32,
    members: BTreeMap<String, StoredMember>,
}

impl View {
    /// The members it holds.
    pub fn member_ids(&self) -> impl Iterator<Item = &String> {
        self.members.keys()
    }
}

impl ShareGroup {
    pub fn view(&self) -> View {
        let members = self.members.iter().map(|(id, m)| (id.clone(), (metadata(m), self.target.get(id).cloned().unwrap_or_default(), (m.epoch, m.previous_epoch, m.assigned.clone())))).collect();
        let hash = self.loaded_hash.unwrap_or_else(|| metadata_hash(&self.subscribed));
        View { epoch: self.epoch, hash, target_epoch: self.assignment_epoch, members }
    }

    /// Every record of the group, tombstoned: it is deleted.
    pub fn tombstones(&self) -> Vec<Record> {
        let mut out: Vec<Record> = self.members.keys().flat_map(|m| tombstones_of(m)).collect();
        out.extend([(ShareGroupKey::TargetEpoch, None), (ShareGroupKey::Epoch, None)]);
        out
    }

    /// A record read back at load (value None: a tombstone). `name` turns a topic id into its
    /// name (None: the topic is gone; its partitions are dropped).
    pub fn restore(&mut self, key: ShareGroupKey, value: Option<ShareGroupValue>, name: &dyn Fn([u8; 16]) -> Option<String>, now: u64) {
        let names = |tps: TopicIdPartitions| -> TopicPartitions { tps.into_iter().filter_map(|(id, ps)| Some((name(id)?, ps))).collect() };
        let deadline = now + self.session_timeout_ms;
        match (key, value) {
            (ShareGroupKey::Epoch, Some(ShareGroupValue::Epoch { epoch, metadata_hash })) => (self.epoch, self.loaded_hash) = (epoch, Some(metadata_hash)),
            (ShareGroupKey::TargetEpoch, Some(ShareGroupValue::TargetEpoch(epoch))) => self.assignment_epoch = epoch,
            (ShareGroupKey::Member(id), Some(ShareGroupValue::Member(v))) => {
                let m = self.members.entry(id).or_default();
                (m.rack, m.client_id, m.client_host) = (v.rack, v.client_id, v.client_host);
                m.topics = v.topics.into_iter().collect();
                m.deadline = deadline;
            }
            (ShareGroupKey::Target(id), Some(ShareGroupValue::Target(tps))) => drop(self.target.insert(id, names(tps))),
            (ShareGroupKey::Current(id), Some(ShareGroupValue::Current(c))) => {
                let m = self.members.entry(id).or_default();
                (m.epoch, m.previous_epoch, m.assigned) = (c.epoch, c.previous_epoch, names(c.assigned));
                m.deadline = deadline;
            }
            (ShareGroupKey::Member(id), None) => drop(self.members.remove(&id)),
            (ShareGroupKey::Target(id), None) => drop(self.target.remove(&id)),
            _ => {}
        }
    }

    /// Its partition is loaded: the subscribed topics' partitions as the cluster has them now
    /// (`partitions`). Whether they differ from those the stored epoch was computed over, in
    /// which case the group moved to a new epoch and target (to be written).
    pub fn loaded(&mut self, partitions: &BTreeMap<String, i32>) -> bool {
        let now = self.subscribed_now(partitions);
        let same = self.loaded_hash.take() == Some(metadata_hash(&now));
        if same {
            self.subscribed = now;
        } else {
            self.recompute(partitions);
        }
        !same
    }
}

/// The records that take the stored group from `before` to `after`: removed members'
/// tombstones first, then (Kafka's order) member metadata, the group epoch, targets, the
/// target epoch, current assignments. `id` names a topic's id (None: the topic is gone).
pub fn changes(before: &View, after: &View, id: &dyn Fn(&str) -> Option<[u8; 16]>) -> Vec<Record> {
    let ids = |tps: &TopicPartitions| -> TopicIdPartitions { tps.iter().filter_map(|(t, ps)| Some((id(t)?, ps.clone()))).collect() };
    let mut out: Vec<Record> = before.members.keys().filter(|m| !after.members.contains_key(*m)).flat_map(|m| tombstones_of(m)).collect();
    let was = |m: &str| before.members.get(m);
    for (m, (meta, _, _)) in &after.members {
        if was(m).is_none_or(|(b, _, _)| b != meta) {
            out.push((ShareGroupKey::Member(m.clone()), Some(ShareGroupValue::Member(meta.clone()))));
        }
    }
    if (before.epoch, before.hash) != (after.epoch, after.hash) {
        out.push((ShareGroupKey::Epoch, Some(ShareGroupValue::Epoch { epoch: after.epoch, metadata_hash: after.hash })));
    }
    for (m, (_, target, _)) in &after.members {
        if was(m).is_none_or(|(_, b, _)| b != target) {
            out.push((ShareGroupKey::Target(m.clone()), Some(ShareGroupValue::Target(ids(target)))));
        }
    }
    if before.target_epoch != after.target_epoch {
        out.push((ShareGroupKey::TargetEpoch, Some(ShareGroupValue::TargetEpoch(after.target_epoch))));
    }
    for (m, (_, _, current)) in &after.members {
        if was(m).is_none_or(|(_, _, b)| b != current) {
            let (epoch, previous_epoch, assigned) = current;
            let c = ShareCurrent { epoch: *epoch, previous_epoch: *previous_epoch, state: 0, assigned: ids(assigned) };
            out.push((ShareGroupKey::Current(m.clone()), Some(ShareGroupValue::Current(c))));
        }
    }
    out
}

/// Only the group epoch record of `after` (an answer that waits for a write in flight).
pub fn epoch_record(after: &View) -> Record {
    (ShareGroupKey::Epoch, Some(ShareGroupValue::Epoch { epoch: after.epoch, metadata_hash: after.hash }))
}

/// Tombstones of one member's records.
pub fn tombstones_of(member: &str) -> [Record; 3] {
    [(ShareGroupKey::Current(member.to_string()), None), (ShareGroupKey::Target(member.to_string()), None), (ShareGroupKey::Member(member.to_string()), None)]
}

fn metadata(m: &ShareMember) -> ShareMemberMetadata {
    ShareMemberMetadata { rack: m.rack.clone(), client_id: m.client_id.clone(), client_host: m.client_host.clone(), topics: m.topics.iter().cloned().collect() }
}
