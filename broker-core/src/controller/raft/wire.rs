//! Raft messages between voters on the wire: Seedlog's own internal request, sent over the
//! broker's ordinary listener in Kafka's request framing (size, api key, version, correlation
//! id) with [`api_key`], and never answered (the answer is a message of its own, on the
//! responder's own connection). The body, all integers big-endian:
//!
//! ```text
//! from i32 | to i32 | kind i8 | fields of the kind
//!   0 Vote              epoch i32 | pre_vote i8 | last_epoch i32 | end_offset i64
//!   1 VoteResponse      epoch i32 | pre_vote i8 | granted i8 | leader i32 (-1: none)
//!   2 BeginQuorumEpoch  epoch i32
//!   3 Fetch             epoch i32 | fetch_offset i64 | last_fetched_epoch i32
//!   4 FetchResponse     epoch i32 | leader i32 | fetch_offset i64 | high_watermark i64 (-1: none)
//!                       | result i8: 0 Entries (count i32, then per entry: size i32, one stored
//!                       v2 batch) | 1 Diverging (epoch i32, end_offset i64) | 2 FencedEpoch
//!                       | 3 NotLeader | 4 Snapshot (end i64, epoch i32)
//!   5 FetchSnapshot     epoch i32 | end i64 | position i64
//!   6 FetchSnapshotResponse  epoch i32 | leader i32 | snapshot end i64 (-1: none) | snapshot
//!                       epoch i32 | position i64 | size i64 | chunk length i32 | chunk bytes
//! ```
//!
//! Decoding never trusts a length: every count and size is checked against the bytes left, and
//! every entry's batch is checked as a stored batch (CRC included) before it reaches the node.
//! Kafka's own Vote/BeginQuorumEpoch/Fetch RPCs would replace this later (docs/controller.md).

use super::{Body, Entry, FetchResult, Message, NodeId, SnapshotId};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The API key of a Raft message: outside Kafka's range, so no Kafka client sends it by mistake.
pub const api_key: i16 = 10_000;

/// A whole frame (size prefix included) carrying `m`.
pub fn encode_frame(m: &Message) -> Bytes {
    let mut body = BytesMut::new();
    body.put_i16(api_key);
    body.put_i16(0);
    body.put_i32(0);
    body.put_i32(m.from);
    body.put_i32(m.to);
    match &m.body {
        Body::Vote { epoch, pre_vote, last_epoch, end_offset } => {
            body.put_i8(0);
            body.put_i32(*epoch);
            body.put_i8(*pre_vote as i8);
            body.put_i32(*last_epoch);
            body.put_i64(*end_offset);
        }
        Body::VoteResponse { epoch, pre_vote, granted, leader } => {
            body.put_i8(1);
            body.put_i32(*epoch);
            body.put_i8(*pre_vote as i8);
            body.put_i8(*granted as i8);
            body.put_i32(leader.unwrap_or(-1));
        }
        Body::BeginQuorumEpoch { epoch } => {
            body.put_i8(2);
            body.put_i32(*epoch);
        }
        Body::Fetch { epoch, fetch_offset, last_fetched_epoch } => {
            body.put_i8(3);
            body.put_i32(*epoch);
            body.put_i64(*fetch_offset);
            body.put_i32(*last_fetched_epoch);
        }
        Body::FetchResponse { epoch, leader, fetch_offset, high_watermark, result } => {
            body.put_i8(4);
            body.put_i32(*epoch);
            body.put_i32(leader.unwrap_or(-1));
            body.put_i64(*fetch_offset);
            body.put_i64(high_watermark.unwrap_or(-1));
            match result {
                FetchResult::Entries(entries) => {
                    body.put_i8(0);
                    body.put_i32(entries.len() as i32);
                    for e in entries {
                        body.put_i32(e.batch.len() as i32);
                        body.put_slice(&e.batch);
                    }
                }
                FetchResult::Diverging { epoch, end_offset } => {
                    body.put_i8(1);
                    body.put_i32(*epoch);
                    body.put_i64(*end_offset);
                }
                FetchResult::FencedEpoch => body.put_i8(2),
                FetchResult::NotLeader => body.put_i8(3),
                FetchResult::Snapshot(id) => {
                    body.put_i8(4);
                    body.put_i64(id.end);
                    body.put_i32(id.epoch);
                }
            }
        }
        Body::FetchSnapshot { epoch, end, position } => {
            body.put_i8(5);
            body.put_i32(*epoch);
            body.put_i64(*end);
            body.put_i64(*position as i64);
        }
        Body::FetchSnapshotResponse { epoch, leader, snapshot, position, size, chunk } => {
            body.put_i8(6);
            body.put_i32(*epoch);
            body.put_i32(leader.unwrap_or(-1));
            body.put_i64(snapshot.map_or(-1, |s| s.end));
            body.put_i32(snapshot.map_or(-1, |s| s.epoch));
            body.put_i64(*position as i64);
            body.put_i64(*size as i64);
            body.put_i32(chunk.len() as i32);
            body.put_slice(chunk);
        }
    }
    let mut frame = BytesMut::with_capacity(4 + body.len());
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    frame.freeze()
}

/// Reads a frame's body: everything after the 8-byte request header (key, version, correlation).
pub fn decode_body(mut b: Bytes) -> Result<Message, String> {
    let r = &mut b;
    let from = i32_(r)?;
    let to = i32_(r)?;
    let body = match i8_(r)? {
        0 => Body::Vote { epoch: i32_(r)?, pre_vote: bool_(r)?, last_epoch: i32_(r)?, end_offset: i64_(r)? },
        1 => Body::VoteResponse { epoch: i32_(r)?, pre_vote: bool_(r)?, granted: bool_(r)?, leader: id(i32_(r)?) },
        2 => Body::BeginQuorumEpoch { epoch: i32_(r)? },
        3 => Body::Fetch { epoch: i32_(r)?, fetch_offset: i64_(r)?, last_fetched_epoch: i32_(r)? },
        4 => {
            let (epoch, leader, fetch_offset) = (i32_(r)?, id(i32_(r)?), i64_(r)?);
            let high_watermark = Some(i64_(r)?).filter(|&h| h >= 0);
            let result = match i8_(r)? {
                0 => {
                    let count = i32_(r)?;
                    // Each entry takes at least its 4-byte size: a count beyond that is a lie.
                    if count < 0 || count as usize > r.remaining() / 4 {
                        return Err(format!("raft message: {count} entries in {} bytes", r.remaining()));
                    }
                    let mut entries = Vec::with_capacity(count as usize);
                    for _ in 0..count {
                        let size = i32_(r)?;
                        if size < 0 || size as usize > r.remaining() {
                            return Err(format!("raft message: entry of {size} bytes, {} left", r.remaining()));
                        }
                        let batch = r.split_to(size as usize);
                        entries.push(Entry::from_batch(batch).map_err(|e| format!("raft message: entry: {e}"))?);
                    }
                    FetchResult::Entries(entries)
                }
                1 => FetchResult::Diverging { epoch: i32_(r)?, end_offset: i64_(r)? },
                2 => FetchResult::FencedEpoch,
                3 => FetchResult::NotLeader,
                4 => FetchResult::Snapshot(snapshot_id(i64_(r)?, i32_(r)?).ok_or("raft message: a snapshot id that cannot be")?),
                k => return Err(format!("raft message: unknown fetch result {k}")),
            };
            Body::FetchResponse { epoch, leader, fetch_offset, high_watermark, result }
        }
        5 => Body::FetchSnapshot { epoch: i32_(r)?, end: i64_(r)?, position: u64_(r)? },
        6 => {
            let (epoch, leader, end, snap_epoch) = (i32_(r)?, id(i32_(r)?), i64_(r)?, i32_(r)?);
            let snapshot = match (end, snap_epoch) {
                (-1, -1) => None,
                (end, epoch) => Some(snapshot_id(end, epoch).ok_or("raft message: a snapshot id that cannot be")?),
            };
            let (position, size, len) = (u64_(r)?, u64_(r)?, i32_(r)?);
            if len < 0 || len as usize > r.remaining() {
                return Err(format!("raft message: snapshot chunk of {len} bytes, {} left", r.remaining()));
            }
            Body::FetchSnapshotResponse { epoch, leader, snapshot, position, size, chunk: r.split_to(len as usize) }
        }
        k => return Err(format!("raft message: unknown kind {k}")),
    };
    if r.has_remaining() {
        return Err(format!("raft message: {} bytes after its end", r.remaining()));
    }
    Ok(Message { from, to, body })
}

fn snapshot_id(end: i64, epoch: i32) -> Option<SnapshotId> {
    (end >= 1 && epoch >= 1).then_some(SnapshotId { end, epoch })
}

fn u64_(r: &mut Bytes) -> Result<u64, String> {
    let v = i64_(r)?;
    u64::try_from(v).map_err(|_| format!("raft message: {v} is not a position or size"))
}

fn id(v: i32) -> Option<NodeId> {
    (v >= 0).then_some(v)
}

fn need(r: &Bytes, n: usize) -> Result<(), String> {
    if r.remaining() < n {
        return Err(format!("raft message cut short: {n} bytes needed, {} left", r.remaining()));
    }
    Ok(())
}

fn i8_(r: &mut Bytes) -> Result<i8, String> {
    need(r, 1)?;
    Ok(r.get_i8())
}

fn bool_(r: &mut Bytes) -> Result<bool, String> {
    match i8_(r)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(format!("raft message: {v} is not a boolean")),
    }
}

fn i32_(r: &mut Bytes) -> Result<i32, String> {
    need(r, 4)?;
    Ok(r.get_i32())
}

fn i64_(r: &mut Bytes) -> Result<i64, String> {
    need(r, 8)?;
    Ok(r.get_i64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch;

    fn entry(base: i64, epoch: i32) -> Entry {
        let mut b = batch::build(&[b"{\"type\":\"LeaderChange\",\"leader\":1,\"epoch\":2}".as_slice()], 7);
        batch::stamp(&mut b, base, epoch);
        Entry::from_batch(b.into()).unwrap()
    }

    fn every_kind() -> Vec<Body> {
        vec![
            Body::Vote { epoch: 3, pre_vote: true, last_epoch: 2, end_offset: 40 },
            Body::VoteResponse { epoch: 3, pre_vote: false, granted: true, leader: None },
            Body::VoteResponse { epoch: 4, pre_vote: true, granted: false, leader: Some(2) },
            Body::BeginQuorumEpoch { epoch: 9 },
            Body::Fetch { epoch: 5, fetch_offset: 12, last_fetched_epoch: 4 },
            Body::FetchResponse { epoch: 5, leader: Some(1), fetch_offset: 12, high_watermark: Some(12), result: FetchResult::Entries(vec![entry(12, 5), entry(13, 5)]) },
            Body::FetchResponse { epoch: 5, leader: Some(1), fetch_offset: 0, high_watermark: None, result: FetchResult::Entries(Vec::new()) },
            Body::FetchResponse { epoch: 6, leader: None, fetch_offset: 3, high_watermark: None, result: FetchResult::Diverging { epoch: 2, end_offset: 2 } },
            Body::FetchResponse { epoch: 6, leader: Some(0), fetch_offset: 3, high_watermark: None, result: FetchResult::FencedEpoch },
            Body::FetchResponse { epoch: 6, leader: None, fetch_offset: 3, high_watermark: None, result: FetchResult::NotLeader },
            Body::FetchResponse { epoch: 6, leader: Some(0), fetch_offset: 3, high_watermark: Some(9), result: FetchResult::Snapshot(SnapshotId { end: 9, epoch: 4 }) },
            Body::FetchSnapshot { epoch: 6, end: 9, position: 1 << 20 },
            Body::FetchSnapshotResponse { epoch: 6, leader: Some(0), snapshot: Some(SnapshotId { end: 9, epoch: 4 }), position: 3, size: 10, chunk: Bytes::from_static(b"abcd") },
            Body::FetchSnapshotResponse { epoch: 6, leader: None, snapshot: None, position: 0, size: 0, chunk: Bytes::new() },
        ]
    }

    #[test]
    fn every_message_reads_back_as_written() {
        for body in every_kind() {
            let m = Message { from: 1, to: 2, body };
            let frame = encode_frame(&m);
            assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize, frame.len() - 4);
            assert_eq!(i16::from_be_bytes([frame[4], frame[5]]), api_key);
            assert_eq!(decode_body(frame.slice(12..)).unwrap(), m);
        }
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_an_error_or_a_checked_message() {
        for body in every_kind() {
            let frame = encode_frame(&Message { from: 1, to: 2, body });
            let body = frame.slice(12..);
            for cut in 0..body.len() {
                assert!(decode_body(body.slice(..cut)).is_err(), "a message cut at {cut} is refused");
            }
            let mut longer = body.to_vec();
            longer.push(0);
            assert!(decode_body(longer.into()).is_err(), "trailing bytes are refused");
            for i in 0..body.len() {
                let mut bad = body.to_vec();
                bad[i] ^= 0x5a;
                let _ = decode_body(bad.into()); // never a panic
            }
        }
    }
}
