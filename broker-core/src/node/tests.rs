//! Node tests: real request bytes (encoded with kafka-protocol's client side) through
//! `handle`, responses decoded back. No sockets: the shell's framing is tested with real
//! clients in `tests/all/real_clients.rs`.

use crate::kafka::Code;
use super::*;
use crate::log::batch::build;
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::fetch_response::FetchResponse;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::metadata_response::MetadataResponse;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::produce_response::ProduceResponse;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use bytes::BytesMut;

fn broker(dir: &std::path::Path) -> Node {
    crate::testing::one_node(crate::testing::config(dir))
}

/// [`handle`], playing the shell's part in a produce's verification (KIP-890 part 1): the
/// AddPartitionsToTxn v4 it asks for goes to this same node (the only broker, so the
/// coordinator), and the produce is decided again with the answer.
fn handle_verifying(node: &Node, frame: &Bytes, now: u64, out: &mut Vec<crate::broker::Action>) -> Outcome {
    match handle(node, frame, now, Attempt::First, out) {
        Outcome::Verify { prepared, job } => {
            let answer = match job.coordinator {
                Some(0) => Ok(reply(handle(node, &self::frame(ApiKey::AddPartitionsToTxn, verify::verify_version, &verify::request(&job)), now, Attempt::First, out), ApiKey::AddPartitionsToTxn, verify::verify_version)),
                other => Err(format!("no coordinator here ({other:?})")),
            };
            handle_from(node, prepared.verified(verify::results(&job, answer)), None, now, Attempt::First, out)
        }
        other => other,
    }
}

/// A request frame (no size prefix) as a client would send it.
fn frame<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, body: &R) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(42)
        .with_client_id(Some(StrBytes::from_static_str("test")));
    let mut out = BytesMut::new();
    header.encode(&mut out, R::header_version(version)).unwrap();
    body.encode(&mut out, version).unwrap();
    out.freeze()
}

/// Decodes a reply as the client gets it (encoded by the shell), checking the size prefix and
/// correlation id.
fn reply<R: Decodable>(outcome: Outcome, key: ApiKey, version: i16) -> R {
    let mut bytes = match outcome {
        Outcome::Reply(response) => response.encode().unwrap(),
        // A zero-copy fetch answer: its regions read back.
        Outcome::Frame(frame) => frame.to_bytes().unwrap(),
        other => panic!("expected a reply, got {other:?}"),
    };
    let size = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(size + 4, bytes.len(), "size prefix matches the frame");
    let mut body = bytes.split_off(4);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 42);
    R::decode(&mut body, version).unwrap()
}

fn produce_req(topic: &str, records: Vec<u8>, acks: i16) -> ProduceRequest {
    let part = PartitionProduceData::default().with_index(0).with_records(Some(Bytes::from(records)));
    let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_string(topic.into()))).with_partition_data(vec![part]);
    ProduceRequest::default().with_acks(acks).with_timeout_ms(1000).with_topic_data(vec![t])
}

fn fetch_req(topic: &str, offset: i64, max_wait_ms: i32) -> FetchRequest {
    let p = FetchPartition::default().with_partition(0).with_fetch_offset(offset).with_partition_max_bytes(1 << 20);
    let t = FetchTopic::default().with_topic(TopicName(StrBytes::from_string(topic.into()))).with_partitions(vec![p]);
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![t])
}

#[test]
fn api_versions_lists_what_is_served_without_feature_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let b = broker(tmp.path());
    let out = handle(&b, &frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()), 0, Attempt::First, &mut Vec::new());
    let Outcome::Reply(response) = &out else { panic!() };
    let raw = response.encode().unwrap();
    // librdkafka 2.0.2 cannot parse v3 responses carrying the optional feature tags: the body
    // must end with an empty tagged-field section (a single 0 byte).
    assert_eq!(*raw.last().unwrap(), 0);
    let r: ApiVersionsResponse = reply(out, ApiKey::ApiVersions, 3);
    assert_eq!(r.error_code, 0);
    let produce = r.api_keys.iter().find(|k| k.api_key == 0).unwrap();
    // From Kafka 3.9's v0: the versions Kafka 4.0 removed are bridged (protocol::legacy).
    assert_eq!((produce.min_version, produce.max_version), (0, 11));
    assert!(r.supported_features.is_empty() && r.finalized_features.is_empty());
    // Kafka 3.9's newest versions: Fetch v17 (KIP-853), ListOffsets v9 (KIP-1005).
    let top = |key: ApiKey| r.api_keys.iter().find(|k| k.api_key == key as i16).map(|k| k.max_version);
    assert_eq!((top(ApiKey::Fetch), top(ApiKey::ListOffsets), top(ApiKey::ApiVersions)), (Some(17), Some(9), Some(4)));
    // A newer ApiVersions than served: UNSUPPORTED_VERSION, in a v0 body, with the list.
    let mut v9 = frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).to_vec();
    v9[2..4].copy_from_slice(&9i16.to_be_bytes());
    let out = handle(&b, &v9.into(), 0, Attempt::First, &mut Vec::new());
    let r: ApiVersionsResponse = reply(out, ApiKey::ApiVersions, 0);
    assert_eq!(r.error_code, Code::UnsupportedVersion.code());
    assert_eq!(r.api_keys.len(), crate::kafka::SERVED.len());
}

#[test]
fn hostile_frames_close_the_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let b = broker(tmp.path());
    let close = |o: Outcome| matches!(o, Outcome::Close(_));
    let mut unknown = frame(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default()).to_vec();
    unknown[0..2].copy_from_slice(&9999i16.to_be_bytes());
    assert!(close(handle(&b, &unknown.into(), 0, Attempt::First, &mut Vec::new())), "unknown API key");
    let mut join = frame(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default()).to_vec();
    join[0..2].copy_from_slice(&(ApiKey::JoinGroup as i16).to_be_bytes());
    assert!(close(handle(&b, &join.into(), 0, Attempt::First, &mut Vec::new())), "API not served");
    let produce = frame(ApiKey::Produce, 9, &produce_req("t", build(&[b"x"], 1), 1));
    assert!(close(handle(&b, &produce.slice(..produce.len() - 20), 0, Attempt::First, &mut Vec::new())), "truncated body");
    let mut v2 = produce.to_vec();
    v2[2..4].copy_from_slice(&2i16.to_be_bytes());
    assert!(close(handle(&b, &v2.into(), 0, Attempt::First, &mut Vec::new())), "produce v2 is below the served range");
    assert!(close(handle(&b, &Bytes::from_static(&[0xde; 64]), 0, Attempt::First, &mut Vec::new())), "garbage");
    assert!(close(handle(&b, &Bytes::from_static(&[0, 3]), 0, Attempt::First, &mut Vec::new())), "shorter than a header");
    use crate::protocol::frame_len;
    assert!(frame_len((-1i32).to_be_bytes(), 100).is_err());
    assert!(frame_len(101i32.to_be_bytes(), 100).unwrap_err().contains("socket.request.max.bytes"));
    assert_eq!(frame_len(100i32.to_be_bytes(), 100), Ok(100));
}

/// A quorum decision holds the quorum's lock across its metadata log's writes and syncs (a
/// topic of 200 partitions: 170 ms on this machine): a Metadata request, decided under the
/// node's other gate, must not wait for it (it reads the leader the quorum published).
#[test]
fn metadata_is_answered_while_a_quorum_decision_holds_the_quorum() {
    let tmp = tempfile::tempdir().unwrap();
    let b = broker(tmp.path());
    crate::testing::sync(&b, 0);
    assert_eq!(b.quorum_leader(), Some(0), "the lone voter's leadership is published");
    let held = b.controller().expect("a voter here");
    let (tx, rx) = std::sync::mpsc::channel();
    let answered = std::thread::scope(|s| {
        s.spawn(|| {
            let md = MetadataRequest::default().with_topics(None);
            let r: MetadataResponse = reply(handle(&b, &frame(ApiKey::Metadata, 12, &md), 0, Attempt::First, &mut Vec::new()), ApiKey::Metadata, 12);
            let _ = tx.send(r.controller_id.0);
        });
        let answered = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(held);
        answered
    });
    assert_eq!(answered, Ok(0), "Metadata waited for the quorum's lock");
}

#[test]
fn produce_fetch_and_long_poll() {
    let tmp = tempfile::tempdir().unwrap();
    let b = broker(tmp.path());
    // Metadata auto-creates the topic.
    let md = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_static_str("t"))))]))
        .with_allow_auto_topic_creation(true);
    let r: MetadataResponse = reply(handle(&b, &frame(ApiKey::Metadata, 12, &md), 0, Attempt::First, &mut Vec::new()), ApiKey::Metadata, 12);
    assert_eq!(r.topics[0].error_code, Code::LeaderNotAvailable.code(), "while the controller creates it");
    crate::testing::sync(&b, 0);
    let r: MetadataResponse = reply(handle(&b, &frame(ApiKey::Metadata, 12, &md), 0, Attempt::First, &mut Vec::new()), ApiKey::Metadata, 12);
    assert_eq!((r.topics[0].error_code, r.topics[0].partitions.len()), (0, 1));
    assert_eq!((r.topics[0].partitions[0].leader_id.0, r.controller_id.0), (0, 0));
    assert_eq!(r.brokers[0].port, 9092);
    // An empty partition parks a fetch with max_wait, then answers empty when the wait is over.
    let f = frame(ApiKey::Fetch, 12, &fetch_req("t", 0, 500));
    assert!(matches!(handle(&b, &f, 0, Attempt::First, &mut Vec::new()), Outcome::Park { wait_ms: 500, metadata: false }));
    let r: FetchResponse = reply(handle(&b, &f, 0, Attempt::Final, &mut Vec::new()), ApiKey::Fetch, 12);
    assert_eq!(r.responses[0].partitions[0].records.as_ref().map(|x| x.len()), Some(0));
    // Produce acks=1, then the fetch has data at once.
    let batch = build(&[b"hello", b"world"], 7);
    let r: ProduceResponse = reply(handle(&b, &frame(ApiKey::Produce, 9, &produce_req("t", batch.clone(), 1)), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    let pr = &r.responses[0].partition_responses[0];
    assert_eq!((pr.error_code, pr.base_offset), (0, 0));
    let r: FetchResponse = reply(handle(&b, &f, 0, Attempt::First, &mut Vec::new()), ApiKey::Fetch, 12);
    let pd = &r.responses[0].partitions[0];
    assert_eq!((pd.error_code, pd.high_watermark), (0, 2));
    assert_eq!(&pd.records.as_ref().unwrap()[61..], &batch[61..], "the batch comes back byte for byte after its header");
    // acks=0: no response at all; the record is appended.
    assert!(matches!(handle(&b, &frame(ApiKey::Produce, 9, &produce_req("t", batch.clone(), 0)), 0, Attempt::First, &mut Vec::new()), Outcome::NoReply));
    // Errors per partition: bad acks, unknown topic, out-of-range fetch.
    let r: ProduceResponse = reply(handle(&b, &frame(ApiKey::Produce, 9, &produce_req("t", batch.clone(), 5)), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, Code::InvalidRequiredAcks.code());
    let r: ProduceResponse = reply(handle(&b, &frame(ApiKey::Produce, 9, &produce_req("none", batch, 1)), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, Code::UnknownTopicOrPartition.code());
    let r: FetchResponse = reply(handle(&b, &frame(ApiKey::Fetch, 12, &fetch_req("t", 99, 0)), 0, Attempt::First, &mut Vec::new()), ApiKey::Fetch, 12);
    assert_eq!(r.responses[0].partitions[0].error_code, Code::OffsetOutOfRange.code());
}

/// An answer that waits for the commit to be applied here: applied, then polled.
trait PipeWait {
    fn pipe_wait(self, node: &Node) -> Outcome;
}

impl PipeWait for Outcome {
    fn pipe_wait(self, node: &Node) -> Outcome {
        match self {
            Outcome::Wait(mut waiting) => {
                crate::testing::apply_metadata(node, 0);
                waiting.poll(node, false).expect("answered once applied")
            }
            other => other,
        }
    }
}

/// A node with topic "t" (one partition), auto-created and synced.
fn node_with_topic(config: crate::broker::BrokerConfig) -> Node {
    let b = crate::testing::one_node(config);
    let md = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_static_str("t"))))]))
        .with_allow_auto_topic_creation(true);
    handle(&b, &frame(ApiKey::Metadata, 12, &md), 0, Attempt::First, &mut Vec::new());
    crate::testing::sync(&b, 0);
    b
}

/// The shell checks a produce request's batches before its decision (`prepare`, off the node's
/// lock): every answer, error codes and their precedence included, is the one the request gets
/// when it is read under the lock, and a frame `prepare` cannot read is left to `handle`.
#[test]
fn produce_checked_before_its_decision_is_answered_alike() {
    let good = build(&[b"hello", b"world"], 7);
    let mut bad_crc = good.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    // Over message.max.bytes and corrupt: too large wins, as when checked under the lock.
    let mut huge = build(&[&vec![7u8; 1_100_000]], 7);
    *huge.last_mut().unwrap() ^= 1;
    let mut bad_small = build(&[&[1u8; 200]], 7);
    *bad_small.last_mut().unwrap() ^= 1;
    let (ok, corrupt, too_large) = (0, Code::CorruptMessage.code(), Code::MessageTooLarge.code());
    // Under a limit above the default, a large batch is checked in the decision, after the
    // limit: a corrupt one is still refused as corrupt.
    let mut large_bad = huge.clone();
    let large_good = build(&[&vec![7u8; 1_100_000]], 7);
    *large_bad.last_mut().unwrap() ^= 2;
    let cases = [
        (None, good.clone(), ok),
        (None, bad_crc, corrupt),
        (None, huge, too_large),
        (None, Vec::new(), corrupt),
        (None, good, ok),
        (Some(2_000_000), large_good, ok),
        (Some(2_000_000), large_bad, corrupt),
        // Under a limit below the default, a checked (and corrupt) batch is too large first.
        (Some(100), bad_small, too_large),
    ];
    for (i, (limit, records, code)) in cases.into_iter().enumerate() {
        let (tmp_a, tmp_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let node = |dir: &std::path::Path| {
            let mut config = crate::testing::config(dir);
            config.log.max_message_bytes = limit.unwrap_or(config.log.max_message_bytes);
            node_with_topic(config)
        };
        let (prepared, unprepared) = (node(tmp_a.path()), node(tmp_b.path()));
        let f = frame(ApiKey::Produce, 9, &produce_req("t", records, 1));
        let early = prepare(decode_request(&f, true).unwrap());
        assert!(early.batches.is_some(), "case {i}: a readable produce is prepared");
        // The same decision with the batches checked under the lock instead.
        let Decoded::Request(late) = decode_request(&f, true).unwrap() else { panic!("case {i}: a request") };
        let late = Prepared { decoded: Decoded::Request(late), batches: None, verified: None, share_reads: None };
        let answers = [handle_from(&prepared, early, None, 0, Attempt::First, &mut Vec::new()), handle_from(&unprepared, late, None, 0, Attempt::First, &mut Vec::new())];
        let [a, b] = answers.map(|o| reply::<ProduceResponse>(o, ApiKey::Produce, 9).responses[0].partition_responses[0].clone());
        assert_eq!(a, b, "case {i}");
        assert_eq!(a.error_code, code, "case {i}: {:?}", a.error_message);
    }
    let produce = frame(ApiKey::Produce, 9, &produce_req("t", build(&[b"x"], 1), 1));
    assert!(decode_request(&produce.slice(..produce.len() - 20), true).is_err(), "a truncated body does not decode, which closes");
    assert!(prepare(decode_request(&frame(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()), true).unwrap()).batches.is_none(), "only produce is prepared");
}

mod acls;
mod cluster;
mod listeners;
mod configs;
mod coordinator_load;
mod fetch_checks;
mod fetch_sessions;
mod find_coordinator;
mod new_versions;
mod elect_leaders;
mod placement;
mod quotas;
mod regex_acls;
mod share_offsets;
mod transactions;
mod upkeep;

mod groups {
    //! The group APIs through `handle`: the offsets topic created on first FindCoordinator,
    //! and every invalid request answered with Kafka's code. (Bodies that do not decode close
    //! the connection like any other API's; a huge announced array count is survived by the
    //! broker binary's allocator, tested on the real socket in tests/all/real_clients.rs.)

    use super::*;
    use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
    use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
    use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
    use kafka_protocol::messages::join_group_response::JoinGroupResponse;
    use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kafka_protocol::messages::offset_commit_response::OffsetCommitResponse;
    use kafka_protocol::messages::GroupId;

    fn s(text: &str) -> StrBytes {
        StrBytes::from_string(text.into())
    }

    /// A node whose offsets topic exists and is led here (loaded), with topic `t`.
    fn coordinator(dir: &std::path::Path) -> Node {
        let mut config = crate::testing::config(dir);
        config.groups.offsets_partitions = 2;
        let node = crate::testing::one_node(config);
        crate::testing::create(&node, "t", 1, Default::default()).unwrap();
        let req = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g")]);
        let first: FindCoordinatorResponse = reply(handle(&node, &frame(ApiKey::FindCoordinator, 4, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::FindCoordinator, 4);
        assert_eq!(first.coordinators[0].error_code, Code::CoordinatorNotAvailable.code(), "the first answer: the topic is being created");
        crate::testing::sync(&node, 0);
        let again: FindCoordinatorResponse = reply(handle(&node, &frame(ApiKey::FindCoordinator, 4, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::FindCoordinator, 4);
        assert_eq!((again.coordinators[0].error_code, again.coordinators[0].node_id.0), (0, 0));
        node
    }

    fn join(node: &Node, group: &str, session_ms: i32, protocols: usize) -> JoinGroupResponse {
        let p = (0..protocols).map(|i| JoinGroupRequestProtocol::default().with_name(s(&format!("p{i}"))).with_metadata(Bytes::from_static(b"m"))).collect();
        let req = JoinGroupRequest::default().with_group_id(GroupId(s(group))).with_session_timeout_ms(session_ms).with_rebalance_timeout_ms(10_000).with_protocol_type(s("consumer")).with_protocols(p);
        reply(handle(node, &frame(ApiKey::JoinGroup, 5, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::JoinGroup, 5)
    }

    fn commit(node: &Node, topic: &str, partition: i32, metadata: &str) -> i16 {
        let p = OffsetCommitRequestPartition::default().with_partition_index(partition).with_committed_offset(5).with_committed_metadata(Some(s(metadata)));
        let t = OffsetCommitRequestTopic::default().with_name(TopicName(s(topic))).with_partitions(vec![p]);
        let req = OffsetCommitRequest::default().with_group_id(GroupId(s("g"))).with_generation_id_or_member_epoch(-1).with_topics(vec![t]);
        let r: OffsetCommitResponse = reply(handle(node, &frame(ApiKey::OffsetCommit, 8, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::OffsetCommit, 8);
        r.topics[0].partitions[0].error_code
    }

    #[test]
    fn invalid_group_requests_get_kafkas_codes() {
        let tmp = tempfile::tempdir().unwrap();
        let node = coordinator(tmp.path());
        assert_eq!(join(&node, "", 10_000, 1).error_code, Code::InvalidGroupId.code());
        assert_eq!(join(&node, "g", 10, 1).error_code, Code::InvalidSessionTimeout.code());
        assert_eq!(join(&node, "g", 10_000, 0).error_code, Code::InconsistentGroupProtocol.code());
        assert_eq!(join(&node, "g", 10_000, crate::constants::group_protocols_max + 1).error_code, Code::InvalidRequest.code());
        assert_eq!(join(&node, &"x".repeat(crate::constants::group_id_bytes_max + 1), 10_000, 1).error_code, Code::InvalidGroupId.code());
        let required = join(&node, "g", 10_000, 1);
        assert_eq!(required.error_code, Code::MemberIdRequired.code());
        assert!(!required.member_id.is_empty(), "KIP-394: the answer carries the id to come back with");
        assert_eq!(commit(&node, "nope", 0, ""), Code::UnknownTopicOrPartition.code());
        assert_eq!(commit(&node, "t", 7, ""), Code::UnknownTopicOrPartition.code());
        assert_eq!(commit(&node, "t", 0, &"m".repeat(5_000)), Code::OffsetMetadataTooLarge.code());
        assert_eq!(commit(&node, "t", 0, "fine"), 0, "a standalone commit, replicated at once on one node");
    }

    /// A join that waits for the rebalance gets its answer from a later decision (the timer that
    /// ends the initial delay), as an action for its ticket, once: nothing is parked to collect.
    #[test]
    fn a_waiting_join_is_answered_by_the_decision_that_completes_the_rebalance() {
        let tmp = tempfile::tempdir().unwrap();
        let node = coordinator(tmp.path());
        let member = join(&node, "g", 10_000, 1).member_id;
        let p = vec![JoinGroupRequestProtocol::default().with_name(s("p0")).with_metadata(Bytes::from_static(b"m"))];
        let req = JoinGroupRequest::default().with_group_id(GroupId(s("g"))).with_member_id(member.clone()).with_session_timeout_ms(10_000).with_rebalance_timeout_ms(10_000).with_protocol_type(s("consumer")).with_protocols(p);
        let mut out = Vec::new();
        let Outcome::Wait(mut waiting) = handle(&node, &frame(ApiKey::JoinGroup, 5, &req), 0, Attempt::First, &mut out) else { panic!("the first member waits out the initial rebalance delay") };
        let ticket = waiting.tickets().to_vec();
        assert_eq!(ticket.len(), 1);
        assert!(!out.iter().any(|a| matches!(a, Action::Answer { .. })));
        assert!(waiting.poll(&node, false).is_none(), "not answered yet");
        let mut later = node.input(Input::Tick { checkpoint: false }, 60_000);
        let answers: Vec<_> = later.iter().filter(|a| matches!(a, Action::Answer { ticket: t, .. } if *t == ticket[0])).collect();
        assert_eq!(answers.len(), 1, "{later:?}");
        waiting.take_answers(&mut later);
        assert!(!later.iter().any(|a| matches!(a, Action::Answer { .. })), "taken by the request");
        let r: JoinGroupResponse = reply(waiting.poll(&node, false).expect("answered"), ApiKey::JoinGroup, 5);
        assert_eq!((r.error_code, r.generation_id, r.member_id.as_str()), (0, 1, member.as_str()));
        let again = node.input(Input::Tick { checkpoint: false }, 60_001);
        assert!(!again.iter().any(|a| matches!(a, Action::Answer { .. })), "answered once");
    }
}

mod forwarding {
    use super::*;
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
    use kafka_protocol::messages::create_topics_response::CreateTopicsResponse;
    use kafka_protocol::messages::envelope_response::EnvelopeResponse;

    fn create_req(name: &str) -> CreateTopicsRequest {
        let t = CreatableTopic::default().with_name(TopicName(StrBytes::from_string(name.into()))).with_num_partitions(1).with_replication_factor(1);
        CreateTopicsRequest::default().with_topics(vec![t]).with_timeout_ms(1000)
    }

    /// Runs a request to its answer on a lone node (its waits settle once metadata is applied).
    fn settle(node: &Node, outcome: Outcome) -> Outcome {
        let Outcome::Wait(mut waiting) = outcome else { return outcome };
        crate::testing::sync(node, 0);
        waiting.poll(node, false).expect("answered once applied")
    }

    /// An envelope's answer, and the response inside it (header checked: the client's own
    /// correlation id).
    fn opened<R: Decodable>(outcome: Outcome, key: ApiKey, version: i16) -> (EnvelopeResponse, Option<R>) {
        let envelope: EnvelopeResponse = reply(outcome, ApiKey::Envelope, 0);
        let inner = envelope.response_data.clone().map(|mut data| {
            let header = ResponseHeader::decode(&mut data, key.response_header_version(version)).unwrap();
            assert_eq!(header.correlation_id, 42, "the client's correlation id, relayed unchanged");
            R::decode(&mut data, version).unwrap()
        });
        (envelope, inner)
    }

    #[test]
    fn a_node_that_is_not_the_controller_forwards_and_falls_back_to_not_controller() {
        let tmp = tempfile::tempdir().unwrap();
        let disk: std::sync::Arc<dyn crate::storage::Disk> = std::sync::Arc::new(crate::storage::FileDisk::new());
        let node = Node::new(Broker::open(disk, crate::testing::config(tmp.path()), 0).unwrap(), None);
        let request = frame(ApiKey::CreateTopics, 5, &create_req("t"));
        let Outcome::Forward { request: forwarded, fallback } = handle(&node, &request, 0, Attempt::First, &mut Vec::new()) else {
            panic!("a CreateTopics on a node without a controller must be forwarded")
        };
        assert_eq!(forwarded, request, "the client's frame is forwarded as it came");
        let r: CreateTopicsResponse = reply(Outcome::Reply(fallback), ApiKey::CreateTopics, 5);
        assert_eq!(r.topics[0].error_code, Code::NotController.code());
        // An envelope reaching it is refused as a whole: the forwarder asks elsewhere.
        let envelope = frame(ApiKey::Envelope, 0, &crate::protocol::envelope::envelope(request, [127, 0, 0, 1].into(), "User:ANONYMOUS"));
        let (e, inner) = opened::<CreateTopicsResponse>(handle(&node, &envelope, 0, Attempt::First, &mut Vec::new()), ApiKey::CreateTopics, 5);
        assert_eq!((e.error_code, inner), (Code::NotController.code(), None));
    }

    #[test]
    fn the_controller_answers_an_envelope_inside_it_and_never_forwards_it() {
        let tmp = tempfile::tempdir().unwrap();
        let node = broker(tmp.path());
        let inner = frame(ApiKey::CreateTopics, 5, &create_req("forwarded"));
        let envelope = frame(ApiKey::Envelope, 0, &crate::protocol::envelope::envelope(inner.clone(), [127, 0, 0, 1].into(), "User:ANONYMOUS"));
        let outcome = settle(&node, handle(&node, &envelope, 0, Attempt::First, &mut Vec::new()));
        let (e, created) = opened::<CreateTopicsResponse>(outcome, ApiKey::CreateTopics, 5);
        assert_eq!(e.error_code, 0);
        let created = created.expect("the CreateTopics answer inside");
        assert_eq!((created.topics[0].error_code, created.topics[0].num_partitions), (0, 1));
        assert!(node.broker().image().topics.contains_key("forwarded"));
        // The same request again, sent directly: answered here, not forwarded.
        let direct = settle(&node, handle(&node, &inner, 0, Attempt::First, &mut Vec::new()));
        let r: CreateTopicsResponse = reply(direct, ApiKey::CreateTopics, 5);
        assert_eq!(r.topics[0].error_code, Code::TopicAlreadyExists.code());
        // Only the forwarded APIs may travel in an envelope.
        let produce = frame(ApiKey::Produce, 9, &produce_req("forwarded", build(&[b"x"], 1), 1));
        let envelope = frame(ApiKey::Envelope, 0, &crate::protocol::envelope::envelope(produce, [127, 0, 0, 1].into(), "User:ANONYMOUS"));
        let (e, inner) = opened::<CreateTopicsResponse>(handle(&node, &envelope, 0, Attempt::First, &mut Vec::new()), ApiKey::CreateTopics, 5);
        assert_eq!((e.error_code, inner), (Code::InvalidRequest.code(), None));
    }
}

/// The quorum's inputs: its lines come out as actions (the quorum never logs on its own), and a
/// commit says the metadata moved.
#[test]
fn a_quorum_tick_returns_the_quorums_lines_and_says_when_metadata_moved() {
    let dir = tempfile::tempdir().unwrap();
    let node = broker(dir.path());
    let first = node.input(Input::Quorum(QuorumInput::Tick), 1);
    let lines: Vec<&str> = first.iter().filter_map(Action::line).collect();
    assert!(lines.iter().any(|l| l.starts_with("controller: active in epoch")), "the election a lone voter made at open is reported: {first:?}");
    assert!(node.input(Input::Quorum(QuorumInput::Tick), 2).iter().all(|a| a.line().is_none()), "reported once");
    assert!(!node.input(Input::Quorum(QuorumInput::Tick), 3).contains(&Action::MetadataMoved), "nothing moved");
}

/// A voter of three: its ticks ask for votes as `Action::Raft` messages, and once the answers
/// (fed in as `QuorumInput::Message`) elect it, the leadership's first entry is reported as
/// metadata that moved.
#[test]
fn a_voter_asks_for_votes_as_actions_and_reports_its_election_as_metadata_moved() {
    use crate::controller::raft::{Body, Message};
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::testing::config(dir.path());
    config.voters = (0..3).map(|id| (id, format!("127.0.0.1:{}", 9092 + id))).collect();
    let disk: std::sync::Arc<dyn crate::storage::Disk> = std::sync::Arc::new(crate::storage::FileDisk::new());
    let (quorum, _) = crate::server::config::open_quorum(disk.clone(), &config, 0).unwrap().unwrap();
    let node = Node::new(crate::broker::Broker::open(disk, config, 0).unwrap(), Some(quorum));
    let mut now = 0;
    let mut asked = 0;
    let elected = loop {
        now += 100;
        assert!(now < 60_000, "never elected");
        let mut actions = node.input(Input::Quorum(QuorumInput::Tick), now);
        let mut i = 0;
        while i < actions.len() {
            if let Action::Raft(Message { to: 1, body: Body::Vote { epoch, pre_vote, .. }, .. }) = actions[i].clone() {
                asked += 1;
                // The voter answers in its own epoch: a pre-vote asks about the next one.
                let own = if pre_vote { epoch - 1 } else { epoch };
                let granted = Message { from: 1, to: 0, body: Body::VoteResponse { epoch: own, pre_vote, granted: true, leader: None } };
                actions.extend(node.input(Input::Quorum(QuorumInput::Message(granted)), now));
            }
            i += 1;
        }
        if actions.contains(&Action::MetadataMoved) {
            break actions;
        }
    };
    assert!(asked >= 1, "votes were asked for as messages");
    assert!(node.controller().unwrap().raft().is_leader(), "{elected:?}");
    assert!(elected.iter().any(|a| matches!(a, Action::Raft(Message { body: Body::BeginQuorumEpoch { .. }, .. }))), "the new leader announces itself: {elected:?}");
}

/// A Raft message for a node that is no voter closes the connection and touches nothing.
#[test]
fn a_raft_message_to_a_node_that_is_no_voter_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let broker = crate::broker::Broker::open(std::sync::Arc::new(crate::storage::FileDisk::new()), crate::testing::config(dir.path()), 0).unwrap();
    let node = Node::new(broker, None);
    let m = crate::controller::raft::Message { from: 1, to: 0, body: crate::controller::raft::Body::BeginQuorumEpoch { epoch: 1 } };
    let mut out = Vec::new();
    assert!(matches!(raft_message(&node, m, 0, &mut out), Err(e) if e.contains("not a controller voter")));
    assert!(out.is_empty());
}

/// A fetcher's round asks the node what to send: for a leader this node follows nothing of,
/// nothing (the shell's task idles), and never a pause it did not ask for.
#[test]
fn a_fetcher_round_for_a_leader_followed_in_nothing_is_idle() {
    let dir = tempfile::tempdir().unwrap();
    let node = broker(dir.path());
    let actions = node.input(Input::Fetcher { leader: 7, input: FetcherInput::Next }, 1);
    assert_eq!(actions, vec![Action::FetchFrom { leader: 7, step: crate::broker::Step::Idle }]);
}

/// With the write-behind (`log::deferred`) an acks=1 produce is answered once the job that
/// writes its batch reported back, and a write that fails is answered KAFKA_STORAGE_ERROR.
#[test]
fn with_the_write_behind_an_acks_1_produce_is_answered_once_its_write_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let fail = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let disk = std::sync::Arc::new(crate::storage::hooked::Hooked::new(std::sync::Arc::new(crate::storage::FileDisk::new()), std::sync::Arc::new(crate::testing::FailLogWrites(fail.clone()))));
    let node = crate::testing::one_node_on(disk, crate::broker::BrokerConfig { write_behind: true, ..crate::testing::config(tmp.path()) });
    let md = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_static_str("t"))))]))
        .with_allow_auto_topic_creation(true);
    handle(&node, &frame(ApiKey::Metadata, 12, &md), 0, Attempt::First, &mut Vec::new());
    crate::testing::sync(&node, 0);
    let produce = |value: &[u8], out: &mut Vec<crate::broker::Action>| match handle(&node, &frame(ApiKey::Produce, 9, &produce_req("t", build(&[value], 7), 1)), 0, Attempt::First, out) {
        Outcome::Wait(w) => w,
        _ => panic!("an acks=1 produce waits for its write"),
    };
    let mut out = Vec::new();
    let mut waiting = produce(b"a", &mut out);
    assert!(waiting.poll(&node, false).is_none(), "not answered before its write");
    crate::testing::run_syncs(&mut node.broker(), out, 0);
    let r: ProduceResponse = reply(waiting.poll(&node, false).expect("answered once written"), ApiKey::Produce, 9);
    assert_eq!((r.responses[0].partition_responses[0].error_code, r.responses[0].partition_responses[0].base_offset), (0, 0));

    fail.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut out = Vec::new();
    let mut waiting = produce(b"b", &mut out);
    crate::testing::run_syncs(&mut node.broker(), out, 0);
    let r: ProduceResponse = reply(waiting.poll(&node, false).expect("answered once its write failed"), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, Code::KafkaStorageError.code());
}

/// A partition this node leads by the image but whose replica is not open yet (its open job,
/// with the creation's sync, is out, `broker::opening`): Metadata names no leader, so clients
/// wait rather than be refused; once the job reports, this node.
#[test]
fn metadata_names_no_leader_for_a_replica_whose_open_has_not_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let (_, records) = node.controller().unwrap().controller().create_topic("t", 1, -1, std::collections::BTreeMap::new(), 0).unwrap();
    node.controller().unwrap().commit(records, 0).unwrap();
    let actions = node.input(Input::Metadata(crate::testing::metadata_run(&node)), 0);
    let ask = |node: &Node| {
        let md = MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_static_str("t"))))]));
        let r: MetadataResponse = reply(handle(node, &frame(ApiKey::Metadata, 12, &md), 1, Attempt::First, &mut Vec::new()), ApiKey::Metadata, 12);
        let p = &r.topics[0].partitions[0];
        (p.leader_id.0, p.error_code)
    };
    assert_eq!(ask(&node), (-1, Code::LeaderNotAvailable.code()), "its open job is out");
    let _ = crate::testing::run_opens(&node, actions, 1);
    assert_eq!(ask(&node), (0, 0), "the open reported: this node leads it");
}

