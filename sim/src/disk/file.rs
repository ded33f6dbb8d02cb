//! The [`Disk`] and [`DiskFile`] implementations the broker sees: each call normalises its
//! path, locks the model, pays its latency and hands over to the model's state. A handle
//! remembers the disk's generation, so a handle from before a crash fails like a dead
//! process's file descriptor.
//!
//! This is the only door into the model from the broker; it must never bypass the checks the
//! model makes (stale handles, faults) nor decide anything itself.

use super::namespace::node;
use super::paths::{fail, normalize};
use super::{lock, SimDisk, State};
use broker_core::storage::{Disk, DiskFile};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

impl SimDisk {
    /// Locks the disk for one charged call on `path` (which fails once the process is dead).
    fn enter(&self, path: &Path) -> io::Result<MutexGuard<'_, State>> {
        let mut s = lock(&self.state);
        s.count_op(path)?;
        s.charge_latency();
        Ok(s)
    }
}

impl Disk for SimDisk {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn DiskFile>> {
        let path = normalize(path);
        let mut s = self.enter(&path)?;
        let ino = s.open(&path, create)?;
        let generation = s.generation;
        Ok(Box::new(SimFile { state: self.state.clone(), ino, generation, path }))
    }

    /// The simulated capacity and what is left of it; a disk without one has no size to tell.
    fn space(&self, _dir: &Path) -> io::Result<(u64, u64)> {
        let s = lock(&self.state);
        let cap = s.faults.capacity_bytes.ok_or_else(|| io::Error::from(io::ErrorKind::Unsupported))?;
        Ok((cap, cap.saturating_sub(s.used_bytes)))
    }

    fn exists(&self, path: &Path) -> bool {
        node(&lock(&self.state).current_ns, &normalize(path)).is_some()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.enter(dir)?.create_dir_all(&normalize(dir))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.enter(dir)?.list(&normalize(dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.enter(from)?.rename(&normalize(from), &normalize(to))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.enter(path)?.remove(&normalize(path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.enter(dir)?.remove_dir(&normalize(dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.enter(dir)?.sync_dir(&normalize(dir))
    }

    fn sync_all(&self, dir: &Path) -> io::Result<()> {
        let dir = normalize(dir);
        let mut s = self.enter(&dir)?;
        // Every file first (an EIO path among those with unsynced data fails the call, as a
        // writeback error fails syncfs), then every directory's entries.
        let files: Vec<(PathBuf, u64)> = s.current_ns.iter().filter_map(|(p, n)| match n {
            super::namespace::Node::File(ino) => Some((p.clone(), *ino)),
            super::namespace::Node::Dir => None,
        }).collect();
        for (path, ino) in files {
            if s.inodes.get(&ino).is_some_and(|i| !i.pending.is_empty()) {
                s.sync(ino, &path)?;
            }
        }
        s.commit_journal();
        Ok(())
    }

    fn take_stall(&self) -> Duration {
        Duration::from_nanos(std::mem::take(&mut lock(&self.state).stall_ns))
    }
}

/// A handle: which inode, opened under which name, in which generation of the disk.
struct SimFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    generation: u64,
    /// The name it was opened by; `eio_paths` match against it, even after a rename.
    path: PathBuf,
}

impl SimFile {
    /// Locks the disk for one call: a stale handle fails, a live one pays latency if `charged`.
    fn enter(&self, charged: bool) -> io::Result<MutexGuard<'_, State>> {
        let mut s = lock(&self.state);
        if s.generation != self.generation {
            let why = format!(
                "stale handle from before crash (generation {} < {})",
                self.generation, s.generation
            );
            return Err(fail(ErrorKind::Other, "use of", &self.path, &why));
        }
        if charged {
            s.count_op(&self.path)?;
            s.charge_latency();
        }
        Ok(s)
    }
}

impl DiskFile for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.enter(true)?.read(self.ino, &self.path, buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.enter(true)?.write(self.ino, &self.path, buf, offset)
    }

    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        let mut s = self.enter(true)?;
        let at = s.inode_mut(self.ino, &self.path)?.current.len() as u64;
        s.write(self.ino, &self.path, buf, at)?;
        Ok(at)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.enter(false)?.inode_mut(self.ino, &self.path)?.current.len() as u64)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.enter(true)?.truncate(self.ino, &self.path, len)
    }

    fn sync(&self) -> io::Result<()> {
        self.enter(true)?.sync(self.ino, &self.path)
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        // Never panic in drop: a poisoned lock already has a panic in flight.
        let Ok(mut s) = self.state.lock() else { return };
        if s.generation == self.generation {
            let closed = s.inodes.get_mut(&self.ino).is_some_and(|inode| {
                inode.handles = inode.handles.saturating_sub(1);
                inode.handles == 0
            });
            s.gc_due |= closed;
        }
    }
}
