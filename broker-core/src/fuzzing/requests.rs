//! Target `request_sequence`: a sequence of valid-looking requests, structured with
//! `arbitrary` — produce (any acks, any codec), fetch, metadata with
//! auto-creation, create and delete topics, list offsets, delete records, topic config
//! changes (retention, segment size and age, max message size, timestamp type), the group
//! coordinator's find, commit and fetch of offsets, and time passing — each encoded as a real
//! client encodes it and sent through the real dispatch on one node ([`Scratch`]).
//!
//! After every request the target checks its model of what the broker promised: every record
//! whose produce was acknowledged is read back by a Fetch at its offset with the same key and
//! value, unless the log start (ListOffsets earliest) has legitimately passed it (retention,
//! DeleteRecords) or its topic was deleted; no offset is acknowledged twice; every offset
//! commit acknowledged is returned by OffsetFetch. Compaction is not driven here (its
//! checker lives in the simulator).

use super::wire::{frame, name, reply, version};
use super::Scratch;
use crate::kafka::ApiKey;
use arbitrary::{Arbitrary, Unstructured};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use crate::log::compressed;
use kafka_protocol::records::Compression;
use std::collections::BTreeMap;

/// Requests one input may make: enough to fill, roll and expire a few segments.
const ops_max: usize = 48;
/// Records per produce, and bytes per key or value, at most.
const records_max: usize = 16;
const field_bytes_max: usize = 512;

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic {
    A,
    B,
    C,
}

impl Topic {
    fn name(self) -> &'static str {
        match self {
            Topic::A => "a",
            Topic::B => "b",
            Topic::C => "c",
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Rec {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Acks {
    None,
    Leader,
    All,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    /// Compressed by the broker's own writer (`log::compressed`): the protocol crate is built
    /// without lz4 and zstd.
    Lz4,
    Zstd,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Setting {
    RetentionMs,
    RetentionBytes,
    SegmentBytes,
    SegmentMs,
    MaxMessageBytes,
    TimestampType,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Op {
    Produce { topic: Topic, partition: u8, acks: Acks, codec: Codec, records: Vec<Rec>, version: u8 },
    Fetch { topic: Topic, partition: u8, offset: i64, max_bytes: u16, max_wait_ms: u16, version: u8 },
    Metadata { topics: Vec<Topic>, auto_create: bool, version: u8 },
    CreateTopic { topic: Topic, partitions: i8 },
    DeleteTopic { topic: Topic },
    ListOffsets { topic: Topic, partition: u8, timestamp: i64, version: u8 },
    DeleteRecords { topic: Topic, partition: u8, offset: i64 },
    AlterConfig { topic: Topic, setting: Setting, value: u32, delete: bool },
    FindCoordinator { group: u8 },
    Commit { group: u8, topic: Topic, partition: u8, offset: i64 },
    FetchCommitted { group: u8 },
    Tick { ms: u16 },
}

/// What the broker acknowledged and must keep.
#[derive(Default)]
struct Model {
    /// Per partition, the key and value of each acknowledged offset.
    records: BTreeMap<(Topic, i32), BTreeMap<i64, (Option<Bytes>, Option<Bytes>)>>,
    /// Per group and partition, the last acknowledged committed offset.
    commits: BTreeMap<(String, Topic, i32), i64>,
}

pub fn run(data: &[u8]) {
    let Ok(ops) = Vec::<Op>::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let mut scratch = Scratch::new();
    let mut model = Model::default();
    for op in ops.iter().take(ops_max) {
        apply(&mut scratch, &mut model, op);
        scratch.now += 1;
        scratch.sync();
        verify(&mut scratch, &mut model, op);
    }
}

fn group(n: u8) -> String {
    format!("g{}", n % 4)
}

fn topic_name(t: Topic) -> TopicName {
    TopicName(name(t.name()))
}

fn apply(s: &mut Scratch, m: &mut Model, op: &Op) {
    match op {
        Op::Produce { topic, partition, acks, codec, records, version: v } => produce(s, m, *topic, *partition as i32 % 4, *acks, *codec, records, *v),
        Op::Fetch { topic, partition, offset, max_bytes, max_wait_ms, version: v } => {
            let v = version(ApiKey::Fetch, *v, 4);
            let (records, _) = fetch(s, *topic, *partition as i32 % 4, *offset, *max_bytes as i32, *max_wait_ms as i32, v);
            check_against_model(m, *topic, *partition as i32 % 4, &records);
        }
        Op::Metadata { topics, auto_create, version: v } => {
            let v = version(ApiKey::Metadata, *v, 4);
            let topics = topics.iter().map(|t| metadata_request::MetadataRequestTopic::default().with_name(Some(topic_name(*t)))).collect();
            let req = MetadataRequest::default().with_topics(Some(topics)).with_allow_auto_topic_creation(*auto_create);
            if let Some(f) = frame(ApiKey::Metadata, v, &req) {
                let _: MetadataResponse = reply(s.answer(&f), ApiKey::Metadata, v);
            }
        }
        Op::CreateTopic { topic, partitions } => {
            let t = create_topics_request::CreatableTopic::default().with_name(topic_name(*topic)).with_num_partitions(*partitions as i32 % 5).with_replication_factor(-1);
            let req = CreateTopicsRequest::default().with_topics(vec![t]).with_timeout_ms(1000);
            let f = frame(ApiKey::CreateTopics, 7, &req).expect("encodes");
            let _: CreateTopicsResponse = reply(s.answer(&f), ApiKey::CreateTopics, 7);
        }
        Op::DeleteTopic { topic } => {
            let req = DeleteTopicsRequest::default().with_topic_names(vec![topic_name(*topic)]).with_timeout_ms(1000);
            let f = frame(ApiKey::DeleteTopics, 5, &req).expect("encodes");
            let r: DeleteTopicsResponse = reply(s.answer(&f), ApiKey::DeleteTopics, 5);
            if r.responses.first().is_some_and(|x| x.error_code == 0) {
                m.records.retain(|(t, _), _| t != topic);
                m.commits.retain(|(_, t, _), _| t != topic);
            }
        }
        Op::ListOffsets { topic, partition, timestamp, version: v } => {
            let v = version(ApiKey::ListOffsets, *v, 1);
            let _ = list_offset(s, *topic, *partition as i32 % 4, *timestamp, v);
        }
        Op::DeleteRecords { topic, partition, offset } => {
            let p = delete_records_request::DeleteRecordsPartition::default().with_partition_index(*partition as i32 % 4).with_offset(*offset);
            let t = delete_records_request::DeleteRecordsTopic::default().with_name(topic_name(*topic)).with_partitions(vec![p]);
            let req = DeleteRecordsRequest::default().with_topics(vec![t]).with_timeout_ms(1000);
            let f = frame(ApiKey::DeleteRecords, 2, &req).expect("encodes");
            let _: DeleteRecordsResponse = reply(s.answer(&f), ApiKey::DeleteRecords, 2);
        }
        Op::AlterConfig { topic, setting, value, delete } => {
            let (key, value) = match setting {
                Setting::RetentionMs => ("retention.ms", value.to_string()),
                Setting::RetentionBytes => ("retention.bytes", value.to_string()),
                Setting::SegmentBytes => ("segment.bytes", value.to_string()),
                Setting::SegmentMs => ("segment.ms", value.to_string()),
                Setting::MaxMessageBytes => ("max.message.bytes", value.to_string()),
                Setting::TimestampType => ("message.timestamp.type", if value % 2 == 0 { "CreateTime" } else { "LogAppendTime" }.to_string()),
            };
            let c = incremental_alter_configs_request::AlterableConfig::default().with_name(name(key)).with_config_operation(if *delete { 1 } else { 0 }).with_value(Some(name(&value)));
            let r = incremental_alter_configs_request::AlterConfigsResource::default().with_resource_type(2).with_resource_name(name(topic.name())).with_configs(vec![c]);
            let req = IncrementalAlterConfigsRequest::default().with_resources(vec![r]);
            let f = frame(ApiKey::IncrementalAlterConfigs, 1, &req).expect("encodes");
            let _: IncrementalAlterConfigsResponse = reply(s.answer(&f), ApiKey::IncrementalAlterConfigs, 1);
        }
        Op::FindCoordinator { group: g } => {
            let req = FindCoordinatorRequest::default().with_coordinator_keys(vec![name(&group(*g))]);
            let f = frame(ApiKey::FindCoordinator, 4, &req).expect("encodes");
            let _: FindCoordinatorResponse = reply(s.answer(&f), ApiKey::FindCoordinator, 4);
        }
        Op::Commit { group: g, topic, partition, offset } => {
            let partition = *partition as i32 % 4;
            let p = offset_commit_request::OffsetCommitRequestPartition::default().with_partition_index(partition).with_committed_offset(*offset);
            let t = offset_commit_request::OffsetCommitRequestTopic::default().with_name(topic_name(*topic)).with_partitions(vec![p]);
            let req = OffsetCommitRequest::default().with_group_id(GroupId(name(&group(*g)))).with_generation_id_or_member_epoch(-1).with_topics(vec![t]);
            let f = frame(ApiKey::OffsetCommit, 8, &req).expect("encodes");
            let r: OffsetCommitResponse = reply(s.answer(&f), ApiKey::OffsetCommit, 8);
            if r.topics.first().and_then(|t| t.partitions.first()).is_some_and(|p| p.error_code == 0) {
                m.commits.insert((group(*g), *topic, partition), *offset);
            }
        }
        // verify() asks for every group's commits (all topics) after each op; this asks for the
        // partitions by name, the other form of OffsetFetch.
        Op::FetchCommitted { group: g } => check_commits(s, m, &group(*g), true, op),
        Op::Tick { ms } => s.now += *ms as u64,
    }
}

#[allow(clippy::too_many_arguments)]
fn produce(s: &mut Scratch, m: &mut Model, topic: Topic, partition: i32, acks: Acks, codec: Codec, records: &[Rec], v: u8) {
    let field = |f: &Option<Vec<u8>>| f.as_ref().map(|b| Bytes::copy_from_slice(&b[..b.len().min(field_bytes_max)]));
    let kvs: Vec<(Option<Bytes>, Option<Bytes>)> = records.iter().take(records_max).map(|r| (field(&r.key), field(&r.value))).collect();
    if kvs.is_empty() {
        return;
    }
    let compression = match codec {
        Codec::Gzip => Compression::Gzip,
        Codec::Snappy => Compression::Snappy,
        Codec::None | Codec::Lz4 | Codec::Zstd => Compression::None,
    };
    let records: Vec<_> = kvs.iter().map(|(key, value)| (s.now as i64, key.clone(), value.clone())).collect();
    let mut batch = BytesMut::from(&crate::log::compressed::unowned(&records, compression).expect("a batch of valid records encodes")[..]);
    let recompress = match codec {
        Codec::Lz4 => Some(compressed::codec_lz4),
        Codec::Zstd => Some(compressed::codec_zstd),
        _ => None,
    };
    if let Some(c) = recompress {
        batch = BytesMut::from(&compressed::with_codec(&batch, c).expect("an uncompressed batch compresses")[..]);
    }
    let acks = match acks {
        Acks::None => 0,
        Acks::Leader => 1,
        Acks::All => -1,
    };
    let v = version(ApiKey::Produce, v, 3);
    let p = produce_request::PartitionProduceData::default().with_index(partition).with_records(Some(batch.freeze()));
    let t = produce_request::TopicProduceData::default().with_name(topic_name(topic)).with_partition_data(vec![p]);
    let req = ProduceRequest::default().with_acks(acks).with_timeout_ms(1000).with_topic_data(vec![t]);
    let Some(f) = frame(ApiKey::Produce, v, &req) else { return };
    let outcome = s.answer(&f);
    if acks == 0 {
        return; // no answer, no promise
    }
    let r: ProduceResponse = reply(outcome, ApiKey::Produce, v);
    let pr = &r.responses[0].partition_responses[0];
    if pr.error_code != 0 {
        return;
    }
    assert!(pr.base_offset >= 0, "acknowledged at offset {}", pr.base_offset);
    let log = m.records.entry((topic, partition)).or_default();
    for (i, kv) in kvs.into_iter().enumerate() {
        let offset = pr.base_offset + i as i64;
        assert!(log.insert(offset, kv).is_none(), "{}-{partition}: offset {offset} acknowledged twice", topic.name());
    }
}

/// The records a Fetch returns (offset, key, value) and the partition's error code. From v13 the
/// topic goes by its id (KIP-516): the one the node's metadata has, or for a topic it does not
/// have an id of none (answered UNKNOWN_TOPIC_ID).
fn fetch(s: &mut Scratch, topic: Topic, partition: i32, offset: i64, max_bytes: i32, max_wait_ms: i32, v: i16) -> (Vec<(i64, Option<Bytes>, Option<Bytes>)>, i16) {
    let p = fetch_request::FetchPartition::default().with_partition(partition).with_fetch_offset(offset).with_partition_max_bytes(max_bytes);
    let id = s.node.broker().image().topics.get(topic.name()).map_or([0xfe; 16], |t| t.id);
    let t = fetch_request::FetchTopic::default().with_topic(topic_name(topic)).with_topic_id(uuid::Uuid::from_bytes(id)).with_partitions(vec![p]);
    let req = FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_wait_ms(max_wait_ms).with_min_bytes(1).with_max_bytes(max_bytes).with_session_epoch(-1).with_topics(vec![t]);
    let f = frame(ApiKey::Fetch, v, &req).expect("encodes");
    let r: FetchResponse = reply(s.answer(&f), ApiKey::Fetch, v);
    let pd = &r.responses[0].partitions[0];
    let mut out = Vec::new();
    if let Some(bytes) = &pd.records {
        // The broker's batches are whole (a partial tail is legal and skipped by clients).
        let whole: usize = crate::log::batch::whole_batches(bytes).expect("served batches check out").iter().map(|h| h.size).sum();
        let mut b = bytes.slice(..whole);
        while !b.is_empty() {
            let set = compressed::decode_batch(&mut b).expect("served batches decode");
            out.extend(set.records.into_iter().map(|r| (r.offset, r.key, r.value)));
        }
    }
    (out, pd.error_code)
}

fn list_offset(s: &mut Scratch, topic: Topic, partition: i32, timestamp: i64, v: i16) -> (i16, i64) {
    let p = list_offsets_request::ListOffsetsPartition::default().with_partition_index(partition).with_timestamp(timestamp);
    let t = list_offsets_request::ListOffsetsTopic::default().with_name(topic_name(topic)).with_partitions(vec![p]);
    let req = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![t]);
    let f = frame(ApiKey::ListOffsets, v, &req).expect("encodes");
    let r: ListOffsetsResponse = reply(s.answer(&f), ApiKey::ListOffsets, v);
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// Records a fetch returned must be what was acknowledged at their offsets.
fn check_against_model(m: &Model, topic: Topic, partition: i32, got: &[(i64, Option<Bytes>, Option<Bytes>)]) {
    let Some(log) = m.records.get(&(topic, partition)) else { return };
    for (offset, key, value) in got {
        if let Some((k, v)) = log.get(offset) {
            assert!(k == key && v == value, "{}-{partition} offset {offset}: read {key:?}={value:?}, acknowledged {k:?}={v:?}", topic.name());
        }
    }
}

/// Every acknowledged record at or above the log start reads back as acknowledged; every
/// acknowledged commit is returned.
fn verify(s: &mut Scratch, m: &mut Model, op: &Op) {
    let partitions: Vec<(Topic, i32)> = m.records.keys().copied().collect();
    for (topic, partition) in partitions {
        let (code, start) = list_offset(s, topic, partition, -2, 6);
        assert_eq!(code, 0, "{}-{partition}: ListOffsets earliest failed after {op:?}", topic.name());
        let log = m.records.get_mut(&(topic, partition)).expect("listed");
        log.retain(|o, _| *o >= start);
        let mut want: Vec<i64> = log.keys().copied().collect();
        while let Some(&from) = want.first() {
            let (got, code) = fetch(s, topic, partition, from, 1 << 20, 0, 12);
            assert!(code == 0 && !got.is_empty(), "{}-{partition}: acknowledged offset {from} not readable (error {code}) after {op:?}", topic.name());
            check_against_model(m, topic, partition, &got);
            let last = got.last().expect("non-empty").0;
            assert!(got.iter().any(|r| r.0 == from), "{}-{partition}: acknowledged offset {from} missing from the batches that span it, after {op:?}", topic.name());
            want.retain(|o| *o > last);
        }
    }
    let groups: Vec<String> = m.commits.keys().map(|(g, _, _)| g.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    for g in groups {
        check_commits(s, m, &g, false, op);
    }
}

/// Every commit acknowledged to `g` is what OffsetFetch returns, asked for all topics or for
/// the committed partitions by name.
fn check_commits(s: &mut Scratch, m: &Model, g: &str, by_name: bool, op: &Op) {
    let committed: Vec<(Topic, i32, i64)> = m.commits.range((g.to_string(), Topic::A, i32::MIN)..=(g.to_string(), Topic::C, i32::MAX)).map(|((_, t, p), o)| (*t, *p, *o)).collect();
    let topics = by_name.then(|| {
        let names: std::collections::BTreeSet<Topic> = committed.iter().map(|c| c.0).collect();
        names.into_iter().map(|t| offset_fetch_request::OffsetFetchRequestTopic::default().with_name(topic_name(t)).with_partition_indexes(committed.iter().filter(|c| c.0 == t).map(|c| c.1).collect())).collect()
    });
    let req = OffsetFetchRequest::default().with_group_id(GroupId(name(g))).with_topics(topics);
    let f = frame(ApiKey::OffsetFetch, 7, &req).expect("encodes");
    let r: OffsetFetchResponse = reply(s.answer(&f), ApiKey::OffsetFetch, 7);
    for (t, p, offset) in committed {
        let found = r.topics.iter().filter(|x| x.name.0.as_str() == t.name()).flat_map(|x| &x.partitions).find(|x| x.partition_index == p).map(|x| x.committed_offset);
        assert_eq!(found, Some(offset), "group {g}: committed offset of {}-{p} after {op:?}", t.name());
    }
}
