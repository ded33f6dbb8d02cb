//! The records the group coordinator keeps in `__consumer_offsets`, in Kafka's own formats
//! (`OffsetCommitKey`/`OffsetCommitValue` v3, `GroupMetadataKey`/`GroupMetadataValue` v3), so a
//! dump of the topic reads the same as Kafka's. Encoding and decoding only; a key with a null
//! value is a tombstone (the offset or group was deleted). Decoding never panics and never
//! allocates more than the input holds: garbage produced into the topic is a typed error the
//! loader skips.
//!
//! ```text
//! key   i16 version (0|1 offset, 2 group) | group string | [topic string | partition i32]
//! offset value  i16 3 | offset i64 | leader_epoch i32 | metadata string | commit_timestamp i64
//! group value   i16 3 | protocol_type string | generation i32 | protocol string? | leader string?
//!               | current_state_timestamp i64 | members i32 count, each:
//!                 member_id string | group_instance_id string? | client_id string
//!                 | client_host string | rebalance_timeout i32 | session_timeout i32
//!                 | subscription bytes | assignment bytes
//! string: i16 length (-1 = null) + UTF-8; bytes: i32 length + bytes
//! ```

use bytes::Bytes;

/// The key of a record in `__consumer_offsets`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// A committed offset: group, topic, partition.
    Offset { group: String, topic: String, partition: i32 },
    /// A group's membership and assignment.
    Group { group: String },
    /// A KIP-848 consumer group's record (`consumer_records`).
    Consumer { group: String, key: super::consumer_records::ConsumerKey },
    /// A share-partition's state (`share_state`): group, topic id, partition.
    ShareState(super::share_state::ShareKey),
    /// A KIP-932 share group's record (`share_records`).
    ShareGroup { group: String, key: super::share_records::ShareGroupKey },
}

impl Key {
    pub fn group(&self) -> &str {
        match self {
            Key::Offset { group, .. } | Key::Group { group } | Key::Consumer { group, .. } | Key::ShareState((group, _, _)) | Key::ShareGroup { group, .. } => group,
        }
    }
}

/// A committed offset, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    /// The leader epoch of the record at `offset` as the consumer saw it (-1: unknown).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// A group as stored when it became Stable or Empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberValue>,
}

/// One member of a stored group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// Why bytes in the offsets topic are not a record this coordinator understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record has no key")]
    NoKey,
    #[error("truncated {0}")]
    Truncated(&'static str),
    #[error("unknown {what} version {version}")]
    Version { what: &'static str, version: i16 },
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    #[error("{0} bytes left after the record")]
    Trailing(usize),
}

const offset_key_versions: [i16; 2] = [0, 1];
const group_key_version: i16 = 2;
const value_version: i16 = 3;

pub fn encode_key(key: &Key) -> Vec<u8> {
    let mut w = Vec::new();
    match key {
        Key::Offset { group, topic, partition } => {
            w.extend_from_slice(&offset_key_versions[1].to_be_bytes());
            put_str(&mut w, Some(group));
            put_str(&mut w, Some(topic));
            w.extend_from_slice(&partition.to_be_bytes());
        }
        Key::Group { group } => {
            w.extend_from_slice(&group_key_version.to_be_bytes());
            put_str(&mut w, Some(group));
        }
        Key::Consumer { group, key } => super::consumer_records::encode_key(&mut w, group, key),
        Key::ShareState(key) => super::share_state::encode_key(&mut w, key),
        Key::ShareGroup { group, key } => super::share_records::encode_key(&mut w, group, key),
    }
    w
}

pub fn encode_offset(v: &OffsetValue) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(&value_version.to_be_bytes());
    w.extend_from_slice(&v.offset.to_be_bytes());
    w.extend_from_slice(&v.leader_epoch.to_be_bytes());
    put_str(&mut w, Some(&v.metadata));
    w.extend_from_slice(&v.commit_timestamp.to_be_bytes());
    w
}

pub fn encode_group(v: &GroupValue) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(&value_version.to_be_bytes());
    put_str(&mut w, Some(&v.protocol_type));
    w.extend_from_slice(&v.generation.to_be_bytes());
    put_str(&mut w, v.protocol.as_deref());
    put_str(&mut w, v.leader.as_deref());
    w.extend_from_slice(&v.current_state_timestamp.to_be_bytes());
    w.extend_from_slice(&(v.members.len() as i32).to_be_bytes());
    for m in &v.members {
        put_str(&mut w, Some(&m.member_id));
        put_str(&mut w, m.group_instance_id.as_deref());
        put_str(&mut w, Some(&m.client_id));
        put_str(&mut w, Some(&m.client_host));
        w.extend_from_slice(&m.rebalance_timeout_ms.to_be_bytes());
        w.extend_from_slice(&m.session_timeout_ms.to_be_bytes());
        put_bytes(&mut w, &m.subscription);
        put_bytes(&mut w, &m.assignment);
    }
    w
}

pub fn decode_key(b: &[u8]) -> Result<Key, RecordError> {
    let mut r = Reader { b, pos: 0 };
    let version = r.i16("key version")?;
    let key = if offset_key_versions.contains(&version) {
        let group = r.string("group id")?;
        let topic = r.string("topic")?;
        Key::Offset { group, topic, partition: r.i32("partition")? }
    } else if version == group_key_version {
        Key::Group { group: r.string("group id")? }
    } else if version == super::share_state::share_state_key_type {
        Key::ShareState(super::share_state::decode_key(&mut r)?)
    } else if let Some((group, key)) = super::consumer_records::decode_key(&mut r, version)? {
        Key::Consumer { group, key }
    } else if let Some((group, key)) = super::share_records::decode_key(&mut r, version)? {
        Key::ShareGroup { group, key }
    } else {
        return Err(RecordError::Version { what: "key", version });
    };
    r.end()?;
    Ok(key)
}

/// An offset value of any version Kafka wrote (0..=3): v0/v2 lack the leader epoch, v1 has an
/// expire timestamp (ignored).
pub fn decode_offset(b: &[u8]) -> Result<OffsetValue, RecordError> {
    let mut r = Reader { b, pos: 0 };
    let version = r.i16("offset value version")?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::Version { what: "offset value", version });
    }
    let offset = r.i64("offset")?;
    let leader_epoch = if version >= 3 { r.i32("leader epoch")? } else { -1 };
    let metadata = r.string("metadata")?;
    let commit_timestamp = r.i64("commit timestamp")?;
    if version == 1 {
        r.i64("expire timestamp")?;
    }
    r.end()?;
    Ok(OffsetValue { offset, leader_epoch, metadata, commit_timestamp })
}

pub fn decode_group(b: &[u8]) -> Result<GroupValue, RecordError> {
    let mut r = Reader { b, pos: 0 };
    let version = r.i16("group value version")?;
    if version != value_version {
        return Err(RecordError::Version { what: "group value", version });
    }
    let mut v = GroupValue {
        protocol_type: r.string("protocol type")?,
        generation: r.i32("generation")?,
        protocol: r.nullable_string("protocol")?,
        leader: r.nullable_string("leader")?,
        current_state_timestamp: r.i64("state timestamp")?,
        members: Vec::new(),
    };
    let count = r.i32("member count")?;
    for _ in 0..count.max(0) {
        // Each member takes at least 30 bytes, so a lying count fails here, not in an allocation.
        v.members.push(MemberValue {
            member_id: r.string("member id")?,
            group_instance_id: r.nullable_string("group instance id")?,
            client_id: r.string("client id")?,
            client_host: r.string("client host")?,
            rebalance_timeout_ms: r.i32("rebalance timeout")?,
            session_timeout_ms: r.i32("session timeout")?,
            subscription: r.bytes("subscription")?,
            assignment: r.bytes("assignment")?,
        });
    }
    r.end()?;
    Ok(v)
}

pub(super) fn put_str(w: &mut Vec<u8>, s: Option<&str>) {
    match s {
        // Strings come from bounded request fields, so they fit in an i16 length.
        Some(s) => {
            w.extend_from_slice(&(s.len() as i16).to_be_bytes());
            w.extend_from_slice(s.as_bytes());
        }
        None => w.extend_from_slice(&(-1i16).to_be_bytes()),
    }
}

fn put_bytes(w: &mut Vec<u8>, b: &[u8]) {
    w.extend_from_slice(&(b.len() as i32).to_be_bytes());
    w.extend_from_slice(b);
}

pub(super) struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    pub(super) fn new(b: &[u8]) -> Reader<'_> {
        Reader { b, pos: 0 }
    }
    pub(super) fn left(&self) -> usize {
        self.b.len() - self.pos
    }
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8], RecordError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or(RecordError::Truncated(what))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub(super) fn i16(&mut self, what: &'static str) -> Result<i16, RecordError> {
        let s = self.take(2, what)?;
        Ok(i16::from_be_bytes([s[0], s[1]]))
    }
    pub(super) fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        let s = self.take(4, what)?;
        Ok(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(super) fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(i64::from_be_bytes(a))
    }
    fn nullable_string(&mut self, what: &'static str) -> Result<Option<String>, RecordError> {
        let len = self.i16(what)?;
        if len < 0 {
            return Ok(None);
        }
        let s = self.take(len as usize, what)?;
        std::str::from_utf8(s).map(|s| Some(s.to_string())).map_err(|_| RecordError::NotUtf8(what))
    }
    pub(super) fn string(&mut self, what: &'static str) -> Result<String, RecordError> {
        Ok(self.nullable_string(what)?.unwrap_or_default())
    }
    fn bytes(&mut self, what: &'static str) -> Result<Bytes, RecordError> {
        let len = self.i32(what)?;
        if len < 0 {
            return Ok(Bytes::new());
        }
        Ok(Bytes::copy_from_slice(self.take(len as usize, what)?))
    }
    pub(super) fn end(&self) -> Result<(), RecordError> {
        match self.b.len() - self.pos {
            0 => Ok(()),
            n => Err(RecordError::Trailing(n)),
        }
    }
}

/// The records of `group`'s offsets.
pub fn offset_records(group: &str, offsets: &[((String, i32), OffsetValue)]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    offsets.iter().map(|((t, p), v)| (encode_key(&Key::Offset { group: group.to_string(), topic: t.clone(), partition: *p }), Some(encode_offset(v)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_round_trip() {
        let keys = [Key::Offset { group: "g".into(), topic: "t".into(), partition: 7 }, Key::Group { group: "g2".into() }];
        for k in keys {
            assert_eq!(decode_key(&encode_key(&k)), Ok(k));
        }
        let o = OffsetValue { offset: 42, leader_epoch: 3, metadata: "m".into(), commit_timestamp: 1000 };
        assert_eq!(decode_offset(&encode_offset(&o)), Ok(o));
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp: 9,
            members: vec![MemberValue { member_id: "a".into(), group_instance_id: Some("i".into()), client_id: "c".into(), client_host: "/127.0.0.1".into(), rebalance_timeout_ms: 1, session_timeout_ms: 2, subscription: Bytes::from_static(b"s"), assignment: Bytes::from_static(b"x") }],
        };
        assert_eq!(decode_group(&encode_group(&g)), Ok(g));
    }

    #[test]
    fn the_offset_key_is_kafkas_bytes() {
        // OffsetCommitKey v1 for ("g", "t", 1): version 1, "g", "t", partition 1.
        let k = encode_key(&Key::Offset { group: "g".into(), topic: "t".into(), partition: 1 });
        assert_eq!(k, [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 1]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(decode_key(&[]), Err(RecordError::Truncated("key version")));
        assert_eq!(decode_key(&[0, 16]), Err(RecordError::Version { what: "key", version: 16 }));
        assert_eq!(decode_key(&[0, 2, 0, 5, b'a']), Err(RecordError::Truncated("group id")));
        assert_eq!(decode_key(&[0, 2, 0, 1, b'a', 0]), Err(RecordError::Trailing(1)));
        // A member count of two billion with no members behind it.
        let mut g = encode_group(&GroupValue::default());
        let n = g.len();
        g[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_group(&g), Err(RecordError::Truncated("member id")));
        assert_eq!(decode_offset(&[0, 3, 1]), Err(RecordError::Truncated("offset")));
    }
}
