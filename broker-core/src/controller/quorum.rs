//! The controller on the Raft metadata quorum: a [`raft::Node`] and its [`RaftStore`] over the
//! metadata log `<data>/__cluster_metadata-0/` (one v2 batch per Raft entry, one Kafka record
//! per [`MetadataRecord`], JSON value), and the [`Controller`] whose decisions become entries.
//!
//! Every voter applies committed records to its `committed` image. The leader becomes the
//! *active* controller once the first entry of its epoch (the LeaderChange record) is
//! committed: at that moment its committed image is its whole log, and a fresh [`Controller`]
//! starts from it (every broker gets a new session, as after a controller restart). While active,
//! each decision is proposed as one entry and applied to the active controller at once, so the
//! next decision sees it exactly as replay will; the request that caused it is answered only
//! once the entry is committed ([`Quorum::is_committed`]). A leader that loses its leadership
//! drops the active controller and what it proposed that never committed.
//!
//! Snapshots (docs/controller.md, "Snapshots"): once the committed bytes applied since the last
//! one pass `snapshot_bytes_between` ([`SnapshotPolicy`]), the committed image is written as a
//! snapshot ending at the high watermark, and the node and the store drop the log before it. A
//! restart loads the newest snapshot and replays only the entries after it; a follower below the
//! leader's log start installs the leader's snapshot, which replaces its committed image.
//!
//! The store's IO is done here, synchronously through [`Disk`], in the order the node asks, and
//! each completion reported at once (the node's durability contract); messages to other voters
//! and lines for the operator wait in the quorum until the node takes them (`outbox`,
//! `take_notes`) at the end of the decision that made them — a tick, a message, a controller
//! API's commit — and returns them as actions. A store error drops the node and the store and
//! opens both again from the disk, as after a crash. Never a clock, never a socket.

use crate::broker::Level;
use crate::observe::Observation;
use super::raft::store::RaftStore;
use super::raft::{Action, Error as RaftError, Message, Node, NodeId, PlantedRaftBug, RaftConfig, Snapshot, SnapshotId};
use super::snapshot::{self, SnapshotPolicy};
use super::{Controller, ControllerConfig};
use crate::constants::quorum_outbox_messages_max;
use crate::kafka::Code;
use crate::log::{FlushPolicy, LogConfig};
use crate::metadata::{decode_records, Image, MetadataRecord};
use crate::storage::Disk;
use bytes::{Bytes, BytesMut};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Quorum {
    config: ControllerConfig,
    raft: RaftConfig,
    disk: Arc<dyn Disk>,
    data_dir: PathBuf,
    node: Node,
    store: RaftStore,
    /// Every committed record applied, on every voter.
    committed: Image,
    /// The decisions' state; meaningful only while `active`.
    controller: Controller,
    /// The epoch this node leads as the active controller.
    active: Option<i32>,
    /// This node's leadership: its epoch and where the epoch's first entry ends.
    leading: Option<(i32, i64)>,
    /// Active on a metadata log that holds nothing yet: the operator's bootstrap credentials
    /// are owed, first (`ControllerConfig::scram_bootstrap`).
    bootstrap_due: bool,
    /// Messages for other voters, sent by the shell.
    outbox: VecDeque<Message>,
    /// The store failed and could not be opened again: every tick tries, nothing else acts.
    broken: bool,
    /// When to snapshot the committed image next.
    policy: SnapshotPolicy,
    /// Lines for the operator since the node last took them ([`Quorum::take_notes`]).
    notes: Vec<(Level, String)>,
    /// How long this voter's proposals took to commit (metrics).
    latency: super::latency::CommitLatency,
    /// Brokers that are no voters and fetch the metadata log from this leader (KRaft's
    /// observers): the epoch they were seen in, and each one's fetch offset and when.
    observers: (i32, BTreeMap<NodeId, (i64, u64)>),
}

/// Why a decision was not proposed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// NOT_CONTROLLER (41): this node is not the active controller; `leader` is the leader it knows.
    #[error("this node is not the active controller (the quorum leader is {leader:?})")]
    NotController { leader: Option<NodeId> },
    /// KAFKA_STORAGE_ERROR (56): the metadata log failed; it was reopened from the disk.
    #[error("metadata log: {0}")]
    Storage(String),
    /// RECORD_LIST_TOO_LARGE (18): the decision's records exceed one entry's limit.
    #[error("{0}")]
    TooLarge(String),
}

impl CommitError {
    pub fn kafka_error(&self) -> Code {
        match self {
            CommitError::NotController { .. } => Code::NotController,
            CommitError::Storage(_) => Code::KafkaStorageError,
            CommitError::TooLarge(_) => Code::RecordListTooLarge,
        }
    }
}

pub(super) fn log_config() -> LogConfig {
    // Every batch synced before it counts; retention never (snapshots would be needed first).
    // One decision is one batch, and a decision over thousands of partitions (a topic of 10,000
    // partitions, fencing a broker that leads thousands) is megabytes of records.
    LogConfig { flush: FlushPolicy::EveryBatch, retention_ms: -1, retention_bytes: -1, max_message_bytes: crate::constants::metadata_batch_bytes_max, ..LogConfig::default() }
}

impl Quorum {
    /// Opens (or creates) the metadata log and quorum state under `data_dir` and restarts the
    /// Raft node from them. A lone voter elects itself here, so it is active once open.
    pub fn open(disk: Arc<dyn Disk>, data_dir: &Path, config: ControllerConfig, raft: RaftConfig, now: u64) -> Result<(Quorum, Vec<String>), String> {
        let (store, restored) = RaftStore::open(disk.clone(), data_dir, now)?;
        let mut notes = restored.notes;
        let committed = match &restored.snapshot {
            Some(s) => snapshot::decode(&s.bytes, s.id.end).map_err(|e| format!("metadata snapshot {:?}: {e}", s.id))?,
            None => Image::default(),
        };
        let from = restored.snapshot.as_ref().map(|s| s.id);
        notes.push(format!("metadata log: snapshot {from:?}, {} entries after it, quorum state {:?}", restored.entries.len(), restored.state));
        // Election timeouts differ per node and per start; `now` is simulated time under madsim.
        let seed = now ^ ((raft.node_id as u64) << 48);
        config.observer.see(Observation::RaftState { node: raft.node_id, restored: true, state: &restored.state });
        let node = Node::restart_from(raft.clone(), restored.state, restored.snapshot, restored.entries, seed, now).map_err(|e| e.to_string())?;
        let controller = Controller::new(config.clone(), Image::default(), now);
        let policy = SnapshotPolicy::new(config.snapshot_bytes_between);
        let mut q = Quorum { latency: Default::default(), config, raft, disk, data_dir: data_dir.to_path_buf(), node, store, committed, controller, active: None, leading: None, bootstrap_due: false, outbox: VecDeque::new(), broken: false, policy, notes: Vec::new(), observers: (-1, BTreeMap::new()) };
        let actions = q.node.tick(now);
        q.perform(actions, now)?;
        q.settle_role(now);
        Ok((q, notes))
    }

    /// The active controller's decisions (see [`Quorum::is_active`]).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.controller
    }

    /// Whether this node is the active controller: the leader, its epoch's first entry committed.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// The epoch this node is the active controller in.
    pub fn active_epoch(&self) -> Option<i32> {
        self.active
    }

    /// The quorum leader this node knows (itself included). None while the metadata log is
    /// broken: the node is the one from before the failure and may still think it leads, but
    /// it answers nothing, so naming it would send this broker's controller link (and every
    /// broker it answers) back to a controller that is gone.
    pub fn leader(&self) -> Option<NodeId> {
        if self.broken {
            return None;
        }
        self.node.leader()
    }

    pub fn raft(&self) -> &Node {
        &self.node
    }

    /// The offset the next proposed record gets.
    pub fn end_offset(&self) -> i64 {
        self.node.log().end()
    }

    /// How long this voter's proposals took to commit.
    pub fn commit_latency(&self) -> &super::latency::CommitLatency {
        &self.latency
    }

    /// Everything below this offset is committed (0 while unknown).
    pub fn committed_end(&self) -> i64 {
        self.node.high_watermark().unwrap_or(0)
    }

    /// Whether the record at `offset` (and everything before it) is committed.
    pub fn is_committed(&self, offset: i64) -> bool {
        offset < self.committed_end()
    }

    /// The committed image (every voter's).
    pub fn committed(&self) -> &Image {
        &self.committed
    }

    /// Proposes `records` as one entry and applies them to the active controller. Returns the
    /// offset of the last record (of the last proposed one, if `records` is empty): the caller
    /// answers once [`Quorum::is_committed`] says so, in this same epoch.
    pub fn commit(&mut self, records: Vec<MetadataRecord>, now: u64) -> Result<i64, CommitError> {
        if self.broken {
            return Err(CommitError::Storage("the metadata log failed and could not be opened again".into()));
        }
        if self.active.is_none() {
            return Err(CommitError::NotController { leader: self.node.leader() });
        }
        if records.is_empty() {
            return Ok(self.end_offset() - 1);
        }
        let records = match std::mem::take(&mut self.bootstrap_due) {
            true => self.bootstrap_records().into_iter().chain(records).collect(),
            false => records,
        };
        let values: Vec<Vec<u8>> = records.iter().map(|r| r.encode()).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let (base, actions) = self.node.propose(now, &refs).map_err(|e| match e {
            RaftError::NotLeader { leader, .. } => CommitError::NotController { leader },
            RaftError::TooLarge { .. } => CommitError::TooLarge(e.to_string()),
            other => CommitError::Storage(other.to_string()),
        })?;
        for (i, r) in records.iter().enumerate() {
            self.controller.apply(base + i as i64, r);
        }
        let last = base + records.len() as i64 - 1;
        self.latency.proposed(last, now);
        self.step(actions, now).map_err(CommitError::Storage)?;
        Ok(last)
    }

    /// The bootstrap credentials as records.
    fn bootstrap_records(&self) -> Vec<MetadataRecord> {
        self.config.scram_bootstrap.iter().map(|(user, credential)| MetadataRecord::ScramCredential { user: user.clone(), credential: credential.clone() }).collect()
    }

    /// A message from another voter.
    pub fn receive(&mut self, now: u64, m: Message) -> Result<(), String> {
        if self.broken {
            return Err("metadata log failed; not taking messages until it opens again".into());
        }
        let actions = self.node.receive(now, m);
        self.step(actions, now)
    }

    /// The node's timers, then (while active) the controller's: fences brokers whose sessions
    /// expired and elects leaders, proposing what that decides.
    pub fn tick(&mut self, now: u64) -> Result<(), String> {
        if self.broken {
            self.reopen(now);
            if self.broken {
                return Err("metadata log still failing".into());
            }
        }
        let actions = self.node.tick(now);
        self.step(actions, now)?;
        if self.bootstrap_due && self.active.is_some() {
            self.bootstrap_due = false;
            self.commit(self.bootstrap_records(), now).map_err(|e| e.to_string())?;
        }
        if self.active.is_some() {
            let records = self.controller.tick(now);
            if !records.is_empty() {
                self.commit(records, now).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// When [`Quorum::tick`] next has work.
    pub fn next_deadline(&self) -> Option<u64> {
        let controller = self.active.and_then(|_| self.controller.next_deadline());
        Some(self.node.next_deadline()).into_iter().chain(controller).min()
    }

    /// The messages to send to other voters, oldest first.
    pub fn outbox(&mut self) -> Vec<Message> {
        self.outbox.drain(..).collect()
    }

    /// The lines for the operator since the last call (snapshots, role changes, reopens).
    pub fn take_notes(&mut self) -> Vec<(Level, String)> {
        std::mem::take(&mut self.notes)
    }

    /// A broker that is no voter fetched the metadata log from `fetch_offset` at `now`.
    pub fn observed(&mut self, id: NodeId, fetch_offset: i64, now: u64) {
        let epoch = self.node.epoch();
        if self.observers.0 != epoch {
            self.observers = (epoch, BTreeMap::new());
        }
        if !self.raft.is_voter(id) && id >= 0 {
            self.observers.1.insert(id, (fetch_offset, now));
        }
    }

    /// The observers seen in this epoch: each one's last fetch offset and when (DescribeQuorum).
    pub fn observers(&self) -> impl Iterator<Item = (NodeId, i64, u64)> + '_ {
        let current = self.observers.0 == self.node.epoch();
        self.observers.1.iter().filter(move |_| current).map(|(&id, &(offset, at))| (id, offset, at))
    }

    /// This voter's Raft leadership, while it leads (DescribeQuorum).
    pub fn leadership(&self) -> Option<&super::raft::Leadership> {
        match self.node.role() {
            super::raft::Role::Leader(lead) => Some(lead),
            _ => None,
        }
    }

    /// The first offset the log holds: below it, readers need [`Quorum::snapshot`].
    pub fn log_start(&self) -> i64 {
        self.node.log().start()
    }

    /// The newest durable snapshot, which the log starts after.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.node.snapshot()
    }

    /// Committed metadata from `offset` (at or above [`Quorum::log_start`]): whole entries, at
    /// least one if any, about `max_bytes`.
    pub fn read(&self, offset: i64, max_bytes: usize) -> Bytes {
        let end = self.committed_end();
        let mut out = BytesMut::new();
        for e in self.node.log().read(offset.max(0), max_bytes).iter().take_while(|e| e.next_offset <= end) {
            out.extend_from_slice(&e.batch);
        }
        out.freeze()
    }

    /// Performs the node's actions, then settles the role; after a store error, reopens.
    fn step(&mut self, actions: Vec<Action>, now: u64) -> Result<(), String> {
        let done = self.perform(actions, now);
        if let Err(e) = &done {
            self.reopen(now);
            return Err(e.clone());
        }
        self.settle_role(now);
        if let Err(e) = self.maybe_snapshot(now) {
            self.reopen(now);
            return Err(e);
        }
        done
    }

    /// Snapshots the committed image once the policy says so and it ends an entry above the
    /// log start (it always does after a Commit: high watermarks end entries).
    fn maybe_snapshot(&mut self, now: u64) -> Result<(), String> {
        let end = self.committed.offset + 1;
        let log = self.node.log();
        if !self.policy.due() || end <= log.start() || !log.is_boundary(end) || self.node.high_watermark().is_none_or(|hw| end > hw) {
            return Ok(());
        }
        let Some(epoch) = log.epoch_at(end - 1) else { return Ok(()) };
        let snapshot = Snapshot { id: SnapshotId { end, epoch }, bytes: snapshot::encode(&self.committed) };
        self.store.take_snapshot(&snapshot, now)?;
        self.node.snapshot_taken(snapshot).map_err(|e| e.to_string())?;
        self.policy.taken();
        self.notes.push((Level::Info, format!("metadata snapshot at offset {end} (epoch {epoch}); log now starts there")));
        Ok(())
    }

    /// Does `actions` in order: store IO (reporting each completion at once, and doing what
    /// that releases after the rest), sends into the outbox, commits into the image.
    fn perform(&mut self, actions: Vec<Action>, now: u64) -> Result<(), String> {
        let mut queue: VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Send(m) => {
                    // Raft survives lost messages; an outbox nobody drains must not grow forever.
                    if self.outbox.len() >= quorum_outbox_messages_max {
                        self.outbox.pop_front();
                    }
                    self.outbox.push_back(m);
                }
                Action::Commit { high_watermark } => self.apply_committed(high_watermark, now),
                Action::Persist { id, state } if self.raft.plant == Some(PlantedRaftBug::StateUnsynced) => {
                    let dir = self.data_dir.join(crate::metadata::metadata_dir);
                    super::raft::state_file::write_unsynced(self.disk.as_ref(), &dir, &state).map_err(|e| format!("{}: {e}", dir.display()))?;
                    self.config.observer.see(Observation::RaftState { node: self.config.node_id, restored: false, state: &state });
                    queue.extend(self.node.io_done(now, id).map_err(|e| e.to_string())?);
                }
                Action::InstallSnapshot { id, snapshot } => {
                    let image = snapshot::decode(&snapshot.bytes, snapshot.id.end).map_err(|e| format!("installing metadata snapshot {:?}: {e}", snapshot.id))?;
                    self.store.install_snapshot(&snapshot, now)?;
                    self.committed = image;
                    self.policy.taken();
                    self.notes.push((Level::Info, format!("metadata snapshot {:?} installed from the leader", snapshot.id)));
                    queue.extend(self.node.io_done(now, id).map_err(|e| e.to_string())?);
                }
                io => {
                    if let Some(id) = self.store.perform(&io, now)? {
                        if let Action::Persist { state, .. } = &io {
                            self.config.observer.see(Observation::RaftState { node: self.config.node_id, restored: false, state });
                        }
                        queue.extend(self.node.io_done(now, id).map_err(|e| e.to_string())?);
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies committed records below `high_watermark` to the committed image.
    fn apply_committed(&mut self, high_watermark: i64, now: u64) {
        self.latency.committed(high_watermark, now);
        let from = self.committed.offset + 1;
        let (me, epoch, leader) = (self.config.node_id, self.node.epoch(), self.node.is_leader());
        for e in self.node.log().read(from, usize::MAX).iter().take_while(|e| e.base_offset < high_watermark) {
            if e.base_offset >= from {
                self.config.observer.see(Observation::RaftCommitted { node: me, node_epoch: epoch, leader, entry: e });
            }
            self.policy.applied(e.batch.len());
            match decode_records(&e.batch) {
                Ok(records) => {
                    for (o, r) in records.iter().filter(|(o, _)| *o >= from && *o < high_watermark) {
                        self.committed.apply(*o, r);
                        if let MetadataRecord::Partition { topic, partition, isr, leader, .. } = r {
                            let id = self.committed.topics.get(topic).map_or([0; 16], |t| t.id);
                            self.config.observer.see(Observation::PartitionCommitted { topic, topic_id: id, partition: *partition, offset: *o, leader: *leader, isr, now });
                        }
                        if let MetadataRecord::FenceBroker { id, .. } = r {
                            self.config.observer.see(Observation::BrokerFenced { broker: *id, offset: *o, now });
                        }
                    }
                }
                Err(why) => {
                    // Cannot be (the batch's CRC was checked); skipped so the image moves on.
                    self.notes.push((Level::Error, format!("metadata log: entry at {}: {why}", e.base_offset)));
                    self.committed.offset = e.next_offset - 1;
                }
            }
        }
    }

    /// Starts or stops being the active controller as the node's role moved.
    fn settle_role(&mut self, now: u64) {
        if !self.node.is_leader() {
            if let Some(epoch) = self.active.take() {
                self.notes.push((Level::Info, format!("controller: no longer active (epoch {epoch}); the quorum leader is {:?}", self.node.leader())));
            }
            self.leading = None;
            return;
        }
        let epoch = self.node.epoch();
        if self.leading.is_none_or(|(e, _)| e != epoch) {
            // Just elected: the epoch's LeaderChange entry is the log's last.
            self.leading = Some((epoch, self.node.log().end()));
            self.config.observer.see(Observation::RaftElected { node: self.config.node_id, epoch, log: self.node.log() });
            self.active = None;
        }
        let first_end = self.leading.map_or(i64::MAX, |(_, end)| end);
        if self.active.is_none() && self.committed_end() >= first_end {
            // Everything in the log is committed now: the image is the whole log.
            self.controller = Controller::new(self.config.clone(), self.committed.clone(), now);
            self.active = Some(epoch);
            self.bootstrap_due = self.committed.is_fresh() && !self.config.scram_bootstrap.is_empty();
            self.notes.push((Level::Info, format!("controller: active in epoch {epoch} from metadata offset {}", self.committed.offset)));
        }
    }

    /// After a store error memory is unsure of the disk: open both again, as after a crash.
    fn reopen(&mut self, now: u64) {
        match Quorum::open(self.disk.clone(), &self.data_dir, self.config.clone(), self.raft.clone(), now) {
            Ok((mut fresh, notes)) => {
                // The lines not yet taken outlive the old node, ahead of the fresh one's.
                let mut kept = std::mem::take(&mut self.notes);
                kept.extend(notes.into_iter().map(|n| (Level::Warn, format!("controller reopened: {n}"))));
                kept.append(&mut fresh.notes);
                fresh.notes = kept;
                *self = fresh;
            }
            Err(e) => {
                // Memory may hold proposals the disk never took: no more decisions, no more
                // messages, until a tick opens it again (a disk that heals).
                self.notes.push((Level::Error, format!("controller: metadata log still failing: {e}")));
                (self.active, self.leading, self.broken) = (None, None, true);
            }
        }
    }
}
