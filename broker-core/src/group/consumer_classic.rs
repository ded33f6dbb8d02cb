//! Classic members inside a KIP-848 consumer group (KIP-848's online migration): a consumer
//! speaking JoinGroup / SyncGroup / Heartbeat / LeaveGroup is a member of the consumer group
//! like any other — its subscription (decoded from its JoinGroup metadata) moves the group
//! epoch and is in the target, and its partitions are reconciled toward its target — but it
//! learns of a change only by rejoining, and gives partitions up only by rejoining without
//! them. So, as Kafka's coordinator does:
//! * Heartbeat answers REBALANCE_IN_PROGRESS while the group epoch is past the member's, while
//!   it must revoke, or once the partitions it waits for are free: the member rejoins;
//! * JoinGroup reconciles it (`reconcile`): a partition it must give up and still says it owns
//!   (its subscription's owned partitions; an eager member owns none when it rejoins) keeps it
//!   at its epoch and is left out of what it is given; a partition another member still holds
//!   comes with a later rejoin. No partition is ever given to two members;
//! * JoinGroup's generation is the member epoch and there is no leader: SyncGroup answers with
//!   what it is given, encoded at its subscription's version;
//! * a member told to rejoin must within its rebalance timeout, one answered must sync within
//!   it, and one silent past its session timeout (JoinGroup's) is removed.
//!
//! Methods of [`ConsumerGroup`] with an explicit `now`; no IO. Member ids are the caller's.
//! The coordinator's side (writes, the upgrade and downgrade) is `migration`.

use super::calls::{JoinAnswer, JoinRequest};
use super::consumer::{ConsumerGroup, Member};
use super::consumer_records::ClassicMetadata;
use super::reconcile::{self, MemberAssignment, MemberState};
use crate::client::assignor::wire::{self, Assignment, Subscription};
use crate::client::assignor::TopicPartitions;
use crate::kafka::Code;
use bytes::Bytes;
use std::collections::BTreeMap;

/// The protocol type of every classic member of a consumer group (Kafka's `ConsumerProtocol`).
pub const consumer_protocol_type: &str = "consumer";

impl ClassicMetadata {
    /// The protocol a classic member is answered with: its first (each carries the same
    /// subscription; Kafka's choice).
    pub fn protocol(&self) -> &str {
        self.protocols.first().map_or("", |(name, _)| name)
    }

    /// The consumer protocol version its subscription is at, which its assignment is encoded at.
    pub fn version(&self) -> i16 {
        let version = self.protocols.first().and_then(|(_, m)| m.get(..2)).map_or(0, |b| i16::from_be_bytes([b[0], b[1]]));
        version.clamp(0, wire::assignment_version_max)
    }

    /// Its session timeout in ms.
    pub fn session_ms(&self) -> u64 {
        self.session_timeout_ms.max(0) as u64
    }

    /// `partitions` as its SyncGroup assignment bytes.
    pub fn assignment(&self, partitions: &TopicPartitions) -> Result<Bytes, Code> {
        let a = Assignment { partitions: partitions.clone(), user_data: None };
        wire::encode_assignment(&a, self.version()).map_err(|_| Code::UnknownServerError)
    }
}

/// A classic member's subscription: its first protocol's metadata (all carry the same one).
/// Metadata that is not the consumer protocol's is INVALID_REQUEST.
pub fn subscription(protocols: &[(String, Bytes)]) -> Result<Subscription, Code> {
    let (_, metadata) = protocols.first().ok_or(Code::InconsistentGroupProtocol)?;
    wire::decode_subscription(metadata).map_err(|_| Code::InvalidRequest)
}

impl ConsumerGroup {
    /// Whether a classic member offering `protocols` of `protocol_type` may be in the group: the
    /// type is the consumer protocol's and one of its protocols is one every other classic
    /// member offers (any, if there is none).
    pub fn supports_classic(&self, member_id: &str, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        let others: Vec<&ClassicMetadata> = self.members.iter().filter(|(id, _)| id.as_str() != member_id).filter_map(|(_, m)| m.classic.as_ref()).collect();
        protocol_type == consumer_protocol_type && protocols.iter().any(|(name, _)| others.iter().all(|c| c.protocols.iter().any(|(n, _)| n == name)))
    }

    /// The classic member a request names: by its instance id when it gives one
    /// (FENCED_INSTANCE_ID when another member id holds it), else by member id.
    /// UNKNOWN_MEMBER_ID: no such member, or one that uses the consumer protocol.
    fn classic_member(&self, member_id: &str, instance: Option<&str>) -> Result<String, Code> {
        let id = match instance {
            Some(i) => {
                let (holder, _) = self.members.iter().find(|(_, m)| m.instance_id.as_deref() == Some(i)).ok_or(Code::UnknownMemberId)?;
                if holder != member_id {
                    return Err(Code::FencedInstanceId);
                }
                holder.clone()
            }
            None => member_id.to_string(),
        };
        match self.members.get(&id) {
            Some(m) if m.classic.is_some() => Ok(id),
            _ => Err(Code::UnknownMemberId),
        }
    }

    /// JoinGroup from a classic member, already checked against the group
    /// ([`ConsumerGroup::supports_classic`]) and its size. A request without a member id joins
    /// as `new_id` (a static one takes its instance's place, partitions and target); `topics`
    /// are the partition counts of every topic. Answered with its member epoch as generation.
    pub fn classic_join(&mut self, req: &JoinRequest, new_id: &str, topics: &BTreeMap<String, i32>, now: u64) -> Result<JoinAnswer, Code> {
        let sub = subscription(&req.protocols)?;
        let id = match req.member_id.is_empty() {
            true => new_id.to_string(),
            false => req.member_id.clone(),
        };
        if let Some(instance) = &req.instance_id {
            let holder = self.members.iter().find(|(_, m)| m.instance_id.as_ref() == Some(instance)).map(|(h, _)| h.clone());
            match holder {
                // A static member back under a new id takes its instance's place.
                Some(old) if req.member_id.is_empty() => {
                    let place = self.members.remove(&old).expect("found");
                    let target = self.target.remove(&old).unwrap_or_default();
                    self.members.insert(id.clone(), place);
                    self.target.insert(id.clone(), target);
                }
                Some(old) if old != id => return Err(Code::FencedInstanceId),
                None if !req.member_id.is_empty() => return Err(Code::UnknownMemberId),
                _ => {}
            }
        }
        let session = req.session_timeout_ms;
        let member = self.members.entry(id.clone()).or_insert_with(|| Member::new(now + session));
        member.instance_id = req.instance_id.clone();
        member.rack = sub.rack.clone();
        (member.client_id, member.client_host) = (req.client_id.clone(), req.client_host.clone());
        (member.topics, member.regex, member.assignor) = (sub.topics.clone(), None, None);
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.classic = Some(ClassicMetadata { session_timeout_ms: i32::try_from(session).unwrap_or(i32::MAX), protocols: req.protocols.clone() });
        member.owned = Some(sub.owned.clone());
        member.away = false;
        member.expires_at = now + session;
        if self.refresh(topics) {
            self.bump();
        }
        self.target.entry(id.clone()).or_default();
        self.reconcile_classic(&id, &sub.owned);
        let member = self.members.get_mut(&id).expect("joined");
        // Answered: it must sync within its rebalance timeout.
        member.revoke_by = Some(now + member.rebalance_timeout_ms);
        let protocol = member.classic.as_ref().map(|c| c.protocol().to_string());
        Ok(JoinAnswer { generation: member.assignment.epoch, protocol_type: Some(consumer_protocol_type.into()), protocol, member_id: id, ..JoinAnswer::default() })
    }

    /// A classic member's next assignment at its JoinGroup, `owned` what its subscription says
    /// it owns. Kafka's `CurrentAssignmentBuilder` for it: partitions to revoke that it no longer
    /// owns (it gave them up before rejoining) are not waited for.
    fn reconcile_classic(&mut self, id: &str, owned: &TopicPartitions) {
        let next = {
            let waits = self.waits_for_revocation;
            let others: Vec<&MemberAssignment> = self.members.iter().filter(|(x, _)| x.as_str() != id).map(|(_, m)| &m.assignment).collect();
            let held = |t: &str, p: i32| waits && others.iter().any(|o| o.holds(t, p));
            let target = self.target.get(id).cloned().unwrap_or_default();
            let mut next = reconcile::next(&self.members[id].assignment, self.target_epoch, &target, Some(owned), held);
            let owns_revoked = owned.iter().any(|(t, ps)| next.revoking.get(t).is_some_and(|r| ps.iter().any(|p| r.contains(p))));
            if next.state == MemberState::UnrevokedPartitions && !owns_revoked {
                next = reconcile::next(&next, self.target_epoch, &target, Some(owned), held);
            }
            next
        };
        self.members.get_mut(id).expect("reconciled").assignment = next;
    }

    /// SyncGroup from a classic member: what it is given, once no rebalance is pending for it
    /// (REBALANCE_IN_PROGRESS while the group epoch is past its own and it has nothing to
    /// revoke: it must rejoin first). `protocol` (v5) must be the one its join was answered with.
    pub fn classic_sync(&mut self, member_id: &str, instance: Option<&str>, generation: i32, protocol: Option<(&str, &str)>, now: u64) -> Result<Bytes, Code> {
        let id = self.classic_member(member_id, instance)?;
        let epoch = self.epoch;
        let m = self.members.get_mut(&id).expect("found");
        let classic = m.classic.as_ref().expect("a classic member");
        if generation != m.assignment.epoch {
            return Err(Code::IllegalGeneration);
        }
        if protocol.is_some_and(|(ty, name)| ty != consumer_protocol_type || name != classic.protocol()) {
            return Err(Code::InconsistentGroupProtocol);
        }
        if epoch > m.assignment.epoch && m.assignment.state != MemberState::UnrevokedPartitions {
            m.revoke_by = Some(m.revoke_by.unwrap_or(now + m.rebalance_timeout_ms));
            return Err(Code::RebalanceInProgress);
        }
        let bytes = classic.assignment(&m.assignment.assigned)?;
        m.revoke_by = None;
        m.expires_at = now + classic.session_ms();
        Ok(bytes)
    }

    /// Heartbeat from a classic member: its session goes on; REBALANCE_IN_PROGRESS when it must
    /// rejoin (a newer group epoch, partitions to revoke, or partitions it waited for now free),
    /// which it must within its rebalance timeout.
    pub fn classic_heartbeat(&mut self, member_id: &str, instance: Option<&str>, generation: i32, now: u64) -> Result<(), Code> {
        let id = self.classic_member(member_id, instance)?;
        let (epoch, waiting) = (self.epoch, self.waiting_on_unreleased(&id));
        let m = self.members.get_mut(&id).expect("found");
        if generation != m.assignment.epoch {
            return Err(Code::IllegalGeneration);
        }
        m.expires_at = now + m.classic.as_ref().map_or(0, ClassicMetadata::session_ms);
        let rejoin = match m.assignment.state {
            MemberState::UnrevokedPartitions => true,
            MemberState::UnreleasedPartitions => !waiting,
            MemberState::Stable => false,
        };
        if rejoin || m.assignment.epoch < epoch {
            m.revoke_by = Some(m.revoke_by.unwrap_or(now + m.rebalance_timeout_ms));
            return Err(Code::RebalanceInProgress);
        }
        Ok(())
    }

    /// Whether a member still waits for a partition of its target that another member holds.
    fn waiting_on_unreleased(&self, id: &str) -> bool {
        let Some(m) = self.members.get(id) else { return false };
        let target = self.target.get(id).cloned().unwrap_or_default();
        let others: Vec<&MemberAssignment> = self.members.iter().filter(|(x, _)| x.as_str() != id).map(|(_, o)| &o.assignment).collect();
        target.iter().any(|(t, ps)| ps.iter().any(|p| !m.assignment.holds(t, *p) && others.iter().any(|o| o.holds(t, *p))))
    }

    /// LeaveGroup of one classic member (by member id, or by instance id with an empty member
    /// id: an admin's removal): it goes, and the group epoch moves.
    pub fn classic_leave(&mut self, member_id: &str, instance: Option<&str>, topics: &BTreeMap<String, i32>) -> Result<(), Code> {
        let id = match instance {
            Some(i) if member_id.is_empty() => {
                let holder = self.members.iter().find(|(_, m)| m.instance_id.as_deref() == Some(i)).map(|(h, _)| h.clone()).ok_or(Code::UnknownMemberId)?;
                self.classic_member(&holder, Some(i))?
            }
            _ => self.classic_member(member_id, instance)?,
        };
        self.members.remove(&id);
        self.target.remove(&id);
        self.refresh(topics);
        self.bump();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
