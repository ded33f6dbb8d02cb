//! Compaction's decisions, on bytes and without IO: the key map of a dirty range (the last
//! offset of every key, bounded), and for each stored batch what survives — every record, some
//! of them, or none. [`super::cleaner`] does the reading, writing and swapping.
//!
//! Offsets stay where they were. A batch that loses records is rewritten with the same base
//! offset, last offset delta, leader epoch, producer fields and timestamps, and only the
//! surviving records (their offset and timestamp deltas unchanged, compressed with the batch's
//! own codec as Kafka's cleaner does); a batch that
//! loses every record becomes an empty batch spanning the same offsets, and runs of empty
//! batches of one leader epoch with no producer state to keep merge into one. So batches still
//! tile the offset space exactly as before cleaning — recovery, replication and reads keep
//! their "each batch starts where the previous ended" rule — while a cleaned log's size follows
//! its live keys, not its history. Consumers skip an empty batch to its last offset + 1, as
//! they do for Kafka's own empty batches.
//!
//! A record survives if it is the latest of its key in the map, or its key is not in the map
//! (nothing newer was written in this pass's dirty range), or it has no key. A tombstone (null
//! value) that survives so far stays until an earlier pass reached it and its timestamp is
//! `delete.retention.ms` old; then it goes too.
//!
//! A transaction marker goes as Kafka's do (KIP-534, [`clean_marker`]): once a pass finds
//! nothing of its transaction left, it sets the marker's delete horizon (now +
//! `delete.retention.ms`, so a reader or replica lagging less than that still finds the end of
//! what it read), and a pass after the horizon removes it.

use super::batch::{self, put_field, put_varint, BatchHeader};
use crate::constants::{batch_header_bytes, batch_log_overhead_bytes};
use bytes::Bytes;
use kafka_protocol::records::{Record, RecordBatchDecoder};

pub use super::key_map::{key_overhead_bytes, Keep, KeyMap};

/// Why a batch could not be looked inside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CleanError {
    #[error("batch does not decode: {0}")]
    Decode(String),
}

/// The records of one stored batch (uncompressed or any codec). The records section is
/// decompressed within `batch_decompressed_bytes_max` and its framing walked before the
/// decoder sees it: the decoder reserves room for the header's record count and each record's
/// header count before reading one, so those counts must first be shown to match the bytes.
pub fn records(batch: &[u8]) -> Result<Vec<Record>, CleanError> {
    let decode = |e: batch::BatchError| CleanError::Decode(e.to_string());
    let h = batch::read_header(batch).map_err(decode)?;
    let body = &batch[batch_header_bytes.min(batch.len())..];
    let plain = match h.compression() {
        0 => Bytes::copy_from_slice(body),
        codec => Bytes::from(super::compressed::decompress(codec, body).map_err(decode)?),
    };
    batch::walk_records(&plain, h.records_count, |_| {}).map_err(decode)?;
    let mut b = Bytes::copy_from_slice(batch);
    let set = RecordBatchDecoder::decode_with_custom_compression(&mut b, Some(|_: &mut Bytes, _| Ok(plain.clone()))).map_err(|e| CleanError::Decode(e.to_string()))?;
    Ok(set.records)
}

/// Puts every keyed record of `batch` in the map; false if the map filled before the batch
/// was whole: the caller ends the dirty range before this batch. Keys already mapped from it
/// point at records that stay in the log, so the map is still sound. The last keys may stay
/// in flight ([`KeyMap::insert_all`]): settle the map before asking it.
pub fn map_batch(map: &mut KeyMap, batch: &[u8]) -> Result<bool, CleanError> {
    if is_control(batch) {
        return Ok(true); // a marker's key is its type, not a record's key: never mapped
    }
    if let Some((h, raw)) = raw_records(batch) {
        let body = &batch[batch_header_bytes..];
        return Ok(map.insert_all(raw.iter().filter_map(|r| Some((&body[r.key.clone()?], h.base_offset + r.offset_delta as i64)))));
    }
    Ok(map.insert_all(records(batch)?.iter().filter_map(|r| Some((r.key.as_deref()?, r.offset)))))
}

/// Whether `batch` is a control batch (a transaction marker).
fn is_control(batch: &[u8]) -> bool {
    batch::read_header(batch).is_ok_and(|h| h.is_control())
}

/// The records of an uncompressed batch, walked in place (no copies); None for a compressed or
/// malformed batch, which takes the decoder's path.
fn raw_records(batch: &[u8]) -> Option<(BatchHeader, Vec<batch::RecordInfo>)> {
    let h = batch::read_header(batch).ok()?;
    if h.compression() != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(h.records_count.max(0) as usize);
    batch::walk_records(&batch[batch_header_bytes..], h.records_count, |r| out.push(r)).ok()?;
    Some((h, out))
}

/// Tombstones that may go in this pass: those below `reached` (an earlier pass saw them) whose
/// record timestamp is older than `horizon_ms` (now − delete.retention.ms).
#[derive(Debug, Clone, Copy)]
pub struct Tombstones {
    pub reached: i64,
    pub horizon_ms: i64,
}

/// What cleaning makes of one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every record survives (and there is one): the stored bytes stay as they are.
    Whole,
    /// Some records survive: the batch rewritten around them.
    Rewritten(Vec<u8>),
    /// None survives, or there was none (a batch an earlier pass emptied): an empty batch over
    /// the same offsets, mergeable with its neighbours.
    Empty,
}

/// Decides the fate of `batch` against `map`.
pub fn clean_batch(batch: &[u8], h: &BatchHeader, map: &KeyMap, tombstones: Tombstones) -> Result<Outcome, CleanError> {
    if h.is_control() {
        // A marker's fate depends on its transaction, which only the pass sees: `clean_marker`.
        return Ok(Outcome::Whole);
    }
    let survives = |key: Option<&[u8]>, offset: i64, tombstone: bool, timestamp: i64| {
        let Some(k) = key else { return true };
        // The latest of its key (or its key was not seen in this pass's dirty range); a
        // tombstone among those goes once a pass reached it and its time is up.
        let expired = offset < tombstones.reached && timestamp < tombstones.horizon_ms;
        map.keeps(k, offset) && !(tombstone && expired)
    };
    if let Some((_, raw)) = raw_records(batch) {
        // Uncompressed: surviving records are copied as they are (their deltas are relative to
        // the same base offset and timestamp), no decoding.
        let body = &batch[batch_header_bytes..];
        // The map's verdicts for the keyed records, asked all at once (see `KeyMap::keeps_all`).
        let mut latest = Vec::with_capacity(raw.len());
        map.keeps_all(raw.iter().filter_map(|r| Some((&body[r.key.clone()?], h.base_offset + r.offset_delta as i64))), &mut latest);
        let mut latest = latest.into_iter();
        let keep: Vec<&batch::RecordInfo> = raw
            .iter()
            .filter(|r| {
                let Some(_) = r.key else { return true };
                let offset = h.base_offset + r.offset_delta as i64;
                let expired = offset < tombstones.reached && h.base_timestamp + r.timestamp_delta < tombstones.horizon_ms;
                latest.next().expect("one verdict per keyed record") && !(r.null_value && expired)
            })
            .collect();
        return Ok(match keep.len() {
            // Empty already (an earlier pass emptied it): mergeable with the empty batches
            // beside it.
            0 => Outcome::Empty,
            n if n == raw.len() => Outcome::Whole,
            n => {
                let mut kept = Vec::with_capacity(batch.len());
                for r in &keep {
                    kept.extend_from_slice(&body[r.bytes.clone()]);
                }
                Outcome::Rewritten(frame(h, 0, n as i32, h.last_offset_delta, h.base_timestamp, h.max_timestamp, &kept))
            }
        });
    }
    let all = records(batch)?;
    let total = all.len();
    let keep: Vec<Record> = all.into_iter().filter(|r| survives(r.key.as_deref(), r.offset, r.value.is_none(), r.timestamp)).collect();
    Ok(match keep.len() {
        0 => Outcome::Empty,
        n if n == total => Outcome::Whole,
        _ => Outcome::Rewritten(encode(h, &keep)?),
    })
}

/// Decides the fate of transaction marker `batch`: `held` says something of its transaction
/// stays (a batch the pass keeps, or the marker is its producer's last batch, whose state it
/// carries). Else the first pass to see it sets its delete horizon, now + `retention_ms`, and
/// a pass at or after the horizon removes it (an empty batch, as any batch that lost all).
pub fn clean_marker(batch: &[u8], h: &BatchHeader, held: bool, now_ms: i64, retention_ms: i64) -> Outcome {
    match h.delete_horizon() {
        _ if held => Outcome::Whole,
        Some(horizon) if horizon <= now_ms => Outcome::Empty,
        Some(_) => Outcome::Whole,
        None => {
            let marked = BatchHeader { attributes: h.attributes | batch::delete_horizon_bit, ..*h };
            let body = &batch[batch_header_bytes.min(batch.len())..];
            Outcome::Rewritten(frame(&marked, h.compression(), h.records_count, h.last_offset_delta, now_ms.saturating_add(retention_ms), h.max_timestamp, body))
        }
    }
}

/// A v2 batch with `h`'s offsets, epoch, producer fields, timestamps and codec, holding
/// `records` (offsets inside `h`'s range).
pub fn encode(h: &BatchHeader, records: &[Record]) -> Result<Vec<u8>, CleanError> {
    let mut body = Vec::new();
    for r in records {
        let mut rec = Vec::new();
        rec.push(0u8); // attributes
        put_varint(&mut rec, r.timestamp - h.base_timestamp);
        put_varint(&mut rec, r.offset - h.base_offset);
        put_field(&mut rec, r.key.as_deref());
        put_field(&mut rec, r.value.as_deref());
        put_varint(&mut rec, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_field(&mut rec, Some(k.as_bytes()));
            put_field(&mut rec, v.as_deref());
        }
        put_varint(&mut body, rec.len() as i64);
        body.extend_from_slice(&rec);
    }
    let codec = h.compression();
    let body = super::compressed::compress(codec, &body).map_err(|e| CleanError::Decode(e.to_string()))?;
    Ok(frame(h, codec, records.len() as i32, h.last_offset_delta, h.base_timestamp, h.max_timestamp, &body))
}

/// An empty batch spanning `first.base_offset ..= last.last_offset()` with `first`'s epoch and
/// producer fields: what a run of batches that lost every record becomes.
pub fn empty(first: &BatchHeader, last: &BatchHeader) -> Vec<u8> {
    let delta = (last.last_offset() - first.base_offset) as i32;
    let max_ts = first.max_timestamp.max(last.max_timestamp);
    frame(first, 0, 0, delta, first.base_timestamp, max_ts, &[])
}

/// A batch of `h`'s epoch and producer fields over `body`, records compressed with `codec`.
fn frame(h: &BatchHeader, codec: u8, count: i32, last_offset_delta: i32, base_ts: i64, max_ts: i64, body: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; batch_header_bytes];
    b.extend_from_slice(body);
    let put = |b: &mut Vec<u8>, at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    put(&mut b, 0, &h.base_offset.to_be_bytes());
    let length = (b.len() - batch_log_overhead_bytes) as i32;
    put(&mut b, 8, &length.to_be_bytes());
    put(&mut b, 12, &h.leader_epoch.to_be_bytes());
    b[16] = crate::kafka::batch_magic as u8;
    // The codec bits are `codec`'s; the timestamp type and the rest kept.
    put(&mut b, 21, &((h.attributes & !0x07) | codec as i16).to_be_bytes());
    put(&mut b, 23, &last_offset_delta.to_be_bytes());
    put(&mut b, 27, &base_ts.to_be_bytes());
    put(&mut b, 35, &max_ts.to_be_bytes());
    put(&mut b, 43, &h.producer_id.to_be_bytes());
    put(&mut b, 51, &h.producer_epoch.to_be_bytes());
    put(&mut b, 53, &h.base_sequence.to_be_bytes());
    put(&mut b, 57, &count.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    put(&mut b, 17, &crc.to_be_bytes());
    debug_assert!(batch::check_stored(&b).is_ok());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_keyed, read_header, stamp};

    fn batch(base: i64, kvs: &[(&str, Option<&str>)]) -> (Vec<u8>, BatchHeader) {
        let kv: Vec<batch::KeyValue> = kvs.iter().map(|(k, v)| (Some(k.as_bytes()), v.map(str::as_bytes))).collect();
        let mut b = build_keyed(&kv, 1_000);
        stamp(&mut b, base, 3);
        let h = read_header(&b).unwrap();
        (b, h)
    }

    const none: Tombstones = Tombstones { reached: 0, horizon_ms: 0 };

    #[test]
    fn the_latest_record_per_key_survives_at_its_offset() {
        let (b1, h1) = batch(0, &[("a", Some("1")), ("b", Some("1")), ("a", Some("2"))]);
        let (b2, _) = batch(3, &[("b", Some("2"))]);
        let mut map = KeyMap::new(1 << 20);
        assert!(map_batch(&mut map, &b1).unwrap() && map_batch(&mut map, &b2).unwrap());
        map.settle();
        let Outcome::Rewritten(out) = clean_batch(&b1, &h1, &map, none).unwrap() else { panic!("a@0 and b@1 go") };
        let oh = read_header(&out).unwrap();
        assert_eq!((oh.base_offset, oh.last_offset_delta, oh.records_count, oh.leader_epoch), (0, 2, 1, 3));
        let left = records(&out).unwrap();
        assert_eq!(left.iter().map(|r| (r.offset, r.value.clone())).collect::<Vec<_>>(), vec![(2, Some(Bytes::from("2")))]);
        assert_eq!(clean_batch(&b2, &read_header(&b2).unwrap(), &map, none).unwrap(), Outcome::Whole);
    }

    #[test]
    fn a_batch_that_loses_everything_is_an_empty_batch_over_its_offsets() {
        let (b1, h1) = batch(10, &[("a", Some("1")), ("a", Some("2"))]);
        let (b2, h2) = batch(12, &[("a", Some("3"))]);
        let mut map = KeyMap::new(1 << 20);
        map_batch(&mut map, &b1).unwrap();
        map_batch(&mut map, &b2).unwrap();
        map.settle();
        assert_eq!(clean_batch(&b1, &h1, &map, none).unwrap(), Outcome::Empty, "a@10 and a@11 are behind a@12");
        assert_eq!(clean_batch(&b2, &h2, &map, none).unwrap(), Outcome::Whole);
        let e = empty(&h1, &h2);
        let eh = read_header(&e).unwrap();
        assert_eq!((eh.base_offset, eh.last_offset(), eh.records_count), (10, 12, 0));
        assert!(records(&e).unwrap().is_empty());
    }

    #[test]
    fn tombstones_stay_until_an_earlier_pass_reached_them_and_their_time_is_up() {
        let (b, h) = batch(0, &[("a", Some("1")), ("a", None)]);
        let mut map = KeyMap::new(1 << 20);
        map_batch(&mut map, &b).unwrap();
        map.settle();
        let kept = |t| match clean_batch(&b, &h, &map, t).unwrap() {
            Outcome::Rewritten(out) => records(&out).unwrap().len(),
            Outcome::Empty => 0,
            Outcome::Whole => 2,
        };
        assert_eq!(kept(none), 1, "first pass: the tombstone stays");
        assert_eq!(kept(Tombstones { reached: 2, horizon_ms: 500 }), 1, "reached, but not old enough");
        assert_eq!(kept(Tombstones { reached: 2, horizon_ms: 2_000 }), 0, "reached and old: gone");
    }

    #[test]
    fn the_planted_keep_first_map_keeps_the_first_record_of_each_key() {
        let (b, h) = batch(0, &[("a", Some("1")), ("a", Some("2")), ("a", Some("3"))]);
        let mut map = KeyMap::keeping(1 << 20, Keep::First);
        map_batch(&mut map, &b).unwrap();
        map.settle();
        let Outcome::Rewritten(out) = clean_batch(&b, &h, &map, none).unwrap() else { panic!("two of three go") };
        assert_eq!(records(&out).unwrap().iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0], "the bug keeps a@0, not a@2");
        assert!(map.keeps(b"a", 7), "records above the mapped range are not judged");
    }

    #[test]
    fn a_full_map_says_so() {
        let (b, _) = batch(0, &[("aaaa", Some("1")), ("bbbb", Some("1"))]);
        let mut map = KeyMap::new(2 * key_overhead_bytes);
        assert!(map.insert(b"x", 0));
        assert!(!map_batch(&mut map, &b).unwrap(), "a map of two keys takes one more");
    }

    #[test]
    fn a_compressed_batch_is_cleaned_through_the_decoder() {
        use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
        let rec = |o: i64, k: &str, v: &str| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 3,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: o,
            // The encoder keeps records in one batch while offset − sequence stays the same.
            sequence: o as i32,
            timestamp: 1_000,
            key: Some(Bytes::from(k.to_string())),
            value: Some(Bytes::from(v.to_string())),
            headers: Default::default(),
        };
        let mut buf = bytes::BytesMut::new();
        let rs = [rec(0, "a", "1"), rec(1, "b", "1"), rec(2, "a", "2")];
        RecordBatchEncoder::encode(&mut buf, rs.iter(), &RecordEncodeOptions { version: 2, compression: Compression::Gzip }).unwrap();
        let h = read_header(&buf).unwrap();
        assert_eq!(h.compression(), 1);
        let mut map = KeyMap::new(1 << 20);
        map_batch(&mut map, &buf).unwrap();
        map.settle();
        let Outcome::Rewritten(out) = clean_batch(&buf, &h, &map, none).unwrap() else { panic!("a@0 goes") };
        let oh = read_header(&out).unwrap();
        assert_eq!((oh.compression(), oh.base_offset, oh.last_offset_delta, oh.records_count), (1, 0, 2, 2), "rewritten in gzip");
        assert_eq!(records(&out).unwrap().iter().map(|r| r.offset).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn every_codec_is_mapped_and_rewritten_in_its_own_codec() {
        use crate::log::compressed::{self, with_codec};
        let (plain, _) = batch(5, &[("a", Some("1")), ("b", Some("1")), ("a", None), ("c", Some("1"))]);
        for codec in [compressed::codec_gzip, compressed::codec_snappy, compressed::codec_lz4, compressed::codec_zstd] {
            let b = with_codec(&plain, codec).unwrap();
            let h = batch::validate(&b, crate::constants::message_bytes_max).unwrap();
            assert_eq!((h.compression(), h.base_offset, h.leader_epoch), (codec, 5, 3));
            let mut map = KeyMap::new(1 << 20);
            assert!(map_batch(&mut map, &b).unwrap());
            map.settle();
            assert_eq!((map.len(), map.latest(b"a")), (3, Some(7)), "codec {codec}");
            let Outcome::Rewritten(out) = clean_batch(&b, &h, &map, none).unwrap() else { panic!("a@5 goes") };
            let oh = batch::validate_stored(&out).unwrap();
            assert_eq!((oh.compression(), oh.base_offset, oh.last_offset_delta, oh.records_count), (codec, 5, 3, 3), "codec {codec}");
            let left: Vec<_> = records(&out).unwrap().into_iter().map(|r| (r.offset, r.value)).collect();
            assert_eq!(left, vec![(6, Some(Bytes::from("1"))), (7, None), (8, Some(Bytes::from("1")))], "codec {codec}");
        }
    }
}
