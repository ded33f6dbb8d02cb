//! The transaction coordinator of one node: the transactional ids whose `__transaction_state`
//! partition this node leads, their producer ids, epochs and open transactions, and the writes
//! that make them durable. A plain struct driven with an explicit `now` (ms); no IO, no locks,
//! no clock, no logging of its own. What the shell must do comes back in [`Work`]: records to
//! append to the state topic (then reported with [`Coordinator::appended`] and, once
//! replicated, [`Coordinator::settle`]), marker jobs to send ([`MarkerJob`], acknowledged with
//! [`Coordinator::markers_written`]), answers of requests that waited, and lines for the log.
//! A request that cannot be answered at once gets a [`Ticket`]; its answer comes out in the
//! [`Work`] of whichever later call decides it, once.
//!
//! Placement is Kafka's: an id lives in partition `abs(javaHash(id)) % partitions` of
//! `__transaction_state`, its coordinator is that partition's leader, and the coordinator epoch
//! carried by markers is that partition's leader epoch. Every transition is first a pending
//! state written to the partition; it takes effect, and the request waiting on it is answered,
//! only once the write is replicated (acks=all). A request meeting a transition in flight gets
//! CONCURRENT_TRANSACTIONS. The decisions are `state.rs`'s, the epoch rules `epoch.rs`'s.
//! See docs/transactions.md, section 3.

mod calls;
mod config;
mod epoch;
mod loading;
pub mod markers;
pub mod records;
pub mod state;

pub use calls::{PartitionResults, TxnDescription, TxnList};
pub use config::*;
pub use calls::PreparedCommits;
pub use state::{ProducerIdAndEpoch, Ticket, TxnMetadata, TxnState};

use crate::group::Appended;
use crate::kafka::Code;
use crate::log::batch;
use std::collections::{BTreeMap, BTreeSet};

/// A batch the shell must append to `__transaction_state` (as the leader, acks=all; one
/// uncompressed batch holding the id's record), then report with [`Coordinator::appended`]:
/// the group coordinator's kind of append.
pub use crate::group::Append;
use crate::group::hosting::Hosting;

/// Markers the shell must write (WriteTxnMarkers to each partition's leader), retrying the
/// retriable errors itself, and acknowledge with [`Coordinator::markers_written`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerJob {
    /// Names the job in acknowledgements.
    pub job: u64,
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    /// The protocol the transaction ended under: KIP-890's markers carry the bumped epoch, and
    /// a leader refuses one at the epoch of a transaction still open there.
    pub version: crate::kafka::TxnVersion,
    pub partitions: BTreeSet<(String, i32)>,
}

/// What a waiting request is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// InitProducerId.
    Producer(Result<ProducerIdAndEpoch, Code>),
    /// AddPartitionsToTxn: one result per partition asked.
    Partitions(PartitionResults),
    /// AddOffsetsToTxn.
    Done(Result<(), Code>),
    /// EndTxn: the producer id and epoch the producer goes on with (KIP-890 bumps it).
    Ended(Result<ProducerIdAndEpoch, Code>),
}

/// What a coordinator call asks of the shell.
#[derive(Debug, Default)]
pub struct Work {
    pub appends: Vec<Append>,
    /// Answers for tickets handed out earlier, each once.
    pub answers: Vec<(Ticket, Answer)>,
    pub markers: Vec<MarkerJob>,
    /// Lines for the operator's log.
    pub lines: Vec<String>,
}

/// An answer now, or a ticket to wait on.
#[derive(Debug, PartialEq, Eq)]
pub enum Pending<T> {
    Now(T),
    Wait(Ticket),
}

/// An id's metadata and the one transition in flight, if any.
#[derive(Debug)]
struct Entry {
    meta: TxnMetadata,
    transit: Option<Transit>,
}

#[derive(Debug)]
enum Transit {
    /// A record is being written ([`Coordinator::writes`] holds what it becomes).
    Writing(u64),
    /// The prepared outcome's markers are being written (Kafka's pending Complete*): the
    /// partitions not acknowledged yet.
    Markers { job: u64, owed: BTreeSet<(String, i32)> },
    /// Every marker is written but the Complete* record's write failed: the next timeout
    /// check writes it again.
    CompleteOwed,
}

/// A write appended (or being appended) and what it does once replicated.
#[derive(Debug)]
struct Write {
    partition: i32,
    txn_id: String,
    /// The metadata it makes current (None: a tombstone, the id is forgotten).
    target: Option<TxnMetadata>,
    /// Where it was appended.
    appended: Option<Appended>,
    then: Then,
}

/// Who waits on a write.
#[derive(Debug)]
enum Then {
    /// InitProducerId: the written producer id and epoch.
    Producer(Ticket),
    /// InitProducerId that fenced an open transaction: CONCURRENT_TRANSACTIONS once written.
    Fenced(Ticket),
    /// AddPartitionsToTxn, per partition.
    Partitions(Ticket, Vec<(String, i32)>),
    /// AddOffsetsToTxn.
    Done(Ticket),
    /// EndTxn.
    Ended(Ticket),
    /// Nobody (a timeout's abort, a completion, an expiration).
    Background,
}

pub struct Coordinator {
    config: TxnConfig,
    /// `__transaction_state`'s partitions, and those led here (a leader epoch is a coordinator
    /// epoch).
    hosting: Hosting,
    txns: BTreeMap<String, Entry>,
    /// Marker jobs in flight: job → transactional id.
    jobs: BTreeMap<u64, String>,
    open: BTreeSet<Ticket>,
    next_ticket: Ticket,
    writes: BTreeMap<u64, Write>,
    next_write: u64,
    next_job: u64,
    /// When open transactions are next checked against their timeout.
    next_abort_check: i64,
    /// When idle ids are next checked for expiration.
    next_expire_check: i64,
    /// What InitProducerId makes of a commit whose markers are on their way.
    prepared_commits: PreparedCommits,
}

impl Coordinator {
    pub fn new(config: TxnConfig) -> Coordinator {
        Coordinator {
            config,
            hosting: Hosting::default(),
            txns: BTreeMap::new(),
            jobs: BTreeMap::new(),
            open: BTreeSet::new(),
            next_ticket: 1,
            writes: BTreeMap::new(),
            next_write: 1,
            next_job: 1,
            next_abort_check: 0,
            next_expire_check: 0,
            prepared_commits: PreparedCommits::Finished,
        }
    }

    /// This coordinator treats InitProducerId during a commit's markers as `prepared` says
    /// (only the simulator's planted bug asks for anything but Kafka's rule).
    pub fn with_prepared_commits(mut self, prepared: PreparedCommits) -> Coordinator {
        self.prepared_commits = prepared;
        self
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// The state partitions this node leads and their leader (coordinator) epochs.
    pub fn owned(&self) -> BTreeMap<i32, i32> {
        self.hosting.epochs()
    }

    /// Partitions still loading, with the next offset to load.
    pub fn loading(&self) -> Vec<(i32, i64)> {
        self.hosting.loading()
    }

    /// An id's current metadata (what replicated writes made it), if this node knows it.
    pub fn metadata(&self, txn_id: &str) -> Option<&TxnMetadata> {
        self.txns.get(txn_id).map(|e| &e.meta)
    }

    /// The partition of `txn_id`, if this node coordinates it now.
    fn owner(&self, txn_id: &str) -> Result<i32, Code> {
        self.hosting.owner(txn_id)
    }

    fn ticket(&mut self) -> Ticket {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.open.insert(t);
        t
    }

    /// The request holding `ticket` stopped waiting: no answer comes out for it any more.
    pub fn forget(&mut self, ticket: Ticket) {
        self.open.remove(&ticket);
    }

    fn answer(&mut self, then: Then, result: Result<&TxnMetadata, Code>, work: &mut Work) {
        let (ticket, answer) = match then {
            Then::Background => return,
            Then::Producer(t) => (t, Answer::Producer(result.map(|m| ProducerIdAndEpoch { producer_id: m.producer_id, epoch: m.epoch }))),
            Then::Fenced(t) => (t, Answer::Producer(result.and(Err(Code::ConcurrentTransactions)))),
            Then::Partitions(t, parts) => {
                let r = result.map(|_| ());
                (t, Answer::Partitions(parts.into_iter().map(|p| (p, r)).collect()))
            }
            Then::Done(t) => (t, Answer::Done(result.map(|_| ()))),
            Then::Ended(t) => (t, Answer::Ended(result.map(TxnMetadata::continues_as))),
        };
        if self.open.remove(&ticket) {
            work.answers.push((ticket, answer));
        }
    }

    /// Appends `target` (None: a tombstone) as `txn_id`'s record; it becomes the id's transition
    /// in flight.
    fn write(&mut self, txn_id: &str, target: Option<TxnMetadata>, then: Then, now: i64, work: &mut Work) {
        let partition = self.hosting.partition_of(txn_id);
        let id = self.next_write;
        self.next_write += 1;
        let key = records::encode_key(txn_id);
        let value = target.as_ref().map(|m| records::encode_value(&m.value()));
        work.appends.push(Append { write: id, partition, batch: batch::build_keyed(&[(Some(&key), value.as_deref())], now) });
        if let Some(e) = self.txns.get_mut(txn_id) {
            e.transit = Some(Transit::Writing(id));
        }
        self.writes.insert(id, Write { partition, txn_id: txn_id.to_string(), target, appended: None, then });
    }

    /// The shell appended `write` (where: [`Appended`]), or could not.
    pub fn appended(&mut self, write: u64, result: Result<Appended, Code>, now: i64, work: &mut Work) {
        match result {
            Ok(at) => {
                if let Some(w) = self.writes.get_mut(&write) {
                    w.appended = Some(at);
                }
            }
            Err(code) => self.finish(write, Err(code), now, work),
        }
    }

    /// Writes whose fate is known by now: `replicated(partition, appended)` says whether the
    /// state topic's high watermark passed it, or why it never will.
    pub fn settle(&mut self, replicated: impl Fn(i32, Appended) -> Result<bool, Code>, now: i64, work: &mut Work) {
        let done: Vec<(u64, Result<(), Code>)> = self
            .writes
            .iter()
            .filter_map(|(id, w)| {
                match replicated(w.partition, w.appended?) {
                    Ok(true) => Some((*id, Ok(()))),
                    Ok(false) => None,
                    Err(code) => Some((*id, Err(code))),
                }
            })
            .collect();
        for (id, result) in done {
            self.finish(id, result, now, work);
        }
    }

    /// Whether writes are waiting for replication (the shell settles them when marks move).
    pub fn has_writes(&self) -> bool {
        !self.writes.is_empty()
    }

    fn finish(&mut self, write: u64, result: Result<(), Code>, now: i64, work: &mut Work) {
        let Some(w) = self.writes.remove(&write) else { return };
        let Some(entry) = self.txns.get_mut(&w.txn_id).filter(|e| matches!(e.transit, Some(Transit::Writing(x)) if x == write)) else {
            // The id left with its partition; whoever waited was answered then.
            return self.answer(w.then, Err(Code::NotCoordinator), work);
        };
        entry.transit = None;
        let target = match (result, w.target) {
            (Err(code), target) => {
                let code = write_error(code);
                if target.is_some_and(|t| t.state.is_complete()) {
                    entry.transit = Some(Transit::CompleteOwed);
                }
                work.lines.push(format!("{transaction_state_topic}-{}: writing transactional id {}: {code:?}", w.partition, w.txn_id));
                return self.answer(w.then, Err(code), work);
            }
            (Ok(()), None) => {
                self.txns.remove(&w.txn_id);
                return;
            }
            (Ok(()), Some(target)) => target,
        };
        entry.meta = target;
        let meta = entry.meta.clone();
        self.answer(w.then, Ok(&meta), work);
        if meta.state.is_prepare() {
            self.send_markers(&w.txn_id, now, work);
        }
    }

    /// The id's prepared outcome is durable: its markers are owed (Complete* at once if it has
    /// no partitions).
    fn send_markers(&mut self, txn_id: &str, now: i64, work: &mut Work) {
        let p = self.hosting.partition_of(txn_id);
        let Some(coordinator_epoch) = self.hosting.get(p).map(|o| o.leader_epoch) else { return };
        let Some(entry) = self.txns.get_mut(txn_id) else { return };
        let m = &entry.meta;
        if m.partitions.is_empty() {
            return self.write_complete(txn_id, now, work);
        }
        let job = self.next_job;
        self.next_job += 1;
        work.markers.push(MarkerJob { job, transactional_id: txn_id.to_string(), producer_id: m.producer_id, epoch: m.epoch, commit: m.state == TxnState::PrepareCommit, coordinator_epoch, version: m.version, partitions: m.partitions.clone() });
        entry.transit = Some(Transit::Markers { job, owed: m.partitions.clone() });
        self.jobs.insert(job, txn_id.to_string());
    }

    fn write_complete(&mut self, txn_id: &str, now: i64, work: &mut Work) {
        let Some(entry) = self.txns.get(txn_id) else { return };
        let target = state::complete(&entry.meta, now);
        self.write(txn_id, Some(target), Then::Background, now, work);
    }

    /// Whether marker job `job` is still this coordinator's (not finished, not resigned).
    pub fn has_job(&self, job: u64) -> bool {
        self.jobs.contains_key(&job)
    }

    /// The markers of `job` are written at `partitions` (WriteTxnMarkers answered NONE there;
    /// also a partition whose topic is gone, or that answered UNSUPPORTED_VERSION, as Kafka
    /// drops those). Once every partition is acknowledged the id goes Complete*. An unknown or
    /// finished job is ignored.
    pub fn markers_written(&mut self, job: u64, partitions: &[(String, i32)], now: i64, work: &mut Work) {
        let Some(txn_id) = self.jobs.get(&job).cloned() else { return };
        let Some(Transit::Markers { job: current, owed }) = self.txns.get_mut(&txn_id).and_then(|e| e.transit.as_mut()) else {
            self.jobs.remove(&job);
            return;
        };
        if *current != job {
            self.jobs.remove(&job);
            return;
        }
        for p in partitions {
            owed.remove(p);
        }
        if owed.is_empty() {
            self.jobs.remove(&job);
            self.write_complete(&txn_id, now, work);
        }
    }

    /// Time passes: open transactions past their timeout are fenced and aborted (every
    /// `abort_timed_out_interval_ms`), completions whose write failed are written again, and
    /// idle ids unused for `id_expiration_ms` are tombstoned (every
    /// `remove_expired_interval_ms`). Returns [`Coordinator::next_deadline`].
    pub fn tick(&mut self, now: i64, work: &mut Work) -> Option<i64> {
        let idle: Vec<String> = self.txns.iter().filter(|(id, e)| e.transit.is_none() && self.owner(id).is_ok()).map(|(id, _)| id.clone()).collect();
        if now >= self.next_abort_check {
            self.next_abort_check = now + self.config.abort_timed_out_interval_ms;
            for id in &idle {
                let Some(meta) = self.metadata(id).filter(|m| state::timed_out(m, now)) else { continue };
                let target = state::fence(meta, now);
                work.lines.push(format!("transactional id {id}: transaction of producer {} epoch {} timed out; aborting at epoch {}", meta.producer_id, meta.epoch, target.epoch));
                self.write(id, Some(target), Then::Background, now, work);
            }
            let owed: Vec<String> = self.txns.iter().filter(|(id, e)| matches!(e.transit, Some(Transit::CompleteOwed)) && self.owner(id).is_ok()).map(|(id, _)| id.clone()).collect();
            for id in owed {
                self.write_complete(&id, now, work);
            }
        }
        if now >= self.next_expire_check {
            self.next_expire_check = now + self.config.remove_expired_interval_ms;
            for id in &idle {
                let expiring = self.txns.get(id).is_some_and(|e| e.transit.is_none() && state::expired(&e.meta, self.config.id_expiration_ms, now));
                if expiring {
                    work.lines.push(format!("transactional id {id}: expired"));
                    self.write(id, None, Then::Background, now, work);
                }
            }
        }
        self.next_deadline()
    }

    /// The next time [`Coordinator::tick`] has work (None: no partition led).
    pub fn next_deadline(&self) -> Option<i64> {
        (!self.hosting.is_empty()).then_some(self.next_abort_check.min(self.next_expire_check))
    }
}

/// Kafka's translation of a failed state-topic write into what a transactional client
/// understands (`TransactionStateManager.appendTransactionToLog`).
fn write_error(code: Code) -> Code {
    match code {
        Code::UnknownTopicOrPartition | Code::NotEnoughReplicas | Code::NotEnoughReplicasAfterAppend | Code::RequestTimedOut => Code::CoordinatorNotAvailable,
        Code::NotLeaderOrFollower | Code::KafkaStorageError => Code::NotCoordinator,
        Code::MessageTooLarge | Code::RecordListTooLarge => Code::UnknownServerError,
        other => other,
    }
}

#[cfg(test)]
mod tests;
