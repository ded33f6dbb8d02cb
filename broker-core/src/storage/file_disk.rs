//! `FileDisk`: the [`Disk`] contract on real files.
//!
//! `sync` is `fdatasync`, `sync_dir` an fsync of the directory, `sync_all` Linux's `syncfs`.
//! Creates, renames and removes are durable only once the caller syncs their directory, as
//! POSIX says and the simulator enforces (a sync per create made creating 4,000 partitions
//! cost 32,000 fsyncs). Errors are the OS's, with the path added so an operator can tell which
//! file failed.

use super::{Disk, DiskFile};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Real files under the process's file system.
#[derive(Debug, Default, Clone)]
pub struct FileDisk;

impl FileDisk {
    pub fn new() -> Self {
        FileDisk
    }
}

fn with_path(err: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| with_path(e, "fsync directory", dir))
}

impl Disk for FileDisk {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn DiskFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .map_err(|e| with_path(e, "open", path))?;
        let len = file.metadata().map_err(|e| with_path(e, "stat", path))?.len();
        Ok(Box::new(RealFile { file, len: AtomicU64::new(len), path: path.to_path_buf() }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir).map_err(|e| with_path(e, "create directory", dir))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| with_path(e, "list", dir))? {
            let entry = entry.map_err(|e| with_path(e, "list", dir))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to).map_err(|e| with_path(e, "rename", from))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path).map_err(|e| with_path(e, "remove", path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir).map_err(|e| with_path(e, "remove directory", dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        fsync_dir(dir)
    }

    fn sync_all(&self, dir: &Path) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let d = File::open(dir).map_err(|e| with_path(e, "open", dir))?;
        // The descriptor is `d`'s, an owned File opened above and dropped only at the
        // end of this function, so it is open for the call; syncfs takes no pointers.
        // SAFETY: as the lines above say.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(with_path(io::Error::last_os_error(), "syncfs", dir));
        }
        Ok(())
    }

    fn space(&self, dir: &Path) -> io::Result<(u64, u64)> {
        use std::os::fd::AsRawFd;
        let d = File::open(dir).map_err(|e| with_path(e, "open", dir))?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: the descriptor is `d`'s, open until the end of this function; `st` is a
        // writable statvfs that the call fills whole when it returns 0, and is read only then.
        let st = unsafe {
            if libc::fstatvfs(d.as_raw_fd(), st.as_mut_ptr()) != 0 {
                return Err(with_path(io::Error::last_os_error(), "fstatvfs", dir));
            }
            st.assume_init()
        };
        let block = st.f_frsize as u64;
        // Usable: what an unprivileged writer may still take (f_bavail), as Kafka reports.
        Ok((st.f_blocks as u64 * block, st.f_bavail as u64 * block))
    }
}

struct RealFile {
    file: File,
    /// Cached length: `append` must not stat the file on every call.
    len: AtomicU64,
    path: PathBuf,
}

impl DiskFile for RealFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other.map_err(|e| with_path(e, "read", &self.path)),
            }
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset.checked_add(buf.len() as u64).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("write past 2^64 in {}", self.path.display()))
        })?;
        self.file.write_all_at(buf, offset).map_err(|e| with_path(e, "write", &self.path))?;
        self.len.fetch_max(end, Ordering::Relaxed);
        Ok(())
    }

    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        let at = self.len.load(Ordering::Relaxed);
        self.write_at(buf, at)?;
        Ok(at)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len.load(Ordering::Relaxed))
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len).map_err(|e| with_path(e, "truncate", &self.path))?;
        self.len.store(len, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|e| with_path(e, "fdatasync", &self.path))
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(std::os::fd::AsRawFd::as_raw_fd(&self.file))
    }
}
