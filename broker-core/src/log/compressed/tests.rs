//! Every codec: round trips through the broker's own encoders and through the other shapes
//! clients write (raw snappy, lz4 with checksums, content size or linked blocks, concatenated
//! frames, zstd streamed without a content size), corrupt and cut frames refused, and sizes
//! past the bound refused whether declared or real.

use super::*;
use crate::log::batch::build_keyed;

const all: [u8; 4] = [codec_gzip, codec_snappy, codec_lz4, codec_zstd];

fn text() -> Vec<u8> {
    (0..3000u32).flat_map(|i| format!("seedlog record {i} ").into_bytes()).collect()
}

#[test]
fn every_codec_round_trips_through_compress() {
    let text = text();
    for codec in all {
        let packed = compress(codec, &text).unwrap();
        assert!(packed.len() < text.len() / 2, "codec {codec} compresses: {} of {}", packed.len(), text.len());
        assert_eq!(decompress(codec, &packed).unwrap(), text, "codec {codec}");
        assert_eq!(decompress(codec, &compress(codec, b"").unwrap()).unwrap(), b"", "codec {codec}, nothing");
    }
    assert_eq!(compress(5, b"x"), Err(BatchError::UnsupportedCompression(5)));
}

#[test]
fn gzip_and_both_snappy_forms_round_trip() {
    let text = b"seedlog ".repeat(1000);
    let raw = snap::raw::Encoder::new().compress_vec(&text).unwrap();
    assert_eq!(decompress(codec_snappy, &raw).unwrap(), text);
    let mut framed = xerial_magic.to_vec();
    for half in text.chunks(text.len() / 2) {
        let block = snap::raw::Encoder::new().compress_vec(half).unwrap();
        framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
        framed.extend_from_slice(&block);
    }
    assert_eq!(decompress(codec_snappy, &framed).unwrap(), text);
    let mut two = compress(codec_gzip, &text[..100]).unwrap();
    two.extend(compress(codec_gzip, &text[100..]).unwrap());
    assert_eq!(decompress(codec_gzip, &two).unwrap(), text, "concatenated gzip members");
}

#[test]
fn lz4_frames_of_every_shape_clients_write_decode() {
    use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
    let text = text();
    let frame = |info: FrameInfo, data: &[u8]| {
        let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    // librdkafka's LZ4F: content size and checksum; linked blocks (LZ4F's default); 4 MiB blocks.
    let checked = FrameInfo::new().content_size(Some(text.len() as u64)).content_checksum(true).block_checksums(true);
    let linked = FrameInfo::new().block_mode(BlockMode::Linked).block_size(BlockSize::Max256KB);
    for info in [checked, linked, FrameInfo::new().block_size(BlockSize::Max4MB)] {
        assert_eq!(decompress(codec_lz4, &frame(info, &text)).unwrap(), text);
    }
    let mut two = frame(FrameInfo::new(), &text[..1000]);
    two.extend(frame(FrameInfo::new(), &text[1000..]));
    assert_eq!(decompress(codec_lz4, &two).unwrap(), text, "concatenated frames");
    // Kafka's own writer: independent 64 KiB blocks, no checksums, no content size.
    let ours = compress(codec_lz4, &text).unwrap();
    assert_eq!(&ours[..4], lz4::frame_magic.to_le_bytes());
    assert_eq!((ours[4], ours[5]), (0x60, 0x40), "FLG: version 01, independent blocks; BD: 64 KiB");
}

#[test]
fn lz4_frames_are_read_strictly_and_cheaply() {
    let text = text();
    let ours = compress(codec_lz4, &text).unwrap();
    let end_mark = ours.len() - 4;
    assert_eq!(ours[end_mark..], [0, 0, 0, 0]);
    assert!(decompress(codec_lz4, &ours[..end_mark]).is_err(), "a frame without its end mark");
    let mut header = ours.clone();
    header[5] ^= 0x10; // BD: another block size, so the header checksum no longer matches
    assert_eq!(decompress(codec_lz4, &header), Err(BatchError::BadCompression("lz4 frame: header checksum does not match")));
    // 60,000 one-literal blocks in frames naming 4 MiB blocks: each block costs its own bytes,
    // not a 4 MiB buffer (a buffer per block would zero 240 GB).
    let frame_of = |blocks: usize| {
        let mut f = lz4::frame_magic.to_le_bytes().to_vec();
        let descriptor = [0x60u8, 0x70];
        f.extend_from_slice(&descriptor);
        f.push((twox_hash::XxHash32::oneshot(0, &descriptor) >> 8) as u8);
        for _ in 0..blocks {
            f.extend_from_slice(&[2, 0, 0, 0, 0x10, b'x']); // a 2-byte block: one literal
        }
        f.extend_from_slice(&[0, 0, 0, 0]);
        f
    };
    let many: Vec<u8> = (0..100).flat_map(|_| frame_of(600)).collect();
    assert_eq!(decompress(codec_lz4, &many).unwrap(), vec![b'x'; 60_000]);
}

#[test]
fn zstd_streamed_without_a_content_size_and_concatenated_frames_decode() {
    let text = text();
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
    for chunk in text.chunks(700) {
        enc.write_all(chunk).unwrap();
    }
    let streamed = enc.finish().unwrap();
    assert!(matches!(zstd::zstd_safe::get_frame_content_size(&streamed), Ok(None)), "no content size declared");
    assert_eq!(decompress(codec_zstd, &streamed).unwrap(), text);
    let mut two = compress(codec_zstd, &text[..1000]).unwrap();
    two.extend(compress(codec_zstd, &text[1000..]).unwrap());
    assert_eq!(decompress(codec_zstd, &two).unwrap(), text, "concatenated frames");
}

#[test]
fn corrupt_and_cut_frames_are_refused() {
    let text = text();
    for codec in all {
        let packed = compress(codec, &text).unwrap();
        for cut in [1, 5, packed.len() / 2, packed.len() - 1] {
            let r = decompress(codec, &packed[..cut]);
            assert!(r.is_err(), "codec {codec}, cut at {cut}: refused, got {:?}", r.map(|o| o.len()));
        }
        let mut trailing = packed.clone();
        trailing.extend_from_slice(b"trailing");
        assert!(decompress(codec, &trailing).is_err(), "codec {codec}: bytes after the stream refused");
        assert!(matches!(decompress(codec, b"not compressed at all"), Err(BatchError::BadCompression(_))), "codec {codec}: garbage");
    }
    // Damage inside the compressed data: an lz4 and a zstd frame with content checksums
    // notice it (without one, the batch's CRC-32C and the record walk are what notice).
    let mut lz = {
        use lz4_flex::frame::{FrameEncoder, FrameInfo};
        let mut enc = FrameEncoder::with_frame_info(FrameInfo::new().content_checksum(true), Vec::new());
        enc.write_all(&text).unwrap();
        enc.finish().unwrap()
    };
    let mid = lz.len() / 2;
    lz[mid] ^= 0x55;
    assert!(matches!(decompress(codec_lz4, &lz), Err(BatchError::BadCompression(_))));
    let mut zs = {
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        enc.write_all(&text).unwrap();
        enc.finish().unwrap()
    };
    let mid = zs.len() / 2;
    zs[mid] ^= 0x55;
    assert!(matches!(decompress(codec_zstd, &zs), Err(BatchError::BadCompression(_))));
    assert_eq!(decompress(3 + 4, b""), Err(BatchError::UnsupportedCompression(7)));
}

#[test]
fn declared_sizes_over_the_bound_are_refused_before_allocation() {
    // A raw snappy block declaring 4 GiB - 1 (varint ff ff ff ff 0f) and nothing else.
    let bomb = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
    assert_eq!(decompress(codec_snappy, &bomb), Err(too_big));
    let mut framed = xerial_magic.to_vec();
    framed.extend_from_slice(&(bomb.len() as u32).to_be_bytes());
    framed.extend_from_slice(&bomb);
    assert_eq!(decompress(codec_snappy, &framed), Err(too_big));
    // An lz4 frame and a zstd frame whose headers declare more content than the bound.
    let text = text();
    let lz = {
        use lz4_flex::frame::{FrameEncoder, FrameInfo};
        let mut enc = FrameEncoder::with_frame_info(FrameInfo::new().content_size(Some(text.len() as u64)), Vec::new());
        enc.write_all(&text).unwrap();
        enc.finish().unwrap()
    };
    assert_eq!(decompress_within(codec_lz4, &lz, text.len() - 1), Err(too_big));
    let zs = compress(codec_zstd, &text).unwrap();
    assert_eq!(decompress_within(codec_zstd, &zs, text.len() - 1), Err(too_big));
    // A 13-byte zstd frame asking for a 1 GiB window (descriptor 0xA0: 2^(10+20)), one raw
    // block of one byte: refused as its header is read, not allocated.
    let window_bomb = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 0x09, 0x00, 0x00, b'x'];
    assert!(matches!(decompress(codec_zstd, &window_bomb), Err(BatchError::BadCompression(_))));
    let mut small_window = window_bomb;
    small_window[5] = 0x00; // 1 KiB window: the same frame decodes
    assert_eq!(decompress(codec_zstd, &small_window).unwrap(), b"x");
}

#[test]
fn streams_that_inflate_past_the_bound_stop_at_the_bound() {
    let zeros = vec![0u8; 1 << 20];
    for codec in all {
        let packed = compress(codec, &zeros).unwrap();
        assert!(packed.len() < 64 << 10, "codec {codec}: {} bytes", packed.len());
        assert_eq!(decompress_within(codec, &packed, zeros.len() - 1), Err(too_big), "codec {codec}");
        assert_eq!(decompress_within(codec, &packed, zeros.len()).unwrap().len(), zeros.len(), "codec {codec}: at the bound");
    }
    // Streamed, so no size is declared: only the output bound stops them.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    for chunk in zeros.chunks(4096) {
        enc.write_all(chunk).unwrap();
    }
    let streamed = enc.finish().unwrap();
    assert_eq!(decompress_within(codec_zstd, &streamed, 4095), Err(too_big));
    assert_eq!(decompress(codec_gzip, b"not gzip").map(|_| ()), Err(BatchError::BadCompression("gzip stream does not decode")));
}

#[test]
fn a_batch_in_every_codec_validates_as_its_plain_twin() {
    let kv: Vec<batch::KeyValue> = vec![(Some(b"k1"), Some(b"one")), (Some(b"k2"), None), (None, Some(b"three"))];
    let plain = build_keyed(&kv, 1_000);
    let want = batch::validate(&plain, 1 << 20).unwrap();
    for codec in all {
        let b = with_codec(&plain, codec).unwrap();
        let h = batch::validate(&b, 1 << 20).unwrap_or_else(|e| panic!("codec {codec}: {e}"));
        assert_eq!((h.compression(), h.records_count, h.last_offset_delta, h.max_timestamp), (codec, 3, 2, want.max_timestamp));
        assert!(with_codec(&b, codec_gzip).is_err(), "compressed once only");
        // A batch whose records do not decode is refused on append with its codec's reason.
        let mut bad = batch::reframe(&b, codec, b"\x00garbage, not a stream of any codec");
        assert!(matches!(batch::validate(&bad, 1 << 20), Err(BatchError::BadCompression(_))), "codec {codec}");
        // Records that decompress but are not the header's records are refused as such.
        bad = batch::reframe(&b, codec, &compress(codec, b"\x02\x00").unwrap());
        assert!(matches!(batch::validate(&bad, 1 << 20), Err(BatchError::BadRecords(_))), "codec {codec}");
    }
}

#[test]
fn fetched_batches_of_every_codec_decode_one_after_another() {
    let kv: Vec<batch::KeyValue> = vec![(Some(b"k"), Some(b"v")), (None, None)];
    let mut fetched = Vec::new();
    for (i, codec) in [codec_none, codec_gzip, codec_snappy, codec_lz4, codec_zstd].into_iter().enumerate() {
        let mut b = with_codec(&build_keyed(&kv, 1_000), codec).unwrap_or_else(|_| build_keyed(&kv, 1_000));
        batch::stamp(&mut b, 2 * i as i64, 0);
        fetched.extend_from_slice(&b);
    }
    let mut bytes = bytes::Bytes::from(fetched);
    let mut offsets = Vec::new();
    while !bytes.is_empty() {
        let set = decode_batch(&mut bytes).unwrap();
        offsets.extend(set.records.iter().map(|r| (r.offset, r.key.is_some(), r.value.is_some())));
    }
    assert_eq!(offsets, (0..10).map(|o| (o, o % 2 == 0, o % 2 == 0)).collect::<Vec<_>>());
    let mut cut = bytes::Bytes::from(build_keyed(&kv, 1_000)).slice(..70);
    assert!(decode_batch(&mut cut).is_err(), "a partial batch");
}
