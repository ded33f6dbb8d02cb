//! Time-driven work (flush.ms, retention bounded by the high watermark, reopening logs that
//! failed, checkpoints) and this node's producer ids, allocated from blocks persisted before
//! use so a restart never hands one out twice; the next block is persisted ahead by a job the
//! tick hands out.

use super::{Action, Broker, Error, Level};
use crate::constants::failed_log_reopen_ms;
use crate::log::{dir, LogError};
use crate::storage::Disk;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Producer ids are persisted in blocks of this many, so allocation writes the disk once per
/// block and a restart never hands out an id twice (it skips the rest of the block).
pub const producer_id_block: i64 = 1000;

/// Each node allocates producer ids from its own range, `node_id << producer_id_node_shift`
/// onwards, so ids are unique in the cluster without asking the controller (2^32 per node).
pub const producer_id_node_shift: u32 = 32;

/// The producer-id file under the data directory.
const producer_ids_file: &str = "producer-ids";

/// The next block is persisted once no more than this many ids of the current one are left
/// (Kafka's producer-id manager asks for its next block at 90% too): a job off the node's
/// gate, handed out by the decision that took the id, well before the block runs out.
const producer_id_prefetch: i64 = producer_id_block / 10;

/// The ids this node hands out: `next`, below the end of the block persisted for it (so a
/// restart never hands one out twice). The next block is persisted ahead, by a job
/// ([`ProducerIdBlock`]), never inside a decision; only the first, at open.
pub(super) struct ProducerIds {
    next: i64,
    /// Ids below this are covered by the block on disk.
    limit: i64,
    /// The limit a job out is persisting.
    persisting: Option<i64>,
    disk: Arc<dyn Disk>,
    path: PathBuf,
}

/// Persists a block of producer ids: `limit` becomes the end written in the producer-id file
/// (a write, two fsyncs and a rename; blocking: run it off the node's gate).
#[derive(Clone)]
pub struct ProducerIdBlock {
    disk: Arc<dyn Disk>,
    path: PathBuf,
    limit: i64,
}

impl PartialEq for ProducerIdBlock {
    fn eq(&self, other: &ProducerIdBlock) -> bool {
        (&self.path, self.limit) == (&other.path, other.limit)
    }
}

impl Eq for ProducerIdBlock {}

impl std::fmt::Debug for ProducerIdBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProducerIdBlock({} to {})", self.path.display(), self.limit)
    }
}

impl ProducerIdBlock {
    pub fn run(&self) -> Result<(), LogError> {
        dir::write_producer_ids(self.disk.as_ref(), &self.path, self.limit)
    }

    /// The end of the block it persists, for its report.
    pub fn limit(&self) -> i64 {
        self.limit
    }
}

impl ProducerIds {
    /// Resumes after the last block persisted (the rest of that block may have been handed
    /// out) and persists the first block, at startup, before any request is decided.
    pub(super) fn open(disk: Arc<dyn Disk>, data_dir: &Path, node_id: i32) -> Result<ProducerIds, Error> {
        let first = (node_id as i64) << producer_id_node_shift;
        let path = data_dir.join(producer_ids_file);
        let next = dir::read_producer_ids(disk.as_ref(), &path)?.map_or(first, |n| n.max(first));
        let limit = next + producer_id_block;
        dir::write_producer_ids(disk.as_ref(), &path, limit)?;
        Ok(ProducerIds { next, limit, persisting: None, disk, path })
    }

    /// The next id, or COORDINATOR_LOAD_IN_PROGRESS while the next block is not durable yet.
    fn next(&mut self) -> Result<i64, Error> {
        if self.next >= self.limit {
            return Err(Error::ProducerIdsPending);
        }
        self.next += 1;
        Ok(self.next - 1)
    }

    /// The job persisting the next block, once this one is nearly used up and none is out.
    fn owed(&mut self) -> Option<ProducerIdBlock> {
        if self.persisting.is_some() || self.limit - self.next > producer_id_prefetch {
            return None;
        }
        let limit = self.limit + producer_id_block;
        self.persisting = Some(limit);
        Some(ProducerIdBlock { disk: self.disk.clone(), path: self.path.clone(), limit })
    }

    /// A block's job ran: its ids may be handed out, or the next tick tries again.
    fn persisted(&mut self, limit: i64, result: Result<(), LogError>) -> Option<String> {
        if self.persisting == Some(limit) {
            self.persisting = None;
        }
        match result {
            Ok(()) => {
                self.limit = self.limit.max(limit);
                None
            }
            Err(e) => Some(format!("persisting the next block of producer ids (to {limit}): {e}")),
        }
    }
}

impl Broker {
    /// A fresh producer id (epoch 0), from a block persisted before use.
    pub fn init_producer_id(&mut self) -> Result<(i64, i16), Error> {
        Ok((self.producer_ids.next()?, 0))
    }

    /// The job persisting the next block of producer ids, once the current one is nearly used
    /// up and none is out: handed out by the decisions that take ids (InitProducerId, an
    /// EndTxn that rotates the id) and by the tick, which retries a failed one.
    pub fn producer_ids_owed(&mut self) -> Option<Action> {
        self.producer_ids.owed().map(Action::PersistProducerIds)
    }

    /// The report of a [`ProducerIdBlock`] handed out.
    pub fn producer_ids_persisted(&mut self, limit: i64, result: Result<(), LogError>) -> Vec<Action> {
        self.producer_ids.persisted(limit, result).map(|line| Action::Log(Level::Error, line)).into_iter().collect()
    }

    /// Time-driven work (flush.ms, retention bounded by the high watermark, reopening failed
    /// logs, opening replicas that failed to open), for the partitions that have some due
    /// (`due`): a partition left out is one whose visit would have done nothing.
    pub fn tick(&mut self, now: u64) -> Vec<Action> {
        let mut out = self.reopen_failed(now);
        out.extend(self.producer_ids_owed());
        for (name, p, mut bytes) in std::mem::take(&mut self.deferred) {
            if let Some(part) = self.partitions.get_mut(&name, p) {
                let epoch = part.replication.leader_epoch;
                match part.log.append(&mut bytes, epoch, now) {
                    Ok(_) => {
                        if let Some(job) = part.log.take_sync() {
                            out.push(Action::Sync { topic: name.clone(), partition: p, job });
                        }
                        let leo = part.counted_end();
                        if part.replication.on_append(leo) {
                            out.push(Action::Wake);
                        }
                        part.observed(&self.config.observer, self.config.node_id, &name, p, now);
                    }
                    Err(e) => out.push(Action::Log(Level::Error, format!("{name}-{p}: deferred append: {e}"))),
                }
                self.note_log(&name, p);
            }
        }
        for (name, p) in self.due.logs.take(now) {
            let Some(part) = self.partitions.get_mut(&name, p) else { continue };
            if part.log.failure().is_none() {
                // (a failed one is reopen_failed's; a planted bug may leave it be)
                let hw = part.high_watermark();
                if let Err(e) = part.log.tick(now, hw) {
                    out.push(Action::Log(Level::Error, format!("{name}-{p}: {e}")));
                }
                // A flush.ms sync, run off the gate like an append's.
                if let Some(job) = part.log.take_sync() {
                    out.push(Action::Sync { topic: name.to_string(), partition: p, job });
                }
                // Retention's or DeleteRecords' deleted files, closed by the shell (issue 32).
                if let Some(files) = part.log.take_released() {
                    out.push(Action::Release(files));
                }
            }
            self.due.logs.note(&name, p, &part.log, part.high_watermark());
        }
        out
    }

    /// Reopens partitions whose log went offline after a failed sync or write, and opens
    /// replicas the metadata names here that failed to open, at most every
    /// `failed_log_reopen_ms`: recovery decides what survived, and the partition takes writes
    /// again once its disk answers. (Kafka halts a broker whose only log directory fails and
    /// relies on a restart; reopening in place is that restart, for one partition.) Logs are
    /// looked at only after one rang the failure alarm, the image compared with the open
    /// replicas only after either changed or an offline replica's retry came (`due`).
    fn reopen_failed(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let rules = self.config.rules();
        let failed: Vec<(String, i32)> = match self.due.failures.take() && rules.reopens_failed_logs() {
            // A log whose truncation's job is still running waits for its report, which rings
            // the alarm again: reopening meanwhile would recover files the job still changes.
            true => self.partitions.iter().filter(|(_, part)| part.log.failure().is_some() && !part.log.cutting()).map(|((n, p), _)| (n.to_string(), p)).collect(),
            false => Vec::new(),
        };
        let hand_over = rules.hands_over_failed_leadership();
        for key in failed {
            let led = self.forget(&key.0, key.1, now).filter(|part| part.replication.is_leader());
            if let Some(part) = &led {
                let (node, topic_id) = (self.config.node_id, part.topic_id);
                self.config.observer.see(crate::observe::Observation::LeaderLogFailed { node, topic: &key.0, topic_id, partition: key.1, now });
            }
            if let Some(part) = led.as_ref().filter(|_| hand_over) {
                if !out.contains(&Action::Reregister) {
                    out.push(Action::Reregister);
                }
                // Not led again at this epoch: what this node remembered of the leadership
                // (the ISR its AlterPartition answers committed, ahead of a lagging image) went
                // with the log, and the reopened log may end below what followers already took
                // at this epoch. The registration moves the leadership to a later epoch
                // (swarm-quorum seed 71013: reopened at epoch 1 on an image whose ISR was older
                // than the controller's, the mark passed a member).
                self.failed_leading.insert(key.clone(), (part.topic_id, part.replication.leader_epoch));
            }
            self.offline.entry(key).or_insert(now);
        }
        // An offline replica's retry is due unless its open job is out already.
        let retry = self.offline.iter().any(|(key, &at)| at <= now && !self.opening.contains_key(key));
        if std::mem::take(&mut self.due.merge) || retry {
            self.open_missing(now, &mut out);
        }
        self.failed_leading.retain(|key, _| self.offline.contains_key(key));
        self.hand_out_opens(&mut out);
        out
    }

    /// Opens the replicas the image names here that are not open (as a job, `opening`), but not
    /// those offline until a later retry.
    fn open_missing(&mut self, now: u64, out: &mut Vec<Action>) {
        let me = self.config.node_id;
        // Both are in (topic, partition) order: one walk, no allocation for the replicas that are
        // open.
        let mut open = self.partitions.keys().peekable();
        let mut missing: Vec<(String, i32)> = Vec::new();
        for (n, t) in &self.image.topics {
            for (i, _) in t.partitions.iter().enumerate().filter(|(_, info)| info.replicas.contains(&me)) {
                let key = (n.as_str(), i as i32);
                while open.next_if(|k| *k < key).is_some() {}
                if open.peek() != Some(&key) {
                    missing.push((n.clone(), i as i32));
                }
            }
        }
        drop(open);
        for (name, p) in missing {
            let key = (name.clone(), p);
            if self.offline.get(&key).is_some_and(|&at| now < at) {
                continue;
            }
            // Its job's report logs the reopen (`opening`); one held back (`failed_leading`) or
            // out already waits.
            match self.reconcile(&name, p, now, out) {
                Ok(()) => {}
                Err(e) => {
                    self.offline.insert(key, now + failed_log_reopen_ms);
                    out.push(Action::Log(Level::Error, format!("{name}-{p}: still offline: {e}")));
                }
            }
        }
    }

    /// Flushes every partition and writes its recovery-point checkpoint, with three file-system
    /// syncs for all of them rather than several fsyncs each (`log::durability`): at 5,000
    /// partitions the difference between a stop of seconds and one of milliseconds. All at once,
    /// under the caller's lock (shutdown, tests); the periodic checkpoint runs the syncs off it
    /// ([`Broker::checkpoint_stage`]).
    pub fn checkpoint(&mut self, _now: u64) -> Vec<Action> {
        // No job runs after this one: what the logs staged is written here, or lost with
        // the process (the write-behind, `log::deferred`).
        let mut failures = Vec::new();
        for ((name, p), part) in self.partitions.iter_mut() {
            if let Err(e) = part.log.write_staged() {
                failures.push(Action::Log(Level::Error, format!("{name}-{p}: {e}")));
            }
        }
        let (mut out, staged) = self.checkpoint_stage(None, usize::MAX);
        out.splice(0..0, failures);
        if let Some(staged) = staged {
            let synced = self.disk.sync_all(&self.config.data_dir);
            out.extend(self.checkpoint_commit(staged, synced));
            if let Err(e) = self.disk.sync_all(&self.config.data_dir) {
                out.push(Self::renames_not_durable(&self.config.data_dir, &e));
            }
        }
        out
    }

    /// A checkpoint's first half: every changed log writes out its buffered index entries and
    /// its log end to the temporary checkpoint file (`Log::checkpoint_stage`). None when no log
    /// changed. The caller then runs `Disk::sync_all` on the data directory (off the node's lock
    /// if it likes: logs may take appends meanwhile), and [`Broker::checkpoint_commit`] with
    /// its result, and another `sync_all` to make the renames durable. Only the logs after
    /// `after` are looked at, and at most `logs_max` staged: then the staged set says where the
    /// next decision resumes ([`StagedCheckpoints::resume`]); each log's checkpoint stands on
    /// its own, so logs staged a few decisions apart share one sync.
    pub fn checkpoint_stage(&mut self, after: Option<&(Arc<str>, i32)>, logs_max: usize) -> (Vec<Action>, Option<StagedCheckpoints>) {
        let mut out = Vec::new();
        let mut staged = Vec::new();
        let (mut resume, mut last) = (None, None);
        let past = |(name, p): (&Arc<str>, i32)| after.is_none_or(|(n, q)| (name, p) > (n, *q));
        for ((name, p), part) in self.partitions.iter_mut().skip_while(|(key, _)| !past(*key)) {
            if staged.len() == logs_max {
                resume = last; // (the last log looked at: none is looked at twice)
                break;
            }
            last = Some((name.clone(), p));
            // The producers' state at the log end, written before the stage so the
            // checkpoint's file-system sync makes it durable with the batches it describes.
            // (An offline log says so once, below.)
            if part.log.failure().is_none() && part.log.producer_snapshot_offsets().last() != Some(&part.log.log_end_offset()) {
                if let Err(e) = part.log.write_producer_snapshot(&part.producers.to_snapshot()) {
                    out.push(Action::Log(Level::Error, format!("{name}-{p}: producer-state snapshot: {e}")));
                }
            }
            match part.log.checkpoint_stage() {
                Ok(Some(s)) => staged.push(((name.clone(), p), s)),
                Ok(None) => {} // unchanged since its last checkpoint
                Err(e) => out.push(Action::Log(Level::Error, format!("{name}-{p}: checkpoint: {e}"))),
            }
        }
        (out, (!staged.is_empty()).then_some(StagedCheckpoints { logs: staged, resume }))
    }

    /// A checkpoint's second half, after the `sync_all` that followed
    /// [`Broker::checkpoint_stage`]: each staged log whose checkpoint still holds (not cut or
    /// reopened since) takes it. A failed sync takes every staged log offline: which pages
    /// the kernel dropped is unknown, so each is recovered on reopen, as after its own failed
    /// flush.
    pub fn checkpoint_commit(&mut self, staged: StagedCheckpoints, synced: std::io::Result<()>) -> Vec<Action> {
        let mut out = Vec::new();
        if let Err(e) = synced {
            for (key, _) in &staged.logs {
                if let Some(part) = self.partitions.get_mut(&key.0, key.1) {
                    part.log.sync_failed(&e.to_string());
                }
            }
            out.push(Action::Log(Level::Error, format!("checkpoint: syncfs {}: {e}; its {} logs go offline until recovered", self.config.data_dir.display(), staged.logs.len())));
            return out;
        }
        for ((name, p), s) in staged.logs {
            if let Some(Err(e)) = self.partitions.get_mut(&name, p).map(|part| part.log.checkpoint_commit(s)) {
                out.push(Action::Log(Level::Error, format!("{name}-{p}: checkpoint: {e}")));
            }
        }
        out
    }

    /// The line for a failed `sync_all` after a checkpoint's renames.
    pub fn renames_not_durable(dir: &std::path::Path, e: &std::io::Error) -> Action {
        // The data is durable; only which checkpoint file (old or new) a crash keeps is open.
        Action::Log(Level::Error, format!("checkpoint: syncfs {} after the renames: {e}", dir.display()))
    }
}

/// The logs a checkpoint staged, waiting for the file-system sync before their commit.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedCheckpoints {
    logs: Vec<((Arc<str>, i32), crate::log::StagedCheckpoint)>,
    /// The last log staged, when the stage stopped at its bound: the next one resumes after it.
    resume: Option<(Arc<str>, i32)>,
}

impl StagedCheckpoints {
    /// Where the stage stopped at its bound (`node::Input::CheckpointMore` goes on from there).
    pub fn resume(&self) -> Option<(Arc<str>, i32)> {
        self.resume.clone()
    }

    /// Takes in the logs a later decision of the same checkpoint staged, and where it stopped.
    pub fn extend(&mut self, more: StagedCheckpoints) {
        self.logs.extend(more.logs);
        self.resume = more.resume;
    }

    /// The staged logs, in sets of at most `n`, each committed in a decision of its own.
    pub fn split(self, n: usize) -> Vec<StagedCheckpoints> {
        let mut logs = self.logs.into_iter().peekable();
        let mut out = Vec::new();
        while logs.peek().is_some() {
            out.push(StagedCheckpoints { logs: logs.by_ref().take(n.max(1)).collect(), resume: None });
        }
        out
    }

    pub fn len(&self) -> usize {
        self.logs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }
}
