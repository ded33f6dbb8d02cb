//! Kafka's message sets of magic 0 and 1, the record format before record batches (KIP-98),
//! as Kafka 3.9 converted them for clients that still speak it: a produce's message set read
//! into one record batch (up-conversion, Produce v0-v2), and stored batches written out as a
//! message set for a fetch (down-conversion, Fetch v0-v3: magic 0 for v0-v1, 1 for v2-v3).
//!
//! A message: offset (8), size (4), then CRC-32 (IEEE, over the rest), magic (1), attributes
//! (1: codec in bits 0-2, magic 1's log-append-time flag in bit 3), magic 1's timestamp (8), key
//! and value (each a 4-byte length, -1 for null, and the bytes). A compressed message is a
//! wrapper whose value is a message set of its inner messages. Written messages are never
//! compressed, and headers (which these formats cannot carry) are dropped, as Kafka drops them.
//! Bytes only; no IO.

use crate::log::compressed;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::records::{Compression, Record, TimestampType};

/// Offset and size before each message.
const log_overhead_bytes: usize = 12;
/// CRC, magic, attributes, and the key's and value's lengths: the shortest magic 0 message.
const message_bytes_min: usize = 4 + 1 + 1 + 4 + 4;
/// Magic 1's timestamp.
const timestamp_bytes: usize = 8;
const codec_mask: u8 = 0x07;
const log_append_time_flag: u8 = 0x08;

/// One message of a produce's set, as the batch it becomes holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Magic 0 has none: -1 (Kafka's NO_TIMESTAMP), as Kafka up-converts it.
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// The messages of a producer's set of magic 0 or 1, wrappers' inner messages in their place;
/// every message's CRC, size and magic checked (one magic throughout). Err names what is wrong:
/// Kafka answers such a set CORRUPT_MESSAGE and writes nothing of it.
pub fn read(set: &Bytes) -> Result<Vec<Message>, String> {
    let mut out = Vec::new();
    read_into(set, None, true, &mut out)?;
    Ok(out)
}

fn read_into(set: &Bytes, mut magic: Option<i8>, outer: bool, out: &mut Vec<Message>) -> Result<(), String> {
    let mut at = 0;
    while at < set.len() {
        let Some(head) = set.get(at..at + log_overhead_bytes) else { return Err("a message set ends inside a message's offset and size".into()) };
        let size = i32::from_be_bytes(head[8..12].try_into().expect("four bytes"));
        let start = at + log_overhead_bytes;
        let Some(body) = usize::try_from(size).ok().filter(|&n| n >= message_bytes_min).and_then(|n| set.get(start..start + n)) else {
            return Err(format!("a message of {size} bytes does not fit its set"));
        };
        let mut crc = flate2::Crc::new();
        crc.update(&body[4..]);
        if crc.sum() != u32::from_be_bytes(body[..4].try_into().expect("four bytes")) {
            return Err("a message's CRC-32 does not match".into());
        }
        let (m, attributes) = (body[4] as i8, body[5]);
        if !matches!(m, 0 | 1) || magic.is_some_and(|x| x != m) {
            return Err(format!("a message of magic {m} in a set of magic {}", magic.unwrap_or(m)));
        }
        magic = Some(m);
        let mut rest = set.slice(start + 6..start + body.len());
        let timestamp = match m {
            0 => -1,
            _ => take_i64(&mut rest)?,
        };
        let key = take_bytes(&mut rest)?;
        let value = take_bytes(&mut rest)?;
        if !rest.is_empty() {
            return Err("a message holds bytes past its value".into());
        }
        match attributes & codec_mask {
            compressed::codec_none => out.push(Message { timestamp, key, value }),
            _ if !outer => return Err("a compressed message inside a compressed message".into()),
            codec => {
                let inner = compressed::decompress(codec, value.as_deref().unwrap_or_default()).map_err(|e| e.to_string())?;
                read_into(&Bytes::from(inner), magic, false, out)?;
            }
        }
        at = start + body.len();
    }
    Ok(())
}

fn take_i64(rest: &mut Bytes) -> Result<i64, String> {
    if rest.len() < timestamp_bytes {
        return Err("a message ends inside its timestamp".into());
    }
    let v = rest.split_to(timestamp_bytes);
    Ok(i64::from_be_bytes(v[..].try_into().expect("eight bytes")))
}

fn take_bytes(rest: &mut Bytes) -> Result<Option<Bytes>, String> {
    if rest.len() < 4 {
        return Err("a message ends inside a length".into());
    }
    let len = i32::from_be_bytes(rest.split_to(4)[..].try_into().expect("four bytes"));
    if len < 0 {
        return Ok(None);
    }
    if len as usize > rest.len() {
        return Err(format!("a key or value of {len} bytes runs past its message"));
    }
    Ok(Some(rest.split_to(len as usize)))
}

/// `messages` as one uncompressed record batch, offsets from 0, of no producer: what a client
/// of magic 2 would have sent (Kafka keeps the wrapper's codec; uncompressed here).
pub fn to_batch(messages: &[Message]) -> Result<Bytes, String> {
    let records: Vec<_> = messages.iter().map(|m| (m.timestamp, m.key.clone(), m.value.clone())).collect();
    crate::log::compressed::unowned(&records, Compression::None)
}

/// Stored batches (magic 2, whole ones; a trailing partial batch is left out, as a client
/// skips it) as a message set of `magic` (0 or 1) from offset `first` on, for a fetch: control
/// batches left out, each record an uncompressed message at its own offset. Bounded: at most
/// `batch.decompressed.bytes.max` bytes of records are decompressed per batch.
pub fn from_batches(batches: &Bytes, magic: i8, first: i64) -> Result<Bytes, String> {
    let mut rest = batches.clone();
    let mut out = BytesMut::with_capacity(batches.len() * 2);
    while crate::log::batch::declared_size(&rest).is_some_and(|n| n <= rest.len()) {
        let set = compressed::decode_batch(&mut rest)?;
        for r in set.records.iter().filter(|r| !r.control && r.offset >= first) {
            write(&mut out, magic, r);
        }
    }
    Ok(out.freeze())
}

fn write(out: &mut BytesMut, magic: i8, r: &Record) {
    let len = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len());
    let size = message_bytes_min + if magic >= 1 { timestamp_bytes } else { 0 } + len(&r.key) + len(&r.value);
    out.put_i64(r.offset);
    out.put_i32(size as i32);
    let crc_at = out.len();
    out.put_u32(0);
    out.put_i8(magic);
    let log_append = magic >= 1 && r.timestamp_type == TimestampType::LogAppend;
    out.put_u8(if log_append { log_append_time_flag } else { 0 });
    if magic >= 1 {
        out.put_i64(r.timestamp);
    }
    for part in [&r.key, &r.value] {
        match part {
            Some(b) => {
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
            None => out.put_i32(-1),
        }
    }
    let mut crc = flate2::Crc::new();
    crc.update(&out[crc_at + 4..]);
    out[crc_at..crc_at + 4].copy_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    fn record(offset: i64, key: Option<&'static str>, value: &'static str, ts: i64) -> Record {
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence: -1,
            timestamp: ts,
            key: key.map(|k| Bytes::from_static(k.as_bytes())),
            value: Some(Bytes::from_static(value.as_bytes())),
            headers: IndexMap::new(),
        }
    }

    fn set_of(magic: i8, records: &[Record]) -> Bytes {
        let mut out = BytesMut::new();
        for r in records {
            write(&mut out, magic, r);
        }
        out.freeze()
    }

    #[test]
    fn a_written_set_reads_back_for_both_magics() {
        let records = [record(0, Some("k"), "one", 1_700_000_000_000), record(1, None, "two", 1_700_000_000_001)];
        for magic in [0, 1] {
            let read = read(&set_of(magic, &records)).unwrap();
            let ts = |r: &Record| if magic == 0 { -1 } else { r.timestamp };
            assert_eq!(read, records.iter().map(|r| Message { timestamp: ts(r), key: r.key.clone(), value: r.value.clone() }).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_bad_crc_a_cut_message_or_mixed_magics_are_refused() {
        let set = set_of(1, &[record(0, None, "v", 5)]);
        let mut flipped = set.to_vec();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(read(&Bytes::from(flipped)).unwrap_err().contains("CRC"));
        assert!(read(&set.slice(..set.len() - 1)).is_err());
        let mut mixed = set.to_vec();
        mixed.extend_from_slice(&set_of(0, &[record(1, None, "w", 5)]));
        assert!(read(&Bytes::from(mixed)).unwrap_err().contains("magic"));
    }

    #[test]
    fn a_gzip_wrapper_gives_its_inner_messages() {
        let inner = set_of(1, &[record(0, None, "a", 7), record(1, None, "b", 8)]);
        let body = compressed::compress(compressed::codec_gzip, &inner).unwrap();
        let mut wrapper = record(1, None, "", 8);
        wrapper.value = Some(Bytes::from(body));
        let mut out = BytesMut::new();
        write(&mut out, 1, &wrapper);
        out[8 + 4 + 4 + 1] |= compressed::codec_gzip; // the attributes byte
        let crc_at = 12;
        let mut crc = flate2::Crc::new();
        crc.update(&out[crc_at + 4..]);
        let sum = crc.sum().to_be_bytes();
        out[crc_at..crc_at + 4].copy_from_slice(&sum);
        let read = read(&out.freeze()).unwrap();
        assert_eq!(read.iter().map(|m| m.value.clone().unwrap()).collect::<Vec<_>>(), vec![Bytes::from("a"), Bytes::from("b")]);
    }

    #[test]
    fn batches_go_down_from_the_fetch_offset_without_control_records() {
        let up = to_batch(&[Message { timestamp: 3, key: None, value: Some(Bytes::from("x")) }, Message { timestamp: 4, key: None, value: Some(Bytes::from("y")) }]).unwrap();
        let down = from_batches(&up, 1, 1).unwrap();
        let read = read(&down).unwrap();
        assert_eq!(read, vec![Message { timestamp: 4, key: None, value: Some(Bytes::from("y")) }]);
        assert_eq!(i64::from_be_bytes(down[..8].try_into().unwrap()), 1, "each message at its own offset");
        // A trailing partial batch is left out.
        assert_eq!(from_batches(&up.slice(..up.len() - 1), 0, 0).unwrap().len(), 0);
    }
}
