//! Storage: the only door between the broker and a disk.
//!
//! `broker-core` reads and writes bytes through the small [`Disk`] / [`DiskFile`] pair so that the
//! same log code runs on real files ([`FileDisk`]) and on the simulator's crash-faithful `SimDisk`.
//! The contract is POSIX's, not a stronger one, because that is what the simulator enforces:
//!
//! * file contents written with `write_at`/`append` are durable only after that file's `sync`;
//! * a `create`, `rename` or `remove` is durable only after `sync_dir` of the directory holding it;
//! * `sync_all` makes all of the above durable for every file and directory at once;
//! * a crash may keep, drop or tear (at sector granularity) any write not yet synced.
//!
//! Nothing here buffers: every call reaches the implementation. Implementations never panic on
//! bad input; they return `io::Error` (ENOSPC maps to `ErrorKind::StorageFull`).

mod file_disk;
pub mod conformance;
pub mod hooked;

pub use file_disk::FileDisk;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A directory tree of files: namespace operations plus opening files.
pub trait Disk: Send + Sync + 'static {
    /// Opens `path`, creating it empty when `create` is set and it does not exist.
    /// Opening a missing file without `create` is `ErrorKind::NotFound`.
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn DiskFile>>;
    /// Whether `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> bool;
    /// Creates `dir` and its parents (durable after `sync_dir` of each parent).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// File names (not paths) directly inside `dir`, sorted bytewise, so callers see one order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory (`DirectoryNotEmpty` otherwise).
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes every create, rename and remove inside `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes everything done so far on the file system holding `dir` durable: every file's
    /// contents and every directory's entries (Linux `syncfs`). One call where thousands of
    /// logs would each sync their files: a checkpoint of every partition, or a topic's
    /// partitions created together.
    fn sync_all(&self, dir: &Path) -> io::Result<()>;
    /// The size of the volume holding `dir` and the bytes still free for the broker, as
    /// `(total, usable)` (statvfs; `Unsupported` where the volume has no size to tell).
    fn space(&self, _dir: &Path) -> io::Result<(u64, u64)> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
    /// Simulated IO time owed since the last call (zero on real disks). The async shell sleeps
    /// it off, so a decision module can stay synchronous while a slow disk still costs time.
    fn take_stall(&self) -> Duration {
        Duration::ZERO
    }
}

/// One open file. Positional IO only; `append` writes at the current length.
/// A file must have at most one writing handle at a time (lengths are cached per handle).
pub trait DiskFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at end of file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`, extending the file (with zeros in any gap) if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at the end of the file; returns the offset it was written at.
    fn append(&self, buf: &[u8]) -> io::Result<u64>;
    /// Current length in bytes (including unsynced writes).
    fn len(&self) -> io::Result<u64>;
    /// Cuts or zero-extends the file to `len` bytes.
    fn truncate(&self, len: u64) -> io::Result<()>;
    /// Makes this file's contents and length durable (fdatasync).
    fn sync(&self) -> io::Result<()>;
    /// The OS file descriptor, for `sendfile` from this file to a socket (zero-copy fetch,
    /// `server::send`); None where there is none (the simulator's files), and the caller then
    /// copies with [`DiskFile::read_at`].
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, or `UnexpectedEof`.
pub fn read_exact_at(file: &dyn DiskFile, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = file.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read {} bytes at {offset}, file ends after {done}", buf.len()),
            ));
        }
        done += n;
    }
    Ok(())
}

/// Writes `bytes` to `path` so that after a crash the path holds either the old or the new
/// contents, never a mix: write a temporary file, sync it, rename over, sync the directory.
pub fn write_atomically(disk: &dyn Disk, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_of(path);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let file = disk.open(&tmp, true)?;
        file.truncate(0)?;
        file.write_at(bytes, 0)?;
        file.sync()?;
    }
    disk.rename(&tmp, path)?;
    disk.sync_dir(&dir)
}

/// Creates `dir` and any missing parents, each entry synced in its parent, outermost first:
/// for directories made once per process (the data directory), where an fsync is cheap.
pub fn create_dir_all_durably(disk: &dyn Disk, dir: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !disk.exists(d)).collect();
    disk.create_dir_all(dir)?;
    for d in missing.iter().rev() {
        disk.sync_dir(&parent_of(d))?;
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
