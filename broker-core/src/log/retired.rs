//! Segments a cleaning swap replaced, freed a slice at a time. By the swap's end their files
//! are gone from the directory, and what is left is the cost of freeing them: the last close
//! of a removed file frees its cached pages and its blocks — on ext4 mounted with `discard`,
//! about 45 ms per 64 MiB on the benchmark machine, and a swap replaces up to a group of
//! segments at once, inside one step that holds every request of the broker. So the swap
//! hands them here, and each later step of the cleaner cuts the oldest one by
//! [`retired_slice_bytes`] from its end, closing it once empty: the same work in pieces the size
//! of a step (docs/journal/benchmarks.md, session 16).
//!
//! A file that a fetch still reads (a region in flight holds it) is never cut under it: the log
//! lets go of it, and the reader's last handle closes it. Nothing here is durable state — a
//! crash leaves nothing to free, as the names were removed and synced by the swap.

use super::region::SegmentLog;
use std::fmt;
use crate::constants::retired_slice_bytes;
use crate::storage::DiskFile;
use std::collections::VecDeque;
use std::sync::Arc;

/// The replaced segments' `.log` files still to free, oldest first.
#[derive(Default)]
pub(super) struct Retired(VecDeque<Arc<SegmentLog>>);

impl Retired {
    pub(super) fn push(&mut self, file: Arc<SegmentLog>) {
        self.0.push_back(file);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Frees one slice of the oldest file (all of it when that is all it holds, or when a
    /// reader still holds it or it cannot be cut: then closing is all the log can do).
    pub(super) fn free_slice(&mut self) {
        let Some(file) = self.0.pop_front() else { return };
        if Arc::strong_count(&file) > 1 {
            return;
        }
        let len = file.len().unwrap_or(0);
        // A plain truncate, not a `cut`: no region reads this file any more.
        if len > retired_slice_bytes && file.truncate(len - retired_slice_bytes).is_ok() {
            self.0.push_front(file);
        }
    }
}

/// The `.log` files of segments retention or DeleteRecords removed, names already gone, for the
/// owner to close off its lock (`Log::take_released`): the last close frees a file's pages and
/// blocks, tens of milliseconds for a large segment (see above), which a decision must not wait
/// for. A file a fetch still reads closes with the reader's last handle, as before.
pub struct Released(Vec<Arc<SegmentLog>>);

impl Released {
    /// Closes them (blocking: run it where that stops nobody else).
    pub fn close(self) {
        drop(self.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Released {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Released({} files)", self.0.len())
    }
}

/// The same files, by identity (so actions compare in tests).
impl PartialEq for Released {
    fn eq(&self, other: &Released) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl Eq for Released {}

impl Clone for Released {
    fn clone(&self) -> Released {
        Released(self.0.clone())
    }
}

impl Released {
    pub(super) fn new(files: Vec<Arc<SegmentLog>>) -> Released {
        Released(files)
    }
}
