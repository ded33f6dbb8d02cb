//! What a share-partition leader (`share::leader`) reads of a partition this node leads: its
//! leader epoch and bounds, and whole batches below the high watermark (records in memory:
//! the share-partition acquires by the offsets the batch headers name). Reads only.

use super::{Broker, Error};
use bytes::Bytes;

/// A led partition's leader epoch, log start and high watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareBounds {
    pub leader_epoch: i32,
    pub log_start: i64,
    pub high_watermark: i64,
}

impl Broker {
    /// The bounds of a partition led here (its errors a client should get otherwise).
    pub fn share_bounds(&self, name: &str, p: i32) -> Result<ShareBounds, Error> {
        let part = self.led(name, p, -1)?;
        Ok(ShareBounds { leader_epoch: part.replication.leader_epoch, log_start: part.log_start_offset(), high_watermark: part.high_watermark() })
    }

    /// Whole batches from the one holding `offset`, below the high watermark, within
    /// `max_bytes` (at least one batch), each with its base and last offsets.
    pub fn share_read(&mut self, name: &str, p: i32, offset: i64, max_bytes: usize) -> Result<(Bytes, Vec<(i64, i64)>), Error> {
        let part = self.led(name, p, -1)?;
        let hw = part.high_watermark();
        if offset >= hw {
            return Ok((Bytes::new(), Vec::new()));
        }
        let bytes = part.log.read(offset.max(part.log_start_offset()), max_bytes.max(1), hw)?.bytes;
        self.stats.fetched(name, bytes.len());
        Ok((bytes.clone(), batch_spans(&bytes)))
    }
}

/// The (base offset, last offset) of each whole batch in `bytes`, in order.
pub fn batch_spans(bytes: &[u8]) -> Vec<(i64, i64)> {
    let mut spans = Vec::new();
    let mut at = 0usize;
    while bytes.len() >= at + crate::constants::batch_header_bytes {
        let h = &bytes[at..];
        let base = i64::from_be_bytes(h[0..8].try_into().expect("8 bytes"));
        let len = i32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
        let delta = i32::from_be_bytes(h[23..27].try_into().expect("4 bytes"));
        let end = at + crate::constants::batch_log_overhead_bytes + len.max(0) as usize;
        if len <= 0 || end > bytes.len() {
            break;
        }
        spans.push((base, base + delta as i64));
        at = end;
    }
    spans
}

/// The first `n` batches of `bytes` (the acquired ones; the rest are not sent).
pub fn first_batches(bytes: &Bytes, n: usize) -> Bytes {
    let mut at = 0usize;
    for _ in 0..n {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += crate::constants::batch_log_overhead_bytes + len as usize;
    }
    bytes.slice(..at)
}
