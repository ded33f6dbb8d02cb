//! The spliced encoding is the crate's encoding, byte for byte, for every served version.

use super::*;
use crate::log::{Log, LogConfig, Records};
use crate::storage::FileDisk;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use std::sync::Arc;

/// A log of 50 batches over several segments, and its slices from three offsets.
fn slices(dir: &std::path::Path) -> (Log, Vec<Records>) {
    let config = LogConfig { segment_bytes: 4096, index_interval_bytes: 256, ..LogConfig::default() };
    let (mut log, _) = Log::open(Arc::new(FileDisk::new()), dir, config, 0).unwrap();
    for b in 0..50 {
        let value = vec![b as u8; 100 + b * 7];
        log.append(&mut crate::log::batch::build(&[&value, b"second"], 1000 + b as i64), 3, 0).unwrap();
    }
    let end = log.log_end_offset();
    let slices = [0, 31, 77].map(|at| log.slice(at, 2000, end).unwrap()).to_vec();
    (log, slices)
}

fn partition(index: i32, records: Bytes) -> PartitionData {
    PartitionData::default()
        .with_partition_index(index)
        .with_high_watermark(100 + index as i64)
        .with_last_stable_offset(100)
        .with_log_start_offset(3)
        .with_aborted_transactions(Some(Vec::new()))
        .with_records(Some(records))
}

#[test]
fn spliced_frames_are_the_crates_encoding_for_every_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (_log, slices) = slices(tmp.path());
    let bytes: Vec<Bytes> = slices.iter().map(|s| s.to_bytes().unwrap()).collect();
    assert!(bytes.iter().all(|b| !b.is_empty()));
    for version in versions {
        // Topic "a": a file partition, an error partition, an in-memory one; topic "bb": two
        // file partitions around an empty one. The response in memory is what the crate encodes.
        let mut whole = FetchResponse::default().with_throttle_time_ms(5);
        if version >= 7 {
            whole = whole.with_session_id(77);
        }
        // By name, or from v13 by id (the crate writes the one the version has).
        let topic = |name: &str, parts: Vec<PartitionData>| {
            let id = uuid::Uuid::from_u128(name.len() as u128 * 0x1234_5678_9abc);
            FetchableTopicResponse::default().with_topic(TopicName(StrBytes::from_string(name.into()))).with_topic_id(id).with_partitions(parts)
        };
        let mut error = partition(1, Bytes::new()).with_error_code(6).with_high_watermark(-1);
        if version >= 16 {
            // KIP-951: the partition's leader, and the answer's endpoints (tagged fields).
            error.current_leader = kafka_protocol::messages::fetch_response::LeaderIdAndEpoch::default().with_leader_id(3.into()).with_leader_epoch(7);
            whole.node_endpoints = vec![kafka_protocol::messages::fetch_response::NodeEndpoint::default().with_node_id(3.into()).with_host(StrBytes::from_static_str("b3")).with_port(9093)];
        }
        whole.responses = vec![
            topic("a", vec![partition(0, bytes[0].clone()), error, partition(2, Bytes::from_static(b"in memory"))]),
            topic("bb", vec![partition(0, bytes[1].clone()), partition(1, Bytes::new()), partition(2, bytes[2].clone())]),
        ];
        let expected = crate::protocol::Response::new(ApiKey::Fetch, version, 42, whole.clone()).encode().unwrap();
        let mut spliced = whole.clone();
        let mut files = Vec::new();
        for (topic, partition, slice) in [(0, 0, 0), (1, 0, 1), (1, 2, 2)] {
            spliced.responses[topic].partitions[partition].records = Some(Bytes::new());
            let Records::File(regions) = &slices[slice] else { panic!("slices are file regions") };
            files.push(FileRecords { topic, partition, regions: regions.clone() });
        }
        let frame = encode(version, 42, &spliced, &files).unwrap();
        assert_eq!(frame.len(), expected.len(), "v{version}");
        assert_eq!(frame.to_bytes().unwrap(), expected, "v{version}");
        // A quota's throttle patched in is the crate's encoding of that throttle.
        let mut throttled = frame.clone();
        throttled.set_throttle_ms(version, 900);
        let expected_throttled = crate::protocol::Response::new(ApiKey::Fetch, version, 42, whole.clone().with_throttle_time_ms(900)).encode().unwrap();
        assert_eq!(throttled.to_bytes().unwrap(), expected_throttled, "v{version}");
        assert_eq!(frame.parts.iter().filter(|p| matches!(p, Part::File(_))).count(), files.iter().map(|f| f.regions.len()).sum::<usize>());
    }
}

#[test]
fn unknown_versions_and_misplaced_regions_are_refused_not_mangled() {
    let tmp = tempfile::tempdir().unwrap();
    let (_log, slices) = slices(tmp.path());
    let Records::File(regions) = &slices[0] else { panic!() };
    let files = [FileRecords { topic: 0, partition: 0, regions: regions.clone() }];
    let mut r = FetchResponse::default();
    r.responses = vec![FetchableTopicResponse::default().with_partitions(vec![partition(0, Bytes::new())])];
    assert!(encode(18, 1, &r, &files).unwrap_err().contains("v18"));
    let elsewhere = [FileRecords { topic: 0, partition: 5, regions: regions.clone() }];
    assert!(encode(12, 1, &r, &elsewhere).unwrap_err().contains("out of order or absent"));
}

/// A file partition's own tagged fields (a diverging epoch, a leader) come after its records
/// and are carried as the crate encodes them, found exactly: a leader (0, 0) makes the
/// partition's encoding end in two zero bytes, as one without tagged fields does.
#[test]
fn a_file_partitions_tagged_fields_are_carried_as_the_crate_encodes_them() {
    use kafka_protocol::messages::fetch_response::{EpochEndOffset, LeaderIdAndEpoch};
    let tmp = tempfile::tempdir().unwrap();
    let (_log, slices) = slices(tmp.path());
    let Records::File(regions) = &slices[0] else { panic!() };
    let records = slices[0].to_bytes().unwrap();
    let tagged = [
        partition(0, records.clone()).with_current_leader(LeaderIdAndEpoch::default().with_leader_id(0.into()).with_leader_epoch(0)),
        partition(0, records.clone()).with_diverging_epoch(EpochEndOffset::default().with_epoch(4).with_end_offset(9)),
    ];
    for version in 12..=*versions.end() {
        for pd in &tagged {
            let whole = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default().with_topic(TopicName(StrBytes::from_static_str("a"))).with_topic_id(uuid::Uuid::from_u128(9)).with_partitions(vec![pd.clone()])]);
            let expected = crate::protocol::Response::new(ApiKey::Fetch, version, 42, whole.clone()).encode().unwrap();
            let mut spliced = whole;
            spliced.responses[0].partitions[0].records = Some(Bytes::new());
            let frame = encode(version, 42, &spliced, &[FileRecords { topic: 0, partition: 0, regions: regions.clone() }]).unwrap();
            assert_eq!(frame.to_bytes().unwrap(), expected, "v{version}");
        }
    }
}
