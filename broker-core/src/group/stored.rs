//! A group's stored form: the `GroupMetadataValue` written to `__consumer_offsets` when it is
//! stored, the group restored from it when a coordinator loads, and what its members' consumer
//! subscriptions name. Conversion only; the transitions are `state`'s.

use super::records::{GroupValue, MemberValue};
use super::state::{Group, Member, State};

impl Group {
    /// The stored value: members with their assignment (the one being stored, if any).
    pub fn value(&self) -> GroupValue {
        let protocol = self.protocol.clone().unwrap_or_default();
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_since as i64,
            members: self
                .members
                .values()
                .map(|m| MemberValue {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms as i32,
                    session_timeout_ms: m.session_timeout_ms as i32,
                    subscription: m.protocols.iter().find(|(n, _)| *n == protocol).map(|(_, b)| b.clone()).unwrap_or_default(),
                    assignment: self.storing.as_ref().and_then(|s| s.get(&m.id).cloned()).unwrap_or_else(|| m.assignment.clone()),
                })
                .collect(),
        }
    }

    /// The group as loaded from its stored value: Stable with its members (their sessions
    /// start now), or Empty.
    pub fn restore(&mut self, v: GroupValue, now: u64) {
        self.generation = v.generation;
        self.protocol_type = (!v.protocol_type.is_empty()).then_some(v.protocol_type);
        self.protocol = v.protocol;
        self.leader = v.leader;
        self.members.clear();
        self.instances.clear();
        for m in v.members {
            if let Some(i) = &m.group_instance_id {
                self.instances.insert(i.clone(), m.member_id.clone());
            }
            let protocols = self.protocol.iter().map(|p| (p.clone(), m.subscription.clone())).collect();
            let member = Member {
                id: m.member_id.clone(),
                instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                session_timeout_ms: m.session_timeout_ms.max(0) as u64,
                rebalance_timeout_ms: m.rebalance_timeout_ms.max(0) as u64,
                protocols,
                assignment: m.assignment,
                expires_at: now + m.session_timeout_ms.max(0) as u64,
                join: None,
                sync: None,
            };
            self.members.insert(m.member_id, member);
        }
        let state = if self.members.is_empty() { State::Empty } else { State::Stable };
        self.state = state;
        self.state_since = v.current_state_timestamp.max(0) as u64;
    }

    /// Whether a member of this consumer group subscribes to `topic` (the topics that open a
    /// consumer protocol subscription of any version: i16 version, i32 count, i16-length names).
    pub fn subscribed(&self, topic: &str) -> bool {
        if self.protocol_type.as_deref() != Some("consumer") {
            return false;
        }
        let protocol = self.protocol.as_deref().unwrap_or_default();
        self.members.values().filter_map(|m| m.protocols.iter().find(|(n, _)| n == protocol)).any(|(_, meta)| subscription_topics(meta).iter().any(|t| t == topic))
    }
}

/// The topic names at the start of a consumer protocol subscription; empty if it does not parse.
fn subscription_topics(meta: &[u8]) -> Vec<String> {
    let mut topics = Vec::new();
    let Some(count) = meta.get(2..6).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]])) else { return topics };
    let mut pos = 6;
    for _ in 0..count.max(0) {
        let Some(len) = meta.get(pos..pos + 2).map(|b| i16::from_be_bytes([b[0], b[1]]).max(0) as usize) else { break };
        let Some(name) = meta.get(pos + 2..pos + 2 + len).and_then(|b| std::str::from_utf8(b).ok()) else { break };
        topics.push(name.to_string());
        pos += 2 + len;
    }
    topics
}
