//! KIP-932's share-group offsets admin APIs at a group's coordinator: DescribeShareGroupOffsets,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets, over the share-partition states
//! (`share_state`) the share-partition leaders read and write. What an operator sees of a
//! share-partition is its start offset (the SPSO: below it every record is done) and the leader
//! epoch it was last written under. Calls on [`Coordinator`] with an explicit `now`; no IO.
//!
//! Alter and Delete change a share group's states only while the group is EMPTY
//! (NON_EMPTY_GROUP otherwise, as Kafka): no member can be handed records meanwhile. Each is one
//! write to `__consumer_offsets` (all its partitions or none), answered once replicated, and
//! each state it changes moves to the next state epoch. The new states take effect only once
//! replicated (dropped if the write fails); while the write is in flight the group's states are
//! neither read nor written (COORDINATOR_LOAD_IN_PROGRESS), nothing joins the group, and no
//! other Alter or Delete starts, so what is in memory is always what a coordinator taking over
//! would load. Once they take effect, a share-partition leader still holding the old state is
//! FENCED_STATE_EPOCH at its next write, drops it and reads the new one, so its write never
//! undoes the change. This module must never change the states of a group with members, put a
//! state in memory before its write is replicated, nor answer an Alter or Delete before then.

use super::share_state::{encode_key, encode_value, ShareKey, Stored};
use super::writes::Effect;
use super::{Coordinator, Ticket, Work};
use crate::kafka::Code;
use crate::share::partition::Snapshot;
use crate::constants::{message_bytes_max, share_offsets_alter_partitions_max};
use std::collections::{BTreeMap, BTreeSet};

/// The start offset of a share-partition without an initialized state (Kafka's
/// `PartitionFactory.UNINITIALIZED_START_OFFSET`).
pub const uninitialized_start_offset: i64 = -1;

/// The leader epoch described where there is no state (Kafka's `DEFAULT_LEADER_EPOCH`).
const default_leader_epoch: i32 = 0;

/// One share-partition as DescribeShareGroupOffsets answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareOffset {
    pub partition: i32,
    /// The share-partition start offset; [`uninitialized_start_offset`] without a state.
    pub start_offset: i64,
    pub leader_epoch: i32,
}

/// A topic described: its name, its id (None: no such topic), its partitions.
pub type DescribedTopic = (String, Option<[u8; 16]>, Vec<ShareOffset>);

/// The outcome of an Alter or Delete: one result per item asked, in order, and the ticket of
/// the write the Ok ones wait for (None: nothing to write, every result final).
pub type Changed = (Vec<Result<(), Code>>, Option<Ticket>);

/// Distinct share-partitions an Alter names, (topic, partition) to start offset: a partition
/// named twice is altered to the last offset given, as Kafka collapses them.
pub type Asked<'a> = BTreeMap<(&'a str, i32), i64>;

/// Bytes of a batch's header in `__consumer_offsets` (the v2 record batch's fixed part).
const batch_header_bytes: usize = 61;
/// Bytes a record adds beyond its key and value, at most: length, attributes, timestamp
/// delta, offset delta, key and value lengths, header count (varints at their widest).
const record_overhead_bytes_max: usize = 32;
/// Bytes of a state record's key beyond its group id: key type, group id length, topic id,
/// partition.
const state_key_fixed_bytes: usize = 2 + 2 + 16 + 4;
/// Bytes of a state value with nothing in flight (`share_state::encode_value`).
const empty_state_value_bytes: usize = 26;

/// The lowest and highest keys `group`'s share-partitions can have (one range walks them).
fn group_range(group: &str) -> (ShareKey, ShareKey) {
    ((group.to_string(), [0; 16], i32::MIN), (group.to_string(), [u8::MAX; 16], i32::MAX))
}

impl Coordinator {
    /// `group`'s states in `[lo, hi]`, in key order, without a full scan.
    fn states_in<'a>(&'a self, lo: &ShareKey, hi: &ShareKey) -> impl Iterator<Item = (&'a ShareKey, &'a Stored)> + 'a {
        use std::ops::Bound::Included;
        self.share_states.range::<ShareKey, _>((Included(lo), Included(hi)))
    }

    /// DescribeShareGroupOffsets of `group`: each named topic's partitions (`topics`), or, with
    /// None, every partition of the group with an initialized state (GROUP_ID_NOT_FOUND when
    /// `group` is no share group here). As Kafka answers it, a topic that does not exist or a
    /// partition without a state is no error: start offset -1, leader epoch 0.
    pub fn describe_share_offsets(&self, group: &str, topics: Option<&[(String, Vec<i32>)]>) -> Result<Vec<DescribedTopic>, Code> {
        self.owner(group)?;
        let Some(topics) = topics else { return self.described_all(group) };
        // One key, its topic and partition moved per lookup: no allocation per partition.
        let mut key: ShareKey = (group.to_string(), [0; 16], 0);
        let mut described = Vec::with_capacity(topics.len());
        for (name, partitions) in topics {
            let id = self.topics.get(name).map(|(id, _)| *id);
            let mut each = Vec::with_capacity(partitions.len());
            for &p in partitions {
                let found = id.and_then(|id| {
                    (key.1, key.2) = (id, p);
                    self.share_states.get(&key)
                });
                each.push(match found {
                    Some(s) if s.snapshot.start >= 0 => ShareOffset { partition: p, start_offset: s.snapshot.start, leader_epoch: s.leader_epoch },
                    _ => ShareOffset { partition: p, start_offset: uninitialized_start_offset, leader_epoch: default_leader_epoch },
                });
            }
            described.push((name.clone(), id, each));
        }
        Ok(described)
    }

    /// Every initialized share-partition of `group`, by topic name (topics deleted since are
    /// left out, as Kafka leaves out those missing from its metadata image).
    fn described_all(&self, group: &str) -> Result<Vec<DescribedTopic>, Code> {
        if self.share_groups.get(group).is_none_or(|g| g.deleting) {
            return Err(Code::GroupIdNotFound);
        }
        let names: BTreeMap<[u8; 16], &String> = self.topics.iter().map(|(n, (id, _))| (*id, n)).collect();
        let mut by_topic: BTreeMap<&String, ([u8; 16], Vec<ShareOffset>)> = BTreeMap::new();
        let (lo, hi) = group_range(group);
        for ((_, id, p), s) in self.states_in(&lo, &hi).filter(|(_, s)| s.snapshot.start >= 0) {
            let Some(name) = names.get(id) else { continue };
            by_topic.entry(name).or_insert_with(|| (*id, Vec::new())).1.push(ShareOffset { partition: *p, start_offset: s.snapshot.start, leader_epoch: s.leader_epoch });
        }
        Ok(by_topic.into_iter().map(|(name, (id, offsets))| (name.clone(), Some(id), offsets)).collect())
    }

    /// Whether Alter or Delete may change `group`'s states: a share group here, not being
    /// deleted, without members, no other Alter or Delete of it in flight.
    fn offsets_changeable(&self, group: &str) -> Result<(), Code> {
        self.owner(group)?;
        match self.share_groups.get(group) {
            None => Err(Code::GroupIdNotFound),
            Some(g) if g.deleting => Err(Code::CoordinatorNotAvailable),
            Some(g) if !g.members.is_empty() => Err(Code::NonEmptyGroup),
            Some(_) if self.share_offsets_writing(group) => Err(Code::CoordinatorLoadInProgress),
            Some(_) => Ok(()),
        }
    }

    /// Whether an Alter or Delete of `group` is being written (its states wait, nothing joins).
    pub(super) fn share_offsets_writing(&self, group: &str) -> bool {
        self.writes.values().any(|w| matches!(&w.effect, Effect::ShareOffsets { group: g, .. } if g == group))
    }

    /// RECORD_LIST_TOO_LARGE when `records` empty states of `group` could not be one batch of
    /// the offsets topic (`message_bytes_max`, its `max.message.bytes`): refused before any is
    /// built.
    fn fits(group: &str, records: usize) -> Result<(), Code> {
        let each = state_key_fixed_bytes + group.len() + empty_state_value_bytes + record_overhead_bytes_max;
        match records.saturating_mul(each).saturating_add(batch_header_bytes) <= message_bytes_max {
            true => Ok(()),
            false => Err(Code::RecordListTooLarge),
        }
    }

    /// AlterShareGroupOffsets of an empty share group: each (topic, partition) asked starts at
    /// its offset, nothing in flight, under the next state epoch, once written. A topic or
    /// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, a negative offset (or a
    /// state epoch already at its maximum) INVALID_REQUEST; the others are written together.
    /// More partitions than `share_offsets_alter_partitions_max` is INVALID_REQUEST for the
    /// whole request. One result per entry of `offsets`, in its order.
    pub fn alter_share_offsets(&mut self, group: &str, offsets: &Asked, now: u64, work: &mut Work) -> Result<Changed, Code> {
        self.offsets_changeable(group)?;
        if offsets.len() > share_offsets_alter_partitions_max {
            return Err(Code::InvalidRequest);
        }
        Self::fits(group, offsets.len())?;
        let mut results = Vec::with_capacity(offsets.len());
        let mut states = Vec::new();
        let mut key: ShareKey = (group.to_string(), [0; 16], 0);
        for (&(topic, partition), &start) in offsets {
            let id = match self.topics.get(topic) {
                Some((id, count)) if (0..*count).contains(&partition) => *id,
                _ => {
                    results.push(Err(Code::UnknownTopicOrPartition));
                    continue;
                }
            };
            (key.1, key.2) = (id, partition);
            let state = match start < 0 {
                true => Err(Code::InvalidRequest),
                false => self.next_state(self.share_states.get(&key), start),
            };
            results.push(state.map(|s| states.push((key.clone(), s))));
        }
        Ok((results, self.write_offsets(group, states, now, work)))
    }

    /// DeleteShareGroupOffsets of an empty share group: every state of each named topic is
    /// replaced by its fence, as DeleteGroups replaces a deleted group's (`share_state`): an
    /// uninitialized state under the next state epoch, written, so the share-partitions start
    /// afresh, where `share.auto.offset.reset` says, and a leader still holding the old state
    /// is fenced even by a coordinator that loads the partition later. A topic that does not
    /// exist or has no state is UNKNOWN_TOPIC_OR_PARTITION (Kafka's "no offset information to
    /// delete"); one with only fences is deleted (again). One result per name, in order.
    pub fn delete_share_offsets(&mut self, group: &str, topics: &BTreeSet<&str>, now: u64, work: &mut Work) -> Result<Changed, Code> {
        self.offsets_changeable(group)?;
        let mut results = Vec::with_capacity(topics.len());
        let mut states = Vec::new();
        let (mut lo, mut hi) = group_range(group);
        for &topic in topics {
            let Some((id, _)) = self.topics.get(topic).copied() else {
                results.push(Err(Code::UnknownTopicOrPartition));
                continue;
            };
            (lo.1, hi.1) = (id, id);
            let fences: Result<Vec<(ShareKey, Stored)>, Code> = self.states_in(&lo, &hi).map(|(k, s)| Ok((k.clone(), self.next_state(Some(s), uninitialized_start_offset)?))).collect();
            results.push(match fences {
                Ok(f) if f.is_empty() => Err(Code::UnknownTopicOrPartition),
                Ok(f) => {
                    states.extend(f);
                    Self::fits(group, states.len())
                }
                Err(e) => Err(e),
            });
        }
        if results.iter().any(|r| *r == Err(Code::RecordListTooLarge)) {
            return Err(Code::RecordListTooLarge);
        }
        Ok((results, self.write_offsets(group, states, now, work)))
    }

    /// A share-partition's state (`old`: the stored one) starting at `start` with nothing in
    /// flight, under the state epoch after the stored one (1 where none is stored: above the 0
    /// any leader read), at the stored leader epoch (which only a leader's read moves).
    /// INVALID_REQUEST when the state epoch is at its maximum: a state at the same epoch would
    /// not fence a leader holding the old one.
    fn next_state(&self, old: Option<&Stored>, start: i64) -> Result<Stored, Code> {
        let state_epoch = match old {
            None => 1,
            Some(s) => s.state_epoch.checked_add(1).ok_or(Code::InvalidRequest)?,
        };
        Ok(Stored { state_epoch, leader_epoch: old.map_or(-1, |s| s.leader_epoch), snapshot: Snapshot { start, batches: Vec::new() } })
    }

    fn state_record(key: &ShareKey, state: &Stored) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut k = Vec::new();
        encode_key(&mut k, key);
        (k, Some(encode_value(state)))
    }

    /// Writes `states` (one batch: all or none), which take effect once replicated
    /// ([`Coordinator::share_offsets_written`]); None when there is nothing to write.
    fn write_offsets(&mut self, group: &str, states: Vec<(ShareKey, Stored)>, now: u64, work: &mut Work) -> Option<Ticket> {
        if states.is_empty() {
            return None;
        }
        let kvs = states.iter().map(|(k, s)| Self::state_record(k, s)).collect();
        let ticket = self.ticket();
        self.write(group, kvs, Effect::ShareOffsets { group: group.to_string(), states, ticket }, now, work);
        Some(ticket)
    }

    /// An Alter's or Delete's write is replicated (its states take effect) or failed (they are
    /// dropped: what is stored stays).
    pub(super) fn share_offsets_written(&mut self, states: Vec<(ShareKey, Stored)>, result: Result<(), Code>) {
        if result.is_ok() {
            self.share_states.extend(states);
        }
    }
}

#[cfg(test)]
mod tests;
