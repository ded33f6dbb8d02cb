//! Kafka v2 record batches: the header layout, validation on append, and stamping.
//!
//! The log stores batches exactly as producers send them, after the leader stamps the base
//! offset and partition leader epoch (neither is covered by the CRC, so stamping never
//! re-checksums). Validation is strict: sizes, magic, CRC-32C over attributes..end, record
//! count, and the record framing itself — of the records as sent, or as they decompress for
//! every codec (`compressed`, within a bound). This module only looks at bytes; it never
//! does IO.

use crate::constants::{batch_header_bytes, batch_log_overhead_bytes};

pub mod control;
mod encode;
pub use encode::{build, build_keyed, reframe, KeyValue};
pub(crate) use encode::{put_field, put_varint};

// Field offsets inside a v2 batch (Kafka's DefaultRecordBatch).
const base_offset_at: usize = 0;
const length_at: usize = 8;
const leader_epoch_at: usize = 12;
const magic_at: usize = 16;
const crc_at: usize = 17;
const attributes_at: usize = 21;
const last_offset_delta_at: usize = 23;
const base_timestamp_at: usize = 27;
const max_timestamp_at: usize = 35;
/// The attribute bit saying the base timestamp is a delete horizon (KIP-534).
pub const delete_horizon_bit: i16 = 0x40;
const producer_id_at: usize = 43;
const producer_epoch_at: usize = 51;
const base_sequence_at: usize = 53;
const records_count_at: usize = 57;

/// The only batch format the log accepts.
pub const MAGIC_V2: u8 = crate::kafka::batch_magic as u8;

/// Why a batch was refused. Each maps to one Kafka error code at the protocol edge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Fewer bytes than a v2 header (61). Kafka: CORRUPT_MESSAGE.
    #[error("batch is {0} bytes, shorter than the 61-byte v2 header")]
    TooShort(usize),
    /// `batchLength` disagrees with the bytes present. Kafka: CORRUPT_MESSAGE.
    #[error("batchLength field says {declared} bytes follow, but {actual} bytes are present")]
    LengthMismatch { declared: i64, actual: usize },
    /// Larger than `message.max.bytes`. Kafka: MESSAGE_TOO_LARGE.
    #[error("batch of {size} bytes exceeds the limit of {max} bytes")]
    TooLarge { size: usize, max: usize },
    /// Not magic 2 (v0/v1 message sets are not supported). Kafka: UNSUPPORTED_FOR_MESSAGE_FORMAT.
    #[error("batch magic is {0}, only magic 2 is supported")]
    UnsupportedMagic(u8),
    /// Compression codec id above 4 (zstd). Kafka: UNSUPPORTED_COMPRESSION_TYPE.
    #[error("batch compression codec {0} does not exist")]
    UnsupportedCompression(u8),
    /// CRC-32C over attributes..end does not match. Kafka: CORRUPT_MESSAGE.
    #[error("batch CRC-32C is {stored:#010x} but the bytes hash to {computed:#010x}")]
    BadCrc { stored: u32, computed: u32 },
    /// recordsCount < 1 or lastOffsetDelta != recordsCount - 1. Kafka: INVALID_RECORD.
    #[error("batch claims {count} records with lastOffsetDelta {last_offset_delta}")]
    BadRecordCount { count: i32, last_offset_delta: i32 },
    /// Uncompressed records do not parse to exactly `recordsCount` records filling the batch.
    /// Kafka: INVALID_RECORD / CORRUPT_MESSAGE.
    #[error("malformed records: {0}")]
    BadRecords(&'static str),
    /// A compressed records section that does not decompress, or decompresses past
    /// `batch_decompressed_bytes_max`. Kafka: CORRUPT_MESSAGE.
    #[error("compressed records: {0}")]
    BadCompression(&'static str),
}

/// A validated view of a batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Total bytes of the batch including the 12-byte offset+length prefix.
    pub size: usize,
    pub leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Saturating: a header read from a disk that lies (the base offset is outside the CRC)
    /// may sit at i64::MAX; no real log gets there, and the continuity checks then refuse it.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.saturating_add(self.last_offset_delta as i64)
    }
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    /// Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression(&self) -> u8 {
        (self.attributes & 0x7) as u8
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & 0x10 != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & 0x20 != 0
    }
    /// KIP-534's delete horizon: when the cleaner may remove this batch (a transaction marker
    /// nothing of its transaction is left of), held in the base timestamp once the cleaner set
    /// the attribute bit.
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.attributes & delete_horizon_bit != 0).then_some(self.base_timestamp)
    }
    /// Timestamp type bit: LogAppendTime (the broker's clock) instead of CreateTime.
    pub fn log_append_time(&self) -> bool {
        self.attributes & 0x08 != 0
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Total size (with the 12-byte prefix) a batch declares, from its first 12 bytes, or `None`
/// if the declared length cannot be a v2 batch. Used to walk a segment without trusting it;
/// the caller still checks the size against the bytes left in the file.
pub fn declared_size(prefix: &[u8]) -> Option<usize> {
    if prefix.len() < batch_log_overhead_bytes {
        return None;
    }
    let size = be_i32(prefix, length_at) as i64 + batch_log_overhead_bytes as i64;
    if size < batch_header_bytes as i64 {
        return None;
    }
    Some(size as usize)
}

/// Reads the header fields without checking anything but the length of `b`.
pub fn read_header(b: &[u8]) -> Result<BatchHeader, BatchError> {
    if b.len() < batch_header_bytes {
        return Err(BatchError::TooShort(b.len()));
    }
    Ok(BatchHeader {
        base_offset: be_i64(b, base_offset_at),
        size: be_i32(b, length_at).max(0) as usize + batch_log_overhead_bytes,
        leader_epoch: be_i32(b, leader_epoch_at),
        attributes: be_i16(b, attributes_at),
        last_offset_delta: be_i32(b, last_offset_delta_at),
        base_timestamp: be_i64(b, base_timestamp_at),
        max_timestamp: be_i64(b, max_timestamp_at),
        producer_id: be_i64(b, producer_id_at),
        producer_epoch: be_i16(b, producer_epoch_at),
        base_sequence: be_i32(b, base_sequence_at),
        records_count: be_i32(b, records_count_at),
    })
}

/// Validates one complete batch (`b` must be exactly one batch) and returns its header.
/// `max_bytes` is the size limit (normally [`message_bytes_max`]).
pub fn validate(b: &[u8], max_bytes: usize) -> Result<BatchHeader, BatchError> {
    within_size(b.len(), max_bytes)?;
    check(b)
}

/// The size rule of [`validate`]: a batch over the limit is refused as too large, whatever
/// else is wrong with it, so this is checked first.
pub fn within_size(len: usize, max_bytes: usize) -> Result<(), BatchError> {
    match len > max_bytes && len >= batch_header_bytes {
        true => Err(BatchError::TooLarge { size: len, max: max_bytes }),
        false => Ok(()),
    }
}

/// Everything [`validate`] checks but the size limit: framing, magic, CRC, record count,
/// codec, and every record (decompressed first). Needs nothing but the bytes, so a produce
/// request's batches are checked before its decision, off the node's lock.
pub fn check(b: &[u8]) -> Result<BatchHeader, BatchError> {
    check_stored(b)?;
    let header = read_header(b)?;
    check_record_count(&header)?;
    if header.compression() > super::compressed::codec_max {
        return Err(BatchError::UnsupportedCompression(header.compression()));
    }
    if header.compression() != 0 {
        // As Kafka's LogValidator does: a compressed batch is only as good as its records.
        let records = super::compressed::decompress(header.compression(), &b[batch_header_bytes..])?;
        check_records(&records, header.records_count, header.base_timestamp)?;
    }
    if header.compression() == 0 {
        let max = check_records(&b[batch_header_bytes..], header.records_count, header.base_timestamp)?;
        if !header.log_append_time() {
            // The records' own newest timestamp is the truth; the caller rewrites a header
            // that disagrees (as Kafka does), so time lookup and retention see the records.
            return Ok(BatchHeader { max_timestamp: max, ..header });
        }
    }
    Ok(header)
}

/// Checks what a stored batch needs on every read: its length fits, magic 2, and the CRC-32C
/// matches. Record framing was validated when the batch was appended and the CRC vouches the
/// bytes are unchanged since, so reads skip the (costlier) record walk.
pub fn check_stored(b: &[u8]) -> Result<(), BatchError> {
    if b.len() < batch_header_bytes {
        return Err(BatchError::TooShort(b.len()));
    }
    let declared = be_i32(b, length_at) as i64;
    if declared + batch_log_overhead_bytes as i64 != b.len() as i64 {
        return Err(BatchError::LengthMismatch { declared, actual: b.len() - batch_log_overhead_bytes });
    }
    if b[magic_at] != MAGIC_V2 {
        return Err(BatchError::UnsupportedMagic(b[magic_at]));
    }
    let stored = be_i32(b, crc_at) as u32;
    let computed = crc32c::crc32c(&b[attributes_at..]);
    if stored != computed {
        return Err(BatchError::BadCrc { stored, computed });
    }
    Ok(())
}

/// recordsCount ≥ 1 and lastOffsetDelta = recordsCount − 1: the offsets a batch claims are the
/// records it holds (what a producer must send).
fn check_record_count(h: &BatchHeader) -> Result<(), BatchError> {
    if h.records_count < 1 || h.last_offset_delta != h.records_count - 1 {
        return Err(BatchError::BadRecordCount { count: h.records_count, last_offset_delta: h.last_offset_delta });
    }
    Ok(())
}

/// A stored batch may have been compacted (log::clean): fewer records than its offsets span,
/// none at all, never more.
fn check_stored_record_count(h: &BatchHeader) -> Result<(), BatchError> {
    if h.records_count < 0 || h.last_offset_delta < 0 || h.records_count as i64 > h.last_offset_delta as i64 + 1 {
        return Err(BatchError::BadRecordCount { count: h.records_count, last_offset_delta: h.last_offset_delta });
    }
    Ok(())
}

/// Validates one complete batch read back from a log (recovery): as [`validate`], except that
/// a compacted batch's records may be fewer than its offsets and their deltas may skip (they
/// still increase and stay within the batch). Returns the header as stored.
pub fn validate_stored(b: &[u8]) -> Result<BatchHeader, BatchError> {
    check_stored(b)?;
    let header = read_header(b)?;
    check_stored_record_count(&header)?;
    if header.compression() > super::compressed::codec_max {
        return Err(BatchError::UnsupportedCompression(header.compression()));
    }
    if header.compression() == 0 {
        let mut last = -1i32;
        let mut ordered = true;
        walk_records(&b[batch_header_bytes..], header.records_count, |r| {
            ordered &= r.offset_delta > last && r.offset_delta <= header.last_offset_delta;
            last = r.offset_delta;
        })?;
        if !ordered {
            return Err(BatchError::BadRecords("offset deltas do not increase within the batch"));
        }
    }
    Ok(header)
}

/// Splits bytes holding batches back to back (a fetch response's records) into the headers of
/// the whole batches, each checked as a stored batch is (length, magic, CRC) and for a record
/// count within its offsets (a leader's compacted batches hold fewer). A trailing partial batch is left out: a fetch response may
/// end mid-batch, and Kafka's consumers and followers drop that tail. Records are not walked:
/// the leader validated them and the CRC vouches they are unchanged since.
pub fn whole_batches(b: &[u8]) -> Result<Vec<BatchHeader>, BatchError> {
    let mut headers = Vec::new();
    let mut at = 0usize;
    while b.len() - at >= batch_log_overhead_bytes {
        let Some(size) = declared_size(&b[at..]) else {
            let declared = be_i32(b, at + length_at) as i64;
            return Err(BatchError::LengthMismatch { declared, actual: b.len() - at - batch_log_overhead_bytes });
        };
        if size > b.len() - at {
            break; // the partial tail
        }
        let batch = &b[at..at + size];
        check_stored(batch)?;
        let header = read_header(batch)?;
        check_stored_record_count(&header)?;
        headers.push(header);
        at += size;
    }
    Ok(headers)
}

/// Sets maxTimestamp (which the CRC covers) and recomputes the CRC.
pub fn set_max_timestamp(b: &mut [u8], ts: i64) {
    b[max_timestamp_at..max_timestamp_at + 8].copy_from_slice(&ts.to_be_bytes());
    let crc = crc32c::crc32c(&b[attributes_at..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Makes `b` a batch of idempotent producer `producer_id` at `epoch` whose first record has
/// sequence `base_sequence`, its CRC-32C recomputed (tests and the simulator's workloads).
pub fn set_producer(b: &mut [u8], producer_id: i64, epoch: i16, base_sequence: i32) {
    b[producer_id_at..producer_id_at + 8].copy_from_slice(&producer_id.to_be_bytes());
    b[producer_epoch_at..producer_epoch_at + 2].copy_from_slice(&epoch.to_be_bytes());
    b[base_sequence_at..base_sequence_at + 4].copy_from_slice(&base_sequence.to_be_bytes());
    let crc = crc32c::crc32c(&b[attributes_at..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Marks `b` transactional (attribute bit 4), as a transactional producer's batches are, and
/// recomputes the CRC.
pub fn set_transactional(b: &mut [u8]) {
    let attributes = be_i16(b, attributes_at) | 0x10;
    b[attributes_at..attributes_at + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&b[attributes_at..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Kafka's LogAppendTime: sets the timestamp-type attribute bit and maxTimestamp to `ts` (the
/// broker's clock; consumers read it as every record's timestamp), and recomputes the CRC.
pub fn set_log_append_time(b: &mut [u8], ts: i64) {
    let attributes = be_i16(b, attributes_at) | 0x08;
    b[attributes_at..attributes_at + 2].copy_from_slice(&attributes.to_be_bytes());
    set_max_timestamp(b, ts);
}

/// Writes the log-assigned base offset and the leader epoch into a batch. Both fields sit
/// before the CRC-covered range, so the CRC stays valid.
pub fn stamp(b: &mut [u8], base_offset: i64, leader_epoch: i32) {
    b[base_offset_at..base_offset_at + 8].copy_from_slice(&base_offset.to_be_bytes());
    b[leader_epoch_at..leader_epoch_at + 4].copy_from_slice(&leader_epoch.to_be_bytes());
}

/// Zigzag varint as Kafka encodes record fields; `None` if truncated or longer than 5 bytes.
fn varint(b: &[u8], pos: &mut usize) -> Option<i32> {
    // One byte is the common case (lengths under 64, deltas, counts): no loop.
    if let Some(&byte @ 0..0x80) = b.get(*pos) {
        *pos += 1;
        return Some(((byte >> 1) as i32) ^ -((byte & 1) as i32));
    }
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        value |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Some(((value >> 1) as i32) ^ -((value & 1) as i32));
        }
    }
    None
}

/// Same for varlong (timestamp delta is a varlong).
fn varlong(b: &[u8], pos: &mut usize) -> Option<i64> {
    if let Some(&byte @ 0..0x80) = b.get(*pos) {
        *pos += 1;
        return Some(((byte >> 1) as i64) ^ -((byte & 1) as i64));
    }
    let mut value: u64 = 0;
    for shift in (0..70).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        value |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    None
}

/// One uncompressed record's position and the fields the log needs (ranges are within the
/// batch body walked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    /// The key's bytes; None for a null key.
    pub key: Option<std::ops::Range<usize>>,
    /// A null value: a tombstone.
    pub null_value: bool,
    /// Every header key is UTF-8 (the protocol's String; append requires it, see
    /// [`check_records`]).
    pub header_keys_utf8: bool,
    /// The whole record, its length prefix included.
    pub bytes: std::ops::Range<usize>,
}

/// Skips a length-prefixed field (`-1` = null when `nullable`); false if it does not fit.
fn skip_field(rec: &[u8], p: &mut usize, nullable: bool) -> bool {
    match varint(rec, p) {
        Some(-1) if nullable => true,
        Some(n) if n >= 0 && *p + n as usize <= rec.len() => {
            *p += n as usize;
            true
        }
        _ => false,
    }
}

/// Walks the records of an uncompressed batch body, checking that exactly `count` records fill
/// it and that each record's fields (attributes, timestamp and offset deltas, key, value,
/// headers) end exactly at the record's length, as Kafka's `DefaultRecord.readFrom` does.
/// Calls `visit` for each.
pub fn walk_records(
    body: &[u8],
    count: i32,
    mut visit: impl FnMut(RecordInfo),
) -> Result<(), BatchError> {
    let mut pos = 0usize;
    for _ in 0..count {
        let start = pos;
        let len = varint(body, &mut pos).ok_or(BatchError::BadRecords("truncated record length"))?;
        if len < 1 || pos + len as usize > body.len() {
            return Err(BatchError::BadRecords("record length runs past the batch"));
        }
        let end = pos + len as usize;
        let rec = &body[..end];
        let mut p = pos + 1; // attributes (unused, must be present)
        let timestamp_delta = varlong(rec, &mut p).ok_or(BatchError::BadRecords("bad timestamp"))?;
        let offset_delta = varint(rec, &mut p).ok_or(BatchError::BadRecords("bad offset delta"))?;
        let key_len = varint(rec, &mut p);
        p = p.min(rec.len());
        let key = match key_len {
            Some(-1) => None,
            Some(n) if n >= 0 && p + n as usize <= rec.len() => Some(p..p + n as usize),
            _ => return Err(BatchError::BadRecords("key runs past its record")),
        };
        if let Some(k) = &key {
            p = k.end;
        }
        let null_value = rec.get(p) == Some(&1); // zigzag varint -1
        if !skip_field(rec, &mut p, true) {
            return Err(BatchError::BadRecords("value runs past its record"));
        }
        let headers = varint(rec, &mut p).filter(|&h| h >= 0).ok_or(BatchError::BadRecords("bad header count"))?;
        let mut header_keys_utf8 = true;
        for _ in 0..headers {
            let key_at = p;
            if !skip_field(rec, &mut p, false) {
                return Err(BatchError::BadRecords("header runs past its record"));
            }
            let mut at = key_at;
            let key_len = varint(rec, &mut at).unwrap_or(0) as usize;
            header_keys_utf8 &= std::str::from_utf8(&rec[at..at + key_len]).is_ok();
            if !skip_field(rec, &mut p, true) {
                return Err(BatchError::BadRecords("header runs past its record"));
            }
        }
        if p != end {
            return Err(BatchError::BadRecords("record fields do not end at the record's length"));
        }
        visit(RecordInfo { offset_delta, timestamp_delta, key, null_value, header_keys_utf8, bytes: start..end });
        pos = end;
    }
    if pos != body.len() {
        return Err(BatchError::BadRecords("bytes left after the last record"));
    }
    Ok(())
}

/// Checks record framing, dense offset deltas, timestamps that do not overflow and header keys
/// that are UTF-8 (Kafka decodes them leniently; kafka-protocol's decoder, which compaction
/// uses for compressed batches, and many clients refuse them: fuzzing found compaction unable
/// to read such a batch); returns the newest record timestamp.
fn check_records(body: &[u8], count: i32, base_timestamp: i64) -> Result<i64, BatchError> {
    let mut expected = 0;
    let (mut dense, mut fits, mut utf8) = (true, true, true);
    let mut max = i64::MIN;
    walk_records(body, count, |r| {
        utf8 &= r.header_keys_utf8;
        dense &= r.offset_delta == expected;
        expected += 1;
        match base_timestamp.checked_add(r.timestamp_delta) {
            Some(ts) => max = max.max(ts),
            None => fits = false,
        }
    })?;
    if !dense {
        return Err(BatchError::BadRecords("offset deltas are not 0, 1, 2, ..."));
    }
    if !fits {
        return Err(BatchError::BadRecords("record timestamp overflows"));
    }
    if !utf8 {
        return Err(BatchError::BadRecords("a record header key is not UTF-8"));
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::message_bytes_max;

    fn sample() -> Vec<u8> {
        build(&[b"alpha", b"beta", b"gamma"], 1_700_000_000_000)
    }

    #[test]
    fn built_batch_validates() {
        let b = sample();
        let h = validate(&b, message_bytes_max).unwrap();
        assert_eq!(h.records_count, 3);
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.size, b.len());
        assert_eq!(h.max_timestamp, 1_700_000_000_000);
        assert_eq!(declared_size(&b), Some(b.len()));
    }

    #[test]
    fn stamping_keeps_crc_valid() {
        let mut b = sample();
        stamp(&mut b, 41, 7);
        let h = validate(&b, message_bytes_max).unwrap();
        assert_eq!((h.base_offset, h.leader_epoch, h.last_offset()), (41, 7, 43));
    }

    #[test]
    fn each_corruption_has_its_error() {
        let b = sample();
        assert_eq!(validate(&b[..60], 1 << 20), Err(BatchError::TooShort(60)));
        assert!(matches!(validate(&b[..b.len() - 1], 1 << 20), Err(BatchError::LengthMismatch { .. })));
        assert!(matches!(validate(&b, 70), Err(BatchError::TooLarge { .. })));
        let mut m = b.clone();
        m[magic_at] = 1;
        assert_eq!(validate(&m, 1 << 20), Err(BatchError::UnsupportedMagic(1)));
        let mut c = b.clone();
        let last = c.len() - 1;
        c[last] ^= 0x40;
        assert!(matches!(validate(&c, 1 << 20), Err(BatchError::BadCrc { .. })));
    }

    #[test]
    fn record_count_must_match_records() {
        // A header claiming 4 records over 3 record bodies, with a correct CRC.
        let mut b = sample();
        b[records_count_at..records_count_at + 4].copy_from_slice(&4i32.to_be_bytes());
        b[last_offset_delta_at..last_offset_delta_at + 4].copy_from_slice(&3i32.to_be_bytes());
        let crc = crc32c::crc32c(&b[attributes_at..]);
        b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(validate(&b, 1 << 20), Err(BatchError::BadRecords(_))));
        // And a delta that disagrees with the count.
        let mut d = sample();
        d[last_offset_delta_at..last_offset_delta_at + 4].copy_from_slice(&5i32.to_be_bytes());
        let crc = crc32c::crc32c(&d[attributes_at..]);
        d[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(validate(&d, 1 << 20), Err(BatchError::BadRecordCount { .. })));
    }

    #[test]
    fn whole_batches_drops_a_partial_tail_and_refuses_bad_batches() {
        let (a, b) = (sample(), build(&[b"delta"], 5));
        let mut both = [a.clone(), b.clone()].concat();
        let lens = |hs: Vec<BatchHeader>| hs.iter().map(|h| h.size).collect::<Vec<_>>();
        assert_eq!(lens(whole_batches(&both).unwrap()), [a.len(), b.len()]);
        assert_eq!(lens(whole_batches(&both[..a.len() + 70]).unwrap()), [a.len()], "partial batch");
        assert_eq!(lens(whole_batches(&both[..a.len() + 5]).unwrap()), [a.len()], "partial length prefix");
        assert_eq!(lens(whole_batches(&[]).unwrap()), Vec::<usize>::new());
        both[a.len() + 70] ^= 1;
        assert!(matches!(whole_batches(&both), Err(BatchError::BadCrc { .. })));
        let mut zeroed = a.clone();
        zeroed.extend_from_slice(&[0u8; 80]);
        assert!(matches!(whole_batches(&zeroed), Err(BatchError::LengthMismatch { declared: 0, .. })));
    }

    #[test]
    fn declared_size_rejects_impossible_lengths() {
        assert_eq!(declared_size(&[0u8; 12]), None, "zeroed region (a torn write) is not a batch");
        let mut p = [0u8; 12];
        p[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(declared_size(&p), None);
        p[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert_eq!(declared_size(&p), None, "shorter than a header");
    }
}
