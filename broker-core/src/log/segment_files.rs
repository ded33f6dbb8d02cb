//! A segment's three files (`.log`, `.index`, `.timeindex`): their names, their removal, and
//! reading them when the segment is opened — an index loaded (bounded by what the log can hold)
//! and checked against the log it indexes, the log read in large chunks while recovery scans
//! it. What to trust is decided in `segment`.

use super::index::{IndexFile, OffsetEntry};
use super::{io_err, LogError, RecoveryReport};
use crate::constants::{batch_header_bytes, batch_log_overhead_bytes, recovery_read_bytes};
use crate::storage::{read_exact_at, Disk, DiskFile};
use super::file_stem;
use std::path::{Path, PathBuf};

pub(super) fn load_index<E: super::index::Entry>(
    disk: &dyn Disk,
    path: &Path,
    log_len: u64,
) -> Result<Result<IndexFile<E>, String>, LogError> {
    // No index can hold more entries than the log holds batches; a longer file is not read.
    let max_bytes = (log_len / batch_header_bytes as u64 + 1) * E::BYTES as u64;
    match disk.open(path, false) {
        Ok(f) => match IndexFile::<E>::load(f, max_bytes).map_err(io_err("read", path))? {
            Ok(idx) => Ok(Ok(idx)),
            Err((_, why)) => Ok(Err(why)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Err("missing".into())),
        Err(e) => Err(io_err("open", path)(e)),
    }
}

/// Positions strictly increase inside the file, and the last entry points at a batch header
/// carrying the offset it claims (reads check every other entry they use).
pub(super) fn offset_index_checks_out(log: &dyn DiskFile, base: i64, entries: &[OffsetEntry], file_len: u64) -> bool {
    let positions_ok = entries.windows(2).all(|w| w[0].position < w[1].position)
        && entries.iter().all(|e| e.position > 0 && (e.position as u64) < file_len);
    let Some(last) = entries.last() else { return true };
    let mut prefix = [0u8; batch_log_overhead_bytes];
    positions_ok
        && last.position as u64 + batch_header_bytes as u64 <= file_len
        && read_exact_at(log, &mut prefix, last.position as u64).is_ok()
        && i64::from_be_bytes(prefix[0..8].try_into().expect("8")) == base + last.relative_offset as i64
}

/// Sequential reads through a file in large chunks, for scans.
pub(super) struct ChunkReader<'a> {
    file: &'a dyn DiskFile,
    path: &'a Path,
    file_len: u64,
    buf: Vec<u8>,
    buf_at: u64,
}

impl<'a> ChunkReader<'a> {
    pub(super) fn new(file: &'a dyn DiskFile, path: &'a Path, file_len: u64) -> Self {
        ChunkReader { file, path, file_len, buf: Vec::new(), buf_at: 0 }
    }

    /// `n` bytes at `pos`; the caller has checked they lie inside the file.
    pub(super) fn get(&mut self, pos: u64, n: usize) -> Result<&[u8], LogError> {
        self.get_reading(pos, n, recovery_read_bytes)
    }

    /// [`ChunkReader::get`], reading `chunk` bytes (at least `n`) when they are not in hand.
    pub(super) fn get_reading(&mut self, pos: u64, n: usize, chunk: usize) -> Result<&[u8], LogError> {
        let have = pos >= self.buf_at && pos + n as u64 <= self.buf_at + self.buf.len() as u64;
        if !have {
            let want = n.max(chunk).min((self.file_len - pos) as usize).max(n);
            self.buf.resize(want, 0);
            read_exact_at(self.file, &mut self.buf, pos).map_err(io_err("read", self.path))?;
            self.buf_at = pos;
        }
        let from = (pos - self.buf_at) as usize;
        Ok(&self.buf[from..from + n])
    }
}

/// The `.log`, `.index` and `.timeindex` paths of the segment at `base`.
pub(super) fn paths(dir: &Path, base: i64) -> [PathBuf; 3] {
    let stem = file_stem(base);
    ["log", "index", "timeindex"].map(|ext| dir.join(format!("{stem}.{ext}")))
}

/// Removes the files of the segment at `base` (those present: its three and its `.txnindex`);
/// returns the `.log` path.
pub fn delete_files(disk: &dyn Disk, dir: &Path, base: i64) -> Result<PathBuf, LogError> {
    delete_files_but(disk, dir, base, false)
}

/// [`delete_files`], keeping the segment's `.txnindex` when `keep_aborted` (a cleaned segment
/// swapped in over it keeps its base offset and its markers, so its entries stay true).
pub fn delete_files_but(disk: &dyn Disk, dir: &Path, base: i64, keep_aborted: bool) -> Result<PathBuf, LogError> {
    let all = paths(dir, base);
    let aborted = super::aborted::path(dir, base);
    for p in all.iter().chain((!keep_aborted).then_some(&aborted)) {
        match disk.remove(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err("remove", p)(e)),
            _ => {}
        }
    }
    let [log, _, _] = all;
    Ok(log)
}

/// Segment base offsets and producer-snapshot offsets present in `dir` (each sorted), removing
/// leftovers that are not part of the log (`.tmp`, `.deleted`, `.cleaned`, indexes whose
/// segment is gone).
pub(super) fn list_segments(disk: &dyn Disk, dir: &Path, report: &mut RecoveryReport) -> Result<(Vec<i64>, Vec<i64>), LogError> {
    let names = disk.list(dir).map_err(|source| LogError::Io { op: "list", path: dir.to_path_buf(), source })?;
    let mut bases: Vec<i64> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".log"))
        .filter(|stem| stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|stem| stem.parse().ok())
        .collect();
    bases.sort_unstable();
    for name in &names {
        let stem = name.split('.').next().unwrap_or("");
        let orphan_index = (name.ends_with(".index") || name.ends_with(".timeindex") || name.ends_with(".txnindex"))
            && !stem.parse::<i64>().is_ok_and(|b| bases.binary_search(&b).is_ok());
        let leftover = name.ends_with(".tmp") || name.ends_with(".deleted") || name.ends_with(".cleaned");
        if orphan_index || leftover {
            let path = dir.join(name);
            disk.remove(&path).map_err(|source| LogError::Io { op: "remove", path: path.clone(), source })?;
            report.stray_files_removed.push(path);
        }
    }
    let mut snapshots: Vec<i64> = names.iter().filter_map(|n| super::producer_snapshot::offset_of(n)).collect();
    snapshots.sort_unstable();
    Ok((bases, snapshots))
}
