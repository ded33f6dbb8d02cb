//! The coordinator's KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe):
//! one [`ConsumerGroup`] per group id beside the classic groups, sharing their offsets (a
//! consumer group's committed offsets live in the classic map's Empty entry, so OffsetFetch,
//! DeleteGroups and expiry treat both alike). A group id is a classic group or a consumer
//! group, never both; KIP-848's online migration (`migration`, after
//! `group.consumer.migration.policy`) moves a group with members between the two: a
//! ConsumerGroupHeartbeat joining a Stable classic group converts it, classic members are
//! then served by the consumer group (`consumer_classic`), and a consumer group whose last
//! consumer-protocol member went, leaving classic ones, converts back. Without the policy's
//! leave, a ConsumerGroupHeartbeat for a classic group with members is GROUP_ID_NOT_FOUND and a
//! JoinGroup for a consumer group with members INCONSISTENT_GROUP_PROTOCOL. An empty group of
//! either kind is dropped when the other kind joins, as Kafka converts it. Calls on
//! [`Coordinator`] with an explicit `now`; no IO.
//!
//! Every change of a group is written to `__consumer_offsets` (`consumer_stored`) and the
//! request that made it (a heartbeat, a classic member's JoinGroup or SyncGroup) is answered
//! only once that write is replicated, so a member is never told of a partition a coordinator
//! taking over would not know it holds.

use super::consumer::{ConsumerGroup, Heartbeat};
use super::consumer_records::{self, ConsumerKey};
use super::consumer_stored::{changes, Record, View};
use super::records::{self, Key, RecordError};
use super::writes::Effect;
use super::{Answer, Coordinator, HeartbeatAnswer, Pending, State, Work};
use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

impl Coordinator {
    /// The cluster's topics as of `image` (rebuilt when its offset moved): what consumer groups
    /// subscribe to, and the ids their records and answers name topics by.
    pub fn set_topics(&mut self, image: &crate::metadata::image::Image) {
        if image.offset != self.topics_at {
            self.topics = image.topics.iter().map(|(n, t)| (n.clone(), (t.id, t.partitions.len() as i32))).collect();
            self.topics_at = image.offset;
        }
    }

    /// `group`'s consumer group, a new one (with this coordinator's rules) if it has none.
    fn consumer_group_mut(&mut self, group: &str) -> &mut ConsumerGroup {
        if !self.consumer_groups.contains_key(group) {
            let mut g = ConsumerGroup::new(group, &self.config.consumer_assignors, self.config.consumer_session_timeout_ms);
            g.waits_for_revocation = super::rules::of(self.planted).waits_for_revocation();
            self.consumer_groups.insert(group.to_string(), g);
        }
        self.consumer_groups.get_mut(group).expect("inserted")
    }

    fn topic_id(&self, name: &str) -> Option<[u8; 16]> {
        self.topics.get(name).map(|(id, _)| *id)
    }

    /// ConsumerGroupHeartbeat, its fields already [`Heartbeat::validate`]d: answered once what
    /// it changed is replicated.
    pub fn consumer_heartbeat(&mut self, group: &str, mut hb: Heartbeat, now: u64, work: &mut Work) -> Pending<Answer> {
        let refused = |code| Pending::Now(Answer::Consumer(Err(code)));
        if group.is_empty() {
            return refused(Code::InvalidRequest);
        }
        if let Err(code) = self.owner(group) {
            return refused(code);
        }
        if self.is_share_group(group) {
            return refused(Code::GroupIdNotFound);
        }
        let upgrading = match self.groups.get(group).map(|g| g.state) {
            // Being deleted: nothing joins it until the tombstones are written.
            Some(State::Dead) => return refused(Code::CoordinatorNotAvailable),
            Some(State::Empty) | None => false,
            // A classic group with members: KIP-848's upgrade, if it may.
            Some(_) => match self.upgraded(group, &hb, now) {
                Ok(converted) => {
                    self.consumer_groups.insert(group.to_string(), converted);
                    true
                }
                Err(code) => return refused(code),
            },
        };
        if hb.member_epoch == 0 && hb.member_id.is_empty() {
            // v0: the coordinator names the member, uniquely across coordinators and groups.
            self.counter += 1;
            hb.member_id = format!("{group}-{}-{}", self.id_prefix(group), self.counter);
        }
        let partitions = self.partition_counts();
        let max_size = self.config.max_size;
        let known = self.consumer_groups.contains_key(group) && !upgrading;
        // A group id's epochs never go back: a consumer group made where an empty classic
        // group was goes on from its generation (and a classic group made where an empty
        // consumer group was, from its epoch: `drop_consumer_group`).
        let generation = self.groups.get(group).filter(|_| !known && !upgrading).map(|c| c.generation);
        let g = self.consumer_group_mut(group);
        if let Some(generation) = generation {
            (g.epoch, g.target_epoch) = (generation, generation);
        }
        if hb.member_epoch == 0 && !g.members.contains_key(&hb.member_id) && g.members.values().filter(|m| !m.away).count() >= max_size {
            if upgrading {
                self.consumer_groups.remove(group);
            }
            return refused(Code::GroupMaxSizeReached);
        }
        let g = self.consumer_groups.get_mut(group).expect("made above");
        let before = g.view();
        let result = g.heartbeat(hb, &partitions, now);
        if let (Err(code), false) = (&result, known) {
            // Nothing was made of it: no group is left behind in memory (a classic group that
            // was to convert stays as it was).
            let code = *code;
            if upgrading || self.consumer_groups.get(group).is_some_and(|g| g.members.is_empty()) {
                self.consumer_groups.remove(group);
                return refused(code);
            }
        }
        if upgrading && result.is_ok() {
            self.upgrade(group, now, work);
        }
        let interval = self.config.consumer_heartbeat_interval_ms;
        let answer = Answer::Consumer(result.map(|a| HeartbeatAnswer {
            member_id: a.member_id,
            member_epoch: a.member_epoch,
            assignment: a.assignment.map(|tps| tps.into_iter().filter_map(|(t, ps)| Some((self.topic_id(&t)?, ps))).collect()),
            heartbeat_interval_ms: interval,
        }));
        self.answer_once_written(group, before, answer, now, work)
    }

    /// Partition counts of every topic, by name.
    pub(super) fn partition_counts(&self) -> BTreeMap<String, i32> {
        self.topics.iter().map(|(n, (_, count))| (n.clone(), *count)).collect()
    }

    /// `answer`, to a request that changed `group` since `before`, once that change is
    /// replicated ([`Coordinator::write_consumer`]).
    pub(super) fn answer_once_written(&mut self, group: &str, before: View, answer: Answer, now: u64, work: &mut Work) -> Pending<Answer> {
        let ticket = self.ticket();
        match self.write_consumer(group, before, Some((ticket, answer)), now, work) {
            Some(answer) => {
                self.forget(ticket);
                Pending::Now(answer)
            }
            None => Pending::Wait(ticket),
        }
    }

    /// Writes what changed in `group` since `before`, and answers `waiting` once that is
    /// replicated. With nothing to write the answer is given back (None: it waits), unless an
    /// earlier write of the group is still in flight: what it says may be part of that write, so
    /// the group epoch record is written again and the answer waits for it (the partition's
    /// writes replicate in order). After a failed write (or an upgrade) the group is written
    /// whole, after a tombstone of its classic record, and the members that write may have
    /// stored are tombstoned. A change that left only classic members, the last
    /// consumer-protocol one gone, is KIP-848's downgrade instead (`migration`).
    pub(super) fn write_consumer(&mut self, group: &str, before: View, waiting: Option<(super::Ticket, Answer)>, now: u64, work: &mut Work) -> Option<Answer> {
        if self.downgrades(group, &before) {
            self.downgrade(group, before, waiting, now, work);
            return None;
        }
        // The group's offsets (and its place in offsets expiry) are the classic entry's.
        self.group_mut(group, now);
        let g = &self.consumer_groups[group];
        let after = g.view();
        let unsynced = self.consumer_unsynced.remove(group);
        let mut records = match &unsynced {
            Some(stored) => {
                let gone: Vec<Record> = stored.iter().filter(|m| !after.member_ids().any(|x| x == *m)).flat_map(|m| super::consumer_stored::tombstones_of(m)).collect();
                gone.into_iter().chain(changes(&View::default(), &after, &|t| self.topic_id(t))).collect()
            }
            None => changes(&before, &after, &|t| self.topic_id(t)),
        };
        let in_flight = self.writes.values().any(|w| matches!(&w.effect, Effect::Consumer { group: x, .. } if x == group));
        if records.is_empty() {
            match (in_flight, waiting) {
                (true, Some(w)) => {
                    records = changes(&View::default(), &after, &|t| self.topic_id(t)).into_iter().filter(|(k, _)| *k == ConsumerKey::Epoch).collect();
                    return self.write_consumer_records(group, (records, false), Some(w), before, after, now, work);
                }
                (_, waiting) => return waiting.map(|(_, a)| a),
            }
        }
        self.write_consumer_records(group, (records, unsynced.is_some()), waiting, before, after, now, work)
    }

    /// `records` (`whole`: after a tombstone of the group's classic record, which they supersede).
    #[allow(clippy::too_many_arguments)]
    fn write_consumer_records(&mut self, group: &str, (records, whole): (Vec<Record>, bool), waiting: Option<(super::Ticket, Answer)>, before: View, after: View, now: u64, work: &mut Work) -> Option<Answer> {
        let members = before.member_ids().chain(after.member_ids()).cloned().collect();
        let classic = whole.then(|| (records::encode_key(&Key::Group { group: group.to_string() }), None));
        let kvs = classic.into_iter().chain(self.encode(group, records)).collect();
        self.write(group, kvs, Effect::Consumer { group: group.to_string(), waiting, members }, now, work);
        None
    }

    pub(super) fn encode(&self, group: &str, records: Vec<Record>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        records.into_iter().map(|(key, v)| (records::encode_key(&Key::Consumer { group: group.to_string(), key }), v.as_ref().map(consumer_records::encode_value))).collect()
    }

    /// The tombstones of every record of `group` as a consumer group (none if it is not one).
    pub(super) fn consumer_tombstones(&self, group: &str) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        self.consumer_groups.get(group).map_or(Vec::new(), |g| self.encode(group, g.tombstones()))
    }

    /// A JoinGroup for an empty consumer group: it goes, and its records with it; the classic
    /// group's generations go on from its epoch. The empty classic group is written with the
    /// tombstones, so a coordinator that loads them after a failover goes on from that epoch
    /// too (without it, the next classic generation there was 1 again: a zombie of the first
    /// generation 1 could commit into the new one).
    pub(super) fn drop_consumer_group(&mut self, group: &str, now: u64, work: &mut Work) {
        let mut kvs = self.consumer_tombstones(group);
        if let Some(dropped) = self.consumer_groups.remove(group) {
            let classic = self.group_mut(group, now);
            classic.generation = classic.generation.max(dropped.epoch);
            kvs.push((records::encode_key(&Key::Group { group: group.to_string() }), Some(records::encode_group(&classic.value()))));
            self.consumer_unsynced.remove(group);
            self.write(group, kvs, Effect::Background, now, work);
        }
    }

    /// Offsets partition `p` is loaded: its consumer groups resolve their subscriptions, and a
    /// group whose subscribed partitions changed meanwhile moves its epoch (written).
    pub(super) fn consumer_groups_loaded(&mut self, p: i32, now: u64, work: &mut Work) {
        let partitions = self.partition_counts();
        let ids: Vec<String> = self.consumer_groups.keys().filter(|g| self.hosting.partition_of(g) == p).cloned().collect();
        for id in ids {
            let Some(g) = self.consumer_groups.get_mut(&id) else { continue };
            let before = g.view();
            if g.loaded(&partitions, now) {
                self.write_consumer(&id, before, None, now, work);
            }
        }
    }

    /// A consumer-group record read back while loading (`value` None: a tombstone).
    pub(super) fn restore_consumer(&mut self, group: &str, key: ConsumerKey, value: Option<&[u8]>, now: u64) -> Result<(), RecordError> {
        let value = value.map(|v| consumer_records::decode_value(&key, v)).transpose()?.flatten();
        if key == ConsumerKey::Epoch && value.is_none() {
            self.consumer_groups.remove(group);
            return Ok(());
        }
        let names: BTreeMap<[u8; 16], String> = self.topics.iter().map(|(n, (id, _))| (*id, n.clone())).collect();
        self.group_mut(group, now);
        let g = self.consumer_group_mut(group);
        g.restore(key, value, &|id| names.get(&id).cloned(), now);
        Ok(())
    }

    /// What a heartbeat of `member_id` in `group` subscribes to by regular expression
    /// (`regex`, the heartbeat's, else the one the member has): the topics it matches now, for
    /// the node to authorize ([`Heartbeat::regex_allowed`]). Empty without an expression.
    pub fn consumer_regex_matches(&self, group: &str, member_id: &str, regex: Option<&str>) -> BTreeSet<String> {
        let g = self.consumer_groups.get(group);
        let regex = match g {
            Some(g) => g.regex_of(member_id, regex),
            None => regex.filter(|r| !r.is_empty()),
        };
        regex.map_or_else(BTreeSet::new, |r| super::consumer::regex_matches(g, r, self.topics.keys()))
    }

    /// A consumer group for ConsumerGroupDescribe (None: no such group here).
    pub fn consumer_group(&self, group: &str) -> Result<Option<&ConsumerGroup>, Code> {
        self.owner(group)?;
        Ok(self.consumer_groups.get(group))
    }

    /// Every consumer group this node coordinates (ListGroups).
    pub fn consumer_groups(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.consumer_groups.values().filter(|g| self.owner(&g.id).is_ok())
    }

    /// Whether `group` is a consumer group with members: no classic member may join it, and it
    /// cannot be deleted.
    pub(super) fn consumer_members(&self, group: &str) -> bool {
        self.consumer_groups.get(group).is_some_and(|g| !g.members.is_empty())
    }

    /// An OffsetCommit's or OffsetFetch's member check when `group` is a consumer group (None:
    /// it is not one, the classic rules apply).
    pub fn consumer_member_check(&self, group: &str, member: &str, epoch: i32) -> Option<Result<(), Code>> {
        let deleting = self.groups.get(group).is_some_and(|g| g.state == State::Dead);
        self.consumer_groups.get(group).map(|g| if deleting { Err(Code::CoordinatorNotAvailable) } else { g.check_member(member, epoch) })
    }

    /// Whether a member of consumer group `group` subscribes to `topic` (OffsetDelete).
    pub(super) fn consumer_subscribed(&self, group: &str, topic: &str) -> bool {
        self.consumer_groups.get(group).is_some_and(|g| g.members.values().any(|m| m.subscribed.contains(topic)))
    }

    /// Sessions and rebalance timeouts run out; what that changes is written. An empty group
    /// stays (with its epoch) until its offsets expire or it is deleted, as in Kafka.
    pub(super) fn tick_consumer_groups(&mut self, now: u64, work: &mut Work) {
        let due: Vec<String> = self.consumer_groups().filter(|g| g.next_deadline().is_some_and(|t| t <= now)).map(|g| g.id.clone()).collect();
        for id in due {
            let Some(g) = self.consumer_groups.get_mut(&id) else { continue };
            let before = g.view();
            g.expire(now);
            self.write_consumer(&id, before, None, now, work);
        }
    }

    /// The next time a consumer group's member times out.
    pub(super) fn consumer_deadline(&self) -> Option<u64> {
        self.consumer_groups().filter_map(ConsumerGroup::next_deadline).min()
    }

    /// This node no longer coordinates offsets partition `p`: its consumer groups leave memory.
    pub(super) fn resign_consumer_groups(&mut self, p: i32) {
        let partitions = self.hosting.partitions();
        self.consumer_groups.retain(|g, _| super::partition_for(g, partitions) != p);
        self.consumer_unsynced.retain(|g, _| super::partition_for(g, partitions) != p);
    }
}

#[cfg(test)]
mod tests;
