//! One KIP-848 consumer group as its coordinator decides it: members join, heartbeat and leave
//! by ConsumerGroupHeartbeat; the group epoch moves whenever its membership or subscriptions or
//! the subscribed topics' partition counts change; a new target assignment is then computed at
//! that epoch by the group's server-side assignor (`assignors`), and each member reconciles
//! toward its part of it heartbeat by heartbeat (`reconcile`), so no partition is ever given to
//! two members. A plain struct with an explicit `now`; no IO, no clock, no randomness (member
//! ids are the client's, KIP-848 v1, or the coordinator's, made unique across coordinators;
//! one made here from the group's own counter only when the caller gives none).
//!
//! Rules, as Kafka's:
//! * a heartbeat at member epoch 0 joins; -1 leaves; -2 is a static member's temporary leave:
//!   it stays in the group, holding its partitions, until its session ends, and a member
//!   joining with its `group.instance.id` meanwhile takes its place, epoch and partitions
//!   without the group epoch moving (KIP-345's point: a restart is no rebalance); a second live
//!   member with one instance id is UNRELEASED_INSTANCE_ID;
//! * any other epoch must pass [`reconcile::check_epoch`], else FENCED_MEMBER_EPOCH; an unknown
//!   member id is UNKNOWN_MEMBER_ID;
//! * a member not heard from for the session timeout is removed (the group epoch moves), and
//!   so is one told to revoke partitions that still holds them a rebalance timeout later;
//! * a subscription is topic names, a regular expression (RE2 syntax, matched against whole
//!   topic names, internal `__` topics never matched), or both; the expression is resolved
//!   against the topics that exist at every heartbeat, so a topic created later joins the
//!   subscription with the next heartbeat;
//! * what a member's expression matches is cut to the topics its own caller may DESCRIBE
//!   (Kafka 4's KAFKA-18813), as the heartbeat says them ([`Heartbeat::regex_allowed`]: the
//!   node authorizes, this only filters) and as of that member's own last heartbeat: a topic it
//!   is let see later joins at its next heartbeat, one it may no longer see leaves then; a
//!   group loaded from the offsets topic holds each such member to the topics of its target and
//!   assignment until it heartbeats (fail closed: nobody is given a topic it may not see);
//! * the group's assignor is the one most of its members ask for (ties and none: the first of
//!   `group.consumer.assignors`);
//! * a member may speak the classic protocol instead (KIP-848's online migration): its
//!   subscription counts the same, and `consumer_classic` decides its JoinGroup, SyncGroup,
//!   Heartbeat and LeaveGroup.

use super::assignors::{GroupSpec, MemberSpec, ServerAssignor};
use super::consumer_records::ClassicMetadata;
use super::reconcile::{self, MemberAssignment, MemberState};
use crate::client::assignor::{GroupAssignment, TopicPartitions};
use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// One member as the coordinator keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub instance_id: Option<String>,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Topics subscribed by name.
    pub topics: BTreeSet<String>,
    /// A regular expression whose matching topics it also subscribes to.
    pub regex: Option<String>,
    /// What `regex` matched that its caller may DESCRIBE, as of its own last heartbeat: the
    /// expression subscribes to these only. None: every match (no authorizer, or a caller
    /// every check lets through). A loaded member's is its target's and assignment's topics
    /// until its next heartbeat says ([`ConsumerGroup::loaded`]).
    pub regex_allowed: Option<BTreeSet<String>>,
    /// What its subscription resolved to at the last heartbeat.
    pub subscribed: BTreeSet<String>,
    /// The assignor it asks for (`group.remote.assignor`).
    pub assignor: Option<ServerAssignor>,
    pub rebalance_timeout_ms: u64,
    pub assignment: MemberAssignment,
    /// What it said it owns at its last heartbeat (None until it says).
    pub owned: Option<TopicPartitions>,
    /// When its session ends unless it heartbeats again.
    pub expires_at: u64,
    /// While it has partitions to revoke: when it is removed unless it has let them go.
    pub revoke_by: Option<u64>,
    /// A static member away on a temporary leave (-2), until it returns or its session ends.
    pub away: bool,
    /// A member using the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside this
    /// group, KIP-848's online migration (`consumer_classic`); None for a consumer-protocol one.
    pub classic: Option<ClassicMetadata>,
}

impl Member {
    /// A member that just joined (or was just loaded): nothing known of it yet, nothing given.
    pub fn new(expires_at: u64) -> Member {
        Member {
            instance_id: None,
            rack: None,
            client_id: String::new(),
            client_host: String::new(),
            topics: BTreeSet::new(),
            regex: None,
            regex_allowed: None,
            subscribed: BTreeSet::new(),
            assignor: None,
            rebalance_timeout_ms: 0,
            assignment: MemberAssignment::joined(),
            owned: None,
            expires_at,
            revoke_by: None,
            away: false,
            classic: None,
        }
    }

    /// Its session timeout: a classic member's own (JoinGroup's), else the group's.
    pub fn session_timeout_ms(&self, group_ms: u64) -> u64 {
        self.classic.as_ref().map_or(group_ms, |c| c.session_timeout_ms.max(0) as u64)
    }
}

/// A heartbeat's fields the group decides on. `None` fields are unchanged since the member's
/// last heartbeat (Kafka's null).
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    /// Empty when the member joins without an id of its own (v0): one is given.
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: Option<u64>,
    /// The topics it subscribes to by name.
    pub topics: Option<BTreeSet<String>>,
    /// Its regular expression (an empty one clears it).
    pub regex: Option<String>,
    /// What the member's regular expression (this heartbeat's, else the one it has) matches
    /// that its caller may DESCRIBE, as the node's authorizer answered for this request
    /// ([`regex_matches`], then one check per match): the expression subscribes
    /// to these only. None: every match (no authorizer, or a caller every check lets through).
    pub regex_allowed: Option<BTreeSet<String>>,
    pub assignor: Option<String>,
    /// What it owns.
    pub owned: Option<TopicPartitions>,
}

impl Heartbeat {
    /// Kafka's checks of a heartbeat's fields, before any group is looked at: the code and why.
    pub fn validate(&self, version: i16) -> Result<(), (Code, &'static str)> {
        let invalid = |why| Err((Code::InvalidRequest, why));
        if self.member_id.is_empty() && (self.member_epoch != 0 || version >= 1) {
            return invalid("MemberId can't be empty.");
        }
        if self.member_epoch == 0 {
            if self.rebalance_timeout_ms.is_none() {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if self.owned.as_ref().is_none_or(|o| !o.is_empty()) {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            if self.topics.is_none() && self.regex.is_none() {
                return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
            }
        }
        if self.member_epoch < -2 {
            return invalid("MemberEpoch is invalid.");
        }
        if self.member_epoch == static_leave_epoch && self.instance_id.is_none() {
            return invalid("InstanceId can't be null when leaving temporarily (epoch -2).");
        }
        if self.assignor.as_deref().is_some_and(|a| ServerAssignor::by_name(a).is_none()) {
            return Err((Code::UnsupportedAssignor, "The assignor is not one of group.consumer.assignors."));
        }
        if self.regex.as_deref().is_some_and(|r| !r.is_empty() && compile(r).is_none()) {
            return Err((Code::InvalidRegularExpression, "SubscribedTopicRegex is not a valid RE2 expression."));
        }
        Ok(())
    }

    /// Whether it says everything (Kafka's full request): it is answered with its whole
    /// assignment whether or not that changed.
    fn full(&self) -> bool {
        self.rebalance_timeout_ms.is_some() && (self.topics.is_some() || self.regex.is_some()) && self.owned.is_some()
    }
}

/// A regular expression as subscriptions match it: against the whole topic name.
fn compile(regex: &str) -> Option<regex::Regex> {
    regex::Regex::new(&format!("^(?:{regex})$")).ok()
}

/// `regex` compiled, from the group's cache (compiled and kept there the first time).
fn cached(regexes: &mut BTreeMap<String, regex::Regex>, regex: &str) -> Option<regex::Regex> {
    match regexes.get(regex) {
        Some(x) => Some(x.clone()),
        None => compile(regex).inspect(|x| drop(regexes.insert(regex.to_string(), x.clone()))),
    }
}

/// The topics of `topics` that `regex` matches (internal `__` topics never), as a
/// subscription resolves it, compiled from `group`'s cache when it has it: what the node
/// authorizes for [`Heartbeat::regex_allowed`].
pub fn regex_matches<'a>(group: Option<&ConsumerGroup>, regex: &str, topics: impl Iterator<Item = &'a String>) -> BTreeSet<String> {
    let matcher = group.and_then(|g| g.regexes.get(regex).cloned()).or_else(|| compile(regex));
    topics.filter(|t| !t.starts_with("__") && matcher.as_ref().is_some_and(|r| r.is_match(t))).cloned().collect()
}

/// The answer to a heartbeat that was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub member_id: String,
    pub member_epoch: i32,
    /// Its partitions, when they changed since it last heard (None: as before).
    pub assignment: Option<TopicPartitions>,
}

/// Leaving epochs of a heartbeat.
const leave_epoch: i32 = -1;
const static_leave_epoch: i32 = -2;

/// A group's state as ConsumerGroupDescribe and ListGroups name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    Reconciling,
    Stable,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::Reconciling => "Reconciling",
            GroupState::Stable => "Stable",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    pub id: String,
    /// Moves with every change of membership, subscriptions or partition counts.
    pub epoch: i32,
    /// The epoch `target` was computed at.
    pub target_epoch: i32,
    /// The assignor the target was computed with.
    pub assignor: ServerAssignor,
    pub members: BTreeMap<String, Member>,
    pub target: GroupAssignment,
    /// Partition counts of the subscribed topics, as the target was computed over them.
    pub(super) partitions: BTreeMap<String, i32>,
    /// Loaded from the offsets topic: the hash of the partition counts the stored epoch was
    /// computed over, checked at the first heartbeat (`consumer_stored`).
    pub(super) loaded_hash: Option<i64>,
    /// `group.consumer.assignors`: the first is the default.
    assignors: Vec<ServerAssignor>,
    pub(super) session_timeout_ms: u64,
    ids_given: u64,
    /// Compiled regular expressions of members' subscriptions.
    regexes: BTreeMap<String, regex::Regex>,
    /// Kafka's rule: a partition goes to its new member only once its owner let it go
    /// (`rules::Rules::waits_for_revocation`; a planted bug turns it off).
    pub(super) waits_for_revocation: bool,
}

impl ConsumerGroup {
    pub fn new(id: &str, assignors: &[ServerAssignor], session_timeout_ms: u64) -> ConsumerGroup {
        let assignors = if assignors.is_empty() { ServerAssignor::ALL.to_vec() } else { assignors.to_vec() };
        ConsumerGroup { id: id.to_string(), epoch: 0, target_epoch: 0, assignor: assignors[0], members: BTreeMap::new(), target: GroupAssignment::new(), partitions: BTreeMap::new(), loaded_hash: None, assignors, session_timeout_ms, ids_given: 0, regexes: BTreeMap::new(), waits_for_revocation: true }
    }

    pub fn state(&self) -> GroupState {
        let settled = |m: &Member| m.assignment.epoch == self.target_epoch && m.assignment.state == MemberState::Stable;
        match (self.members.is_empty(), self.members.values().all(settled)) {
            (true, _) => GroupState::Empty,
            (false, true) => GroupState::Stable,
            (false, false) => GroupState::Reconciling,
        }
    }

    /// Decides one heartbeat, already [`Heartbeat::validate`]d. `topics` are the partition
    /// counts of every topic that exists.
    pub fn heartbeat(&mut self, hb: Heartbeat, topics: &BTreeMap<String, i32>, now: u64) -> Result<Answer, Code> {
        self.expire(now);
        let full = hb.full();
        let member_id = match hb.member_epoch {
            0 => self.join(&hb, now)?,
            static_leave_epoch if self.members.get(&hb.member_id).is_some_and(|m| m.instance_id.is_some()) => {
                self.members.get_mut(&hb.member_id).expect("looked up").away = true;
                return Ok(Answer { member_id: hb.member_id, member_epoch: hb.member_epoch, assignment: None });
            }
            leave_epoch | static_leave_epoch => {
                self.members.remove(&hb.member_id).ok_or(Code::UnknownMemberId)?;
                self.target.remove(&hb.member_id);
                self.refresh(topics);
                self.bump();
                return Ok(Answer { member_id: hb.member_id, member_epoch: hb.member_epoch, assignment: None });
            }
            epoch => {
                let member = self.members.get_mut(&hb.member_id).ok_or(Code::UnknownMemberId)?;
                // Away on a temporary leave, its epoch is -2 to the group: it must rejoin at 0.
                if member.away {
                    return Err(Code::FencedMemberEpoch);
                }
                reconcile::check_epoch(&member.assignment, epoch, hb.owned.as_ref().or(member.owned.as_ref()))?;
                member.expires_at = now + self.session_timeout_ms;
                update(member, &hb);
                hb.member_id.clone()
            }
        };
        // Stored as the node matched and authorized it: no second match over every topic.
        if let Some(m) = self.members.get_mut(&member_id) {
            m.regex_allowed = hb.regex_allowed;
        }
        if self.refresh(topics) {
            self.bump();
        }
        Ok(self.reconcile(&member_id, full, now))
    }

    /// A member at epoch 0: new, or a static member back in the place it left. Returns its
    /// member id (one given here when it brought none).
    fn join(&mut self, hb: &Heartbeat, now: u64) -> Result<String, Code> {
        // A classic member's place is taken at once (it never leaves temporarily), as in Kafka.
        let before = hb.instance_id.as_ref().and_then(|instance| self.members.iter().find(|(id, m)| m.instance_id.as_ref() == Some(instance) && **id != hb.member_id).map(|(id, m)| (id.clone(), m.away || m.classic.is_some())));
        if matches!(before, Some((_, false))) {
            return Err(Code::UnreleasedInstanceId);
        }
        let member_id = match hb.member_id.is_empty() {
            true => {
                self.ids_given += 1;
                format!("{}-member-{}", self.id, self.ids_given)
            }
            false => hb.member_id.clone(),
        };
        let mut member = Member::new(now + self.session_timeout_ms);
        let mut target = TopicPartitions::new();
        // A static member back: it takes the place (epoch, partitions, target) it left.
        if let Some((old, _)) = before {
            let left = self.members.remove(&old).expect("found");
            target = self.target.remove(&old).unwrap_or_default();
            member = Member { away: false, ..left };
            member.expires_at = now + self.session_timeout_ms;
        }
        update(&mut member, hb);
        self.members.insert(member_id.clone(), member);
        self.target.insert(member_id.clone(), target);
        Ok(member_id)
    }

    /// Removes the members whose session ended, or whose rebalance timeout passed with
    /// partitions still to revoke; the group epoch moves if any went.
    pub fn expire(&mut self, now: u64) {
        let gone: Vec<String> = self.members.iter().filter(|(_, m)| m.expires_at <= now || m.revoke_by.is_some_and(|t| t <= now)).map(|(id, _)| id.clone()).collect();
        for id in &gone {
            self.members.remove(id);
            self.target.remove(id);
        }
        if !gone.is_empty() {
            self.bump();
        }
    }

    /// The group was loaded from the offsets topic: its subscriptions resolve against the
    /// topics now; the epoch moves only if the subscribed partitions differ from those the
    /// stored epoch was computed over (its metadata hash). Every member gets a fresh session,
    /// and one revoking a fresh rebalance timeout (Kafka's choice at load). Whether it moved.
    pub fn loaded(&mut self, topics: &BTreeMap<String, i32>, now: u64) -> bool {
        // Who may DESCRIBE what is not stored: a member's regex keeps to the topics it was
        // given (target and assignment) until its first heartbeat says, so a member whose
        // caller may see few topics is not handed every match meanwhile.
        for (id, m) in self.members.iter_mut().filter(|(_, m)| m.regex.is_some()) {
            let target = self.target.get(id).into_iter().flat_map(|t| t.keys());
            m.regex_allowed = Some(target.chain(m.assignment.assigned.keys()).cloned().collect());
        }
        self.refresh(topics);
        let stored = self.loaded_hash.take();
        for m in self.members.values_mut() {
            m.expires_at = now + m.session_timeout_ms(self.session_timeout_ms);
            // A classic member's revocation has no deadline of its own (it rejoins to let go).
            m.revoke_by = (m.assignment.state == MemberState::UnrevokedPartitions && m.classic.is_none()).then_some(now + m.rebalance_timeout_ms);
        }
        let moved = stored != Some(super::consumer_stored::metadata_hash(&self.partitions));
        if moved {
            self.bump();
        }
        moved
    }

    /// When [`ConsumerGroup::expire`] next removes a member, if no heartbeat comes first.
    pub fn next_deadline(&self) -> Option<u64> {
        self.members.values().flat_map(|m| [Some(m.expires_at), m.revoke_by]).flatten().min()
    }

    /// The regular expression a heartbeat of `member_id` subscribes with: `regex`, the
    /// heartbeat's (empty: none), else the one the member has.
    pub fn regex_of<'a>(&'a self, member_id: &str, regex: Option<&'a str>) -> Option<&'a str> {
        regex.or_else(|| self.members.get(member_id)?.regex.as_deref()).filter(|r| !r.is_empty())
    }

    /// Resolves every member's subscription against the topics that exist, and the partition
    /// counts of all that are subscribed; whether either changed since the target was computed.
    pub(super) fn refresh(&mut self, topics: &BTreeMap<String, i32>) -> bool {
        let mut changed = false;
        let regexes = &mut self.regexes;
        regexes.retain(|r, _| self.members.values().any(|m| m.regex.as_deref() == Some(r.as_str())));
        for m in self.members.values_mut() {
            let matcher = m.regex.as_deref().and_then(|r| cached(regexes, r));
            let allowed = |t: &str| m.regex_allowed.as_ref().is_none_or(|a| a.contains(t));
            let matched = topics.keys().filter(|t| !t.starts_with("__") && allowed(t.as_str()) && matcher.as_ref().is_some_and(|r| r.is_match(t)));
            let subscribed: BTreeSet<String> = m.topics.iter().cloned().chain(matched.cloned()).collect();
            changed |= subscribed != m.subscribed;
            m.subscribed = subscribed;
        }
        let partitions: BTreeMap<String, i32> = self.members.values().flat_map(|m| &m.subscribed).filter_map(|t| Some((t.clone(), *topics.get(t)?))).collect();
        changed |= partitions != self.partitions;
        self.partitions = partitions;
        changed
    }

    /// A new group epoch and the target at it, from each member's previous target.
    pub(super) fn bump(&mut self) {
        self.epoch += 1;
        let spec: GroupSpec = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), MemberSpec { instance_id: m.instance_id.clone(), topics: m.subscribed.clone(), target: self.target.get(id).cloned().unwrap_or_default() }))
            .collect();
        self.assignor = self.chosen_assignor();
        self.target = self.assignor.assign(&spec, &self.partitions);
        self.target_epoch = self.epoch;
    }

    /// The assignor most members ask for; ties and none go to the configured order.
    fn chosen_assignor(&self) -> ServerAssignor {
        let votes = |a: ServerAssignor| self.members.values().filter(|m| m.assignor == Some(a)).count();
        let most = self.assignors.iter().map(|a| votes(*a)).max().unwrap_or(0);
        *self.assignors.iter().find(|a| votes(**a) == most).unwrap_or(&self.assignors[0])
    }

    /// The member's next assignment toward its target; its partitions in the answer when they
    /// changed or the heartbeat was a full one.
    fn reconcile(&mut self, member_id: &str, full: bool, now: u64) -> Answer {
        let others: Vec<&MemberAssignment> = self.members.iter().filter(|(id, _)| id.as_str() != member_id).map(|(_, m)| &m.assignment).collect();
        let member = &self.members[member_id];
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let waits = self.waits_for_revocation;
        let next = reconcile::next(&member.assignment, self.target_epoch, &target, member.owned.as_ref(), |t, p| waits && others.iter().any(|o| o.holds(t, p)));
        let changed = next.assigned != member.assignment.assigned || member.owned.is_none() || full;
        let answer = Answer { member_id: member_id.to_string(), member_epoch: next.epoch, assignment: changed.then(|| next.assigned.clone()) };
        let member = self.members.get_mut(member_id).expect("reconciled a member");
        member.revoke_by = match next.state {
            MemberState::UnrevokedPartitions => Some(member.revoke_by.unwrap_or(now + member.rebalance_timeout_ms)),
            _ => None,
        };
        member.assignment = next;
        answer
    }

    /// Kafka's check of an OffsetCommit (v9: member epochs) or OffsetFetch against the group: a
    /// commit from outside the group (no member id, a negative epoch) only while it is empty;
    /// a member must be known and at its current epoch (STALE_MEMBER_EPOCH otherwise; a classic
    /// member's generation is its epoch, ILLEGAL_GENERATION otherwise).
    pub fn check_member(&self, member_id: &str, epoch: i32) -> Result<(), Code> {
        if epoch < 0 && member_id.is_empty() {
            return match self.members.is_empty() {
                true => Ok(()),
                false => Err(Code::UnknownMemberId),
            };
        }
        let member = self.members.get(member_id).ok_or(Code::UnknownMemberId)?;
        match (member.assignment.epoch == epoch, member.classic.is_some()) {
            (true, _) => Ok(()),
            // A classic member's generation is its member epoch.
            (false, true) => Err(Code::IllegalGeneration),
            (false, false) => Err(Code::StaleMemberEpoch),
        }
    }
}

/// What a heartbeat changes of its member (fields it left null stay).
fn update(member: &mut Member, hb: &Heartbeat) {
    if let Some(owned) = &hb.owned {
        member.owned = Some(owned.clone());
    }
    if let Some(topics) = &hb.topics {
        member.topics = topics.clone();
    }
    if let Some(regex) = &hb.regex {
        member.regex = (!regex.is_empty()).then(|| regex.clone());
    }
    if let Some(ms) = hb.rebalance_timeout_ms {
        member.rebalance_timeout_ms = ms;
    }
    if let Some(a) = hb.assignor.as_deref().and_then(ServerAssignor::by_name) {
        member.assignor = Some(a);
    }
    // A ConsumerGroupHeartbeat makes its member a consumer-protocol one (Kafka's choice).
    member.classic = None;
    if hb.member_epoch == 0 {
        member.instance_id = hb.instance_id.clone();
        member.rack = hb.rack.clone();
        member.client_id = hb.client_id.clone();
        member.client_host = hb.client_host.clone();
    }
}

#[cfg(test)]
mod tests;
