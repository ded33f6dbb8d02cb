//! The versions at the top of Kafka 3.9's ranges, through `handle`: Fetch v13+ by topic id
//! (KIP-516: UNKNOWN_TOPIC_ID, sessions by id, a re-created topic is another topic), v15's
//! ReplicaState (KIP-903), Produce v10 and Fetch v16 naming the leader of a partition led
//! elsewhere (KIP-951), ListOffsets v7-9's special timestamps (KIP-734, KIP-405, KIP-1005).

use super::*;
use crate::metadata::Endpoint;
use kafka_protocol::messages::fetch_request::{ForgottenTopic, ReplicaState};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_protocol::messages::list_offsets_response::ListOffsetsResponse;
use kafka_protocol::messages::BrokerId;
use uuid::Uuid;

fn ask<R: Encodable + HeaderVersion, A: Decodable>(node: &Node, key: ApiKey, version: i16, req: &R) -> A {
    reply(handle(node, &frame(key, version, req), 0, Attempt::First, &mut Vec::new()), key, version)
}

fn produce_to(node: &Node, topic: &str, p: i32, ts: i64, version: i16) -> ProduceResponse {
    let part = PartitionProduceData::default().with_index(p).with_records(Some(Bytes::from(build(&[b"r0", b"r1"], ts))));
    let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_string(topic.into()))).with_partition_data(vec![part]);
    ask(node, ApiKey::Produce, version, &ProduceRequest::default().with_acks(1).with_timeout_ms(1000).with_topic_data(vec![t]))
}

/// A consumer's fetch of `parts` (index, offset) of the topic with id `id`, in session `id`
/// and `epoch` (`(0, -1)`: none), forgetting `forgotten`.
fn fetch_by_id(topic: Uuid, parts: &[(i32, i64)], (session, epoch): (i32, i32), forgotten: &[i32]) -> FetchRequest {
    let ps = parts.iter().map(|&(p, o)| FetchPartition::default().with_partition(p).with_fetch_offset(o).with_partition_max_bytes(1 << 20)).collect();
    let topics = if parts.is_empty() { vec![] } else { vec![FetchTopic::default().with_topic_id(topic).with_partitions(ps)] };
    let forgotten = if forgotten.is_empty() { vec![] } else { vec![ForgottenTopic::default().with_topic_id(topic).with_partitions(forgotten.to_vec())] };
    FetchRequest::default().with_max_wait_ms(0).with_min_bytes(1).with_max_bytes(1 << 20).with_session_id(session).with_session_epoch(epoch).with_topics(topics).with_forgotten_topics_data(forgotten)
}

/// What an answer carries: (topic id, partition, error, records bytes, high watermark).
fn carried(r: &FetchResponse) -> Vec<(Uuid, i32, i16, usize, i64)> {
    r.responses.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index, p.error_code, p.records.as_ref().map_or(0, |x| x.len()), p.high_watermark))).collect()
}

#[test]
fn fetch_from_v13_names_topics_by_id_and_an_unknown_id_is_unknown_topic_id() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let id = Uuid::from_bytes(crate::testing::create(&node, "t", 1, Default::default()).unwrap());
    assert_eq!(produce_to(&node, "t", 0, 1000, 11).responses[0].partition_responses[0].error_code, 0);
    let unknown = Uuid::from_u128(0xfeed);
    for version in 13..=17 {
        // Both topics in one fetch: the records of the one the broker knows (from the files, a
        // zero-copy frame), the error of the other, each answered under its id.
        let mut req = fetch_by_id(id, &[(0, 0)], (0, -1), &[]);
        req.topics.push(FetchTopic::default().with_topic_id(unknown).with_partitions(vec![FetchPartition::default().with_partition(0).with_partition_max_bytes(1024)]));
        let out = handle(&node, &frame(ApiKey::Fetch, version, &req), 0, Attempt::First, &mut Vec::new());
        assert!(matches!(out, Outcome::Frame(_)), "v{version}: records are sent from the files");
        let r: FetchResponse = reply(out, ApiKey::Fetch, version);
        let got = carried(&r);
        assert_eq!(got.len(), 2, "v{version}: {got:?}");
        assert_eq!((got[0].0, got[0].2, got[0].4), (id, 0, 2), "v{version}: the topic's partition, by its id");
        assert!(got[0].3 > 0, "v{version}: its records");
        assert_eq!((got[1].0, got[1].2, got[1].4), (unknown, Code::UnknownTopicId.code(), -1), "v{version}: an id not in the metadata");
    }
    // v12 still goes by name.
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 12, &fetch_req("t", 0, 0));
    assert_eq!((r.responses[0].topic.0.as_str(), r.responses[0].partitions[0].error_code), ("t", 0));
}

#[test]
fn fetch_v15_names_the_follower_in_replica_state() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let id = Uuid::from_bytes(crate::testing::create(&node, "t", 1, Default::default()).unwrap());
    produce_to(&node, "t", 0, 1000, 11);
    // Broker 5 is no replica of t-0: a follower's fetch from it is refused, a consumer's read.
    let follower = fetch_by_id(id, &[(0, 0)], (0, -1), &[]).with_replica_state(ReplicaState::default().with_replica_id(BrokerId(5)).with_replica_epoch(3));
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 15, &follower);
    assert_eq!(r.responses[0].partitions[0].error_code, Code::NotLeaderOrFollower.code(), "ReplicaState names a follower");
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 15, &fetch_by_id(id, &[(0, 0)], (0, -1), &[]));
    assert_eq!(carried(&r)[0].2, 0, "no ReplicaState: a consumer");
}

#[test]
fn a_fetch_session_by_id_keeps_its_topic_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let id = Uuid::from_bytes(crate::testing::create(&node, "t", 2, Default::default()).unwrap());
    let full: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[(0, 0), (1, 0)], (0, 0), &[]));
    let session = full.session_id;
    assert!(session > 0 && carried(&full).len() == 2, "a session opened, every partition answered: {full:?}");
    produce_to(&node, "t", 1, 1000, 11);
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[], (session, 1), &[]));
    assert_eq!(carried(&r).iter().map(|c| (c.0, c.1, c.4)).collect::<Vec<_>>(), vec![(id, 1, 2)], "only the partition with news, by id");
    // A session by id is not continued by name, nor the other way round.
    let by_name = fetch_req("t", 0, 0).with_topics(vec![]).with_session_id(session).with_session_epoch(2);
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 12, &by_name);
    assert_eq!((r.error_code, r.responses.len()), (Code::FetchSessionTopicIdError.code(), 0));
    let named: FetchResponse = ask(&node, ApiKey::Fetch, 12, &fetch_req("t", 0, 0).with_session_epoch(0));
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[], (named.session_id, 1), &[]));
    assert_eq!(r.error_code, Code::FetchSessionTopicIdError.code());
    // Forgotten by id: partition 0 is no longer read.
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[(1, 2)], (session, 2), &[0]));
    assert_eq!(carried(&r).iter().map(|c| c.1).collect::<Vec<_>>(), vec![1], "named again: answered once");
    produce_to(&node, "t", 0, 1000, 11);
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[], (session, 3), &[]));
    assert_eq!(carried(&r), vec![], "partition 0 was forgotten");
    // Deleted and created again under its name: another topic. The session's partition of the
    // old id is UNKNOWN_TOPIC_ID, never the new topic's records.
    crate::testing::delete(&node, "t").unwrap();
    let new_id = Uuid::from_bytes(crate::testing::create(&node, "t", 2, Default::default()).unwrap());
    assert_ne!(new_id, id);
    produce_to(&node, "t", 1, 1000, 11);
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 13, &fetch_by_id(id, &[], (session, 4), &[]));
    assert_eq!(carried(&r).iter().map(|c| (c.0, c.1, c.2)).collect::<Vec<_>>(), vec![(id, 1, Code::UnknownTopicId.code())]);
}

/// Registers broker 1 (on this node's listener, at `b1:9093`) and has the controller hear it,
/// so it takes leaderships; applied here.
fn second_broker(node: &Node) {
    let listener = node.broker().config().security.inter_broker_listener.clone();
    {
        let mut q = node.controller().unwrap();
        let epoch = q.end_offset();
        let records = q.controller_mut().register_broker(1, &[Endpoint { name: listener, host: "b1".into(), port: 9093 }], crate::controller::no_previous_epoch, epoch, 0).unwrap();
        q.commit(records, 0).unwrap();
        for _ in 0..2 {
            let caught_up = q.end_offset();
            let (_, records) = q.controller_mut().heartbeat(1, epoch, caught_up, 0).unwrap();
            q.commit(records, 0).unwrap();
        }
    }
    crate::testing::apply_metadata(node, 0);
}

#[test]
fn produce_v10_and_fetch_v16_name_the_leader_of_a_partition_led_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    second_broker(&node);
    let id = Uuid::from_bytes(crate::testing::create(&node, "w", 2, Default::default()).unwrap());
    let info = |p: i32| node.broker().image().partition("w", p).cloned().unwrap();
    let p = (0..2).find(|p| info(*p).leader == 1).expect("one partition led by broker 1");
    let epoch = info(p).leader_epoch;
    let r = produce_to(&node, "w", p, 1000, 10);
    let pr = &r.responses[0].partition_responses[0];
    assert_eq!(pr.error_code, Code::NotLeaderOrFollower.code());
    assert_eq!((pr.current_leader.leader_id.0, pr.current_leader.leader_epoch), (1, epoch), "Produce v10: the leader to ask");
    assert_eq!(r.node_endpoints.iter().map(|n| (n.node_id.0, n.host.to_string(), n.port)).collect::<Vec<_>>(), vec![(1, "b1".to_string(), 9093)]);
    let r = produce_to(&node, "w", p, 1000, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, Code::NotLeaderOrFollower.code(), "Produce v9: the same error, without the fields");
    assert_eq!(r.responses[0].partition_responses[0].current_leader.leader_id.0, -1);
    // The partition this node leads is answered without them.
    let r = produce_to(&node, "w", 1 - p, 1000, 10);
    assert_eq!((r.responses[0].partition_responses[0].error_code, r.node_endpoints.len()), (0, 0));

    let r: FetchResponse = ask(&node, ApiKey::Fetch, 16, &fetch_by_id(id, &[(p, 0)], (0, -1), &[]));
    let pd = &r.responses[0].partitions[0];
    assert_eq!((pd.error_code, pd.current_leader.leader_id.0, pd.current_leader.leader_epoch), (Code::NotLeaderOrFollower.code(), 1, epoch), "Fetch v16: the leader to ask");
    assert_eq!(r.node_endpoints.iter().map(|n| (n.node_id.0, n.host.to_string(), n.port)).collect::<Vec<_>>(), vec![(1, "b1".to_string(), 9093)]);
    let r: FetchResponse = ask(&node, ApiKey::Fetch, 15, &fetch_by_id(id, &[(p, 0)], (0, -1), &[]));
    assert_eq!((r.responses[0].partitions[0].current_leader.leader_id.0, r.node_endpoints.len()), (-1, 0), "Fetch v15 names none");
}

fn list(node: &Node, version: i16, timestamp: i64) -> (i16, i64, i64, i32) {
    let p = ListOffsetsPartition::default().with_partition_index(0).with_current_leader_epoch(-1).with_timestamp(timestamp);
    let t = ListOffsetsTopic::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partitions(vec![p]);
    let r: ListOffsetsResponse = ask(node, ApiKey::ListOffsets, version, &ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![t]));
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.timestamp, p.offset, p.leader_epoch)
}

#[test]
fn list_offsets_v7_to_v9_answer_the_largest_timestamp_the_local_start_and_no_tiered_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let epoch = node.broker().leader_epoch("t", 0);
    // Nothing found carries no leader epoch (Kafka's buildErrorResponse(NONE)); the log start
    // of an empty log is the leader's, whose epoch began there.
    assert_eq!(list(&node, 7, -3), (0, -1, -1, -1), "an empty log has no largest timestamp");
    assert_eq!(list(&node, 8, -4), (0, -1, 0, epoch), "-4 on an empty log: its start, in the leader's epoch");
    assert_eq!(list(&node, 7, -2), (0, -1, 0, epoch));
    // Batches of two records at 1000, 5000 (offsets 2-3) and 3000.
    for ts in [1000, 5000, 3000] {
        assert_eq!(produce_to(&node, "t", 0, ts, 11).responses[0].partition_responses[0].error_code, 0);
    }
    let unsupported = Code::UnsupportedVersion.code();
    assert_eq!(list(&node, 7, -3), (0, 5000, 2, epoch), "-3: the first record with the largest timestamp, and its batch's epoch");
    assert_eq!(list(&node, 6, -3).0, unsupported, "-3 before v7");
    assert_eq!(list(&node, 8, -4), (0, -1, 0, epoch), "-4: the log start (all of the log is local)");
    assert_eq!(list(&node, 7, -4).0, unsupported, "-4 before v8");
    assert_eq!(list(&node, 9, -5), (0, -1, -1, -1), "-5: nothing is tiered");
    assert_eq!(list(&node, 8, -5).0, unsupported, "-5 before v9");
    assert_eq!(list(&node, 9, -6).0, unsupported, "no such target");
    assert_eq!(list(&node, 9, -1), (0, -1, 6, epoch), "latest as before");
    assert_eq!(list(&node, 9, 2000), (0, 5000, 2, epoch), "by timestamp as before");
    assert_eq!(list(&node, 9, 6000), (0, -1, -1, -1), "a timestamp past every record: none, and no epoch");
}

/// Fetch v13+ by id is authorized by the topic's name: a topic the caller may not READ is
/// answered TOPIC_AUTHORIZATION_FAILED under its id, an id the metadata does not have
/// UNKNOWN_TOPIC_ID (nothing to authorize), and a follower named in ReplicaState (v15) needs
/// CLUSTER_ACTION as one named by `replica_id` does.
#[test]
fn fetch_by_id_is_authorized_by_the_topics_name() {
    use crate::security::acl::Caller;
    use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
    use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
    let tmp = tempfile::tempdir().unwrap();
    let mut c = crate::testing::config(tmp.path());
    c.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: true, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    let node = crate::testing::one_node(c);
    let who = |principal: &str| Caller { principal: principal.into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None };
    let ask_as = |caller: &Caller, version: i16, req: &FetchRequest| handle_from(&node, prepare(decode_request(&frame(ApiKey::Fetch, version, req), true).unwrap()), Some(caller), 0, Attempt::First, &mut Vec::new());
    let open = Uuid::from_bytes(crate::testing::create(&node, "open", 1, Default::default()).unwrap());
    let secret = Uuid::from_bytes(crate::testing::create(&node, "secret", 1, Default::default()).unwrap());
    produce_to(&node, "open", 0, 1000, 11);
    // READ on "open" for alice (topic 2, literal 3, READ 3, ALLOW 3).
    let acl = AclCreation::default().with_resource_type(2).with_resource_name(StrBytes::from_static_str("open")).with_resource_pattern_type(3).with_principal(StrBytes::from_static_str("User:alice")).with_host(StrBytes::from_static_str("*")).with_operation(3).with_permission_type(3);
    let admin = who("User:admin");
    let created: CreateAclsResponse = reply(handle_from(&node, prepare(decode_request(&frame(ApiKey::CreateAcls, 3, &CreateAclsRequest::default().with_creations(vec![acl])), true).unwrap()), Some(&admin), 0, Attempt::First, &mut Vec::new()).pipe_wait(&node), ApiKey::CreateAcls, 3);
    assert_eq!(created.results[0].error_code, 0);
    let alice = who("User:alice");
    let mut req = fetch_by_id(open, &[(0, 0)], (0, -1), &[]);
    for id in [secret, Uuid::from_u128(404)] {
        req.topics.push(FetchTopic::default().with_topic_id(id).with_partitions(vec![FetchPartition::default().with_partition(0).with_partition_max_bytes(1024)]));
    }
    for version in [13, 16] {
        let r: FetchResponse = reply(ask_as(&alice, version, &req), ApiKey::Fetch, version);
        let mut got: Vec<(Uuid, i16)> = carried(&r).iter().map(|c| (c.0, c.2)).collect();
        got.sort();
        let mut want = vec![(open, 0), (secret, Code::TopicAuthorizationFailed.code()), (Uuid::from_u128(404), Code::UnknownTopicId.code())];
        want.sort();
        assert_eq!(got, want, "v{version}");
    }
    let follower = fetch_by_id(open, &[(0, 0)], (0, -1), &[]).with_replica_state(ReplicaState::default().with_replica_id(BrokerId(1)).with_replica_epoch(1));
    assert!(matches!(ask_as(&alice, 15, &follower), Outcome::Close(_)), "a follower's fetch needs CLUSTER_ACTION");
}

/// ListOffsets -3 and a timestamp inside a compressed batch: the records are read (decompressed),
/// so the answer is the first record with the timestamp, as Kafka's
/// `RecordBatch.offsetOfMaxTimestamp` and `FileRecords.searchForTimestamp` find it, not the
/// batch's base offset. One batch of four records per codec, at [100, 300, 200, 300] (+1000 per
/// codec, so each batch holds the log's largest).
#[test]
fn list_offsets_finds_a_record_inside_a_compressed_batch() {
    use crate::log::compressed::{codec_gzip, codec_lz4, codec_snappy, codec_zstd};
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let epoch = node.broker().leader_epoch("t", 0);
    for (i, codec) in [codec_gzip, codec_snappy, codec_lz4, codec_zstd].into_iter().enumerate() {
        let (i, at) = (i as i64, 1000 * i as i64);
        let records: Vec<(i64, Option<Bytes>, Option<Bytes>)> = [100, 300, 200, 300].iter().map(|ts| (at + ts, None, Some(Bytes::from_static(b"v")))).collect();
        let plain = crate::log::compressed::unowned(&records, kafka_protocol::records::Compression::None).unwrap();
        let batch = crate::log::compressed::with_codec(&plain, codec).unwrap();
        let part = PartitionProduceData::default().with_index(0).with_records(Some(Bytes::from(batch)));
        let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partition_data(vec![part]);
        let r: ProduceResponse = ask(&node, ApiKey::Produce, 11, &ProduceRequest::default().with_acks(1).with_timeout_ms(1000).with_topic_data(vec![t]));
        assert_eq!((r.responses[0].partition_responses[0].error_code, r.responses[0].partition_responses[0].base_offset), (0, 4 * i), "codec {codec}");
        assert_eq!(list(&node, 7, -3), (0, at + 300, 4 * i + 1, epoch), "codec {codec}: -3 is the first record at the largest timestamp");
        assert_eq!(list(&node, 7, at + 250), (0, at + 300, 4 * i + 1, epoch), "codec {codec}: the first record at or after the timestamp");
        assert_eq!(list(&node, 7, at + 301), (0, -1, -1, -1), "codec {codec}: past every record");
    }
}
