//! The broker's APIs, one function each: wire request in, wire response (or a wait) out,
//! decisions delegated to the [`Broker`]. Field-by-field translation only; see docs/protocol.md
//! for versions and errors.

use crate::kafka::{since, Code};
use crate::protocol::{s, topic_name, uuid};
use std::borrow::Cow;
use super::waiting::{Pending, PendingDelete, Waiting};
use crate::protocol::fetch_frame::FileRecords;
use super::Outcome;
use crate::log::Records;
use crate::broker::fetch_session::{Context, Plan, Wanted};
use crate::broker::{Action, Broker, Error, Fetcher, Incoming, PartitionMap};
use bytes::Bytes;
use kafka_protocol::messages::delete_records_request::DeleteRecordsRequest;
use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult};
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchResponse, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::list_offsets_request::ListOffsetsRequest;
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::metadata_response::{MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult};
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, ProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};

/// Metadata, with each broker's endpoint on `listener`, the one the client came in on (a live
/// broker without that listener is left out, and a partition it leads answers
/// LISTENER_NOT_FOUND, as Kafka does).
pub fn metadata(b: &mut Broker, version: i16, req: MetadataRequest, controller_id: i32, listener: &str) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    let c = b.config().clone();
    let image = b.image();
    r.brokers = image
        .brokers
        .values()
        .filter(|x| !x.fenced)
        .filter_map(|x| {
            let (host, port) = x.endpoint(listener)?;
            let mut m = MetadataResponseBroker::default();
            m.node_id = BrokerId(x.id);
            m.host = s(host);
            m.port = port;
            Some(m)
        })
        .collect();
    let unreachable: Vec<i32> = image.brokers.values().filter(|x| !x.fenced && x.endpoint(listener).is_none()).map(|x| x.id).collect();
    if image.brokers.get(&c.node_id).is_none_or(|x| x.fenced) {
        // Not registered (or fenced) yet: clients bootstrapped here still need a way back.
        let own = c.endpoints();
        if let Some(e) = own.iter().find(|e| e.name == listener).or(own.first()) {
            let mut m = MetadataResponseBroker::default();
            m.node_id = BrokerId(c.node_id);
            m.host = s(&e.host);
            m.port = e.port;
            r.brokers.push(m);
        }
    }
    r.cluster_id = Some(s(&c.cluster_id));
    r.controller_id = BrokerId(controller_id);
    // v0: an empty list means all topics; v1+: null means all topics. v10+ may name a topic
    // by id alone (a KIP-848 member resolving its assignment): an unknown id is UNKNOWN_TOPIC_ID.
    let by_id = |id: uuid::Uuid| b.topic_by_id(*id.as_bytes()).map(|n| n.to_string());
    let mut unknown_ids = Vec::new();
    let wanted: Option<Vec<String>> = match req.topics {
        Some(ts) if !(version == 0 && ts.is_empty()) => Some(
            ts.into_iter()
                .filter_map(|t| match t.name {
                    Some(n) => Some(n.0.to_string()),
                    None => {
                        let name = by_id(t.topic_id);
                        if name.is_none() {
                            unknown_ids.push(t.topic_id);
                        }
                        name
                    }
                })
                .collect(),
        ),
        _ => None,
    };
    for id in unknown_ids {
        r.topics.push(MetadataResponseTopic::default().with_topic_id(id).with_error_code(crate::kafka::Code::UnknownTopicId.code()));
    }
    // Before v4 a request could not refuse auto-creation, so it is on.
    let allow_auto = version < 4 || req.allow_auto_topic_creation;
    let names: Vec<String> = wanted.clone().unwrap_or_else(|| b.image().topics.keys().cloned().collect());
    for name in names {
        let mut t = MetadataResponseTopic::default();
        t.name = Some(topic_name(&name));
        match b.image().topics.get(&name) {
            Some(topic) => {
                t.topic_id = uuid(topic.id);
                t.partitions = topic
                    .partitions
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let mut m = MetadataResponsePartition::default();
                        m.partition_index = i as i32;
                        // A replica this node leads but has not opened or made durable yet has
                        // no role yet.
                        let leader = match p.leader == b.config().node_id && b.replica_pending(&name, i as i32) {
                            true => -1,
                            false => p.leader,
                        };
                        m.leader_id = BrokerId(leader);
                        m.leader_epoch = p.leader_epoch;
                        m.replica_nodes = p.replicas.iter().map(|&x| BrokerId(x)).collect();
                        m.isr_nodes = p.isr.iter().map(|&x| BrokerId(x)).collect();
                        if leader < 0 {
                            m.error_code = Error::LeaderNotAvailable.kafka_error(true).code();
                        } else if unreachable.contains(&p.leader) {
                            m.error_code = crate::kafka::Code::ListenerNotFound.code();
                        }
                        m
                    })
                    .collect();
            }
            // Kafka answers LEADER_NOT_AVAILABLE while an auto-created topic comes into being.
            None if wanted.is_some() && allow_auto => match b.request_auto_create(&name) {
                Ok(true) => t.error_code = Error::LeaderNotAvailable.kafka_error(true).code(),
                Ok(false) => t.error_code = Error::UnknownTopicOrPartition.kafka_error(true).code(),
                Err(e) => t.error_code = e.kafka_error(true).code(),
            },
            None => t.error_code = Error::UnknownTopicOrPartition.kafka_error(true).code(),
        }
        r.topics.push(t);
    }
    r
}

/// Produce. acks=0 gets no response at all (and a failure closes the connection, which is how
/// Kafka lets such a client notice); acks=1 is answered once its batches are written (at once
/// unless the log stages its writes, `log::deferred`); acks=all waits until the ISR holds every
/// appended batch or the request's timeout passes.
/// `batches`: each partition's records checked ([`produce_batches`]), in the request's order.
#[allow(clippy::too_many_arguments)]
/// `listener`: the one the client came in on, whose endpoints a v10+ answer names for
/// partitions led elsewhere (KIP-951, `leader_hints`).
pub fn produce(b: &mut Broker, (version, correlation_id, listener): (i16, i32, &str), req: ProduceRequest, batches: Vec<Option<Incoming>>, verified: Option<&super::verify::Verified>, denied: &super::authz::Denied, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    let mut batches = batches.into_iter();
    let acks = req.acks;
    let modern = version >= 8;
    let mut r = ProduceResponse::default();
    let mut pending = Vec::new();
    for (ti, topic) in req.topic_data.into_iter().enumerate() {
        // Shared by the topic's pending partitions (acks=all): one allocation per topic.
        let name: std::sync::Arc<str> = std::sync::Arc::from(topic.name.0.as_str());
        let mut tr = TopicProduceResponse::default();
        tr.name = topic.name.clone();
        for (slot, part) in topic.partition_data.into_iter().enumerate() {
            let mut pr = PartitionProduceResponse::default();
            pr.index = part.index;
            pr.log_append_time_ms = -1;
            let result = match batches.next().flatten() {
                _ if denied.of(&name).is_some() => Err(denied.of(&name).expect("just checked")),
                None => Err(Error::Batch(crate::log::BatchError::TooShort(0))),
                Some(records) if records.is_transactional() && req.transactional_id.is_none() => Err(Error::TransactionalIdMissing),
                // KIP-890 part 1: a first transactional write here appends with the guard of
                // its verification, or gets the coordinator's refusal (`node::verify`).
                Some(records) => match verified.and_then(|v| v.get(&(name.to_string(), part.index))) {
                    Some(Err(code)) => Err(Error::TxnUnverified(*code)),
                    Some(Ok(guard)) => b.produce_verified(&name, part.index, records, Some(*guard), acks, now, out),
                    None => b.produce_verified(&name, part.index, records, None, acks, now, out),
                },
            };
            match result {
                Ok(p) => {
                    pr.base_offset = p.base_offset;
                    pr.log_start_offset = p.log_start_offset;
                    pr.log_append_time_ms = p.log_append_time;
                    if acks != 0 {
                        pending.push(Pending { acks_all: acks == -1, topic: ti, slot, name: name.clone(), partition: part.index, produced: p });
                    }
                }
                Err(e) => {
                    pr.error_code = produce_code(&e, version).code();
                    pr.base_offset = -1;
                    pr.log_start_offset = -1;
                    if modern {
                        pr.error_message = Some(s(&e.to_string()));
                    }
                }
            }
            tr.partition_responses.push(pr);
        }
        r.responses.push(tr);
    }
    if acks == 0 {
        let failed = r.responses.iter().flat_map(|t| &t.partition_responses).find(|p| p.error_code != 0);
        if let Some(p) = failed {
            return Err(format!("acks=0 produce failed with error {} on partition {}", p.error_code, p.index));
        }
        return Ok(Outcome::NoReply);
    }
    let timeout = (req.timeout_ms.max(0) as u64).min(crate::constants::produce_wait_ms_max);
    let hints = (version >= since::produce_leader_hints).then(|| listener.to_string());
    let mut waiting = Waiting::produce(version, correlation_id, r, pending, timeout).with_leader_hints(hints);
    // Already replicated (an ISR of one): answer now.
    Ok(waiting.poll_broker(b, false).unwrap_or(Outcome::Wait(waiting)))
}

/// A refused produce's code at `version`: a partition its producer's coordinator answered
/// TRANSACTION_ABORTABLE (not in the open transaction) is told so from v11 (KIP-890: the
/// producer aborts and goes on), INVALID_TXN_STATE before (which older clients know), as
/// Kafka's `AddPartitionsToTxnManager` converts it; any other refusal is the same at every
/// version (INVALID_TXN_STATE for a partition the coordinator's answer left out, as for the
/// leader's own refusals); INVALID_RECORD from v8, CORRUPT_MESSAGE before.
fn produce_code(e: &Error, version: i16) -> Code {
    match e {
        Error::TxnUnverified(Code::TransactionAbortable) if version >= since::produce_transaction_abortable => Code::TransactionAbortable,
        _ => e.kafka_error(version >= 8),
    }
}

/// A produce request's batches checked, one per partition in the request's order (None where
/// a partition has no records).
pub fn produce_batches(req: &ProduceRequest) -> Vec<Option<Incoming>> {
    let parts = req.topic_data.iter().flat_map(|t| &t.partition_data);
    parts.map(|p| p.records.clone().map(Incoming::new)).collect()
}

pub enum FetchDecision {
    /// The response, and which of its partitions' records are file regions.
    Respond(FetchResponse, Vec<FileRecords>),
    Park(u64),
}

/// Fetch: whole batches up to the high watermark, the response within the request's
/// `max_bytes` (the first batch of the first non-empty partition may exceed it, KIP-74) and each
/// partition within its `partition_max_bytes`. Waits (`Park`) while fewer than `min_bytes` are
/// available and `max_wait_ms` has not passed. KIP-227 sessions (v7+, `broker::fetch_session`):
/// an incremental fetch reads every partition of its session and is answered with those that
/// have news; a parked fetch handled again changes its session only where a repeat changes
/// nothing, and only the answer sent updates what the session last told. From v13 topics are
/// named by id (KIP-516), in the request and the answer.
///
/// Every partition read, the session's as well as those named, is first looked at as Kafka's
/// `handleFetchRequest` does at every fetch: an id this broker's metadata does not know is
/// UNKNOWN_TOPIC_ID, a topic `caller` may not READ (a consumer's fetch, `authz::may_read`)
/// TOPIC_AUTHORIZATION_FAILED, a partition the metadata does not have
/// UNKNOWN_TOPIC_OR_PARTITION. Those are answered without being read, and neither end the long
/// poll nor prolong it (a fetch with nothing else is answered at once); an error reading a
/// partition answers at once, for the client to act on it.
pub fn fetch(b: &mut Broker, version: i16, req: FetchRequest, caller: Option<&crate::security::acl::Caller>, attempt: super::Attempt, now: u64, out: &mut Vec<Action>) -> FetchDecision {
    let final_attempt = attempt == super::Attempt::Final;
    let read_committed = req.isolation_level == crate::kafka::isolation::read_committed;
    let by_id = version >= since::fetch_topic_ids;
    // A follower names itself (Kafka's replica_id; -1 for consumers), and from v15 its broker
    // epoch (KIP-903).
    let (replica_id, broker_epoch) = crate::protocol::fetch_replica(&req);
    let replica = (replica_id >= 0).then_some(replica_id);
    // Each topic's key in the session and the answer: its name, or its id's text.
    let keys: Vec<Cow<str>> = req.topics.iter().map(|t| topic_key(by_id, &t.topic, t.topic_id)).collect();
    let forgotten_keys: Vec<Cow<str>> = req.forgotten_topics_data.iter().map(|t| topic_key(by_id, &t.topic, t.topic_id)).collect();
    let asked = asked_partitions(version, &req, &keys);
    let forgotten: Vec<(&str, i32)> = req.forgotten_topics_data.iter().zip(&forgotten_keys).flat_map(|(t, k)| t.partitions.iter().map(move |p| (k.as_ref(), *p))).collect();
    let session = if version >= 7 { (req.session_id, req.session_epoch) } else { (0, -1) };
    let plan = match b.fetch_sessions().begin(now, replica, session, by_id, attempt == super::Attempt::First, &asked, &forgotten) {
        Ok(plan) => plan,
        Err(code) => {
            // Kafka's SessionErrorContext: the error alone, no partition.
            let mut r = FetchResponse::default();
            r.error_code = code.code();
            return FetchDecision::Respond(r, Vec::new());
        }
    };
    let read: Vec<(&str, i32, Wanted)> = match &plan {
        Plan::Asked { .. } => asked.clone(),
        Plan::Session { partitions, .. } => partitions.iter().map(|(n, p, w)| (&**n, *p, *w)).collect(),
    };
    // A follower's CLUSTER_ACTION was checked before (`authz::check`); a consumer needs READ.
    let targets = {
        let access = caller.filter(|_| replica.is_none()).map(|c| super::authz::Access::of(b, c));
        fetch_targets(b, by_id, access.as_ref(), &read)
    };
    // The broker's own cap (Kafka `fetch.max.bytes`) bounds what one request can make it
    // allocate, whatever the client asks for.
    let cap = crate::constants::fetch_bytes_max;
    let mut budget = if version >= 3 { (req.max_bytes.max(0) as usize).min(cap) } else { cap };
    let mut total = 0usize;
    let (mut errors, mut readable) = (false, 0usize);
    // What each partition answers, small: most of an incremental session's are left out.
    let mut results: Vec<(&str, i32, Read)> = Vec::with_capacity(read.len());
    for (&(key, p, w), target) in read.iter().zip(targets) {
        let limit = (w.max_bytes.max(0) as usize).min(budget);
        let who = Fetcher { replica, leader_epoch: w.leader_epoch, log_start_offset: w.log_start_offset, again: attempt != super::Attempt::First, read_committed, broker_epoch };
        let fetched = match target {
            Ok(name) => {
                readable += 1;
                b.fetch(&name, p, w.fetch_offset, limit, total == 0, who, now, out).map_err(|e| {
                    errors = true;
                    match e {
                        // A follower below the log start restarts from there (see server::replica_fetch).
                        Error::OffsetOutOfRange { start, .. } => (e.kafka_error(true), start),
                        _ => (e.kafka_error(true), -1),
                    }
                })
            }
            Err(code) => Err((code, -1)),
        };
        let answer = match fetched {
            Ok(f) => {
                budget = budget.saturating_sub(f.records.len());
                total += f.records.len();
                Read { error_code: 0, high_watermark: f.high_watermark, last_stable_offset: f.last_stable_offset, log_start_offset: f.log_start_offset, records: f.records, aborted: f.aborted }
            }
            Err((code, log_start_offset)) => Read { error_code: code.code(), high_watermark: -1, last_stable_offset: -1, log_start_offset, records: Records::default(), aborted: Vec::new() },
        };
        results.push((key, p, answer));
    }
    // Kafka answers at once when reading a partition failed (the client must act on it), or
    // when there is no partition to read.
    if !final_attempt && !errors && readable > 0 && req.max_wait_ms > 0 && total < req.min_bytes.max(1) as usize {
        return FetchDecision::Park(req.max_wait_ms as u64);
    }
    let context = match plan {
        Plan::Asked { open: false } => Context::Sessionless,
        Plan::Asked { open: true } => b.fetch_sessions().open(now, replica, by_id, results.iter().zip(&read).map(|((n, p, a), (_, _, w))| (*n, *p, *w, a.told()))),
        Plan::Session { id, .. } => {
            let sessions = b.fetch_sessions();
            results.retain(|(n, p, a)| sessions.carries(id, n, *p, a.error_code != 0 || !a.records.is_empty(), a.told()));
            Context::Incremental { id }
        }
    };
    let mut r = FetchResponse::default();
    r.session_id = context.id();
    let mut files = Vec::new();
    let mut last_key = None;
    for (key, p, a) in results {
        let mut pd = PartitionData::default();
        pd.partition_index = p;
        // Empty for read_uncommitted (the fetch did not look them up).
        pd.aborted_transactions = Some(a.aborted.iter().map(|t| AbortedTransaction::default().with_producer_id(ProducerId(t.producer_id)).with_first_offset(t.first_offset)).collect());
        pd.error_code = a.error_code;
        pd.high_watermark = a.high_watermark;
        pd.last_stable_offset = a.last_stable_offset;
        pd.log_start_offset = a.log_start_offset;
        let records = a.records;
        if last_key != Some(key) {
            last_key = Some(key);
            let mut tr = FetchableTopicResponse::default();
            match by_id {
                true => tr.topic_id = topic_id(key).unwrap_or_default(),
                false => tr.topic = topic_name(key),
            }
            r.responses.push(tr);
        }
        let (topic, tr) = (r.responses.len() - 1, r.responses.last_mut().expect("pushed above"));
        pd.records = Some(match records {
            Records::Memory(bytes) => bytes,
            Records::File(regions) if regions.is_empty() => Bytes::new(),
            Records::File(regions) => {
                // Sent from the files by the shell; an empty placeholder here.
                files.push(FileRecords { topic, partition: tr.partitions.len(), regions });
                Bytes::new()
            }
        });
        tr.partitions.push(pd);
    }
    FetchDecision::Respond(r, files)
}

/// What a fetch does with each partition of `read` (by its key: a name, or by id an id's
/// text): the topic's name to read it by, or the error it is answered with unread
/// (Kafka's erroneous partitions, in Kafka's order): UNKNOWN_TOPIC_ID, then
/// TOPIC_AUTHORIZATION_FAILED (`access`: a consumer's, which needs READ), then
/// UNKNOWN_TOPIC_OR_PARTITION. Each topic is resolved and authorized once per run of its
/// partitions.
fn fetch_targets(b: &Broker, by_id: bool, access: Option<&super::authz::Access>, read: &[(&str, i32, Wanted)]) -> Vec<Result<std::sync::Arc<str>, Code>> {
    let mut run: Option<(&str, Result<std::sync::Arc<str>, Code>)> = None;
    let mut targets = Vec::with_capacity(read.len());
    for &(key, p, _) in read {
        if run.as_ref().is_none_or(|(k, _)| *k != key) {
            let name = match by_id {
                true => topic_id(key).and_then(|id| b.topic_by_id(*id.as_bytes()).cloned()).ok_or(Code::UnknownTopicId),
                false => Ok(std::sync::Arc::from(key)),
            };
            let allowed = name.and_then(|n| if super::authz::may_read(access, &n) { Ok(n) } else { Err(Code::TopicAuthorizationFailed) });
            run = Some((key, allowed));
        }
        let topic = run.as_ref().expect("set above").1.clone();
        targets.push(topic.and_then(|n| if b.image().partition(&n, p).is_some() { Ok(n) } else { Err(Code::UnknownTopicOrPartition) }));
    }
    targets
}

/// What a fetch read of one partition: an error code (0: none), and what the answer tells.
struct Read {
    error_code: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    records: Records,
    aborted: Vec<crate::log::txn_index::AbortedTxn>,
}

impl Read {
    fn told(&self) -> crate::broker::fetch_session::Told {
        (self.high_watermark, self.log_start_offset)
    }
}

/// A Fetch topic's key in its session and answer: its name, or (`by_id`, v13+) its id's text.
fn topic_key<'a>(by_id: bool, name: &'a TopicName, id: uuid::Uuid) -> Cow<'a, str> {
    match by_id {
        true => Cow::Owned(id.to_string()),
        false => Cow::Borrowed(name.0.as_str()),
    }
}

/// The topic id a key by id holds (None for a name).
fn topic_id(key: &str) -> Option<uuid::Uuid> {
    uuid::Uuid::parse_str(key).ok()
}

/// The partitions a Fetch names, each once (a partition asked twice is answered once), in its
/// order, with what it asks of each; `keys` are its topics' keys ([`topic_key`]).
fn asked_partitions<'a>(version: i16, req: &FetchRequest, keys: &'a [Cow<'a, str>]) -> Vec<(&'a str, i32, Wanted)> {
    let mut seen = PartitionMap::default();
    let mut asked = Vec::new();
    for (topic, key) in req.topics.iter().zip(keys) {
        let key = key.as_ref();
        for fp in &topic.partitions {
            if seen.insert(key, fp.partition, ()).is_some() {
                continue;
            }
            let wanted = Wanted {
                fetch_offset: fp.fetch_offset,
                log_start_offset: if version >= 5 { fp.log_start_offset } else { -1 },
                leader_epoch: if version >= 9 { fp.current_leader_epoch } else { -1 },
                max_bytes: fp.partition_max_bytes,
            };
            asked.push((key, fp.partition, wanted));
        }
    }
    asked
}

/// ListOffsets at each partition's leader. A special timestamp the request's version does not
/// know of (-3 before v7, -4 before v8, -5 before v9, any other negative one) is
/// UNSUPPORTED_VERSION for its partition, as Kafka answers it.
pub fn list_offsets(b: &Broker, version: i16, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let mut r = ListOffsetsResponse::default();
    let read_committed = req.isolation_level == crate::kafka::isolation::read_committed;
    for topic in req.topics {
        let name = topic.name.0.to_string();
        let mut tr = ListOffsetsTopicResponse::default();
        tr.name = topic.name.clone();
        for p in topic.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            let epoch = if version >= 4 { p.current_leader_epoch } else { -1 };
            let listed = match crate::kafka::list_offsets::first_version(p.timestamp) {
                Some(first) if version >= first => b.list_offset(&name, p.partition_index, p.timestamp, epoch, read_committed),
                _ => Err(Error::UnsupportedVersion),
            };
            match listed {
                Ok((ts, offset)) => {
                    pr.timestamp = ts;
                    pr.offset = offset;
                    if version >= 4 {
                        pr.leader_epoch = b.list_offset_epoch(&name, p.partition_index, p.timestamp, offset);
                    }
                }
                Err(e) => {
                    pr.error_code = e.kafka_error(true).code();
                    pr.timestamp = -1;
                    pr.offset = -1;
                }
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    r
}

/// DeleteRecords at each partition's leader: the log start moves at once; the answer waits
/// until every replica on a live broker reports a start at or past the offset (Kafka's
/// DelayedDeleteRecords), or the request's `timeout_ms` passes (REQUEST_TIMED_OUT). A topic
/// the caller may not DELETE (`denied`) is answered with its error, untouched.
pub fn delete_records(b: &mut Broker, (version, correlation_id): (i16, i32), req: DeleteRecordsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let mut r = DeleteRecordsResponse::default();
    let mut pending = Vec::new();
    for (ti, topic) in req.topics.into_iter().enumerate() {
        let name = topic.name.0.to_string();
        let mut tr = DeleteRecordsTopicResult::default();
        tr.name = topic.name.clone();
        for (slot, p) in topic.partitions.into_iter().enumerate() {
            let mut pr = DeleteRecordsPartitionResult::default();
            pr.partition_index = p.partition_index;
            pr.low_watermark = -1;
            match denied.of(&name).map_or_else(|| b.delete_records(&name, p.partition_index, p.offset, now), Err) {
                Ok((offset, leader_epoch)) => pending.push(PendingDelete { topic: ti, slot, name: name.clone(), partition: p.partition_index, offset, leader_epoch }),
                Err(e) => pr.error_code = e.kafka_error(true).code(),
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    let timeout = (req.timeout_ms.max(0) as u64).min(crate::constants::produce_wait_ms_max);
    let mut waiting = Waiting::delete_records(version, correlation_id, r, pending, timeout);
    // Every replica already there (a replication factor of one): answer now.
    Ok(waiting.poll_broker(b, false).unwrap_or(Outcome::Wait(waiting)))
}

/// InitProducerId without a transactional id: an idempotent producer's id.
pub fn init_producer_id(b: &mut Broker) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    match b.init_producer_id() {
        Ok((id, epoch)) => {
            r.producer_id = ProducerId(id);
            r.producer_epoch = epoch;
        }
        Err(e) => {
            r.error_code = e.kafka_error(true).code();
            r.producer_id = ProducerId(-1);
            r.producer_epoch = -1;
        }
    }
    r
}

pub fn offset_for_leader_epoch(b: &Broker, version: i16, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let mut r = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let name = t.topic.0.to_string();
        let mut tr = OffsetForLeaderTopicResult::default();
        tr.topic = t.topic.clone();
        for p in t.partitions {
            let mut e = EpochEndOffset::default();
            e.partition = p.partition;
            let current = if version >= 2 { p.current_leader_epoch } else { -1 };
            match b.end_offset_for_epoch(&name, p.partition, p.leader_epoch, current) {
                Ok((epoch, end)) => {
                    e.leader_epoch = epoch;
                    e.end_offset = end;
                }
                Err(err) => {
                    e.error_code = err.kafka_error(true).code();
                    e.leader_epoch = -1;
                    e.end_offset = -1;
                }
            }
            tr.partitions.push(e);
        }
        r.topics.push(tr);
    }
    r
}
