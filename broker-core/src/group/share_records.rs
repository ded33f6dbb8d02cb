//! The records of KIP-932 share groups in `__consumer_offsets`, in Kafka 4.1's formats, so a
//! coordinator that takes a partition over (or a broker that restarts) knows its share groups
//! as they were: the group epoch, the members with their subscriptions, the target and each
//! member's current assignment. Keys are Kafka's non-flexible `ShareGroup*Key` (types 10–15,
//! 9 being Kafka 4.0's partition metadata); values are version 0, flexible (compact strings
//! and arrays, tagged fields), with topics by id. Encoding and decoding only; a key with a null
//! value is a tombstone. Decoding never panics and never allocates more than the input holds.
//!
//! ```text
//! key   i16 type | group string | member string (10, 13, 14)
//! 9   ShareGroupPartitionMetadata        (Kafka 4.0's; read past, never written)
//! 10  ShareGroupMemberMetadata           rack? | client id | client host | topics [string]
//! 11  ShareGroupMetadata                 epoch i32 | metadata hash i64
//! 12  ShareGroupTargetAssignmentMetadata assignment epoch i32
//! 13  ShareGroupTargetAssignmentMember   [topic id uuid | partitions [i32]]
//! 14  ShareGroupCurrentMemberAssignment  epoch i32 | previous epoch i32 | state i8
//!                                        | assigned [topic id | partitions]
//! 15  ShareGroupStatePartitionMetadata   (which share-partitions were initialized; read past,
//!                                        never written: a share-partition here initializes
//!                                        itself at its first ReadShareGroupState)
//! values: i16 0 | fields | tags; string?: compact nullable; [x]: compact array
//! ```

use super::consumer_records::{compact_str, read_topic_partitions, topic_partitions, uvarint, TopicIdPartitions};
use super::records::{Reader, RecordError};

/// Which share-group record a key names (after its group id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShareGroupKey {
    PartitionMetadata,
    Member(String),
    Epoch,
    TargetEpoch,
    Target(String),
    Current(String),
    StatePartitions,
}

impl ShareGroupKey {
    /// Kafka's record type, the key's version.
    pub fn record_type(&self) -> i16 {
        match self {
            ShareGroupKey::PartitionMetadata => 9,
            ShareGroupKey::Member(_) => 10,
            ShareGroupKey::Epoch => 11,
            ShareGroupKey::TargetEpoch => 12,
            ShareGroupKey::Target(_) => 13,
            ShareGroupKey::Current(_) => 14,
            ShareGroupKey::StatePartitions => 15,
        }
    }

    fn member(&self) -> Option<&str> {
        match self {
            ShareGroupKey::Member(m) | ShareGroupKey::Target(m) | ShareGroupKey::Current(m) => Some(m),
            _ => None,
        }
    }
}

/// A member's subscription and client, as stored (record type 10).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareMemberMetadata {
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topics: Vec<String>,
}

/// A member's current assignment, as stored (record type 14); `state` is Kafka's MemberState
/// byte (a share member is always 0, stable: it has nothing to revoke).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareCurrent {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: i8,
    pub assigned: TopicIdPartitions,
}

/// A share-group record's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareGroupValue {
    /// The group epoch and the hash of the subscribed topics' partition counts it was
    /// computed over.
    Epoch { epoch: i32, metadata_hash: i64 },
    Member(ShareMemberMetadata),
    TargetEpoch(i32),
    Target(TopicIdPartitions),
    Current(ShareCurrent),
}

pub(super) fn encode_key(w: &mut Vec<u8>, group: &str, key: &ShareGroupKey) {
    w.extend_from_slice(&key.record_type().to_be_bytes());
    super::records::put_str(w, Some(group));
    if let Some(m) = key.member() {
        super::records::put_str(w, Some(m));
    }
}

/// The key after its type, `version`; None: not a share-group type.
pub(super) fn decode_key(r: &mut Reader, version: i16) -> Result<Option<(String, ShareGroupKey)>, RecordError> {
    let group = match version {
        9..=15 => r.string("group id")?,
        _ => return Ok(None),
    };
    let key = match version {
        9 => ShareGroupKey::PartitionMetadata,
        10 => ShareGroupKey::Member(r.string("member id")?),
        11 => ShareGroupKey::Epoch,
        12 => ShareGroupKey::TargetEpoch,
        13 => ShareGroupKey::Target(r.string("member id")?),
        14 => ShareGroupKey::Current(r.string("member id")?),
        _ => ShareGroupKey::StatePartitions,
    };
    Ok(Some((group, key)))
}

pub fn encode_value(v: &ShareGroupValue) -> Vec<u8> {
    let mut w = 0i16.to_be_bytes().to_vec();
    match v {
        ShareGroupValue::Epoch { epoch, metadata_hash } => {
            w.extend_from_slice(&epoch.to_be_bytes());
            w.extend_from_slice(&metadata_hash.to_be_bytes());
        }
        ShareGroupValue::Member(m) => {
            compact_str(&mut w, m.rack.as_deref());
            compact_str(&mut w, Some(&m.client_id));
            compact_str(&mut w, Some(&m.client_host));
            uvarint(&mut w, m.topics.len() as u32 + 1);
            m.topics.iter().for_each(|t| compact_str(&mut w, Some(t)));
        }
        ShareGroupValue::TargetEpoch(epoch) => w.extend_from_slice(&epoch.to_be_bytes()),
        ShareGroupValue::Target(tps) => topic_partitions(&mut w, tps),
        ShareGroupValue::Current(c) => {
            w.extend_from_slice(&c.epoch.to_be_bytes());
            w.extend_from_slice(&c.previous_epoch.to_be_bytes());
            w.push(c.state as u8);
            topic_partitions(&mut w, &c.assigned);
        }
    }
    uvarint(&mut w, 0);
    w
}

/// The value of a `key` record; None for the two record types read past (9 and 15).
pub fn decode_value(key: &ShareGroupKey, b: &[u8]) -> Result<Option<ShareGroupValue>, RecordError> {
    let mut r = Reader::new(b);
    let version = r.i16("share group value version")?;
    if version != 0 {
        return Err(RecordError::Version { what: "share group value", version });
    }
    let v = match key {
        ShareGroupKey::PartitionMetadata | ShareGroupKey::StatePartitions => return Ok(None),
        ShareGroupKey::Epoch => ShareGroupValue::Epoch { epoch: r.i32("group epoch")?, metadata_hash: r.i64("metadata hash")? },
        ShareGroupKey::Member(_) => ShareGroupValue::Member(ShareMemberMetadata {
            rack: r.compact_str("rack id")?,
            client_id: r.compact_str("client id")?.unwrap_or_default(),
            client_host: r.compact_str("client host")?.unwrap_or_default(),
            topics: {
                let n = r.compact_len("subscribed topics")?;
                (0..n).map(|_| Ok(r.compact_str("subscribed topic")?.unwrap_or_default())).collect::<Result<_, RecordError>>()?
            },
        }),
        ShareGroupKey::TargetEpoch => ShareGroupValue::TargetEpoch(r.i32("assignment epoch")?),
        ShareGroupKey::Target(_) => ShareGroupValue::Target(read_topic_partitions(&mut r)?),
        ShareGroupKey::Current(_) => ShareGroupValue::Current(ShareCurrent {
            epoch: r.i32("member epoch")?,
            previous_epoch: r.i32("previous member epoch")?,
            state: r.take(1, "member state")?[0] as i8,
            assigned: read_topic_partitions(&mut r)?,
        }),
    };
    r.tags()?;
    r.end()?;
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::records::{decode_key as key_of, encode_key as key_bytes, Key};

    #[test]
    fn keys_and_values_round_trip() {
        for key in [ShareGroupKey::Epoch, ShareGroupKey::Member("m".into()), ShareGroupKey::TargetEpoch, ShareGroupKey::Target("m".into()), ShareGroupKey::Current("m".into())] {
            let k = Key::ShareGroup { group: "g".into(), key };
            assert_eq!(key_of(&key_bytes(&k)), Ok(k));
        }
        let id = [7u8; 16];
        let values = [
            (ShareGroupKey::Epoch, ShareGroupValue::Epoch { epoch: 5, metadata_hash: -3 }),
            (ShareGroupKey::Member("m".into()), ShareGroupValue::Member(ShareMemberMetadata { rack: Some("r".into()), client_id: "c".into(), client_host: "/127.0.0.1".into(), topics: vec!["a".into(), "b".into()] })),
            (ShareGroupKey::Member("n".into()), ShareGroupValue::Member(ShareMemberMetadata::default())),
            (ShareGroupKey::TargetEpoch, ShareGroupValue::TargetEpoch(4)),
            (ShareGroupKey::Target("m".into()), ShareGroupValue::Target(vec![(id, vec![0, 2])])),
            (ShareGroupKey::Current("m".into()), ShareGroupValue::Current(ShareCurrent { epoch: 4, previous_epoch: 3, state: 0, assigned: vec![(id, vec![0])] })),
        ];
        for (k, v) in values {
            assert_eq!(decode_value(&k, &encode_value(&v)), Ok(Some(v)));
        }
    }

    #[test]
    fn keys_and_the_epoch_value_are_kafkas_bytes() {
        let k = key_bytes(&Key::ShareGroup { group: "g".into(), key: ShareGroupKey::Member("m".into()) });
        assert_eq!(k, [0, 10, 0, 1, b'g', 0, 1, b'm']);
        assert_eq!(key_bytes(&Key::ShareGroup { group: "g".into(), key: ShareGroupKey::Epoch }), [0, 11, 0, 1, b'g']);
        assert_eq!(key_bytes(&Key::ShareGroup { group: "g".into(), key: ShareGroupKey::Current("m".into()) })[..2], [0, 14]);
        // Version 0, epoch 1, hash 2 (a plain field in 4.1's schema), no tagged fields.
        let v = encode_value(&ShareGroupValue::Epoch { epoch: 1, metadata_hash: 2 });
        assert_eq!(v, [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        // A member: rack null, client "c", host "h", topics ["t"], no tags.
        let v = encode_value(&ShareGroupValue::Member(ShareMemberMetadata { rack: None, client_id: "c".into(), client_host: "h".into(), topics: vec!["t".into()] }));
        assert_eq!(v, [0, 0, 0, 2, b'c', 2, b'h', 2, 2, b't', 0]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let current = ShareGroupKey::Current("m".into());
        assert_eq!(decode_value(&current, &[0, 1]), Err(RecordError::Version { what: "share group value", version: 1 }));
        assert_eq!(decode_value(&ShareGroupKey::Target("m".into()), &[0, 0, 0xff, 0xff, 0xff, 0xff, 0x07]), Err(RecordError::Truncated("topic partitions")));
        let mut v = encode_value(&ShareGroupValue::TargetEpoch(1));
        v.push(9);
        assert_eq!(decode_value(&ShareGroupKey::TargetEpoch, &v), Err(RecordError::Trailing(1)));
        let bytes = encode_value(&ShareGroupValue::Current(ShareCurrent { epoch: 1, previous_epoch: 0, state: 0, assigned: vec![([1; 16], vec![0, 1])] }));
        for n in 0..bytes.len() {
            assert!(decode_value(&current, &bytes[..n]).is_err());
        }
        assert_eq!(decode_value(&ShareGroupKey::StatePartitions, &[0, 0, 1, 2, 3]), Ok(None));
        assert_eq!(key_of(&[0, 15, 0, 1, b'g']), Ok(Key::ShareGroup { group: "g".into(), key: ShareGroupKey::StatePartitions }));
    }
}
