//! LZ4 frames as Kafka's clients write them (the LZ4 frame format: Kafka's
//! `KafkaLZ4BlockOutputStream`, librdkafka's LZ4F), read strictly and within a byte bound.
//!
//! The frame is walked here and each block handed to lz4_flex's block decoder, because its own
//! frame reader is lenient where a broker must not be: a frame cut at a block boundary (no end
//! mark, no content checksum) reads as complete, and bytes after the first frame are ignored.
//! Here every frame must end with its end mark, checksums that the frame promises are checked
//! (header, blocks, content), a declared content size must be the content's, and the body must
//! be whole frames back to back. Every block lands in the output at most `max` bytes long, and
//! a declared content size past `max` is refused before any block is read. Bytes only.

use super::too_big;
use crate::log::batch::BatchError;
use twox_hash::XxHash32;

/// The frame format's magic number (little-endian on the wire).
pub(super) const frame_magic: u32 = 0x184D_2204;
/// How far back a linked block may refer: the previous 64 KiB of the frame's output.
const window_bytes: usize = 64 * 1024;

fn bad(what: &'static str) -> BatchError {
    BatchError::BadCompression(what)
}

/// Every frame of `body`, decompressed, at most `max` bytes in all. With `old_checksum`, a
/// header checksum over the magic number and the descriptor is taken too: what Kafka's clients
/// before 0.10 wrote into magic 0 messages (KAFKA-3160), and Kafka read from them.
pub(super) fn decompress(body: &[u8], max: usize, old_checksum: bool) -> Result<Vec<u8>, BatchError> {
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let mut rest = body;
    if rest.is_empty() {
        return Err(bad("lz4: no frame"));
    }
    while !rest.is_empty() {
        rest = frame(rest, &mut out, &mut scratch, max, old_checksum)?;
    }
    Ok(out)
}

/// The bytes of a frame, read from the front.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BatchError> {
        if n > self.0.len() {
            return Err(bad("lz4 frame cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn byte(&mut self) -> Result<u8, BatchError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, BatchError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
}

/// Decompresses the frame at the front of `input` onto `out`; returns what follows it. Blocks
/// decode into `scratch`, grown (and zeroed) once to the largest block size any frame of the
/// body names, so a body of many tiny blocks or frames costs its own length, not a block size
/// each.
fn frame<'a>(input: &'a [u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>, max: usize, old_checksum: bool) -> Result<&'a [u8], BatchError> {
    let mut c = Input(input);
    if c.u32()? != frame_magic {
        return Err(bad("lz4: not a frame (magic number)"));
    }
    let descriptor_at = c.0;
    let (flg, bd) = (c.byte()?, c.byte()?);
    if flg >> 6 != 0b01 || flg & 0x02 != 0 || bd & 0x8f != 0 {
        return Err(bad("lz4 frame: unknown version or reserved bits set"));
    }
    if flg & 0x01 != 0 {
        return Err(bad("lz4 frame: needs a dictionary"));
    }
    let (independent, block_checksums, content_checksum) = (flg & 0x20 != 0, flg & 0x10 != 0, flg & 0x04 != 0);
    let block_max: usize = match bd >> 4 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Err(bad("lz4 frame: unknown block size")),
    };
    let content_size = if flg & 0x08 != 0 { Some(u64::from_le_bytes(c.take(8)?.try_into().expect("8 bytes"))) } else { None };
    let descriptor = &descriptor_at[..descriptor_at.len() - c.0.len()];
    let with_magic = &input[..input.len() - c.0.len()];
    let checksum = c.byte()?;
    let old = old_checksum && (XxHash32::oneshot(0, with_magic) >> 8) as u8 == checksum;
    if (XxHash32::oneshot(0, descriptor) >> 8) as u8 != checksum && !old {
        return Err(bad("lz4 frame: header checksum does not match"));
    }
    if content_size.is_some_and(|n| n > (max - out.len()) as u64) {
        return Err(too_big);
    }
    let start = out.len();
    loop {
        let word = c.u32()?;
        if word == 0 {
            break; // the end mark
        }
        let len = (word & 0x7fff_ffff) as usize;
        if len > block_max {
            return Err(bad("lz4 block larger than its frame's block size"));
        }
        let data = c.take(len)?;
        if block_checksums && XxHash32::oneshot(0, data) != c.u32()? {
            return Err(bad("lz4 block checksum does not match"));
        }
        let at = out.len();
        if word & 0x8000_0000 != 0 {
            // Stored uncompressed.
            if len > max - at {
                return Err(too_big);
            }
            out.extend_from_slice(data);
            continue;
        }
        if scratch.len() < block_max {
            scratch.resize(block_max, 0);
        }
        let dst = &mut scratch[..block_max];
        let n = if independent {
            lz4_flex::block::decompress_into(data, dst)
        } else {
            lz4_flex::block::decompress_into_with_dict(data, dst, &out[at.saturating_sub(window_bytes).max(start)..])
        };
        let n = n.map_err(|_| bad("lz4 block does not decode"))?;
        if n > max - at {
            return Err(too_big);
        }
        out.extend_from_slice(&dst[..n]);
    }
    if content_checksum && XxHash32::oneshot(0, &out[start..]) != c.u32()? {
        return Err(bad("lz4 frame: content checksum does not match"));
    }
    if content_size.is_some_and(|n| n != (out.len() - start) as u64) {
        return Err(bad("lz4 frame: content size is not the content's"));
    }
    Ok(c.0)
}
