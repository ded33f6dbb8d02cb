//! One consumer group under Kafka's classic protocol: members, generation, the chosen
//! protocol, assignments, committed offsets, and the transitions between Empty,
//! PreparingRebalance, CompletingRebalance, Stable and Dead. A plain struct driven with an
//! explicit `now`; requests that cannot be answered at once leave a [`Ticket`] on the member,
//! answered into [`Out`] when the rebalance moves on. Never touches the log: when the group must
//! be stored it says so in [`Out::store`], and the coordinator writes it.
//!
//! The rules follow Kafka's `GroupCoordinator` (docs/groups.md lists where they differ):
//! a rebalance completes when every member has rejoined (or at the rebalance deadline, without
//! those that did not); a member waiting on a JoinGroup or SyncGroup is kept alive; a member
//! silent past its session timeout is removed; the leader's SyncGroup assignment takes effect
//! only once the group is stored.

use super::records::OffsetValue;
use super::GroupConfig;
use crate::kafka::Code;
use bytes::Bytes;
pub use super::calls::*;
use std::collections::BTreeMap;

/// KIP-134's wait before an empty group's first rebalance completes.
#[derive(Debug, Clone, Copy)]
struct InitialDelay {
    /// group.initial.rebalance.delay.ms (at most the rebalance timeout).
    delay: u64,
    /// The rebalance timeout: the wait never goes past it.
    until: u64,
    /// A member joined during the current delay, so another delay follows.
    joined: bool,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub id: String,
    pub state: State,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// Static members: group.instance.id → member id.
    pub instances: BTreeMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, and when they lapse.
    pending: BTreeMap<String, u64>,
    /// PreparingRebalance: when to complete without those not rejoined. CompletingRebalance:
    /// when to give up on members that never sent SyncGroup.
    deadline: u64,
    /// The first rebalance of an empty group waits for more members (KIP-134).
    initial_delay: Option<InitialDelay>,
    /// The leader's assignment while it is being stored.
    pub(super) storing: Option<BTreeMap<String, Bytes>>,
    /// When the group entered its state (ms).
    pub state_since: u64,
    pub offsets: BTreeMap<(String, i32), OffsetValue>,
    /// Member ids made here: unique per (offsets partition, leader epoch, counter).
    id_prefix: String,
}

impl Group {
    pub fn new(id: &str, now: u64, id_prefix: String) -> Group {
        Group {
            id: id.to_string(),
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            instances: BTreeMap::new(),
            pending: BTreeMap::new(),
            deadline: 0,
            initial_delay: None,
            storing: None,
            state_since: now,
            offsets: BTreeMap::new(),
            id_prefix,
        }
    }

    /// Members plus ids handed out and not yet used (what group.max.size counts).
    pub fn size(&self) -> usize {
        self.members.len() + self.pending.len()
    }

    fn transition(&mut self, state: State, now: u64) {
        self.state = state;
        self.state_since = now;
    }

    fn new_member_id(&self, client_id: &str, counter: u64) -> String {
        format!("{client_id}-{}-{counter}", self.id_prefix)
    }

    /// The protocols every member supports (all of the request's, for a group with none).
    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type) && protocols.iter().any(|(name, _)| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == name)))
    }

    /// JoinGroup. `counter` makes a new member's id unique; `ticket` is the one a waiting
    /// answer will carry.
    pub fn join(&mut self, req: JoinRequest, cfg: &GroupConfig, counter: u64, ticket: Ticket, now: u64, out: &mut Out) -> Reply<JoinAnswer> {
        if self.state == State::Dead {
            return Reply::Now(JoinAnswer::error(Code::CoordinatorNotAvailable, &req.member_id));
        }
        if !self.supports(&req.protocol_type, &req.protocols) {
            return Reply::Now(JoinAnswer::error(Code::InconsistentGroupProtocol, &req.member_id));
        }
        if req.member_id.is_empty() {
            return self.join_new(req, cfg, counter, ticket, now, out);
        }
        if self.pending.remove(&req.member_id).is_some() {
            let id = req.member_id.clone();
            self.add_member(id, req, ticket, now, cfg, out);
            return Reply::Later;
        }
        if let Some(instance) = &req.instance_id {
            if self.instances.get(instance).is_some_and(|m| *m != req.member_id) {
                return Reply::Now(JoinAnswer::error(Code::FencedInstanceId, &req.member_id));
            }
        }
        let Some(member) = self.members.get(&req.member_id) else {
            return Reply::Now(JoinAnswer::error(Code::UnknownMemberId, &req.member_id));
        };
        let unchanged = member.protocols == req.protocols;
        let is_leader = self.leader.as_deref() == Some(req.member_id.as_str());
        match self.state {
            State::PreparingRebalance => {}
            // A retry of the join whose answer was lost: the same answer again.
            State::CompletingRebalance if unchanged => return Reply::Now(self.join_answer(&req.member_id)),
            State::Stable if unchanged && !is_leader => {
                let mut a = self.join_answer(&req.member_id);
                a.members.clear();
                return Reply::Now(a);
            }
            State::CompletingRebalance | State::Stable => {}
            State::Empty | State::Dead => return Reply::Now(JoinAnswer::error(Code::UnknownMemberId, &req.member_id)),
        }
        self.update_member(&req, ticket, now, out);
        self.prepare_rebalance(now, out);
        self.maybe_complete_join(now, out);
        Reply::Later
    }

    fn join_new(&mut self, req: JoinRequest, cfg: &GroupConfig, counter: u64, ticket: Ticket, now: u64, out: &mut Out) -> Reply<JoinAnswer> {
        if let Some(old) = req.instance_id.as_ref().and_then(|i| self.instances.get(i)).cloned() {
            return self.replace_static(&old, req, counter, ticket, now, out);
        }
        if self.size() >= cfg.max_size {
            return Reply::Now(JoinAnswer::error(Code::GroupMaxSizeReached, ""));
        }
        let id = self.new_member_id(&req.client_id, counter);
        if req.require_known_member_id && req.instance_id.is_none() {
            self.pending.insert(id.clone(), now + req.session_timeout_ms);
            return Reply::Now(JoinAnswer::error(Code::MemberIdRequired, &id));
        }
        self.add_member(id, req, ticket, now, cfg, out);
        Reply::Later
    }

    fn add_member(&mut self, id: String, req: JoinRequest, ticket: Ticket, now: u64, cfg: &GroupConfig, out: &mut Out) {
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if let Some(instance) = &req.instance_id {
            self.instances.insert(instance.clone(), id.clone());
        }
        let member = Member {
            id: id.clone(),
            instance_id: req.instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            session_timeout_ms: req.session_timeout_ms,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            protocols: req.protocols,
            assignment: Bytes::new(),
            expires_at: now + req.session_timeout_ms,
            join: Some(ticket),
            sync: None,
        };
        self.members.insert(id, member);
        // Kafka extends the delay only for a group's very first rebalance (generation 0); an
        // Empty group coming back later waits one delay.
        if let Some(d) = self.initial_delay.as_mut().filter(|_| self.generation == 0) {
            d.joined = true;
        }
        if self.state == State::Empty {
            // KIP-134: the first rebalance waits a little for the rest of the group.
            let wait = cfg.initial_rebalance_delay_ms.min(req.rebalance_timeout_ms);
            self.transition(State::PreparingRebalance, now);
            self.deadline = now + if wait > 0 { wait } else { req.rebalance_timeout_ms };
            self.initial_delay = (wait > 0).then_some(InitialDelay { delay: wait, until: now + req.rebalance_timeout_ms, joined: false });
        } else {
            self.prepare_rebalance(now, out);
        }
        self.maybe_complete_join(now, out);
    }

    fn update_member(&mut self, req: &JoinRequest, ticket: Ticket, now: u64, out: &mut Out) {
        let Some(m) = self.members.get_mut(&req.member_id) else { return };
        if let Some(old) = m.join.replace(ticket) {
            out.answers.push((old, Answer::Join(JoinAnswer::error(Code::RebalanceInProgress, &req.member_id))));
        }
        m.protocols = req.protocols.clone();
        m.session_timeout_ms = req.session_timeout_ms;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.client_id = req.client_id.clone();
        m.client_host = req.client_host.clone();
        m.expires_at = now + m.session_timeout_ms;
    }

    /// KIP-345: a static member rejoining with no member id takes over its instance's place.
    /// The old id is fenced; its waiting requests get FENCED_INSTANCE_ID. While Stable with the
    /// same metadata, it gets the current generation back and no rebalance happens.
    fn replace_static(&mut self, old: &str, req: JoinRequest, counter: u64, ticket: Ticket, now: u64, out: &mut Out) -> Reply<JoinAnswer> {
        let Some(mut member) = self.members.remove(old) else {
            return Reply::Now(JoinAnswer::error(Code::UnknownMemberId, ""));
        };
        if let Some(t) = member.join.take() {
            out.answers.push((t, Answer::Join(JoinAnswer::error(Code::FencedInstanceId, old))));
        }
        if let Some(t) = member.sync.take() {
            out.answers.push((t, Answer::Sync(Err(Code::FencedInstanceId))));
        }
        let id = self.new_member_id(&req.client_id, counter);
        let unchanged = member.protocols == req.protocols;
        member.id = id.clone();
        if let Some(instance) = &req.instance_id {
            self.instances.insert(instance.clone(), id.clone());
        }
        if self.leader.as_deref() == Some(old) {
            self.leader = Some(id.clone());
        }
        self.members.insert(id.clone(), member);
        let mut update = req;
        update.member_id = id.clone();
        if self.state == State::Stable && unchanged {
            self.update_member(&update, ticket, now, out);
            if let Some(m) = self.members.get_mut(&id) {
                m.join = None;
            }
            out.store = Some(Store::Background);
            let mut a = self.join_answer(&id);
            a.skip_assignment = self.leader.as_deref() == Some(id.as_str());
            return Reply::Now(a);
        }
        self.update_member(&update, ticket, now, out);
        self.prepare_rebalance(now, out);
        self.maybe_complete_join(now, out);
        Reply::Later
    }

    /// A consumer group's classic members became this group again (KIP-848's downgrade): the
    /// protocol is chosen as a rebalance would, and a rebalance starts at once.
    pub(super) fn rebalance_downgraded(&mut self, now: u64, out: &mut Out) {
        self.protocol = self.select_protocol();
        self.prepare_rebalance(now, out);
    }

    /// Starts a rebalance: members must rejoin within the longest rebalance timeout.
    fn prepare_rebalance(&mut self, now: u64, out: &mut Out) {
        match self.state {
            State::PreparingRebalance | State::Dead => return,
            State::CompletingRebalance => self.fail_syncs(Code::RebalanceInProgress, out),
            State::Empty | State::Stable => {}
        }
        self.storing = None;
        self.deadline = now + self.members.values().map(|m| m.rebalance_timeout_ms).max().unwrap_or(0);
        self.transition(State::PreparingRebalance, now);
    }

    fn fail_syncs(&mut self, code: Code, out: &mut Out) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
            if let Some(t) = m.sync.take() {
                out.answers.push((t, Answer::Sync(Err(code))));
            }
        }
    }

    fn maybe_complete_join(&mut self, now: u64, out: &mut Out) {
        let all_joined = self.members.values().all(|m| m.join.is_some()) && self.pending.is_empty();
        if self.state == State::PreparingRebalance && self.initial_delay.is_none() && all_joined {
            self.complete_join(now, out);
        }
    }

    /// The rebalance's end: members that did not rejoin are dropped, the generation moves on,
    /// a protocol is chosen, and every waiting join is answered (the leader with the members).
    fn complete_join(&mut self, now: u64, out: &mut Out) {
        self.initial_delay = None;
        let gone: Vec<String> = self.members.values().filter(|m| m.join.is_none()).map(|m| m.id.clone()).collect();
        for id in gone {
            self.forget_member(&id, out);
        }
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol = None;
            self.leader = None;
            self.transition(State::Empty, now);
            out.store = Some(Store::Background);
            return;
        }
        self.protocol = self.select_protocol();
        if !self.leader.as_ref().is_some_and(|l| self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        self.transition(State::CompletingRebalance, now);
        self.deadline = now + self.members.values().map(|m| m.rebalance_timeout_ms).max().unwrap_or(0);
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let answer = self.join_answer(&id);
            let m = self.members.get_mut(&id).expect("listed above");
            m.expires_at = now + m.session_timeout_ms;
            if let Some(t) = m.join.take() {
                out.answers.push((t, Answer::Join(answer)));
            }
        }
    }

    /// The answer for `id` in the current generation.
    fn join_answer(&self, id: &str) -> JoinAnswer {
        let leader = self.leader.clone().unwrap_or_default();
        let protocol = self.protocol.clone().unwrap_or_default();
        let members = match leader == id {
            true => self.members.values().map(|m| (m.id.clone(), m.instance_id.clone(), m.protocols.iter().find(|(n, _)| *n == protocol).map(|(_, b)| b.clone()).unwrap_or_default())).collect(),
            false => Vec::new(),
        };
        JoinAnswer { error: None, generation: self.generation, protocol_type: self.protocol_type.clone(), protocol: self.protocol.clone(), leader, member_id: id.to_string(), members, skip_assignment: false }
    }

    /// Kafka's vote: among the protocols every member supports, each member votes for its
    /// first; the most votes wins, ties to the leader's (or first member's) preference.
    fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&String> = first.protocols.iter().map(|(n, _)| n).filter(|n| self.members.values().all(|m| m.protocols.iter().any(|(x, _)| x == *n))).collect();
        let votes = |name: &String| self.members.values().filter(|m| m.protocols.iter().map(|(n, _)| n).find(|n| candidates.contains(n)) == Some(name)).count();
        let mut best: Option<(&String, usize)> = None;
        for c in &candidates {
            let v = votes(c);
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((c, v));
            }
        }
        best.map(|(n, _)| n.clone())
    }

    /// Removes a member; its waiting requests are answered UNKNOWN_MEMBER_ID.
    fn forget_member(&mut self, id: &str, out: &mut Out) {
        let Some(m) = self.members.remove(id) else { return };
        if let Some(i) = &m.instance_id {
            if self.instances.get(i).map(String::as_str) == Some(id) {
                self.instances.remove(i);
            }
        }
        if let Some(t) = m.join {
            out.answers.push((t, Answer::Join(JoinAnswer::error(Code::UnknownMemberId, id))));
        }
        if let Some(t) = m.sync {
            out.answers.push((t, Answer::Sync(Err(Code::UnknownMemberId))));
        }
    }

    /// A member leaves (LeaveGroup, session expiry): the others rebalance.
    fn remove_member(&mut self, id: &str, now: u64, out: &mut Out) {
        self.forget_member(id, out);
        match self.state {
            State::Stable | State::CompletingRebalance => {
                self.prepare_rebalance(now, out);
                // The last member gone: nobody is left to wait for, so Empty at once.
                self.maybe_complete_join(now, out);
            }
            State::PreparingRebalance => self.maybe_complete_join(now, out),
            State::Empty | State::Dead => {}
        }
    }

    /// Checks a member's identity for Heartbeat, SyncGroup and OffsetCommit.
    fn check_member(&self, id: &str, instance: Option<&str>, generation: i32) -> Result<(), Code> {
        if self.state == State::Dead {
            return Err(Code::CoordinatorNotAvailable);
        }
        if let Some(i) = instance {
            if self.instances.get(i).is_some_and(|m| m != id) {
                return Err(Code::FencedInstanceId);
            }
        }
        if !self.members.contains_key(id) {
            return Err(Code::UnknownMemberId);
        }
        if generation != self.generation {
            return Err(Code::IllegalGeneration);
        }
        Ok(())
    }

    /// SyncGroup. The leader's `assignments` take effect once stored ([`Group::stored`]).
    #[allow(clippy::too_many_arguments)]
    pub fn sync(&mut self, id: &str, instance: Option<&str>, generation: i32, protocol: Option<(&str, &str)>, assignments: Vec<(String, Bytes)>, ticket: Ticket, now: u64, out: &mut Out) -> Reply<Result<Bytes, Code>> {
        if let Err(e) = self.check_member(id, instance, generation) {
            return Reply::Now(Err(e));
        }
        if let Some((ty, name)) = protocol {
            if self.protocol_type.as_deref() != Some(ty) || self.protocol.as_deref() != Some(name) {
                return Reply::Now(Err(Code::InconsistentGroupProtocol));
            }
        }
        match self.state {
            State::Empty | State::Dead => Reply::Now(Err(Code::UnknownMemberId)),
            State::PreparingRebalance => Reply::Now(Err(Code::RebalanceInProgress)),
            State::Stable => Reply::Now(Ok(self.members[id].assignment.clone())),
            State::CompletingRebalance => {
                let m = self.members.get_mut(id).expect("checked");
                m.expires_at = now + m.session_timeout_ms;
                if let Some(old) = m.sync.replace(ticket) {
                    out.answers.push((old, Answer::Sync(Err(Code::RebalanceInProgress))));
                }
                if self.leader.as_deref() == Some(id) && self.storing.is_none() {
                    let mut plan: BTreeMap<String, Bytes> = self.members.keys().map(|m| (m.clone(), Bytes::new())).collect();
                    for (member, a) in assignments {
                        if let Some(slot) = plan.get_mut(&member) {
                            *slot = a;
                        }
                    }
                    self.storing = Some(plan);
                    out.store = Some(Store::Assignment(self.generation));
                }
                Reply::Later
            }
        }
    }

    /// The write of the leader's assignment for `generation` finished: the group becomes
    /// Stable and every waiting SyncGroup gets its assignment, or on failure they get the
    /// error and the group rebalances.
    pub fn stored(&mut self, generation: i32, result: Result<(), Code>, now: u64, out: &mut Out) {
        if self.state != State::CompletingRebalance || self.generation != generation {
            return;
        }
        let Some(plan) = self.storing.take() else { return };
        if let Err(code) = result {
            self.fail_syncs(code, out);
            self.prepare_rebalance(now, out);
            return;
        }
        for (id, m) in self.members.iter_mut() {
            m.assignment = plan.get(id).cloned().unwrap_or_default();
            m.expires_at = now + m.session_timeout_ms;
            if let Some(t) = m.sync.take() {
                out.answers.push((t, Answer::Sync(Ok(m.assignment.clone()))));
            }
        }
        self.transition(State::Stable, now);
    }

    /// Heartbeat: keeps the member alive; REBALANCE_IN_PROGRESS tells it to rejoin.
    pub fn heartbeat(&mut self, id: &str, instance: Option<&str>, generation: i32, now: u64) -> Result<(), Code> {
        if self.state == State::Empty {
            return Err(Code::UnknownMemberId);
        }
        self.check_member(id, instance, generation)?;
        let m = self.members.get_mut(id).expect("checked");
        m.expires_at = now + m.session_timeout_ms;
        match self.state {
            State::PreparingRebalance => Err(Code::RebalanceInProgress),
            _ => Ok(()),
        }
    }

    /// LeaveGroup for one member (by id, or by instance id with an empty member id).
    pub fn leave(&mut self, id: &str, instance: Option<&str>, now: u64, out: &mut Out) -> Result<(), Code> {
        if self.state == State::Dead {
            return Err(Code::CoordinatorNotAvailable);
        }
        let target = match instance {
            Some(i) => match self.instances.get(i) {
                Some(m) if id.is_empty() || m == id => m.clone(),
                Some(_) => return Err(Code::FencedInstanceId),
                None => return Err(Code::UnknownMemberId),
            },
            None => id.to_string(),
        };
        if self.pending.remove(&target).is_some() {
            self.maybe_complete_join(now, out);
            return Ok(());
        }
        if !self.members.contains_key(&target) {
            return Err(Code::UnknownMemberId);
        }
        self.remove_member(&target, now, out);
        Ok(())
    }

    /// Whether a commit by this member in this generation may be written (Kafka's checks:
    /// a standalone commit needs an Empty group; none during CompletingRebalance).
    pub fn check_commit(&mut self, id: &str, instance: Option<&str>, generation: i32, now: u64) -> Result<(), Code> {
        if self.state == State::Dead {
            return Err(Code::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == State::Empty {
            return Ok(());
        }
        if self.state == State::CompletingRebalance {
            return Err(Code::RebalanceInProgress);
        }
        self.check_member(id, instance, generation)?;
        let m = self.members.get_mut(id).expect("checked");
        m.expires_at = now + m.session_timeout_ms;
        Ok(())
    }

    /// Time passes: expired members leave, lapsed member ids are dropped, a rebalance whose
    /// deadline passed completes without those that did not rejoin.
    pub fn tick(&mut self, now: u64, out: &mut Out) {
        let expired: Vec<String> = self.members.values().filter(|m| m.join.is_none() && m.sync.is_none() && m.expires_at <= now).map(|m| m.id.clone()).collect();
        for id in expired {
            self.remove_member(&id, now, out);
        }
        let lapsed = self.pending.len();
        self.pending.retain(|_, until| *until > now);
        if self.pending.len() != lapsed {
            self.maybe_complete_join(now, out);
        }
        if self.deadline > now {
            return;
        }
        match self.state {
            State::PreparingRebalance => match self.initial_delay {
                // KIP-134: a member joined during the delay, so wait another delay (capped).
                Some(d) if d.joined && now < d.until => {
                    self.deadline = (now + d.delay).min(d.until);
                    self.initial_delay = Some(InitialDelay { joined: false, ..d });
                }
                _ => self.complete_join(now, out),
            },
            State::CompletingRebalance if self.storing.is_none() => {
                // Members that never sent SyncGroup (a leader that died mid-assignment) go.
                let silent: Vec<String> = self.members.values().filter(|m| m.sync.is_none()).map(|m| m.id.clone()).collect();
                for id in silent {
                    self.remove_member(&id, now, out);
                }
            }
            _ => {}
        }
    }

    /// The next time [`Group::tick`] has work.
    pub fn next_deadline(&self) -> Option<u64> {
        let members = self.members.values().filter(|m| m.join.is_none() && m.sync.is_none()).map(|m| m.expires_at);
        // While the leader's assignment is being stored the group waits for the write (it
        // settles or fails by itself), and `tick` leaves it alone: no deadline then.
        let rebalance = match self.state {
            State::PreparingRebalance => Some(self.deadline),
            State::CompletingRebalance if self.storing.is_none() => Some(self.deadline),
            _ => None,
        };
        members.chain(self.pending.values().copied()).chain(rebalance).min()
    }

    /// Every waiting request answered with `code` (the coordinator moved or the group went).
    pub fn abandon(&mut self, code: Code, out: &mut Out) {
        for m in self.members.values_mut() {
            if let Some(t) = m.join.take() {
                out.answers.push((t, Answer::Join(JoinAnswer::error(code, &m.id))));
            }
            if let Some(t) = m.sync.take() {
                out.answers.push((t, Answer::Sync(Err(code))));
            }
        }
    }

    /// Marks the group deleted.
    pub fn kill(&mut self, now: u64) {
        self.transition(State::Dead, now);
    }

    /// A deletion that did not happen: the group is Empty again.
    pub fn revive(&mut self, now: u64) {
        if self.state == State::Dead {
            self.transition(State::Empty, now);
        }
    }
}
