//! One function per Kafka API: wire request in, wire response out, decisions delegated to the
//! [`Broker`]. Field-by-field translation only; see docs/protocol.md for versions and errors.

use crate::broker::{Broker, Error};
use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_protocol::messages::create_topics_request::CreateTopicsRequest;
use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse};
use kafka_protocol::messages::delete_topics_request::DeleteTopicsRequest;
use kafka_protocol::messages::delete_topics_response::{DeletableTopicResult, DeleteTopicsResponse};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsRequest;
use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult};
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::fetch_response::{FetchResponse, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::list_offsets_request::ListOffsetsRequest;
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::metadata_response::{MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult};
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, ProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, BrokerId, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;

/// APIs and version ranges this broker serves (docs/protocol.md explains each bound).
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 6),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::DescribeConfigs, 0, 4),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
];

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn topic_name(name: &str) -> TopicName {
    TopicName(s(name))
}

fn uuid(id: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

pub fn api_versions_response(error_code: i16) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default();
    r.error_code = error_code;
    r.api_keys = SUPPORTED
        .iter()
        .map(|(k, lo, hi)| {
            let mut v = ApiVersion::default();
            v.api_key = *k as i16;
            v.min_version = *lo;
            v.max_version = *hi;
            v
        })
        .collect();
    r
}

pub fn metadata(b: &mut Broker, version: i16, req: MetadataRequest, now: u64) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    let c = b.config().clone();
    let mut broker = MetadataResponseBroker::default();
    broker.node_id = BrokerId(c.node_id);
    broker.host = s(&c.advertised_host);
    broker.port = c.advertised_port;
    r.brokers = vec![broker];
    r.cluster_id = Some(s(&c.cluster_id));
    r.controller_id = BrokerId(c.node_id);
    // v0: an empty list means all topics; v1+: null means all topics.
    let wanted: Option<Vec<String>> = match req.topics {
        Some(ts) if !(version == 0 && ts.is_empty()) => Some(ts.into_iter().filter_map(|t| t.name.map(|n| n.0.to_string())).collect()),
        _ => None,
    };
    // Before v4 a request could not refuse auto-creation, so it is on.
    let allow_auto = version < 4 || req.allow_auto_topic_creation;
    let names: Vec<String> = wanted.clone().unwrap_or_else(|| b.topics().keys().cloned().collect());
    for name in names {
        let mut t = MetadataResponseTopic::default();
        t.name = Some(topic_name(&name));
        let created = match (b.topic(&name).is_some(), wanted.is_some() && allow_auto) {
            (true, _) => Ok(true),
            (false, true) => b.auto_create(&name, now),
            (false, false) => Ok(false),
        };
        match (created, b.topic(&name)) {
            (Ok(true), Some(topic)) => {
                t.topic_id = uuid(topic.id);
                t.partitions = topic
                    .partitions
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let mut m = MetadataResponsePartition::default();
                        m.partition_index = i as i32;
                        m.leader_id = BrokerId(c.node_id);
                        m.leader_epoch = p.leader_epoch;
                        m.replica_nodes = vec![BrokerId(c.node_id)];
                        m.isr_nodes = vec![BrokerId(c.node_id)];
                        m
                    })
                    .collect();
            }
            (Err(e), _) => t.error_code = e.code(true),
            _ => t.error_code = Error::UnknownTopicOrPartition.code(true),
        }
        r.topics.push(t);
    }
    r
}

/// Produce: `Ok(None)` for acks=0 (Kafka sends no response at all), and `Err` — close the
/// connection — when an acks=0 produce fails, which is how Kafka lets such a client notice.
pub fn produce(b: &mut Broker, version: i16, req: ProduceRequest, now: u64) -> Result<Option<ProduceResponse>, String> {
    let acks = req.acks;
    let modern = version >= 8;
    let mut r = ProduceResponse::default();
    for topic in req.topic_data {
        let name = topic.name.0.to_string();
        let mut tr = TopicProduceResponse::default();
        tr.name = topic.name.clone();
        for part in topic.partition_data {
            let mut pr = PartitionProduceResponse::default();
            pr.index = part.index;
            pr.log_append_time_ms = -1;
            let result = match (&req.transactional_id, part.records.as_deref()) {
                (Some(_), _) => Err(Error::TransactionsUnsupported),
                (None, None) => Err(Error::Batch(crate::log::BatchError::TooShort(0))),
                (None, Some(records)) => b.produce(&name, part.index, records, acks, now),
            };
            match result {
                Ok(p) => {
                    pr.base_offset = p.base_offset;
                    pr.log_start_offset = p.log_start_offset;
                }
                Err(e) => {
                    pr.error_code = e.code(modern);
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
        return Ok(None);
    }
    Ok(Some(r))
}

pub enum FetchDecision {
    Respond(FetchResponse),
    Park(u64),
}

/// Fetch: whole batches up to the high watermark, the response within the request's
/// `max_bytes` (the first batch of the first non-empty partition may exceed it, KIP-74) and each
/// partition within its `partition_max_bytes`. Waits (`Park`) while fewer than `min_bytes` are
/// available and `max_wait_ms` has not passed.
pub fn fetch(b: &Broker, version: i16, req: FetchRequest, final_attempt: bool) -> FetchDecision {
    let mut r = FetchResponse::default();
    // The broker's own cap (Kafka `fetch.max.bytes`) bounds what one request can make it
    // allocate, whatever the client asks for.
    let cap = crate::constants::fetch_bytes_max;
    let mut budget = if version >= 3 { (req.max_bytes.max(0) as usize).min(cap) } else { cap };
    let mut total = 0usize;
    let mut errors = false;
    let mut seen = std::collections::BTreeSet::new();
    for topic in &req.topics {
        let name = topic.topic.0.to_string();
        let mut tr = FetchableTopicResponse::default();
        tr.topic = topic.topic.clone();
        for fp in &topic.partitions {
            if !seen.insert((name.clone(), fp.partition)) {
                continue; // a partition asked twice is answered once
            }
            let mut pd = PartitionData::default();
            pd.partition_index = fp.partition;
            pd.aborted_transactions = Some(Vec::new());
            let limit = (fp.partition_max_bytes.max(0) as usize).min(budget);
            match b.fetch(&name, fp.partition, fp.fetch_offset, limit, total == 0) {
                Ok(f) => {
                    pd.high_watermark = f.high_watermark;
                    pd.last_stable_offset = f.high_watermark;
                    pd.log_start_offset = f.log_start_offset;
                    budget = budget.saturating_sub(f.records.len());
                    total += f.records.len();
                    pd.records = Some(f.records);
                }
                Err(e) => {
                    errors = true;
                    pd.error_code = e.code(true);
                    pd.high_watermark = -1;
                    pd.last_stable_offset = -1;
                    pd.log_start_offset = -1;
                    pd.records = Some(Bytes::new());
                }
            }
            tr.partitions.push(pd);
        }
        r.responses.push(tr);
    }
    // Kafka answers at once when any partition has an error (the client must act on it).
    if !final_attempt && !errors && req.max_wait_ms > 0 && total < req.min_bytes.max(1) as usize {
        return FetchDecision::Park(req.max_wait_ms as u64);
    }
    FetchDecision::Respond(r)
}

pub fn list_offsets(b: &Broker, version: i16, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let mut r = ListOffsetsResponse::default();
    for topic in req.topics {
        let name = topic.name.0.to_string();
        let mut tr = ListOffsetsTopicResponse::default();
        tr.name = topic.name.clone();
        for p in topic.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            match b.list_offset(&name, p.partition_index, p.timestamp) {
                Ok((ts, offset)) => {
                    pr.timestamp = ts;
                    pr.offset = offset;
                    if version >= 4 {
                        pr.leader_epoch = b.topic(&name).and_then(|t| t.partitions.get(p.partition_index as usize)).map_or(-1, |x| x.leader_epoch);
                    }
                }
                Err(e) => {
                    pr.error_code = e.code(true);
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

pub fn create_topics(b: &mut Broker, version: i16, req: CreateTopicsRequest, now: u64) -> CreateTopicsResponse {
    let mut r = CreateTopicsResponse::default();
    for t in req.topics {
        let name = t.name.0.to_string();
        let mut tr = CreatableTopicResult::default();
        tr.name = t.name.clone();
        let overrides: BTreeMap<String, String> =
            t.configs.iter().filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string()))).collect();
        let assignments_ok = t.assignments.iter().all(|a| a.broker_ids.iter().all(|id| id.0 == b.config().node_id));
        let result = if !assignments_ok {
            Err(Error::InvalidReplicationFactor("replica assignment names a broker that does not exist".into()))
        } else if !t.assignments.is_empty() && (t.num_partitions != -1 || t.replication_factor != -1) {
            Err(Error::InvalidPartitions("give either assignments or partitions and replication factor".into()))
        } else {
            let parts = if t.assignments.is_empty() { t.num_partitions } else { t.assignments.len() as i32 };
            b.create_topic(&name, parts, t.replication_factor, overrides, req.validate_only, now)
        };
        match result {
            Ok(id) => {
                tr.topic_id = uuid(id);
                if version >= 5 {
                    let topic = b.topic(&name);
                    tr.num_partitions = topic.map_or(t.num_partitions, |x| x.partitions.len() as i32);
                    tr.replication_factor = 1;
                    tr.configs = topic.map(|x| {
                        crate::broker::topic::describe(&x.config, x.min_insync)
                            .into_iter()
                            .map(|(k, v)| {
                                let mut c = CreatableTopicConfigs::default();
                                c.name = s(k);
                                c.value = Some(s(&v));
                                c.config_source = if x.overrides.contains_key(k) { 1 } else { 5 };
                                c
                            })
                            .collect()
                    });
                }
            }
            Err(e) => {
                tr.error_code = e.code(true);
                tr.error_message = Some(s(&e.to_string()));
                tr.num_partitions = -1;
                tr.replication_factor = -1;
            }
        }
        r.topics.push(tr);
    }
    r
}

pub fn delete_topics(b: &mut Broker, version: i16, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let mut r = DeleteTopicsResponse::default();
    let names: Vec<(Option<String>, uuid::Uuid)> = if version >= 6 {
        req.topics
            .iter()
            .map(|t| {
                let by_id = || b.topics().iter().find(|(_, x)| uuid(x.id) == t.topic_id).map(|(n, _)| n.clone());
                (t.name.as_ref().map(|n| n.0.to_string()).or_else(by_id), t.topic_id)
            })
            .collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.0.to_string()), uuid::Uuid::nil())).collect()
    };
    for (name, id) in names {
        let mut tr = DeletableTopicResult::default();
        tr.name = name.as_deref().map(topic_name);
        tr.topic_id = b.topic(name.as_deref().unwrap_or("")).map_or(id, |t| uuid(t.id));
        let result = match &name {
            Some(n) => b.delete_topic(n),
            None => Err(Error::UnknownTopicOrPartition),
        };
        if let Err(e) = result {
            tr.error_code = e.code(true);
            tr.error_message = Some(s(&e.to_string()));
        }
        r.responses.push(tr);
    }
    r
}

/// Config resource types (Kafka's ConfigResource.Type).
const resource_topic: i8 = 2;
const resource_broker: i8 = 4;

pub fn describe_configs(b: &Broker, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let mut r = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut rr = DescribeConfigsResult::default();
        rr.resource_type = res.resource_type;
        rr.resource_name = res.resource_name.clone();
        let name = res.resource_name.to_string();
        let entries: Result<Vec<(String, String, bool)>, (i16, String)> = match res.resource_type {
            resource_topic => match b.topic(&name) {
                Some(t) => Ok(crate::broker::topic::describe(&t.config, t.min_insync)
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v, !t.overrides.contains_key(k)))
                    .collect()),
                None => Err((3, format!("unknown topic '{name}'"))),
            },
            resource_broker if name.is_empty() || name == b.config().node_id.to_string() => Ok(broker_configs(b)),
            resource_broker => Err((42, format!("broker '{name}' is not this broker ({})", b.config().node_id))),
            other => Err((42, format!("config resource type {other} is not supported"))),
        };
        match entries {
            Ok(list) => {
                let keys = res.configuration_keys.as_ref().map(|ks| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>());
                rr.configs = list
                    .into_iter()
                    .filter(|(k, _, _)| keys.as_ref().is_none_or(|ks| ks.contains(k)))
                    .map(|(k, v, default)| {
                        let mut c = DescribeConfigsResourceResult::default();
                        c.name = s(&k);
                        c.value = Some(s(&v));
                        c.read_only = res.resource_type == resource_broker;
                        c.config_source = match (res.resource_type, default) {
                            (resource_topic, false) => 1, // DYNAMIC_TOPIC_CONFIG
                            (resource_broker, _) => 4,    // STATIC_BROKER_CONFIG
                            _ => 5,                       // DEFAULT_CONFIG
                        };
                        c
                    })
                    .collect();
            }
            Err((code, msg)) => {
                rr.error_code = code;
                rr.error_message = Some(s(&msg));
            }
        }
        r.results.push(rr);
    }
    r
}

fn broker_configs(b: &Broker) -> Vec<(String, String, bool)> {
    let c = b.config();
    let l = &c.log;
    [
        ("node.id", c.node_id.to_string()),
        ("log.dirs", c.data_dir.display().to_string()),
        ("auto.create.topics.enable", c.auto_create_topics.to_string()),
        ("num.partitions", c.num_partitions.to_string()),
        ("min.insync.replicas", c.min_insync_replicas.to_string()),
        ("message.max.bytes", l.max_message_bytes.to_string()),
        ("log.segment.bytes", l.segment_bytes.to_string()),
        ("log.roll.ms", l.segment_ms.to_string()),
        ("log.retention.ms", l.retention_ms.to_string()),
        ("log.retention.bytes", l.retention_bytes.to_string()),
        ("log.index.interval.bytes", l.index_interval_bytes.to_string()),
        ("socket.request.max.bytes", crate::constants::request_bytes_max.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v, false))
    .collect()
}

pub fn init_producer_id(b: &mut Broker, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    let result = match req.transactional_id {
        Some(_) => Err(Error::TransactionsUnsupported),
        None => b.init_producer_id(),
    };
    match result {
        Ok((id, epoch)) => {
            r.producer_id = ProducerId(id);
            r.producer_epoch = epoch;
        }
        Err(e) => {
            r.error_code = e.code(true);
            r.producer_id = ProducerId(-1);
            r.producer_epoch = -1;
        }
    }
    r
}

pub fn offset_for_leader_epoch(b: &Broker, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let mut r = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let name = t.topic.0.to_string();
        let mut tr = OffsetForLeaderTopicResult::default();
        tr.topic = t.topic.clone();
        for p in t.partitions {
            let mut e = EpochEndOffset::default();
            e.partition = p.partition;
            match b.end_offset_for_epoch(&name, p.partition, p.leader_epoch) {
                Ok((epoch, end)) => {
                    e.leader_epoch = epoch;
                    e.end_offset = end;
                }
                Err(err) => {
                    e.error_code = err.code(true);
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
