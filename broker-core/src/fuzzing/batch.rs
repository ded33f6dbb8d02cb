//! Target `record_batch`: one record batch of any bytes through everything the broker does
//! with a batch it did not write itself — append validation ([`batch::validate`]), the stored
//! checks reads and recovery make ([`batch::validate_stored`], [`batch::whole_batches`]), and
//! compaction's look inside (decompression of every codec, the key map, the rewrite in the
//! batch's codec).
//!
//! The first input byte is flags: bit 0 sets the batchLength field to the bytes present, bit 1
//! recomputes the CRC-32C, so the fuzzer gets past both checks to the records. Promises
//! checked: no panic, no allocation past the decompression bound; a batch append accepts is
//! accepted again when read back, compaction can read its records (their count is the
//! header's), and a batch compaction rewrites is itself a valid stored batch over the same
//! offsets.

use crate::constants::{batch_header_bytes, batch_log_overhead_bytes, message_bytes_max};
use crate::log::batch::{self, BatchHeader};
use crate::log::clean::{self, KeyMap, Outcome, Tombstones};

/// The key map's budget: room for every key a 1 MiB batch can hold.
const key_map_bytes: usize = 64 << 20;

pub fn run(data: &[u8]) {
    let Some((&flags, bytes)) = data.split_first() else { return };
    let mut b = bytes.to_vec();
    if b.len() >= batch_header_bytes {
        if flags & 1 != 0 {
            let len = (b.len() - batch_log_overhead_bytes) as i32;
            b[8..12].copy_from_slice(&len.to_be_bytes());
        }
        if flags & 2 != 0 {
            let crc = crc32c::crc32c(&b[21..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
        }
    }
    // Readers of stored bytes take anything without panicking.
    let _ = batch::whole_batches(&b);
    let stored = batch::validate_stored(&b);
    if let Ok(h) = &stored {
        look_inside(&b, h);
    }
    let Ok(h) = batch::validate(&b, message_bytes_max) else { return };
    // What append stores: the batch, its max timestamp made the records' newest.
    if batch::read_header(&b).expect("validated").max_timestamp != h.max_timestamp {
        batch::set_max_timestamp(&mut b, h.max_timestamp);
    }
    let again = batch::validate_stored(&b).unwrap_or_else(|e| panic!("append accepted a batch its readers refuse: {e}"));
    assert_eq!(again, BatchHeader { max_timestamp: again.max_timestamp, ..h });
    assert_eq!(batch::whole_batches(&b).expect("a valid batch splits"), [again]);
    let records = clean::records(&b).unwrap_or_else(|e| panic!("append accepted a batch compaction cannot read: {e}"));
    assert_eq!(records.len(), h.records_count as usize, "records decoded vs the header's count");
}

/// Compaction's view of a batch that passes the stored checks: a key map of its own keys (so
/// every key but the last of each is superseded), then its fate; a rewrite must be a valid
/// stored batch over the same offsets.
fn look_inside(b: &[u8], h: &BatchHeader) {
    let readable = clean::records(b).is_ok();
    let mut map = KeyMap::new(key_map_bytes);
    if clean::map_batch(&mut map, b).is_err() {
        return;
    }
    map.settle();
    let tombstones = Tombstones { reached: h.base_offset.saturating_add(h.last_offset_delta as i64 + 1), horizon_ms: i64::MAX };
    let Ok(outcome) = clean::clean_batch(b, h, &map, tombstones) else { return };
    if let Outcome::Rewritten(nb) = outcome {
        let nh = batch::validate_stored(&nb).unwrap_or_else(|e| panic!("compaction rewrote a batch into an invalid one: {e}"));
        assert_eq!((nh.base_offset, nh.last_offset_delta), (h.base_offset, h.last_offset_delta), "a rewrite keeps its offsets");
        assert!(nh.records_count < h.records_count, "a rewrite drops records");
        assert_eq!(nh.compression(), h.compression(), "a rewrite keeps its codec");
        // A batch whose records read (all that append lets in) is rewritten into one that does.
        if readable {
            let kept = clean::records(&nb).unwrap_or_else(|e| panic!("compaction rewrote a batch it cannot read back: {e}"));
            assert_eq!(kept.len(), nh.records_count as usize, "records of the rewrite vs its count");
        }
    }
}
