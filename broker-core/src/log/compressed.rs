//! The records inside a compressed batch, decompressed within a byte bound: gzip and snappy
//! (Kafka's xerial framing, or a raw snappy block as Kafka's Java reader also accepts), the
//! codecs the broker's clients send and the protocol crate was built with. lz4 and zstd
//! batches are stored and served as they came but never looked inside (see docs/fuzzing.md).
//!
//! Every size a compressed stream declares is checked against what is left of the bound
//! before anything is allocated for it: a 100-byte snappy batch may declare 4 GiB blocks, and
//! a gzip stream may inflate a thousandfold. Bytes only; no IO.

use super::batch::BatchError;
use crate::constants::batch_decompressed_bytes_max;
use std::io::Read;

/// Compression codec ids as a batch's attributes carry them.
pub const codec_gzip: u8 = 1;
pub const codec_snappy: u8 = 2;

/// The stream header xerial's snappy-java writes (and Kafka's clients with it).
const xerial_magic: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";

/// Whether the broker can look inside batches of `codec` (none needs no decompression).
pub fn readable(codec: u8) -> bool {
    matches!(codec, 0 | codec_gzip | codec_snappy)
}

/// The records section of a batch of `codec` (gzip or snappy), decompressed, at most
/// `batch_decompressed_bytes_max` bytes.
pub fn decompress(codec: u8, body: &[u8]) -> Result<Vec<u8>, BatchError> {
    match codec {
        codec_gzip => gunzip(body, batch_decompressed_bytes_max),
        codec_snappy => unsnappy(body, batch_decompressed_bytes_max),
        other => Err(BatchError::UnsupportedCompression(other)),
    }
}

fn gunzip(body: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    // Concatenated gzip members read as one stream, as Java's GZIPInputStream does.
    let mut reader = flate2::read::MultiGzDecoder::new(body).take(max as u64 + 1);
    reader.read_to_end(&mut out).map_err(|_| BatchError::BadCompression("gzip stream does not decode"))?;
    if out.len() > max {
        return Err(BatchError::BadCompression("records decompress to more than batch.decompressed.bytes.max"));
    }
    Ok(out)
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
        return Err(BatchError::BadCompression("records decompress to more than batch.decompressed.bytes.max"));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let n = snap::raw::Decoder::new().decompress(block, &mut out[start..]).map_err(|_| BatchError::BadCompression("snappy block does not decode"))?;
    out.truncate(start + n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_and_both_snappy_forms_round_trip() {
        let text = b"seedlog ".repeat(1000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        assert_eq!(decompress(codec_gzip, &gz.finish().unwrap()).unwrap(), text);
        let raw = snap::raw::Encoder::new().compress_vec(&text).unwrap();
        assert_eq!(decompress(codec_snappy, &raw).unwrap(), text);
        let mut framed = xerial_magic.to_vec();
        for half in text.chunks(text.len() / 2) {
            let block = snap::raw::Encoder::new().compress_vec(half).unwrap();
            framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
            framed.extend_from_slice(&block);
        }
        assert_eq!(decompress(codec_snappy, &framed).unwrap(), text);
    }

    #[test]
    fn declared_sizes_over_the_bound_are_refused_before_allocation() {
        // A raw snappy block declaring 4 GiB - 1 (varint ff ff ff ff 0f) and nothing else.
        let bomb = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        assert!(matches!(decompress(codec_snappy, &bomb), Err(BatchError::BadCompression(_))));
        let mut framed = xerial_magic.to_vec();
        framed.extend_from_slice(&(bomb.len() as u32).to_be_bytes());
        framed.extend_from_slice(&bomb);
        assert!(matches!(decompress(codec_snappy, &framed), Err(BatchError::BadCompression(_))));
        // gzip inflating past the bound stops at the bound.
        let zeros = vec![0u8; 4096];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&zeros).unwrap();
        assert!(matches!(gunzip(&gz.finish().unwrap(), 4095), Err(BatchError::BadCompression(_))));
        assert!(matches!(decompress(codec_gzip, b"not gzip"), Err(BatchError::BadCompression(_))));
        assert_eq!(decompress(3, b""), Err(BatchError::UnsupportedCompression(3)));
    }
}
