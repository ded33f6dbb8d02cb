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
use kafka_protocol::records::Compression;

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

/// A producer's message set, read: its messages (wrappers' inner ones in their place) and the
/// codec of its first wrapper (none if it has none), which the batch keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub messages: Vec<Message>,
    pub codec: u8,
}

/// Reads a producer's set of magic 0 or 1, every message's CRC, size and magic checked (one
/// magic throughout). Wrappers decompress within `budget` bytes, what is left of it returned
/// through it (one budget for a whole request: a set of many small wrappers inflates no more
/// than one). Err names what is wrong: Kafka answers such a set CORRUPT_MESSAGE and writes
/// nothing of it.
pub fn read(set: &Bytes, budget: &mut usize) -> Result<Read, String> {
    let mut out = Read { messages: Vec::new(), codec: compressed::codec_none };
    read_into(set, None, true, budget, &mut out)?;
    Ok(out)
}

fn read_into(set: &Bytes, mut magic: Option<i8>, outer: bool, budget: &mut usize, out: &mut Read) -> Result<(), String> {
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
            compressed::codec_none => out.messages.push(Message { timestamp, key, value }),
            _ if !outer => return Err("a compressed message inside a compressed message".into()),
            codec => {
                let inner = compressed::decompress_message_set(codec, value.as_deref().unwrap_or_default(), *budget).map_err(|e| e.to_string())?;
                *budget -= inner.len();
                if out.codec == compressed::codec_none {
                    out.codec = codec;
                }
                read_into(&Bytes::from(inner), magic, false, budget, out)?;
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

/// The messages read as one record batch, offsets from 0, of no producer, compressed with the
/// set's codec: what a client of magic 2 would have sent.
pub fn to_batch(read: &Read) -> Result<Bytes, String> {
    let records: Vec<_> = read.messages.iter().map(|m| (m.timestamp, m.key.clone(), m.value.clone())).collect();
    let plain = compressed::unowned(&records, Compression::None)?;
    match read.codec {
        compressed::codec_none => Ok(plain),
        codec => compressed::with_codec(&plain, codec).map(Bytes::from).map_err(|e| e.to_string()),
    }
}

/// Stored batches (magic 2, whole ones; a trailing partial batch is left out, as a client
/// skips it) as a message set of `magic` (0 or 1) from offset `first` on, for a fetch: control
/// batches left out, each record an uncompressed message at its own offset, a log-append-time
/// batch's records at its time. At most `max_bytes` of messages, but always a first whole one
/// (a fetch must progress); batches past the bound are not decompressed.
pub fn from_batches(batches: &Bytes, magic: i8, first: i64, max_bytes: usize) -> Result<Bytes, String> {
    let mut rest = batches.clone();
    let mut out = BytesMut::new();
    while crate::log::batch::declared_size(&rest).is_some_and(|n| n <= rest.len()) && out.len() < max_bytes {
        let header = crate::log::batch::read_header(&rest).map_err(|e| e.to_string())?;
        let set = compressed::decode_batch(&mut rest)?;
        for r in set.records.iter().filter(|r| !r.control && r.offset >= first) {
            let at = out.len();
            let log_append = magic >= 1 && header.log_append_time();
            let timestamp = if log_append { header.max_timestamp } else { r.timestamp };
            write(&mut out, magic, r.offset, timestamp, log_append, &r.key, &r.value);
            if out.len() > max_bytes && at > 0 {
                out.truncate(at);
                return Ok(out.freeze());
            }
        }
    }
    Ok(out.freeze())
}

fn write(out: &mut BytesMut, magic: i8, offset: i64, timestamp: i64, log_append: bool, key: &Option<Bytes>, value: &Option<Bytes>) {
    let len = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len());
    let size = message_bytes_min + if magic >= 1 { timestamp_bytes } else { 0 } + len(key) + len(value);
    out.put_i64(offset);
    out.put_i32(size as i32);
    let crc_at = out.len();
    out.put_u32(0);
    out.put_i8(magic);
    out.put_u8(if log_append { log_append_time_flag } else { 0 });
    if magic >= 1 {
        out.put_i64(timestamp);
    }
    for part in [key, value] {
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
    use crate::constants::batch_decompressed_bytes_max;

    /// (offset, key, value, timestamp) as one message each.
    type Msg = (i64, Option<&'static str>, &'static str, i64);

    fn set_of(magic: i8, messages: &[Msg]) -> Bytes {
        let mut out = BytesMut::new();
        for (offset, key, value, ts) in messages {
            write(&mut out, magic, *offset, *ts, false, &key.map(|k| Bytes::from_static(k.as_bytes())), &Some(Bytes::from(value.to_string())));
        }
        out.freeze()
    }

    /// One wrapper message of `magic` whose value is `inner` compressed with `body`'s codec.
    fn wrapper(magic: i8, codec: u8, body: Vec<u8>) -> Bytes {
        let mut out = BytesMut::new();
        write(&mut out, magic, 0, 0, false, &None, &Some(Bytes::from(body)));
        out[12 + 4 + 1] |= codec; // the attributes byte, after offset, size, CRC and magic
        let mut crc = flate2::Crc::new();
        crc.update(&out[16..]);
        let sum = crc.sum().to_be_bytes();
        out[12..16].copy_from_slice(&sum);
        out.freeze()
    }

    fn read_all(set: &Bytes) -> Result<Read, String> {
        read(set, &mut batch_decompressed_bytes_max.clone())
    }

    #[test]
    fn a_written_set_reads_back_for_both_magics() {
        let messages: [Msg; 2] = [(0, Some("k"), "one", 1_700_000_000_000), (1, None, "two", 1_700_000_000_001)];
        for magic in [0, 1] {
            let read = read_all(&set_of(magic, &messages)).unwrap();
            let want = messages.iter().map(|(_, k, v, ts)| Message { timestamp: if magic == 0 { -1 } else { *ts }, key: k.map(|k| Bytes::from_static(k.as_bytes())), value: Some(Bytes::from(v.to_string())) });
            assert_eq!(read, Read { messages: want.collect(), codec: compressed::codec_none });
        }
    }

    #[test]
    fn a_bad_crc_a_cut_message_or_mixed_magics_are_refused() {
        let set = set_of(1, &[(0, None, "v", 5)]);
        let mut flipped = set.to_vec();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(read_all(&Bytes::from(flipped)).unwrap_err().contains("CRC"));
        assert!(read_all(&set.slice(..set.len() - 1)).is_err());
        let mut mixed = set.to_vec();
        mixed.extend_from_slice(&set_of(0, &[(1, None, "w", 5)]));
        assert!(read_all(&Bytes::from(mixed)).unwrap_err().contains("magic"));
    }

    #[test]
    fn a_wrapper_gives_its_inner_messages_and_its_codec_to_the_batch() {
        let inner = set_of(1, &[(0, None, "a", 7), (1, None, "b", 8)]);
        for codec in [compressed::codec_gzip, compressed::codec_snappy, compressed::codec_lz4] {
            let read = read_all(&wrapper(1, codec, compressed::compress(codec, &inner).unwrap())).unwrap();
            assert_eq!(read.messages.iter().map(|m| m.value.clone().unwrap()).collect::<Vec<_>>(), vec![Bytes::from("a"), Bytes::from("b")]);
            assert_eq!(read.codec, codec);
            let batch = to_batch(&read).unwrap();
            assert_eq!(crate::log::batch::read_header(&batch).unwrap().compression(), codec, "the batch keeps the wrapper's codec");
            assert_eq!(messages_of(&from_batches(&batch, 1, 0, usize::MAX).unwrap()), vec![(0, 7, "a".into()), (1, 8, "b".into())]);
        }
    }

    #[test]
    fn wrappers_inflate_within_one_budget() {
        let long: &'static str = "x".repeat(1000).leak();
        let inner = set_of(0, &[(0, None, long, 0)]);
        let body = compressed::compress(compressed::codec_gzip, &inner).unwrap();
        let mut two = wrapper(0, compressed::codec_gzip, body.clone()).to_vec();
        two.extend_from_slice(&wrapper(0, compressed::codec_gzip, body));
        let mut budget = inner.len() + inner.len() / 2;
        assert!(read(&Bytes::from(two.clone()), &mut budget).is_err(), "the second wrapper is past the budget");
        let mut budget = 2 * inner.len();
        assert_eq!(read(&Bytes::from(two), &mut budget).unwrap().messages.len(), 2);
        assert_eq!(budget, 0);
    }

    #[test]
    fn lz4_with_the_header_checksum_of_kafka_before_0_10_is_read() {
        let inner = set_of(0, &[(0, None, "old", 0)]);
        let mut frame = compressed::compress(compressed::codec_lz4, &inner).unwrap();
        // KAFKA-3160: the checksum byte after the descriptor (flags, block size) hashed the
        // magic number with it.
        frame[6] = (twox_hash::XxHash32::oneshot(0, &frame[..6]) >> 8) as u8;
        assert!(compressed::decompress(compressed::codec_lz4, &frame).is_err(), "a record batch's lz4 stays strict");
        let read = read_all(&wrapper(0, compressed::codec_lz4, frame)).unwrap();
        assert_eq!(read.messages[0].value.as_deref(), Some(&b"old"[..]));
    }

    /// (offset, timestamp, value) of each message of a set of magic 1, flagged log-append
    /// times negated.
    fn messages_of(set: &[u8]) -> Vec<(i64, i64, String)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < set.len() {
            let size = i32::from_be_bytes(set[at + 8..at + 12].try_into().unwrap()) as usize;
            let m = &set[at + 12..at + 12 + size];
            let ts = i64::from_be_bytes(m[6..14].try_into().unwrap());
            let value_len = i32::from_be_bytes(m[18..22].try_into().unwrap()) as usize;
            let ts = if m[5] & log_append_time_flag != 0 { -ts } else { ts };
            out.push((i64::from_be_bytes(set[at..at + 8].try_into().unwrap()), ts, String::from_utf8(m[22..22 + value_len].to_vec()).unwrap()));
            at += 12 + size;
        }
        out
    }

    #[test]
    fn batches_go_down_from_the_fetch_offset_within_the_bound() {
        let read = Read { messages: (0..3).map(|i| Message { timestamp: 3 + i, key: None, value: Some(Bytes::from(format!("v{i}"))) }).collect(), codec: compressed::codec_none };
        let batch = to_batch(&read).unwrap();
        assert_eq!(messages_of(&from_batches(&batch, 1, 1, usize::MAX).unwrap()), vec![(1, 4, "v1".into()), (2, 5, "v2".into())]);
        // One message over the bound is still answered; a second is not.
        assert_eq!(messages_of(&from_batches(&batch, 1, 0, 1).unwrap()).len(), 1);
        // A log-append-time batch: every record at the batch's time, flagged.
        let mut stamped = batch.to_vec();
        crate::log::batch::set_log_append_time(&mut stamped, 99);
        assert_eq!(messages_of(&from_batches(&Bytes::from(stamped), 1, 0, usize::MAX).unwrap()).iter().map(|m| m.1).collect::<Vec<_>>(), vec![-99; 3]);
        // A trailing partial batch is left out.
        assert_eq!(from_batches(&batch.slice(..batch.len() - 1), 0, 0, usize::MAX).unwrap().len(), 0);
    }
}
