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

use super::batch::{self, put_field, put_varint, BatchHeader};
use crate::constants::{batch_header_bytes, batch_log_overhead_bytes};
use bytes::Bytes;
use kafka_protocol::records::{Record, RecordBatchDecoder};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Bytes one key costs the map at most: its 128-bit hash and its offset in a table slot, with
/// the table at its lowest load (just grown). Kafka's `SkimpyOffsetMap` keeps MD5s the same
/// way, so a key's own length does not matter.
pub const key_overhead_bytes: usize = 56;

/// A key's identity in the map: 128 bits of MurmurHash3's x64 construction (16 bytes a round,
/// then its finalizer), never 0. Two keys sharing a hash would share a slot (the older one's
/// records would go); at 2^-64 per pair it is Kafka's own trade-off with MD5.
fn key_hash(key: &[u8]) -> u128 {
    const c1: u64 = 0x87c3_7b91_1142_53d5;
    const c2: u64 = 0x4cf5_ad43_2745_937f;
    let mix1 = |k: u64| k.wrapping_mul(c1).rotate_left(31).wrapping_mul(c2);
    let mix2 = |k: u64| k.wrapping_mul(c2).rotate_left(33).wrapping_mul(c1);
    let word = |b: &[u8]| b.iter().rev().fold(0u64, |w, &x| (w << 8) | x as u64);
    let (mut h1, mut h2) = (0u64, 0u64);
    let mut blocks = key.chunks_exact(16);
    for b in &mut blocks {
        h1 ^= mix1(word(&b[..8]));
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        h2 ^= mix2(word(&b[8..]));
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    if tail.len() > 8 {
        h2 ^= mix2(word(&tail[8..]));
    }
    if !tail.is_empty() {
        h1 ^= mix1(word(&tail[..tail.len().min(8)]));
    }
    let fmix = |mut k: u64| {
        k ^= k >> 33;
        k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
        k ^= k >> 33;
        k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        k ^ (k >> 33)
    };
    h1 ^= key.len() as u64;
    h2 ^= key.len() as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (((h1 as u128) << 64) | h2 as u128).max(1)
}

/// Hashes the map's keys, which are hashes already: their low 64 bits, as they are.
#[derive(Default, Clone, Copy)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u128 keys are hashed here (write_u128); anything else folds in, never panics.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u128(&mut self, h: u128) {
        self.0 = h as u64;
    }
}

type Table = HashMap<u128, i64, BuildHasherDefault<Prehashed>>;

/// Which record of a key a pass keeps. Only [`Keep::Latest`] is compaction; [`Keep::First`]
/// is a known bug kept so the simulator can plant it (`PlantedBug::CleanerKeepsFirstValue`)
/// and prove its `compaction` checker sees it. Compiled in both builds so the log needs no
/// `cfg`, but nothing except that planted bug ever asks for it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Keep {
    /// The last record of each key in the dirty range (and everything above it).
    #[default]
    Latest,
    /// Planted bug: the first record of each key in the dirty range, the later ones dropped.
    First,
}

/// The last offset of each key seen in a dirty range, within a byte budget: a hash table of
/// key hashes that grows as keys come (a budget-sized table would be allocated whole for every
/// pass). Its keys are uniform already, so the table uses them as they are, no second hash and
/// no per-process seed; lookups only, never iterated into anything.
#[derive(Debug, Default)]
pub struct KeyMap {
    latest: Table,
    /// The first offset of each key, kept only for the planted [`Keep::First`].
    first: Option<Table>,
    max_keys: usize,
}

impl KeyMap {
    pub fn new(budget: usize) -> KeyMap {
        KeyMap::keeping(budget, Keep::Latest)
    }

    /// A map whose decisions keep `keep` (see [`Keep`]: only `Latest` is correct).
    #[doc(hidden)]
    pub fn keeping(budget: usize, keep: Keep) -> KeyMap {
        KeyMap { latest: Table::default(), first: (keep == Keep::First).then(Table::default), max_keys: (budget / key_overhead_bytes).max(1) }
    }

    /// Records that `key` is at `offset` (later offsets win). False when a new key would not
    /// fit: the pass must end its dirty range before the batch holding it.
    pub fn insert(&mut self, key: &[u8], offset: i64) -> bool {
        let h = key_hash(key);
        if let Some(o) = self.latest.get_mut(&h) {
            *o = (*o).max(offset);
            if let Some(f) = self.first.as_mut().and_then(|first| first.get_mut(&h)) {
                *f = (*f).min(offset);
            }
            return true;
        }
        if self.latest.len() >= self.max_keys {
            return false;
        }
        self.latest.insert(h, offset);
        if let Some(first) = self.first.as_mut() {
            first.insert(h, offset);
        }
        true
    }

    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.latest.get(&key_hash(key)).copied()
    }

    /// Whether the record of `key` at `offset` is the one of its key this pass keeps: the
    /// latest mapped (or the first, planted), or one the map never saw — its key was not in
    /// the dirty range, or it lies above the range's mapped end.
    pub fn keeps(&self, key: &[u8], offset: i64) -> bool {
        let h = key_hash(key);
        match self.latest.get(&h) {
            None => true,
            Some(&latest) if offset > latest => true,
            Some(&latest) => match self.first.as_ref().and_then(|f| f.get(&h)) {
                Some(&first) => offset == first,
                None => offset == latest,
            },
        }
    }

    pub fn len(&self) -> usize {
        self.latest.len()
    }

    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }
}

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
/// point at records that stay in the log, so the map is still sound.
pub fn map_batch(map: &mut KeyMap, batch: &[u8]) -> Result<bool, CleanError> {
    if let Some((h, raw)) = raw_records(batch) {
        let body = &batch[batch_header_bytes..];
        for r in raw {
            if let Some(k) = r.key {
                if !map.insert(&body[k], h.base_offset + r.offset_delta as i64) {
                    return Ok(false);
                }
            }
        }
        return Ok(true);
    }
    for r in records(batch)? {
        if let Some(k) = &r.key {
            if !map.insert(k, r.offset) {
                return Ok(false);
            }
        }
    }
    Ok(true)
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
        let keep: Vec<&batch::RecordInfo> = raw.iter().filter(|r| survives(r.key.clone().map(|k| &body[k]), h.base_offset + r.offset_delta as i64, r.null_value, h.base_timestamp + r.timestamp_delta)).collect();
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

    #[test]
    fn key_hashes_are_murmur3_x64_128_and_do_not_collide_on_similar_keys() {
        // Reference values from the `mmh3` Python package (hash128, seed 0), as (h1, h2).
        let swap = |v: u128| (v << 64) | (v >> 64);
        assert_eq!(key_hash(b"hello"), swap(0x5b1e906a48ae1d19cbd8a7b341bd9b02));
        assert_eq!(key_hash(b"a"), swap(0xe6b53a48510e895a85555565f6597889));
        assert_eq!(key_hash(b"key-00000001"), swap(0x3e4b88d086e085f3020e86c725c45c88));
        assert_eq!(key_hash(b"0123456789abcdef"), swap(0x87c35b5c63a708da4be06d94cf4ad1a7));
        assert_eq!(key_hash(b"0123456789abcdefXYZ"), swap(0x4e69e256eaf89cf399d375026c4a901d));
        assert_eq!(key_hash(b""), 1, "0 is never a key's hash");
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..200_000 {
            assert!(seen.insert(key_hash(format!("key-{i:08}").as_bytes())));
            assert!(seen.insert(key_hash(&(i as u64).to_le_bytes())));
        }
    }

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
            assert_eq!((map.len(), map.latest(b"a")), (3, Some(7)), "codec {codec}");
            let Outcome::Rewritten(out) = clean_batch(&b, &h, &map, none).unwrap() else { panic!("a@5 goes") };
            let oh = batch::validate_stored(&out).unwrap();
            assert_eq!((oh.compression(), oh.base_offset, oh.last_offset_delta, oh.records_count), (codec, 5, 3, 3), "codec {codec}");
            let left: Vec<_> = records(&out).unwrap().into_iter().map(|r| (r.offset, r.value)).collect();
            assert_eq!(left, vec![(6, Some(Bytes::from("1"))), (7, None), (8, Some(Bytes::from("1")))], "codec {codec}");
        }
    }
}
