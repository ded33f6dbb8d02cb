//! A disk that passes every call through to another and first offers the calls a test cares
//! about to a [`Hook`], which may note them, slow them or fail them. Every test disk (a slow
//! fsync, an injected IO error, a recorder of the log's namespace operations) is this plus a
//! hook of a few lines, instead of its own copy of the sixteen pass-through methods. Files
//! opened through it never offer their descriptor for zero-copy sends, so reads go through
//! [`DiskFile::read_at`], where the hook sees them.

use super::{Disk, DiskFile};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A call about to reach the inner disk; `path` is the file's (for file calls) or the
/// directory's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    WriteAt { path: &'a Path, len: usize },
    Append { path: &'a Path, len: usize },
    Truncate { path: &'a Path, len: u64 },
    Sync { path: &'a Path },
    Rename { from: &'a Path, to: &'a Path },
    Remove { path: &'a Path },
    SyncDir { path: &'a Path },
    SyncAll { path: &'a Path },
}

/// What a test disk adds to the one it wraps.
pub trait Hook: Send + Sync + 'static {
    /// Called before `op` reaches the inner disk; an error is returned in its place (the inner
    /// disk never sees the call).
    fn before(&self, _op: Op<'_>) -> io::Result<()> {
        Ok(())
    }

    /// `n` bytes were read from `path`.
    fn read(&self, _path: &Path, _n: usize) {}

    /// Latency the hook owes the simulated clock, on top of the inner disk's
    /// ([`Disk::take_stall`]).
    fn take_stall(&self) -> Duration {
        Duration::ZERO
    }
}

/// `inner`, with `hook` offered each call first.
pub struct Hooked<H: Hook> {
    inner: Arc<dyn Disk>,
    hook: Arc<H>,
}

impl<H: Hook> Hooked<H> {
    pub fn new(inner: Arc<dyn Disk>, hook: Arc<H>) -> Hooked<H> {
        Hooked { inner, hook }
    }
}

struct HookedFile<H: Hook> {
    inner: Box<dyn DiskFile>,
    path: PathBuf,
    hook: Arc<H>,
}

impl<H: Hook> Disk for Hooked<H> {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn DiskFile>> {
        let inner = self.inner.open(path, create)?;
        Ok(Box::new(HookedFile { inner, path: path.to_path_buf(), hook: self.hook.clone() }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.hook.before(Op::Rename { from, to })?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.hook.before(Op::Remove { path })?;
        self.inner.remove(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.hook.before(Op::SyncDir { path: dir })?;
        self.inner.sync_dir(dir)
    }
    fn sync_all(&self, dir: &Path) -> io::Result<()> {
        self.hook.before(Op::SyncAll { path: dir })?;
        self.inner.sync_all(dir)
    }
    fn take_stall(&self) -> Duration {
        self.inner.take_stall() + self.hook.take_stall()
    }
}

impl<H: Hook> DiskFile for HookedFile<H> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        self.hook.read(&self.path, n);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.hook.before(Op::WriteAt { path: &self.path, len: buf.len() })?;
        self.inner.write_at(buf, offset)
    }
    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        self.hook.before(Op::Append { path: &self.path, len: buf.len() })?;
        self.inner.append(buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.hook.before(Op::Truncate { path: &self.path, len })?;
        self.inner.truncate(len)
    }
    fn sync(&self) -> io::Result<()> {
        self.hook.before(Op::Sync { path: &self.path })?;
        self.inner.sync()
    }
}
