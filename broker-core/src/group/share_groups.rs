//! The coordinator's KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe, and
//! DeleteGroups of a share group): one [`ShareGroup`] per group id beside the classic and
//! consumer groups. A group id is one kind at a time: a share heartbeat for a classic group with
//! members or a consumer group is GROUP_ID_NOT_FOUND ("not a share group"), and a JoinGroup or
//! ConsumerGroupHeartbeat for a share group is refused the same way. Calls on [`Coordinator`]
//! with an explicit `now`; no IO.
//!
//! Every change of a group is written to `__consumer_offsets` in Kafka's share-group records
//! (`share_stored`, `share_records`) and the heartbeat that made it is answered only once that
//! write is replicated, so a coordinator that takes the partition over (or a broker that
//! restarts) knows the group, its epoch and its members, which heartbeat on at their epochs. An
//! empty share group stays until DeleteGroups deletes it (only when empty: NON_EMPTY_GROUP),
//! with its share-partition states (`share_state`).

use super::share::{ShareGroup, ShareHeartbeat};
use super::share_records::{self, ShareGroupKey};
use super::share_stored::{changes, epoch_record, tombstones_of, Record, View};
use super::records::{self, Key, RecordError};
use super::writes::Effect;
use super::{Answer, Coordinator, HeartbeatAnswer, Pending, State, Ticket, Work};
use crate::kafka::Code;
use std::collections::BTreeMap;

impl Coordinator {
    fn share_partition_counts(&self) -> BTreeMap<String, i32> {
        self.topics.iter().map(|(n, (_, count))| (n.clone(), *count)).collect()
    }

    /// ShareGroupHeartbeat, its fields already [`ShareHeartbeat::validate`]d: answered
    /// ([`Answer::Consumer`], the same answer a KIP-848 heartbeat gets) once what it changed is
    /// replicated.
    pub fn share_heartbeat(&mut self, group: &str, hb: ShareHeartbeat, now: u64, work: &mut Work) -> Pending<Answer> {
        let refused = |code| Pending::Now(Answer::Consumer(Err(code)));
        if group.is_empty() {
            return refused(Code::InvalidRequest);
        }
        if let Err(code) = self.owner(group) {
            return refused(code);
        }
        let classic_busy = self.groups.get(group).is_some_and(|g| g.state != State::Empty);
        if classic_busy || self.consumer_groups.contains_key(group) {
            return refused(Code::GroupIdNotFound);
        }
        let partitions = self.share_partition_counts();
        let (timeout, max_size, interval) = (self.config.share_session_timeout_ms, self.config.share_max_size, self.config.share_heartbeat_interval_ms);
        let answer = |member_id: String, member_epoch: i32, assignment| Answer::Consumer(Ok(HeartbeatAnswer { member_id, member_epoch, assignment, heartbeat_interval_ms: interval }));
        // Only a join makes a group: a leave or a heartbeat of a member it never had leaves
        // nothing behind.
        let known = self.share_groups.get(group);
        // Nor while an Alter or Delete of its offsets is written (it needs the group empty).
        if known.is_some_and(|g| g.deleting) || (hb.member_epoch == 0 && self.share_offsets_writing(group)) {
            return refused(Code::CoordinatorNotAvailable);
        }
        if known.is_none_or(|g| !g.members.contains_key(&hb.member_id)) && hb.member_epoch == 0 && known.map_or(0, |g| g.members.len()) >= max_size {
            return refused(Code::GroupMaxSizeReached);
        }
        let before = match known {
            Some(g) => g.view(),
            None if hb.member_epoch == -1 => return Pending::Now(answer(hb.member_id, -1, None)),
            None if hb.member_epoch != 0 => return refused(Code::UnknownMemberId),
            None => View::default(),
        };
        let g = self.share_groups.entry(group.to_string()).or_insert_with(|| ShareGroup::new(group, timeout));
        let a = match g.heartbeat(hb, &partitions, now) {
            Ok(a) => a,
            Err(code) => return refused(code),
        };
        let assignment = a.assignment.map(|tps| tps.into_iter().filter_map(|(t, ps)| Some((self.topic_id_of(&t)?, ps))).collect());
        let ticket = self.ticket();
        match self.write_share_group(group, before, Some((ticket, answer(a.member_id, a.member_epoch, assignment))), now, work) {
            Some(answer) => {
                self.forget(ticket);
                Pending::Now(answer)
            }
            None => Pending::Wait(ticket),
        }
    }

    fn topic_id_of(&self, name: &str) -> Option<[u8; 16]> {
        self.topics.get(name).map(|(id, _)| *id)
    }

    /// Writes what changed in share group `group` since `before`, and answers `waiting` once
    /// that is replicated. With nothing to write the answer is given back (None: it waits),
    /// unless an earlier write of the group is still in flight: what it says may be part of
    /// that write, so the group epoch record is written again and the answer waits for it (the
    /// partition's writes replicate in order). After a failed write the group is written whole,
    /// and the members that write may have stored are tombstoned.
    fn write_share_group(&mut self, group: &str, before: View, waiting: Option<(Ticket, Answer)>, now: u64, work: &mut Work) -> Option<Answer> {
        let Some(g) = self.share_groups.get_mut(group) else { return waiting.map(|(_, a)| a) };
        let after = g.view();
        let unsynced = g.unsynced.take();
        let id = |t: &str| self.topic_id_of(t);
        let records = match &unsynced {
            Some(stored) => {
                let gone = stored.iter().filter(|m| !after.member_ids().any(|x| x == *m)).flat_map(|m| tombstones_of(m));
                gone.chain(changes(&View::default(), &after, &id)).collect()
            }
            None => changes(&before, &after, &id),
        };
        if records.is_empty() {
            let in_flight = self.writes.values().any(|w| matches!(&w.effect, Effect::ShareGroup { group: x, .. } if x == group));
            match (in_flight, waiting) {
                (true, Some(w)) => return self.write_share_records(group, vec![epoch_record(&after)], Some(w), &before, &after, now, work),
                (_, waiting) => return waiting.map(|(_, a)| a),
            }
        }
        self.write_share_records(group, records, waiting, &before, &after, now, work)
    }

    #[allow(clippy::too_many_arguments)]
    fn write_share_records(&mut self, group: &str, records: Vec<Record>, waiting: Option<(Ticket, Answer)>, before: &View, after: &View, now: u64, work: &mut Work) -> Option<Answer> {
        let members = before.member_ids().chain(after.member_ids()).cloned().collect();
        let kvs = Self::encode_share_group(group, records);
        self.write(group, kvs, Effect::ShareGroup { group: group.to_string(), waiting, members }, now, work);
        None
    }

    fn encode_share_group(group: &str, records: Vec<Record>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        records.into_iter().map(|(key, v)| (records::encode_key(&Key::ShareGroup { group: group.to_string(), key }), v.as_ref().map(share_records::encode_value))).collect()
    }

    /// A share group's write is replicated (`result` Ok) or failed: after a failure its next
    /// write is whole, with tombstones for `members` (those the failed one may have stored).
    pub(super) fn share_group_written(&mut self, group: &str, result: Result<(), Code>, members: std::collections::BTreeSet<String>) {
        if let (Err(_), Some(g)) = (result, self.share_groups.get_mut(group)) {
            g.unsynced.get_or_insert_with(Default::default).extend(members);
        }
    }

    /// DeleteGroups of share group `group`: only an empty one (NON_EMPTY_GROUP otherwise). Its
    /// records are tombstoned and its share-partition states replaced by fences; meanwhile nothing joins it and
    /// its states are neither read nor written. Once replicated the group is gone and its
    /// share-partitions start afresh (`share_state`'s fence); if the write fails, it stays.
    /// INVALID_REQUEST, nothing written, when a state's epoch is at i32::MAX: its fence could
    /// not move past the epoch a leader may hold (as the offsets APIs refuse it).
    pub(super) fn delete_share_group(&mut self, group: &str, now: u64, work: &mut Work) -> Result<Pending<()>, Code> {
        let writing = self.share_offsets_writing(group);
        let fences = self.share_state_fences(group);
        let Some(g) = self.share_groups.get_mut(group) else { return Err(Code::GroupIdNotFound) };
        if g.deleting || writing {
            return Err(Code::CoordinatorNotAvailable);
        }
        if !g.members.is_empty() {
            return Err(Code::NonEmptyGroup);
        }
        let fences = fences?;
        g.deleting = true;
        let mut kvs = Self::encode_share_group(group, g.tombstones());
        kvs.extend(fences);
        let ticket = self.ticket();
        self.write(group, kvs, Effect::Delete { group: group.to_string(), offsets: None, ticket }, now, work);
        Ok(Pending::Wait(ticket))
    }

    /// The deletion of `group` is replicated (or failed): a share group goes, its
    /// share-partition states fenced; or it stays, as it was.
    pub(super) fn share_group_deleted(&mut self, group: &str, result: Result<(), Code>) {
        match result {
            Ok(()) => {
                self.share_groups.remove(group);
                self.fence_deleted_share_states(group);
            }
            Err(_) => self.share_groups.get_mut(group).into_iter().for_each(|g| g.deleting = false),
        }
    }

    /// Whether `group`'s deletion is being written (its share-partition states wait).
    pub(super) fn share_group_deleting(&self, group: &str) -> bool {
        self.share_groups.get(group).is_some_and(|g| g.deleting)
    }

    /// A share-group record read back while loading (`value` None: a tombstone).
    pub(super) fn restore_share_group(&mut self, group: &str, key: ShareGroupKey, value: Option<&[u8]>, now: u64) -> Result<(), RecordError> {
        let value = value.map(|v| share_records::decode_value(&key, v)).transpose()?.flatten();
        if key == ShareGroupKey::Epoch && value.is_none() {
            self.share_groups.remove(group);
            return Ok(());
        }
        let names: BTreeMap<[u8; 16], String> = self.topics.iter().map(|(n, (id, _))| (*id, n.clone())).collect();
        let timeout = self.config.share_session_timeout_ms;
        // A tombstone (or a record read past) makes no group.
        let g = match (self.share_groups.get_mut(group), value.is_some()) {
            (Some(g), _) => g,
            (None, true) => self.share_groups.entry(group.to_string()).or_insert_with(|| ShareGroup::new(group, timeout)),
            (None, false) => return Ok(()),
        };
        g.restore(key, value, &|id| names.get(&id).cloned(), now);
        Ok(())
    }

    /// Offsets partition `p` is loaded: its share groups resolve their subscriptions, and a
    /// group whose subscribed partitions changed meanwhile moves its epoch (written).
    pub(super) fn share_groups_loaded(&mut self, p: i32, now: u64, work: &mut Work) {
        let partitions = self.share_partition_counts();
        let ids: Vec<String> = self.share_groups.keys().filter(|g| self.hosting.partition_of(g) == p).cloned().collect();
        for id in ids {
            let Some(g) = self.share_groups.get_mut(&id) else { continue };
            let before = g.view();
            if g.loaded(&partitions) {
                self.write_share_group(&id, before, None, now, work);
            }
        }
    }

    /// Whether `group` is a share group (no classic or consumer member may use its id).
    pub fn is_share_group(&self, group: &str) -> bool {
        self.share_groups.contains_key(group)
    }

    /// A share group for ShareGroupDescribe (None: no such share group here).
    pub fn share_group(&self, group: &str) -> Result<Option<&ShareGroup>, Code> {
        self.owner(group)?;
        Ok(self.share_groups.get(group).filter(|g| !g.deleting))
    }

    /// Every share group this node coordinates (ListGroups).
    pub fn share_groups(&self) -> impl Iterator<Item = &ShareGroup> {
        self.share_groups.values().filter(|g| !g.deleting && self.owner(&g.id).is_ok())
    }

    /// Members whose session ended leave their share groups (written).
    pub(super) fn tick_share_groups(&mut self, now: u64, work: &mut Work) {
        let partitions = self.share_partition_counts();
        let due: Vec<String> = self.share_groups().filter(|g| g.next_deadline().is_some_and(|t| t <= now)).map(|g| g.id.clone()).collect();
        for id in due {
            let Some(g) = self.share_groups.get_mut(&id) else { continue };
            let before = g.view();
            if g.expire(now, &partitions) {
                self.write_share_group(&id, before, None, now, work);
            }
        }
    }

    pub(super) fn share_deadline(&self) -> Option<u64> {
        self.share_groups().filter_map(ShareGroup::next_deadline).min()
    }

    /// Offsets partition `p` is no longer led here: its share groups leave memory.
    pub(super) fn resign_share_groups(&mut self, p: i32) {
        let partitions = self.hosting.partitions();
        self.share_groups.retain(|g, _| super::partition_for(g, partitions) != p);
        self.resign_share_states(p);
    }
}

#[cfg(test)]
mod tests;
