//! Snapshots of the committed metadata image, as the controller writes and reads them: the
//! image written as [`MetadataRecord`]s with the log's own encoder (so a field added to a record
//! reaches snapshots with no change here), in v2 record batches (each with its CRC32C) of at
//! most [`records_per_batch`] records, offsets counted from 0 inside the snapshot. The file
//! around them (name, header, CRC of the whole) is `raft::snapshot_file`'s.
//!
//! [`SnapshotPolicy`] decides when: once the committed records applied since the last snapshot
//! exceed `metadata.log.max.record.bytes.between.snapshots`. No IO, no clock.

use crate::log::batch;
use crate::metadata::{decode_records, Image, MetadataRecord};
use bytes::Bytes;

/// Records per batch of a snapshot: small enough that a batch is far below one fetch, large
/// enough that batch headers (61 bytes) are a small share of the file.
pub const records_per_batch: usize = 1_000;

/// The image's records as snapshot bytes.
pub fn encode(image: &Image) -> Bytes {
    let records = image.to_records();
    let mut out = Vec::new();
    for (i, chunk) in records.chunks(records_per_batch).enumerate() {
        let values: Vec<Vec<u8>> = chunk.iter().map(MetadataRecord::encode).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let mut b = batch::build(&refs, 0);
        batch::stamp(&mut b, (i * records_per_batch) as i64, 0);
        out.extend_from_slice(&b);
    }
    out.into()
}

/// The records of snapshot bytes, in order.
pub fn records(bytes: &Bytes) -> Result<Vec<MetadataRecord>, String> {
    Ok(decode_records(bytes).map_err(|e| format!("snapshot: {e}"))?.into_iter().map(|(_, r)| r).collect())
}

/// The image a snapshot ending at `end` holds.
pub fn decode(bytes: &Bytes, end: i64) -> Result<Image, String> {
    let mut image = Image::default();
    for r in records(bytes)? {
        image.apply(end - 1, &r);
    }
    image.offset = end - 1;
    Ok(image)
}

/// When to take the next snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// `metadata.log.max.record.bytes.between.snapshots`.
    bytes_between: u64,
    /// Bytes of committed entries applied since the last snapshot (or the start).
    since: u64,
}

impl SnapshotPolicy {
    pub fn new(bytes_between: u64) -> SnapshotPolicy {
        SnapshotPolicy { bytes_between: bytes_between.max(1), since: 0 }
    }

    /// Committed entries of `bytes` were applied.
    pub fn applied(&mut self, bytes: usize) {
        self.since += bytes as u64;
    }

    /// Whether enough was committed since the last snapshot to take one now.
    pub fn due(&self) -> bool {
        self.since >= self.bytes_between
    }

    /// A snapshot was taken or installed: count again from zero.
    pub fn taken(&mut self) {
        self.since = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::topic;
    use std::collections::BTreeMap;

    #[test]
    fn a_snapshot_is_due_once_the_threshold_is_reached_and_counts_again_after() {
        let mut p = SnapshotPolicy::new(100);
        p.applied(60);
        assert!(!p.due());
        p.applied(40);
        assert!(p.due());
        p.taken();
        assert!(!p.due());
        let mut at_least_one = SnapshotPolicy::new(0);
        assert!(!at_least_one.due(), "a threshold of 0 counts as 1 byte");
        at_least_one.applied(1);
        assert!(at_least_one.due());
    }

    #[test]
    fn an_image_round_trips_through_its_snapshot_in_several_batches() {
        let mut image = Image::default();
        let mut o = 0;
        let mut apply = |image: &mut Image, r: MetadataRecord| {
            image.apply(o, &r);
            o += 1;
        };
        apply(&mut image, MetadataRecord::RegisterBroker { id: 1, epoch: 0, host: "h".into(), port: 9092, listeners: Vec::new() });
        apply(&mut image, MetadataRecord::UnfenceBroker { id: 1, epoch: 0 });
        apply(&mut image, MetadataRecord::RegisterBroker { id: 2, epoch: 2, host: "h".into(), port: 9093, listeners: Vec::new() });
        let config = BTreeMap::from([("retention.ms".to_string(), "5".to_string())]);
        apply(&mut image, MetadataRecord::Topic { name: "t".into(), id: topic::hex(&[3; 16]), partitions: 2500, config });
        for p in 0..2500 {
            apply(&mut image, MetadataRecord::Partition { topic: "t".into(), partition: p, replicas: vec![1, 2], isr: vec![1], leader: 1, leader_epoch: p, partition_epoch: p + 1, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] });
        }
        apply(&mut image, MetadataRecord::TopicConfig { name: "t".into(), config: BTreeMap::new() });
        apply(&mut image, MetadataRecord::Topic { name: "gone".into(), id: topic::hex(&[4; 16]), partitions: 1, config: BTreeMap::new() });
        apply(&mut image, MetadataRecord::RemoveTopic { name: "gone".into() });
        apply(&mut image, MetadataRecord::GroupConfig { group: "g".into(), config: BTreeMap::from([("share.auto.offset.reset".to_string(), "earliest".to_string())]) });
        assert!(!image.group_configs.is_empty());
        let bytes = encode(&image);
        assert!(records(&bytes).unwrap().len() > 2 * records_per_batch, "several batches");
        assert_eq!(decode(&bytes, image.offset + 1), Ok(image.clone()));
        // A flipped byte anywhere is caught by a batch CRC or the JSON.
        let mut bad = bytes.to_vec();
        bad[bytes.len() / 2] ^= 1;
        assert!(decode(&bad.into(), 1).is_err());
        assert_eq!(decode(&encode(&Image::default()), 5).unwrap(), Image { offset: 4, ..Image::default() });
    }
}
