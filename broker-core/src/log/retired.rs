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
