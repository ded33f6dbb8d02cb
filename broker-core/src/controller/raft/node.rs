//! One Raft node: its role, its epoch and vote, and the transitions between roles (follower,
//! prospective in a pre-vote, candidate, leader). Replication lives in `replication`, the
//! commit rule in `commit`, the durability bookkeeping in `durability`.
//!
//! Its one invariant: at most one leader per epoch. A node grants at most one vote per epoch
//! and only once that vote is durable, counts its own vote only once durable, and never acts on
//! an epoch older than one it has seen. Never IO, never a clock, never a panic on a message.

use super::durability::{Durability, Held};
use super::election::{self, log_up_to_date, Tally};
use super::replication::{Following, Leadership};
use super::{Action, Body, Entries, Entry, Error, Message, NodeId, QuorumState, RaftConfig, Snapshot};
use crate::constants::metadata_batch_bytes_max;
use crate::log::batch;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What the node is doing in its current epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// No known leader; a voter starts a pre-vote at `deadline`.
    Unattached,
    /// Asking for pre-votes for epoch + 1 (KIP-996), until `deadline`.
    Prospective(Tally),
    /// Asking for votes in this epoch, until `deadline`.
    Candidate(Tally),
    Leader(Leadership),
    Follower(Following),
}

pub struct Node {
    pub(super) config: RaftConfig,
    /// The latest quorum state; the durable one may lag behind it (see `durability`).
    pub(super) state: QuorumState,
    pub(super) log: Entries,
    pub(super) role: Role,
    pub(super) io: Durability,
    pub(super) high_watermark: Option<i64>,
    /// When the current role next acts on its own (see [`Role`]).
    pub(super) deadline: u64,
    /// The newest durable snapshot, which the log starts after; served to followers below it.
    pub(super) snapshot: Option<Snapshot>,
    rng: ChaCha8Rng,
}

impl Node {
    /// A node starting from what its disk holds (`QuorumState::default()` and no entries the
    /// first time). `seed` feeds its election timeouts.
    pub fn restart(config: RaftConfig, state: QuorumState, entries: Vec<Entry>, seed: u64, now: u64) -> Result<Node, Error> {
        Node::restart_from(config, state, None, entries, seed, now)
    }

    /// [`Node::restart`] from the newest snapshot on disk and the entries after it.
    pub fn restart_from(config: RaftConfig, state: QuorumState, snapshot: Option<Snapshot>, entries: Vec<Entry>, seed: u64, now: u64) -> Result<Node, Error> {
        config.validate()?;
        let log = Entries::restore(snapshot.as_ref().map(|s| s.id), entries).map_err(Error::Restore)?;
        if log.last_epoch() > state.epoch {
            return Err(Error::Restore(format!("log has epoch {} beyond the quorum state's {}", log.last_epoch(), state.epoch)));
        }
        let io = Durability::new(log.end());
        // What a snapshot holds was committed before it was written.
        let high_watermark = snapshot.as_ref().map(|s| s.id.end);
        let mut node = Node { config, state, log, role: Role::Unattached, io, high_watermark, deadline: now, snapshot, rng: ChaCha8Rng::seed_from_u64(seed) };
        match state.leader {
            // Following the leader it knew; a leader that restarts cannot lead that epoch again
            // (its followers' progress is gone), so it waits for the next election.
            Some(leader) if leader != node.config.node_id => node.role = Role::Follower(Following::new(leader, now)),
            // A lone voter has no rival to wait for: it stands at once.
            _ if node.config.voters.len() == 1 && node.config.is_voter(node.id()) => node.deadline = now,
            _ => node.deadline = election::election_deadline(&mut node.rng, now, node.config.election_timeout_ms),
        }
        Ok(node)
    }

    pub fn id(&self) -> NodeId {
        self.config.node_id
    }

    pub fn role(&self) -> &Role {
        &self.role
    }

    pub fn epoch(&self) -> i32 {
        self.state.epoch
    }

    pub fn state(&self) -> QuorumState {
        self.state
    }

    pub fn log(&self) -> &Entries {
        &self.log
    }

    pub fn high_watermark(&self) -> Option<i64> {
        self.high_watermark
    }

    /// The newest durable snapshot, which the log starts after.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The shell made `snapshot` durable (it holds the committed state up to its end, an entry
    /// boundary at or below the high watermark): the log now starts there, and followers below
    /// it are sent the snapshot. Refused for a snapshot of uncommitted or unknown entries.
    pub fn snapshot_taken(&mut self, snapshot: Snapshot) -> Result<(), Error> {
        if self.snapshot.as_ref().is_some_and(|s| s.id.end >= snapshot.id.end) {
            return Ok(());
        }
        if self.high_watermark.is_none_or(|hw| snapshot.id.end > hw) {
            return Err(Error::Restore(format!("snapshot {:?} is above the high watermark {:?}", snapshot.id, self.high_watermark)));
        }
        self.log.compact_to(snapshot.id).map_err(Error::Restore)?;
        self.snapshot = Some(snapshot);
        Ok(())
    }

    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// The leader this node knows for its epoch.
    pub fn leader(&self) -> Option<NodeId> {
        match &self.role {
            Role::Leader(_) => Some(self.id()),
            Role::Follower(f) => Some(f.leader),
            _ => None,
        }
    }

    /// When to call [`Node::tick`] next.
    pub fn next_deadline(&self) -> u64 {
        match &self.role {
            Role::Leader(l) => l.next_deadline(&self.config),
            Role::Follower(f) => f.next_deadline(&self.config, self.io.log_writes_pending()),
            _ => self.deadline,
        }
    }

    pub fn tick(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        match &self.role {
            Role::Unattached if now >= self.deadline && self.config.is_voter(self.id()) => self.become_prospective(now, &mut out),
            Role::Prospective(_) if now >= self.deadline => self.become_prospective(now, &mut out),
            Role::Candidate(_) if now >= self.deadline => self.become_prospective(now, &mut out),
            Role::Follower(f) if f.timed_out(now, &self.config) && self.config.is_voter(self.id()) => self.become_prospective(now, &mut out),
            Role::Leader(l) if !l.has_quorum(now, &self.config) => self.forget_leader(now),
            Role::Leader(_) => self.leader_tick(now, &mut out),
            _ => {}
        }
        self.settle(now, &mut out);
        out
    }

    pub fn receive(&mut self, now: u64, m: Message) -> Vec<Action> {
        let mut out = Vec::new();
        // A message to another node, or claiming to come from this one (it would count this
        // node's log twice towards a commit), is dropped.
        if m.to == self.id() && m.from != self.id() {
            self.observe_epoch(now, &m, &mut out);
            match m.body {
                Body::Vote { epoch, pre_vote: true, last_epoch, end_offset } => self.on_pre_vote(now, m.from, epoch, last_epoch, end_offset, &mut out),
                Body::Vote { epoch, pre_vote: false, last_epoch, end_offset } => self.on_vote(now, m.from, epoch, last_epoch, end_offset, &mut out),
                Body::VoteResponse { epoch, pre_vote, granted, leader } => self.on_vote_response(now, m.from, epoch, pre_vote, granted, leader, &mut out),
                Body::BeginQuorumEpoch { epoch } => self.on_begin(now, m.from, epoch, &mut out),
                Body::Fetch { epoch, fetch_offset, last_fetched_epoch } => self.on_fetch(now, m.from, epoch, fetch_offset, last_fetched_epoch, &mut out),
                Body::FetchResponse { epoch, leader, fetch_offset, high_watermark, result } => {
                    self.on_fetch_response(now, m.from, epoch, leader, fetch_offset, high_watermark, result, &mut out)
                }
                Body::FetchSnapshot { epoch, end, position } => self.on_fetch_snapshot(now, m.from, epoch, end, position, &mut out),
                Body::FetchSnapshotResponse { epoch, leader, snapshot, position, size, chunk } => {
                    self.on_snapshot_chunk(now, m.from, epoch, leader, snapshot, position, size, chunk, &mut out)
                }
            }
        }
        self.settle(now, &mut out);
        out
    }

    /// The shell synced the action with this id (the oldest not yet reported).
    pub fn io_done(&mut self, now: u64, id: u64) -> Result<Vec<Action>, Error> {
        let mut out = Vec::new();
        for held in self.io.complete(id)? {
            match held {
                Held::Send(m) => out.push(Action::Send(m)),
                Held::SelfVote { epoch } => self.count_vote(now, self.id(), epoch, &mut out),
            }
        }
        self.settle(now, &mut out);
        Ok(out)
    }

    /// Appends one batch of `values` to the log as the leader; returns its base offset. It is
    /// committed when [`Action::Commit`] passes it.
    pub fn propose(&mut self, now: u64, values: &[&[u8]]) -> Result<(i64, Vec<Action>), Error> {
        if !self.is_leader() {
            return Err(Error::NotLeader { epoch: self.state.epoch, leader: self.leader() });
        }
        if values.is_empty() {
            return Err(Error::Empty);
        }
        let bytes = values.iter().map(|v| v.len() + 16).sum::<usize>();
        if bytes > metadata_batch_bytes_max {
            return Err(Error::TooLarge { bytes, max: metadata_batch_bytes_max });
        }
        let mut out = Vec::new();
        let base = self.log.end();
        self.append_as_leader(values, now, &mut out);
        self.settle(now, &mut out);
        Ok((base, out))
    }

    pub(super) fn append_as_leader(&mut self, values: &[&[u8]], now: u64, out: &mut Vec<Action>) {
        let mut b = batch::build(values, now as i64);
        batch::stamp(&mut b, self.log.end(), self.state.epoch);
        let entry = Entry::from_batch(b.into()).expect("a batch built here is well formed");
        self.log.append(entry.clone()).expect("the leader's epoch is its log's newest");
        out.push(self.io.write(None, vec![entry], self.log.end()));
    }

    /// Any message from a newer epoch moves this node to it first (a pre-vote request's epoch
    /// is only a proposal and moves nothing). A leader named with it is followed at once.
    fn observe_epoch(&mut self, now: u64, m: &Message, out: &mut Vec<Action>) {
        let epoch = m.body.epoch();
        if epoch <= self.state.epoch || matches!(m.body, Body::Vote { pre_vote: true, .. }) {
            return;
        }
        let leader = match &m.body {
            Body::BeginQuorumEpoch { .. } => Some(m.from),
            Body::FetchResponse { leader, .. } | Body::VoteResponse { leader, .. } | Body::FetchSnapshotResponse { leader, .. } => *leader,
            _ => None,
        };
        match leader {
            Some(l) => self.become_follower(now, epoch, l, out),
            None => self.become_unattached(now, QuorumState { epoch, voted_for: None, leader: None }, out),
        }
    }

    fn set_state(&mut self, state: QuorumState, out: &mut Vec<Action>) {
        if state != self.state {
            self.state = state;
            out.push(self.io.persist(state));
        }
    }

    fn become_unattached(&mut self, now: u64, state: QuorumState, out: &mut Vec<Action>) {
        self.set_state(state, out);
        self.role = Role::Unattached;
        self.deadline = election::election_deadline(&mut self.rng, now, self.config.election_timeout_ms);
    }

    pub(super) fn become_follower(&mut self, now: u64, epoch: i32, leader: NodeId, out: &mut Vec<Action>) {
        let voted_for = if epoch == self.state.epoch { self.state.voted_for } else { None };
        self.set_state(QuorumState { epoch, voted_for, leader: Some(leader) }, out);
        self.role = Role::Follower(Following::new(leader, now));
    }

    /// Asks every other voter whether it would vote for this node in the next epoch.
    fn become_prospective(&mut self, now: u64, out: &mut Vec<Action>) {
        self.role = Role::Prospective(Tally::default());
        self.deadline = election::election_deadline(&mut self.rng, now, self.config.election_timeout_ms);
        self.ask_votes(self.state.epoch + 1, true, out);
        self.count_vote(now, self.id(), self.state.epoch, out);
    }

    fn become_candidate(&mut self, now: u64, out: &mut Vec<Action>) {
        let epoch = self.state.epoch + 1;
        self.set_state(QuorumState { epoch, voted_for: Some(self.id()), leader: None }, out);
        self.role = Role::Candidate(Tally::default());
        self.deadline = election::election_deadline(&mut self.rng, now, self.config.election_timeout_ms);
        self.ask_votes(epoch, false, out);
        if !self.config.vote_waits_for_sync() {
            return self.count_vote(now, self.id(), epoch, out);
        }
        if let Some(Held::SelfVote { epoch }) = self.io.hold(Held::SelfVote { epoch }) {
            self.count_vote(now, self.id(), epoch, out);
        }
    }

    fn become_leader(&mut self, now: u64, out: &mut Vec<Action>) {
        self.set_state(QuorumState { leader: Some(self.id()), ..self.state }, out);
        self.role = Role::Leader(Leadership::new(&self.config, now));
        // KRaft's LeaderChange control record: an entry of this epoch, so that what earlier
        // leaders left uncommitted can commit with it.
        let change = format!(r#"{{"type":"LeaderChange","leader":{},"epoch":{}}}"#, self.id(), self.state.epoch);
        self.append_as_leader(&[change.as_bytes()], now, out);
        for &v in self.config.voters.iter().filter(|&&v| v != self.id()) {
            out.push(self.send(v, Body::BeginQuorumEpoch { epoch: self.state.epoch }));
        }
    }

    /// No leader in this epoch any more: this one resigned (check-quorum: no majority fetched
    /// from it lately, so a cut-off leader stops taking proposals and stops standing in the way
    /// of the majority's pre-votes), or the one followed did. Pre-vote after a random timeout.
    pub(super) fn forget_leader(&mut self, now: u64) {
        self.role = Role::Unattached;
        self.deadline = election::election_deadline(&mut self.rng, now, self.config.election_timeout_ms);
    }

    fn ask_votes(&mut self, epoch: i32, pre_vote: bool, out: &mut Vec<Action>) {
        let body = Body::Vote { epoch, pre_vote, last_epoch: self.log.last_epoch(), end_offset: self.log.end() };
        for &v in self.config.voters.iter().filter(|&&v| v != self.id()) {
            out.push(self.send(v, body.clone()));
        }
    }

    pub(super) fn send(&self, to: NodeId, body: Body) -> Action {
        Action::Send(Message { from: self.id(), to, body })
    }

    /// Whether a leader this node heard from recently still stands (it then refuses pre-votes).
    fn has_live_leader(&self, now: u64) -> bool {
        match &self.role {
            Role::Leader(_) => true,
            Role::Follower(f) => f.heard && !f.timed_out(now, &self.config),
            _ => false,
        }
    }

    /// The leader a vote answer names: only one this node has heard from and that still stands.
    /// A leader followed on hearsay, or gone silent, is not passed on: two voters that each
    /// timed out on a dead leader would otherwise keep naming it to each other, and each, told
    /// of it, follow it again for another fetch timeout (found by the real three-voter test).
    fn leader_hint(&self, now: u64) -> Option<NodeId> {
        self.leader().filter(|_| self.has_live_leader(now))
    }

    fn on_pre_vote(&mut self, now: u64, from: NodeId, epoch: i32, last_epoch: i32, end: i64, out: &mut Vec<Action>) {
        let granted = epoch > self.state.epoch
            && self.config.is_voter(from)
            && (!self.has_live_leader(now) || self.leader() == Some(from))
            && log_up_to_date(last_epoch, end, self.log.last_epoch(), self.log.end());
        out.push(self.send(from, Body::VoteResponse { epoch: self.state.epoch, pre_vote: true, granted, leader: self.leader_hint(now) }));
    }

    fn on_vote(&mut self, now: u64, from: NodeId, epoch: i32, last_epoch: i32, end: i64, out: &mut Vec<Action>) {
        let granted = epoch == self.state.epoch
            && self.config.is_voter(from)
            && self.state.leader.is_none()
            && self.state.voted_for.is_none_or(|v| v == from)
            && log_up_to_date(last_epoch, end, self.log.last_epoch(), self.log.end());
        let reply = Message { from: self.id(), to: from, body: Body::VoteResponse { epoch: self.state.epoch, pre_vote: false, granted, leader: self.leader_hint(now) } };
        if !granted {
            return out.push(Action::Send(reply));
        }
        if self.state.voted_for.is_none() {
            self.become_unattached(now, QuorumState { voted_for: Some(from), ..self.state }, out);
        }
        if !self.config.vote_waits_for_sync() {
            return out.push(Action::Send(reply));
        }
        if let Some(Held::Send(m)) = self.io.hold(Held::Send(reply)) {
            out.push(Action::Send(m));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_vote_response(&mut self, now: u64, from: NodeId, epoch: i32, pre_vote: bool, granted: bool, leader: Option<NodeId>, out: &mut Vec<Action>) {
        if epoch == self.state.epoch && !self.is_leader() {
            // Followed on hearsay (KIP-996): until the leader answers a fetch, this node does not
            // refuse pre-votes on its behalf, or two voters whose timers run out at different
            // times would keep sending each other back to a dead leader.
            if let Some(l) = leader.filter(|&l| l != self.id()) {
                return self.become_follower(now, epoch, l, out);
            }
        }
        let asking = match &self.role {
            Role::Prospective(_) => pre_vote && epoch <= self.state.epoch,
            Role::Candidate(_) => !pre_vote && epoch == self.state.epoch,
            _ => false,
        };
        if !asking {
            return;
        }
        if granted {
            return self.count_vote(now, from, self.state.epoch, out);
        }
        let (majority, voters) = (self.config.majority(), self.config.voters.len());
        let lost = match &mut self.role {
            Role::Prospective(t) | Role::Candidate(t) => {
                t.reject(from);
                t.lost(majority, voters)
            }
            _ => false,
        };
        if lost {
            // Try again after a random backoff rather than at once, so rivals stop colliding.
            self.deadline = now + election::random_ms(&mut self.rng, 0, self.config.election_backoff_ms_max);
        }
    }

    /// A (pre-)vote for this node in the round of `epoch`; wins the round on a majority.
    fn count_vote(&mut self, now: u64, voter: NodeId, epoch: i32, out: &mut Vec<Action>) {
        if epoch != self.state.epoch {
            return;
        }
        let majority = self.config.majority();
        let (won, pre) = match &mut self.role {
            Role::Prospective(t) => {
                t.grant(voter);
                (t.won(majority), true)
            }
            Role::Candidate(t) => {
                t.grant(voter);
                (t.won(majority), false)
            }
            _ => return,
        };
        match (won, pre) {
            (true, true) => self.become_candidate(now, out),
            (true, false) => self.become_leader(now, out),
            _ => {}
        }
    }

    fn on_begin(&mut self, now: u64, from: NodeId, epoch: i32, out: &mut Vec<Action>) {
        if epoch == self.state.epoch && !self.is_leader() && self.leader() != Some(from) {
            self.become_follower(now, epoch, from, out);
        }
        if let Role::Follower(f) = &mut self.role {
            f.heard_from(from, now);
        }
    }
}
