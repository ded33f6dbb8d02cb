//! Producer-state snapshot files, Kafka's `.snapshot` (`ProducerSnapshot.json`, version 1): the
//! idempotent and transactional producers' state after every batch below the offset the file
//! is named for, so a restart or a truncation replays only the batches after the newest usable
//! snapshot instead of the whole log (docs/transactions.md, 1.2–1.5).
//!
//! Layout, big-endian: version i16 (1) | CRC-32C u32 of every byte after it | entry count i32 |
//! entries of 46 bytes — producer id i64, epoch i16, last sequence i32, last offset i64 (-1:
//! no batch), offset delta i32, timestamp i64, coordinator epoch i32, current transaction's
//! first offset i64 (-1: none open). Entries are written in producer-id order, so a seed's files
//! are byte-identical from run to run (Kafka's come from a hash map).
//!
//! Bytes and names only, no IO. Not yet wired: the log does not write or load snapshots yet
//! (issue 27, which needs them first).

/// The only version written and read.
const version: i16 = 1;
/// Bytes before the first entry: version, CRC, count.
const header_bytes: usize = 10;
/// Bytes per entry.
pub const entry_bytes: usize = 46;
/// Where the CRC sits, and where the bytes it covers start.
const crc_at: usize = 2;
const covered_from: usize = 6;

/// One producer's state in a snapshot (only its last batch: Kafka's version 1 keeps no more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub producer_id: i64,
    pub epoch: i16,
    pub last_sequence: i32,
    /// The last offset of its last batch; -1 when it has none (only markers remain).
    pub last_offset: i64,
    /// Last minus first offset of that batch (its first sequence is `last_sequence - delta`).
    pub offset_delta: i32,
    pub timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of its transaction still open on this partition; -1 for none.
    pub current_txn_first_offset: i64,
}

/// Why a snapshot file cannot be used (the log then tries the next older one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot of {0} bytes is shorter than its 10-byte header")]
    TooShort(usize),
    #[error("snapshot version {0}; only 1 is known")]
    Version(i16),
    #[error("snapshot CRC-32C is {stored:#010x} but its bytes hash to {computed:#010x}")]
    Crc { stored: u32, computed: u32 },
    #[error("snapshot says {count} entries but holds {bytes} bytes of them")]
    Length { count: i32, bytes: usize },
}

/// The file name of the snapshot at `offset`: 20 digits, as a segment's.
pub fn file_name(offset: i64) -> String {
    format!("{offset:020}.snapshot")
}

/// The offset a snapshot file is named for, if `name` is one.
pub fn offset_of(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(".snapshot")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// The file's bytes for `entries`, in producer-id order.
pub fn encode(entries: &[SnapshotEntry]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| e.producer_id);
    let mut b = Vec::with_capacity(header_bytes + entry_bytes * sorted.len());
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&(sorted.len() as i32).to_be_bytes());
    for e in &sorted {
        b.extend_from_slice(&e.producer_id.to_be_bytes());
        b.extend_from_slice(&e.epoch.to_be_bytes());
        b.extend_from_slice(&e.last_sequence.to_be_bytes());
        b.extend_from_slice(&e.last_offset.to_be_bytes());
        b.extend_from_slice(&e.offset_delta.to_be_bytes());
        b.extend_from_slice(&e.timestamp.to_be_bytes());
        b.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        b.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&b[covered_from..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// The entries of a snapshot file, checked: version, then CRC, then length (Kafka's order).
pub fn decode(b: &[u8]) -> Result<Vec<SnapshotEntry>, SnapshotError> {
    if b.len() < header_bytes {
        return Err(SnapshotError::TooShort(b.len()));
    }
    let v = i16::from_be_bytes([b[0], b[1]]);
    if v != version {
        return Err(SnapshotError::Version(v));
    }
    let stored = u32::from_be_bytes(b[crc_at..crc_at + 4].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&b[covered_from..]);
    if stored != computed {
        return Err(SnapshotError::Crc { stored, computed });
    }
    let count = i32::from_be_bytes(b[6..10].try_into().expect("4 bytes"));
    let body = &b[header_bytes..];
    if usize::try_from(count).ok().and_then(|n| n.checked_mul(entry_bytes)) != Some(body.len()) {
        return Err(SnapshotError::Length { count, bytes: body.len() });
    }
    let at = |e: &[u8], i: usize, n: usize| -> i64 {
        let mut v = [0u8; 8];
        v[8 - n..].copy_from_slice(&e[i..i + n]);
        // Sign-extend the narrower fields.
        i64::from_be_bytes(v) << (64 - 8 * n) >> (64 - 8 * n)
    };
    Ok(body
        .chunks_exact(entry_bytes)
        .map(|e| SnapshotEntry {
            producer_id: at(e, 0, 8),
            epoch: at(e, 8, 2) as i16,
            last_sequence: at(e, 10, 4) as i32,
            last_offset: at(e, 14, 8),
            offset_delta: at(e, 22, 4) as i32,
            timestamp: at(e, 26, 8),
            coordinator_epoch: at(e, 34, 4) as i32,
            current_txn_first_offset: at(e, 38, 8),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(producer_id: i64) -> SnapshotEntry {
        SnapshotEntry { producer_id, epoch: 2, last_sequence: 9, last_offset: 41, offset_delta: 4, timestamp: 1_000, coordinator_epoch: -1, current_txn_first_offset: -1 }
    }

    #[test]
    fn the_layout_is_kafkas_version_1() {
        let b = encode(&[entry(7)]);
        assert_eq!(b.len(), 10 + 46);
        #[rustfmt::skip]
        let expected_entry: [u8; 46] = [
            0, 0, 0, 0, 0, 0, 0, 7,              // producer id
            0, 2,                                // epoch
            0, 0, 0, 9,                          // last sequence
            0, 0, 0, 0, 0, 0, 0, 41,             // last offset
            0, 0, 0, 4,                          // offset delta
            0, 0, 0, 0, 0, 0, 0x03, 0xe8,        // timestamp 1000
            0xff, 0xff, 0xff, 0xff,              // coordinator epoch -1
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // no open transaction
        ];
        assert_eq!(&b[..2], &[0, 1], "version 1");
        assert_eq!(&b[6..10], &[0, 0, 0, 1], "one entry");
        assert_eq!(&b[10..], &expected_entry);
        assert_eq!(u32::from_be_bytes(b[2..6].try_into().unwrap()), crc32c::crc32c(&b[6..]));
        assert_eq!(decode(&b), Ok(vec![entry(7)]));
    }

    #[test]
    fn entries_go_in_producer_id_order_and_come_back_whole() {
        let mut open = entry(3);
        open.current_txn_first_offset = 17;
        open.coordinator_epoch = 5;
        let b = encode(&[entry(9), open, entry(-0x7fff_0000)]);
        assert_eq!(decode(&b), Ok(vec![entry(-0x7fff_0000), open, entry(9)]));
        assert_eq!(decode(&encode(&[])), Ok(vec![]));
    }

    #[test]
    fn a_damaged_file_is_refused_with_why() {
        let b = encode(&[entry(1), entry(2)]);
        assert_eq!(decode(&b[..8]), Err(SnapshotError::TooShort(8)));
        let mut v2 = b.clone();
        v2[1] = 2;
        assert_eq!(decode(&v2), Err(SnapshotError::Version(2)));
        let mut flipped = b.clone();
        flipped[30] ^= 1;
        assert!(matches!(decode(&flipped), Err(SnapshotError::Crc { .. })));
        // A torn write: the tail is missing, so the CRC (over what is there) fails first.
        assert!(matches!(decode(&b[..b.len() - 10]), Err(SnapshotError::Crc { .. })));
        // A count that disagrees with the bytes, under a CRC that holds.
        let mut wrong = b.clone();
        wrong[6..10].copy_from_slice(&3i32.to_be_bytes());
        let crc = crc32c::crc32c(&wrong[6..]);
        wrong[2..6].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(decode(&wrong), Err(SnapshotError::Length { count: 3, bytes: 92 }));
    }

    #[test]
    fn names_carry_the_offset_in_20_digits() {
        assert_eq!(file_name(1234), "00000000000000001234.snapshot");
        assert_eq!(offset_of("00000000000000001234.snapshot"), Some(1234));
        assert_eq!(offset_of("00000000000000001234.log"), None);
        assert_eq!(offset_of("1234.snapshot"), None);
    }
}
