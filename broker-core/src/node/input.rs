//! Everything the shell tells a node besides its requests, as one typed [`Input`] to one entry,
//! [`Node::input`]: the timers it keeps, the completions of the IO the node asked for, and
//! what the peer links heard from the controller. What comes back is the [`Action`]s to perform,
//! the periodic checkpoint's file-system sync and the replicas' open jobs among them
//! ([`Action::SyncCheckpoint`], [`Action::Open`]). The
//! links and timers only carry: how an answer is read (an ISR change lost, refused, stale or
//! committed) is the broker's decision, by its rules. Never a socket, a clock or a sleep here.

use super::{coordinator_link, coordinator_load, FetcherInput, LoadDone, Node, Parts};
use crate::broker::{Action, IsrReply, Level, StagedCheckpoints};
use crate::constants::checkpoint_logs_per_decision;
use crate::controller::raft::Message;
use crate::log::{LogError, Swapped, SyncStamp};
use crate::metadata::MetadataRecord;

/// One thing the shell tells a node (each with the `now` of [`Node::input`]).
#[derive(Debug)]
pub enum Input {
    /// The node's timers came due: the broker's (flush.ms, retention, failed logs reopened, ISR
    /// expiry), then the group coordinator's (sessions, rebalance deadlines, loading, expiry)
    /// and the transaction coordinator's (timeouts, expiry, markers to send again);
    /// with `checkpoint`, the periodic checkpoint's first half too.
    Tick { checkpoint: bool },
    /// The log cleaner's turn: one bounded step ([`Node::cleaner_due`] says when the next is).
    Clean,
    /// A sync the node asked for ([`Action::Sync`]) ran, with `result`.
    Synced { topic: String, partition: i32, stamp: SyncStamp, result: Result<(), LogError> },
    /// A cleaning step the node asked for ([`Action::Clean`]) ran.
    Cleaned { topic: String, partition: i32, done: crate::log::Cleaned },
    /// A cleaning swap the node asked for ([`Action::Swap`]) ran.
    Swapped { topic: String, partition: i32, done: Swapped },
    /// A truncation's job the node asked for ([`Action::Truncate`]) ran.
    Truncated { topic: String, partition: i32, done: crate::broker::Truncated },
    /// A coordinator's load step the node asked for ([`Action::Load`]) ran.
    Loaded { topic: String, partition: i32, done: LoadDone },
    /// An open job the node asked for ([`Action::Open`]) ran.
    Opened(crate::broker::Opened),
    /// A block of producer ids the node asked for ([`Action::PersistProducerIds`]) was
    /// persisted (or not: `result`).
    ProducerIdsPersisted { limit: i64, result: Result<(), LogError> },
    /// A periodic checkpoint's stage stopped at its bound after this log
    /// ([`crate::broker::StagedCheckpoints::resume`]): stage the next logs.
    CheckpointMore { after: (std::sync::Arc<str>, i32) },
    /// The file-system sync of a staged checkpoint ([`Action::SyncCheckpoint`]) ran: commit it.
    CheckpointSynced { staged: StagedCheckpoints, result: Result<(), std::io::Error> },
    /// The process is stopping: flush and checkpoint every partition.
    Shutdown,
    /// The controller registered this process with broker epoch `epoch`.
    Registered { epoch: i64 },
    /// What the controller link heard of the ISR change proposed for a partition.
    IsrReply { topic: String, partition: i32, reply: IsrReply },
    /// A run of the metadata log, applied whole (a replay only once it reached the log's end).
    Metadata(Vec<(i64, MetadataRecord)>),
    /// The answer of a transaction coordinator's WriteTxnMarkers ([`Action::SendMarkers`]):
    /// each marker's partition and its error (None: written), or why none came.
    MarkersAnswered { request: u64, result: MarkersResult },
    /// The answer of a share-partition leader's state read or write ([`Action::ShareState`]):
    /// a read's state, a write's `Ok(None)`, or the error (a lost link: COORDINATOR_NOT_AVAILABLE).
    ShareStateAnswered { request: u64, result: Result<Option<crate::group::share_state::Stored>, crate::kafka::Code> },
    /// The answer of a share-partition leader's question about a group's members
    /// ([`Action::ShareState`] of `What::Members`): their ids, or the error.
    ShareMembersAnswered { request: u64, result: Result<std::collections::BTreeSet<String>, crate::kafka::Code> },
    /// A client connection (the id its requests' [`crate::security::acl::Caller`] carried)
    /// closed: the share sessions last used on it end.
    ConnectionClosed { connection: u64 },
    /// The controller refused to auto-create this topic: Metadata may ask again.
    AutoCreateRefused(String),
    /// For the metadata quorum: decided under the quorum's own lock, never the broker's.
    Quorum(QuorumInput),
    /// For the replica fetcher of `leader`: its next round, or the leader's answer.
    Fetcher { leader: i32, input: FetcherInput },
}

pub use crate::txn::markers::Answered as MarkersResult;

/// What the shell tells a voter's metadata quorum.
#[derive(Debug)]
pub enum QuorumInput {
    /// Its timers came due: the Raft voter's, then the active controller's session fencing.
    Tick,
    /// A Raft message from another voter.
    Message(Message),
}

impl Node {
    /// The one entry for everything but requests: decides `input` at `now` and returns what
    /// the shell must do.
    pub fn input(&self, input: Input, now: u64) -> Vec<Action> {
        if let Input::Quorum(input) = input {
            return self.quorum_input(input, now);
        }
        let mut parts = self.parts();
        if let Input::Fetcher { leader, input } = input {
            return Node::fetcher_input(&mut parts, leader, input, now);
        }
        let Parts { broker, groups, txns, shares, .. } = &mut *parts;
        let mut actions = match input {
            Input::Tick { checkpoint } => {
                let mut actions = broker.tick(now);
                let mut staged = None;
                if checkpoint {
                    let (failures, s) = broker.checkpoint_stage(None, checkpoint_logs_per_decision);
                    actions.extend(failures);
                    staged = s;
                }
                actions.extend(coordinator_link::tick(broker, groups, now));
                actions.extend(coordinator_link::tick(broker, txns, now));
                actions.extend(super::share_handlers::tick(broker, shares, now));
                actions.extend(staged.map(Action::SyncCheckpoint));
                actions
            }
            Input::Clean => broker.clean_step(now),
            Input::Synced { topic, partition, stamp, result } => broker.synced(&topic, partition, stamp, result, now),
            Input::Cleaned { topic, partition, done } => broker.cleaned(&topic, partition, done, now),
            Input::Swapped { topic, partition, done } => broker.swapped(&topic, partition, done, now),
            Input::Truncated { topic, partition, done } => broker.truncated(&topic, partition, done, now),
            Input::Loaded { topic, partition, done } if topic == crate::group::offsets_topic => coordinator_load::loaded(broker, groups, partition, done, now),
            Input::Loaded { topic, partition, done } if topic == crate::txn::transaction_state_topic => coordinator_load::loaded(broker, txns, partition, done, now),
            Input::Loaded { topic, .. } => vec![Action::Log(Level::Error, format!("a load step of {topic}, which no coordinator keeps"))],
            Input::CheckpointMore { after } => {
                let (mut actions, staged) = broker.checkpoint_stage(Some(&after), checkpoint_logs_per_decision);
                actions.extend(staged.map(Action::SyncCheckpoint));
                actions
            }
            Input::CheckpointSynced { staged, result } => broker.checkpoint_commit(staged, result),
            Input::Opened(done) => broker.opened(done, now),
            Input::ProducerIdsPersisted { limit, result } => broker.producer_ids_persisted(limit, result),
            Input::Shutdown => {
                let mut actions = broker.stop_opens();
                actions.extend(broker.checkpoint(now));
                actions
            }
            Input::Registered { epoch } => broker.registered(epoch, now),
            Input::IsrReply { topic, partition, reply } => broker.isr_reply(&topic, partition, &reply, now),
            Input::Metadata(run) => {
                let actions = broker.apply_metadata_batch(&run, now);
                if run.iter().any(|(_, r)| matches!(r, crate::metadata::MetadataRecord::ClientQuota { .. })) || self.throttles().any() != !broker.image().quotas.is_empty() {
                    self.throttles().set_quotas(broker.image().quotas.clone());
                }
                actions
            }
            Input::MarkersAnswered { request, result } => coordinator_link::markers_answered(broker, txns, request, result, now),
            Input::ShareStateAnswered { request, result } => super::share_handlers::state_answered(broker, shares, request, result, now),
            Input::ShareMembersAnswered { request, result } => super::share_handlers::members_answered(broker, shares, request, result, now),
            Input::ConnectionClosed { connection } => super::share_handlers::connection_closed(broker, shares, connection, now),
            Input::AutoCreateRefused(topic) => {
                broker.auto_create_failed(&topic);
                Vec::new()
            }
            // Decided above: under the quorum's lock, and by the fetcher.
            Input::Quorum(_) | Input::Fetcher { .. } => Vec::new(),
        };
        // A mark moved or a leadership ended: the coordinators' writes may be settled.
        parts.settle(now, &mut actions);
        actions
    }

    /// One input of the metadata quorum, under its lock alone: what it did comes out
    /// as the messages to send, the operator's lines, and whether the metadata moved.
    fn quorum_input(&self, input: QuorumInput, now: u64) -> Vec<Action> {
        let Some(mut q) = self.controller() else {
            return vec![Action::Log(Level::Error, "a metadata quorum input reached a node that is not a voter".into())];
        };
        let before = (q.committed_end(), q.end_offset(), q.active_epoch());
        let decided = match input {
            QuorumInput::Tick => q.tick(now),
            QuorumInput::Message(m) => q.receive(now, m),
        };
        let mut actions = Vec::new();
        drain(self, &mut q, &mut actions);
        if let Err(e) = decided {
            actions.push(Action::Log(Level::Error, format!("controller: {e}")));
        }
        if let Some(epoch) = q.active_epoch() {
            let node = q.controller().config().node_id;
            q.controller().config().observer.see(crate::observe::Observation::ActiveController { node, epoch, now });
        }
        if before != (q.committed_end(), q.end_offset(), q.active_epoch()) {
            actions.push(Action::MetadataMoved);
        }
        actions
    }

    /// After a controller API's decision: the messages and lines its commits left in the quorum
    /// leave with it, as a tick's or a message's do, instead of waiting for the next of those.
    pub fn quorum_decided(&self, out: &mut Vec<Action>) {
        if let Some(mut q) = self.controller() {
            drain(self, &mut q, out);
        }
    }

    /// When the log cleaner's next turn ([`Input::Clean`]) is due.
    pub fn cleaner_due(&self) -> u64 {
        self.parts().broker.cleaner_due()
    }
}

/// What a quorum decision left for the shell: the Raft messages to send, then the operator's
/// lines; and what it knows now, published to the node's requests.
fn drain(node: &Node, q: &mut super::Quorum, out: &mut Vec<Action>) {
    node.publish_quorum_view(q);
    out.extend(q.outbox().into_iter().map(Action::Raft));
    out.extend(q.take_notes().into_iter().map(|(level, line)| Action::Log(level, line)));
}
