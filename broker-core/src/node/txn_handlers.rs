//! The transaction APIs. The transaction coordinator's: FindCoordinator for a transactional
//! id (in `group_handlers`, beside the group's), InitProducerId with a transactional id,
//! AddPartitionsToTxn (v0–3 from a client, v4 a leader's verification), AddOffsetsToTxn, EndTxn, DescribeTransactions and
//! ListTransactions; field-by-field translation to [`crate::txn::Coordinator`], whose
//! decisions they are, with a request waiting on its ticket when its state write must
//! replicate first ([`TxnReply`]). And those a partition leader answers: WriteTxnMarkers (a coordinator, or an
//! operator's tool aborting a hanging transaction, KIP-664, ends a producer's transaction on
//! the partitions this node leads; each marker is appended with acks=all and the request is
//! answered once every partition's marker is replicated, or failed, or the wait ran out) and
//! DescribeProducers (the producers a leader knows, with their open transactions). Wire only:
//! what a marker may do is the broker's (`broker::markers`).

use super::coordinator_link::{perform, sync_ownership, Txns};
use super::waiting::{Pending, Waiting};
use super::{Node, Outcome, Parts};
use crate::broker::{Action, Broker};
use crate::constants::txn_request_wait_ms_max;
use crate::kafka::{Code, TxnVersion};
use crate::protocol::{s, Response};
use crate::txn::{self, Answer, PartitionResults, ProducerIdAndEpoch, Work};
use kafka_protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_protocol::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;
use kafka_protocol::messages::add_partitions_to_txn_response::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult};
use kafka_protocol::messages::describe_transactions_request::DescribeTransactionsRequest;
use kafka_protocol::messages::describe_transactions_response::{DescribeTransactionsResponse, TopicData, TransactionState};
use kafka_protocol::messages::end_txn_request::EndTxnRequest;
use kafka_protocol::messages::end_txn_response::EndTxnResponse;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::list_transactions_request::ListTransactionsRequest;
use kafka_protocol::messages::list_transactions_response::{ListTransactionsResponse, TransactionState as Listed};
use kafka_protocol::messages::{ApiKey, ProducerId, TopicName};
use crate::log::batch::control::MarkerKind;
use kafka_protocol::messages::describe_producers_request::DescribeProducersRequest;
use kafka_protocol::messages::describe_producers_response::{DescribeProducersResponse, PartitionResponse, ProducerState, TopicResponse};
use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest};
use kafka_protocol::messages::write_txn_markers_response::{WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult, WriteTxnMarkersResponse};

/// WriteTxnMarkers: for each marker, each partition's error (none once it is replicated). A
/// marker on an offsets partition this node coordinates also ends the transaction's offsets
/// there, once replicated (`group::Coordinator::txn_marker`).
pub fn write_txn_markers(node: &Node, version: i16, correlation_id: i32, req: WriteTxnMarkersRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    let mut parts = node.parts();
    let Parts { broker: b, groups, .. } = &mut *parts;
    let mut r = WriteTxnMarkersResponse::default();
    let mut pending = Vec::new();
    for (mi, m) in req.markers.into_iter().enumerate() {
        let kind = if m.transaction_result { MarkerKind::Commit } else { MarkerKind::Abort };
        let tv = marker_version(&m);
        let mut mr = WritableTxnMarkerResult::default().with_producer_id(m.producer_id);
        for (ti, t) in m.topics.into_iter().enumerate() {
            let name: std::sync::Arc<str> = std::sync::Arc::from(t.name.0.as_str());
            let mut tr = WritableTxnMarkerTopicResult::default().with_name(t.name.clone());
            for (slot, p) in t.partition_indexes.into_iter().enumerate() {
                let mut pr = WritableTxnMarkerPartitionResult::default().with_partition_index(p);
                match b.write_marker(&name, p, (m.producer_id.0, m.producer_epoch, tv), kind, m.coordinator_epoch, now, out) {
                    Ok(produced) => {
                        if &*name == crate::group::offsets_topic {
                            groups.txn_marker(p, m.producer_id.0, kind == MarkerKind::Commit, crate::group::Appended { last_offset: produced.last_offset, leader_epoch: produced.leader_epoch, log: produced.log });
                        }
                        pending.push((mi, Pending { acks_all: true, topic: ti, slot, name: name.clone(), partition: p, produced }));
                    }
                    Err(e) => pr.error_code = e.kafka_error(true).code(),
                }
                tr.partitions.push(pr);
            }
            mr.topics.push(tr);
        }
        r.markers.push(mr);
    }
    // Replicated already (an ISR of one): the offsets it ended take effect now.
    super::coordinator_link::settle(b, groups, now, out);
    let mut waiting = Waiting::markers(version, correlation_id, r, pending, crate::constants::produce_wait_ms_max);
    // Already replicated (an ISR of one): answer now.
    waiting.poll_broker(b, false).unwrap_or(Outcome::Wait(waiting))
}

/// The transaction version a marker says it has ([`crate::kafka::marker_txn_version_tag`]);
/// classic without one, or with a level this broker does not know.
fn marker_version(m: &WritableTxnMarker) -> TxnVersion {
    let level = m.unknown_tagged_fields.get(&crate::kafka::marker_txn_version_tag).and_then(|b| b.first().copied());
    level.and_then(|l| TxnVersion::from_level(l as i64)).unwrap_or(TxnVersion::Classic)
}

/// DescribeProducers: per partition led here, every producer it knows (no last timestamp is
/// kept: -1); NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION elsewhere.
pub fn describe_producers(b: &Broker, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let mut r = DescribeProducersResponse::default();
    for t in req.topics {
        let mut tr = TopicResponse::default().with_name(t.name.clone());
        for p in t.partition_indexes {
            let mut pr = PartitionResponse::default().with_partition_index(p);
            match b.describe_producers(&t.name.0, p) {
                Ok(producers) => {
                    pr.active_producers = producers
                        .into_iter()
                        .map(|v| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(v.producer_id))
                                .with_producer_epoch(v.epoch as i32)
                                .with_last_sequence(v.last_sequence)
                                .with_last_timestamp(-1)
                                .with_coordinator_epoch(v.coordinator_epoch)
                                .with_current_txn_start_offset(v.current_txn_start_offset)
                        })
                        .collect()
                }
                Err(e) => {
                    pr.error_code = e.kafka_error(true).code();
                    pr.error_message = Some(crate::protocol::s(&e.to_string()));
                }
            }
            tr.partitions.push(pr);
        }
        r.topics.push(tr);
    }
    r
}

/// Runs `f` on the transaction coordinator with ownership brought up to date, then performs
/// its work.
fn with_txns<T>(node: &Node, now: u64, out: &mut Vec<Action>, f: impl FnOnce(&mut Broker, &mut txn::Coordinator, &mut Work) -> T) -> T {
    let mut parts = node.parts();
    let Parts { broker: b, txns, .. } = &mut *parts;
    let mut work = Work::default();
    sync_ownership(b, txns, now, &mut work);
    let result = f(b, &mut txns.coordinator, &mut work);
    perform::<Txns>(b, txns, work, now, out);
    result
}

/// KIP-588: clients older than `since` know no PRODUCER_FENCED; Kafka tells them
/// INVALID_PRODUCER_EPOCH, which fences them all the same.
fn for_version(code: Code, version: i16, since: i16) -> Code {
    match code {
        Code::ProducerFenced if version < since => Code::InvalidProducerEpoch,
        other => other,
    }
}

/// A transaction coordinator's response under construction: what it answers once its
/// ticket is answered, or when its wait runs out.
#[derive(Debug)]
pub(crate) struct TxnReply {
    key: ApiKey,
    version: i16,
    cid: i32,
    answer: Option<Answer>,
}

impl TxnReply {
    pub(crate) fn answered(&mut self, answer: Answer) {
        self.answer = Some(answer);
    }

    pub(crate) fn is_answered(&self) -> bool {
        self.answer.is_some()
    }

    /// The response: a state write that did not replicate in time is COORDINATOR_NOT_AVAILABLE
    /// (the client asks again), as Kafka translates its append's timeout.
    pub(crate) fn finish(self) -> Response {
        let late = Code::CoordinatorNotAvailable;
        let (key, version, cid) = (self.key, self.version, self.cid);
        match (key, self.answer) {
            (ApiKey::InitProducerId, Some(Answer::Producer(r))) => Response::new(key, version, cid, init_response(r, version)),
            (ApiKey::InitProducerId, _) => Response::new(key, version, cid, init_response(Err(late), version)),
            (ApiKey::AddPartitionsToTxn, Some(Answer::Partitions(r))) => Response::new(key, version, cid, partitions_response(r, version)),
            (ApiKey::AddPartitionsToTxn, _) => Response::new(key, version, cid, partitions_response(Vec::new(), version).with_error_code(late.code())),
            (ApiKey::AddOffsetsToTxn, a) => Response::new(key, version, cid, AddOffsetsToTxnResponse::default().with_error_code(done_code(a, version))),
            (_, a) => Response::new(key, version, cid, end_response(a, version)),
        }
    }
}

/// EndTxn's answer; v5 names the producer id and epoch to go on with (-1 on an error).
fn end_response(a: Option<Answer>, version: i16) -> EndTxnResponse {
    match a {
        Some(Answer::Ended(Ok(p))) => EndTxnResponse::default().with_producer_id(ProducerId(p.producer_id)).with_producer_epoch(p.epoch),
        Some(Answer::Ended(Err(c))) => EndTxnResponse::default().with_error_code(for_version(c, version, 2).code()).with_producer_id(ProducerId(-1)).with_producer_epoch(-1),
        _ => EndTxnResponse::default().with_error_code(Code::CoordinatorNotAvailable.code()).with_producer_id(ProducerId(-1)).with_producer_epoch(-1),
    }
}

fn done_code(a: Option<Answer>, version: i16) -> i16 {
    match a {
        Some(Answer::Done(Ok(()))) => 0,
        Some(Answer::Done(Err(c))) => for_version(c, version, 2).code(),
        _ => Code::CoordinatorNotAvailable.code(),
    }
}

/// Answers now, or waits on the ticket (answered at once if this decision answered it).
fn finish(node: &Node, out: &mut Vec<Action>, mut reply: TxnReply, pending: txn::Pending<Answer>) -> Outcome {
    let ticket = match pending {
        txn::Pending::Now(a) => {
            reply.answered(a);
            return Outcome::Reply(reply.finish());
        }
        txn::Pending::Wait(t) => t,
    };
    let mut waiting = Waiting::txn(reply, ticket, txn_request_wait_ms_max);
    waiting.take_answers(out);
    waiting.poll(node, false).unwrap_or(Outcome::Wait(waiting))
}

fn reply(key: ApiKey, version: i16, cid: i32) -> TxnReply {
    TxnReply { key, version, cid, answer: None }
}

fn init_response(r: Result<ProducerIdAndEpoch, Code>, version: i16) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse::default();
    match r {
        Ok(p) => (resp.producer_id, resp.producer_epoch) = (ProducerId(p.producer_id), p.epoch),
        Err(c) => (resp.error_code, resp.producer_id, resp.producer_epoch) = (for_version(c, version, 4).code(), ProducerId(-1), -1),
    }
    resp
}

fn partitions_response(results: PartitionResults, version: i16) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    for ((topic, p), r) in results {
        let code = r.err().map_or(0, |c| for_version(c, version, 2).code());
        let pr = AddPartitionsToTxnPartitionResult::default().with_partition_index(p).with_partition_error_code(code);
        match resp.results_by_topic_v3_and_below.last_mut() {
            Some(t) if t.name.0.as_str() == topic => t.results_by_partition.push(pr),
            _ => resp.results_by_topic_v3_and_below.push(AddPartitionsToTxnTopicResult::default().with_name(TopicName(s(&topic))).with_results_by_partition(vec![pr])),
        }
    }
    resp
}

/// InitProducerId: without a transactional id, the broker's idempotent producer id; with one,
/// the transaction coordinator's (KIP-360's expected id and epoch from v3).
pub fn init_producer_id(node: &Node, version: i16, cid: i32, req: InitProducerIdRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    let Some(txn_id) = req.transactional_id.as_ref().map(|t| t.0.to_string()) else {
        let mut b = node.broker();
        let r = super::handlers::init_producer_id(&mut b);
        out.extend(b.producer_ids_owed());
        return Outcome::Reply(Response::new(ApiKey::InitProducerId, version, cid, r));
    };
    let expected = (version >= 3 && req.producer_id.0 >= 0).then_some(ProducerIdAndEpoch { producer_id: req.producer_id.0, epoch: req.producer_epoch });
    let pending = with_txns(node, now, out, |b, c, w| {
        let new_id = || b.init_producer_id().map(|(id, _)| id).map_err(|e| e.kafka_error(true));
        c.init_producer_id(now as i64, &txn_id, req.transaction_timeout_ms, expected, new_id, w)
    });
    out.extend(node.broker().producer_ids_owed());
    finish(node, out, reply(ApiKey::InitProducerId, version, cid), answer(pending, Answer::Producer))
}

/// A coordinator call's outcome as an answer now or a ticket.
fn answer<T>(r: Result<txn::Pending<T>, Code>, wrap: impl FnOnce(Result<T, Code>) -> Answer) -> txn::Pending<Answer> {
    match r {
        Ok(txn::Pending::Now(v)) => txn::Pending::Now(wrap(Ok(v))),
        Ok(txn::Pending::Wait(t)) => txn::Pending::Wait(t),
        Err(c) => txn::Pending::Now(wrap(Err(c))),
    }
}

/// AddPartitionsToTxn: v0–3 a client adding partitions to its transaction; v4–5 a partition
/// leader's batch ([`verify_partitions`]).
pub fn add_partitions_to_txn(node: &Node, version: i16, cid: i32, req: AddPartitionsToTxnRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    if version >= 4 {
        return Outcome::Reply(Response::new(ApiKey::AddPartitionsToTxn, version, cid, verify_partitions(node, &req)));
    }
    let txn_id = req.v3_and_below_transactional_id.0.to_string();
    let partitions: Vec<(String, i32)> = req.v3_and_below_topics.iter().flat_map(|t| t.partitions.iter().map(|p| (t.name.0.to_string(), *p))).collect();
    let pending = with_txns(node, now, out, |b, c, w| {
        // A partition of a topic this node does not know fails alone, and the rest are not
        // added: Kafka answers OPERATION_NOT_ATTEMPTED for them.
        let unknown: Vec<&(String, i32)> = partitions.iter().filter(|(t, p)| b.image().topics.get(t).is_none_or(|x| *p < 0 || *p as usize >= x.partitions.len())).collect();
        if !unknown.is_empty() {
            let r = partitions.iter().map(|x| (x.clone(), Err(if unknown.contains(&x) { Code::UnknownTopicOrPartition } else { Code::OperationNotAttempted }))).collect();
            return txn::Pending::Now(r);
        }
        c.add_partitions(now as i64, &txn_id, req.v3_and_below_producer_id.0, req.v3_and_below_producer_epoch, &partitions, w)
    });
    finish(node, out, reply(ApiKey::AddPartitionsToTxn, version, cid), answer(Ok(pending), |r| Answer::Partitions(r.unwrap_or_default())))
}

/// AddPartitionsToTxn v4-5 from a partition leader (KIP-890 part 1): per transaction, whether
/// each partition is in its open transaction (`verify_only`), answered at once; a partition
/// that is not is TRANSACTION_ABORTABLE at v4 and v5 alike, as Kafka's coordinator answers it
/// (the leader tells a producer INVALID_TXN_STATE before Produce v11, `handlers::produce`).
/// An implicit add (`verify_only` false, which Kafka's leaders send for Produce v12) is
/// INVALID_REQUEST: this broker serves Produce up to v11, so none of its leaders sends one.
fn verify_partitions(node: &Node, req: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let parts = node.parts();
    let mut resp = AddPartitionsToTxnResponse::default();
    for t in &req.transactions {
        let partitions: Vec<(String, i32)> = t.topics.iter().flat_map(|x| x.partitions.iter().map(|p| (x.name.0.to_string(), *p))).collect();
        let results = match t.verify_only {
            true => parts.txns.coordinator.verify_partitions(t.transactional_id.0.as_str(), t.producer_id.0, t.producer_epoch, &partitions),
            false => Err(Code::InvalidRequest),
        };
        let abortable = |c: Code| if c == Code::InvalidTxnState { Code::TransactionAbortable } else { c };
        let results: PartitionResults = match results {
            // The coordinator's "not in the open transaction", on the wire as Kafka's says it.
            Ok(r) => r.into_iter().map(|(tp, r)| (tp, r.map_err(abortable))).collect(),
            Err(c) => partitions.into_iter().map(|tp| (tp, Err(c))).collect(),
        };
        let by_topic = partitions_response(results, 4).results_by_topic_v3_and_below;
        resp.results_by_transaction.push(AddPartitionsToTxnResult::default().with_transactional_id(t.transactional_id.clone()).with_topic_results(by_topic));
    }
    resp
}

/// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
pub fn add_offsets_to_txn(node: &Node, version: i16, cid: i32, req: AddOffsetsToTxnRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    let txn_id = req.transactional_id.0.to_string();
    let group = req.group_id.0.to_string();
    let pending = with_txns(node, now, out, |b, c, w| {
        // The group's partition, as Kafka places it (`partitionFor`): by the topic's partition
        // count, or before the topic exists by `offsets.topic.num.partitions`, which it will be
        // created with (asked for here, as the group coordinator asks on first use). Kafka
        // answers without the topic too; kafkajs does not retry a refusal here.
        let offsets = match b.image().topics.get(crate::group::offsets_topic) {
            Some(t) => t.partitions.len() as i32,
            None => {
                let _ = b.request_auto_create(crate::group::offsets_topic);
                b.config().groups.offsets_partitions
            }
        };
        c.add_offsets(now as i64, &txn_id, req.producer_id.0, req.producer_epoch, &group, offsets, w)
    });
    finish(node, out, reply(ApiKey::AddOffsetsToTxn, version, cid), answer(pending, Answer::Done))
}

/// EndTxn: commit or abort; v5 asks for KIP-890's epoch bump and is answered the producer id
/// and epoch to go on with.
pub fn end_txn(node: &Node, version: i16, cid: i32, req: EndTxnRequest, now: u64, out: &mut Vec<Action>) -> Outcome {
    let txn_id = req.transactional_id.0.to_string();
    let asked = TxnVersion::of_end_txn(version);
    let pending = with_txns(node, now, out, |b, c, w| {
        let new_id = || b.init_producer_id().map(|(id, _)| id).map_err(|e| e.kafka_error(true));
        c.end_txn(now as i64, &txn_id, req.producer_id.0, req.producer_epoch, req.committed, asked, new_id, w)
    });
    out.extend(node.broker().producer_ids_owed());
    finish(node, out, reply(ApiKey::EndTxn, version, cid), answer(pending, Answer::Ended))
}

/// DescribeTransactions: each id's state, at its coordinator.
pub fn describe_transactions(node: &Node, req: DescribeTransactionsRequest, now: u64, out: &mut Vec<Action>) -> DescribeTransactionsResponse {
    let mut r = DescribeTransactionsResponse::default();
    with_txns(node, now, out, |_, c, _| {
        for id in req.transactional_ids {
            let mut st = TransactionState::default().with_transactional_id(id.clone());
            match c.describe(&id.0) {
                Ok(d) => {
                    st.transaction_state = s(d.state);
                    st.transaction_timeout_ms = d.timeout_ms;
                    st.transaction_start_time_ms = d.start_ms;
                    st.producer_id = ProducerId(d.producer_id);
                    st.producer_epoch = d.epoch;
                    st.topics = d.topics.into_iter().map(|(t, ps)| TopicData::default().with_topic(TopicName(s(&t))).with_partitions(ps)).collect();
                }
                Err(code) => {
                    st.error_code = code.code();
                    st.transaction_state = s("");
                    st.producer_id = ProducerId(-1);
                    st.producer_epoch = -1;
                }
            }
            r.transaction_states.push(st);
        }
    });
    r
}

/// ListTransactions: the ids this node coordinates, filtered (v1's duration filter: open for
/// at least that long).
pub fn list_transactions(node: &Node, version: i16, req: ListTransactionsRequest, now: u64, out: &mut Vec<Action>) -> ListTransactionsResponse {
    let mut r = ListTransactionsResponse::default();
    let states: Vec<String> = req.state_filters.iter().map(|x| x.to_string()).collect();
    let ids: Vec<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    let min_open_ms = if version >= 1 { req.duration_filter } else { -1 };
    with_txns(node, now, out, |_, c, _| match c.list(&states, &ids) {
        Ok(list) => {
            r.unknown_state_filters = list.unknown_state_filters.iter().map(|x| s(x)).collect();
            for (id, producer_id, state) in list.states {
                let open_since = c.describe(&id).map_or(-1, |d| d.start_ms);
                if min_open_ms >= 0 && (open_since < 0 || (now as i64) - open_since < min_open_ms) {
                    continue;
                }
                r.transaction_states.push(Listed::default().with_transactional_id(kafka_protocol::messages::TransactionalId(s(&id))).with_producer_id(ProducerId(producer_id)).with_transaction_state(s(state)));
            }
        }
        Err(code) => r.error_code = code.code(),
    });
    r
}

/// The WriteTxnMarkers a coordinator sends for `send` (one marker per producer).
pub fn marker_request(send: &crate::txn::markers::Send) -> WriteTxnMarkersRequest {
    let mut req = WriteTxnMarkersRequest::default();
    for m in &send.markers {
        let mut topics: Vec<WritableTxnMarkerTopic> = Vec::new();
        for (t, p) in &m.partitions {
            match topics.last_mut() {
                Some(last) if last.name.0.as_str() == t => last.partition_indexes.push(*p),
                _ => topics.push(WritableTxnMarkerTopic::default().with_name(TopicName(s(t))).with_partition_indexes(vec![*p])),
            }
        }
        let mut marker = WritableTxnMarker::default().with_producer_id(ProducerId(m.producer_id)).with_producer_epoch(m.epoch).with_transaction_result(m.commit).with_coordinator_epoch(m.coordinator_epoch).with_topics(topics);
        if m.version != TxnVersion::Classic {
            marker.unknown_tagged_fields.insert(crate::kafka::marker_txn_version_tag, bytes::Bytes::copy_from_slice(&[m.version.level() as u8]));
        }
        req.markers.push(marker);
    }
    req
}

/// Each partition's outcome in a leader's answer to [`marker_request`]: markers are answered
/// per producer id, and a request holds one marker per producer.
pub fn marker_results(send: &crate::txn::markers::Send, answer: WriteTxnMarkersResponse) -> Vec<(u64, (String, i32), Option<Code>)> {
    let jobs: std::collections::BTreeMap<i64, u64> = send.markers.iter().map(|m| (m.producer_id, m.job)).collect();
    let mut results = Vec::new();
    for m in answer.markers {
        let Some(job) = jobs.get(&m.producer_id.0) else { continue };
        for t in m.topics {
            for p in t.partitions {
                results.push((*job, (t.name.0.to_string(), p.partition_index), crate::kafka::error(p.error_code)));
            }
        }
    }
    results
}
