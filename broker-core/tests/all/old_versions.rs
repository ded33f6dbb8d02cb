//! Kafka 3.9's API versions that Kafka 4.0 removed (KIP-896), asked of a real broker on a real
//! socket at each removed version, with requests and answers made by kafka-protocol 0.15 (Kafka
//! 3.9's specs): every answer must read at the client's version and say what the request did.
//! Produce v0-v2 carry message sets of magic 0 and 1 written here by hand; Fetch v0-v3 must
//! answer them. With `--legacy-api-versions false` the broker answers as Kafka 4.0 does.
//! Real old clients: kafka-python pinned to 0.8.2, 0.9 and 0.10 (`old_clients`), and Debian's
//! sarama 1.22 group consumer (`sarama_group_consumer`).

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::RawConnection;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol_39::messages::*;
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};
use std::time::{Duration, Instant};

struct Old(RawConnection);

impl Old {
    fn connect(broker: &Broker) -> Old {
        Old(RawConnection::connect(&broker.bootstrap()))
    }

    /// Sends `body` at `version`; the answer's body read at that version, or None when the
    /// broker closed the connection instead.
    fn ask(&mut self, key: ApiKey, version: i16, body: RequestKind) -> Option<ResponseKind> {
        let (mut frame, correlation) = self.0.round_trip(|out, correlation| {
            let mut header = RequestHeader::default();
            header.request_api_key = key as i16;
            header.request_api_version = version;
            header.correlation_id = correlation;
            header.client_id = Some(StrBytes::from_static_str("old-versions"));
            header.encode(out, key.request_header_version(version)).expect("header");
            body.encode(out, version).expect("body");
        })?;
        let h = ResponseHeader::decode(&mut frame, key.response_header_version(version)).expect("answer header");
        assert_eq!(h.correlation_id, correlation, "{key:?} v{version}: correlation id");
        let body = ResponseKind::decode(key, &mut frame, version).unwrap_or_else(|e| panic!("{key:?} v{version}: the answer does not read at its version: {e}"));
        assert!(frame.is_empty(), "{key:?} v{version}: {} bytes after the answer", frame.len());
        Some(body)
    }
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn topic(name: &str) -> TopicName {
    TopicName(s(name))
}

/// A message set of `magic` (0 or 1), one message per value, as old producers write them:
/// offsets from 0, timestamps `ts0 + i` for magic 1.
fn message_set(magic: i8, values: &[&str], ts0: i64) -> Bytes {
    let mut out = BytesMut::new();
    for (i, v) in values.iter().enumerate() {
        let mut m = BytesMut::new();
        m.put_i8(magic);
        m.put_i8(0);
        if magic == 1 {
            m.put_i64(ts0 + i as i64);
        }
        m.put_i32(-1); // no key
        m.put_i32(v.len() as i32);
        m.put_slice(v.as_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&m);
        out.put_i64(i as i64);
        out.put_i32(4 + m.len() as i32);
        out.put_u32(crc.sum());
        out.put_slice(&m);
    }
    out.freeze()
}

/// (offset, magic, timestamp, value) of each message in a fetched message set; the timestamp
/// is negated when the message says it is a log-append time.
fn messages(set: &[u8]) -> Vec<(i64, i8, Option<i64>, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= set.len() {
        let offset = i64::from_be_bytes(set[at..at + 8].try_into().unwrap());
        let size = i32::from_be_bytes(set[at + 8..at + 12].try_into().unwrap()) as usize;
        let m = &set[at + 12..at + 12 + size];
        let mut crc = flate2::Crc::new();
        crc.update(&m[4..]);
        assert_eq!(crc.sum(), u32::from_be_bytes(m[..4].try_into().unwrap()), "message at {offset}: CRC-32");
        let magic = m[4] as i8;
        assert_eq!(m[5] & 0x07, 0, "message at {offset}: written uncompressed");
        let log_append = m[5] & 0x08 != 0;
        let (ts, mut p) = match magic {
            1 => (Some(i64::from_be_bytes(m[6..14].try_into().unwrap())).map(|t| if log_append { -t } else { t }), 14),
            _ => (None, 6),
        };
        let key_len = i32::from_be_bytes(m[p..p + 4].try_into().unwrap());
        p += 4 + key_len.max(0) as usize;
        let value_len = i32::from_be_bytes(m[p..p + 4].try_into().unwrap()) as usize;
        out.push((offset, magic, ts, String::from_utf8(m[p + 4..p + 4 + value_len].to_vec()).unwrap()));
        at += 12 + size;
    }
    out
}

fn produce(c: &mut Old, version: i16, name: &str, set: Bytes) -> produce_response::PartitionProduceResponse {
    let mut part = produce_request::PartitionProduceData::default();
    part.index = 0;
    part.records = Some(set);
    let mut t = produce_request::TopicProduceData::default();
    t.name = topic(name);
    t.partition_data = vec![part];
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 10_000;
    req.topic_data = vec![t];
    let Some(ResponseKind::Produce(r)) = c.ask(ApiKey::Produce, version, RequestKind::Produce(req)) else { panic!("Produce v{version}: no answer") };
    r.responses[0].partition_responses[0].clone()
}

fn fetch(c: &mut Old, version: i16, name: &str, offset: i64) -> fetch_response::PartitionData {
    fetch_within(c, version, name, offset, 1 << 20)
}

fn fetch_within(c: &mut Old, version: i16, name: &str, offset: i64, max_bytes: i32) -> fetch_response::PartitionData {
    let mut part = fetch_request::FetchPartition::default();
    part.partition = 0;
    part.fetch_offset = offset;
    part.partition_max_bytes = max_bytes;
    let mut t = fetch_request::FetchTopic::default();
    t.topic = topic(name);
    t.partitions = vec![part];
    let mut req = FetchRequest::default();
    req.max_wait_ms = 100;
    req.topics = vec![t];
    let Some(ResponseKind::Fetch(r)) = c.ask(ApiKey::Fetch, version, RequestKind::Fetch(req)) else { panic!("Fetch v{version}: no answer") };
    r.responses[0].partitions[0].clone()
}

fn list_offsets(c: &mut Old, name: &str, timestamp: i64, max_num_offsets: i32) -> Vec<i64> {
    let mut part = list_offsets_request::ListOffsetsPartition::default();
    part.timestamp = timestamp;
    part.max_num_offsets = max_num_offsets;
    let mut t = list_offsets_request::ListOffsetsTopic::default();
    t.name = topic(name);
    t.partitions = vec![part];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = (-1).into();
    req.topics = vec![t];
    let Some(ResponseKind::ListOffsets(r)) = c.ask(ApiKey::ListOffsets, 0, RequestKind::ListOffsets(req)) else { panic!("ListOffsets v0: no answer") };
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets v0");
    p.old_style_offsets.clone()
}

fn create_topic(c: &mut Old, version: i16, name: &str, config: (&str, &str)) {
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = topic(name);
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut cfg = create_topics_request::CreatableTopicConfig::default();
    cfg.name = s(config.0);
    cfg.value = Some(s(config.1));
    t.configs = vec![cfg];
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 10_000;
    let Some(ResponseKind::CreateTopics(r)) = c.ask(ApiKey::CreateTopics, version, RequestKind::CreateTopics(req)) else { panic!("CreateTopics v{version}: no answer") };
    assert_eq!(r.topics[0].error_code, 0, "CreateTopics v{version}: {:?}", r.topics[0]);
}

/// Until the topic has a leader (Metadata v0).
fn wait_for_leader(c: &mut Old, name: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let mut t = metadata_request::MetadataRequestTopic::default();
        t.name = Some(topic(name));
        let mut req = MetadataRequest::default();
        req.topics = Some(vec![t]);
        let Some(ResponseKind::Metadata(r)) = c.ask(ApiKey::Metadata, 0, RequestKind::Metadata(req)) else { panic!("Metadata v0: no answer") };
        if r.topics.first().is_some_and(|t| t.error_code == 0 && t.partitions.first().is_some_and(|p| p.leader_id.0 >= 0)) {
            return;
        }
        assert!(Instant::now() < until, "{name}: no leader in 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn every_removed_version_is_answered_at_its_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &[]);
    let mut c = Old::connect(&broker);

    // ApiVersions lists Kafka 3.9's oldest versions.
    let Some(ResponseKind::ApiVersions(v)) = c.ask(ApiKey::ApiVersions, 0, RequestKind::ApiVersions(ApiVersionsRequest::default())) else { panic!("ApiVersions") };
    for (key, oldest) in broker_core::kafka::REMOVED_IN_4 {
        let listed = v.api_keys.iter().find(|k| k.api_key == *key as i16).unwrap_or_else(|| panic!("{key:?} not listed"));
        assert_eq!(listed.min_version, *oldest, "{key:?}: ApiVersions' oldest");
    }

    create_topic(&mut c, 0, "old-a", ("retention.ms", "86400000"));
    create_topic(&mut c, 1, "old-b", ("message.timestamp.type", "LogAppendTime"));
    wait_for_leader(&mut c, "old-a");
    wait_for_leader(&mut c, "old-b");

    // Produce v0 and v1 with magic 0, v2 with magic 1: dense offsets across the three.
    let ts0 = 1_700_000_000_000;
    let sent = [(0, 0, vec!["a0", "a1", "a2"]), (1, 0, vec!["a3", "a4"]), (2, 1, vec!["a5", "a6", "a7"])];
    let mut next = 0;
    for (version, magic, values) in &sent {
        let p = produce(&mut c, *version, "old-a", message_set(*magic, values, ts0 + next));
        assert_eq!((p.error_code, p.base_offset), (0, next), "Produce v{version}: error and base offset");
        next += values.len() as i64;
    }
    // A gzip record batch (magic 2) at Produce v2 is taken as it is, as Kafka 3.9 took it, and
    // read back below through the down-conversion, decompressed.
    let records: Vec<_> = (8..11).map(|i| (ts0 + i, None, Some(Bytes::from(format!("a{i}"))))).collect();
    let batch = broker_core::log::compressed::unowned(&records, kafka_protocol::records::Compression::Gzip).expect("a batch");
    let p = produce(&mut c, 2, "old-a", batch);
    assert_eq!((p.error_code, p.base_offset), (0, next), "Produce v2 of a gzip record batch");
    next += 3;
    // A message set with a bad CRC is refused whole: CORRUPT_MESSAGE, nothing written.
    let mut bad = message_set(0, &["x"], 0).to_vec();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(produce(&mut c, 0, "old-a", Bytes::from(bad)).error_code, 2, "Produce v0 with a bad CRC: CORRUPT_MESSAGE");

    // Fetch v0-v1 answer magic 0, v2-v3 magic 1 (with the timestamps sent), from the fetch
    // offset on, each message at its offset. A fetch reads one segment (the magic 1 records'
    // old timestamps rolled one), so each version fetches until it reached the log end.
    let mut stamps: Vec<i64> = vec![-1, -1, -1, ts0 + 5, ts0 + 6, ts0 + 7];
    stamps.extend((8..11).map(|i| ts0 + i));
    for version in 0..=3 {
        let mut got = Vec::new();
        let mut at = 2;
        while at < next {
            let p = fetch(&mut c, version, "old-a", at);
            assert_eq!((p.error_code, p.high_watermark), (0, next), "Fetch v{version} at {at}");
            let read = messages(p.records.as_deref().unwrap_or_default());
            assert!(!read.is_empty() && read[0].0 == at, "Fetch v{version} at {at}: read {read:?}");
            at = read.last().unwrap().0 + 1;
            got.extend(read);
        }
        let magic = if version >= 2 { 1 } else { 0 };
        let want: Vec<_> = (2..next).map(|o| (o, magic, format!("a{o}"))).collect();
        assert_eq!(got.iter().map(|(o, m, _, v)| (*o, *m, v.clone())).collect::<Vec<_>>(), want, "Fetch v{version}");
        if magic == 1 {
            // Magic 0's messages carry no timestamp (-1 once converted); magic 1's their own.
            assert_eq!(got.iter().map(|m| m.2.unwrap()).collect::<Vec<_>>(), stamps, "Fetch v{version}: timestamps");
        } else {
            assert!(got.iter().all(|m| m.2.is_none()), "Fetch v{version}: magic 0 has no timestamps");
        }
    }

    // A fetch within a partition's max bytes: at least one message, not all of them.
    let p = fetch_within(&mut c, 0, "old-a", 0, 40);
    let read = messages(p.records.as_deref().unwrap_or_default());
    assert!(!read.is_empty() && read.len() < 5 && read[0].0 == 0, "Fetch v0 within 40 bytes: {read:?}");

    // On a LogAppendTime topic, Fetch v2 answers the broker's time, flagged as such.
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert_eq!(produce(&mut c, 2, "old-b", message_set(1, &["t0", "t1"], 1000)).error_code, 0, "Produce v2 to old-b");
    let read = messages(fetch(&mut c, 2, "old-b", 0).records.as_deref().unwrap_or_default());
    assert_eq!(read.len(), 2, "Fetch v2 of old-b: {read:?}");
    assert!(read.iter().all(|m| m.2.is_some_and(|t| -t >= before)), "log-append times, flagged: {read:?} (before {before})");

    // ListOffsets v0: latest and earliest, one offset each, whatever max_num_offsets says.
    assert_eq!(list_offsets(&mut c, "old-a", -1, 1), vec![next]);
    assert_eq!(list_offsets(&mut c, "old-a", -2, 3), vec![0]);

    // OffsetCommit v0 and v1 (a standalone commit), read back with OffsetFetch v0, once the
    // group's coordinator is up (FindCoordinator v0 creates the offsets topic).
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let mut req = FindCoordinatorRequest::default();
        req.key = s("old-group");
        let Some(ResponseKind::FindCoordinator(r)) = c.ask(ApiKey::FindCoordinator, 0, RequestKind::FindCoordinator(req)) else { panic!("FindCoordinator v0") };
        if r.error_code == 0 {
            break;
        }
        assert!(Instant::now() < until, "no group coordinator in 30 s: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for (version, offset) in [(0, 3), (1, 5)] {
        let mut p = offset_commit_request::OffsetCommitRequestPartition::default();
        p.partition_index = 0;
        p.committed_offset = offset;
        p.commit_timestamp = if version == 1 { ts0 } else { -1 };
        let mut t = offset_commit_request::OffsetCommitRequestTopic::default();
        t.name = topic("old-a");
        t.partitions = vec![p];
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(s("old-group"));
        req.topics = vec![t];
        // Until the coordinator has loaded the group (COORDINATOR_NOT_AVAILABLE, LOAD_IN_PROGRESS).
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let Some(ResponseKind::OffsetCommit(r)) = c.ask(ApiKey::OffsetCommit, version, RequestKind::OffsetCommit(req.clone())) else { panic!("OffsetCommit v{version}") };
            let code = r.topics[0].partitions[0].error_code;
            if code == 0 {
                break;
            }
            assert!([14, 15].contains(&code) && Instant::now() < until, "OffsetCommit v{version}: error {code}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut t = offset_fetch_request::OffsetFetchRequestTopic::default();
        t.name = topic("old-a");
        t.partition_indexes = vec![0];
        let mut req = OffsetFetchRequest::default();
        req.group_id = GroupId(s("old-group"));
        req.topics = Some(vec![t]);
        let Some(ResponseKind::OffsetFetch(r)) = c.ask(ApiKey::OffsetFetch, 0, RequestKind::OffsetFetch(req)) else { panic!("OffsetFetch v0") };
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.error_code, p.committed_offset), (0, offset), "OffsetFetch v0 after OffsetCommit v{version}");
    }

    // DescribeConfigs v0: is_default for a default, not for the value set at creation.
    let mut res = describe_configs_request::DescribeConfigsResource::default();
    res.resource_type = 2;
    res.resource_name = s("old-a");
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![res];
    let Some(ResponseKind::DescribeConfigs(r)) = c.ask(ApiKey::DescribeConfigs, 0, RequestKind::DescribeConfigs(req)) else { panic!("DescribeConfigs v0") };
    let config = |name: &str| r.results[0].configs.iter().find(|c| c.name.as_str() == name).unwrap_or_else(|| panic!("{name} not described")).clone();
    assert_eq!((config("retention.ms").value.as_deref().map(str::to_string), config("retention.ms").is_default), (Some("86400000".to_string()), false));
    assert!(config("cleanup.policy").is_default, "cleanup.policy: a default");

    // OffsetForLeaderEpoch v0 and v1: epoch 0 ends at the log end (its leader's only epoch).
    for version in 0..=1 {
        let mut p = offset_for_leader_epoch_request::OffsetForLeaderPartition::default();
        p.partition = 0;
        p.leader_epoch = 0;
        let mut t = offset_for_leader_epoch_request::OffsetForLeaderTopic::default();
        t.topic = topic("old-a");
        t.partitions = vec![p];
        let mut req = OffsetForLeaderEpochRequest::default();
        req.topics = vec![t];
        let Some(ResponseKind::OffsetForLeaderEpoch(r)) = c.ask(ApiKey::OffsetForLeaderEpoch, version, RequestKind::OffsetForLeaderEpoch(req)) else { panic!("OffsetForLeaderEpoch v{version}") };
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.error_code, p.end_offset), (0, next), "OffsetForLeaderEpoch v{version}");
    }

    // DescribeLogDirs v0 (null topics: all of them): the topic's partition and its size.
    let mut req = DescribeLogDirsRequest::default();
    req.topics = None;
    let Some(ResponseKind::DescribeLogDirs(r)) = c.ask(ApiKey::DescribeLogDirs, 0, RequestKind::DescribeLogDirs(req)) else { panic!("DescribeLogDirs v0") };
    let sizes: Vec<i64> = r.results.iter().flat_map(|d| d.topics.iter()).filter(|t| t.name.as_str() == "old-a").flat_map(|t| t.partitions.iter().map(|p| p.partition_size)).collect();
    assert!(sizes.len() == 1 && sizes[0] > 0, "DescribeLogDirs v0: {sizes:?}");

    // The ACL APIs at v0 (no authorizer here: each answers as its v1 does, at v0).
    let Some(ResponseKind::DescribeAcls(_)) = c.ask(ApiKey::DescribeAcls, 0, RequestKind::DescribeAcls(DescribeAclsRequest::default())) else { panic!("DescribeAcls v0") };
    let Some(ResponseKind::CreateAcls(_)) = c.ask(ApiKey::CreateAcls, 0, RequestKind::CreateAcls(CreateAclsRequest::default())) else { panic!("CreateAcls v0") };
    let Some(ResponseKind::DeleteAcls(_)) = c.ask(ApiKey::DeleteAcls, 0, RequestKind::DeleteAcls(DeleteAclsRequest::default())) else { panic!("DeleteAcls v0") };
    // WriteTxnMarkers v0: no markers, an empty answer.
    let Some(ResponseKind::WriteTxnMarkers(r)) = c.ask(ApiKey::WriteTxnMarkers, 0, RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default())) else { panic!("WriteTxnMarkers v0") };
    assert!(r.markers.is_empty());

    // DeleteTopics v0.
    let mut req = DeleteTopicsRequest::default();
    req.topic_names = vec![topic("old-b")];
    req.timeout_ms = 10_000;
    let Some(ResponseKind::DeleteTopics(r)) = c.ask(ApiKey::DeleteTopics, 0, RequestKind::DeleteTopics(req)) else { panic!("DeleteTopics v0") };
    assert_eq!(r.responses[0].error_code, 0, "DeleteTopics v0");
}

#[test]
fn with_legacy_versions_off_a_removed_version_closes_the_connection_as_in_kafka_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &["--legacy-api-versions", "false"]);
    let mut c = Old::connect(&broker);
    let Some(ResponseKind::ApiVersions(v)) = c.ask(ApiKey::ApiVersions, 0, RequestKind::ApiVersions(ApiVersionsRequest::default())) else { panic!("ApiVersions") };
    let produce = v.api_keys.iter().find(|k| k.api_key == ApiKey::Produce as i16).expect("Produce listed");
    assert_eq!(produce.min_version, 3, "Kafka 4.0's oldest Produce");
    assert!(c.ask(ApiKey::Produce, 2, RequestKind::Produce(ProduceRequest::default())).is_none(), "Produce v2 closes the connection");
}

/// kafka-python pinned to 0.8.2, 0.9 and 0.10 (Produce v0-v2 with magic 0 and 1 and gzip
/// wrappers, Fetch v0-v2, OffsetCommit v1-v2, JoinGroup v0): a group consumer reads 2,000
/// records and commits, a restarted one reads only what came after.
#[test]
fn old_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    client_script(&mut broker, "old_clients.py", &["--n", "2000"]);
}

/// Debian's sarama 1.22 (Kafka 0.10.2 protocol: Produce v2 with magic 1, Fetch v3, JoinGroup v1,
/// OffsetCommit v1): 2,000 records produced, read by a group member that commits them; 100 more
/// produced, and a restarted member of the group reads exactly those. On a broker answering as
/// Kafka 4.0 does, the same producer is cut off at its first Produce v2.
#[test]
fn sarama_group_consumer() {
    let sarama = crate::support::sarama_group();
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &[]);
    let run = |broker: &Broker, args: &[&str]| {
        let mut cmd = std::process::Command::new(sarama);
        cmd.args(["-bootstrap", &broker.bootstrap(), "-topic", "sarama"]).args(args);
        run_bounded(&mut cmd, None, Duration::from_secs(120), "sarama_group")
    };
    let ok = |out: std::process::Output, what: &str| {
        assert!(out.status.success(), "sarama {what}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    };
    ok(run(&broker, &["-produce", "2000", "-from", "0"]), "produces 2,000");
    ok(run(&broker, &["-group", "sarama-group", "-consume", "2000", "-from", "0"]), "reads 2,000 and commits");
    ok(run(&broker, &["-produce", "100", "-from", "2000"]), "produces 100 more");
    ok(run(&broker, &["-group", "sarama-group", "-consume", "100", "-from", "2000"]), "resumes at the commit");

    let dir = tempfile::tempdir().expect("tempdir");
    let kafka4 = Broker::start(dir.path(), &["--legacy-api-versions", "false"]);
    let out = run(&kafka4, &["-produce", "1", "-from", "0"]);
    assert!(!out.status.success(), "sarama's Produce v2 must be refused as Kafka 4.0 refuses it");
}
