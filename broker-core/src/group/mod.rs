//! The group coordinator of one node: the consumer groups whose `__consumer_offsets` partition
//! this node leads, their committed offsets, and the writes that make both durable. A plain
//! struct driven with an explicit `now`; no IO, no locks, no clock. What the shell must do comes
//! back in [`Work`]: batches to append to the offsets topic (then reported with
//! [`Coordinator::appended`] and, once replicated, [`Coordinator::settle`]), and the answers of
//! requests that waited. A request that cannot be answered at once gets a [`Ticket`]; its
//! answer comes out in the [`Work`] of whichever later call decides it, once (the shell hands
//! it to the request holding the ticket; nothing is parked here for it to collect).
//!
//! Placement is Kafka's: a group lives in partition `abs(javaHash(group id)) % partitions` of
//! `__consumer_offsets`, and its coordinator is that partition's leader. When this node starts
//! leading a partition it loads the partition's groups from the log (requests for them get
//! COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops, their waiting requests get
//! NOT_COORDINATOR and the groups are dropped from memory. A commit takes effect, and is
//! answered, only once the offsets topic's high watermark passes it (acks=all); so does a
//! leader's assignment and a deletion. See docs/groups.md.

pub mod assignors;
pub mod consumer;
pub mod consumer_classic;
mod consumer_groups;
pub mod consumer_records;
pub mod consumer_stored;
pub mod reconcile;
pub mod share;
mod share_groups;
pub mod share_offsets;
pub mod share_records;
pub mod share_state;
pub mod share_stored;
mod calls;
mod config;
pub mod hosting;
mod loading;
mod migration;
pub mod records;
pub mod rules;
pub mod state;
mod stored;
mod txn_offsets;
mod writes;

pub use config::{offsets_topic, offsets_topic_spec, partition_for, GroupConfig, MigrationPolicy};
pub use state::{Answer, Group, HeartbeatAnswer, JoinAnswer, JoinRequest, Member, Reply, State, Ticket};

use hosting::Hosting;
use crate::kafka::Code;
use crate::planted::Planted;
use records::{offset_records, Key, OffsetValue};
use state::{Out, Store};
use writes::{Effect, Write};
use std::collections::{BTreeMap, BTreeSet};

/// Where the shell appended a coordinator's write: its last offset, the leader epoch it was
/// appended under, and which opened log took it (`Log::serial`; None: not known). The write is
/// settled only while all three still hold: with the write-behind, a log reopened after a
/// failed write may have lost it and taken its offsets again under the same epoch. The group
/// and transaction coordinators keep it as it is and hand it back to `settle`'s check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub last_offset: i64,
    pub leader_epoch: i32,
    pub log: Option<u64>,
}

/// A partition and its committed offset, if any (OffsetFetch).
pub type Committed = ((String, i32), Option<OffsetValue>);

/// A batch the shell must append to a coordinator's state topic (`__consumer_offsets` here;
/// the transaction coordinator's too), as the leader, acks=all, then report with
/// [`Coordinator::appended`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append {
    pub write: u64,
    pub partition: i32,
    pub batch: Vec<u8>,
}

/// What a coordinator call asks of the shell.
#[derive(Debug, Default)]
pub struct Work {
    pub appends: Vec<Append>,
    /// Answers for tickets handed out earlier, each once.
    pub answers: Vec<(Ticket, Answer)>,
    /// Lines for the operator's log.
    pub lines: Vec<String>,
}

/// An answer now, or a ticket to wait on.
#[derive(Debug, PartialEq, Eq)]
pub enum Pending<T> {
    Now(T),
    Wait(Ticket),
}

/// What a coordinator's load reads from its state partition, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// A record: key, value (None: a tombstone), and the producer of a transactional batch.
    Record { key: bytes::Bytes, value: Option<bytes::Bytes>, producer: Option<i64> },
    /// A transaction marker: `producer_id`'s transaction ended.
    Marker { producer_id: i64, commit: bool },
}

/// Offsets committed inside open transactions, per group and producer id, in the order they
/// were written (Kafka's pending transactional offset commits).
type TxnOffsets = BTreeMap<String, BTreeMap<i64, Offsets>>;

/// Offsets by partition.
type Offsets = BTreeMap<(String, i32), OffsetValue>;

pub struct Coordinator {
    config: GroupConfig,
    /// The offsets topic's partitions, and those led here.
    hosting: Hosting,
    groups: BTreeMap<String, Group>,
    /// KIP-848 groups (their offsets are in `groups`).
    consumer_groups: BTreeMap<String, consumer::ConsumerGroup>,
    /// Consumer groups whose last write failed, with the members that write may have stored:
    /// their next one writes them whole, those members tombstoned.
    consumer_unsynced: BTreeMap<String, BTreeSet<String>>,
    /// KIP-932 share groups (`share_groups`).
    share_groups: BTreeMap<String, share::ShareGroup>,
    /// Share-partitions' durable state, by (group, topic id, partition) (`share_state`).
    share_states: BTreeMap<share_state::ShareKey, share_state::Stored>,
    /// The cluster's topics (id, partition count) as of metadata offset `topics_at`.
    topics: BTreeMap<String, ([u8; 16], i32)>,
    topics_at: i64,
    /// Offsets committed inside open transactions: not offsets yet.
    txn_offsets: TxnOffsets,
    /// Tickets handed out and not yet answered or given up.
    open: BTreeSet<Ticket>,
    next_ticket: Ticket,
    writes: BTreeMap<u64, Write>,
    next_write: u64,
    /// Makes member ids unique within a partition's leader epoch.
    counter: u64,
    /// When empty groups' offsets are next checked for expiry.
    next_expiry_check: u64,
    /// The simulator's planted bug, if one of the coordinator's (`CommitIgnoresGeneration` and
    /// the commit's other two): never set in the real build ([`Planted::is`] is `false`).
    #[doc(hidden)]
    pub planted: Planted,
}

impl Coordinator {
    pub fn new(config: GroupConfig) -> Coordinator {
        Coordinator {
            config,
            hosting: Hosting::default(),
            groups: BTreeMap::new(),
            consumer_groups: BTreeMap::new(),
            consumer_unsynced: BTreeMap::new(),
            share_groups: BTreeMap::new(),
            share_states: BTreeMap::new(),
            topics: BTreeMap::new(),
            topics_at: -1,
            txn_offsets: BTreeMap::new(),
            open: BTreeSet::new(),
            next_ticket: 1,
            writes: BTreeMap::new(),
            next_write: 1,
            counter: 0,
            next_expiry_check: 0,
            planted: Planted::default(),
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The offsets partitions this node leads and their leader epochs.
    pub fn owned(&self) -> BTreeMap<i32, i32> {
        self.hosting.epochs()
    }

    /// Partitions still loading, with the next offset to load.
    pub fn loading(&self) -> Vec<(i32, i64)> {
        self.hosting.loading()
    }

    /// The partition of `group`, if this node coordinates it now.
    fn owner(&self, group: &str) -> Result<i32, Code> {
        if group.len() > crate::constants::group_id_bytes_max {
            return Err(Code::InvalidGroupId);
        }
        self.hosting.owner(group)
    }

    fn ticket(&mut self) -> Ticket {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.open.insert(t);
        t
    }

    /// The request holding `ticket` stopped waiting (its timeout passed): no answer comes out
    /// for it any more.
    pub fn forget(&mut self, ticket: Ticket) {
        self.open.remove(&ticket);
    }

    /// Answers and writes a group call produced.
    fn deliver(&mut self, group: &str, out: Out, now: u64, work: &mut Work) {
        for (t, a) in out.answers {
            if self.open.remove(&t) {
                work.answers.push((t, a));
            }
        }
        let Some(store) = out.store else { return };
        let Some(g) = self.groups.get(group) else { return };
        let effect = match store {
            Store::Assignment(generation) => Effect::Assignment { group: group.to_string(), generation },
            Store::Background => Effect::Background,
        };
        let key = records::encode_key(&Key::Group { group: group.to_string() });
        let value = records::encode_group(&g.value());
        self.write(group, vec![(key, Some(value))], effect, now, work);
    }

    fn id_prefix(&self, group: &str) -> String {
        let p = self.hosting.partition_of(group);
        format!("{p}.{}", self.hosting.get(p).map_or(-1, |o| o.leader_epoch))
    }

    fn group_mut(&mut self, id: &str, now: u64) -> &mut Group {
        let prefix = self.id_prefix(id);
        self.groups.entry(id.to_string()).or_insert_with(|| Group::new(id, now, prefix))
    }

    /// JoinGroup.
    pub fn join(&mut self, group: &str, req: JoinRequest, now: u64, work: &mut Work) -> Pending<JoinAnswer> {
        if group.is_empty() {
            return Pending::Now(JoinAnswer::error(Code::InvalidGroupId, &req.member_id));
        }
        if let Err(code) = self.owner(group).and_then(|_| if self.is_share_group(group) { Err(Code::InconsistentGroupProtocol) } else { Ok(0) }) {
            return Pending::Now(JoinAnswer::error(code, &req.member_id));
        }
        let c = &self.config;
        if req.session_timeout_ms < c.min_session_timeout_ms || req.session_timeout_ms > c.max_session_timeout_ms {
            return Pending::Now(JoinAnswer::error(Code::InvalidSessionTimeout, &req.member_id));
        }
        let oversize = req.protocols.len() > crate::constants::group_protocols_max || req.protocols.iter().any(|(n, m)| n.len() + m.len() > crate::constants::group_member_metadata_bytes_max);
        if oversize {
            return Pending::Now(JoinAnswer::error(Code::InvalidRequest, &req.member_id));
        }
        if self.consumer_members(group) {
            // A classic member of a consumer group (KIP-848's migration).
            return self.join_consumer_group(group, req, now, work);
        }
        self.drop_consumer_group(group, now, work);
        let cfg = self.config.clone();
        self.counter += 1;
        let (counter, ticket) = (self.counter, self.ticket());
        let mut out = Out::default();
        let reply = self.group_mut(group, now).join(req, &cfg, counter, ticket, now, &mut out);
        self.deliver(group, out, now, work);
        self.pending(reply, ticket)
    }

    fn pending<T>(&mut self, reply: Reply<T>, ticket: Ticket) -> Pending<T> {
        match reply {
            Reply::Now(a) => {
                self.forget(ticket);
                Pending::Now(a)
            }
            Reply::Later => Pending::Wait(ticket),
        }
    }

    /// SyncGroup.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(&mut self, group: &str, member: &str, instance: Option<&str>, generation: i32, protocol: Option<(&str, &str)>, assignments: Vec<(String, bytes::Bytes)>, now: u64, work: &mut Work) -> Pending<Result<bytes::Bytes, Code>> {
        if group.is_empty() {
            return Pending::Now(Err(Code::InvalidGroupId));
        }
        if let Err(code) = self.owner(group) {
            return Pending::Now(Err(code));
        }
        if assignments.iter().any(|(_, a)| a.len() > crate::constants::group_assignment_bytes_max) {
            return Pending::Now(Err(Code::InvalidRequest));
        }
        if self.consumer_groups.contains_key(group) {
            return self.sync_consumer_group(group, member, instance, generation, protocol, now, work);
        }
        let ticket = self.ticket();
        let Some(g) = self.groups.get_mut(group) else {
            self.forget(ticket);
            return Pending::Now(Err(Code::UnknownMemberId));
        };
        let mut out = Out::default();
        let reply = g.sync(member, instance, generation, protocol, assignments, ticket, now, &mut out);
        self.deliver(group, out, now, work);
        self.pending(reply, ticket)
    }

    /// Heartbeat.
    pub fn heartbeat(&mut self, group: &str, member: &str, instance: Option<&str>, generation: i32, now: u64) -> Result<(), Code> {
        if group.is_empty() {
            return Err(Code::InvalidGroupId);
        }
        self.owner(group)?;
        if let Some(g) = self.consumer_groups.get_mut(group) {
            return g.classic_heartbeat(member, instance, generation, now);
        }
        match self.groups.get_mut(group) {
            Some(g) => g.heartbeat(member, instance, generation, now),
            None => Err(Code::UnknownMemberId),
        }
    }

    /// LeaveGroup: the group-level error, or one result per member.
    pub fn leave(&mut self, group: &str, members: &[(String, Option<String>)], now: u64, work: &mut Work) -> Result<Vec<Result<(), Code>>, Code> {
        if group.is_empty() {
            return Err(Code::InvalidGroupId);
        }
        self.owner(group)?;
        if self.consumer_groups.contains_key(group) {
            return Ok(self.leave_consumer_group(group, members, now, work));
        }
        let Some(g) = self.groups.get_mut(group) else {
            return Ok(members.iter().map(|_| Err(Code::UnknownMemberId)).collect());
        };
        let mut out = Out::default();
        let results = members.iter().map(|(m, i)| g.leave(m, i.as_deref(), now, &mut out)).collect();
        self.deliver(group, out, now, work);
        Ok(results)
    }

    /// OffsetCommit of already validated offsets: checks the member and generation, writes
    /// them, and answers once they are replicated.
    #[allow(clippy::too_many_arguments)]
    pub fn commit(&mut self, group: &str, member: &str, instance: Option<&str>, generation: i32, offsets: Vec<((String, i32), OffsetValue)>, now: u64, work: &mut Work) -> Result<Pending<()>, Code> {
        self.owner(group)?;
        // A member of the group sending a generation the group has left (its commit raced a
        // rebalance): Kafka answers ILLEGAL_GENERATION.
        let stale = self.groups.get(group).filter(|g| g.members.contains_key(member) && (0..g.generation).contains(&generation)).map(|g| g.generation);
        let rules = rules::of(self.planted);
        let checked = match self.groups.get_mut(group) {
            _ if self.consumer_groups.contains_key(group) => self.consumer_member_check(group, member, generation).expect("a consumer group"),
            Some(g) => rules.check_commit(g, member, instance, generation, stale, now),
            // A standalone consumer (no group management) commits to a group of its own.
            None if generation < 0 => Ok(()),
            None => Err(Code::IllegalGeneration),
        };
        let written_anyway = checked.is_err() && stale.is_some() && rules.writes_refused_stale_commit();
        if offsets.is_empty() || (checked.is_err() && !written_anyway) {
            return checked.map(|()| Pending::Now(()));
        }
        self.group_mut(group, now);
        let ticket = self.ticket();
        if written_anyway {
            // Planted: refused, yet written; nobody waits on the ticket.
            self.forget(ticket);
        }
        // A plain commit written after a transaction's offsets for the same partition is the
        // later one in the log: it wins whatever the transaction's outcome.
        if let Some(pending) = self.txn_offsets.get_mut(group) {
            for by_producer in pending.values_mut() {
                offsets.iter().for_each(|(tp, _)| drop(by_producer.remove(tp)));
            }
            self.drop_empty_txn_offsets(group);
        }
        let kvs = offset_records(group, &offsets);
        self.write(group, kvs, Effect::Commit { group: group.to_string(), offsets, ticket }, now, work);
        checked.map(|()| Pending::Wait(ticket))
    }

    /// OffsetFetch: the committed offsets of `group` (all of them when `partitions` is None).
    pub fn fetch_offsets(&self, group: &str, partitions: Option<&[(String, i32)]>) -> Result<Vec<Committed>, Code> {
        self.owner(group)?;
        let offsets = self.groups.get(group).map(|g| &g.offsets);
        Ok(match partitions {
            Some(ps) => ps.iter().map(|tp| (tp.clone(), offsets.and_then(|o| o.get(tp).cloned()))).collect(),
            None => offsets.into_iter().flatten().map(|(tp, v)| (tp.clone(), Some(v.clone()))).collect(),
        })
    }

    /// DeleteGroups for one group: only an Empty group (GROUP_NOT_EMPTY otherwise); its
    /// offsets and metadata are tombstoned, and it is gone once that is replicated.
    pub fn delete_group(&mut self, group: &str, now: u64, work: &mut Work) -> Result<Pending<()>, Code> {
        self.owner(group)?;
        if self.is_share_group(group) {
            return self.delete_share_group(group, now, work);
        }
        let Some(g) = self.groups.get(group) else { return Err(Code::GroupIdNotFound) };
        match g.state {
            State::Dead => return Err(Code::GroupIdNotFound),
            State::Empty if !self.consumer_members(group) => {}
            _ => return Err(Code::NonEmptyGroup),
        }
        let mut kvs: Vec<(Vec<u8>, Option<Vec<u8>>)> = g.offsets.keys().map(|(t, p)| (records::encode_key(&Key::Offset { group: group.to_string(), topic: t.clone(), partition: *p }), None)).collect();
        kvs.push((records::encode_key(&Key::Group { group: group.to_string() }), None));
        kvs.extend(self.consumer_tombstones(group));
        // Dead at once, as in Kafka: nothing joins or commits into a group being deleted.
        if let Some(g) = self.groups.get_mut(group) {
            g.kill(now);
        }
        let ticket = self.ticket();
        self.write(group, kvs, Effect::Delete { group: group.to_string(), offsets: None, ticket }, now, work);
        Ok(Pending::Wait(ticket))
    }

    /// OffsetDelete: the group must not be consuming the topics (GROUP_SUBSCRIBED_TO_TOPIC).
    pub fn delete_offsets(&mut self, group: &str, partitions: Vec<(String, i32)>, now: u64, work: &mut Work) -> Result<Pending<()>, Code> {
        self.owner(group)?;
        let Some(g) = self.groups.get(group) else { return Err(Code::GroupIdNotFound) };
        if g.state == State::Dead {
            return Err(Code::GroupIdNotFound);
        }
        if partitions.iter().any(|(t, _)| (g.state != State::Empty && g.subscribed(t)) || self.consumer_subscribed(group, t)) {
            return Err(Code::GroupSubscribedToTopic);
        }
        let kvs = partitions.iter().map(|(t, p)| (records::encode_key(&Key::Offset { group: group.to_string(), topic: t.clone(), partition: *p }), None)).collect();
        let ticket = self.ticket();
        self.write(group, kvs, Effect::Delete { group: group.to_string(), offsets: Some(partitions), ticket }, now, work);
        Ok(Pending::Wait(ticket))
    }

    /// A classic group for DescribeGroups (None: not known here, or a consumer group: Kafka's
    /// "Dead" answer).
    pub fn describe(&self, group: &str) -> Result<Option<&Group>, Code> {
        self.owner(group)?;
        Ok(self.groups.get(group).filter(|g| g.state != State::Dead && !self.consumer_groups.contains_key(group) && !self.share_groups.contains_key(group)))
    }

    /// Every group this node coordinates (ListGroups).
    pub fn groups(&self) -> impl Iterator<Item = &Group> {
        self.groups.values().filter(|g| g.state != State::Dead && self.owner(&g.id).is_ok() && !self.consumer_groups.contains_key(&g.id))
    }

    /// Time passes: sessions expire, rebalances reach their deadlines, and (every
    /// `offsets_retention_check_ms`) expired offsets of empty groups are removed.
    pub fn tick(&mut self, now: u64, work: &mut Work) {
        let ids: Vec<String> = self.groups.keys().filter(|g| self.owner(g).is_ok()).cloned().collect();
        for id in &ids {
            let mut out = Out::default();
            if let Some(g) = self.groups.get_mut(id) {
                g.tick(now, &mut out);
            }
            self.deliver(id, out, now, work);
        }
        self.tick_consumer_groups(now, work);
        self.tick_share_groups(now, work);
        if now >= self.next_expiry_check {
            self.next_expiry_check = now + crate::constants::offsets_retention_check_ms;
            for id in ids {
                self.expire_offsets(&id, now, work);
            }
        }
    }

    /// KIP-211: an Empty group's offsets expire `offsets.retention` after it became Empty
    /// (a standalone committer's, after each commit); an Empty group left with no offsets goes.
    fn expire_offsets(&mut self, id: &str, now: u64, work: &mut Work) {
        let retention = self.config.offsets_retention_ms;
        // A consumer group's offsets expire once it has no members, as a classic group's.
        let busy = self.consumer_members(id);
        let Some(g) = self.groups.get_mut(id).filter(|_| !busy) else { return };
        if g.state != State::Empty {
            return;
        }
        let managed = g.protocol_type.is_some();
        let since = g.state_since;
        let expired: Vec<(String, i32)> = g.offsets.iter().filter(|(_, v)| (if managed { since } else { v.commit_timestamp.max(0) as u64 }) + retention <= now).map(|(tp, _)| tp.clone()).collect();
        for tp in &expired {
            g.offsets.remove(tp);
        }
        let gone = g.offsets.is_empty();
        let mut kvs: Vec<(Vec<u8>, Option<Vec<u8>>)> = expired.into_iter().map(|(t, p)| (records::encode_key(&Key::Offset { group: id.to_string(), topic: t, partition: p }), None)).collect();
        if gone {
            g.kill(now);
            self.groups.remove(id);
            kvs.push((records::encode_key(&Key::Group { group: id.to_string() }), None));
            kvs.extend(self.consumer_tombstones(id));
            self.consumer_groups.remove(id);
        }
        if !kvs.is_empty() {
            self.write(id, kvs, Effect::Background, now, work);
        }
    }

    /// The next time [`Coordinator::tick`] has work.
    pub fn next_deadline(&self) -> Option<u64> {
        let expiry = (!self.groups.is_empty()).then_some(self.next_expiry_check);
        // Groups of a partition still loading wait for the load, not for their deadlines.
        self.groups.values().filter(|g| self.owner(&g.id).is_ok()).filter_map(Group::next_deadline).chain(expiry).chain(self.consumer_deadline()).chain(self.share_deadline()).min()
    }
}

#[cfg(test)]
mod test_log;
#[cfg(test)]
mod tests;
