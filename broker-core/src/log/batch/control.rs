//! Transaction markers: the control batches that end a transaction on a partition (KIP-98).
//! A marker is an uncompressed v2 batch with the transactional (0x10) and control (0x20)
//! attribute bits set, the transaction's producer id and epoch, base sequence -1 and one
//! record whose key says what it ends — version i16 (0), type i16 (0 ABORT, 1 COMMIT; 2 and up
//! are KRaft's own) — and whose value carries version i16 (0) and the coordinator epoch i32
//! (Kafka's `ControlRecordType` and `EndTransactionMarker`). With an empty header section the
//! record is 17 bytes and the batch 78.
//!
//! Bytes only, as the rest of `batch`: building a marker (what a partition leader appends for
//! WriteTxnMarkers) and reading one back (replay, the transaction index, the cleaner). Not yet
//! appended by anything: transactions are issue 27, and this is its first brick.

use super::*;

/// The control record types of transaction markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Abort,
    Commit,
}

impl MarkerKind {
    fn code(self) -> i16 {
        match self {
            MarkerKind::Abort => 0,
            MarkerKind::Commit => 1,
        }
    }
}

/// What a control batch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// A transaction marker, with the epoch of the coordinator that wrote it.
    Marker { kind: MarkerKind, coordinator_epoch: i32 },
    /// Another control type (KRaft's leader change, snapshot and voter records): not a
    /// transaction's end, nothing for producer state.
    Other(i16),
}

/// Key and value versions this broker writes; readers take any version at or above 0 whose
/// bytes hold the fields they need, as Kafka's do.
const key_version: i16 = 0;
const value_version: i16 = 0;
const key_bytes: usize = 4;
/// A marker batch's size: the 61-byte batch header and its 17-byte record.
pub const marker_bytes: usize = 78;
const value_bytes: usize = 6;

/// A marker batch ending `producer_id`'s transaction at `producer_epoch`, written by a
/// coordinator in `coordinator_epoch`, with `timestamp`. Base offset and leader epoch are
/// stamped on append as for any batch.
pub fn build_marker(producer_id: i64, producer_epoch: i16, kind: MarkerKind, coordinator_epoch: i32, timestamp: i64) -> Vec<u8> {
    let key = [key_version.to_be_bytes(), kind.code().to_be_bytes()].concat();
    let value = [&value_version.to_be_bytes()[..], &coordinator_epoch.to_be_bytes()[..]].concat();
    let mut b = build_keyed(&[(Some(&key), Some(&value))], timestamp);
    b[attributes_at..attributes_at + 2].copy_from_slice(&0x30i16.to_be_bytes());
    b[producer_id_at..producer_id_at + 8].copy_from_slice(&producer_id.to_be_bytes());
    b[producer_epoch_at..producer_epoch_at + 2].copy_from_slice(&producer_epoch.to_be_bytes());
    let crc = crc32c::crc32c(&b[attributes_at..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// What the control batch `b` (whole, validated) says. A control batch holds one record; one
/// whose key or value is too short for its fields is malformed (Kafka refuses it the same way).
pub fn read_control(b: &[u8]) -> Result<Control, BatchError> {
    let h = read_header(b)?;
    if !h.is_control() || h.compression() != 0 || h.records_count != 1 {
        return Err(BatchError::BadRecords("a control batch holds one uncompressed control record"));
    }
    let rec = &b[batch_header_bytes..];
    let mut p = 0;
    let len = varint(rec, &mut p).ok_or(BatchError::BadRecords("truncated control record"))?;
    let end = p.checked_add(usize::try_from(len).map_err(|_| BatchError::BadRecords("negative control record length"))?).filter(|&e| e <= rec.len());
    let rec = &rec[..end.ok_or(BatchError::BadRecords("control record runs past its batch"))?];
    p += 1; // attributes
    varlong(rec, &mut p).ok_or(BatchError::BadRecords("bad control record timestamp"))?;
    varint(rec, &mut p).ok_or(BatchError::BadRecords("bad control record offset delta"))?;
    let key = field(rec, &mut p).ok_or(BatchError::BadRecords("a control record's key is at least 4 bytes"))?;
    if key.len() < key_bytes || be_i16(key, 0) < 0 {
        return Err(BatchError::BadRecords("a control record's key is at least 4 bytes of version 0 or later"));
    }
    let kind = match be_i16(key, 2) {
        0 => MarkerKind::Abort,
        1 => MarkerKind::Commit,
        other => return Ok(Control::Other(other)),
    };
    let value = field(rec, &mut p).ok_or(BatchError::BadRecords("a transaction marker's value is at least 6 bytes"))?;
    if value.len() < value_bytes || be_i16(value, 0) < 0 {
        return Err(BatchError::BadRecords("a transaction marker's value is at least 6 bytes of version 0 or later"));
    }
    Ok(Control::Marker { kind, coordinator_epoch: be_i32(value, 2) })
}

/// A non-null length-prefixed field of `rec` at `p`.
fn field<'a>(rec: &'a [u8], p: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(varint(rec, p)?).ok()?;
    let bytes = rec.get(*p..*p + n)?;
    *p += n;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kafka_protocol::records::RecordBatchDecoder;

    #[test]
    fn a_marker_is_78_bytes_and_its_record_is_kafkas() {
        let b = build_marker(7, 3, MarkerKind::Commit, 12, 1_000);
        assert_eq!(b.len(), marker_bytes);
        let h = check(&b).expect("a valid v2 batch");
        assert!(h.is_control() && h.is_transactional());
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence, h.records_count), (7, 3, -1, 1));
        // The record, by hand: length 16 (zigzag 32), attributes 0, timestamp delta 0, offset
        // delta 0, key length 4 (zigzag 8), key v0 type 1, value length 6 (zigzag 12), value
        // v0 epoch 12, no headers.
        let record: [u8; 17] = [32, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 12, 0];
        assert_eq!(&b[batch_header_bytes..], &record);
        assert_eq!(read_control(&b), Ok(Control::Marker { kind: MarkerKind::Commit, coordinator_epoch: 12 }));
        let abort = build_marker(7, 3, MarkerKind::Abort, -1, 1_000);
        assert_eq!(read_control(&abort), Ok(Control::Marker { kind: MarkerKind::Abort, coordinator_epoch: -1 }));
    }

    #[test]
    fn kafka_protocols_decoder_reads_our_marker_as_a_control_record() {
        let mut b = build_marker(42, 1, MarkerKind::Abort, 5, 77);
        stamp(&mut b, 100, 2);
        let set = RecordBatchDecoder::decode(&mut Bytes::from(b)).expect("decodes");
        let r = &set.records[0];
        assert!(r.control && r.transactional);
        assert_eq!((r.offset, r.producer_id, r.producer_epoch, r.sequence, r.timestamp), (100, 42, 1, -1, 77));
        assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 0][..]));
        assert_eq!(r.value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 5][..]));
    }

    #[test]
    fn malformed_or_other_control_records_are_told_apart() {
        let data = build(&[b"x"], 0);
        assert!(read_control(&data).is_err(), "a data batch is no control batch");
        // KRaft's LeaderChange (type 2) is a control record but no marker.
        let mut other = build_keyed(&[(Some(&[0, 0, 0, 2]), Some(&[0, 0]))], 0);
        other[attributes_at..attributes_at + 2].copy_from_slice(&0x20i16.to_be_bytes());
        assert_eq!(read_control(&other), Ok(Control::Other(2)));
        // A marker whose value is cut to 4 bytes.
        let mut short = build_keyed(&[(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0]))], 0);
        short[attributes_at..attributes_at + 2].copy_from_slice(&0x30i16.to_be_bytes());
        assert!(matches!(read_control(&short), Err(BatchError::BadRecords(_))));
        // A key of 2 bytes.
        let mut tiny = build_keyed(&[(Some(&[0, 0]), Some(&[0, 0, 0, 0, 0, 0]))], 0);
        tiny[attributes_at..attributes_at + 2].copy_from_slice(&0x30i16.to_be_bytes());
        assert!(matches!(read_control(&tiny), Err(BatchError::BadRecords(_))));
    }
}
