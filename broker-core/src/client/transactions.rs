//! A transactional producer: finds its transactional id's coordinator, gets a producer id and
//! epoch from it (`init`, fencing any older producer of the id), adds each partition to the
//! open transaction before its first batch there (AddPartitionsToTxn), and ends the
//! transaction with EndTxn v5 (`commit`, `abort`), going on with the epoch the coordinator
//! answers: the next one under KIP-890 (`transaction.version` 2), the same one from a
//! coordinator at the classic protocol. Batches go through [`Producer`], transactional and
//! idempotent. A consumer's offsets join the transaction with `send_offsets` (Kafka's
//! `sendOffsetsToTransaction`: AddOffsetsToTxn to the transaction coordinator, then
//! TxnOffsetCommit to the group's), so they commit or abort with its records.
//!
//! Errors that pass (the coordinator moving, loading, not there yet, or busy with this id's
//! previous transition: CONCURRENT_TRANSACTIONS) are retried after `retry_backoff`, at most
//! `txn_request_attempts_max` times; a fenced producer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH)
//! fails for good. After a failed batch or an end whose outcome is unknown, the caller aborts
//! (or calls `init` again, which aborts whatever was open and bumps the epoch), as Kafka's
//! producers must after an abortable error.

use super::cluster::Cluster;
use super::producer::{Producer, ProducerConfig, ProducerRecord};
use super::ClientError;
use crate::kafka::Code;
use kafka_protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic};
use kafka_protocol::messages::end_txn_request::EndTxnRequest;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::txn_offset_commit_request::{TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic};
use kafka_protocol::messages::{GroupId, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::{Request, StrBytes};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

/// Most attempts of one coordinator request (FindCoordinator included) before the caller is
/// told: with the default 100 ms backoff, 20 s of a coordinator moving or loading, or of the
/// previous transaction's markers on their way (CONCURRENT_TRANSACTIONS until every leader
/// wrote one, which a slow leader can hold up for the coordinator's 5 s peer request timeout
/// and more). Kafka's producers wait as long (`max.block.ms`, 60 s).
pub const txn_request_attempts_max: u32 = 200;

pub struct TransactionalProducer {
    producer: Producer,
    id: String,
    timeout_ms: i32,
    /// The coordinators found, by key type and key (the transactional id's, groups').
    coordinators: BTreeMap<(i8, String), SocketAddr>,
    /// Partitions of the open transaction (None: no transaction open).
    open: Option<BTreeSet<(String, i32)>>,
    /// Whether the open transaction holds a group's offsets (it must then be ended at the
    /// coordinator even without a partition).
    offsets_added: bool,
    /// How long an end may wait for its answer (None: `txn_request_attempts_max` attempts).
    end_timeout: Option<std::time::Duration>,
    /// While an end waits: when it gives up (checked before each attempt).
    deadline: Option<tokio::time::Instant>,
}

/// Which coordinator a request goes to: (key type, key).
type CoordinatorKey = (i8, String);

/// What a coordinator's error code means to the client.
enum Next {
    Done,
    /// Ask again (after the backoff), the same coordinator.
    Again,
    /// Find the coordinator again, then ask again.
    Refind,
    Fail(ClientError),
}

fn next(code: i16, what: &str) -> Next {
    match crate::kafka::error(code) {
        None => Next::Done,
        Some(Code::ConcurrentTransactions | Code::CoordinatorLoadInProgress | Code::UnknownTopicOrPartition) => Next::Again,
        Some(Code::NotCoordinator | Code::CoordinatorNotAvailable) => Next::Refind,
        Some(_) => Next::Fail(ClientError::kafka(code, what)),
    }
}

impl TransactionalProducer {
    /// A producer for transactional id `id` with `transaction.timeout.ms` = `timeout_ms`.
    pub fn new(bootstrap: Vec<SocketAddr>, config: ProducerConfig, id: &str, timeout_ms: i32) -> TransactionalProducer {
        let mut producer = Producer::with_bootstrap(bootstrap, config);
        producer.set_transactional(id);
        TransactionalProducer { producer, id: id.to_string(), timeout_ms, coordinators: BTreeMap::new(), open: None, offsets_added: false, end_timeout: None, deadline: None }
    }

    /// Gives `commit` and `abort` at most `timeout` to be answered, as an application's
    /// `commit_transaction(timeout)`: past it they fail with [`ClientError::Timeout`] (the
    /// outcome unknown), and the caller inits again.
    pub fn set_end_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.end_timeout = timeout;
    }

    fn txn_id(&self) -> TransactionalId {
        TransactionalId(StrBytes::from_string(self.id.clone()))
    }

    /// The transactional id's coordinator.
    fn txn_coordinator(&self) -> CoordinatorKey {
        (crate::kafka::coordinator_type::transaction, self.id.clone())
    }

    /// The address of coordinator `key` (FindCoordinator, asked of any broker).
    async fn coordinator(&mut self, key: &CoordinatorKey) -> Result<SocketAddr, ClientError> {
        if let Some(a) = self.coordinators.get(key) {
            return Ok(*a);
        }
        let req = super::cluster::find_coordinator(key.0, &key.1);
        let c = self.producer.cluster();
        let addr = c.any_broker();
        let resp = match c.conn(addr).await?.send(&req).await {
            Ok(r) => r,
            Err(e) => {
                c.drop_conn(addr);
                c.rotate();
                return Err(e);
            }
        };
        let addr = super::cluster::coordinator_in(&resp, || "FindCoordinator".into())?;
        self.coordinators.insert(key.clone(), addr);
        Ok(addr)
    }

    /// Sends `req` to the transaction coordinator until `code` of its answer says done or
    /// failed, finding the coordinator again when it moved.
    async fn ask<R: Request<Response: 'static>>(&mut self, req: &R, what: &str, code: impl Fn(&R::Response) -> i16) -> Result<R::Response, ClientError> {
        let key = self.txn_coordinator();
        self.ask_of(&key, req, what, code).await
    }

    /// [`Self::ask`] of coordinator `key`.
    async fn ask_of<R: Request<Response: 'static>>(&mut self, key: &CoordinatorKey, req: &R, what: &str, code: impl Fn(&R::Response) -> i16) -> Result<R::Response, ClientError> {
        let backoff = self.producer.config().retry_backoff;
        let mut last = ClientError::Protocol(format!("{what}: no attempt"));
        for _ in 0..txn_request_attempts_max {
            if self.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return Err(ClientError::Timeout(self.end_timeout.map_or(0, |t| t.as_millis() as u64)));
            }
            let addr = match self.coordinator(key).await {
                Ok(a) => a,
                Err(e) if e.retriable() || matches!(&e, ClientError::Kafka { code: Code::CoordinatorNotAvailable | Code::NotCoordinator, .. }) => {
                    last = e;
                    tokio::time::sleep(backoff).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let c: &mut Cluster = self.producer.cluster();
            let sent = match c.conn(addr).await {
                Ok(conn) => conn.send(req).await,
                Err(e) => Err(e),
            };
            let resp = match sent {
                Ok(r) => r,
                Err(e) => {
                    // The outcome of this attempt is unknown; asking again is what Kafka's
                    // producers do (each request here is idempotent at the coordinator).
                    c.drop_conn(addr);
                    self.coordinators.remove(key);
                    last = e;
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            };
            match next(code(&resp), what) {
                Next::Done => return Ok(resp),
                Next::Fail(e) => return Err(e),
                Next::Again => last = ClientError::kafka(code(&resp), what),
                Next::Refind => {
                    self.coordinators.remove(key);
                    last = ClientError::kafka(code(&resp), what);
                }
            }
            tokio::time::sleep(backoff).await;
        }
        Err(last)
    }

    /// Gets a producer id and epoch for the id (Kafka's `initTransactions`): an older producer
    /// of the id is fenced, and a transaction it left open is aborted first.
    pub async fn init(&mut self) -> Result<(i64, i16), ClientError> {
        (self.open, self.offsets_added) = (None, false);
        self.producer.set_producer_id(None);
        let req = InitProducerIdRequest::default().with_transactional_id(Some(self.txn_id())).with_transaction_timeout_ms(self.timeout_ms).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        let resp = self.ask(&req, "InitProducerId", |r| r.error_code).await?;
        let p = (resp.producer_id.0, resp.producer_epoch);
        self.producer.set_producer_id(Some(p));
        Ok(p)
    }

    /// Opens a transaction (local: the coordinator hears of it with its first partition).
    pub fn begin(&mut self) -> Result<(), ClientError> {
        if self.open.is_some() {
            return Err(ClientError::Protocol("a transaction is already open".into()));
        }
        self.open = Some(BTreeSet::new());
        Ok(())
    }

    /// Sends `records` to `topic`-`partition` inside the open transaction; returns the batch's
    /// base offset.
    pub async fn send(&mut self, topic: &str, partition: i32, records: &[ProducerRecord], timestamp: i64) -> Result<i64, ClientError> {
        let Some(open) = &self.open else { return Err(ClientError::Protocol("no transaction is open".into())) };
        let tp = (topic.to_string(), partition);
        if !open.contains(&tp) {
            self.add_partition(&tp).await?;
        }
        self.producer.send_records(topic, partition, records, timestamp).await
    }

    async fn add_partition(&mut self, tp: &(String, i32)) -> Result<(), ClientError> {
        let (pid, epoch) = self.producer_id()?;
        let t = AddPartitionsToTxnTopic::default().with_name(TopicName(StrBytes::from_string(tp.0.clone()))).with_partitions(vec![tp.1]);
        let req = AddPartitionsToTxnRequest::default().with_v3_and_below_transactional_id(self.txn_id()).with_v3_and_below_producer_id(ProducerId(pid)).with_v3_and_below_producer_epoch(epoch).with_v3_and_below_topics(vec![t]);
        let code = |r: &kafka_protocol::messages::AddPartitionsToTxnResponse| r.results_by_topic_v3_and_below.iter().flat_map(|t| &t.results_by_partition).map(|p| p.partition_error_code).find(|c| *c != 0).unwrap_or(0);
        self.ask(&req, "AddPartitionsToTxn", code).await?;
        if let Some(open) = &mut self.open {
            open.insert(tp.clone());
        }
        Ok(())
    }

    fn producer_id(&self) -> Result<(i64, i16), ClientError> {
        self.producer.producer_id().ok_or_else(|| ClientError::Protocol("init_transactions first".into()))
    }

    /// Adds a consumer's positions (`offsets`: topic, partition, next offset to read) in
    /// `group` to the open transaction (Kafka's `sendOffsetsToTransaction` with a group id
    /// alone: generation -1, no member): AddOffsetsToTxn, then TxnOffsetCommit to the group's
    /// coordinator. They become the group's committed offsets if the transaction commits.
    pub async fn send_offsets(&mut self, group: &str, offsets: &[(String, i32, i64)]) -> Result<(), ClientError> {
        if self.open.is_none() {
            return Err(ClientError::Protocol("no transaction is open".into()));
        }
        let (pid, epoch) = self.producer_id()?;
        let gid = GroupId(StrBytes::from_string(group.to_string()));
        if !self.offsets_added {
            let req = AddOffsetsToTxnRequest::default().with_transactional_id(self.txn_id()).with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_group_id(gid.clone());
            self.ask(&req, "AddOffsetsToTxn", |r| r.error_code).await?;
            self.offsets_added = true;
        }
        let mut topics: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for (t, p, o) in offsets {
            topics.entry(t).or_default().push(TxnOffsetCommitRequestPartition::default().with_partition_index(*p).with_committed_offset(*o).with_committed_leader_epoch(-1));
        }
        let topics = topics.into_iter().map(|(t, ps)| TxnOffsetCommitRequestTopic::default().with_name(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(ps)).collect();
        let req = TxnOffsetCommitRequest::default().with_transactional_id(self.txn_id()).with_group_id(gid).with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_generation_id(-1).with_topics(topics);
        let code = |r: &kafka_protocol::messages::TxnOffsetCommitResponse| r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).find(|c| *c != 0).unwrap_or(0);
        self.ask_of(&(crate::kafka::coordinator_type::group, group.to_string()), &req, "TxnOffsetCommit", code).await?;
        Ok(())
    }

    /// Commits the open transaction: answered once the coordinator has durably decided it
    /// (its markers follow).
    pub async fn commit(&mut self) -> Result<(), ClientError> {
        self.end(true).await
    }

    /// Aborts the open transaction.
    pub async fn abort(&mut self) -> Result<(), ClientError> {
        self.end(false).await
    }

    async fn end(&mut self, commit: bool) -> Result<(), ClientError> {
        let Some(open) = self.open.take() else { return Err(ClientError::Protocol("no transaction is open".into())) };
        let offsets_added = std::mem::take(&mut self.offsets_added);
        if open.is_empty() && !offsets_added {
            // Nothing reached the coordinator: nothing to end (Kafka's producers skip EndTxn).
            return Ok(());
        }
        let (pid, epoch) = self.producer_id()?;
        let req = EndTxnRequest::default().with_transactional_id(self.txn_id()).with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_committed(commit);
        self.deadline = self.end_timeout.map(|t| tokio::time::Instant::now() + t);
        let resp = self.ask(&req, if commit { "EndTxn(commit)" } else { "EndTxn(abort)" }, |r| r.error_code).await;
        self.deadline = None;
        let resp = resp?;
        // KIP-890: the coordinator ended the transaction at a newer epoch (or producer id),
        // which the next transaction is written at, its sequences from 0.
        let next = (resp.producer_id.0, resp.producer_epoch);
        if next.0 >= 0 && next != (pid, epoch) {
            self.producer.set_producer_id(Some(next));
        }
        Ok(())
    }
}
