//! What survives a crash: the `Clean` and `PowerLoss` bullets of the model, in code. A clean
//! crash makes everything pending durable; power loss decides each pending op's fate (applied,
//! dropped, torn at sector granularity) and keeps a random prefix of the metadata journal.
//!
//! Every fate is drawn from the disk's RNG, inode by inode in `BTreeMap` order and op by op,
//! so a seed gives one outcome; the order of draws here must never change, or every seed's
//! outcome changes with it. Nothing here may touch bytes that were synced before the crash.

use super::contents::{apply, write_into, DataOp, Inode};
use super::namespace::ns_apply;
use super::State;
use broker_core::constants::sector_bytes;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// Power loss: percent of pending writes that persist whole, and that vanish; the rest tear.
/// All three stay common so a few hundred seeds see each outcome many times.
const WRITE_APPLIED_PERCENT: u32 = 40;
const WRITE_DROPPED_PERCENT: u32 = 30;
const _: () = assert!(WRITE_APPLIED_PERCENT + WRITE_DROPPED_PERCENT < 100, "no room to tear");

/// Power loss: percent of pending truncates that persist.
const TRUNCATE_APPLIED_PERCENT: u32 = 50;

/// A sector piece a torn write did not persist holds garbage one time in this many, else its
/// old bytes: garbage is rarer on real drives, but it is what checksums exist for.
pub const TORN_GARBAGE_ONE_IN: u32 = 4;

/// How a node goes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Process killed or shut down: the OS still writes back everything pending.
    Clean,
    /// The machine loses power: pending ops may be kept, dropped or torn.
    PowerLoss,
}

/// What a crash did, for trace lines and test assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashReport {
    pub mode: CrashMode,
    /// Pending data ops (writes, truncates) that became durable whole.
    pub ops_applied: usize,
    /// Pending data ops lost entirely.
    pub ops_dropped: usize,
    /// Pending writes that persisted in part and/or left garbage.
    pub ops_torn: usize,
    /// Journal entries (create, rename, remove, mkdir) that survived.
    pub journal_kept: usize,
    /// Journal entries lost (always a suffix of the journal).
    pub journal_lost: usize,
}

impl fmt::Display for CrashReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            CrashMode::Clean => "clean",
            CrashMode::PowerLoss => "power_loss",
        };
        write!(
            f,
            "crash={mode} ops_applied={} ops_dropped={} ops_torn={} journal_kept={} journal_lost={}",
            self.ops_applied, self.ops_dropped, self.ops_torn, self.journal_kept, self.journal_lost
        )
    }
}

impl State {
    pub(super) fn crash(&mut self, mode: CrashMode) -> CrashReport {
        let journal = self.journal.len();
        let keep = match mode {
            CrashMode::Clean => journal,
            CrashMode::PowerLoss => self.rng.gen_range(0..=journal),
        };
        let mut report = CrashReport {
            mode,
            ops_applied: 0,
            ops_dropped: 0,
            ops_torn: 0,
            journal_kept: keep,
            journal_lost: journal - keep,
        };
        self.journal.truncate(keep);
        for op in self.journal.drain(..) {
            ns_apply(&mut self.durable_ns, &op);
        }
        self.current_ns = self.durable_ns.clone();

        for inode in self.inodes.values_mut() {
            match mode {
                CrashMode::Clean => {
                    report.ops_applied += inode.pending.len();
                    inode.pending.clear();
                    inode.durable = inode.current.clone();
                }
                CrashMode::PowerLoss => lose_power(&mut self.rng, inode, &mut report),
            }
            inode.handles = 0;
        }
        self.generation += 1;
        self.stall_ns = 0;
        self.collect_garbage();
        report
    }
}

/// Decides the fate of each pending op of one inode, in order, and rebuilds its contents.
fn lose_power(rng: &mut ChaCha8Rng, inode: &mut Inode, report: &mut CrashReport) {
    for op in std::mem::take(&mut inode.pending) {
        let roll = rng.gen_range(0..100);
        match &op {
            DataOp::Truncate { .. } if roll < TRUNCATE_APPLIED_PERCENT => {
                apply(&mut inode.durable, &op);
                report.ops_applied += 1;
            }
            DataOp::Write { .. } if roll < WRITE_APPLIED_PERCENT => {
                apply(&mut inode.durable, &op);
                report.ops_applied += 1;
            }
            DataOp::Truncate { .. } => report.ops_dropped += 1,
            DataOp::Write { .. } if roll < WRITE_APPLIED_PERCENT + WRITE_DROPPED_PERCENT => {
                report.ops_dropped += 1
            }
            DataOp::Write { offset, bytes } => {
                tear(rng, &mut inode.durable, *offset, bytes);
                report.ops_torn += 1;
            }
        }
    }
    inode.current = inode.durable.clone();
}

/// Persists a proper prefix of the write's sector pieces; each later piece keeps its old bytes
/// or becomes garbage. A written piece past the old end extends the file (zeros in any gap).
fn tear(rng: &mut ChaCha8Rng, image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let pieces = sector_pieces(offset, bytes.len());
    if pieces.is_empty() {
        return;
    }
    let persisted = rng.gen_range(0..pieces.len());
    for (i, &(start, end)) in pieces.iter().enumerate() {
        let at = offset + start as u64;
        if i < persisted {
            write_into(image, at, &bytes[start..end]);
        } else if rng.gen_range(0..TORN_GARBAGE_ONE_IN) == 0 {
            let mut junk = vec![0u8; end - start];
            rng.fill_bytes(&mut junk);
            write_into(image, at, &junk);
        }
    }
}

/// Splits a write of `len` bytes at `offset` at absolute sector boundaries, as `start..end`
/// ranges into the written buffer.
pub(super) fn sector_pieces(offset: u64, len: usize) -> Vec<(usize, usize)> {
    let sector = sector_bytes as u64;
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < len {
        let room = (sector - (offset + start as u64) % sector) as usize;
        let end = len.min(start + room);
        pieces.push((start, end));
        start = end;
    }
    pieces
}
