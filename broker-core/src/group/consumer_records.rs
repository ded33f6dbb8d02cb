//! The records of KIP-848 consumer groups in `__consumer_offsets`, in Kafka's formats, so a
//! coordinator that takes a partition over loads its consumer groups as they were: epochs,
//! members, targets and each member's current assignment. Keys are Kafka's non-flexible
//! `ConsumerGroup*Key` (types 3–8); values are version 0, flexible (compact strings and arrays,
//! tagged fields), with topics by id. Encoding and decoding only; a key with a null value is a
//! tombstone. Decoding never panics and never allocates more than the input holds.
//!
//! ```text
//! key   i16 type | group string | member string (5, 7, 8)
//! 3  ConsumerGroupMetadata            epoch i32 | tags {0: metadata hash i64}
//! 4  ConsumerGroupPartitionMetadata   (Kafka 4.0's; read past, never written)
//! 5  ConsumerGroupMemberMetadata      instance? | rack? | client id | client host | topics [string]
//!                                     | regex? | rebalance timeout i32 | assignor?
//!                                     | tags {0: classic member: session timeout i32
//!                                       | protocols [name string | metadata bytes | tags] | tags}
//! 6  ConsumerGroupTargetAssignmentMetadata   assignment epoch i32
//! 7  ConsumerGroupTargetAssignmentMember     [topic id uuid | partitions [i32]]
//! 8  ConsumerGroupCurrentMemberAssignment    epoch i32 | previous epoch i32 | state i8
//!                                     | assigned [topic id | partitions] | revoking (the same)
//! values: i16 0 | fields | tags; string?: compact nullable; [x]: compact array
//! ```

use super::records::{Reader, RecordError};

/// Which consumer-group record a key names (after its group id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConsumerKey {
    Epoch,
    PartitionMetadata,
    Member(String),
    TargetEpoch,
    Target(String),
    Current(String),
}

impl ConsumerKey {
    /// Kafka's record type, the key's version.
    pub fn record_type(&self) -> i16 {
        match self {
            ConsumerKey::Epoch => 3,
            ConsumerKey::PartitionMetadata => 4,
            ConsumerKey::Member(_) => 5,
            ConsumerKey::TargetEpoch => 6,
            ConsumerKey::Target(_) => 7,
            ConsumerKey::Current(_) => 8,
        }
    }

    fn member(&self) -> Option<&str> {
        match self {
            ConsumerKey::Member(m) | ConsumerKey::Target(m) | ConsumerKey::Current(m) => Some(m),
            _ => None,
        }
    }
}

/// Partitions by topic id.
pub type TopicIdPartitions = Vec<([u8; 16], Vec<i32>)>;

/// A member's subscription and client, as stored (record type 5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    pub instance_id: Option<String>,
    pub rack: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topics: Vec<String>,
    pub regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub assignor: Option<String>,
    /// A member using the classic protocol inside the consumer group (KIP-848's migration):
    /// None for a consumer-protocol member.
    pub classic: Option<ClassicMetadata>,
}

/// What a classic member (JoinGroup) brings that a consumer-protocol member has not: its
/// session timeout and its protocols (name, consumer protocol subscription), in its order.
/// Kafka's `ClassicMemberMetadata`, the tagged field 0 of record type 5.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassicMetadata {
    pub session_timeout_ms: i32,
    pub protocols: Vec<(String, bytes::Bytes)>,
}

/// A member's current assignment, as stored (record type 8); `state` is Kafka's MemberState
/// byte (0 stable, 1 unrevoked partitions, 2 unreleased partitions).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentAssignment {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: i8,
    pub assigned: TopicIdPartitions,
    pub revoking: TopicIdPartitions,
}

/// A consumer-group record's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerValue {
    /// The group epoch and the hash of the subscribed topics' partition counts it was
    /// computed over.
    Epoch { epoch: i32, metadata_hash: i64 },
    Member(MemberMetadata),
    TargetEpoch(i32),
    Target(TopicIdPartitions),
    Current(CurrentAssignment),
}

/// Tag of the metadata hash in the group epoch value (Kafka 4.1's `MetadataHash`).
const metadata_hash_tag: u32 = 0;

/// Tag of a classic member's metadata in the member metadata value (`ClassicMemberMetadata`).
const classic_member_tag: u32 = 0;

pub(super) fn encode_key(w: &mut Vec<u8>, group: &str, key: &ConsumerKey) {
    w.extend_from_slice(&key.record_type().to_be_bytes());
    super::records::put_str(w, Some(group));
    if let Some(m) = key.member() {
        super::records::put_str(w, Some(m));
    }
}

/// The key after its type, `version`; None: not a consumer-group type.
pub(super) fn decode_key(r: &mut Reader, version: i16) -> Result<Option<(String, ConsumerKey)>, RecordError> {
    let group = match version {
        3..=8 => r.string("group id")?,
        _ => return Ok(None),
    };
    let key = match version {
        3 => ConsumerKey::Epoch,
        4 => ConsumerKey::PartitionMetadata,
        5 => ConsumerKey::Member(r.string("member id")?),
        6 => ConsumerKey::TargetEpoch,
        7 => ConsumerKey::Target(r.string("member id")?),
        _ => ConsumerKey::Current(r.string("member id")?),
    };
    Ok(Some((group, key)))
}

pub fn encode_value(v: &ConsumerValue) -> Vec<u8> {
    let mut w = 0i16.to_be_bytes().to_vec();
    match v {
        ConsumerValue::Epoch { epoch, metadata_hash } => {
            w.extend_from_slice(&epoch.to_be_bytes());
            // One tagged field: the hash.
            uvarint(&mut w, 1);
            uvarint(&mut w, metadata_hash_tag);
            uvarint(&mut w, 8);
            w.extend_from_slice(&metadata_hash.to_be_bytes());
            return w;
        }
        ConsumerValue::Member(m) => {
            compact_str(&mut w, m.instance_id.as_deref());
            compact_str(&mut w, m.rack.as_deref());
            compact_str(&mut w, Some(&m.client_id));
            compact_str(&mut w, Some(&m.client_host));
            uvarint(&mut w, m.topics.len() as u32 + 1);
            m.topics.iter().for_each(|t| compact_str(&mut w, Some(t)));
            compact_str(&mut w, m.regex.as_deref());
            w.extend_from_slice(&m.rebalance_timeout_ms.to_be_bytes());
            compact_str(&mut w, m.assignor.as_deref());
            if let Some(classic) = &m.classic {
                let field = encode_classic(classic);
                uvarint(&mut w, 1);
                uvarint(&mut w, classic_member_tag);
                uvarint(&mut w, field.len() as u32);
                w.extend_from_slice(&field);
                return w;
            }
        }
        ConsumerValue::TargetEpoch(epoch) => w.extend_from_slice(&epoch.to_be_bytes()),
        ConsumerValue::Target(tps) => topic_partitions(&mut w, tps),
        ConsumerValue::Current(c) => {
            w.extend_from_slice(&c.epoch.to_be_bytes());
            w.extend_from_slice(&c.previous_epoch.to_be_bytes());
            w.push(c.state as u8);
            topic_partitions(&mut w, &c.assigned);
            topic_partitions(&mut w, &c.revoking);
        }
    }
    uvarint(&mut w, 0);
    w
}

/// The value of a `key` record; None for Kafka 4.0's partition metadata (read past).
pub fn decode_value(key: &ConsumerKey, b: &[u8]) -> Result<Option<ConsumerValue>, RecordError> {
    let mut r = Reader::new(b);
    let version = r.i16("consumer group value version")?;
    if version != 0 {
        return Err(RecordError::Version { what: "consumer group value", version });
    }
    let mut metadata_hash = 0;
    let mut classic = None;
    let v = match key {
        ConsumerKey::PartitionMetadata => return Ok(None),
        ConsumerKey::Epoch => ConsumerValue::Epoch { epoch: r.i32("group epoch")?, metadata_hash: 0 },
        ConsumerKey::Member(_) => ConsumerValue::Member(MemberMetadata {
            instance_id: r.compact_str("instance id")?,
            rack: r.compact_str("rack id")?,
            client_id: r.compact_str("client id")?.unwrap_or_default(),
            client_host: r.compact_str("client host")?.unwrap_or_default(),
            topics: {
                let n = r.compact_len("subscribed topics")?;
                (0..n).map(|_| Ok(r.compact_str("subscribed topic")?.unwrap_or_default())).collect::<Result<_, RecordError>>()?
            },
            regex: r.compact_str("regex")?,
            rebalance_timeout_ms: r.i32("rebalance timeout")?,
            assignor: r.compact_str("assignor")?,
            classic: None,
        }),
        ConsumerKey::TargetEpoch => ConsumerValue::TargetEpoch(r.i32("assignment epoch")?),
        ConsumerKey::Target(_) => ConsumerValue::Target(read_topic_partitions(&mut r)?),
        ConsumerKey::Current(_) => ConsumerValue::Current(CurrentAssignment {
            epoch: r.i32("member epoch")?,
            previous_epoch: r.i32("previous member epoch")?,
            state: r.take(1, "member state")?[0] as i8,
            assigned: read_topic_partitions(&mut r)?,
            revoking: read_topic_partitions(&mut r)?,
        }),
    };
    for (tag, value) in r.tags()? {
        match (key, tag) {
            (ConsumerKey::Epoch, t) if t == metadata_hash_tag && value.len() == 8 => metadata_hash = i64::from_be_bytes(value.try_into().expect("eight bytes")),
            (ConsumerKey::Member(_), t) if t == classic_member_tag => classic = Some(decode_classic(&value)?),
            _ => {}
        }
    }
    r.end()?;
    Ok(Some(match v {
        ConsumerValue::Epoch { epoch, .. } => ConsumerValue::Epoch { epoch, metadata_hash },
        ConsumerValue::Member(m) => ConsumerValue::Member(MemberMetadata { classic, ..m }),
        other => other,
    }))
}

/// A classic member's metadata as its tagged field carries it: session timeout, the protocols
/// (each name, metadata, no tags), no tags.
fn encode_classic(c: &ClassicMetadata) -> Vec<u8> {
    let mut w = c.session_timeout_ms.to_be_bytes().to_vec();
    uvarint(&mut w, c.protocols.len() as u32 + 1);
    for (name, metadata) in &c.protocols {
        compact_str(&mut w, Some(name));
        uvarint(&mut w, metadata.len() as u32 + 1);
        w.extend_from_slice(metadata);
        uvarint(&mut w, 0);
    }
    uvarint(&mut w, 0);
    w
}

fn decode_classic(b: &[u8]) -> Result<ClassicMetadata, RecordError> {
    let mut r = Reader::new(b);
    let session_timeout_ms = r.i32("classic session timeout")?;
    let n = r.compact_len("classic protocols")?;
    let mut protocols = Vec::new();
    for _ in 0..n {
        let name = r.compact_str("classic protocol name")?.unwrap_or_default();
        let len = r.compact_len("classic protocol metadata")?;
        protocols.push((name, bytes::Bytes::copy_from_slice(r.take(len, "classic protocol metadata")?)));
        r.tags()?;
    }
    r.tags()?;
    r.end()?;
    Ok(ClassicMetadata { session_timeout_ms, protocols })
}

pub(super) fn uvarint(w: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

pub(super) fn compact_str(w: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            uvarint(w, s.len() as u32 + 1);
            w.extend_from_slice(s.as_bytes());
        }
        None => uvarint(w, 0),
    }
}

pub(super) fn topic_partitions(w: &mut Vec<u8>, tps: &TopicIdPartitions) {
    uvarint(w, tps.len() as u32 + 1);
    for (id, ps) in tps {
        w.extend_from_slice(id);
        uvarint(w, ps.len() as u32 + 1);
        ps.iter().for_each(|p| w.extend_from_slice(&p.to_be_bytes()));
        uvarint(w, 0);
    }
}

pub(super) fn read_topic_partitions(r: &mut Reader) -> Result<TopicIdPartitions, RecordError> {
    let n = r.compact_len("topic partitions")?;
    let mut out = Vec::new();
    for _ in 0..n {
        let id: [u8; 16] = r.take(16, "topic id")?.try_into().expect("sixteen bytes");
        let count = r.compact_len("partitions")?;
        let ps = (0..count).map(|_| r.i32("partition")).collect::<Result<Vec<i32>, _>>()?;
        r.tags()?;
        out.push((id, ps));
    }
    Ok(out)
}

impl Reader<'_> {
    pub(super) fn uvarint(&mut self, what: &'static str) -> Result<u32, RecordError> {
        let mut v = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.take(1, what)?[0];
            v |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError::Truncated(what))
    }

    /// A compact array's length; each element takes at least a byte, so a length beyond the
    /// bytes left is an error here, never an allocation.
    pub(super) fn compact_len(&mut self, what: &'static str) -> Result<usize, RecordError> {
        let n = (self.uvarint(what)? as usize).saturating_sub(1);
        match n <= self.left() {
            true => Ok(n),
            false => Err(RecordError::Truncated(what)),
        }
    }

    pub(super) fn compact_str(&mut self, what: &'static str) -> Result<Option<String>, RecordError> {
        let n = self.uvarint(what)? as usize;
        if n == 0 {
            return Ok(None);
        }
        let s = self.take(n - 1, what)?;
        std::str::from_utf8(s).map(|s| Some(s.to_string())).map_err(|_| RecordError::NotUtf8(what))
    }

    /// A tagged-fields section: (tag, value) each.
    pub(super) fn tags(&mut self) -> Result<Vec<(u32, Vec<u8>)>, RecordError> {
        let n = self.uvarint("tagged fields")? as usize;
        if n > self.left() {
            return Err(RecordError::Truncated("tagged fields"));
        }
        let mut out = Vec::new();
        for _ in 0..n {
            let tag = self.uvarint("tag")?;
            let len = self.uvarint("tag length")? as usize;
            out.push((tag, self.take(len, "tagged field")?.to_vec()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::records::{decode_key as key_of, encode_key as key_bytes, Key};

    #[test]
    fn keys_and_values_round_trip() {
        for key in [ConsumerKey::Epoch, ConsumerKey::Member("m".into()), ConsumerKey::TargetEpoch, ConsumerKey::Target("m".into()), ConsumerKey::Current("m".into())] {
            let k = Key::Consumer { group: "g".into(), key };
            assert_eq!(key_of(&key_bytes(&k)), Ok(k));
        }
        let id = [7u8; 16];
        let values = [
            (ConsumerKey::Epoch, ConsumerValue::Epoch { epoch: 5, metadata_hash: -3 }),
            (ConsumerKey::Member("m".into()), ConsumerValue::Member(MemberMetadata { instance_id: Some("i".into()), rack: None, client_id: "c".into(), client_host: "/127.0.0.1".into(), topics: vec!["a".into(), "b".into()], regex: Some("x.*".into()), rebalance_timeout_ms: 300_000, assignor: Some("range".into()), classic: None })),
            (ConsumerKey::Member("c".into()), ConsumerValue::Member(MemberMetadata { client_id: "c".into(), topics: vec!["a".into()], rebalance_timeout_ms: 60_000, classic: Some(ClassicMetadata { session_timeout_ms: 45_000, protocols: vec![("range".into(), bytes::Bytes::from_static(&[0, 3, 0, 0, 0, 1])), ("roundrobin".into(), bytes::Bytes::new())] }), ..MemberMetadata::default() })),
            (ConsumerKey::TargetEpoch, ConsumerValue::TargetEpoch(4)),
            (ConsumerKey::Target("m".into()), ConsumerValue::Target(vec![(id, vec![0, 2])])),
            (ConsumerKey::Current("m".into()), ConsumerValue::Current(CurrentAssignment { epoch: 4, previous_epoch: 3, state: 1, assigned: vec![(id, vec![0])], revoking: vec![(id, vec![2])] })),
        ];
        for (k, v) in values {
            assert_eq!(decode_value(&k, &encode_value(&v)), Ok(Some(v)));
        }
    }

    #[test]
    fn the_member_key_and_the_epoch_value_are_kafkas_bytes() {
        let k = key_bytes(&Key::Consumer { group: "g".into(), key: ConsumerKey::Member("m".into()) });
        assert_eq!(k, [0, 5, 0, 1, b'g', 0, 1, b'm']);
        // Version 0, epoch 1, one tagged field: tag 0, eight bytes.
        let v = encode_value(&ConsumerValue::Epoch { epoch: 1, metadata_hash: 2 });
        assert_eq!(v, [0, 0, 0, 0, 0, 1, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let current = ConsumerKey::Current("m".into());
        assert_eq!(decode_value(&current, &[0, 1]), Err(RecordError::Version { what: "consumer group value", version: 1 }));
        // Two billion topics announced, none behind.
        assert_eq!(decode_value(&ConsumerKey::Target("m".into()), &[0, 0, 0xff, 0xff, 0xff, 0xff, 0x07]), Err(RecordError::Truncated("topic partitions")));
        let mut v = encode_value(&ConsumerValue::TargetEpoch(1));
        v.push(9);
        assert_eq!(decode_value(&ConsumerKey::TargetEpoch, &v), Err(RecordError::Trailing(1)));
        assert_eq!(decode_value(&ConsumerKey::PartitionMetadata, &[0, 0, 1, 2, 3]), Ok(None));
    }
}
