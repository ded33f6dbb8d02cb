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
//!   one op each (create, rename, remove, mkdir) to a single pending metadata journal. `sync_dir`
//!   of any directory commits the *whole* journal, like ext4's one ordered journal (POSIX only
//!   promises the synced directory, so this is kinder than POSIX to code that syncs the wrong
//!   one). `sync` of a file never commits the journal: a synced file may still lose its name.
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
//! owed through [`Disk::take_stall`], a byte capacity (ENOSPC, nothing written), and EIO on files
//! whose path contains a chosen substring. Faults live beside the bytes, never in them: a failed
//! call changes nothing, and only `sync`, `sync_dir`, a crash or [`SimDisk::corrupt`] (planted
//! corruption, for tests) change what is durable.

use broker_core::constants::sector_bytes;
use broker_core::storage::{Disk, DiskFile};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{self, ErrorKind};
use std::ops::Bound;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Largest file the model holds: the broker's own segment limit. Past it a write gets EFBIG
/// instead of a multi-gigabyte allocation from a bad offset.
const FILE_BYTES_MAX: u64 = broker_core::constants::segment_bytes_max;

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

/// A latency bound above one minute per call is surely a unit mistake (seconds given as ns).
const LATENCY_NS_LIMIT: u64 = 60_000_000_000;

/// Disk faults for one node. All default to off; [`DiskFaults::validate`] checks the ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskFaults {
    /// Least stall each IO call owes, in nanoseconds (drawn uniformly up to `latency_ns_max`).
    pub latency_ns_min: u64,
    /// Most stall each IO call owes, in nanoseconds. Calls charged: everything but `exists`
    /// and `len`, which real systems answer from cached metadata.
    pub latency_ns_max: u64,
    /// Cap on the total current bytes of all live files. A write, append or truncate that would
    /// grow the total past it fails with `ErrorKind::StorageFull` and changes nothing.
    pub capacity_bytes: Option<u64>,
    /// A file whose path (as it was opened) contains any of these substrings fails `read_at`,
    /// `write_at`, `append`, `truncate` and `sync` with raw OS error EIO; namespace calls still
    /// work, as with bad blocks under one file. An empty string matches every file.
    pub eio_paths: Vec<String>,
}

impl DiskFaults {
    /// Checks that the settings make sense; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.latency_ns_min > self.latency_ns_max {
            return Err(format!(
                "DiskFaults: latency_ns_min {} > latency_ns_max {}",
                self.latency_ns_min, self.latency_ns_max
            ));
        }
        if self.latency_ns_max > LATENCY_NS_LIMIT {
            return Err(format!(
                "DiskFaults: latency_ns_max {} ns is over a minute per call; unit mistake?",
                self.latency_ns_max
            ));
        }
        Ok(())
    }
}

/// Harness configuration is checked once, loudly: a bad fault mix is a harness bug.
fn assert_valid(faults: &DiskFaults) {
    if let Err(msg) = faults.validate() {
        panic!("{msg}");
    }
}

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

type Namespace = BTreeMap<PathBuf, Node>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Dir,
    File(u64),
}

/// One metadata change, as the journal records it.
#[derive(Debug, Clone)]
enum NsOp {
    Mkdir(PathBuf),
    Create(PathBuf, u64),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
}

#[derive(Debug, Clone)]
enum DataOp {
    Write { offset: u64, bytes: Vec<u8> },
    Truncate { len: u64 },
}

#[derive(Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    /// `durable` with `pending` applied: what reads see.
    current: Vec<u8>,
    pending: Vec<DataOp>,
    /// Live handles: an unlinked inode must stay readable through them (POSIX).
    handles: u32,
}

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

// ---------------------------------------------------------------------------------------------
// Paths and errors

/// Lexical normal form, so `a/./b`, `a//b` and `a/x/../b` name one entry. Exact here because the
/// model has no symlinks; `..` above the top stays at the top, as `/..` does in POSIX.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `/` and the empty relative path (the working directory) always exist as directories.
fn is_root(path: &Path) -> bool {
    path.parent().is_none()
}

fn node(ns: &Namespace, path: &Path) -> Option<Node> {
    if is_root(path) {
        Some(Node::Dir)
    } else {
        ns.get(path).copied()
    }
}

fn file_ino(ns: &Namespace, path: &Path) -> Option<u64> {
    match node(ns, path)? {
        Node::File(ino) => Some(ino),
        Node::Dir => None,
    }
}

fn parent_is_dir(ns: &Namespace, path: &Path) -> bool {
    path.parent().is_some_and(|dir| node(ns, dir) == Some(Node::Dir))
}

/// Entries strictly below `dir`: contiguous in a `BTreeMap` because paths order by component.
fn descendants<'a>(
    ns: &'a Namespace,
    dir: &'a Path,
) -> impl Iterator<Item = (&'a PathBuf, &'a Node)> {
    ns.range::<Path, _>((Bound::Excluded(dir), Bound::Unbounded))
        .take_while(move |(p, _)| p.starts_with(dir))
}

fn fail(kind: ErrorKind, what: &str, path: &Path, why: &str) -> io::Error {
    io::Error::new(kind, format!("{what} {}: {why}", path.display()))
}

fn not_found(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::NotFound, what, path, "no such file or directory")
}

fn is_a_dir(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::IsADirectory, what, path, "is a directory")
}

fn not_a_dir(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::NotADirectory, what, path, "not a directory")
}

/// `Ok` if `dir` is an existing directory, else the error POSIX would give.
fn check_dir(ns: &Namespace, dir: &Path, what: &str) -> io::Result<()> {
    match node(ns, dir) {
        None => Err(not_found(what, dir)),
        Some(Node::File(_)) => Err(not_a_dir(what, dir)),
        Some(Node::Dir) => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Namespace and journal

/// Applies one journal op. Only ever called with ops already validated against the namespace
/// they were first applied to, so replaying a journal prefix on the durable one cannot fail.
fn ns_apply(ns: &mut Namespace, op: &NsOp) {
    match op {
        NsOp::Mkdir(dir) => {
            ns.insert(dir.clone(), Node::Dir);
        }
        NsOp::Create(path, ino) => {
            ns.insert(path.clone(), Node::File(*ino));
        }
        NsOp::Remove(path) => {
            ns.remove(path);
        }
        NsOp::Rename(from, to) => {
            let mut moved: Vec<(PathBuf, Node)> =
                descendants(ns, from).map(|(p, n)| (p.clone(), *n)).collect();
            moved.extend(ns.get(from).map(|n| (from.clone(), *n)));
            for (path, _) in &moved {
                ns.remove(path);
            }
            for (path, n) in moved {
                let rel = path.strip_prefix(from).unwrap_or(Path::new(""));
                let dest = if rel.as_os_str().is_empty() { to.clone() } else { to.join(rel) };
                ns.insert(dest, n);
            }
        }
    }
}

impl State {
    fn log(&mut self, op: NsOp) {
        ns_apply(&mut self.current_ns, &op);
        self.journal.push(op);
    }

    fn open(&mut self, path: &Path, create: bool) -> io::Result<u64> {
        let ino = match node(&self.current_ns, path) {
            Some(Node::File(ino)) => ino,
            Some(Node::Dir) => return Err(is_a_dir("open", path)),
            None if !create || !parent_is_dir(&self.current_ns, path) => {
                return Err(not_found("open", path))
            }
            None => {
                let ino = self.next_ino;
                self.next_ino += 1;
                self.inodes.insert(ino, Inode::default());
                self.log(NsOp::Create(path.to_path_buf(), ino));
                ino
            }
        };
        self.inode_mut(ino, path)?.handles += 1;
        Ok(ino)
    }

    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        let mut at = PathBuf::new();
        for c in dir.components() {
            at.push(c);
            match node(&self.current_ns, &at) {
                Some(Node::Dir) => {}
                Some(Node::File(_)) if at == dir => {
                    return Err(fail(ErrorKind::AlreadyExists, "mkdir", dir, "is a file"))
                }
                Some(Node::File(_)) => return Err(not_a_dir("mkdir", &at)),
                None => self.log(NsOp::Mkdir(at.clone())),
            }
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        check_dir(&self.current_ns, dir, "list")?;
        let mut names: Vec<String> = descendants(&self.current_ns, dir)
            .filter(|(p, _)| p.parent() == Some(dir))
            .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let ns = &self.current_ns;
        let src = node(ns, from).ok_or_else(|| not_found("rename", from))?;
        if is_root(from) || is_root(to) {
            return Err(fail(ErrorKind::InvalidInput, "rename", from, "cannot rename a root"));
        }
        if !parent_is_dir(ns, to) {
            return Err(not_found("rename to", to));
        }
        if from == to {
            return Ok(());
        }
        match (src, ns.get(to)) {
            (Node::File(_), Some(Node::Dir)) => return Err(is_a_dir("rename to", to)),
            (Node::Dir, Some(Node::File(_))) => return Err(not_a_dir("rename to", to)),
            (Node::Dir, _) if to.starts_with(from) => {
                return Err(fail(ErrorKind::InvalidInput, "rename", from, "into itself"))
            }
            (Node::Dir, Some(Node::Dir)) if descendants(ns, to).next().is_some() => {
                return Err(fail(ErrorKind::DirectoryNotEmpty, "rename to", to, "not empty"))
            }
            _ => {}
        }
        self.log(NsOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        match node(&self.current_ns, path) {
            None => Err(not_found("remove", path)),
            Some(Node::Dir) => Err(is_a_dir("remove", path)),
            Some(Node::File(_)) => {
                self.log(NsOp::Remove(path.to_path_buf()));
                Ok(())
            }
        }
    }

    fn remove_dir(&mut self, dir: &Path) -> io::Result<()> {
        match node(&self.current_ns, dir) {
            None => Err(not_found("remove directory", dir)),
            Some(Node::File(_)) => Err(not_a_dir("remove directory", dir)),
            Some(Node::Dir) if is_root(dir) || descendants(&self.current_ns, dir).next().is_some() => {
                Err(fail(ErrorKind::DirectoryNotEmpty, "remove directory", dir, "directory not empty"))
            }
            Some(Node::Dir) => {
                self.log(NsOp::Remove(dir.to_path_buf()));
                Ok(())
            }
        }
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        check_dir(&self.current_ns, dir, "fsync directory")?;
        for op in self.journal.drain(..) {
            ns_apply(&mut self.durable_ns, &op);
        }
        self.collect_garbage();
        Ok(())
    }

    /// Frees inodes nothing can reach any more: no name in either namespace, no journal entry,
    /// no open handle.
    fn collect_garbage(&mut self) {
        let mut live: BTreeSet<u64> = BTreeSet::new();
        for ns in [&self.durable_ns, &self.current_ns] {
            live.extend(ns.values().filter_map(|n| match n {
                Node::File(ino) => Some(*ino),
                Node::Dir => None,
            }));
        }
        live.extend(self.journal.iter().filter_map(|op| match op {
            NsOp::Create(_, ino) => Some(*ino),
            _ => None,
        }));
        self.inodes.retain(|ino, inode| inode.handles > 0 || live.contains(ino));
        self.used_bytes = self.inodes.values().map(|i| i.current.len() as u64).sum();
    }
}

// ---------------------------------------------------------------------------------------------
// File contents

fn write_into(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    // Offsets are bounded by FILE_BYTES_MAX before any op is recorded, so these casts are exact.
    let start = offset as usize;
    let end = start + bytes.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(bytes);
}

fn apply(image: &mut Vec<u8>, op: &DataOp) {
    match op {
        DataOp::Write { offset, bytes } => write_into(image, *offset, bytes),
        DataOp::Truncate { len } => image.resize(*len as usize, 0),
    }
}

fn too_large(path: &Path) -> io::Error {
    fail(ErrorKind::FileTooLarge, "write", path, &format!("would exceed {FILE_BYTES_MAX} bytes"))
}

impl State {
    fn inode_mut(&mut self, ino: u64, path: &Path) -> io::Result<&mut Inode> {
        // Unreachable while handles are counted; an error rather than a panic all the same.
        self.inodes.get_mut(&ino).ok_or_else(|| fail(ErrorKind::Other, "inode of", path, "gone"))
    }

    /// Accounts for file `ino` becoming `new_len` bytes long (`None`: overflowed). Fails with
    /// EFBIG past the size limit or ENOSPC past capacity, changing nothing; else returns the
    /// inode for the caller to change.
    fn resize(&mut self, ino: u64, path: &Path, new_len: Option<u64>) -> io::Result<&mut Inode> {
        let new_len = new_len.filter(|&n| n <= FILE_BYTES_MAX).ok_or_else(|| too_large(path))?;
        let old = self.inode_mut(ino, path)?.current.len() as u64;
        let used = self.used_bytes.saturating_sub(old).saturating_add(new_len);
        if new_len > old && self.faults.capacity_bytes.is_some_and(|cap| used > cap) {
            return Err(fail(ErrorKind::StorageFull, "write", path, "no space left on device"));
        }
        self.used_bytes = used;
        self.inode_mut(ino, path)
    }

    fn charge_latency(&mut self) {
        let (min, max) = (self.faults.latency_ns_min, self.faults.latency_ns_max);
        let ns = if max > min { self.rng.gen_range(min..=max) } else { min };
        self.stall_ns = self.stall_ns.saturating_add(ns);
    }

    fn check_eio(&self, path: &Path) -> io::Result<()> {
        let path = path.to_string_lossy();
        if self.faults.eio_paths.iter().any(|bad| path.contains(bad.as_str())) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        Ok(())
    }

    fn read(&mut self, ino: u64, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.check_eio(path)?;
        let current = &self.inode_mut(ino, path)?.current;
        let len = current.len() as u64;
        if offset >= len {
            return Ok(0);
        }
        let n = buf.len().min((len - offset) as usize);
        buf[..n].copy_from_slice(&current[offset as usize..offset as usize + n]);
        Ok(n)
    }

    fn write(&mut self, ino: u64, path: &Path, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check_eio(path)?;
        // POSIX: a zero-length write changes nothing, not even the length.
        if buf.is_empty() {
            return Ok(());
        }
        let old = self.inode_mut(ino, path)?.current.len() as u64;
        let end = offset.checked_add(buf.len() as u64);
        let inode = self.resize(ino, path, end.map(|end| end.max(old)))?;
        write_into(&mut inode.current, offset, buf);
        inode.pending.push(DataOp::Write { offset, bytes: buf.to_vec() });
        Ok(())
    }

    fn truncate(&mut self, ino: u64, path: &Path, len: u64) -> io::Result<()> {
        self.check_eio(path)?;
        let inode = self.resize(ino, path, Some(len))?;
        let op = DataOp::Truncate { len };
        apply(&mut inode.current, &op);
        inode.pending.push(op);
        Ok(())
    }

    fn sync(&mut self, ino: u64, path: &Path) -> io::Result<()> {
        self.check_eio(path)?;
        let inode = self.inode_mut(ino, path)?;
        // Replaying the ops costs what was written since the last sync, not the file size.
        for op in inode.pending.drain(..) {
            apply(&mut inode.durable, &op);
        }
        debug_assert_eq!(inode.durable.len(), inode.current.len());
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Crashes

impl State {
    fn crash(&mut self, mode: CrashMode) -> CrashReport {
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
fn sector_pieces(offset: u64, len: usize) -> Vec<(usize, usize)> {
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

// ---------------------------------------------------------------------------------------------
// The traits

impl SimDisk {
    /// Locks the disk for one charged call.
    fn enter(&self) -> MutexGuard<'_, State> {
        let mut s = lock(&self.state);
        s.charge_latency();
        s
    }
}

impl Disk for SimDisk {
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn DiskFile>> {
        let path = normalize(path);
        let mut s = self.enter();
        let ino = s.open(&path, create)?;
        let generation = s.generation;
        Ok(Box::new(SimFile { state: self.state.clone(), ino, generation, path }))
    }

    fn exists(&self, path: &Path) -> bool {
        node(&lock(&self.state).current_ns, &normalize(path)).is_some()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.enter().create_dir_all(&normalize(dir))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.enter().list(&normalize(dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.enter().rename(&normalize(from), &normalize(to))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.enter().remove(&normalize(path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.enter().remove_dir(&normalize(dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.enter().sync_dir(&normalize(dir))
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
            if let Some(inode) = s.inodes.get_mut(&self.ino) {
                inode.handles = inode.handles.saturating_sub(1);
            }
        }
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
        s.journal.iter().for_each(|op| ns_apply(&mut ns, op));
        assert_eq!(ns, s.current_ns, "durable namespace + journal != current");
        let used: u64 = s.inodes.values().map(|i| i.current.len() as u64).sum();
        assert_eq!(used, s.used_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::storage::{conformance, read_exact_at, write_atomically};

    fn p(path: &str) -> PathBuf {
        PathBuf::from(path)
    }

    /// A disk with a durable `/d`.
    fn disk_with_dir(seed: u64, faults: DiskFaults) -> SimDisk {
        let disk = SimDisk::with_faults(seed, faults);
        disk.create_dir_all(&p("/d")).unwrap();
        disk.sync_dir(&p("/")).unwrap();
        disk
    }

    /// Creates `path` holding `bytes`, synced and with its name durable.
    fn synced_file(disk: &SimDisk, path: &str, bytes: &[u8]) -> Box<dyn DiskFile> {
        let f = disk.open(&p(path), true).unwrap();
        f.write_at(bytes, 0).unwrap();
        f.sync().unwrap();
        disk.sync_dir(&broker_core::storage::parent_of(&p(path))).unwrap();
        f
    }

    fn read_all(disk: &SimDisk, path: &str) -> Vec<u8> {
        let f = disk.open(&p(path), false).unwrap();
        let mut buf = vec![0u8; f.len().unwrap() as usize];
        read_exact_at(f.as_ref(), &mut buf, 0).unwrap();
        buf
    }

    #[test]
    fn conforms_to_disk_contract() {
        conformance::run(&SimDisk::new(1), Path::new("/root"));
        conformance::run(&SimDisk::new(2), Path::new("relative/root"));
    }

    #[test]
    fn clean_crash_keeps_everything() {
        let disk = disk_with_dir(7, DiskFaults::default());
        let f = disk.open(&p("/d/a"), true).unwrap();
        f.append(b"unsynced").unwrap();
        f.truncate(4).unwrap();
        f.append(b"-tail").unwrap();
        disk.create_dir_all(&p("/d/sub/x")).unwrap();
        disk.open(&p("/d/sub/x/b"), true).unwrap().write_at(b"bee", 1000).unwrap();
        disk.rename(&p("/d/a"), &p("/d/sub/a2")).unwrap();
        let b_before = disk.current_bytes(&p("/d/sub/x/b")).unwrap();
        assert!(disk.pending_ops() > 0);

        let report = disk.crash(CrashMode::Clean);
        assert_eq!((report.ops_applied, report.ops_dropped, report.ops_torn), (4, 0, 0));
        assert_eq!(report.journal_lost, 0);
        assert_eq!(disk.pending_ops(), 0);
        assert_eq!(disk.durable_bytes(&p("/d/sub/a2")).unwrap(), b"unsy-tail");
        assert_eq!(disk.durable_bytes(&p("/d/sub/x/b")).unwrap(), b_before);
        assert!(!disk.exists(&p("/d/a")));
        assert_eq!(read_all(&disk, "/d/sub/a2"), b"unsy-tail");
        disk.check_invariants();
    }

    #[test]
    fn power_loss_keeps_synced_bytes_exactly() {
        let synced: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8).collect();
        for seed in 0..100 {
            let disk = disk_with_dir(seed, DiskFaults::default());
            let a = synced_file(&disk, "/d/a", &synced);
            // Unsynced work after the sync: a tail sharing a sector with synced bytes, a file
            // that is synced and then left alone, an overwrite in a third file.
            a.append(&[0xEE; 1000]).unwrap();
            synced_file(&disk, "/d/b", b"bravo");
            let c = synced_file(&disk, "/d/c", &synced);
            c.write_at(&[0xEE; 700], 0).unwrap();

            disk.crash(CrashMode::PowerLoss);
            let got = disk.durable_bytes(&p("/d/a")).unwrap();
            assert!(got.len() >= synced.len() && got[..synced.len()] == synced[..], "seed {seed}");
            assert_eq!(disk.durable_bytes(&p("/d/b")).unwrap(), b"bravo", "seed {seed}");
            assert_eq!(
                disk.durable_bytes(&p("/d/c")).unwrap()[700..],
                synced[700..],
                "seed {seed}"
            );
            assert_eq!(read_all(&disk, "/d/b"), b"bravo");
            disk.check_invariants();
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Piece {
        Old,
        New,
        Garbage,
    }

    /// One unsynced write of 0x55 over synced 0xAA, crossing three sector boundaries.
    #[test]
    fn unsynced_write_is_kept_dropped_or_torn_at_sector_granularity() {
        let (offset, len) = (100usize, 1500usize);
        let (mut kept, mut dropped, mut torn, mut garbage, mut torn_clean) = (0, 0, 0, 0, 0);
        for seed in 0..200 {
            let disk = disk_with_dir(seed, DiskFaults::default());
            let f = synced_file(&disk, "/d/seg", &[0xAA; 2048]);
            f.write_at(&[0x55; 1500], offset as u64).unwrap();
            let report = disk.crash(CrashMode::PowerLoss);
            let got = disk.durable_bytes(&p("/d/seg")).unwrap();

            assert_eq!(got.len(), 2048, "seed {seed}: the write lay inside the file");
            assert!(
                got[..offset].iter().chain(&got[offset + len..]).all(|&b| b == 0xAA),
                "seed {seed}: outside bytes"
            );
            let pieces: Vec<Piece> = sector_pieces(offset as u64, len)
                .into_iter()
                .map(|(s, e)| {
                    let piece = &got[offset + s..offset + e];
                    if piece.iter().all(|&b| b == 0x55) {
                        Piece::New
                    } else if piece.iter().all(|&b| b == 0xAA) {
                        Piece::Old
                    } else {
                        // Random bytes, not a mix of old and new inside one sector.
                        let known = piece.iter().filter(|&&b| b == 0xAA || b == 0x55).count();
                        assert!(
                            known < piece.len() / 4,
                            "seed {seed}: piece {s}..{e} mixes old and new"
                        );
                        Piece::Garbage
                    }
                })
                .collect();
            assert_eq!(pieces.len(), 4);
            let first_not_new =
                pieces.iter().position(|&x| x != Piece::New).unwrap_or(pieces.len());
            assert!(
                pieces[first_not_new..].iter().all(|&x| x != Piece::New),
                "seed {seed}: {pieces:?} not a prefix"
            );

            if pieces.iter().all(|&x| x == Piece::New) {
                kept += 1;
            } else if pieces.iter().all(|&x| x == Piece::Old) {
                dropped += 1;
            } else {
                torn += 1;
                garbage += pieces.contains(&Piece::Garbage) as u32;
                torn_clean += !pieces.contains(&Piece::Garbage) as u32;
                assert_eq!(
                    report.ops_torn, 1,
                    "seed {seed}: bytes look torn, report says {report}"
                );
            }
        }
        assert!(kept > 0 && dropped > 0 && torn > 0, "kept {kept} dropped {dropped} torn {torn}");
        assert!(garbage > 0 && torn_clean > 0, "garbage {garbage} torn_clean {torn_clean}");
    }

    #[test]
    fn dropped_write_before_applied_one_leaves_zero_gap() {
        let mut gaps = 0;
        for seed in 0..200 {
            let disk = disk_with_dir(seed, DiskFaults::default());
            let f = synced_file(&disk, "/d/seg", b"");
            f.append(&[1; 512]).unwrap();
            f.append(&[2; 512]).unwrap();
            disk.crash(CrashMode::PowerLoss);
            let got = disk.durable_bytes(&p("/d/seg")).unwrap();
            assert!([0, 512, 1024].contains(&got.len()), "seed {seed}: len {}", got.len());
            gaps += (got[..got.len().min(512)] == [0; 512] && got[512..] == [2; 512]) as u32;
        }
        assert!(gaps > 0, "a zero gap before a surviving write never happened");
    }

    #[test]
    fn unsynced_create_can_vanish_synced_create_cannot() {
        let (mut vanished, mut survived) = (0, 0);
        for seed in 0..100 {
            for sync_dir in [false, true] {
                let disk = disk_with_dir(seed, DiskFaults::default());
                let f = disk.open(&p("/d/new"), true).unwrap();
                f.append(b"data").unwrap();
                f.sync().unwrap();
                if sync_dir {
                    disk.sync_dir(&p("/d")).unwrap();
                }
                disk.crash(CrashMode::PowerLoss);
                match disk.durable_bytes(&p("/d/new")) {
                    Some(bytes) => {
                        assert_eq!(bytes, b"data", "seed {seed}");
                        survived += !sync_dir as u32;
                    }
                    None => {
                        assert!(!sync_dir, "seed {seed}: create lost after sync_dir");
                        assert!(!disk.exists(&p("/d/new")));
                        assert_eq!(disk.list(&p("/d")).unwrap(), Vec::<String>::new());
                        vanished += 1;
                    }
                }
            }
        }
        assert!(vanished > 0 && survived > 0, "vanished {vanished} survived {survived}");
    }

    #[test]
    fn rename_is_atomic_across_power_loss() {
        let (mut old, mut new) = (0, 0);
        for seed in 0..100 {
            let disk = disk_with_dir(seed, DiskFaults::default());
            synced_file(&disk, "/d/cp", b"old");
            let tmp = disk.open(&p("/d/cp.tmp"), true).unwrap();
            tmp.write_at(b"new!", 0).unwrap();
            tmp.sync().unwrap();
            disk.rename(&p("/d/cp.tmp"), &p("/d/cp")).unwrap();
            disk.crash(CrashMode::PowerLoss);
            let got = disk.durable_bytes(&p("/d/cp")).expect("the target name never disappears");
            match got.as_slice() {
                b"old" => old += 1,
                b"new!" => {
                    assert!(!disk.exists(&p("/d/cp.tmp")), "seed {seed}: both names after rename");
                    new += 1;
                }
                other => panic!("seed {seed}: {other:?}"),
            }

            // The broker's helper syncs the directory, so its result always survives.
            write_atomically(&disk, &p("/d/cp"), b"helper").unwrap();
            disk.crash(CrashMode::PowerLoss);
            assert_eq!(disk.durable_bytes(&p("/d/cp")).unwrap(), b"helper", "seed {seed}");
        }
        assert!(old > 0 && new > 0, "old {old} new {new}");
    }

    #[test]
    fn handles_are_stale_after_crash() {
        for mode in [CrashMode::Clean, CrashMode::PowerLoss] {
            let disk = disk_with_dir(3, DiskFaults::default());
            let f = synced_file(&disk, "/d/a", b"alpha");
            disk.crash(mode);
            let stale = |r: io::Result<()>| {
                let err = r.expect_err("stale handle call succeeded");
                assert_eq!(err.kind(), ErrorKind::Other);
                assert!(err.to_string().contains("stale handle from before crash"), "{err}");
            };
            stale(f.read_at(&mut [0; 4], 0).map(drop));
            stale(f.write_at(b"x", 0));
            stale(f.append(b"x").map(drop));
            stale(f.len().map(drop));
            stale(f.truncate(0));
            stale(f.sync());
            drop(f);
            let g = disk.open(&p("/d/a"), false).unwrap();
            assert_eq!(g.append(b"!").unwrap(), 5);
            assert_eq!(read_all(&disk, "/d/a"), b"alpha!");
            disk.check_invariants();
        }
    }

    #[test]
    fn full_disk_fails_writes_and_writes_nothing() {
        let faults = DiskFaults { capacity_bytes: Some(1000), ..DiskFaults::default() };
        let disk = disk_with_dir(4, faults);
        let f = disk.open(&p("/d/f"), true).unwrap();
        f.append(&[1; 600]).unwrap();
        assert_eq!(disk.used_bytes(), 600);
        let (before, pending) = (disk.current_bytes(&p("/d/f")).unwrap(), disk.pending_ops());
        let full = |r: io::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::StorageFull);
        full(f.append(&[2; 600]).map(drop));
        full(f.write_at(&[3; 500], 600));
        full(f.truncate(2000));
        assert_eq!(disk.current_bytes(&p("/d/f")).unwrap(), before);
        assert_eq!(disk.pending_ops(), pending);
        f.write_at(&[4; 100], 0).unwrap(); // an overwrite needs no space

        let g = disk.open(&p("/d/g"), true).unwrap();
        full(g.append(&[5; 500]).map(drop));
        // An unlinked file keeps its space while a handle is open (POSIX), until the journal
        // commit after the last close.
        disk.remove(&p("/d/f")).unwrap();
        disk.sync_dir(&p("/d")).unwrap();
        full(g.append(&[5; 500]).map(drop));
        assert_eq!(f.len().unwrap(), 600, "unlinked file still readable");
        drop(f);
        disk.sync_dir(&p("/d")).unwrap();
        assert_eq!(disk.used_bytes(), 0);
        g.append(&[5; 500]).unwrap();
        disk.check_invariants();
    }

    #[test]
    fn eio_hits_only_the_chosen_file() {
        let faults = DiskFaults { eio_paths: vec!["bad".into()], ..DiskFaults::default() };
        let disk = disk_with_dir(5, faults);
        let bad = disk.open(&p("/d/bad.log"), true).unwrap();
        let good = disk.open(&p("/d/good.log"), true).unwrap();
        let eio = |r: io::Result<()>| assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
        eio(bad.write_at(b"x", 0));
        eio(bad.append(b"x").map(drop));
        eio(bad.read_at(&mut [0; 1], 0).map(drop));
        eio(bad.truncate(1));
        eio(bad.sync());
        good.append(b"fine").unwrap();
        good.sync().unwrap();
        assert_eq!(read_all(&disk, "/d/good.log"), b"fine");

        disk.set_faults(DiskFaults::default());
        bad.append(b"healed").unwrap();
        bad.sync().unwrap();
        assert_eq!(read_all(&disk, "/d/bad.log"), b"healed");
    }

    #[test]
    fn latency_accumulates_until_taken() {
        assert_eq!(disk_with_dir(6, DiskFaults::default()).take_stall(), Duration::ZERO);
        let faults =
            DiskFaults { latency_ns_min: 1_000, latency_ns_max: 2_000, ..DiskFaults::default() };
        let disk = SimDisk::with_faults(6, faults);
        disk.create_dir_all(&p("/d")).unwrap(); // 1
        let f = disk.open(&p("/d/a"), true).unwrap(); // 2
        for _ in 0..8 {
            f.append(b"x").unwrap(); // 3..=10
        }
        f.len().unwrap(); // free: cached metadata
        let stall = disk.take_stall();
        assert!(
            stall > Duration::from_nanos(10_000) && stall < Duration::from_nanos(20_000),
            "{stall:?}"
        );
        assert_eq!(disk.take_stall(), Duration::ZERO);
        f.sync().unwrap();
        let one = disk.take_stall();
        assert!(
            one >= Duration::from_nanos(1_000) && one <= Duration::from_nanos(2_000),
            "{one:?}"
        );
    }

    #[test]
    #[should_panic(expected = "latency_ns_min 5 > latency_ns_max 4")]
    fn inverted_latency_range_is_rejected() {
        SimDisk::with_faults(
            0,
            DiskFaults { latency_ns_min: 5, latency_ns_max: 4, ..DiskFaults::default() },
        );
    }

    /// A small mixed workload ending in power loss; returns every durable file's bytes.
    fn power_loss_image(seed: u64) -> Vec<(String, Option<Vec<u8>>)> {
        let disk = disk_with_dir(seed, DiskFaults::default());
        let a = synced_file(&disk, "/d/a", &[7; 3000]);
        a.write_at(&[8; 2000], 500).unwrap();
        a.append(&[9; 1500]).unwrap();
        a.truncate(4000).unwrap();
        let b = disk.open(&p("/d/b"), true).unwrap();
        b.append(&[10; 1200]).unwrap();
        b.sync().unwrap();
        b.append(&[11; 900]).unwrap();
        disk.create_dir_all(&p("/d/sub")).unwrap();
        disk.rename(&p("/d/b"), &p("/d/sub/b")).unwrap();
        disk.open(&p("/d/c"), true).unwrap().append(&[12; 100]).unwrap();
        disk.crash(CrashMode::PowerLoss);
        disk.check_invariants();
        ["/d/a", "/d/b", "/d/sub/b", "/d/c"]
            .iter()
            .map(|path| (path.to_string(), disk.durable_bytes(&p(path))))
            .collect()
    }

    #[test]
    fn same_seed_same_image_different_seeds_differ() {
        let mut distinct = BTreeSet::new();
        for seed in 0..20 {
            let image = power_loss_image(seed);
            assert_eq!(image, power_loss_image(seed), "seed {seed} is not deterministic");
            distinct.insert(image);
        }
        assert!(distinct.len() > 10, "only {} distinct images from 20 seeds", distinct.len());
    }

    /// Random calls with hostile arguments: nothing may panic and the invariants must hold.
    #[test]
    fn random_calls_never_panic() {
        let paths = [
            "/",
            "",
            ".",
            "/d",
            "/d/a",
            "/d/b",
            "/d/e",
            "/d/s",
            "/d/s/x",
            "/d/../d/a",
            "/d/a/x",
            "x",
        ];
        for seed in 0..20 {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
            let faults = DiskFaults {
                capacity_bytes: Some(64 << 10),
                eio_paths: vec!["/e".into()],
                ..DiskFaults::default()
            };
            let disk = SimDisk::with_faults(seed, faults);
            let mut files: Vec<Box<dyn DiskFile>> = Vec::new();
            for _ in 0..400 {
                let path = p(paths[rng.gen_range(0..paths.len())]);
                let to = p(paths[rng.gen_range(0..paths.len())]);
                let offset = if rng.gen_ratio(1, 20) {
                    u64::MAX - rng.gen_range(0..4)
                } else {
                    rng.gen_range(0..3000)
                };
                let bytes = vec![rng.gen::<u8>(); rng.gen_range(0..1200)];
                let f = (!files.is_empty()).then(|| rng.gen_range(0..files.len()));
                let _ = match rng.gen_range(0..16) {
                    0 => disk.create_dir_all(&path),
                    1 | 2 => disk.open(&path, rng.gen()).map(|f| files.push(f)),
                    3 => disk.rename(&path, &to),
                    4 => disk.remove(&path),
                    5 => disk.sync_dir(&path),
                    6 => disk.list(&path).map(drop),
                    7 => disk.corrupt(&path, offset, &bytes),
                    8 if rng.gen_ratio(1, 4) => {
                        disk.crash(if rng.gen() { CrashMode::Clean } else { CrashMode::PowerLoss });
                        Ok(())
                    }
                    9 => f.map(|i| drop(files.swap_remove(i))).ok_or(ErrorKind::Other.into()),
                    10 => f.map_or(Ok(()), |i| files[i].write_at(&bytes, offset)),
                    11 => f.map_or(Ok(()), |i| files[i].append(&bytes).map(drop)),
                    12 => f.map_or(Ok(()), |i| files[i].truncate(offset)),
                    13 => f.map_or(Ok(()), |i| files[i].sync()),
                    14 => f.map_or(Ok(()), |i| {
                        files[i].read_at(&mut vec![0; bytes.len()], offset).map(drop)
                    }),
                    _ => f.map_or(Ok(()), |i| files[i].len().map(drop)),
                };
                disk.check_invariants();
            }
        }
    }
}
