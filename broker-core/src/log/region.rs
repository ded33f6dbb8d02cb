//! The records part of a fetch answer: bytes in memory, or regions of segment files that the
//! shell sends with `sendfile` (zero-copy fetch, Kafka's `FileRecords.writeTo`). Decision code
//! carries [`Records`] without knowing which it holds; only the socket writer looks inside.
//!
//! Safety while a region is in flight (between the read that bounded it and the last byte
//! sent), the model Kafka's `FileRecords` follows too:
//! * A region holds its segment's open file ([`SegmentLog`], shared by `Arc`), so a segment
//!   deleted by retention, by a truncation or by the cleaner's swap keeps its bytes readable:
//!   removing a file unlinks its name, never the open inode, and the region sends exactly the
//!   bytes its read saw.
//! * A truncation cuts the file in place (a follower's KIP-101 cut of the active segment). The
//!   region was bounded at read time to whole batches; [`SegmentLog::cut`] counts cuts, and a
//!   region whose file was cut since its read — or that finds the file shorter than its end —
//!   refuses to send more ([`RegionError`]); the shell then closes the connection, as Kafka
//!   does when `FileRecords.writeTo` finds its file truncated. Never padded: the frame stays
//!   incomplete, so the client discards it and fetches again on a new connection.
//! * What `sendfile` already queued is page-cache pages, not copies. Pages wholly past a cut
//!   leave the file but keep their old bytes for the socket; the one page holding the cut point
//!   is zeroed past it and refilled by later appends in place, so up to a page of queued bytes
//!   past the cut can change. Those bytes belong to batches the cut removes (above the high
//!   watermark: only a follower fetched them), and they reach a client only if the frame was
//!   already whole when the cut came; a follower checks every batch's CRC before appending.
//!   Bytes below a cut are always the read's (tested over a real socket in `server::send`).
//!
//! This module never touches sockets; it reads files only for the copying path.

use super::overlay::{Chunk, Overlay};
use crate::storage::DiskFile;
use bytes::Bytes;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A segment's `.log` file, shared between the segment, the regions in flight from it and the
/// owner's jobs, with a count of the in-place cuts made to it (see the module header) and the
/// bytes appended but not yet written to it (`log::overlay`: the write-behind).
pub struct SegmentLog {
    file: Box<dyn DiskFile>,
    cuts: AtomicU64,
    staged: Mutex<Overlay>,
    /// Held by [`SegmentLog::write_out`] across its writes, off the node's lock, and by
    /// [`SegmentLog::cut`], so no write lands past a cut.
    writer: Mutex<()>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SegmentLog {
    pub fn new(file: Box<dyn DiskFile>) -> SegmentLog {
        SegmentLog { file, cuts: AtomicU64::new(0), staged: Mutex::new(Overlay::default()), writer: Mutex::new(()) }
    }

    /// Cuts the file to `len` bytes, removing whole batches: every region bounded before the
    /// cut refuses to send from now on. Staged bytes past `len` go too. Waits for a
    /// [`SegmentLog::write_out`] under way, so none lands past the cut; the log refuses a
    /// truncation while a job that writes is in flight (`log::deferred`), so what is left to
    /// wait for is a sync's write-out with nothing to write. (An append that failed and is
    /// undone with a plain `truncate` removes no served batch, so it is no cut.)
    pub fn cut(&self, len: u64) -> io::Result<()> {
        let _writer = locked(&self.writer);
        self.cut_staged(len);
        self.truncate_file(len)
    }

    /// The memory half of [`SegmentLog::cut`], inside the decision of a truncation whose file
    /// work is the owner's job (`log::cut`): regions bounded before refuse to send from now on,
    /// and staged bytes past `len` go. Not under the writer's lock, which a sync's write-out
    /// may hold off the node's lock for long: a write-out under way either wrote its snapshot
    /// of the staged bytes before [`SegmentLog::cut_file`] cuts the file (which takes the lock),
    /// or takes its snapshot after this and writes only bytes below `len`.
    pub(super) fn cut_staged(&self, len: u64) {
        self.cuts.fetch_add(1, Ordering::AcqRel);
        locked(&self.staged).cut(len);
    }

    /// The file half: cuts the file to `len` once no write-out is under way (blocking: the
    /// owner's job runs it off the node's lock).
    pub(super) fn cut_file(&self, len: u64) -> io::Result<()> {
        let _writer = locked(&self.writer);
        self.truncate_file(len)
    }

    fn truncate_file(&self, len: u64) -> io::Result<()> {
        match self.file.len()? > len {
            true => self.file.truncate(len),
            false => Ok(()),
        }
    }

    fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::Acquire)
    }

    /// Stages whole batches appended at `position` (the end of the file and of what is staged)
    /// for the owner's next [`SegmentLog::write_out`]; reads see them at once. Kept as given:
    /// shared bytes are not copied (`segment::Appending`).
    pub(super) fn stage(&self, position: u64, bytes: Bytes) {
        locked(&self.staged).push(Chunk { position, bytes });
    }

    /// Bytes staged and not yet written.
    pub(super) fn staged_bytes(&self) -> u64 {
        locked(&self.staged).bytes()
    }

    /// Whether the file itself holds every byte below `end` (nothing there is only staged).
    fn written_through(&self, end: u64) -> bool {
        locked(&self.staged).start().is_none_or(|s| s >= end)
    }

    /// Writes what is staged to the file (blocking: the owner runs it off the node's lock). A
    /// chunk leaves the overlay only once written, so reads meanwhile find it in one place or
    /// the other. An error leaves the rest staged; the log then goes offline (`log::deferred`).
    pub fn write_out(&self) -> io::Result<()> {
        let _writer = locked(&self.writer);
        let chunks = locked(&self.staged).snapshot();
        for c in &chunks {
            self.file.write_at(&c.bytes, c.position)?;
        }
        locked(&self.staged).written(chunks.len());
        Ok(())
    }
}

impl DiskFile for SegmentLog {
    /// The file's bytes below the staged ones, the staged ones from there on.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let Some((start, end)) = locked(&self.staged).copy_into(buf, offset) else { return self.file.read_at(buf, offset) };
        let want = end.saturating_sub(offset).min(buf.len() as u64) as usize;
        let from_file = start.saturating_sub(offset).min(want as u64) as usize;
        let mut done = 0;
        while done < from_file {
            match self.file.read_at(&mut buf[done..from_file], offset + done as u64)? {
                0 => return Ok(done),
                n => done += n,
            }
        }
        Ok(want)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_at(buf, offset)
    }
    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        self.file.append(buf)
    }
    /// The length with the staged bytes.
    fn len(&self) -> io::Result<u64> {
        let staged = locked(&self.staged).end();
        Ok(self.file.len()?.max(staged.unwrap_or(0)))
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.truncate(len)
    }
    /// Writes what is staged, then makes the file durable: a sync covers every append before it.
    fn sync(&self) -> io::Result<()> {
        self.write_out()?;
        self.file.sync()
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.raw_fd()
    }
}

/// Whole batches at `position..position + len` of a segment file, as bounded when read.
#[derive(Clone)]
pub struct FileRegion {
    file: Arc<SegmentLog>,
    pub position: u64,
    pub len: u64,
    /// The file's cut count when the region was bounded.
    cuts: u64,
}

impl std::fmt::Debug for FileRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileRegion({}..{})", self.position, self.position + self.len)
    }
}

/// Why a region in flight cannot be sent: its bytes are no longer the ones its read bounded.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// The segment was truncated in place after the read.
    #[error("segment cut since the fetch read it (region {0}..{1})")]
    Cut(u64, u64),
    /// The file ends before the region does (a cut the count did not see, or a short read).
    #[error("segment file ends at {0}, before the region's end {1}")]
    Short(u64, u64),
    /// Reading the file failed (the copying path, or the length check).
    #[error("reading the region: {0}")]
    Io(#[from] io::Error),
}

impl From<RegionError> for io::Error {
    fn from(e: RegionError) -> io::Error {
        match e {
            RegionError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::UnexpectedEof, other.to_string()),
        }
    }
}

impl FileRegion {
    pub(super) fn new(file: Arc<SegmentLog>, position: u64, len: u64) -> FileRegion {
        let cuts = file.cuts();
        FileRegion { file, position, len, cuts }
    }

    pub fn end(&self) -> u64 {
        self.position + self.len
    }

    /// Ok while the region's bytes are still the ones its read saw (call before each send).
    pub fn check(&self) -> Result<(), RegionError> {
        if self.file.cuts() != self.cuts {
            return Err(RegionError::Cut(self.position, self.end()));
        }
        let len = self.file.len()?;
        if len < self.end() {
            return Err(RegionError::Short(len, self.end()));
        }
        Ok(())
    }

    /// The file's descriptor, for `sendfile`: None on the simulator's disk, and while part of
    /// the region is only staged (then the copying path reads it from memory).
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.file.written_through(self.end()).then(|| self.file.raw_fd()).flatten()
    }

    /// Appends the region's bytes to `out` (the copying path), checked as [`FileRegion::check`].
    pub fn read_into(&self, out: &mut Vec<u8>) -> Result<(), RegionError> {
        self.check()?;
        let at = out.len();
        out.resize(at + self.len as usize, 0);
        let mut done = 0usize;
        while done < self.len as usize {
            let n = self.file.read_at(&mut out[at + done..], self.position + done as u64)?;
            if n == 0 {
                out.truncate(at);
                return Err(RegionError::Short(self.position + done as u64, self.end()));
            }
            done += n;
        }
        // A cut during the read may have mixed old and new bytes: checked again after.
        self.check().inspect_err(|_| out.truncate(at))
    }
}

/// The records of one partition in a fetch answer: whole batches, in memory or in files.
#[derive(Debug, Clone)]
pub enum Records {
    /// Read into memory (the copying path; CRC-checked on the read).
    Memory(Bytes),
    /// Regions of segment files, in log order (one per segment the answer spans).
    File(Vec<FileRegion>),
}

impl Default for Records {
    fn default() -> Self {
        Records::Memory(Bytes::new())
    }
}

impl Records {
    pub fn len(&self) -> usize {
        match self {
            Records::Memory(b) => b.len(),
            Records::File(regions) => regions.iter().map(|r| r.len as usize).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, read from the files if need be (tests, tools, the simulator's writer).
    pub fn to_bytes(&self) -> Result<Bytes, RegionError> {
        match self {
            Records::Memory(b) => Ok(b.clone()),
            Records::File(regions) => {
                let mut out = Vec::with_capacity(self.len());
                for r in regions {
                    r.read_into(&mut out)?;
                }
                Ok(out.into())
            }
        }
    }
}
