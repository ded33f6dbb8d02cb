//! The encoding side of record batches: uncompressed v2 batches built from values or keyed
//! records (for tests, benchmarks, the simulator's workloads and the group coordinator's
//! appends), and a batch reframed around a new records section. The reading side is the
//! parent module.

use super::*;

/// Encoding side, for tests, benchmarks and the simulator's workloads: one uncompressed v2
/// batch of `values` (no keys, no headers), all with `timestamp`.
pub fn build(values: &[&[u8]], timestamp: i64) -> Vec<u8> {
    let records: Vec<KeyValue> = values.iter().map(|v| (None, Some(*v))).collect();
    build_keyed(&records, timestamp)
}

/// `b`'s header with `body` as its records section, compressed with `codec` (attributes bits
/// 0-2 set to it, the rest kept), its length and CRC-32C recomputed.
pub fn reframe(b: &[u8], codec: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(batch_header_bytes + body.len());
    out.extend_from_slice(&b[..batch_header_bytes]);
    out.extend_from_slice(body);
    let len = (out.len() - batch_log_overhead_bytes) as i32;
    out[length_at..length_at + 4].copy_from_slice(&len.to_be_bytes());
    let attributes = (be_i16(&out, attributes_at) & !0x07) | (codec & 0x07) as i16;
    out[attributes_at..attributes_at + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&out[attributes_at..]);
    out[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Appends a zigzag varint (Kafka's record encoding).
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Appends a length-prefixed field, -1 for null.
pub(crate) fn put_field(out: &mut Vec<u8>, f: Option<&[u8]>) {
    match f {
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
        None => put_varint(out, -1),
    }
}

/// A record's key and value; None is null.
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// One uncompressed v2 batch of (key, value) records, None being null (a value of None is a
/// tombstone), no headers, all with `timestamp`: what the group coordinator appends.
pub fn build_keyed(kvs: &[KeyValue], timestamp: i64) -> Vec<u8> {
    let mut records = Vec::new();
    for (i, (key, value)) in kvs.iter().enumerate() {
        let mut r = Vec::with_capacity(value.map_or(0, <[u8]>::len) + key.map_or(0, <[u8]>::len) + 8);
        r.push(0); // attributes
        put_varint(&mut r, 0); // timestamp delta
        put_varint(&mut r, i as i64); // offset delta
        put_field(&mut r, *key);
        put_field(&mut r, *value);
        put_varint(&mut r, 0); // headers
        put_varint(&mut records, r.len() as i64);
        records.extend_from_slice(&r);
    }
    let mut b = vec![0u8; batch_header_bytes];
    b.extend_from_slice(&records);
    let len = (b.len() - batch_log_overhead_bytes) as i32;
    b[length_at..length_at + 4].copy_from_slice(&len.to_be_bytes());
    b[leader_epoch_at..leader_epoch_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
    b[magic_at] = MAGIC_V2;
    let count = kvs.len() as i32;
    b[last_offset_delta_at..last_offset_delta_at + 4].copy_from_slice(&(count - 1).to_be_bytes());
    b[base_timestamp_at..base_timestamp_at + 8].copy_from_slice(&timestamp.to_be_bytes());
    b[max_timestamp_at..max_timestamp_at + 8].copy_from_slice(&timestamp.to_be_bytes());
    b[producer_id_at..producer_id_at + 8].copy_from_slice(&(-1i64).to_be_bytes());
    b[producer_epoch_at..producer_epoch_at + 2].copy_from_slice(&(-1i16).to_be_bytes());
    b[base_sequence_at..base_sequence_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
    b[records_count_at..records_count_at + 4].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&b[attributes_at..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    b
}
