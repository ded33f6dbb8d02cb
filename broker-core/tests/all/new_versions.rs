//! Kafka 3.9's newest API versions, asked of a real broker on a real socket at each version,
//! with requests and answers made by kafka-protocol 0.18: every answer must read at the
//! client's version (nothing left over) and say what the request did. Produce v10-11, Fetch
//! v13-17 by topic id (sessionless and in a session, from the files and copied, an unknown id),
//! ListOffsets v7-9's special timestamps, the versions that only add TRANSACTION_ABORTABLE
//! (FindCoordinator v5, InitProducerId v5, AddOffsetsToTxn v4, TxnOffsetCommit v4,
//! AddPartitionsToTxn v5), FindCoordinator v6's share-partition keys (Kafka 4.1's), ApiVersions
//! v4, BrokerRegistration v4 and BrokerHeartbeat v1.
//! Answering as Kafka 4.0 (`--legacy-api-versions false`) keeps them.

use crate::real_clients::Broker;
use crate::support::RawConnection;
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::time::{Duration, Instant};
use uuid::Uuid;

struct Client(RawConnection);

impl Client {
    fn connect(broker: &Broker) -> Client {
        Client(RawConnection::connect(&broker.bootstrap()))
    }

    /// Sends `body` at `version`; the answer's body read at that version.
    fn ask(&mut self, key: ApiKey, version: i16, body: RequestKind) -> ResponseKind {
        let (mut frame, correlation) = self
            .0
            .round_trip(|out, correlation| {
                let header = RequestHeader::default().with_request_api_key(key as i16).with_request_api_version(version).with_correlation_id(correlation).with_client_id(Some(StrBytes::from_static_str("new-versions")));
                header.encode(out, key.request_header_version(version)).expect("header");
                body.encode(out, version).expect("body");
            })
            .unwrap_or_else(|| panic!("{key:?} v{version}: no answer: the broker closed the connection"));
        let h = ResponseHeader::decode(&mut frame, key.response_header_version(version)).expect("answer header");
        assert_eq!(h.correlation_id, correlation, "{key:?} v{version}: correlation id");
        let body = ResponseKind::decode(key, &mut frame, version).unwrap_or_else(|e| panic!("{key:?} v{version}: the answer does not read at its version: {e}"));
        assert!(frame.is_empty(), "{key:?} v{version}: {} bytes after the answer", frame.len());
        body
    }

    /// Asks until `done` holds of the answer (a coordinator being created or loaded), for at
    /// most 30 s.
    fn ask_until(&mut self, key: ApiKey, version: i16, body: RequestKind, done: impl Fn(&ResponseKind) -> bool) -> ResponseKind {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self.ask(key, version, body.clone());
            if done(&r) {
                return r;
            }
            assert!(Instant::now() < until, "{key:?} v{version}: still {r:?} after 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn topic(name: &str) -> TopicName {
    TopicName(s(name))
}

/// A topic of one partition, created at CreateTopics v7, and its id once it has a leader.
fn create_topic(c: &mut Client, name: &str) -> Uuid {
    let t = create_topics_request::CreatableTopic::default().with_name(topic(name)).with_num_partitions(1).with_replication_factor(1);
    let ResponseKind::CreateTopics(r) = c.ask(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![t]).with_timeout_ms(10_000))) else { panic!("CreateTopics") };
    assert_eq!(r.topics[0].error_code, 0, "CreateTopics v7: {:?}", r.topics[0]);
    let md = MetadataRequest::default().with_topics(Some(vec![metadata_request::MetadataRequestTopic::default().with_name(Some(topic(name)))]));
    let ResponseKind::Metadata(r) = c.ask_until(ApiKey::Metadata, 12, RequestKind::Metadata(md), |r| matches!(r, ResponseKind::Metadata(m) if m.topics[0].error_code == 0 && m.topics[0].partitions.first().is_some_and(|p| p.leader_id.0 >= 0))) else { unreachable!() };
    r.topics[0].topic_id
}

fn produce(c: &mut Client, version: i16, name: &str, values: &[&str], ts: i64) -> produce_response::PartitionProduceResponse {
    let records: Vec<_> = values.iter().map(|v| (ts, None, Some(Bytes::from(v.to_string())))).collect();
    let batch = broker_core::log::compressed::unowned(&records, kafka_protocol::records::Compression::None).expect("a batch");
    let part = produce_request::PartitionProduceData::default().with_index(0).with_records(Some(batch));
    let t = produce_request::TopicProduceData::default().with_name(topic(name)).with_partition_data(vec![part]);
    let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_topic_data(vec![t]);
    let ResponseKind::Produce(r) = c.ask(ApiKey::Produce, version, RequestKind::Produce(req)) else { panic!("Produce v{version}") };
    r.responses[0].partition_responses[0].clone()
}

/// A consumer's Fetch of partition 0 of the topic with id `id` from `offset`, in session
/// `(id, epoch)` (`(0, -1)`: none).
fn fetch_request(id: Uuid, offset: i64, (session, epoch): (i32, i32)) -> FetchRequest {
    // ReplicaDirectoryId (v17, KIP-853) is a follower's: accepted and ignored.
    let part = fetch_request::FetchPartition::default().with_partition(0).with_fetch_offset(offset).with_partition_max_bytes(1 << 20).with_replica_directory_id(Uuid::from_u128(17));
    let t = fetch_request::FetchTopic::default().with_topic_id(id).with_partitions(vec![part]);
    FetchRequest::default().with_max_wait_ms(100).with_min_bytes(1).with_max_bytes(1 << 20).with_session_id(session).with_session_epoch(epoch).with_topics(vec![t])
}

/// The values of the records of a fetched partition, in order.
fn values(records: &Bytes) -> Vec<String> {
    let mut b = records.clone();
    let mut out = Vec::new();
    while !b.is_empty() {
        let set = broker_core::log::compressed::decode_batch(&mut b).expect("served batches decode");
        out.extend(set.records.into_iter().map(|r| String::from_utf8(r.value.unwrap_or_default().to_vec()).unwrap()));
    }
    out
}

/// Produce v10-11, Fetch v13-17 and ListOffsets v7-9 on a broker with `flags`.
fn produce_fetch_and_list_offsets(flags: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), flags);
    let mut c = Client::connect(&broker);
    let id = create_topic(&mut c, "new-a");
    let p = produce(&mut c, 10, "new-a", &["a0", "a1"], 1000);
    assert_eq!((p.error_code, p.base_offset, p.current_leader.leader_id.0), (0, 0, -1), "Produce v10: no leader to name when it is this one");
    let p = produce(&mut c, 11, "new-a", &["a2"], 9000);
    assert_eq!((p.error_code, p.base_offset), (0, 2), "Produce v11");
    let p = produce(&mut c, 11, "new-a", &["a3"], 5000);
    assert_eq!((p.error_code, p.base_offset), (0, 3), "Produce v11");
    let all = vec!["a0", "a1", "a2", "a3"];

    for version in 13..=17 {
        let ResponseKind::Fetch(r) = c.ask(ApiKey::Fetch, version, RequestKind::Fetch(fetch_request(id, 0, (0, -1)))) else { panic!() };
        let (t, pd) = (&r.responses[0], &r.responses[0].partitions[0]);
        assert_eq!((t.topic_id, pd.error_code, pd.high_watermark), (id, 0, 4), "Fetch v{version}: by id");
        assert_eq!(values(pd.records.as_ref().expect("records")), all, "Fetch v{version}");
        // An id the broker does not know.
        let ResponseKind::Fetch(r) = c.ask(ApiKey::Fetch, version, RequestKind::Fetch(fetch_request(Uuid::from_u128(404), 0, (0, -1)))) else { panic!() };
        assert_eq!((r.responses[0].topic_id, r.responses[0].partitions[0].error_code), (Uuid::from_u128(404), 100), "Fetch v{version}: UNKNOWN_TOPIC_ID");
    }
    // A session by id: the full fetch opens it, an incremental one carries only news.
    let ResponseKind::Fetch(full) = c.ask(ApiKey::Fetch, 16, RequestKind::Fetch(fetch_request(id, 4, (0, 0)))) else { panic!() };
    assert!(full.session_id > 0 && full.responses[0].partitions.len() == 1, "Fetch v16 full: {full:?}");
    let p = produce(&mut c, 11, "new-a", &["a4"], 2000);
    assert_eq!(p.base_offset, 4);
    let mut incremental = fetch_request(id, 4, (full.session_id, 1));
    incremental.topics.clear();
    let ResponseKind::Fetch(r) = c.ask(ApiKey::Fetch, 16, RequestKind::Fetch(incremental.clone())) else { panic!() };
    assert_eq!((r.error_code, r.responses.len()), (0, 1), "Fetch v16 incremental: {r:?}");
    assert_eq!((r.responses[0].topic_id, values(r.responses[0].partitions[0].records.as_ref().unwrap())), (id, vec!["a4".to_string()]));
    let ResponseKind::Fetch(r) = c.ask(ApiKey::Fetch, 12, RequestKind::Fetch(incremental.with_session_epoch(2))) else { panic!() };
    assert_eq!(r.error_code, 106, "a session by id continued by name: FETCH_SESSION_TOPIC_ID_ERROR");

    let list = |c: &mut Client, version: i16, ts: i64| {
        let p = list_offsets_request::ListOffsetsPartition::default().with_partition_index(0).with_current_leader_epoch(-1).with_timestamp(ts);
        let t = list_offsets_request::ListOffsetsTopic::default().with_name(topic("new-a")).with_partitions(vec![p]);
        let ResponseKind::ListOffsets(r) = c.ask(ApiKey::ListOffsets, version, RequestKind::ListOffsets(ListOffsetsRequest::default().with_replica_id((-1).into()).with_topics(vec![t]))) else { panic!() };
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.timestamp, p.offset)
    };
    assert_eq!(list(&mut c, 7, -3), (0, 9000, 2), "ListOffsets v7: the largest timestamp");
    assert_eq!(list(&mut c, 8, -4), (0, -1, 0), "ListOffsets v8: the earliest local offset");
    assert_eq!(list(&mut c, 9, -5), (0, -1, -1), "ListOffsets v9: nothing tiered");
    assert_eq!(list(&mut c, 6, -3).0, 35, "ListOffsets v6 of -3: UNSUPPORTED_VERSION");
    assert_eq!(list(&mut c, 9, -1), (0, -1, 5));
}

#[test]
fn produce_fetch_and_list_offsets_at_kafka_39s_newest_versions() {
    produce_fetch_and_list_offsets(&[]);
}

#[test]
fn fetch_by_id_copied_rather_than_sent_from_the_files() {
    produce_fetch_and_list_offsets(&["--fetch-zero-copy", "false"]);
}

/// The versions that only let an answer be TRANSACTION_ABORTABLE (KIP-890), through a
/// transaction that commits offsets and aborts; ApiVersions v4; a broker's registration v4 and
/// heartbeat v1 at the controller.
#[test]
fn transaction_and_cluster_apis_at_kafka_39s_newest_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &[]);
    let mut c = Client::connect(&broker);
    let ResponseKind::ApiVersions(v) = c.ask(ApiKey::ApiVersions, 4, RequestKind::ApiVersions(ApiVersionsRequest::default().with_client_software_name(s("new-versions")).with_client_software_version(s("1")))) else { panic!() };
    let top = |key: ApiKey| v.api_keys.iter().find(|k| k.api_key == key as i16).map(|k| k.max_version);
    let newest = [(ApiKey::Produce, 11), (ApiKey::Fetch, 17), (ApiKey::ListOffsets, 9), (ApiKey::ApiVersions, 4), (ApiKey::FindCoordinator, 6), (ApiKey::InitProducerId, 5), (ApiKey::AddPartitionsToTxn, 5), (ApiKey::AddOffsetsToTxn, 4), (ApiKey::TxnOffsetCommit, 4), (ApiKey::BrokerRegistration, 4), (ApiKey::BrokerHeartbeat, 1)];
    for (key, version) in newest {
        assert_eq!(top(key), Some(version), "ApiVersions v4: {key:?}'s newest");
    }
    let id = create_topic(&mut c, "txn-a");

    let tx = TransactionalId(s("new-tx"));
    let find = |key: &str, key_type: i8| RequestKind::FindCoordinator(FindCoordinatorRequest::default().with_key_type(key_type).with_coordinator_keys(vec![s(key)]));
    let found = |r: &ResponseKind| matches!(r, ResponseKind::FindCoordinator(f) if f.coordinators[0].error_code == 0);
    c.ask_until(ApiKey::FindCoordinator, 5, find("new-tx", 1), found);
    c.ask_until(ApiKey::FindCoordinator, 5, find("new-group", 0), found);
    // v6: a share-partition key (KIP-932) is answered with its group's coordinator; a
    // malformed one is INVALID_REQUEST (no authorizer: anyone may ask).
    use base64::Engine;
    let share_key = format!("new-group:{}:0", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes()));
    let ResponseKind::FindCoordinator(group) = c.ask(ApiKey::FindCoordinator, 6, find("new-group", 0)) else { panic!() };
    let ResponseKind::FindCoordinator(r) = c.ask(ApiKey::FindCoordinator, 6, find(&share_key, 2)) else { panic!() };
    let at = |f: &FindCoordinatorResponse| f.coordinators.iter().map(|c| (c.error_code, c.node_id.0, c.host.to_string(), c.port)).collect::<Vec<_>>();
    assert_eq!((at(&r), r.coordinators[0].key.to_string()), (at(&group), share_key), "FindCoordinator v6: the share key's group coordinator");
    let ResponseKind::FindCoordinator(r) = c.ask(ApiKey::FindCoordinator, 6, find("new-group", 2)) else { panic!() };
    assert_eq!(r.coordinators[0].error_code, broker_core::kafka::Code::InvalidRequest.code(), "FindCoordinator v6: a malformed share key is INVALID_REQUEST");
    let init = RequestKind::InitProducerId(InitProducerIdRequest::default().with_transactional_id(Some(tx.clone())).with_transaction_timeout_ms(60_000).with_producer_id((-1).into()).with_producer_epoch(-1));
    let ResponseKind::InitProducerId(r) = c.ask_until(ApiKey::InitProducerId, 5, init, |r| matches!(r, ResponseKind::InitProducerId(i) if i.error_code == 0)) else { unreachable!() };
    let (pid, epoch) = (r.producer_id, r.producer_epoch);

    let add = RequestKind::AddOffsetsToTxn(AddOffsetsToTxnRequest::default().with_transactional_id(tx.clone()).with_producer_id(pid).with_producer_epoch(epoch).with_group_id(GroupId(s("new-group"))));
    c.ask_until(ApiKey::AddOffsetsToTxn, 4, add, |r| matches!(r, ResponseKind::AddOffsetsToTxn(a) if a.error_code == 0));
    let p = txn_offset_commit_request::TxnOffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(0);
    let t = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default().with_name(topic("txn-a")).with_partitions(vec![p]);
    let commit = TxnOffsetCommitRequest::default().with_transactional_id(tx.clone()).with_group_id(GroupId(s("new-group"))).with_producer_id(pid).with_producer_epoch(epoch).with_generation_id(-1).with_member_id(s("")).with_topics(vec![t]);
    c.ask_until(ApiKey::TxnOffsetCommit, 4, RequestKind::TxnOffsetCommit(commit), |r| matches!(r, ResponseKind::TxnOffsetCommit(t) if t.topics[0].partitions[0].error_code == 0));
    // A leader's verification at v5 (no authorizer: anyone may ask): txn-a-0 is not in the
    // transaction, which v5 answers TRANSACTION_ABORTABLE.
    let verify = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
        .with_transactional_id(tx.clone())
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_verify_only(true)
        .with_topics(vec![add_partitions_to_txn_request::AddPartitionsToTxnTopic::default().with_name(topic("txn-a")).with_partitions(vec![0])]);
    let ResponseKind::AddPartitionsToTxn(r) = c.ask(ApiKey::AddPartitionsToTxn, 5, RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default().with_transactions(vec![verify]))) else { panic!() };
    assert_eq!(r.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code, 120, "AddPartitionsToTxn v5: TRANSACTION_ABORTABLE");
    let end = RequestKind::EndTxn(EndTxnRequest::default().with_transactional_id(tx).with_producer_id(pid).with_producer_epoch(epoch).with_committed(false));
    let ResponseKind::EndTxn(r) = c.ask(ApiKey::EndTxn, 4, end) else { panic!() };
    assert_eq!(r.error_code, 0, "EndTxn v4 aborts");

    // A broker registering at v4 and heartbeating at v1 (its offline directories, KIP-858):
    // registered, fenced until it catches up.
    let listener = broker_registration_request::Listener::default().with_name(s("PLAINTEXT")).with_host(s("127.0.0.1")).with_port(1).with_security_protocol(0);
    let reg = BrokerRegistrationRequest::default().with_broker_id(BrokerId(7)).with_cluster_id(s("")).with_incarnation_id(Uuid::from_u128(7)).with_listeners(vec![listener]).with_previous_broker_epoch(-1);
    let ResponseKind::BrokerRegistration(r) = c.ask(ApiKey::BrokerRegistration, 4, RequestKind::BrokerRegistration(reg)) else { panic!() };
    assert!(r.error_code == 0 && r.broker_epoch >= 0, "BrokerRegistration v4: {r:?}");
    let beat = BrokerHeartbeatRequest::default().with_broker_id(BrokerId(7)).with_broker_epoch(r.broker_epoch).with_current_metadata_offset(-1).with_offline_log_dirs(vec![Uuid::from_u128(1)]);
    let ResponseKind::BrokerHeartbeat(r) = c.ask(ApiKey::BrokerHeartbeat, 1, RequestKind::BrokerHeartbeat(beat)) else { panic!() };
    assert_eq!((r.error_code, r.is_fenced), (0, true), "BrokerHeartbeat v1");
}

#[test]
fn answering_as_kafka_4_keeps_the_newest_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &["--legacy-api-versions", "false"]);
    let mut c = Client::connect(&broker);
    let ResponseKind::ApiVersions(v) = c.ask(ApiKey::ApiVersions, 4, RequestKind::ApiVersions(ApiVersionsRequest::default())) else { panic!() };
    let range = |key: ApiKey| v.api_keys.iter().find(|k| k.api_key == key as i16).map(|k| (k.min_version, k.max_version));
    assert_eq!((range(ApiKey::Produce), range(ApiKey::Fetch), range(ApiKey::ListOffsets)), (Some((3, 11)), Some((4, 17)), Some((1, 9))));
    let id = create_topic(&mut c, "k4");
    assert_eq!(produce(&mut c, 11, "k4", &["x"], 1).error_code, 0);
    let ResponseKind::Fetch(r) = c.ask(ApiKey::Fetch, 17, RequestKind::Fetch(fetch_request(id, 0, (0, -1)))) else { panic!() };
    assert_eq!(values(r.responses[0].partitions[0].records.as_ref().unwrap()), vec!["x"]);
}
