//! The Raft metadata quorum as a pure state machine, in KRaft's shape (docs/controller.md):
//! voters from a configured set, epochs, pre-vote (KIP-996) then vote with randomized timeouts,
//! check-quorum, replication by followers *fetching* from the leader with diverging-epoch
//! truncation, and a high watermark that commits only entries of the leader's own epoch by
//! counting.
//!
//! A [`Node`] takes events (`tick`, `receive`, `io_done`, `propose`, each with an explicit
//! `now` in ms) and returns [`Action`]s for the shell to perform: persist the quorum state,
//! write (truncate, append, sync) the log, send a message, apply the committed log. Durability
//! is part of the contract: the shell performs `Persist` and `WriteLog` actions in the order
//! given and reports each with `io_done` once it is synced, and the node never grants a vote,
//! counts its own vote or counts its own log towards a commit before the matching sync.
//!
//! Never IO, never a clock, never OS randomness (timeouts come from a seeded ChaCha RNG), never
//! a panic on any message: this module must stay a function of its inputs, so the same inputs
//! replay to the same actions in tests, in the simulator and in the real broker.

mod commit;
mod durability;
mod election;
mod entries;
mod install;
mod node;
mod replication;
pub mod snapshot_file;
pub mod state_file;
pub mod store;
pub mod wire;
#[cfg(test)]
mod tests;

pub use entries::{Entries, Entry};
pub use node::{Node, Role};
pub use replication::Leadership;

use crate::constants::*;
use bytes::Bytes;
use std::collections::BTreeSet;

/// A voter's (or observer's) `node.id`.
pub type NodeId = i32;

/// What a voter must remember across a crash (KRaft's `quorum-state` file): its epoch, whom it
/// voted for in that epoch, and the leader it knows for it. Epoch 0 is "never elected".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuorumState {
    pub epoch: i32,
    pub voted_for: Option<NodeId>,
    pub leader: Option<NodeId>,
}

/// Where a snapshot ends: the log offset after its last record (Raft's lastIncludedIndex + 1)
/// and the epoch of the entry holding that record (lastIncludedTerm). Ordered by offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SnapshotId {
    pub end: i64,
    pub epoch: i32,
}

/// The committed state up to `id.end`, as opaque bytes (the controller's image as records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub id: SnapshotId,
    pub bytes: Bytes,
}

/// A Raft bug the tests plant to prove their checkers find it: the state machine's sweeps, and
/// the simulator through `PlantedBug::Raft*`. Never set in the real build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedRaftBug {
    /// Grants a vote (and counts its own) before the vote is synced to the quorum state.
    VoteBeforeSync,
    /// Commits an entry of an earlier epoch once a majority holds it (Raft paper, figure 8).
    CommitOldEpochByCount,
    /// The shell writes the quorum state (term and vote) over its file without syncing it, and
    /// reports it durable: a power loss forgets a vote already granted (the simulator only).
    StateUnsynced,
}

/// Settings of one node (KRaft names in the docs of each field).
#[derive(Debug, Clone)]
pub struct RaftConfig {
    /// `node.id`.
    pub node_id: NodeId,
    /// `controller.quorum.voters`: the ids that vote and count towards a commit.
    pub voters: BTreeSet<NodeId>,
    /// `quorum.election.timeout.ms`.
    pub election_timeout_ms: u64,
    /// `quorum.fetch.timeout.ms`.
    pub fetch_timeout_ms: u64,
    /// `quorum.election.backoff.max.ms`.
    pub election_backoff_ms_max: u64,
    /// `quorum.request.timeout.ms`.
    pub request_timeout_ms: u64,
    /// How long the leader holds a Fetch that finds nothing new.
    pub fetch_wait_ms: u64,
    /// Bytes of entries per Fetch answer (at least one whole entry is always sent).
    pub fetch_bytes: usize,
    /// The Raft bug planted when the node was built (the tests and the simulator only): the
    /// decisions never test it, they ask the rules below, which it swaps.
    pub plant: Option<PlantedRaftBug>,
}

impl RaftConfig {
    /// KRaft's defaults for `node_id` among `voters`.
    pub fn new(node_id: NodeId, voters: impl IntoIterator<Item = NodeId>) -> RaftConfig {
        RaftConfig {
            node_id,
            voters: voters.into_iter().collect(),
            election_timeout_ms: quorum_election_timeout_ms_default,
            fetch_timeout_ms: quorum_fetch_timeout_ms_default,
            election_backoff_ms_max: quorum_election_backoff_ms_max_default,
            request_timeout_ms: quorum_request_timeout_ms_default,
            fetch_wait_ms: quorum_fetch_wait_ms,
            fetch_bytes: quorum_fetch_bytes,
            plant: None,
        }
    }

    /// Raft's rule for a vote, its own included: it counts, and is sent, only once synced to
    /// the quorum state (planted `VoteBeforeSync`: at once).
    pub(crate) fn vote_waits_for_sync(&self) -> bool {
        self.plant != Some(PlantedRaftBug::VoteBeforeSync)
    }

    /// Raft's commit rule (§5.4.2) for an offset a majority holds, given whether it ends an
    /// entry of the leader's own epoch: only then (planted `CommitOldEpochByCount`: always).
    pub(crate) fn commits_by_count(&self, own_epoch: bool) -> bool {
        own_epoch || self.plant == Some(PlantedRaftBug::CommitOldEpochByCount)
    }

    /// Refuses settings under which the rules do not hold (a retry that fires before a held
    /// fetch is answered, a leader unseated by one lost fetch).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::Config(why));
        if self.voters.is_empty() || self.voters.len() > quorum_voters_max {
            return bad(format!("{} voters; a quorum has 1 to {quorum_voters_max}", self.voters.len()));
        }
        if self.voters.iter().any(|&v| v < 0) || self.node_id < 0 {
            return bad("node ids are never negative".into());
        }
        if self.election_timeout_ms == 0 || self.fetch_wait_ms == 0 {
            return bad("timeouts must be positive".into());
        }
        if !(self.fetch_wait_ms < self.request_timeout_ms && self.request_timeout_ms < self.fetch_timeout_ms) {
            return bad(format!(
                "need fetch wait ({}) < request timeout ({}) < fetch timeout ({})",
                self.fetch_wait_ms, self.request_timeout_ms, self.fetch_timeout_ms
            ));
        }
        Ok(())
    }

    pub fn is_voter(&self, id: NodeId) -> bool {
        self.voters.contains(&id)
    }

    /// Voters needed for a decision: more than half.
    pub fn majority(&self) -> usize {
        self.voters.len() / 2 + 1
    }
}

/// One message between nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub from: NodeId,
    pub to: NodeId,
    pub body: Body,
}

/// KRaft's RPCs, reduced to the fields the rules read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Vote (or, with `pre_vote`, KIP-996's pre-vote: "would you vote for me in `epoch`?",
    /// which changes nothing at the voter). `last_epoch`/`end_offset` describe the candidate's log.
    Vote { epoch: i32, pre_vote: bool, last_epoch: i32, end_offset: i64 },
    /// `epoch` is the voter's own; `leader` the leader it knows in it, if any.
    VoteResponse { epoch: i32, pre_vote: bool, granted: bool, leader: Option<NodeId> },
    /// A new leader announces itself, so voters start fetching at once.
    BeginQuorumEpoch { epoch: i32 },
    /// A follower asks for entries from `fetch_offset` (its log end); the entry before it has
    /// `last_fetched_epoch` (0 for an empty log). For a voter, the offset is also its ack.
    Fetch { epoch: i32, fetch_offset: i64, last_fetched_epoch: i32 },
    /// `fetch_offset` is the request's, so a follower can tell the answer to its fetch in
    /// flight from a late one (Kafka matches them by correlation id).
    FetchResponse { epoch: i32, leader: Option<NodeId>, fetch_offset: i64, high_watermark: Option<i64>, result: FetchResult },
    /// A follower told to catch up from the snapshot `end` asks for its bytes from `position`
    /// (KRaft's FetchSnapshot).
    FetchSnapshot { epoch: i32, end: i64, position: u64 },
    /// Up to `quorum_snapshot_chunk_bytes` of the leader's newest snapshot (`snapshot`; none if
    /// it has none) from `position`, of `size` bytes in all.
    FetchSnapshotResponse { epoch: i32, leader: Option<NodeId>, snapshot: Option<SnapshotId>, position: u64, size: u64, chunk: Bytes },
}

impl Body {
    /// The sender's epoch, or for a (pre-)vote request the epoch it asks a vote in.
    pub fn epoch(&self) -> i32 {
        match self {
            Body::Vote { epoch, .. }
            | Body::VoteResponse { epoch, .. }
            | Body::BeginQuorumEpoch { epoch }
            | Body::Fetch { epoch, .. }
            | Body::FetchResponse { epoch, .. }
            | Body::FetchSnapshot { epoch, .. }
            | Body::FetchSnapshotResponse { epoch, .. } => *epoch,
        }
    }
}

/// What a Fetch found at the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchResult {
    /// Entries from the fetch offset (maybe none): the follower's log matches up to it.
    Entries(Vec<Entry>),
    /// The follower's log differs from the leader's from `end_offset` on, or earlier: the
    /// leader's last epoch `<= last_fetched_epoch` is `epoch` and ends at `end_offset` (KIP-320).
    Diverging { epoch: i32, end_offset: i64 },
    /// The fetch offset is below the leader's log start: catch up from this snapshot first.
    Snapshot(SnapshotId),
    /// The fetch carried an older epoch; the response's epoch and leader are the current ones.
    FencedEpoch,
    /// The receiver does not lead this epoch.
    NotLeader,
}

/// What the shell must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write `state` durably (the quorum-state file), then report `io_done(id)`.
    Persist { id: u64, state: QuorumState },
    /// Cut the log at `truncate_to` (if any), append `entries`, sync, then report `io_done(id)`.
    WriteLog { id: u64, truncate_to: Option<i64>, entries: Vec<Entry> },
    /// A follower received the leader's whole snapshot: write it durably, replace the log with an
    /// empty one starting at its end and the applied state with the snapshot's, then report
    /// `io_done(id)`. Only ever for a snapshot ending above the log's end.
    InstallSnapshot { id: u64, snapshot: Snapshot },
    Send(Message),
    /// Every entry below `high_watermark` is committed: apply it. Only ever grows.
    Commit { high_watermark: i64 },
}

/// A refused call; never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Kafka NOT_CONTROLLER: only the leader takes proposals; `leader` is the one known.
    #[error("not the leader of epoch {epoch}; leader is {leader:?}")]
    NotLeader { epoch: i32, leader: Option<NodeId> },
    /// A proposal must carry at least one record.
    #[error("empty proposal")]
    Empty,
    /// A proposal's batch is larger than `metadata_batch_bytes_max`.
    #[error("proposal of {bytes} bytes exceeds {max}")]
    TooLarge { bytes: usize, max: usize },
    /// The shell reported an IO completion out of order or for an unknown action.
    #[error("io_done({got}) but the oldest pending IO is {expected:?}")]
    IoOrder { got: u64, expected: Option<u64> },
    /// Restored state that cannot be (entries not dense, an entry newer than the epoch).
    #[error("restored state is inconsistent: {0}")]
    Restore(String),
    #[error("invalid raft config: {0}")]
    Config(String),
}
