//! A segment's aborted-transaction index, Kafka's `.txnindex`: one fixed 34-byte entry per
//! transaction aborted in the segment (the one holding its ABORT marker), big-endian, no
//! header — version i16 (0), producer id i64, first offset i64 (the transaction's first record
//! in this partition), last offset i64 (the abort marker's offset), last stable offset i64 (the
//! partition's LSO when the abort was appended). A read_committed Fetch lists the aborted
//! transactions its range overlaps so the consumer drops their records (docs/transactions.md,
//! 1.4 and 2.2).
//!
//! Bytes and the search rule only, no IO: the log writes entries as it appends abort markers
//! and rebuilds the file on recovery and truncation. Not yet wired: transactions are issue 27,
//! and this is one of its first bricks.

/// Bytes per entry.
pub const entry_bytes: usize = 34;
/// The entry version written, and the only one read.
const version: i16 = 0;

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The ABORT marker's offset.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

/// Why an index's bytes cannot be trusted (the log then rebuilds it from the segment).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnIndexError {
    #[error("entry {0} has version {1}; only 0 is known")]
    Version(usize, i16),
    #[error("entry {0} ends at offset {1}, not after the previous entry")]
    OutOfOrder(usize, i64),
    #[error("entry {0} is not inside its segment or its transaction (first {1}, last {2}, last stable {3}, segment base {4})")]
    Inconsistent(usize, i64, i64, i64, i64),
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; entry_bytes] {
        let mut b = [0u8; entry_bytes];
        b[0..2].copy_from_slice(&version.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    fn decode(b: &[u8; entry_bytes]) -> (i16, AbortedTxn) {
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let txn = AbortedTxn { producer_id: i64_at(2), first_offset: i64_at(10), last_offset: i64_at(18), last_stable_offset: i64_at(26) };
        (i16::from_be_bytes([b[0], b[1]]), txn)
    }
}

/// The entries of the index of the segment based at `base`. A torn last entry (a crash while
/// it was written) is left out: the second value is how many bytes hold whole entries, where
/// the file is to be cut. An entry that cannot be right is an error for the whole file.
pub fn decode(bytes: &[u8], base: i64) -> Result<(Vec<AbortedTxn>, usize), TxnIndexError> {
    let whole = bytes.len() / entry_bytes * entry_bytes;
    let mut out: Vec<AbortedTxn> = Vec::with_capacity(whole / entry_bytes);
    for (i, chunk) in bytes[..whole].chunks_exact(entry_bytes).enumerate() {
        let (v, t) = AbortedTxn::decode(chunk.try_into().expect("whole entries"));
        if v != version {
            return Err(TxnIndexError::Version(i, v));
        }
        // The marker is in this segment and ends its transaction, whose first batch came before
        // it (so zeros, a write a crash dropped before a later one it kept, are no entry); the
        // LSO at the abort is at most the offset after the marker.
        if t.last_offset < base || t.first_offset >= t.last_offset || t.last_stable_offset > t.last_offset + 1 || t.first_offset < 0 {
            return Err(TxnIndexError::Inconsistent(i, t.first_offset, t.last_offset, t.last_stable_offset, base));
        }
        if out.last().is_some_and(|prev| prev.last_offset >= t.last_offset) {
            return Err(TxnIndexError::OutOfOrder(i, t.last_offset));
        }
        out.push(t);
    }
    Ok((out, whole))
}

/// The entries of one segment's index that a read_committed fetch from `fetch_offset` below
/// `upper` (its last stable offset) must list: those whose transaction overlaps the range
/// (ended at or after `fetch_offset`, started before `upper`). `true` with them: the search
/// may stop here, since an entry whose LSO was already at or past `upper` shows that no
/// transaction aborted later started below `upper` (Kafka's `collectAbortedTxns`).
pub fn overlapping(entries: &[AbortedTxn], fetch_offset: i64, upper: i64) -> (Vec<AbortedTxn>, bool) {
    let mut found = Vec::new();
    for t in entries {
        if t.last_offset >= fetch_offset && t.first_offset < upper {
            found.push(*t);
        }
        // Checked after the entry is taken: the LSO at an abort leaves out the aborted
        // transaction itself, which may still overlap the range.
        if t.last_stable_offset >= upper {
            return (found, true);
        }
    }
    (found, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn { producer_id, first_offset: first, last_offset: last, last_stable_offset: lso }
    }

    #[test]
    fn an_entry_is_kafkas_34_bytes() {
        let bytes = txn(0x0102, 5, 9, 3).encode();
        #[rustfmt::skip]
        let expected: [u8; 34] = [
            0, 0,                          // version 0
            0, 0, 0, 0, 0, 0, 0x01, 0x02,  // producer id
            0, 0, 0, 0, 0, 0, 0, 5,        // first offset
            0, 0, 0, 0, 0, 0, 0, 9,        // last offset: the abort marker
            0, 0, 0, 0, 0, 0, 0, 3,        // last stable offset at the abort
        ];
        assert_eq!(bytes, expected);
        assert_eq!(decode(&bytes, 0), Ok((vec![txn(0x0102, 5, 9, 3)], 34)));
    }

    #[test]
    fn a_torn_tail_is_cut_and_a_wrong_entry_refuses_the_file() {
        let entries = [txn(1, 0, 4, 0), txn(2, 3, 8, 3)];
        let mut bytes: Vec<u8> = entries.iter().flat_map(|t| t.encode()).collect();
        bytes.extend_from_slice(&txn(3, 9, 12, 9).encode()[..20]);
        assert_eq!(decode(&bytes, 0), Ok((entries.to_vec(), 68)), "the torn third entry is left out");
        let mut v1 = txn(1, 0, 4, 0).encode();
        v1[1] = 1;
        assert_eq!(decode(&v1, 0), Err(TxnIndexError::Version(0, 1)));
        let backwards: Vec<u8> = [txn(1, 0, 8, 0), txn(2, 3, 4, 3)].iter().flat_map(|t| t.encode()).collect();
        assert_eq!(decode(&backwards, 0), Err(TxnIndexError::OutOfOrder(1, 4)));
        assert!(matches!(decode(&txn(1, 0, 4, 0).encode(), 10), Err(TxnIndexError::Inconsistent(0, ..))), "a marker below the segment's base");
        assert!(matches!(decode(&txn(1, 6, 4, 0).encode(), 0), Err(TxnIndexError::Inconsistent(..))), "a transaction that ends before it starts");
        assert!(matches!(decode(&[0u8; 34], 0), Err(TxnIndexError::Inconsistent(0, 0, 0, 0, 0))), "zeros a crash left where a write was dropped");
        assert!(matches!(decode(&txn(1, 2, 4, 9).encode(), 0), Err(TxnIndexError::Inconsistent(..))), "an LSO past the marker");
    }

    #[test]
    fn a_fetch_lists_the_aborts_its_range_overlaps_and_stops_at_a_stable_one() {
        // p1 aborted [2, 5], p2 aborted [4, 10] (p1's transaction kept the LSO at 2 until it
        // ended), p3 aborted [12, 14] after the LSO had reached 12.
        let entries = [txn(1, 2, 5, 2), txn(2, 4, 10, 4), txn(3, 12, 14, 12)];
        assert_eq!(overlapping(&entries, 0, 11), (vec![entries[0], entries[1]], true), "p3's LSO 12 ≥ 11: nothing later can start below 11");
        assert_eq!(overlapping(&entries, 6, 11), (vec![entries[1]], true), "p1 ended before the fetch offset");
        assert_eq!(overlapping(&entries, 0, 3), (vec![entries[0]], true), "p2 started at 4, past the range; its LSO 4 ≥ 3 stops the search");
        assert_eq!(overlapping(&entries, 11, 20), (vec![entries[2]], false), "keep searching the next segment");
        // Alone, a transaction's abort leaves the LSO past its marker: it is listed, then the
        // search stops.
        let alone = [txn(4, 2, 5, 6)];
        assert_eq!(overlapping(&alone, 0, 4), (alone.to_vec(), true));
    }
}
