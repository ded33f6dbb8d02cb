//! A node's share-partitions (KIP-932's share-partition leader): one [`SharePartition`] per
//! (group, topic, partition) this node leads and a member fetched, its state read from the
//! group's coordinator when it starts serving (ReadShareGroupState) and written back
//! (WriteShareGroupState) after every change. The one invariant: a member is told nothing —
//! no record it acquired, no acknowledgement taken — before the write holding that change is
//! answered by the coordinator, so a leader taking over (which reads the state first, and
//! fences this one) never delivers an accepted record again nor loses an acknowledgement.
//! Nor, when that answer comes, of records it no longer holds: what went back meanwhile (a
//! lock ran out, the coordinator no longer had the member) may be another member's already.
//!
//! A plain struct with an explicit `now`; the sends are the shell's ([`Send`] out, its answer
//! back through [`Shares::answered`]). Requests that wait on writes hold a ticket, answered in
//! [`Out::answers`] once every share-partition it touched has written what it changed.
//! One write per share-partition is in flight at a time; what changes meanwhile goes in the
//! next, a whole snapshot each time. A group with no share session here left has its
//! share-partitions forgotten once everything they changed is written (nothing is held, no
//! write owed): the next member to fetch reads the state again, so what the coordinator did
//! meanwhile (a deletion of the group) is seen. A share session of a group opening here makes
//! its share-partitions check the state again before their next fetch (a read, taken only if
//! its state epoch moved): a group deleted and re-created while this node still held its old
//! state, with nothing left to hand out and so no write to be fenced at, starts afresh. And
//! records held by a member its group's coordinator no longer has (its group session timed
//! out, it left) go back: `members` asks the coordinator about the holders of each group.

use super::partition::{AckType, Acquired, Acquisition, Limits, SharePartition};
use super::sessions::Sessions;
use crate::constants::share_state_retry_ms;
use crate::group::share_state::Stored;
use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// (group, topic, partition).
pub type PartKey = (String, String, i32);

/// What became of a request's changes, by (topic, partition).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Results {
    /// Ok once its changes there are written.
    pub written: BTreeMap<(String, i32), Result<(), Code>>,
    /// Where records it acquired are no longer its member's when the write holding them is
    /// answered (they went back meanwhile: a lock ran out, the coordinator no longer had the
    /// member; another member may hold them now): the answer hands none of them out.
    pub taken_back: BTreeSet<(String, i32)>,
}

impl FromIterator<((String, i32), Result<(), Code>)> for Results {
    fn from_iter<I: IntoIterator<Item = ((String, i32), Result<(), Code>)>>(written: I) -> Results {
        Results { written: written.into_iter().collect(), taken_back: BTreeSet::new() }
    }
}

/// A share-state request the shell sends to the coordinator of `group` (node `coordinator`),
/// then reports with [`Shares::answered`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    pub request: u64,
    pub coordinator: i32,
    pub group: String,
    pub topic_id: [u8; 16],
    pub partition: i32,
    pub what: What,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    Read { leader_epoch: i32 },
    Write(Stored),
    /// Which members the group has now (ShareGroupDescribe; `topic_id` and `partition` unused),
    /// answered through [`Shares::members_answered`].
    Members,
}

/// What a call asks of the shell.
#[derive(Debug, Default)]
pub struct Out {
    pub sends: Vec<Send>,
    /// Tickets whose every share-partition is written (or failed), with the results.
    pub answers: Vec<(u64, Results)>,
    /// Records became available again (a lock ran out, a member let go): parked fetches may
    /// find some.
    pub wake: bool,
    pub lines: Vec<String>,
}

#[derive(Debug)]
enum Phase {
    /// Its state is being read (request id; None: to be sent again at `retry_at`).
    Reading(Option<u64>),
    Ready(SharePartition),
}

/// Where a ready share-partition is in checking its state epoch at the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    /// A session of the group opened here: read again before the next fetch.
    Due,
    /// The read sent (request id).
    Sent(u64),
}

#[derive(Debug)]
struct Entry {
    leader_epoch: i32,
    topic_id: [u8; 16],
    state_epoch: i32,
    phase: Phase,
    /// Changes not in any write yet, and the tickets waiting for them.
    dirty: bool,
    dirty_waiters: BTreeSet<u64>,
    /// The write in flight and the tickets it settles.
    in_flight: Option<(u64, BTreeSet<u64>)>,
    retry_at: u64,
    check: Check,
}

#[derive(Debug, Default)]
struct Waiter {
    owed: BTreeSet<PartKey>,
    results: Results,
    /// What the request acquired, by share-partition: its member and the runs (with their
    /// delivery counts) its answer will hand out, checked to be still held when answered.
    acquired: BTreeMap<PartKey, (String, Vec<Acquired>)>,
}

#[derive(Debug)]
pub struct Shares {
    pub limits: Limits,
    /// Planted `ShareTellsBeforeWrite` (chosen when the node is built): answers go out before
    /// the writes they wait on. Always false in the real build.
    pub tells_before_write: bool,
    pub sessions: Sessions,
    parts: BTreeMap<PartKey, Entry>,
    requests: BTreeMap<u64, PartKey>,
    next_request: u64,
    waiters: BTreeMap<u64, Waiter>,
    next_ticket: u64,
    /// How often a group whose members hold records here is checked for holders its
    /// coordinator no longer has (the broker's `group.share.heartbeat.interval.ms`).
    pub members_check_ms: u64,
    member_checks: BTreeMap<String, members::MemberCheck>,
    member_requests: BTreeMap<u64, String>,
}

/// Where a group's coordinator is (None: not known now).
pub type Locate<'a> = &'a dyn Fn(&str) -> Option<i32>;

impl Shares {
    /// `session_idle_ms`: how long a share session lives unused.
    pub fn new(limits: Limits, max_sessions: usize, session_idle_ms: u64) -> Shares {
        Shares {
            limits,
            tells_before_write: false,
            sessions: Sessions::new(max_sessions, session_idle_ms),
            parts: BTreeMap::new(),
            requests: BTreeMap::new(),
            next_request: 1,
            waiters: BTreeMap::new(),
            next_ticket: 1,
            members_check_ms: crate::constants::group_share_heartbeat_interval_ms_default,
            member_checks: BTreeMap::new(),
            member_requests: BTreeMap::new(),
        }
    }

    pub fn ticket(&mut self) -> u64 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.waiters.insert(t, Waiter::default());
        t
    }

    /// The request holding `ticket` stopped waiting: nothing is answered for it any more.
    pub fn forget(&mut self, ticket: u64) {
        self.waiters.remove(&ticket);
    }

    /// Whether `ticket` waits on a write.
    pub fn waits(&self, ticket: u64) -> bool {
        self.waiters.get(&ticket).is_some_and(|w| !w.owed.is_empty())
    }

    /// Whether `key` can be served now under `leader_epoch` (this node's leadership of the
    /// partition) for the topic `topic_id` names: Ok(true) once its state is read; Ok(false)
    /// while it is being read (a read is sent when the share-partition is new here, its
    /// leadership is, or the name now belongs to another topic: a deleted topic's state is
    /// never served for one re-created under its name, even at the same leader epoch).
    pub fn prepare(&mut self, key: &PartKey, topic_id: [u8; 16], leader_epoch: i32, locate: Locate, now: u64, out: &mut Out) -> bool {
        match self.parts.get(key) {
            Some(e) if e.leader_epoch == leader_epoch && e.topic_id == topic_id => {
                let ready = matches!(e.phase, Phase::Ready(_));
                if ready && e.check == Check::Due && e.retry_at <= now {
                    self.send_check(key, locate, now, out);
                }
                return ready;
            }
            Some(_) => self.drop_part(key, Code::NotLeaderOrFollower, out),
            None => {}
        }
        let e = Entry { leader_epoch, topic_id, state_epoch: 0, phase: Phase::Reading(None), dirty: false, dirty_waiters: BTreeSet::new(), in_flight: None, retry_at: now, check: Check::None };
        self.parts.insert(key.clone(), e);
        self.send_read(key, locate, now, out);
        false
    }

    fn send_read(&mut self, key: &PartKey, locate: Locate, now: u64, out: &mut Out) {
        self.send_state_read(key, locate, now, out, |e, request| e.phase = Phase::Reading(Some(request)));
    }

    /// Reads the state of `key` at its coordinator (`mark` records the request in its entry), or,
    /// with no coordinator known, tries again after `share_state_retry_ms`.
    fn send_state_read(&mut self, key: &PartKey, locate: Locate, now: u64, out: &mut Out, mark: impl FnOnce(&mut Entry, u64)) {
        let Some(e) = self.parts.get_mut(key) else { return };
        let Some(coordinator) = locate(&key.0) else {
            e.retry_at = now + share_state_retry_ms;
            return;
        };
        let request = self.next_request;
        self.next_request += 1;
        mark(e, request);
        self.requests.insert(request, key.clone());
        out.sends.push(Send { request, coordinator, group: key.0.clone(), topic_id: e.topic_id, partition: key.2, what: What::Read { leader_epoch: e.leader_epoch } });
    }

    /// A share session of `group` opened here (ShareFetch at epoch 0): its share-partitions
    /// check their state epoch at the coordinator before their next fetch. A member joining a
    /// group deleted and re-created under the name would otherwise be served the deleted
    /// group's state, which — with nothing left to hand out — is never written, so never
    /// meets the coordinator's fence.
    pub fn session_opened(&mut self, group: &str) {
        for (_, e) in self.parts.iter_mut().filter(|(k, _)| k.0 == group) {
            if !matches!(e.check, Check::Sent(_)) {
                e.check = Check::Due;
            }
        }
    }

    /// Reads the state of ready `key` again, to compare its state epoch (served meanwhile).
    fn send_check(&mut self, key: &PartKey, locate: Locate, now: u64, out: &mut Out) {
        self.send_state_read(key, locate, now, out, |e, request| e.check = Check::Sent(request));
    }

    /// The share-partition, once ready.
    pub fn partition(&self, key: &PartKey) -> Option<&SharePartition> {
        match &self.parts.get(key)?.phase {
            Phase::Ready(p) => Some(p),
            Phase::Reading(_) => None,
        }
    }

    fn ready_mut(&mut self, key: &PartKey) -> Option<&mut SharePartition> {
        match &mut self.parts.get_mut(key)?.phase {
            Phase::Ready(p) => Some(p),
            Phase::Reading(_) => None,
        }
    }

    /// A change to `key` that `ticket` (if any) waits to see written.
    fn changed(&mut self, key: &PartKey, ticket: Option<u64>) {
        let Some(e) = self.parts.get_mut(key) else { return };
        e.dirty = true;
        if let Some(t) = ticket {
            if let Some(w) = self.waiters.get_mut(&t) {
                e.dirty_waiters.insert(t);
                w.owed.insert(key.clone());
            }
        }
    }

    /// `member` acknowledges records of `key` (each batch: first, last, types), answered with
    /// `ticket` once written. All or none: one error code answers a partition's batches, so
    /// the first refused leaves every batch as it was.
    pub fn acknowledge(&mut self, key: &PartKey, member: &str, batches: &[(i64, i64, Vec<AckType>)], ticket: u64, now: u64) -> Result<(), Code> {
        let Some(p) = self.ready_mut(key) else { return Err(Code::InvalidRecordState) };
        for (first, last, types) in batches {
            p.check_acknowledge(member, *first, *last, types)?;
        }
        for (first, last, types) in batches {
            p.acknowledge(member, *first, *last, types, now).expect("checked above, batches apart");
        }
        if !batches.is_empty() {
            self.changed(key, Some(ticket));
        }
        Ok(())
    }

    /// Acquires records of `key` for `member` from the log batches read at
    /// [`SharePartition::fetch_from`], locked for `lock_ms` (the group's record lock
    /// duration); `ticket` is answered once the acquisition is written.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(&mut self, key: &PartKey, member: &str, batches: &[(i64, i64)], max_records: usize, lock_ms: u64, ticket: u64, now: u64) -> Acquisition {
        let Some(p) = self.ready_mut(key) else { return Acquisition { runs: Vec::new(), batches_used: 0 } };
        p.set_lock_ms(lock_ms);
        let a = p.acquire(member, batches, max_records, now);
        if !a.runs.is_empty() {
            self.changed(key, Some(ticket));
            self.members_held(&key.0, now);
            if let Some(w) = self.waiters.get_mut(&ticket) {
                w.acquired.entry(key.clone()).or_insert_with(|| (member.to_string(), Vec::new())).1.extend(a.runs.iter().copied());
            }
        }
        a
    }

    /// A read at `from` found its first batch at `to`: the records between are gone from the
    /// log (compacted) and are archived.
    pub fn log_gap(&mut self, key: &PartKey, from: i64, to: i64) {
        if self.ready_mut(key).is_some_and(|p| p.log_gap(from, to)) {
            self.changed(key, None);
        }
    }

    /// A committed read of `key` found nothing to deliver before `offset` (aborted records,
    /// markers): the share-partition passes over them.
    pub fn skip_to(&mut self, key: &PartKey, offset: i64) {
        if self.ready_mut(key).is_some_and(|p| p.skip_to(offset)) {
            self.changed(key, None);
        }
    }

    /// `member`'s session closed: what it holds of `group` goes back.
    pub fn release_member(&mut self, group: &str, member: &str, out: &mut Out) {
        let keys: Vec<PartKey> = self.parts.keys().filter(|k| k.0 == group).cloned().collect();
        for key in keys {
            let Some(p) = self.ready_mut(&key) else { continue };
            if p.release_member(member) {
                self.changed(&key, None);
                out.wake = true;
            }
        }
    }

    /// `connection` closed: the share sessions last used on it end, and what their members
    /// held goes back at once (written), rather than when their locks run out.
    pub fn connection_closed(&mut self, connection: u64, locate: Locate, now: u64, out: &mut Out) {
        for (group, member) in self.sessions.closed(connection) {
            self.release_member(&group, &member, out);
        }
        self.flush(locate, now, out);
        self.take_answers(out);
    }

    /// Sends the writes owed: every changed share-partition without a write in flight.
    pub fn flush(&mut self, locate: Locate, now: u64, out: &mut Out) {
        let due: Vec<PartKey> = self.parts.iter().filter(|(_, e)| e.dirty && e.in_flight.is_none() && e.retry_at <= now && matches!(e.phase, Phase::Ready(_))).map(|(k, _)| k.clone()).collect();
        for key in due {
            let Some(coordinator) = locate(&key.0) else {
                if let Some(e) = self.parts.get_mut(&key) {
                    e.retry_at = now + share_state_retry_ms;
                }
                continue;
            };
            let request = self.next_request;
            self.next_request += 1;
            let e = self.parts.get_mut(&key).expect("listed above");
            let Phase::Ready(p) = &e.phase else { continue };
            let state = Stored { state_epoch: e.state_epoch, leader_epoch: e.leader_epoch, snapshot: p.snapshot() };
            e.dirty = false;
            e.in_flight = Some((request, std::mem::take(&mut e.dirty_waiters)));
            self.requests.insert(request, key.clone());
            out.sends.push(Send { request, coordinator, group: key.0.clone(), topic_id: e.topic_id, partition: key.2, what: What::Write(state) });
        }
    }

    /// The coordinator answered `request` (a read's state, or a write's Ok(None)), or the link
    /// failed. `start_of(key)` is where a share-partition never initialized starts (Kafka's
    /// `share.auto.offset.reset`), and where the log starts now.
    pub fn answered(&mut self, request: u64, result: Result<Option<Stored>, Code>, start_of: &dyn Fn(&PartKey) -> Option<(i64, i64)>, now: u64, out: &mut Out) {
        let Some(key) = self.requests.remove(&request) else { return };
        let Some(e) = self.parts.get_mut(&key) else { return };
        let fenced = matches!(result, Err(Code::FencedLeaderEpoch | Code::FencedStateEpoch));
        if e.check == Check::Sent(request) {
            match result {
                // The same state epoch: what this node holds is the state; it goes on.
                Ok(stored) if stored.as_ref().map_or(0, |s| s.state_epoch) == e.state_epoch => e.check = Check::None,
                // The group was deleted meanwhile: its state here is the deleted group's.
                Ok(stored) => {
                    out.lines.push(format!("share-partition {}/{}-{}: the group was deleted and re-created; read afresh", key.0, key.1, key.2));
                    let (leader_epoch, topic_id) = (e.leader_epoch, e.topic_id);
                    self.drop_part(&key, Code::NotLeaderOrFollower, out);
                    let fresh = Entry { leader_epoch, topic_id, state_epoch: 0, phase: Phase::Reading(Some(request)), dirty: false, dirty_waiters: BTreeSet::new(), in_flight: None, retry_at: now, check: Check::None };
                    self.parts.insert(key.clone(), fresh);
                    self.requests.insert(request, key);
                    self.answered(request, Ok(stored), start_of, now, out);
                }
                Err(_) if fenced => {
                    out.lines.push(format!("share-partition {}/{}-{}: fenced by a newer leader; dropped", key.0, key.1, key.2));
                    self.drop_part(&key, Code::NotLeaderOrFollower, out);
                }
                Err(_) => {
                    e.check = Check::Due;
                    e.retry_at = now + share_state_retry_ms;
                }
            }
            return;
        }
        match (&e.phase, result) {
            (_, Err(_)) if fenced => {
                out.lines.push(format!("share-partition {}/{}-{}: fenced by a newer leader; dropped", key.0, key.1, key.2));
                self.drop_part(&key, Code::NotLeaderOrFollower, out);
            }
            (Phase::Reading(Some(r)), Ok(stored)) if *r == request => {
                let Some((reset_start, log_start)) = start_of(&key) else {
                    self.drop_part(&key, Code::NotLeaderOrFollower, out);
                    return;
                };
                let stored = stored.unwrap_or_default();
                let mut p = match stored.snapshot.start {
                    s if s < 0 => {
                        e.dirty = true;
                        SharePartition::new(reset_start, self.limits)
                    }
                    _ => SharePartition::restore(&stored.snapshot, self.limits),
                };
                e.dirty |= p.log_start_moved(log_start);
                e.state_epoch = stored.state_epoch;
                e.phase = Phase::Ready(p);
                out.wake = true;
            }
            (Phase::Reading(Some(r)), Err(_)) if *r == request => {
                e.phase = Phase::Reading(None);
                e.retry_at = now + share_state_retry_ms;
            }
            (Phase::Ready(_), result) if e.in_flight.as_ref().is_some_and(|(r, _)| *r == request) => {
                let (_, tickets) = e.in_flight.take().expect("checked");
                match result {
                    Ok(_) => {
                        self.settle(&key, tickets, Ok(()));
                        self.forget_idle();
                    }
                    Err(_) => {
                        // Not taken (the coordinator moved, was loading, the link failed): the
                        // same changes go again, whole, with anything since.
                        e.dirty = true;
                        e.dirty_waiters.extend(tickets);
                        e.retry_at = now + share_state_retry_ms;
                    }
                }
            }
            _ => {}
        }
    }

    /// Share-partitions of groups with no session here, written and holding nothing, are
    /// forgotten (read again when a member fetches).
    fn forget_idle(&mut self) {
        let sessions = &self.sessions;
        self.parts.retain(|(g, _, _), e| {
            let idle = matches!(&e.phase, Phase::Ready(p) if p.next_deadline().is_none()) && !e.dirty && e.in_flight.is_none();
            !idle || sessions.has_group(g)
        });
    }

    fn settle(&mut self, key: &PartKey, tickets: BTreeSet<u64>, result: Result<(), Code>) {
        for t in tickets {
            let Some(w) = self.waiters.get_mut(&t) else { continue };
            w.owed.remove(key);
            w.results.written.insert((key.1.clone(), key.2), result);
        }
    }

    /// Tickets whose every share-partition is settled, out to be answered. A record a ticket
    /// acquired may have gone back before it is answered (its lock ran out while the write was
    /// retried, the coordinator no longer had its member) and even be another member's now:
    /// the answer then hands out nothing of that share-partition, so no member is told of a
    /// record it does not hold.
    pub fn take_answers(&mut self, out: &mut Out) {
        let done: Vec<u64> = self.waiters.iter().filter(|(_, w)| w.owed.is_empty() && !w.results.written.is_empty()).map(|(t, _)| *t).collect();
        for t in done {
            let Some(mut w) = self.waiters.remove(&t) else { continue };
            for (key, (member, runs)) in &w.acquired {
                let at = (key.1.clone(), key.2);
                // A failed write hands nothing out anyway.
                if w.results.written.get(&at) != Some(&Ok(())) {
                    continue;
                }
                let held = match self.parts.get(key).map(|e| &e.phase) {
                    Some(Phase::Ready(p)) => runs.iter().all(|r| p.still_held(member, r)),
                    Some(Phase::Reading(_)) | None => false,
                };
                if !held {
                    w.results.taken_back.insert(at);
                }
            }
            out.answers.push((t, w.results));
        }
    }

    /// This node no longer serves `key` (its leadership moved, or a newer leader fenced it):
    /// what waits on it is answered `code`.
    fn drop_part(&mut self, key: &PartKey, code: Code, out: &mut Out) {
        let Some(e) = self.parts.remove(key) else { return };
        let mut tickets = e.dirty_waiters;
        if let Some((r, t)) = e.in_flight {
            self.requests.remove(&r);
            tickets.extend(t);
        }
        if let Phase::Reading(Some(r)) = e.phase {
            self.requests.remove(&r);
        }
        if let Check::Sent(r) = e.check {
            self.requests.remove(&r);
        }
        self.settle(key, tickets, Err(code));
        self.take_answers(out);
    }

    /// Time passes: locks run out, reads and writes that failed go again, and share-partitions
    /// whose leadership moved (`leader_epoch_of`: this node's epoch, None when not leading) go.
    pub fn tick(&mut self, leader_epoch_of: &dyn Fn(&str, i32) -> Option<i32>, locate: Locate, now: u64, out: &mut Out) {
        // Sessions not used for a session timeout are gone (a member that crashed never
        // closes its own), and what their members held goes back.
        for (group, member) in self.sessions.expire(now) {
            self.release_member(&group, &member, out);
        }
        let gone: Vec<PartKey> = self.parts.iter().filter(|(k, e)| leader_epoch_of(&k.1, k.2) != Some(e.leader_epoch)).map(|(k, _)| k.clone()).collect();
        for key in gone {
            self.drop_part(&key, Code::NotLeaderOrFollower, out);
        }
        let keys: Vec<PartKey> = self.parts.keys().cloned().collect();
        for key in keys {
            let e = self.parts.get_mut(&key).expect("listed");
            match &mut e.phase {
                Phase::Ready(p) => {
                    if p.tick(now) {
                        e.dirty = true;
                        out.wake = true;
                    }
                }
                Phase::Reading(None) if e.retry_at <= now => self.send_read(&key, locate, now, out),
                Phase::Reading(_) => {}
            }
        }
        self.check_members(locate, now, out);
        self.flush(locate, now, out);
        self.take_answers(out);
        self.forget_idle();
    }

    /// The next time [`Shares::tick`] has work.
    pub fn next_deadline(&self) -> Option<u64> {
        self.parts
            .values()
            .filter_map(|e| match &e.phase {
                Phase::Ready(p) => {
                    let retry = (e.dirty && e.in_flight.is_none()).then_some(e.retry_at);
                    p.next_deadline().into_iter().chain(retry).min()
                }
                Phase::Reading(None) => Some(e.retry_at),
                Phase::Reading(Some(_)) => None,
            })
            .chain(self.sessions.next_expiry())
            .chain(self.members_deadline())
            .min()
    }

    /// The groups with share-partitions here (whose coordinators a call may write to).
    pub fn groups(&self) -> BTreeSet<String> {
        self.parts.keys().map(|k| k.0.clone()).collect()
    }

    /// The share-partitions served here, with their start, end and records in flight
    /// (for describing).
    pub fn served(&self) -> impl Iterator<Item = (&PartKey, &SharePartition)> {
        self.parts.iter().filter_map(|(k, e)| match &e.phase {
            Phase::Ready(p) => Some((k, p)),
            Phase::Reading(_) => None,
        })
    }
}

mod members;
#[cfg(test)]
mod tests;
