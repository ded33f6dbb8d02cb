//! What a log has made durable, and how. `flush` syncs the segments past the recovery point,
//! the directory when segment files came or went, and whatever else the log owes (its own
//! entry in the parent directory when opening created it, a marker file the broker wrote
//! beside it); `checkpoint` then records the recovery point atomically.
//!
//! For thousands of logs at once (the broker's periodic and shutdown checkpoint),
//! `checkpoint_stage` and `checkpoint_commit` split a checkpoint around file-system syncs the
//! caller does once for all of them (`Disk::sync_all`) instead of several fsyncs per log:
//! stage writes out what the log buffers and the new checkpoint to a temporary file; after a
//! `sync_all` every byte it vouches for and the temporary file are durable, so commit renames
//! it into place; a second `sync_all` makes the renames durable. A crash anywhere leaves each
//! log with its old checkpoint or its new one, never one that vouches for unsynced bytes.

use super::{Log, LogError, RECOVERY_POINT_FILE};
use crate::storage::write_atomically;
use std::path::PathBuf;

/// Something outside the segments the log's next flush must make durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Owed {
    /// A file's contents (written unsynced by the broker, e.g. a partition marker).
    File(PathBuf),
    /// A directory's entries (the parent of a log directory that open created).
    Dir(PathBuf),
}

impl Owed {
    /// Makes it durable. A file removed since owes nothing (an aborted-transaction index whose
    /// segment retention deleted): its removal is a directory change, synced as one.
    pub(super) fn sync(&self, disk: &dyn crate::storage::Disk) -> Result<(), LogError> {
        match self {
            Owed::File(path) => match disk.open(path, false) {
                Ok(f) => f.sync().map_err(super::io_err("fdatasync", path)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(super::io_err("open", path)(e)),
            },
            Owed::Dir(dir) => disk.sync_dir(dir).map_err(super::io_err("fsync directory", dir)),
        }
    }
}

/// What the log owes outside its segments, each thing once, with the mark of its noting: a
/// sync job or a staged checkpoint pays only what was noted before it was taken, so something
/// noted (again) while one runs stays owed.
#[derive(Debug, Clone, Default)]
pub(super) struct OwedList {
    items: Vec<(u64, Owed)>,
    last: u64,
}

impl OwedList {
    pub(super) fn new(items: impl IntoIterator<Item = Owed>) -> OwedList {
        let mut list = OwedList::default();
        items.into_iter().for_each(|o| list.note(o));
        list
    }

    /// Owes `o`, from now (a thing owed already is owed again from now).
    pub(super) fn note(&mut self, o: Owed) {
        self.items.retain(|(_, x)| *x != o);
        self.last += 1;
        self.items.push((self.last, o));
    }

    /// The mark of the newest thing noted, for [`OwedList::paid_to`].
    pub(super) fn mark(&self) -> u64 {
        self.last
    }

    /// What was noted up to `mark` was made durable.
    pub(super) fn paid_to(&mut self, mark: u64) {
        self.items.retain(|(m, _)| *m > mark);
    }

    pub(super) fn clear(&mut self) {
        self.items.clear();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The things owed, in the order they were (last) noted.
    pub(super) fn things(&self) -> Vec<Owed> {
        self.items.iter().map(|(_, o)| o.clone()).collect()
    }
}

/// What one log owed when its owner took a sync on its behalf ([`Log::owed_stamp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwedStamp {
    /// The log's identity (a reopened log has another).
    serial: u64,
    owed: u64,
}

/// A checkpoint written to its temporary file, waiting for the caller's `sync_all`.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedCheckpoint {
    end: i64,
    /// The log's `deferred` marks when staged: a log cut or reopened since takes no commit.
    serial: u64,
    cuts: u64,
    /// Segment files created or removed before the stage: one removed after it (DeleteRecords,
    /// retention) is not in the sync that follows, so its directory stays to be synced.
    dir_changes: u64,
    /// What the log owed when staged ([`OwedList::mark`]): the `sync_all` after it pays that.
    owed: u64,
}

fn tmp_path(log: &Log) -> PathBuf {
    log.dir.join(format!("{RECOVERY_POINT_FILE}.tmp"))
}

impl Log {
    /// Syncs every segment holding data at or after the recovery point (oldest first, so a
    /// synced offset never sits after an unsynced one), and the directory if files changed.
    /// While a truncation's job is in flight this does nothing: that job flushes to the log's
    /// end, and nothing may touch the files before it (`log::cut`).
    pub fn flush(&mut self, _now: u64) -> Result<(), LogError> {
        self.check_failed()?;
        if self.cutting() {
            return Ok(());
        }
        let result = self.flush_inner();
        self.offline_on_error(result, "flush")
    }

    pub(super) fn flush_inner(&mut self) -> Result<(), LogError> {
        self.pay_owed()?;
        self.sync_dir_if_dirty()?;
        let end = self.log_end_offset();
        let rp = self.recovery_point;
        for (i, seg) in self.segments.iter().enumerate() {
            let seg_end = self.segments.get(i + 1).map_or(end, |n| n.base_offset);
            if seg_end > rp {
                seg.sync()?;
            }
        }
        self.mark_flushed(end);
        Ok(())
    }

    pub(super) fn mark_flushed(&mut self, end: i64) {
        self.recovery_point = end;
        self.deferred.written_to(end); // a sync writes what is staged first
        self.unflushed_records = 0;
        self.unflushed_since_ms = None;
    }

    /// What this log owes now, for a sync its owner runs on its behalf (the broker's one
    /// file-system sync after creating replicas, `broker::opening`).
    pub fn owed_stamp(&self) -> OwedStamp {
        OwedStamp { serial: self.deferred.marks().0, owed: self.owed.mark() }
    }

    /// A sync that began after `stamp` was taken covered this log's files: what it owed then is
    /// paid (what it noted since stays owed). A stamp of another log (this one was reopened
    /// since) pays nothing.
    pub fn owed_synced(&mut self, stamp: OwedStamp) {
        if stamp.serial == self.deferred.marks().0 {
            self.owed.paid_to(stamp.owed);
        }
    }

    fn pay_owed(&mut self) -> Result<(), LogError> {
        for owed in self.owed.things() {
            owed.sync(self.disk.as_ref())?;
        }
        self.owed.clear();
        Ok(())
    }

    /// Makes segment creations and removals durable.
    pub(super) fn sync_dir_if_dirty(&mut self) -> Result<(), LogError> {
        if self.dir_dirty {
            self.disk.sync_dir(&self.dir).map_err(|source| LogError::Io { op: "fsync directory", path: self.dir.clone(), source })?;
            self.dir_dirty = false;
        }
        Ok(())
    }

    /// Writes the recovery point to its checkpoint file (atomically), after making the indexes
    /// of the segments it vouches for durable. Call after `flush`. Nothing while a truncation's
    /// job is in flight: it writes the checkpoint itself (`log::cut`).
    pub fn checkpoint(&mut self) -> Result<(), LogError> {
        self.check_failed()?;
        if self.cutting() {
            return Ok(());
        }
        if self.checkpoint_in_place {
            return self.write_checkpoint_in_place();
        }
        // A roll owes its indexes' syncs (`Log::roll`): paid here too, whoever called.
        self.pay_owed()?;
        for seg in &mut self.segments {
            seg.sync_indexes()?;
        }
        let path = self.dir.join(RECOVERY_POINT_FILE);
        let text = format!("{}\n", self.recovery_point);
        write_atomically(self.disk.as_ref(), &path, text.as_bytes()).map_err(|source| LogError::Io { op: "write checkpoint", path, source })?;
        self.checkpointed = self.recovery_point;
        Ok(())
    }

    /// The first half of a checkpoint shared with other logs (see the module header): index
    /// entries still buffered are written, and the log end goes to the temporary checkpoint
    /// file. Nothing is synced; the caller runs `Disk::sync_all` before
    /// [`Log::checkpoint_commit`], and must not change the log in between. `None`: the log has
    /// not changed since its checkpoint file was written, which already says its end, or a
    /// truncation's job is in flight, which writes the checkpoint itself (`log::cut`).
    pub fn checkpoint_stage(&mut self) -> Result<Option<StagedCheckpoint>, LogError> {
        self.check_failed()?;
        if self.cutting() {
            return Ok(None);
        }
        if self.checkpoint_in_place {
            // Planted `CheckpointInPlace`: the old per-log flush and an unsynced in-place write,
            // which the file-system syncs around a staged checkpoint would otherwise cover.
            self.flush_inner()?;
            self.write_checkpoint_in_place()?;
            return Ok(None);
        }
        // Staged bytes not yet written are not in the page cache the caller's sync covers.
        let end = self.written_end();
        if self.checkpointed == end && self.recovery_point == end && !self.dir_dirty && self.owed.is_empty() {
            return Ok(None);
        }
        for seg in &mut self.segments {
            seg.write_indexes()?;
        }
        let path = tmp_path(self);
        let io = |source| LogError::Io { op: "write checkpoint", path: path.clone(), source };
        let file = self.disk.open(&path, true).map_err(io)?;
        file.truncate(0).map_err(io)?;
        file.write_at(format!("{end}\n").as_bytes(), 0).map_err(io)?;
        let (serial, cuts) = self.deferred.marks();
        Ok(Some(StagedCheckpoint { end, serial, cuts, dir_changes: self.deferred.dir_changes, owed: self.owed.mark() }))
    }

    /// The second half, after a `sync_all` that followed [`Log::checkpoint_stage`]: everything
    /// the log had written when staged is durable, so the recovery point moves up to that end,
    /// and the staged file replaces the checkpoint (durable at the caller's next `sync_all`;
    /// until then the old one stands, which vouches for less). Appends between the halves
    /// change nothing of that (they lie past the staged end, and count as unflushed); a
    /// truncation or a reopen between them voids the commit, since the staged end may then
    /// vouch for bytes the sync never saw: the old checkpoint stays, the next one will do.
    pub fn checkpoint_commit(&mut self, staged: StagedCheckpoint) -> Result<(), LogError> {
        self.check_failed()?;
        if (staged.serial, staged.cuts) != self.deferred.marks() {
            return Ok(());
        }
        self.owed.paid_to(staged.owed);
        if staged.end == self.log_end_offset() {
            self.dir_dirty &= staged.dir_changes != self.deferred.dir_changes;
            for seg in &mut self.segments {
                seg.indexes_are_durable();
            }
            self.mark_flushed(staged.end);
        } else {
            // What changed since (new segments, index entries, owed names) is left for the
            // next flush or checkpoint to make durable.
            self.recovery_point = self.recovery_point.max(staged.end);
        }
        let (from, to) = (tmp_path(self), self.dir.join(RECOVERY_POINT_FILE));
        self.disk.rename(&from, &to).map_err(|source| LogError::Io { op: "rename checkpoint", path: from, source })?;
        self.checkpointed = staged.end;
        Ok(())
    }

    /// A file-system sync covering this log failed: after a failed sync the kernel may have
    /// dropped the dirty pages, so the log refuses writes until it is reopened and recovered,
    /// as after its own failed flush.
    pub fn sync_failed(&mut self, why: &str) {
        self.go_offline(format!("file-system sync failed: {why}"), false);
    }
}
