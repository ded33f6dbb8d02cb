//! The requests a transaction coordinator serves, as calls on [`Coordinator`]: InitProducerId
//! with a transactional id, AddPartitionsToTxn (and a leader's verification, KIP-890 part 1),
//! AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions. Each checks placement, asks `state.rs` for a decision, and either
//! answers at once or writes the decision and hands out a ticket. Never touches the wire: the
//! shell turns answers into responses (an InitProducerId without a transactional id is the
//! broker's, not the coordinator's).

use super::state::{self, EndDraft, InitDraft};
use super::{Coordinator, Pending, ProducerIdAndEpoch, Then, Ticket, TxnState, Work};
use crate::kafka::{Code, TxnVersion};
use std::collections::BTreeSet;

/// AddPartitionsToTxn's answer: one result per partition asked, in the request's order.
pub type PartitionResults = Vec<((String, i32), Result<(), Code>)>;

/// DescribeTransactions for one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    /// Kafka's name of the state ("Ongoing", "PrepareCommit", "CompleteAbort", ...).
    pub state: &'static str,
    pub producer_id: i64,
    pub epoch: i16,
    pub timeout_ms: i32,
    /// When the open transaction began (-1: none).
    pub start_ms: i64,
    /// The transaction's partitions by topic, in order.
    pub topics: Vec<(String, Vec<i32>)>,
}

/// ListTransactions' answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnList {
    /// (transactional id, producer id, state name), by id.
    pub states: Vec<(String, i64, &'static str)>,
    /// State filters that name no state Kafka knows.
    pub unknown_state_filters: Vec<String>,
}

/// What InitProducerId makes of a transaction whose COMMIT markers are on their way: waits
/// (CONCURRENT_TRANSACTIONS until they are written, Kafka), or fences it as an open one
/// (planted `InitFencesPreparedCommit`; chosen when the node is built).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreparedCommits {
    #[default]
    Finished,
    FencedByInit,
}

impl Coordinator {
    /// InitProducerId with `txn_id` (Kafka's `handleInitProducerId`): a new id gets a producer
    /// id from `new_producer_id` at epoch 0; an idle one its epoch bumped (a new producer id
    /// once the epoch is exhausted); an open transaction is fenced and aborted, and the caller
    /// told CONCURRENT_TRANSACTIONS once that abort is written. `expected` is KIP-360's producer
    /// id and epoch (InitProducerId v3+). Answered through the ticket with
    /// [`super::Answer::Producer`].
    #[allow(clippy::too_many_arguments)]
    pub fn init_producer_id(&mut self, now: i64, txn_id: &str, timeout_ms: i32, expected: Option<ProducerIdAndEpoch>, mut new_producer_id: impl FnMut() -> Result<i64, Code>, work: &mut Work) -> Result<Pending<ProducerIdAndEpoch>, Code> {
        if txn_id.is_empty() {
            return Err(Code::InvalidRequest);
        }
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(Code::InvalidTransactionTimeout);
        }
        self.owner(txn_id)?;
        if !self.txns.contains_key(txn_id) {
            // As Kafka does: the id is known from now on, at epoch -1, even if the write fails.
            let meta = state::TxnMetadata::new(new_producer_id()?, timeout_ms, now);
            self.txns.insert(txn_id.to_string(), super::Entry { meta, transit: None });
        }
        let e = &self.txns[txn_id];
        let markers_out = e.meta.state == TxnState::PrepareCommit && matches!(e.transit, Some(super::Transit::Markers { .. }));
        let draft = match self.prepared_commits {
            PreparedCommits::FencedByInit if markers_out => InitDraft::Fence(state::fence(&e.meta, now)),
            _ => state::init(&e.meta, e.transit.is_some(), timeout_ms, expected, now, &mut new_producer_id)?,
        };
        let ticket = self.ticket();
        match draft {
            InitDraft::Write(m) => self.write(txn_id, Some(m), Then::Producer(ticket), now, work),
            InitDraft::Fence(m) => {
                work.lines.push(format!("transactional id {txn_id}: a new producer fences producer {} with its transaction open; aborting at epoch {}", m.producer_id, m.epoch));
                self.write(txn_id, Some(m), Then::Fenced(ticket), now, work);
            }
        }
        Ok(Pending::Wait(ticket))
    }

    /// AddPartitionsToTxn (v0–3, from a client): the same result for every partition.
    /// Answered through the ticket with [`super::Answer::Partitions`].
    pub fn add_partitions(&mut self, now: i64, txn_id: &str, producer_id: i64, epoch: i16, partitions: &[(String, i32)], work: &mut Work) -> Pending<PartitionResults> {
        let asked = partitions.to_vec();
        let all = |r: Result<(), Code>| partitions.iter().map(|p| (p.clone(), r)).collect();
        match self.add(now, txn_id, producer_id, epoch, partitions, |t| Then::Partitions(t, asked), work) {
            Err(code) => Pending::Now(all(Err(code))),
            Ok(Pending::Now(())) => Pending::Now(all(Ok(()))),
            Ok(Pending::Wait(t)) => Pending::Wait(t),
        }
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890 part 1, from a partition leader):
    /// whether each partition is in the open transaction of `producer_id` at `epoch`, answered
    /// at once ([`state::verify_partitions`]); an error for the whole transaction otherwise
    /// (placement, an unknown id, a fenced producer, a transition in flight).
    pub fn verify_partitions(&self, txn_id: &str, producer_id: i64, epoch: i16, partitions: &[(String, i32)]) -> Result<PartitionResults, Code> {
        if txn_id.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(txn_id)?;
        let e = self.txns.get(txn_id).ok_or(Code::InvalidProducerIdMapping)?;
        state::verify_partitions(&e.meta, e.transit.is_some(), producer_id, epoch, partitions)
    }

    /// AddOffsetsToTxn: adds `group`'s partition of `__consumer_offsets`, which has
    /// `offsets_partitions` partitions. Answered through the ticket with [`super::Answer::Done`].
    #[allow(clippy::too_many_arguments)]
    pub fn add_offsets(&mut self, now: i64, txn_id: &str, producer_id: i64, epoch: i16, group: &str, offsets_partitions: i32, work: &mut Work) -> Result<Pending<()>, Code> {
        let partition = (crate::group::offsets_topic.to_string(), crate::group::partition_for(group, offsets_partitions));
        self.add(now, txn_id, producer_id, epoch, &[partition], Then::Done, work)
    }

    #[allow(clippy::too_many_arguments)]
    fn add(&mut self, now: i64, txn_id: &str, producer_id: i64, epoch: i16, partitions: &[(String, i32)], then: impl FnOnce(Ticket) -> Then, work: &mut Work) -> Result<Pending<()>, Code> {
        if txn_id.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(txn_id)?;
        let Some(e) = self.txns.get(txn_id) else { return Err(Code::InvalidProducerIdMapping) };
        let set: BTreeSet<(String, i32)> = partitions.iter().cloned().collect();
        match state::add_partitions(&e.meta, e.transit.is_some(), producer_id, epoch, &set, now)? {
            None => Ok(Pending::Now(())),
            Some(m) => {
                let ticket = self.ticket();
                self.write(txn_id, Some(m), then(ticket), now, work);
                Ok(Pending::Wait(ticket))
            }
        }
    }

    /// EndTxn: Ongoing goes PrepareCommit or PrepareAbort, answered once that is written; the
    /// markers follow in a later [`Work`]. `version` is what the client asked for (EndTxn v5:
    /// KIP-890's), capped by this coordinator's `transaction.version`. The answer, through the
    /// ticket with [`super::Answer::Ended`], is the producer id and epoch the producer goes on
    /// with; `new_producer_id` is called only when KIP-890's bump exhausts the epoch.
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(&mut self, now: i64, txn_id: &str, producer_id: i64, epoch: i16, commit: bool, version: TxnVersion, mut new_producer_id: impl FnMut() -> Result<i64, Code>, work: &mut Work) -> Result<Pending<ProducerIdAndEpoch>, Code> {
        if txn_id.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(txn_id)?;
        let version = version.min(self.config.transaction_version);
        let Some(e) = self.txns.get(txn_id) else { return Err(Code::InvalidProducerIdMapping) };
        match state::end(&e.meta, e.transit.is_some(), producer_id, epoch, commit, version, now, &mut new_producer_id)? {
            EndDraft::Done => Ok(Pending::Now(e.meta.continues_as())),
            EndDraft::Write(m) => {
                let ticket = self.ticket();
                self.write(txn_id, Some(m), Then::Ended(ticket), now, work);
                Ok(Pending::Wait(ticket))
            }
        }
    }

    /// DescribeTransactions for one id: its current state (a transition in flight shows once
    /// written).
    pub fn describe(&self, txn_id: &str) -> Result<TxnDescription, Code> {
        if txn_id.is_empty() {
            return Err(Code::InvalidRequest);
        }
        self.owner(txn_id)?;
        let Some(m) = self.metadata(txn_id).filter(|m| m.state != TxnState::Dead) else { return Err(Code::TransactionalIdNotFound) };
        let mut topics: Vec<(String, Vec<i32>)> = Vec::new();
        for (t, p) in &m.partitions {
            match topics.last_mut() {
                Some((last, ps)) if last == t => ps.push(*p),
                _ => topics.push((t.clone(), vec![*p])),
            }
        }
        Ok(TxnDescription { state: m.state.name(), producer_id: m.producer_id, epoch: m.epoch, timeout_ms: m.timeout_ms, start_ms: m.start_ms, topics })
    }

    /// ListTransactions: the ids this node coordinates, filtered by state names and producer
    /// ids (an empty filter passes all). COORDINATOR_LOAD_IN_PROGRESS while any partition loads.
    pub fn list(&self, states: &[String], producer_ids: &[i64]) -> Result<TxnList, Code> {
        if !self.hosting.loading().is_empty() {
            return Err(Code::CoordinatorLoadInProgress);
        }
        let mut list = TxnList::default();
        let mut wanted = BTreeSet::new();
        for name in states {
            match TxnState::from_name(name) {
                Some(s) => drop(wanted.insert(s)),
                None => list.unknown_state_filters.push(name.clone()),
            }
        }
        for (id, e) in &self.txns {
            let m = &e.meta;
            let shown = m.state != TxnState::Dead && (producer_ids.is_empty() || producer_ids.contains(&m.producer_id)) && (states.is_empty() || wanted.contains(&m.state));
            if shown && self.owner(id).is_ok() {
                list.states.push((id.clone(), m.producer_id, m.state.name()));
            }
        }
        Ok(list)
    }
}
