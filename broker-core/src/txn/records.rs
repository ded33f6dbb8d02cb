//! The records the transaction coordinator keeps in `__transaction_state`, in Kafka's own format
//! (`TransactionLogKey` v0, `TransactionLogValue` v0, classic encoding), so a dump of the topic
//! reads the same as Kafka's. kafka-protocol 0.18 ships no types for them (its `messages/`
//! stop at the wire APIs), so they are written out here. Encoding and decoding only; a key with
//! no value is a tombstone: the id expired. Decoding never panics and never allocates more than
//! the input holds: bad bytes are a typed [`RecordError`] the loader skips.
//!
//! ```text
//! key    i16 0 | transactional_id string
//! value  i16 0 | producer_id i64 | producer_epoch i16 | timeout_ms i32 | status i8
//!        | partitions: i32 count (-1 = null, written for Empty), each:
//!            topic string | i32 count | partition i32 ...
//!        | last_update_timestamp_ms i64 | start_timestamp_ms i64
//! string: i16 length + UTF-8 (never null here)
//! status: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3, CompleteCommit 4,
//!         CompleteAbort 5, Dead 6, PrepareEpochFence 7
//! ```
//!
//! Value v1 (Kafka's flexible encoding, KIP-890) carries three tagged fields after the same
//! fields: PreviousProducerId (tag 0, i64), NextProducerId (tag 1, i64) and
//! ClientTransactionVersion (tag 2, i16), so that a new coordinator knows a prepared
//! transaction's protocol and the producer id it hands over to. It is written for a transaction
//! ended under KIP-890 (or handing over), v0 otherwise; both are read.
//!
//! ```text
//! value v1  i16 1 | producer_id i64 | producer_epoch i16 | timeout_ms i32 | status i8
//!        | partitions: uvarint count + 1 (0 = null), each:
//!            topic: uvarint length + 1, UTF-8 | uvarint count + 1 | partition i32 ... | 0 (no tags)
//!        | last_update_timestamp_ms i64 | start_timestamp_ms i64
//!        | uvarint tag count, each: uvarint tag | uvarint size | value
//! ```

use super::state::TxnState;
use bytes::{Buf, BufMut};
use std::collections::BTreeSet;

/// A `__transaction_state` value: one transactional id's state as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnValue {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The partitions in the transaction (stored as null for Empty, read as none).
    pub partitions: BTreeSet<(String, i32)>,
    pub last_update_ms: i64,
    /// When the transaction began (-1: none open).
    pub start_ms: i64,
    /// Value v1's tagged fields (-1, -1 and 0 in v0): the producer id before the last change
    /// of it, the one a prepared transaction hands over to, and the client's transaction
    /// version (Kafka's level: 2 for KIP-890).
    pub previous_producer_id: i64,
    pub next_producer_id: i64,
    pub client_version: i16,
}

/// Why bytes in `__transaction_state` are not a record this coordinator understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The bytes end before the named field does.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A key or value version this coordinator does not read.
    #[error("unknown {what} version {version}")]
    Version { what: &'static str, version: i16 },
    /// A string that is not UTF-8.
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    /// A null where Kafka's schema allows none.
    #[error("{0} is null")]
    Null(&'static str),
    /// A transaction status id outside 0..=7.
    #[error("unknown transaction status {0}")]
    Status(i8),
    /// Bytes after the last field.
    #[error("{0} bytes left after the record")]
    Trailing(usize),
}

const key_version: i16 = 0;
const value_version: i16 = 0;
const flexible_value_version: i16 = 1;

pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut w = Vec::with_capacity(4 + transactional_id.len());
    w.put_i16(key_version);
    put_str(&mut w, transactional_id);
    w
}

/// The stored value: v1 (the flexible encoding, with the KIP-890 fields tagged) when one of
/// those is set, v0 otherwise.
pub fn encode_value(v: &TxnValue) -> Vec<u8> {
    let flexible = v.client_version >= 2 || v.next_producer_id >= 0;
    let mut w = Vec::new();
    w.put_i16(if flexible { flexible_value_version } else { value_version });
    w.put_i64(v.producer_id);
    w.put_i16(v.producer_epoch);
    w.put_i32(v.timeout_ms);
    w.put_i8(v.state.id());
    // Kafka writes null partitions for Empty (`TransactionLog.valueToBytes`), an array otherwise.
    let topics = (v.state != TxnState::Empty).then(|| by_topic(&v.partitions));
    match (flexible, topics) {
        (false, None) => w.put_i32(-1),
        (true, None) => put_uvarint(&mut w, 0),
        (false, Some(topics)) => {
            w.put_i32(topics.len() as i32);
            for (topic, partitions) in topics {
                put_str(&mut w, topic);
                w.put_i32(partitions.len() as i32);
                partitions.iter().for_each(|p| w.put_i32(*p));
            }
        }
        (true, Some(topics)) => {
            put_uvarint(&mut w, topics.len() as u64 + 1);
            for (topic, partitions) in topics {
                put_uvarint(&mut w, topic.len() as u64 + 1);
                w.put_slice(topic.as_bytes());
                put_uvarint(&mut w, partitions.len() as u64 + 1);
                partitions.iter().for_each(|p| w.put_i32(*p));
                put_uvarint(&mut w, 0);
            }
        }
    }
    w.put_i64(v.last_update_ms);
    w.put_i64(v.start_ms);
    if flexible {
        let mut tags: Vec<(u64, Vec<u8>)> = Vec::new();
        if v.previous_producer_id != -1 {
            tags.push((0, v.previous_producer_id.to_be_bytes().to_vec()));
        }
        if v.next_producer_id != -1 {
            tags.push((1, v.next_producer_id.to_be_bytes().to_vec()));
        }
        if v.client_version != 0 {
            tags.push((2, v.client_version.to_be_bytes().to_vec()));
        }
        put_uvarint(&mut w, tags.len() as u64);
        for (tag, bytes) in tags {
            put_uvarint(&mut w, tag);
            put_uvarint(&mut w, bytes.len() as u64);
            w.put_slice(&bytes);
        }
    }
    w
}

fn put_uvarint(w: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        w.put_u8((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    w.put_u8(n as u8);
}

/// The partitions grouped by topic, topics and partitions in order.
fn by_topic(partitions: &BTreeSet<(String, i32)>) -> Vec<(&str, Vec<i32>)> {
    let mut out: Vec<(&str, Vec<i32>)> = Vec::new();
    for (t, p) in partitions {
        match out.last_mut() {
            Some((last, ps)) if *last == t.as_str() => ps.push(*p),
            _ => out.push((t, vec![*p])),
        }
    }
    out
}

pub fn decode_key(b: &[u8]) -> Result<String, RecordError> {
    let mut r = Reader(b);
    let version = r.i16("key version")?;
    if version != key_version {
        return Err(RecordError::Version { what: "key", version });
    }
    let id = r.string("transactional id")?;
    r.end()?;
    Ok(id)
}

pub fn decode_value(b: &[u8]) -> Result<TxnValue, RecordError> {
    let mut r = Reader(b);
    let flexible = match r.i16("value version")? {
        value_version => false,
        flexible_value_version => true,
        version => return Err(RecordError::Version { what: "value", version }),
    };
    let producer_id = r.i64("producer id")?;
    let producer_epoch = r.i16("producer epoch")?;
    let timeout_ms = r.i32("transaction timeout")?;
    let status = r.i8("transaction status")?;
    let state = TxnState::from_id(status).ok_or(RecordError::Status(status))?;
    let partitions = if flexible { r.compact_partitions()? } else { r.partitions()? };
    let last_update_ms = r.i64("last update timestamp")?;
    let start_ms = r.i64("start timestamp")?;
    let mut v = TxnValue { producer_id, producer_epoch, timeout_ms, state, partitions, last_update_ms, start_ms, previous_producer_id: -1, next_producer_id: -1, client_version: 0 };
    if flexible {
        for _ in 0..r.uvarint("tagged field count")? {
            let tag = r.uvarint("tag")?;
            let size = r.uvarint("tag size")?;
            let mut field = Reader(r.take(size, "tagged field")?);
            match tag {
                0 => v.previous_producer_id = field.i64("previous producer id")?,
                1 => v.next_producer_id = field.i64("next producer id")?,
                2 => v.client_version = field.i16("client transaction version")?,
                // A tag this coordinator does not know: skipped, as Kafka's readers do.
                _ => continue,
            }
            field.end()?;
        }
    }
    r.end()?;
    Ok(v)
}

/// A record read back: its transactional id and its value (None: a tombstone, the id expired).
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<(String, Option<TxnValue>), RecordError> {
    let id = decode_key(key)?;
    let value = value.map(decode_value).transpose()?;
    Ok((id, value))
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    // Ids and topics come from i16-length request fields, so they fit.
    debug_assert!(s.len() <= i16::MAX as usize, "string of {} bytes", s.len());
    w.put_i16(s.len() as i16);
    w.put_slice(s.as_bytes());
}

/// Reads fields off the front of a slice, checking each length first (`Buf`'s getters panic
/// on short input).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn need(&self, n: usize, what: &'static str) -> Result<(), RecordError> {
        if self.0.remaining() < n {
            return Err(RecordError::Truncated(what));
        }
        Ok(())
    }
    fn i8(&mut self, what: &'static str) -> Result<i8, RecordError> {
        self.need(1, what)?;
        Ok(self.0.get_i8())
    }
    fn i16(&mut self, what: &'static str) -> Result<i16, RecordError> {
        self.need(2, what)?;
        Ok(self.0.get_i16())
    }
    fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        self.need(4, what)?;
        Ok(self.0.get_i32())
    }
    fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        self.need(8, what)?;
        Ok(self.0.get_i64())
    }
    fn string(&mut self, what: &'static str) -> Result<String, RecordError> {
        let len = self.i16(what)?;
        if len < 0 {
            return Err(RecordError::Null(what));
        }
        let len = len as usize;
        self.need(len, what)?;
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        std::str::from_utf8(s).map(str::to_string).map_err(|_| RecordError::NotUtf8(what))
    }
    /// Value v0's partitions: an i32 topic count (negative: null), each topic a string and an
    /// i32 count of i32 ids. Each topic takes at least 6 bytes, so a lying count fails on the
    /// bytes, not in an allocation.
    fn partitions(&mut self) -> Result<BTreeSet<(String, i32)>, RecordError> {
        let mut partitions = BTreeSet::new();
        for _ in 0..self.i32("partition count")?.max(0) {
            let topic = self.string("topic")?;
            let count = self.i32("partition id count")?;
            if count < 0 {
                return Err(RecordError::Null("partition ids"));
            }
            for _ in 0..count {
                partitions.insert((topic.clone(), self.i32("partition id")?));
            }
        }
        Ok(partitions)
    }
    /// Value v1's partitions: compact arrays and strings (uvarint length + 1, 0 for null), each
    /// topic with a tagged-field section.
    fn compact_partitions(&mut self) -> Result<BTreeSet<(String, i32)>, RecordError> {
        let mut partitions = BTreeSet::new();
        for _ in 0..self.uvarint("partition count")?.saturating_sub(1) {
            let len = self.uvarint("topic")?.checked_sub(1).ok_or(RecordError::Null("topic"))?;
            let topic = self.utf8(len, "topic")?;
            let count = self.uvarint("partition id count")?.checked_sub(1).ok_or(RecordError::Null("partition ids"))?;
            for _ in 0..count {
                partitions.insert((topic.clone(), self.i32("partition id")?));
            }
            self.skip_tags("topic tagged fields")?;
        }
        Ok(partitions)
    }
    /// An unsigned varint of at most 10 bytes (a flexible version's lengths and tags).
    fn uvarint(&mut self, what: &'static str) -> Result<u64, RecordError> {
        let mut n = 0u64;
        for i in 0..10 {
            let b = self.i8(what)? as u8;
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(RecordError::Truncated(what))
    }
    fn take(&mut self, n: u64, what: &'static str) -> Result<&[u8], RecordError> {
        let n = usize::try_from(n).map_err(|_| RecordError::Truncated(what))?;
        self.need(n, what)?;
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }
    fn utf8(&mut self, n: u64, what: &'static str) -> Result<String, RecordError> {
        std::str::from_utf8(self.take(n, what)?).map(str::to_string).map_err(|_| RecordError::NotUtf8(what))
    }
    /// Skips a tagged-field section (every tag unknown here).
    fn skip_tags(&mut self, what: &'static str) -> Result<(), RecordError> {
        for _ in 0..self.uvarint(what)? {
            self.uvarint(what)?;
            let size = self.uvarint(what)?;
            self.take(size, what)?;
        }
        Ok(())
    }
    fn end(&self) -> Result<(), RecordError> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(RecordError::Trailing(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ongoing() -> TxnValue {
        TxnValue {
            producer_id: 1000,
            producer_epoch: 3,
            timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [("t".to_string(), 0), ("t".to_string(), 1)].into_iter().collect(),
            last_update_ms: 5000,
            start_ms: 4000,
            previous_producer_id: -1,
            next_producer_id: -1,
            client_version: 0,
        }
    }

    #[test]
    fn a_kip_890_value_is_kafkas_v1_bytes() {
        let v = TxnValue { state: TxnState::PrepareCommit, partitions: [("t".to_string(), 0)].into_iter().collect(), previous_producer_id: 1000, client_version: 2, ..ongoing() };
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            0, 1,                               // version 1
            0, 0, 0, 0, 0, 0, 0x03, 0xe8,       // producer id 1000
            0, 3,                               // producer epoch 3
            0, 0, 0xea, 0x60,                   // timeout 60000 ms
            2,                                  // status PrepareCommit
            2,                                  // one topic (count + 1)
            2, b't',                            //   "t" (length + 1)
            2,                                  //   one partition (count + 1)
            0, 0, 0, 0,                         //     0
            0,                                  //   no tagged fields
            0, 0, 0, 0, 0, 0, 0x13, 0x88,       // last update 5000
            0, 0, 0, 0, 0, 0, 0x0f, 0xa0,       // start 4000
            2,                                  // two tagged fields
            0, 8, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, //   tag 0, 8 bytes: previous producer id 1000
            2, 2, 0, 2,                         //   tag 2, 2 bytes: client version 2
        ];
        assert_eq!(encode_value(&v), expected);
        assert_eq!(decode_value(&expected), Ok(v.clone()));
        for n in 0..expected.len() {
            assert!(decode_value(&expected[..n]).is_err(), "prefix of {n} bytes");
        }
        let handing_over = TxnValue { next_producer_id: 2000, state: TxnState::Empty, partitions: BTreeSet::new(), ..v };
        assert_eq!(decode_value(&encode_value(&handing_over)), Ok(handing_over));
        // An unknown tag is skipped.
        let mut unknown = expected.clone();
        unknown[42] = 3;
        unknown.extend_from_slice(&[9, 1, 7]);
        assert_eq!(decode_value(&unknown).map(|x| x.client_version), Ok(2));
    }

    #[test]
    fn the_value_is_kafkas_bytes() {
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            0, 0,                               // version 0
            0, 0, 0, 0, 0, 0, 0x03, 0xe8,       // producer id 1000
            0, 3,                               // producer epoch 3
            0, 0, 0xea, 0x60,                   // timeout 60000 ms
            1,                                  // status Ongoing
            0, 0, 0, 1,                         // one topic
            0, 1, b't',                         //   "t"
            0, 0, 0, 2,                         //   two partitions
            0, 0, 0, 0,                         //     0
            0, 0, 0, 1,                         //     1
            0, 0, 0, 0, 0, 0, 0x13, 0x88,       // last update 5000
            0, 0, 0, 0, 0, 0, 0x0f, 0xa0,       // start 4000
        ];
        assert_eq!(expected.len(), 52);
        assert_eq!(encode_value(&ongoing()), expected);
        assert_eq!(decode_value(&expected), Ok(ongoing()));
    }

    #[test]
    fn the_key_is_kafkas_bytes() {
        // Version 0, then "tx" with its i16 length.
        assert_eq!(encode_key("tx"), [0, 0, 0, 2, b't', b'x']);
        assert_eq!(decode_key(&[0, 0, 0, 2, b't', b'x']), Ok("tx".to_string()));
    }

    #[test]
    fn empty_writes_null_partitions_and_values_round_trip() {
        let empty = TxnValue { state: TxnState::Empty, partitions: BTreeSet::new(), start_ms: -1, ..ongoing() };
        let bytes = encode_value(&empty);
        // status, then count -1 (null)
        assert_eq!(&bytes[16..21], &[0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(decode_value(&bytes), Ok(empty));
        let mut many = ongoing();
        many.state = TxnState::PrepareCommit;
        many.partitions.extend([("a".to_string(), 7), ("__consumer_offsets".to_string(), 49), ("t".to_string(), 2)]);
        assert_eq!(decode_value(&encode_value(&many)), Ok(many));
        let done = TxnValue { state: TxnState::CompleteAbort, partitions: BTreeSet::new(), ..ongoing() };
        // An empty array, not null, for a completed transaction.
        assert_eq!(&encode_value(&done)[16..21], &[5, 0, 0, 0, 0]);
        assert_eq!(decode_value(&encode_value(&done)), Ok(done));
        assert_eq!(decode_record(&encode_key("x"), None), Ok(("x".to_string(), None)));
    }

    #[test]
    fn truncated_or_bad_bytes_are_errors_not_panics() {
        let bytes = encode_value(&ongoing());
        for n in 0..bytes.len() {
            assert!(matches!(decode_value(&bytes[..n]), Err(RecordError::Truncated(_))), "prefix of {n} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_value(&longer), Err(RecordError::Trailing(1)));
        let mut status = bytes.clone();
        status[16] = 8;
        assert_eq!(decode_value(&status), Err(RecordError::Status(8)));
        let mut null_ids = bytes.clone();
        null_ids[24..28].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(decode_value(&null_ids), Err(RecordError::Null("partition ids")));
        // Two billion topics with none behind them.
        let mut lying = bytes.clone();
        lying[17..21].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value(&lying).is_err());
        assert_eq!(decode_value(&[0, 2]), Err(RecordError::Version { what: "value", version: 2 }));
        assert_eq!(decode_key(&[]), Err(RecordError::Truncated("key version")));
        assert_eq!(decode_key(&[0, 1, 0, 0]), Err(RecordError::Version { what: "key", version: 1 }));
        assert_eq!(decode_key(&[0, 0, 0xff, 0xff]), Err(RecordError::Null("transactional id")));
        assert_eq!(decode_key(&[0, 0, 0, 3, b'a']), Err(RecordError::Truncated("transactional id")));
        assert_eq!(decode_key(&[0, 0, 0, 1, 0xff]), Err(RecordError::NotUtf8("transactional id")));
        assert_eq!(decode_record(&encode_key("x"), Some(&[0, 0, 1])), Err(RecordError::Truncated("producer id")));
    }
}
