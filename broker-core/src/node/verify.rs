//! KIP-890 part 1 at a partition leader (`transaction.partition.verification.enable`): a
//! produce carrying a producer's first transactional write to a partition this node leads is
//! not appended at once. Its decision starts a verification guard per such partition
//! (`Broker::start_verification`) and answers `Outcome::Verify` with one AddPartitionsToTxn v4
//! transaction (`verify_only`) for the producer's coordinator; the shell sends it
//! (`server/verify.rs`) and decides the produce again with the answer ([`Verified`]): a
//! partition in the producer's open transaction is appended with its guard, unless a marker of
//! the producer came meanwhile; one that is not is refused (INVALID_TXN_STATE), so a late write
//! of an ended transaction cannot open one that no coordinator will ever end (a hanging
//! transaction). Kafka batches verifications per coordinator (`AddPartitionsToTxnManager`);
//! here each produce asks for its own partitions.

use crate::broker::{Broker, Incoming};
use crate::kafka::Code;
use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction};
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::{AddPartitionsToTxnResponse, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;

/// The AddPartitionsToTxn version a leader's verification is sent at (the first with
/// `verify_only`).
pub const verify_version: i16 = 4;

/// One verification for the shell to ask: the producer's partitions of one produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyJob {
    /// The broker leading the transactional id's `__transaction_state` partition (None: the
    /// topic or its leader is unknown here; every partition is then answered
    /// COORDINATOR_NOT_AVAILABLE, which the client retries).
    pub coordinator: Option<i32>,
    pub txn_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    /// (topic, partition, guard) of each first write.
    pub partitions: Vec<(String, i32, u64)>,
}

/// The coordinator's verdict per partition of a [`VerifyJob`]: the guard to append with, or
/// the error the coordinator (or the way to it) gave.
pub type Verified = BTreeMap<(String, i32), Result<u64, Code>>;

/// The first decision of a transactional produce: which of its batches are their producer's
/// first transactional write to a partition this node leads (each starts its guard). None when
/// there is none (or verification is off): the produce is decided as any other.
pub fn start(b: &mut Broker, txn_id: &str, req: &ProduceRequest, batches: &[Option<Incoming>]) -> Option<VerifyJob> {
    let mut job: Option<VerifyJob> = None;
    let parts = req.topic_data.iter().flat_map(|t| t.partition_data.iter().map(move |p| (t.name.0.as_str(), p.index)));
    for ((topic, p), records) in parts.zip(batches) {
        let Some(records) = records else { continue };
        let Some(u) = b.start_verification(topic, p, records) else { continue };
        let job = job.get_or_insert_with(|| VerifyJob { coordinator: None, txn_id: txn_id.to_string(), producer_id: u.producer_id, epoch: u.epoch, partitions: Vec::new() });
        // One producer per request (Kafka's producers send one): a batch of another left
        // unverified is refused as owed, and its retry verified on its own.
        if (u.producer_id, u.epoch) == (job.producer_id, job.epoch) {
            job.partitions.push((topic.to_string(), p, u.guard));
        }
    }
    let mut job = job?;
    let state = b.image().topics.get(crate::txn::transaction_state_topic);
    let leader = state.and_then(|t| t.partitions.get(crate::txn::partition_for(txn_id, t.partitions.len() as i32) as usize)).map(|x| x.leader);
    job.coordinator = leader.filter(|l| *l >= 0);
    Some(job)
}

/// The request for `job`: one transaction, `verify_only`.
pub fn request(job: &VerifyJob) -> AddPartitionsToTxnRequest {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p, _) in &job.partitions {
        topics.entry(t).or_default().push(*p);
    }
    let topics = topics.into_iter().map(|(t, ps)| AddPartitionsToTxnTopic::default().with_name(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(ps)).collect();
    let t = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(job.txn_id.clone())))
        .with_producer_id(ProducerId(job.producer_id))
        .with_producer_epoch(job.epoch)
        .with_verify_only(true)
        .with_topics(topics);
    AddPartitionsToTxnRequest::default().with_transactions(vec![t])
}

/// What the coordinator answered for `job` (or why nothing came: every partition is then
/// COORDINATOR_NOT_AVAILABLE). A partition it did not name is refused as INVALID_TXN_STATE.
pub fn results(job: &VerifyJob, answer: Result<AddPartitionsToTxnResponse, String>) -> Verified {
    let codes: BTreeMap<(String, i32), i16> = match &answer {
        Ok(r) if r.error_code != 0 => return failed(job, crate::kafka::error(r.error_code).unwrap_or(Code::CoordinatorNotAvailable)),
        Ok(r) => r
            .results_by_transaction
            .iter()
            .filter(|t| t.transactional_id.0.as_str() == job.txn_id)
            .flat_map(|t| &t.topic_results)
            .flat_map(|t| t.results_by_partition.iter().map(move |p| ((t.name.0.to_string(), p.partition_index), p.partition_error_code)))
            .collect(),
        Err(_) => return failed(job, Code::CoordinatorNotAvailable),
    };
    let verdict = |t: &str, p: i32, guard: u64| match codes.get(&(t.to_string(), p)) {
        Some(0) => Ok(guard),
        Some(c) => Err(crate::kafka::error(*c).unwrap_or(Code::InvalidTxnState)),
        None => Err(Code::InvalidTxnState),
    };
    job.partitions.iter().map(|(t, p, guard)| ((t.clone(), *p), verdict(t, *p, *guard))).collect()
}

fn failed(job: &VerifyJob, code: Code) -> Verified {
    job.partitions.iter().map(|(t, p, _)| ((t.clone(), *p), Err(code))).collect()
}
