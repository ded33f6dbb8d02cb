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
        let topic = |name: &str, parts: Vec<PartitionData>| {
            FetchableTopicResponse::default().with_topic(TopicName(StrBytes::from_string(name.into()))).with_partitions(parts)
        };
        let error = partition(1, Bytes::new()).with_error_code(6).with_high_watermark(-1);
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
fn unknown_versions_misplaced_regions_and_tagged_fields_are_refused_not_mangled() {
    let tmp = tempfile::tempdir().unwrap();
    let (_log, slices) = slices(tmp.path());
    let Records::File(regions) = &slices[0] else { panic!() };
    let files = [FileRecords { topic: 0, partition: 0, regions: regions.clone() }];
    let mut r = FetchResponse::default();
    r.responses = vec![FetchableTopicResponse::default().with_partitions(vec![partition(0, Bytes::new())])];
    assert!(encode(13, 1, &r, &files).unwrap_err().contains("v13"));
    let elsewhere = [FileRecords { topic: 0, partition: 5, regions: regions.clone() }];
    assert!(encode(12, 1, &r, &elsewhere).unwrap_err().contains("out of order or absent"));
    r.responses[0].partitions[0].diverging_epoch.epoch = 4;
    r.responses[0].partitions[0].diverging_epoch.end_offset = 9;
    assert!(encode(12, 1, &r, &files).unwrap_err().contains("tagged fields"));
}
