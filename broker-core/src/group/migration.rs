//! KIP-848's online migration, the coordinator's side: a classic group with members becomes a
//! consumer group when a consumer-protocol member joins it (the upgrade), classic members of a
//! consumer group are served by it (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; the decisions
//! are `consumer_classic`'s), and a consumer group left with only classic members when its last
//! consumer-protocol member goes becomes a classic group again, which rebalances (the
//! downgrade). `group.consumer.migration.policy` says which conversions happen; `disabled`
//! also keeps classic members out of consumer groups with members (INCONSISTENT_GROUP_PROTOCOL).
//!
//! The upgrade happens only from Stable (each member's assignment is then the one it holds;
//! mid-rebalance a cooperative member may hold partitions its stored assignment no longer
//! says, so the heartbeat is answered COORDINATOR_NOT_AVAILABLE and retried), and is written
//! as the consumer group's records after a tombstone of the classic record, in the batch
//! whose replication answers the heartbeat. The downgrade is written as the consumer group's
//! tombstones and the classic record, in the batch whose replication answers the request
//! that caused it. Calls on [`Coordinator`] with an explicit `now`; no IO.

use super::consumer::{ConsumerGroup, Heartbeat, Member};
use super::consumer_classic::{consumer_protocol_type, subscription};
use super::consumer_records::{ClassicMetadata, ConsumerKey};
use super::consumer_stored::View;
use super::records::{self, GroupValue, Key, MemberValue};
use super::reconcile::{MemberAssignment, MemberState};
use super::state::Out;
use super::writes::Effect;
use super::{Answer, Coordinator, Group, JoinAnswer, JoinRequest, MigrationPolicy, Pending, State, Ticket, Work};
use crate::client::assignor::wire;
use crate::client::assignor::TopicPartitions;
use crate::kafka::Code;
use bytes::Bytes;
use std::collections::BTreeSet;

impl Coordinator {
    /// A ConsumerGroupHeartbeat `hb` for classic group `group`, which has members: the group
    /// converted to a consumer group, not installed yet. GROUP_ID_NOT_FOUND (Kafka's answer)
    /// unless the policy upgrades, `hb` joins, the group uses the consumer protocol, fits in
    /// `group.max.size` and its members' bytes decode; COORDINATOR_NOT_AVAILABLE while it is
    /// not Stable.
    pub(super) fn upgraded(&self, group: &str, hb: &Heartbeat, now: u64) -> Result<ConsumerGroup, Code> {
        let g = &self.groups[group];
        let upgrades = self.config.consumer_migration_policy.upgrades() && hb.member_epoch == 0;
        if !upgrades || g.protocol_type.as_deref() != Some(consumer_protocol_type) || g.members.len() > self.config.max_size {
            return Err(Code::GroupIdNotFound);
        }
        if g.state != State::Stable {
            return Err(Code::CoordinatorNotAvailable);
        }
        let mut cg = ConsumerGroup::new(group, &self.config.consumer_assignors, self.config.consumer_session_timeout_ms);
        cg.waits_for_revocation = super::rules::of(self.planted).waits_for_revocation();
        (cg.epoch, cg.target_epoch) = (g.generation, g.generation);
        let protocol = g.protocol.clone().unwrap_or_default();
        for m in g.members.values() {
            let chosen: Vec<(String, Bytes)> = m.protocols.iter().filter(|(n, _)| *n == protocol).cloned().collect();
            let sub = subscription(&chosen).map_err(|_| Code::GroupIdNotFound)?;
            // A member the leader left out has empty bytes: it holds nothing.
            let assigned = match m.assignment.is_empty() {
                true => TopicPartitions::new(),
                false => wire::decode_assignment(&m.assignment).map_err(|_| Code::GroupIdNotFound)?.partitions,
            };
            let mut member = Member::new(now + m.session_timeout_ms);
            (member.instance_id, member.rack) = (m.instance_id.clone(), sub.rack);
            (member.client_id, member.client_host) = (m.client_id.clone(), m.client_host.clone());
            (member.topics, member.rebalance_timeout_ms) = (sub.topics, m.rebalance_timeout_ms);
            let session_timeout_ms = i32::try_from(m.session_timeout_ms).unwrap_or(i32::MAX);
            member.classic = Some(ClassicMetadata { session_timeout_ms, protocols: m.protocols.clone() });
            member.assignment = MemberAssignment { epoch: g.generation, previous_epoch: g.generation, state: MemberState::Stable, assigned: assigned.clone(), revoking: TopicPartitions::new() };
            cg.target.insert(m.id.clone(), assigned);
            cg.members.insert(m.id.clone(), member);
        }
        Ok(cg)
    }

    /// The heartbeat that joined the converted group was taken: the classic group gives way
    /// (its offsets stay; anything still waiting on it is told to rejoin) and the consumer
    /// group's next write is whole.
    pub(super) fn upgrade(&mut self, group: &str, now: u64, work: &mut Work) {
        let prefix = self.id_prefix(group);
        let mut out = Out::default();
        if let Some(old) = self.groups.get_mut(group) {
            old.abandon(Code::RebalanceInProgress, &mut out);
            let mut fresh = Group::new(group, now, prefix);
            (fresh.offsets, fresh.generation) = (std::mem::take(&mut old.offsets), old.generation);
            *old = fresh;
        }
        self.consumer_unsynced.entry(group.to_string()).or_default();
        self.deliver(group, out, now, work);
    }

    /// Whether the change of consumer group `group` since `before` is KIP-848's downgrade: the
    /// policy downgrades, consumer-protocol members were there, only classic ones are left, and
    /// they fit in `group.max.size`.
    pub(super) fn downgrades(&self, group: &str, before: &View) -> bool {
        let Some(g) = self.consumer_groups.get(group) else { return false };
        let classic_only = !g.members.is_empty() && g.members.values().all(|m| m.classic.is_some());
        self.config.consumer_migration_policy.downgrades() && classic_only && before.has_consumer_protocol_members() && g.members.len() <= self.config.max_size
    }

    /// KIP-848's downgrade of consumer group `group` ([`Coordinator::downgrades`]): its classic
    /// members become a classic group, holding what they were given, which rebalances at once.
    /// Its generation is the group epoch before the change (Kafka's: the members reconciled to
    /// it are told to rejoin, not fenced, and may commit meanwhile); the leader, the first
    /// member. Written as the consumer group's tombstones (of every member it may have
    /// stored) and the classic record; `waiting` is answered once replicated.
    pub(super) fn downgrade(&mut self, group: &str, before: View, waiting: Option<(Ticket, Answer)>, now: u64, work: &mut Work) {
        let cg = self.consumer_groups.remove(group).expect("a consumer group downgrades");
        let stored = self.consumer_unsynced.remove(group).unwrap_or_default();
        let members: BTreeSet<String> = before.member_ids().cloned().chain(stored).chain(cg.members.keys().cloned()).collect();
        let mut tombstones: Vec<_> = members.iter().flat_map(|m| super::consumer_stored::tombstones_of(m)).collect();
        tombstones.extend([(ConsumerKey::TargetEpoch, None), (ConsumerKey::Epoch, None)]);
        let mut kvs = self.encode(group, tombstones);
        let leader = cg.members.keys().next().cloned();
        let stored_members = cg.members.iter().map(classic_member).collect();
        let value = GroupValue { protocol_type: consumer_protocol_type.into(), generation: before.epoch(), leader, current_state_timestamp: now as i64, members: stored_members, ..GroupValue::default() };
        let mut out = Out::default();
        let g = self.group_mut(group, now);
        g.restore(value, now);
        for (id, m) in &mut g.members {
            m.protocols = cg.members[id].classic.as_ref().map_or_else(Vec::new, |c| c.protocols.clone());
        }
        g.rebalance_downgraded(now, &mut out);
        kvs.push((records::encode_key(&Key::Group { group: group.to_string() }), Some(records::encode_group(&g.value()))));
        self.write(group, kvs, Effect::Consumer { group: group.to_string(), waiting, members }, now, work);
        self.deliver(group, out, now, work);
    }

    /// JoinGroup for consumer group `group`, which has members: its classic member, answered
    /// (generation: the member epoch) once what the join changed is replicated.
    pub(super) fn join_consumer_group(&mut self, group: &str, req: JoinRequest, now: u64, work: &mut Work) -> Pending<JoinAnswer> {
        let refused = |code, id: &str| Pending::Now(JoinAnswer::error(code, id));
        let g = &self.consumer_groups[group];
        if self.config.consumer_migration_policy == MigrationPolicy::Disabled || !g.supports_classic(&req.member_id, &req.protocol_type, &req.protocols) {
            return refused(Code::InconsistentGroupProtocol, &req.member_id);
        }
        if !g.members.contains_key(&req.member_id) && g.members.len() >= self.config.max_size {
            return refused(Code::GroupMaxSizeReached, &req.member_id);
        }
        let mut new_id = String::new();
        if req.member_id.is_empty() {
            self.counter += 1;
            new_id = format!("{}-{}-{}", req.client_id, self.id_prefix(group), self.counter);
            // KIP-394: a dynamic member comes back with its id (a static one need not).
            if req.require_known_member_id && req.instance_id.is_none() {
                return refused(Code::MemberIdRequired, &new_id);
            }
        }
        let topics = self.partition_counts();
        let g = self.consumer_groups.get_mut(group).expect("looked up");
        let before = g.view();
        match g.classic_join(&req, &new_id, &topics, now) {
            Err(code) => refused(code, &req.member_id),
            Ok(answer) => match self.answer_once_written(group, before, Answer::Join(answer), now, work) {
                Pending::Now(Answer::Join(a)) => Pending::Now(a),
                Pending::Now(other) => unreachable!("a join is answered with a join: {other:?}"),
                Pending::Wait(t) => Pending::Wait(t),
            },
        }
    }

    /// SyncGroup for consumer group `group`: a classic member's assignment, once anything of
    /// the group still being written is replicated.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sync_consumer_group(&mut self, group: &str, member: &str, instance: Option<&str>, generation: i32, protocol: Option<(&str, &str)>, now: u64, work: &mut Work) -> Pending<Result<Bytes, Code>> {
        let g = self.consumer_groups.get_mut(group).expect("a consumer group");
        let before = g.view();
        match g.classic_sync(member, instance, generation, protocol, now) {
            Err(code) => Pending::Now(Err(code)),
            Ok(assignment) => match self.answer_once_written(group, before, Answer::Sync(Ok(assignment)), now, work) {
                Pending::Now(Answer::Sync(a)) => Pending::Now(a),
                Pending::Now(other) => unreachable!("a sync is answered with a sync: {other:?}"),
                Pending::Wait(t) => Pending::Wait(t),
            },
        }
    }

    /// LeaveGroup for consumer group `group`: one result per member; what it changed is written
    /// behind the answer, as a classic group's leave is.
    pub(super) fn leave_consumer_group(&mut self, group: &str, members: &[(String, Option<String>)], now: u64, work: &mut Work) -> Vec<Result<(), Code>> {
        let topics = self.partition_counts();
        let g = self.consumer_groups.get_mut(group).expect("a consumer group");
        let before = g.view();
        let results = members.iter().map(|(m, i)| g.classic_leave(m, i.as_deref(), &topics)).collect();
        self.write_consumer(group, before, None, now, work);
        results
    }
}

/// A classic member of a consumer group as the classic group's stored member: what it was
/// given is its assignment, at its subscription's version.
fn classic_member((id, m): (&String, &Member)) -> MemberValue {
    let classic = m.classic.clone().unwrap_or_default();
    MemberValue {
        member_id: id.clone(),
        group_instance_id: m.instance_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        rebalance_timeout_ms: i32::try_from(m.rebalance_timeout_ms).unwrap_or(i32::MAX),
        session_timeout_ms: classic.session_timeout_ms,
        subscription: Bytes::new(),
        assignment: classic.assignment(&m.assignment.assigned).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests;
