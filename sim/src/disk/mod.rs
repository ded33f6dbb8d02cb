//! `SimDisk`: a deterministic, crash-faithful, in-memory [`Disk`] for the simulator.
//!
//! The harness owns one `SimDisk` per node (it is an `Arc` inside, cheap to clone), so the disk
//! outlives the node's crashes; the node only ever sees it as `dyn Disk`. It must never read a
//! clock, a thread RNG or the real file system, and never panic on any call sequence.
//!
//! # Model
//!
//! * **Namespace.** Paths (lexically normalised, no symlinks) map to directories or inode ids,
//!   kept twice: the *durable* namespace and the *current* one. `open` with `create` on a missing
//!   path, `rename`, `remove` and `create_dir_all` change the current namespace at once and append
//!   one op each (create, rename, remove, mkdir) to a single pending metadata journal, in order.
//!   `sync_dir(d)` commits what POSIX promises: the ops on `d`'s own entries (a rename: either
//!   parent), and every earlier op they build on (an ancestor's mkdir, the create of a file
//!   renamed into `d`); other directories' ops stay pending, so code that syncs the wrong
//!   directory, or never syncs one, loses names to a power loss (before issue 26 any `sync_dir`
//!   committed the whole journal, ext4-style, which hid such code in cluster runs). `sync` of a
//!   file never commits the journal: a synced file may still lose its name. `sync_all` (syncfs)
//!   syncs every file with unsynced ops, then commits the whole journal.
//! * **Contents.** Per inode: `durable` bytes, the ops (`Write`, `Truncate`) since its last
//!   `sync`, and `current` = durable with those ops applied (cached: reads always see it).
//!   `sync` applies the pending ops to `durable`. An unlinked inode lives while an open handle,
//!   either namespace or the journal refers to it; its space is freed at the next `sync_dir`.
//! * **Crash, `Clean`** (process kill, clean shutdown): the OS page cache survives, so every
//!   pending op, data and namespace, becomes durable.
//! * **Crash, `PowerLoss`**: per inode, each pending op independently and in order is applied,
//!   dropped, or (writes only) torn. A torn write is split at absolute [`sector_bytes`] (512)
//!   boundaries; a random proper prefix of its pieces persists and each other piece keeps its old
//!   bytes or, one time in [`TORN_GARBAGE_ONE_IN`], becomes RNG garbage. Tearing touches only the
//!   write's own byte range, so synced bytes sharing a sector with it survive (real drives can do
//!   worse; not modelled). A dropped write past the old end followed by an applied one leaves a
//!   zero gap: intended, recovery must cope. The namespace keeps a random prefix of the journal
//!   (it commits in order), so a rename is atomic: the old name or the new, never both/neither.
//! * After any crash every handle opened before it is stale (a generation counter): each call on
//!   it fails with `ErrorKind::Other`, "stale handle from before crash", like a dead process's fds.
//!   Stall still owed is forgotten with the process that owed it.
//!
//! Every choice (crash outcomes, garbage, latency) is drawn from one `ChaCha8Rng` seeded at
//! construction, in `BTreeMap` order, so a seed and a call sequence give one result.
//!
//! # Faults
//!
//! [`DiskFaults`] (all off by default, changeable with [`SimDisk::set_faults`]): per-call latency
//! owed through [`Disk::take_stall`], a byte capacity (ENOSPC, nothing written), EIO on files
//! whose path contains a chosen substring, and a process death at the Nth call (every call from
//! it on fails, so the harness can crash the disk at a point inside a synchronous run of calls). Faults live beside the bytes, never in them: a failed
//! call changes nothing, and only `sync`, `sync_dir`, a crash or [`SimDisk::corrupt`] (planted
//! corruption, for tests) change what is durable.
//!
//! # Layout
//!
//! This file holds the model's state and the harness-facing calls (crash, inspect, corrupt);
//! `namespace` the names and the journal, `contents` the bytes of each inode, `crash` what
//! survives a crash, `faults` the settings that make calls slow or fail, `file` the [`Disk`]
//! and [`DiskFile`] implementations the broker sees, and `paths` path normal form and errors.
//!
//! [`Disk`]: broker_core::storage::Disk
//! [`DiskFile`]: broker_core::storage::DiskFile
//! [`Disk::take_stall`]: broker_core::storage::Disk::take_stall
//! [`sector_bytes`]: broker_core::constants::sector_bytes

mod contents;
mod crash;
mod faults;
mod file;
mod namespace;
mod paths;
#[cfg(test)]
mod tests;

pub use crash::{CrashMode, CrashReport, TORN_GARBAGE_ONE_IN};
pub use faults::DiskFaults;

use contents::{apply, Inode};
use faults::assert_valid;
use namespace::{file_ino, Namespace, NsOp};
use paths::{fail, normalize, not_found};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, ErrorKind};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// The simulated disk of one node. Clones share the same disk.
#[derive(Clone)]
pub struct SimDisk {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for SimDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = lock(&self.state);
        f.debug_struct("SimDisk")
            .field("generation", &s.generation)
            .field("inodes", &s.inodes.len())
            .field("journal", &s.journal.len())
            .field("used_bytes", &s.used_bytes)
            .finish()
    }
}

/// Everything one disk holds, behind one lock; each submodule implements its part of it.
struct State {
    rng: ChaCha8Rng,
    faults: DiskFaults,
    /// Bumped by every crash; handles from an older generation are stale.
    generation: u64,
    next_ino: u64,
    inodes: BTreeMap<u64, Inode>,
    durable_ns: Namespace,
    current_ns: Namespace,
    /// Namespace ops applied to `current_ns` but not yet to `durable_ns`, oldest first.
    journal: Vec<NsOp>,
    /// Sum of `current.len()` over all inodes, checked against `capacity_bytes`.
    used_bytes: u64,
    stall_ns: u64,
    /// Charged calls so far (see `DiskFaults::dead_from_op`).
    ops: u64,
    /// An inode may have become unreachable since the last garbage collection (a name was
    /// removed or replaced, or a handle closed): the next `sync_dir` collects.
    gc_due: bool,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().expect("SimDisk lock poisoned: a test panicked while holding it")
}

impl SimDisk {
    /// A fault-free disk whose crash outcomes come from `seed`.
    pub fn new(seed: u64) -> Self {
        Self::with_faults(seed, DiskFaults::default())
    }

    /// Panics if `faults` fails [`DiskFaults::validate`].
    pub fn with_faults(seed: u64, faults: DiskFaults) -> Self {
        assert_valid(&faults);
        let state = State {
            rng: ChaCha8Rng::seed_from_u64(seed),
            faults,
            generation: 0,
            next_ino: 1,
            inodes: BTreeMap::new(),
            durable_ns: Namespace::new(),
            current_ns: Namespace::new(),
            journal: Vec::new(),
            used_bytes: 0,
            stall_ns: 0,
            ops: 0,
            gc_due: false,
        };
        SimDisk { state: Arc::new(Mutex::new(state)) }
    }

    /// Replaces the fault settings from the next call on. Panics if they fail validation.
    pub fn set_faults(&self, faults: DiskFaults) {
        assert_valid(&faults);
        lock(&self.state).faults = faults;
    }

    pub fn faults(&self) -> DiskFaults {
        lock(&self.state).faults.clone()
    }

    /// Takes the node down: see the module header for what survives. Owed stall is forgotten
    /// (the process that owed it is gone) and every open handle becomes stale.
    pub fn crash(&self, mode: CrashMode) -> CrashReport {
        lock(&self.state).crash(mode)
    }

    /// The bytes `path` would hold after a crash with nothing pending; `None` if it is not a
    /// file in the durable namespace.
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let s = lock(&self.state);
        let ino = file_ino(&s.durable_ns, &normalize(path))?;
        s.inodes.get(&ino).map(|i| i.durable.clone())
    }

    /// The bytes a read of `path` sees now; `None` if it is not a file.
    pub fn current_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let s = lock(&self.state);
        let ino = file_ino(&s.current_ns, &normalize(path))?;
        s.inodes.get(&ino).map(|i| i.current.clone())
    }

    /// Charged calls made so far: what [`DiskFaults::dead_from_op`] counts.
    pub fn ops(&self) -> u64 {
        lock(&self.state).ops
    }

    /// Total current bytes of all live files: what `capacity_bytes` is checked against.
    pub fn used_bytes(&self) -> u64 {
        lock(&self.state).used_bytes
    }

    /// Unsynced data ops over all files plus uncommitted journal entries.
    pub fn pending_ops(&self) -> usize {
        let s = lock(&self.state);
        s.inodes.values().map(|i| i.pending.len()).sum::<usize>() + s.journal.len()
    }

    /// Plants corruption: overwrites the durable bytes of `path` at `offset`, which must lie
    /// within its durable length. Current contents are recomputed from them, so reads see the
    /// corruption except where a pending write will cover it anyway.
    pub fn corrupt(&self, path: &Path, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let path = normalize(path);
        let mut s = lock(&self.state);
        let ino = file_ino(&s.current_ns, &path).ok_or_else(|| not_found("corrupt", &path))?;
        let inode = s.inode_mut(ino, &path)?;
        let durable_len = inode.durable.len() as u64;
        let end = offset.checked_add(bytes.len() as u64).filter(|&end| end <= durable_len);
        let Some(end) = end else {
            let why = format!(
                "range {offset}+{} is past durable length {durable_len}; sync first",
                bytes.len()
            );
            return Err(fail(ErrorKind::InvalidInput, "corrupt", &path, &why));
        };
        inode.durable[offset as usize..end as usize].copy_from_slice(bytes);
        let mut current = inode.durable.clone();
        inode.pending.iter().for_each(|op| apply(&mut current, op));
        inode.current = current;
        Ok(())
    }
}

#[cfg(test)]
impl SimDisk {
    /// The model's own invariants: replaying what is pending over what is durable gives what is
    /// current, for every file and for the namespace; the capacity count matches the files.
    fn check_invariants(&self) {
        let s = lock(&self.state);
        for (ino, inode) in &s.inodes {
            let mut replay = inode.durable.clone();
            inode.pending.iter().for_each(|op| apply(&mut replay, op));
            assert!(replay == inode.current, "inode {ino}: durable + pending != current");
        }
        let mut ns = s.durable_ns.clone();
        s.journal.iter().for_each(|op| namespace::ns_apply(&mut ns, op));
        assert_eq!(ns, s.current_ns, "durable namespace + journal != current");
        let used: u64 = s.inodes.values().map(|i| i.current.len() as u64).sum();
        assert_eq!(used, s.used_bytes);
    }
}
