//! The consumer protocol's bytes: a member's subscription (the `metadata` of its JoinGroup
//! protocols) and its assignment (SyncGroup's `assignment`), each an `i16` version followed by
//! kafka-protocol's `ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`, as Kafka's
//! `ConsumerProtocol.serializeSubscription` writes them. Layout (big-endian; `string` is an
//! `i16` length then UTF-8, `bytes` an `i32` length or -1 for null, `[x]` an `i32` count):
//!
//! ```text
//! subscription: version:i16 topics:[string] user_data:bytes
//!               owned:[topic:string partitions:[i32]]   (v1+)
//!               generation:i32                           (v2+)
//!               rack:string, nullable                    (v3+)
//! assignment:   version:i16 partitions:[topic:string partitions:[i32]] user_data:bytes
//! ```
//!
//! Decoding must never panic and never allocate more than a small multiple of its input,
//! whatever the bytes: they come from other members, possibly other clients' bugs.

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::{self as ka, ConsumerProtocolAssignment};
use kafka_protocol::messages::consumer_protocol_subscription::{self as ks, ConsumerProtocolSubscription};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::{normalize, TopicPartitions};

/// Largest subscription or assignment accepted or produced. 10 000 topics of the longest legal
/// name (249 bytes) take 2.5 MB; anything bigger is garbage, not a consumer.
pub const consumer_protocol_bytes_max: usize = 4 << 20;

/// Newest subscription version this client knows (kafka-protocol 0.18, Kafka 3.x): v1 added
/// owned partitions (KIP-429), v2 the generation, v3 the rack (KIP-881).
pub const subscription_version_max: i16 = 3;

/// Newest assignment version this client knows; v1..v3 have v0's layout.
pub const assignment_version_max: i16 = 3;

/// Fewest bytes a string, an array and an `i32` take on the wire: what a count is checked
/// against before anything is reserved for it.
const string_bytes_min: usize = 2;
const array_bytes_min: usize = 4;
const i32_bytes: usize = 4;

/// Why consumer protocol bytes did not decode or encode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// More bytes than [`consumer_protocol_bytes_max`]: not something a consumer sends.
    #[error("{what} of {len} bytes exceeds the limit of {max}", max = consumer_protocol_bytes_max)]
    TooLarge { what: &'static str, len: usize },
    /// A negative version prefix: no such version exists (Kafka's `SchemaException`).
    #[error("unsupported {what} version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    /// The bytes end early, or a length or count does not fit in what is left, or a name is
    /// not UTF-8.
    #[error("malformed {what} at byte {at}: {reason}")]
    Malformed { what: &'static str, at: usize, reason: String },
    /// A value does not fit its wire type (a name longer than an `i16` length).
    #[error("cannot encode {what}: {reason}")]
    Encode { what: &'static str, reason: String },
}

/// One member's subscription, decoded. Fields its version lacks take Kafka's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub topics: BTreeSet<String>,
    /// Assignor-specific (see [`super::user_data`]); opaque here.
    pub user_data: Option<Bytes>,
    /// v1+: what the member owns now.
    pub owned: TopicPartitions,
    /// v2+: the generation `owned` comes from; -1 when absent.
    pub generation: i32,
    /// v3+: the member's `client.rack`.
    pub rack: Option<String>,
}

impl Default for Subscription {
    fn default() -> Self {
        Subscription { topics: BTreeSet::new(), user_data: None, owned: TopicPartitions::new(), generation: -1, rack: None }
    }
}

/// One member's assignment, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    pub partitions: TopicPartitions,
    pub user_data: Option<Bytes>,
}

/// A subscription's bytes at `version`; fields the version lacks are left out, as Kafka's
/// `ConsumerProtocol` leaves them out.
pub fn encode_subscription(sub: &Subscription, version: i16) -> Result<Bytes, WireError> {
    let what = "subscription";
    check_encode_version(what, version, subscription_version_max)?;
    let mut raw = ConsumerProtocolSubscription::default();
    raw.topics = sub.topics.iter().map(|t| StrBytes::from_string(t.clone())).collect();
    raw.user_data = sub.user_data.clone();
    raw.owned_partitions = sub.owned.iter().map(|(t, p)| ks::TopicPartition::default().with_topic(topic_name(t)).with_partitions(p.clone())).collect();
    raw.generation_id = sub.generation;
    raw.rack_id = sub.rack.clone().map(StrBytes::from_string);
    encode_versioned(what, version, &raw)
}

/// Decodes a subscription of any version. Versions above [`subscription_version_max`] decode
/// as that version, ignoring what follows (Kafka's `checkSubscriptionVersion`: newer versions
/// only append fields); so are trailing bytes, as Java's reader ignores them.
pub fn decode_subscription(bytes: &[u8]) -> Result<Subscription, WireError> {
    let what = "subscription";
    let (version, body) = split_version(what, bytes, subscription_version_max)?;
    let mut r = Reader::new(what, body);
    r.skip_array(string_bytes_min, |r| r.string().map(drop))?;
    r.bytes()?;
    if version >= 1 {
        r.skip_topic_partitions()?;
    }
    if version >= 2 {
        r.i32()?;
    }
    if version >= 3 {
        r.nullable_string()?;
    }
    let raw = ConsumerProtocolSubscription::decode(&mut Bytes::copy_from_slice(body), version).map_err(|e| malformed(what, e))?;
    let mut owned = TopicPartitions::new();
    for tp in raw.owned_partitions {
        owned.entry(tp.topic.0.to_string()).or_default().extend(tp.partitions);
    }
    normalize(&mut owned);
    Ok(Subscription {
        topics: raw.topics.iter().map(|t| t.to_string()).collect(),
        user_data: raw.user_data,
        owned,
        generation: raw.generation_id,
        rack: raw.rack_id.map(|r| r.to_string()),
    })
}

/// An assignment's bytes at `version`.
pub fn encode_assignment(assignment: &Assignment, version: i16) -> Result<Bytes, WireError> {
    let what = "assignment";
    check_encode_version(what, version, assignment_version_max)?;
    let mut raw = ConsumerProtocolAssignment::default();
    raw.assigned_partitions = assignment.partitions.iter().map(|(t, p)| ka::TopicPartition::default().with_topic(topic_name(t)).with_partitions(p.clone())).collect();
    raw.user_data = assignment.user_data.clone();
    encode_versioned(what, version, &raw)
}

/// Decodes an assignment of any version (newer ones as [`assignment_version_max`]).
pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, WireError> {
    let what = "assignment";
    let (version, body) = split_version(what, bytes, assignment_version_max)?;
    let mut r = Reader::new(what, body);
    r.skip_topic_partitions()?;
    r.bytes()?;
    let raw = ConsumerProtocolAssignment::decode(&mut Bytes::copy_from_slice(body), version).map_err(|e| malformed(what, e))?;
    let mut partitions = TopicPartitions::new();
    for tp in raw.assigned_partitions {
        partitions.entry(tp.topic.0.to_string()).or_default().extend(tp.partitions);
    }
    normalize(&mut partitions);
    Ok(Assignment { partitions, user_data: raw.user_data })
}

fn topic_name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_string()))
}

fn malformed(what: &'static str, e: impl std::fmt::Display) -> WireError {
    WireError::Malformed { what, at: 0, reason: e.to_string() }
}

fn check_encode_version(what: &'static str, version: i16, max: i16) -> Result<(), WireError> {
    if (0..=max).contains(&version) {
        Ok(())
    } else {
        Err(WireError::UnsupportedVersion { what, version })
    }
}

fn encode_versioned<M: Encodable>(what: &'static str, version: i16, raw: &M) -> Result<Bytes, WireError> {
    let size = raw.compute_size(version).map_err(|e| WireError::Encode { what, reason: e.to_string() })?;
    if 2 + size > consumer_protocol_bytes_max {
        return Err(WireError::TooLarge { what, len: 2 + size });
    }
    let mut out = BytesMut::with_capacity(2 + size);
    out.put_i16(version);
    raw.encode(&mut out, version).map_err(|e| WireError::Encode { what, reason: e.to_string() })?;
    Ok(out.freeze())
}

/// The version prefix (clamped to `max`) and the body after it, once the size is checked.
fn split_version<'a>(what: &'static str, bytes: &'a [u8], max: i16) -> Result<(i16, &'a [u8]), WireError> {
    if bytes.len() > consumer_protocol_bytes_max {
        return Err(WireError::TooLarge { what, len: bytes.len() });
    }
    let mut r = Reader::new(what, bytes);
    let version = r.i16()?;
    if version < 0 {
        return Err(WireError::UnsupportedVersion { what, version });
    }
    Ok((version.min(max), &bytes[2..]))
}

/// Walks consumer protocol bytes checking every length and count against the bytes left, before
/// kafka-protocol decodes them: its array decoder reserves the announced count up front, so ten
/// garbage bytes announcing two billion entries would otherwise ask for tens of gigabytes.
pub(super) struct Reader<'a> {
    what: &'static str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Reader { what, bytes, at: 0 }
    }

    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, WireError> {
        Err(WireError::Malformed { what: self.what, at: self.at, reason: reason.into() })
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return self.fail(format!("needs {n} bytes, {} left", self.remaining()));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    pub(super) fn i16(&mut self) -> Result<i16, WireError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub(super) fn i32(&mut self) -> Result<i32, WireError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A non-null UTF-8 string.
    pub(super) fn string(&mut self) -> Result<&'a str, WireError> {
        match self.nullable_string()? {
            Some(s) => Ok(s),
            None => self.fail("null string where one is required"),
        }
    }

    pub(super) fn nullable_string(&mut self) -> Result<Option<&'a str>, WireError> {
        let len = self.i16()?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return self.fail(format!("string length {len}"));
        }
        let start = self.at;
        let raw = self.take(len as usize)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(WireError::Malformed { what: self.what, at: start, reason: format!("name is not UTF-8: {e}") }),
        }
    }

    /// Nullable bytes (`i32` length, -1 for null).
    pub(super) fn bytes(&mut self) -> Result<Option<&'a [u8]>, WireError> {
        let len = self.i32()?;
        match len {
            -1 => Ok(None),
            n if n < 0 => self.fail(format!("bytes length {n}")),
            n => self.take(n as usize).map(Some),
        }
    }

    /// An array's count, checked against the bytes left given each entry's smallest size.
    pub(super) fn count(&mut self, entry_bytes_min: usize) -> Result<usize, WireError> {
        let n = self.i32()?;
        if n < 0 {
            return self.fail(format!("array count {n}"));
        }
        let n = n as usize;
        if n.saturating_mul(entry_bytes_min) > self.remaining() {
            return self.fail(format!("array of {n} entries cannot fit in {} bytes", self.remaining()));
        }
        Ok(n)
    }

    fn skip_array(&mut self, entry_bytes_min: usize, mut entry: impl FnMut(&mut Self) -> Result<(), WireError>) -> Result<(), WireError> {
        for _ in 0..self.count(entry_bytes_min)? {
            entry(self)?;
        }
        Ok(())
    }

    /// `[topic:string partitions:[i32]]`, as owned and assigned partitions are laid out.
    pub(super) fn topic_partitions(&mut self) -> Result<TopicPartitions, WireError> {
        let mut out = TopicPartitions::new();
        for _ in 0..self.count(string_bytes_min + array_bytes_min)? {
            let topic = self.string()?;
            let n = self.count(i32_bytes)?;
            let parts = out.entry(topic.to_string()).or_default();
            for _ in 0..n {
                parts.push(self.i32()?);
            }
        }
        normalize(&mut out);
        Ok(out)
    }

    fn skip_topic_partitions(&mut self) -> Result<(), WireError> {
        self.skip_array(string_bytes_min + array_bytes_min, |r| {
            r.string()?;
            let n = r.count(i32_bytes)?;
            r.take(n * i32_bytes).map(drop)
        })
    }
}
