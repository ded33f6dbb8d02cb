//! Replication by fetching, as KRaft does: a follower sends Fetch (its log end and the epoch of
//! its last entry); the leader answers with entries, or with the epoch and end offset where the
//! follower's log diverges from its own (KIP-320), and the follower truncates there. A voter's
//! fetch offset is its acknowledgement, so a follower fetches again only once what it appended
//! is synced. The leader holds a fetch that finds nothing new until entries or a new high
//! watermark arrive, or `fetch_wait_ms` passes.
//!
//! Its one invariant: a follower's log below its fetch offset matches the leader's (the leader
//! checked the epoch at the fetch offset before counting it), so the high watermark counts
//! only matching, durable prefixes. Never IO, never a clock.

use super::commit;
use super::install::Installing;
use super::node::{Node, Role};
use super::{Action, Body, FetchResult, NodeId, RaftConfig};
use std::collections::BTreeMap;

/// A follower's view of its leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Following {
    pub leader: NodeId,
    /// When the leader last answered (or announced itself), or when this node began to
    /// follow it.
    last_contact: u64,
    /// Whether the leader itself answered, rather than another voter naming it or the quorum
    /// state remembering it: only then does this node refuse pre-votes on its behalf.
    pub(super) heard: bool,
    /// When the Fetch in flight was sent, and its fetch offset (while installing, the
    /// FetchSnapshot in flight and its position).
    pub(super) fetch_sent: Option<(u64, i64)>,
    /// The leader's snapshot being fetched, when this log ends below the leader's start.
    pub(super) installing: Option<Installing>,
}

impl Following {
    pub(super) fn new(leader: NodeId, now: u64) -> Following {
        Following { leader, last_contact: now, heard: false, fetch_sent: None, installing: None }
    }

    pub(super) fn heard_from(&mut self, from: NodeId, now: u64) {
        if from == self.leader {
            self.last_contact = now;
            self.heard = true;
        }
    }

    pub(super) fn timed_out(&self, now: u64, config: &RaftConfig) -> bool {
        now >= self.last_contact + config.fetch_timeout_ms
    }

    /// The fetch timeout, or the retry of the fetch in flight; no retry while writes are
    /// pending, since the next fetch waits for them (their completion is the next event).
    pub(super) fn next_deadline(&self, config: &RaftConfig, writes_pending: bool) -> u64 {
        let timeout = self.last_contact + config.fetch_timeout_ms;
        if writes_pending {
            return timeout;
        }
        self.fetch_sent.map_or(timeout, |(s, _)| timeout.min(s + config.request_timeout_ms))
    }
}

/// A fetch the leader holds until there is something to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parked {
    fetch_offset: i64,
    until: u64,
}

/// The leader's view of its voters and observers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    /// Each voter's acknowledged (durable, matching) log end, once it fetched in this epoch.
    acked: BTreeMap<NodeId, i64>,
    /// When each voter last fetched; the start of the leadership for those that have not.
    fetched_at: BTreeMap<NodeId, u64>,
    /// Voters that have not fetched yet, and when BeginQuorumEpoch was last sent to them.
    announced: BTreeMap<NodeId, u64>,
    parked: BTreeMap<NodeId, Parked>,
    /// The (high watermark, log end) held fetches were last answered or parked against.
    seen: (Option<i64>, i64),
}

impl Leadership {
    pub(super) fn new(config: &RaftConfig, now: u64) -> Leadership {
        let others = || config.voters.iter().copied().filter(|&v| v != config.node_id);
        Leadership {
            acked: BTreeMap::new(),
            fetched_at: others().map(|v| (v, now)).collect(),
            announced: others().map(|v| (v, now)).collect(),
            parked: BTreeMap::new(),
            seen: (None, 0),
        }
    }

    /// KRaft's check-quorum: a majority (the leader counts) fetched within 1.5 fetch timeouts.
    pub(super) fn has_quorum(&self, now: u64, config: &RaftConfig) -> bool {
        let window = config.fetch_timeout_ms * 3 / 2;
        let live = self.fetched_at.values().filter(|&&t| now < t + window).count() + 1;
        live >= config.majority()
    }

    /// Another voter as this leader knows it, once it fetched in this epoch: its acknowledged
    /// log end and when it last fetched (DescribeQuorum's voter state).
    pub fn voter(&self, id: NodeId) -> Option<(i64, u64)> {
        Some((*self.acked.get(&id)?, *self.fetched_at.get(&id)?))
    }

    /// A voter fetched (entries or a snapshot chunk): it is live and knows this leader.
    pub(super) fn fetched(&mut self, voter: NodeId, now: u64) {
        self.fetched_at.insert(voter, now);
        self.announced.remove(&voter);
    }

    pub(super) fn next_deadline(&self, config: &RaftConfig) -> u64 {
        // Quorum is lost when the (majority - 1)-th latest fetcher (the leader counts itself)
        // expires: the only check-quorum time worth waking for.
        let window = config.fetch_timeout_ms * 3 / 2;
        let mut expiries: Vec<u64> = self.fetched_at.values().map(|t| t + window).collect();
        expiries.sort_unstable_by(|a, b| b.cmp(a));
        let mut times: Vec<u64> = config.majority().checked_sub(2).and_then(|i| expiries.get(i)).copied().into_iter().collect();
        times.extend(self.announced.values().map(|t| t + config.request_timeout_ms));
        times.extend(self.parked.values().map(|p| p.until));
        times.into_iter().min().unwrap_or(u64::MAX)
    }
}

impl Node {
    pub(super) fn on_fetch(&mut self, now: u64, from: NodeId, epoch: i32, fetch_offset: i64, last_fetched_epoch: i32, out: &mut Vec<Action>) {
        let my_epoch = self.state.epoch;
        let Role::Leader(lead) = &mut self.role else {
            let reply = Body::FetchResponse { epoch: my_epoch, leader: self.leader(), fetch_offset, high_watermark: None, result: FetchResult::NotLeader };
            return out.push(self.send(from, reply));
        };
        if epoch < my_epoch {
            let reply = Body::FetchResponse { epoch: my_epoch, leader: Some(self.config.node_id), fetch_offset, high_watermark: None, result: FetchResult::FencedEpoch };
            return out.push(self.send(from, reply));
        }
        if self.config.is_voter(from) {
            lead.fetched(from, now);
        }
        if let Some(id) = self.log.start_id().filter(|id| fetch_offset < id.end) {
            let reply = Body::FetchResponse { epoch: my_epoch, leader: Some(self.config.node_id), fetch_offset, high_watermark: self.high_watermark, result: FetchResult::Snapshot(id) };
            return out.push(self.send(from, reply));
        }
        let (e, end) = self.log.end_offset_for(last_fetched_epoch);
        if fetch_offset < 0 || (fetch_offset > 0 && (e != last_fetched_epoch || end < fetch_offset)) {
            let result = FetchResult::Diverging { epoch: e, end_offset: end };
            let reply = Body::FetchResponse { epoch: my_epoch, leader: Some(self.config.node_id), fetch_offset, high_watermark: self.high_watermark, result };
            return out.push(self.send(from, reply));
        }
        if self.config.is_voter(from) {
            lead.acked.insert(from, fetch_offset);
        }
        // Answered in `settle`, once the high watermark this fetch may move is known.
        lead.parked.insert(from, Parked { fetch_offset, until: now + self.config.fetch_wait_ms });
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_fetch_response(&mut self, now: u64, from: NodeId, epoch: i32, leader: Option<NodeId>, fetch_offset: i64, hw: Option<i64>, result: FetchResult, out: &mut Vec<Action>) {
        let from_my_leader = matches!(&self.role, Role::Follower(f) if f.leader == from);
        if epoch == self.state.epoch && from_my_leader && result == FetchResult::NotLeader {
            return self.forget_leader(now); // it resigned (check-quorum)
        }
        if epoch != self.state.epoch || leader != Some(from) || from == self.config.node_id {
            return;
        }
        if !matches!(&self.role, Role::Follower(f) if f.leader == from) {
            if self.is_leader() {
                return;
            }
            self.become_follower(now, epoch, from, out);
        }
        let Role::Follower(f) = &mut self.role else { return };
        f.heard_from(from, now);
        if f.installing.is_some() || f.fetch_sent.map(|(_, o)| o) != Some(fetch_offset) {
            return; // late: a newer fetch, or none, is in flight
        }
        f.fetch_sent = None;
        match result {
            FetchResult::Entries(entries) => {
                let mut appended = Vec::new();
                for e in entries {
                    if e.base_offset != self.log.end() || e.epoch > epoch || self.log.append(e.clone()).is_err() {
                        break;
                    }
                    appended.push(e);
                }
                if !appended.is_empty() {
                    out.push(self.io.write(None, appended, self.log.end()));
                }
                if let Some(hw) = hw {
                    self.raise_high_watermark(hw.min(self.log.end()), out);
                }
            }
            FetchResult::Diverging { epoch: e, end_offset } => {
                // KRaft's rule: cut at the lower of the two ends of that epoch; the next fetch
                // checks again from there, so a longer divergence takes a few rounds.
                let (_, my_end) = self.log.end_offset_for(e);
                let cut = end_offset.min(my_end);
                if cut.max(0) < self.log.end() {
                    let end = self.log.truncate_to(cut.max(0));
                    out.push(self.io.write(Some(end), Vec::new(), end));
                }
            }
            FetchResult::Snapshot(id) => {
                let below = id.end > self.log.end();
                if let (Role::Follower(f), true) = (&mut self.role, below) {
                    f.installing = Some(Installing::new(id));
                }
            }
            FetchResult::FencedEpoch | FetchResult::NotLeader => {}
        }
    }

    pub(super) fn raise_high_watermark(&mut self, hw: i64, out: &mut Vec<Action>) {
        if self.high_watermark.is_none_or(|h| hw > h) && hw > 0 {
            self.high_watermark = Some(hw);
            out.push(Action::Commit { high_watermark: hw });
        }
    }

    /// The leader's periodic work: announce itself again to voters that have not fetched.
    pub(super) fn leader_tick(&mut self, now: u64, out: &mut Vec<Action>) {
        let Role::Leader(lead) = &mut self.role else { return };
        let due: Vec<NodeId> = lead.announced.iter().filter(|(_, &t)| now >= t + self.config.request_timeout_ms).map(|(&v, _)| v).collect();
        for v in due {
            lead.announced.insert(v, now);
            out.push(Action::Send(super::Message { from: self.config.node_id, to: v, body: Body::BeginQuorumEpoch { epoch: self.state.epoch } }));
        }
    }

    /// After every event: the leader moves its high watermark and answers held fetches that
    /// now have something (or whose wait ran out); a follower sends its next fetch once its
    /// writes are synced (or its fetch in flight timed out).
    pub(super) fn settle(&mut self, now: u64, out: &mut Vec<Action>) {
        if self.is_leader() {
            self.advance_high_watermark(out);
            self.answer_parked(now, out);
        }
        let (epoch, fetch_offset, last_fetched_epoch) = (self.state.epoch, self.log.end(), self.log.last_epoch());
        let writes_pending = self.io.log_writes_pending();
        if let Role::Follower(f) = &mut self.role {
            let due = f.fetch_sent.is_none_or(|(s, _)| now >= s + self.config.request_timeout_ms);
            if due && !writes_pending {
                let (sent, body) = match &f.installing {
                    Some(inst) => (inst.position(), inst.request(epoch)),
                    None => (fetch_offset, Body::Fetch { epoch, fetch_offset, last_fetched_epoch }),
                };
                f.fetch_sent = Some((now, sent));
                out.push(Action::Send(super::Message { from: self.config.node_id, to: f.leader, body }));
            }
        }
    }

    fn advance_high_watermark(&mut self, out: &mut Vec<Action>) {
        let Role::Leader(lead) = &self.role else { return };
        let mut ends: Vec<i64> = lead.acked.values().copied().collect();
        ends.push(self.io.synced_end());
        let rule = |own_epoch| self.config.commits_by_count(own_epoch);
        if let Some(hw) = commit::advance(&self.log, self.state.epoch, &ends, self.config.majority(), self.high_watermark, rule) {
            self.raise_high_watermark(hw, out);
        }
    }

    fn answer_parked(&mut self, now: u64, out: &mut Vec<Action>) {
        let (hw, end) = (self.high_watermark, self.log.end());
        let Role::Leader(lead) = &mut self.role else { return };
        let changed = lead.seen != (hw, end);
        lead.seen = (hw, end);
        let ready: Vec<NodeId> = lead.parked.iter().filter(|(_, p)| changed || p.fetch_offset < end || now >= p.until).map(|(&v, _)| v).collect();
        for v in ready {
            let p = lead.parked.remove(&v).expect("listed above");
            let result = match self.log.start_id().filter(|id| p.fetch_offset < id.end) {
                Some(id) => FetchResult::Snapshot(id), // a snapshot was taken while it waited
                None => FetchResult::Entries(self.log.read(p.fetch_offset, self.config.fetch_bytes)),
            };
            let body = Body::FetchResponse { epoch: self.state.epoch, leader: Some(self.config.node_id), fetch_offset: p.fetch_offset, high_watermark: hw, result };
            out.push(Action::Send(super::Message { from: self.config.node_id, to: v, body }));
        }
    }
}
