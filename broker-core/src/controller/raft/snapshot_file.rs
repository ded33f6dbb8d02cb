//! Snapshot files of the metadata log, named as KRaft names them,
//! `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`, in the metadata log directory.
//! The contents are opaque here (the controller writes its image as metadata records); this
//! module frames them so that a damaged file is recognized, and writes them atomically through
//! [`Disk`] (temp file, sync, rename, directory sync).
//!
//! Byte by byte (big-endian):
//!
//! ```text
//! magic "SLSNAP" | version u16 = 1 | end i64 | epoch i32 | payload length u64 |
//! crc32c u32 (of everything from version to the payload's last byte, itself left out) | payload
//! ```
//!
//! It must never hand back bytes it did not check: a file that is short, long, of another
//! version, whose CRC or whose name does not match is an error the caller logs and skips.

use super::{Snapshot, SnapshotId};
use crate::constants::metadata_snapshot_bytes_max;
use crate::storage::{read_exact_at, write_atomically, Disk};
use bytes::Bytes;
use std::io;
use std::path::Path;

const MAGIC: &[u8; 6] = b"SLSNAP";
const VERSION: u16 = 1;
/// magic, version, end, epoch, payload length, crc.
const HEADER_BYTES: usize = 6 + 2 + 8 + 4 + 8 + 4;
const SUFFIX: &str = ".checkpoint";

/// KRaft's file name for the snapshot `id`.
pub fn file_name(id: SnapshotId) -> String {
    format!("{:020}-{:010}{SUFFIX}", id.end, id.epoch)
}

/// The id a snapshot file name stands for (temp files and other names are not snapshots).
pub fn parse_name(name: &str) -> Option<SnapshotId> {
    let stem = name.strip_suffix(SUFFIX)?;
    let (end, epoch) = stem.split_once('-')?;
    if end.len() != 20 || epoch.len() != 10 || !end.bytes().chain(epoch.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(SnapshotId { end: end.parse().ok()?, epoch: epoch.parse().ok()? })
}

pub fn encode(snapshot: &Snapshot) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_BYTES + snapshot.bytes.len());
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&VERSION.to_be_bytes());
    b.extend_from_slice(&snapshot.id.end.to_be_bytes());
    b.extend_from_slice(&snapshot.id.epoch.to_be_bytes());
    b.extend_from_slice(&(snapshot.bytes.len() as u64).to_be_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&b[6..]), &snapshot.bytes);
    b.extend_from_slice(&crc.to_be_bytes());
    b.extend_from_slice(&snapshot.bytes);
    b
}

pub fn decode(bytes: &[u8]) -> Result<Snapshot, String> {
    if bytes.len() < HEADER_BYTES {
        return Err(format!("{} bytes, shorter than a snapshot header", bytes.len()));
    }
    if &bytes[..6] != MAGIC {
        return Err("not a snapshot file (magic)".into());
    }
    let at = |from: usize, n: usize| &bytes[from..from + n];
    let version = u16::from_be_bytes(at(6, 2).try_into().expect("2 bytes"));
    if version != VERSION {
        return Err(format!("snapshot version {version}, this broker reads {VERSION}"));
    }
    let end = i64::from_be_bytes(at(8, 8).try_into().expect("8 bytes"));
    let epoch = i32::from_be_bytes(at(16, 4).try_into().expect("4 bytes"));
    let len = u64::from_be_bytes(at(20, 8).try_into().expect("8 bytes"));
    let crc = u32::from_be_bytes(at(28, 4).try_into().expect("4 bytes"));
    if len != (bytes.len() - HEADER_BYTES) as u64 {
        return Err(format!("payload of {} bytes, header says {len} (torn?)", bytes.len() - HEADER_BYTES));
    }
    let payload = &bytes[HEADER_BYTES..];
    let computed = crc32c::crc32c_append(crc32c::crc32c(&bytes[6..28]), payload);
    if computed != crc {
        return Err(format!("CRC {computed:#010x}, header says {crc:#010x} (damaged)"));
    }
    if end < 1 || epoch < 1 {
        return Err(format!("snapshot id end {end} epoch {epoch} cannot be"));
    }
    Ok(Snapshot { id: SnapshotId { end, epoch }, bytes: Bytes::copy_from_slice(payload) })
}

/// Writes `snapshot` to its file in `dir`; durable on return.
pub fn write(disk: &dyn Disk, dir: &Path, snapshot: &Snapshot) -> io::Result<()> {
    write_atomically(disk, &dir.join(file_name(snapshot.id)), &encode(snapshot))
}

/// The snapshot ids of the files in `dir`, oldest first.
pub fn list(disk: &dyn Disk, dir: &Path) -> io::Result<Vec<SnapshotId>> {
    let mut ids: Vec<SnapshotId> = disk.list(dir)?.iter().filter_map(|n| parse_name(n)).collect();
    ids.sort();
    Ok(ids)
}

/// Reads and checks the snapshot `id` in `dir`.
pub fn read(disk: &dyn Disk, dir: &Path, id: SnapshotId) -> Result<Snapshot, String> {
    let path = dir.join(file_name(id));
    let err = |e: io::Error| format!("{}: {e}", path.display());
    let file = disk.open(&path, false).map_err(err)?;
    let len = file.len().map_err(err)?;
    if len > metadata_snapshot_bytes_max {
        return Err(format!("{}: {len} bytes, above the {metadata_snapshot_bytes_max} a snapshot may hold", path.display()));
    }
    let mut bytes = vec![0; len as usize];
    read_exact_at(file.as_ref(), &mut bytes, 0).map_err(err)?;
    let snapshot = decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if snapshot.id != id {
        return Err(format!("{}: holds snapshot {:?}, not the one its name says", path.display(), snapshot.id));
    }
    Ok(snapshot)
}

/// The newest snapshot in `dir` that reads back whole, and a line for each one skipped.
pub fn read_newest(disk: &dyn Disk, dir: &Path) -> io::Result<(Option<Snapshot>, Vec<String>)> {
    let mut skipped = Vec::new();
    for id in list(disk, dir)?.into_iter().rev() {
        match read(disk, dir, id) {
            Ok(s) => return Ok((Some(s), skipped)),
            Err(why) => skipped.push(format!("metadata snapshot skipped, falling back to an older one or the log: {why}")),
        }
    }
    Ok((None, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FileDisk;

    fn snap(end: i64, epoch: i32, payload: &[u8]) -> Snapshot {
        Snapshot { id: SnapshotId { end, epoch }, bytes: Bytes::copy_from_slice(payload) }
    }

    #[test]
    fn names_are_krafts_and_only_snapshot_names_parse() {
        let id = SnapshotId { end: 1234, epoch: 7 };
        assert_eq!(file_name(id), "00000000000000001234-0000000007.checkpoint");
        assert_eq!(parse_name(&file_name(id)), Some(id));
        for other in ["00000000000000001234-0000000007.checkpoint.tmp", "quorum-state", "00000000000000000000.log", "1234-7.checkpoint", "0000000000000000123x-0000000007.checkpoint"] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn every_cut_or_flipped_byte_is_refused() {
        let s = snap(10, 2, b"some records");
        let bytes = encode(&s);
        assert_eq!(decode(&bytes), Ok(s));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(decode(&b).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn a_damaged_newest_file_falls_back_to_the_older_one() {
        let dir = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        assert_eq!(read_newest(&disk, dir.path()).unwrap().0, None);
        let (old, new) = (snap(5, 1, b"old"), snap(9, 2, b"new"));
        write(&disk, dir.path(), &old).unwrap();
        write(&disk, dir.path(), &new).unwrap();
        assert_eq!(list(&disk, dir.path()).unwrap(), vec![old.id, new.id]);
        assert_eq!(read_newest(&disk, dir.path()).unwrap(), (Some(new.clone()), vec![]));

        // Torn: the newest file lost its tail.
        let path = dir.path().join(file_name(new.id));
        let f = disk.open(&path, false).unwrap();
        f.truncate(f.len().unwrap() - 1).unwrap();
        let (found, skipped) = read_newest(&disk, dir.path()).unwrap();
        assert_eq!(found, Some(old.clone()));
        assert!(skipped.len() == 1 && skipped[0].contains("torn"), "{skipped:?}");

        // A file whose contents are another snapshot's is not trusted either.
        crate::storage::write_atomically(&disk, &path, &encode(&old)).unwrap();
        let (_, skipped) = read_newest(&disk, dir.path()).unwrap();
        assert!(skipped[0].contains("not the one its name says"), "{skipped:?}");
    }
}
