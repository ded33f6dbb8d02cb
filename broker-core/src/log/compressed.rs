//! The records inside a compressed batch, for every codec Kafka's clients send: gzip, snappy
//! (Kafka's xerial framing, or a raw snappy block as Kafka's Java reader also accepts), lz4
//! (the LZ4 frame format, Kafka's `KafkaLZ4BlockOutputStream` and librdkafka's LZ4F) and zstd
//! (zstd frames, as zstd-jni and librdkafka write them). Decompression stays within a byte
//! bound; compression (the cleaner's rewrite keeps a batch's codec, as Kafka's does) uses
//! Kafka's default settings per codec.
//!
//! Every size a compressed stream declares is checked against what is left of the bound
//! before anything is allocated for it: a 100-byte snappy batch may declare 4 GiB blocks, an
//! lz4 or zstd frame may declare a content size or window of gigabytes, and any stream may
//! inflate a thousandfold. Bytes only; no IO.

use super::batch::{self, BatchError};
use crate::constants::{batch_decompressed_bytes_max, batch_header_bytes};
use std::io::{Read, Write};

mod lz4;

/// Compression codec ids as a batch's attributes carry them.
pub const codec_none: u8 = 0;
pub const codec_gzip: u8 = 1;
pub const codec_snappy: u8 = 2;
pub const codec_lz4: u8 = 3;
pub const codec_zstd: u8 = 4;
/// The highest codec id Kafka defines; above it, UNSUPPORTED_COMPRESSION_TYPE.
pub const codec_max: u8 = codec_zstd;

/// The stream header xerial's snappy-java writes (and Kafka's clients with it).
const xerial_magic: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// snappy-java's block size for `SnappyOutputStream`, which Kafka's producer uses.
const snappy_block_bytes: usize = 32 * 1024;
/// Kafka's `compression.zstd.level` default (KIP-390), which is zstd's own default too.
const zstd_level: i32 = 3;
/// The largest zstd window (log2 bytes) a frame may ask for: the decompression bound, so a
/// tiny frame declaring a 2 GiB window is refused instead of allocating it. Kafka (zstd-jni)
/// allows 2^27; no client writes windows past 2^23 at its default levels.
const zstd_window_log_max: u32 = batch_decompressed_bytes_max.trailing_zeros();
const _: () = assert!(batch_decompressed_bytes_max.is_power_of_two());

const too_big: BatchError = BatchError::BadCompression("records decompress to more than batch.decompressed.bytes.max");

/// The records section of a batch of `codec` (gzip, snappy, lz4 or zstd), decompressed, at
/// most `batch_decompressed_bytes_max` bytes.
pub fn decompress(codec: u8, body: &[u8]) -> Result<Vec<u8>, BatchError> {
    decompress_within(codec, body, batch_decompressed_bytes_max)
}

fn decompress_within(codec: u8, body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    match codec {
        codec_gzip => gunzip(body, max),
        codec_snappy => unsnappy(body, max),
        codec_lz4 => lz4::decompress(body, max, false),
        codec_zstd => unzstd(body, max),
        other => Err(BatchError::UnsupportedCompression(other)),
    }
}

/// A magic 0 or 1 wrapper message's value (`protocol::message_set`), decompressed within
/// `max` bytes: gzip, snappy or lz4 (zstd came with magic 2), lz4 with the old header checksum
/// Kafka's clients before 0.10 wrote also taken.
pub fn decompress_message_set(codec: u8, body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    match codec {
        codec_lz4 => lz4::decompress(body, max, true),
        codec_gzip | codec_snappy => decompress_within(codec, body, max),
        other => Err(BatchError::UnsupportedCompression(other)),
    }
}

/// `plain` (a records section) compressed with `codec` as Kafka's producer and cleaner write
/// it: gzip at the default level, snappy in xerial framing with 32 KiB blocks, lz4 as one
/// frame of independent 64 KiB blocks without checksums, zstd at level 3 with its content size.
pub fn compress(codec: u8, plain: &[u8]) -> Result<Vec<u8>, BatchError> {
    let failed = |_| BatchError::BadCompression("records do not compress");
    match codec {
        codec_none => Ok(plain.to_vec()),
        codec_gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(plain).map_err(failed)?;
            gz.finish().map_err(failed)
        }
        codec_snappy => {
            let mut out = xerial_magic.to_vec();
            for chunk in plain.chunks(snappy_block_bytes) {
                let block = snap::raw::Encoder::new().compress_vec(chunk).map_err(|_| BatchError::BadCompression("records do not compress"))?;
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            Ok(out)
        }
        codec_lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            let info = FrameInfo::new().block_size(BlockSize::Max64KB).block_mode(BlockMode::Independent);
            let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(plain).map_err(failed)?;
            enc.finish().map_err(|_| BatchError::BadCompression("records do not compress"))
        }
        codec_zstd => zstd::bulk::compress(plain, zstd_level).map_err(failed),
        other => Err(BatchError::UnsupportedCompression(other)),
    }
}

/// The uncompressed batch `plain` with its records compressed by `codec` (attributes and CRC
/// set to match): how a client would have sent it. For tests, fuzz seeds and benchmarks.
pub fn with_codec(plain: &[u8], codec: u8) -> Result<Vec<u8>, BatchError> {
    let h = batch::read_header(plain)?;
    if h.compression() != codec_none {
        return Err(BatchError::BadCompression("batch is compressed already"));
    }
    let body = compress(codec, &plain[batch_header_bytes..])?;
    Ok(batch::reframe(plain, codec, &body))
}

/// Records of no producer (no idempotence, no transaction), each `(timestamp, key, value)`, as
/// one batch from offset 0 compressed by kafka-protocol with `compression` (none, gzip or
/// snappy): what a plain client sends.
pub fn unowned(records: &[(i64, Option<bytes::Bytes>, Option<bytes::Bytes>)], compression: kafka_protocol::records::Compression) -> Result<bytes::Bytes, String> {
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (timestamp, key, value))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder keeps one batch while offset - sequence is constant and takes the
            // first record's sequence as the base: -1, as a batch of no producer has.
            sequence: i as i32 - 1,
            timestamp: *timestamp,
            key: key.clone(),
            value: value.clone(),
            headers: Default::default(),
        })
        .collect();
    let mut out = bytes::BytesMut::new();
    RecordBatchEncoder::encode(&mut out, records.iter(), &RecordEncodeOptions { version: crate::kafka::batch_magic, compression }).map_err(|e| e.to_string())?;
    Ok(out.freeze())
}

/// The whole batch at the front of `bytes`, taken off it and decoded by kafka-protocol with its
/// records decompressed here (every codec, within the bound), not by the protocol crate (built
/// with gzip and snappy only, and without a bound). For readers of fetched batches.
pub fn decode_batch(bytes: &mut bytes::Bytes) -> Result<kafka_protocol::records::RecordSet, String> {
    let size = batch::declared_size(bytes).filter(|&n| n <= bytes.len()).ok_or("a batch cut short or of no plausible length")?;
    let mut whole = bytes.split_to(size);
    let h = batch::read_header(&whole).map_err(|e| e.to_string())?;
    // The decoder hands every records section to the hook, uncompressed ones too.
    let plain = match h.compression() {
        codec_none => whole.slice(batch_header_bytes..),
        codec => bytes::Bytes::from(decompress(codec, &whole[batch_header_bytes..]).map_err(|e| e.to_string())?),
    };
    kafka_protocol::records::RecordBatchDecoder::decode_with_custom_compression(&mut whole, Some(|_: &mut bytes::Bytes, _| Ok(plain.clone()))).map_err(|e| e.to_string())
}

/// Reads `reader` to its end into a vector, refusing output past `max` (read at most one byte
/// further to know).
fn read_bounded(reader: impl Read, max: usize, what: &'static str) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    reader.take(max as u64 + 1).read_to_end(&mut out).map_err(|_| BatchError::BadCompression(what))?;
    if out.len() > max {
        return Err(too_big);
    }
    Ok(out)
}

fn gunzip(body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    // Concatenated gzip members read as one stream, as Java's GZIPInputStream does.
    read_bounded(flate2::read::MultiGzDecoder::new(body), max, "gzip stream does not decode")
}

fn unzstd(body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    if let Ok(Some(n)) = zstd::zstd_safe::get_frame_content_size(body) {
        if n > max as u64 {
            return Err(too_big);
        }
    }
    let mut dec = zstd::stream::read::Decoder::with_buffer(body).map_err(|_| BatchError::BadCompression("zstd decoder does not start"))?;
    // A window past the bound is refused as the frame header is read, before it is allocated.
    dec.window_log_max(zstd_window_log_max).map_err(|_| BatchError::BadCompression("zstd decoder does not start"))?;
    read_bounded(dec, max, "zstd frame does not decode")
}

fn unsnappy(body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    let Some(mut rest) = body.strip_prefix(xerial_magic.as_slice()) else {
        // No xerial header: one raw snappy block (Kafka's reader falls back the same way).
        snappy_block(body, &mut out, max)?;
        return Ok(out);
    };
    while !rest.is_empty() {
        let Some((len, after)) = rest.split_first_chunk::<4>() else {
            return Err(BatchError::BadCompression("snappy block length cut short"));
        };
        let len = u32::from_be_bytes(*len) as usize;
        let Some(block) = after.get(..len) else {
            return Err(BatchError::BadCompression("snappy block runs past the batch"));
        };
        snappy_block(block, &mut out, max)?;
        rest = &after[len..];
    }
    Ok(out)
}

/// Appends one raw snappy block's bytes to `out`, refusing it before allocating if its
/// declared length would take `out` past `max`.
fn snappy_block(block: &[u8], out: &mut Vec<u8>, max: usize) -> Result<(), BatchError> {
    let len = snap::raw::decompress_len(block).map_err(|_| BatchError::BadCompression("snappy block header does not decode"))?;
    if len > max - out.len() {
        return Err(too_big);
    }
    let start = out.len();
    out.resize(start + len, 0);
    let n = snap::raw::Decoder::new().decompress(block, &mut out[start..]).map_err(|_| BatchError::BadCompression("snappy block does not decode"))?;
    out.truncate(start + n);
    Ok(())
}

#[cfg(test)]
mod tests;
