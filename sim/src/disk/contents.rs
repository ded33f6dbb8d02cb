//! File contents: per inode, the `durable` bytes, the data ops since its last `sync`, and
//! `current` (durable with those ops applied), plus the calls that read and change them. The
//! model's "Contents" bullet in code.
//!
//! Only `sync` moves bytes into `durable` here (a crash does it in `crash`); a call that fails
//! — too large, no space, EIO — must change nothing, neither bytes nor pending ops nor the
//! space count.

use super::paths::fail;
use super::State;
use std::io::{self, ErrorKind};
use std::path::Path;

/// Largest file the model holds: the broker's own segment limit. Past it a write gets EFBIG
/// instead of a multi-gigabyte allocation from a bad offset.
const FILE_BYTES_MAX: u64 = broker_core::constants::segment_bytes_max;

#[derive(Debug, Clone)]
pub(super) enum DataOp {
    Write { offset: u64, bytes: Vec<u8> },
    Truncate { len: u64 },
}

#[derive(Debug, Default)]
pub(super) struct Inode {
    pub(super) durable: Vec<u8>,
    /// `durable` with `pending` applied: what reads see.
    pub(super) current: Vec<u8>,
    pub(super) pending: Vec<DataOp>,
    /// Live handles: an unlinked inode must stay readable through them (POSIX).
    pub(super) handles: u32,
}

pub(super) fn write_into(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    // Offsets are bounded by FILE_BYTES_MAX before any op is recorded, so these casts are exact.
    let start = offset as usize;
    let end = start + bytes.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(bytes);
}

pub(super) fn apply(image: &mut Vec<u8>, op: &DataOp) {
    match op {
        DataOp::Write { offset, bytes } => write_into(image, *offset, bytes),
        DataOp::Truncate { len } => image.resize(*len as usize, 0),
    }
}

fn too_large(path: &Path) -> io::Error {
    fail(ErrorKind::FileTooLarge, "write", path, &format!("would exceed {FILE_BYTES_MAX} bytes"))
}

impl State {
    pub(super) fn inode_mut(&mut self, ino: u64, path: &Path) -> io::Result<&mut Inode> {
        // Unreachable while handles are counted; an error rather than a panic all the same.
        self.inodes.get_mut(&ino).ok_or_else(|| fail(ErrorKind::Other, "inode of", path, "gone"))
    }

    /// Accounts for file `ino` becoming `new_len` bytes long (`None`: overflowed). Fails with
    /// EFBIG past the size limit or ENOSPC past capacity, changing nothing; else returns the
    /// inode for the caller to change.
    fn resize(&mut self, ino: u64, path: &Path, new_len: Option<u64>) -> io::Result<&mut Inode> {
        let new_len = new_len.filter(|&n| n <= FILE_BYTES_MAX).ok_or_else(|| too_large(path))?;
        let old = self.inode_mut(ino, path)?.current.len() as u64;
        let used = self.used_bytes.saturating_sub(old).saturating_add(new_len);
        self.check_space(path, new_len > old, used)?;
        self.used_bytes = used;
        self.inode_mut(ino, path)
    }

    pub(super) fn read(
        &mut self,
        ino: u64,
        path: &Path,
        buf: &mut [u8],
        offset: u64,
    ) -> io::Result<usize> {
        self.check_eio(path)?;
        let current = &self.inode_mut(ino, path)?.current;
        let len = current.len() as u64;
        if offset >= len {
            return Ok(0);
        }
        let n = buf.len().min((len - offset) as usize);
        buf[..n].copy_from_slice(&current[offset as usize..offset as usize + n]);
        Ok(n)
    }

    pub(super) fn write(
        &mut self,
        ino: u64,
        path: &Path,
        buf: &[u8],
        offset: u64,
    ) -> io::Result<()> {
        self.check_eio(path)?;
        // POSIX: a zero-length write changes nothing, not even the length.
        if buf.is_empty() {
            return Ok(());
        }
        let old = self.inode_mut(ino, path)?.current.len() as u64;
        let end = offset.checked_add(buf.len() as u64);
        let inode = self.resize(ino, path, end.map(|end| end.max(old)))?;
        write_into(&mut inode.current, offset, buf);
        inode.pending.push(DataOp::Write { offset, bytes: buf.to_vec() });
        Ok(())
    }

    pub(super) fn truncate(&mut self, ino: u64, path: &Path, len: u64) -> io::Result<()> {
        self.check_eio(path)?;
        let inode = self.resize(ino, path, Some(len))?;
        let op = DataOp::Truncate { len };
        apply(&mut inode.current, &op);
        inode.pending.push(op);
        Ok(())
    }

    pub(super) fn sync(&mut self, ino: u64, path: &Path) -> io::Result<()> {
        self.check_eio(path)?;
        let inode = self.inode_mut(ino, path)?;
        // Replaying the ops costs what was written since the last sync, not the file size.
        for op in inode.pending.drain(..) {
            apply(&mut inode.durable, &op);
        }
        debug_assert_eq!(inode.durable.len(), inode.current.len());
        Ok(())
    }
}
