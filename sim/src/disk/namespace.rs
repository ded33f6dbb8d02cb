//! The namespace and its metadata journal: which path names a directory or which inode, as the
//! disk would show it after a crash (*durable*) and as calls see it now (*current*), and the
//! journal of changes between the two. The model's first bullet, "Namespace", in code.
//!
//! Every change goes through `State::log`, so `current` is always `durable` with the journal
//! replayed; nothing here may change `durable` except a `sync_dir` or `commit_journal` (or a
//! crash, in `crash`).

use super::contents::Inode;
use super::paths::{fail, is_a_dir, is_root, not_a_dir, not_found};
use super::State;
use std::collections::BTreeMap;
use std::io::{self, ErrorKind};
use std::ops::Bound;
use std::path::{Path, PathBuf};

pub(super) type Namespace = BTreeMap<PathBuf, Node>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Node {
    Dir,
    File(u64),
}

/// One metadata change, as the journal records it.
#[derive(Debug, Clone)]
pub(super) enum NsOp {
    Mkdir(PathBuf),
    Create(PathBuf, u64),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
}

impl NsOp {
    /// Every path the op names.
    fn paths(&self) -> impl Iterator<Item = &Path> {
        let (a, b) = match self {
            NsOp::Mkdir(p) | NsOp::Create(p, _) | NsOp::Remove(p) => (p.as_path(), None),
            NsOp::Rename(from, to) => (from.as_path(), Some(to.as_path())),
        };
        std::iter::once(a).chain(b)
    }

    /// The directories whose fsync makes the op durable: the parent of the entry it adds or
    /// removes; either parent of a rename (journaling file systems make it atomic).
    fn homes(&self) -> impl Iterator<Item = &Path> {
        self.paths().filter_map(Path::parent)
    }
}

/// Whether one path is the other or below it: ops on such paths do not commute.
fn related(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

pub(super) fn node(ns: &Namespace, path: &Path) -> Option<Node> {
    if is_root(path) {
        Some(Node::Dir)
    } else {
        ns.get(path).copied()
    }
}

pub(super) fn file_ino(ns: &Namespace, path: &Path) -> Option<u64> {
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

/// `Ok` if `dir` is an existing directory, else the error POSIX would give.
fn check_dir(ns: &Namespace, dir: &Path, what: &str) -> io::Result<()> {
    match node(ns, dir) {
        None => Err(not_found(what, dir)),
        Some(Node::File(_)) => Err(not_a_dir(what, dir)),
        Some(Node::Dir) => Ok(()),
    }
}

/// Applies one journal op. Only ever called with ops already validated against the namespace
/// they were first applied to, so replaying a journal prefix on the durable one cannot fail.
pub(super) fn ns_apply(ns: &mut Namespace, op: &NsOp) {
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
        // A remove or a rename (which may replace a file) can take an inode's last name.
        self.gc_due |= matches!(op, NsOp::Remove(_) | NsOp::Rename(..));
        ns_apply(&mut self.current_ns, &op);
        self.journal.push(op);
    }

    pub(super) fn open(&mut self, path: &Path, create: bool) -> io::Result<u64> {
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

    pub(super) fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
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

    pub(super) fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        check_dir(&self.current_ns, dir, "list")?;
        let mut names: Vec<String> = descendants(&self.current_ns, dir)
            .filter(|(p, _)| p.parent() == Some(dir))
            .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    }

    pub(super) fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
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

    pub(super) fn remove(&mut self, path: &Path) -> io::Result<()> {
        match node(&self.current_ns, path) {
            None => Err(not_found("remove", path)),
            Some(Node::Dir) => Err(is_a_dir("remove", path)),
            Some(Node::File(_)) => {
                self.log(NsOp::Remove(path.to_path_buf()));
                Ok(())
            }
        }
    }

    pub(super) fn remove_dir(&mut self, dir: &Path) -> io::Result<()> {
        match node(&self.current_ns, dir) {
            None => Err(not_found("remove directory", dir)),
            Some(Node::File(_)) => Err(not_a_dir("remove directory", dir)),
            Some(Node::Dir)
                if is_root(dir) || descendants(&self.current_ns, dir).next().is_some() =>
            {
                Err(fail(
                    ErrorKind::DirectoryNotEmpty,
                    "remove directory",
                    dir,
                    "directory not empty",
                ))
            }
            Some(Node::Dir) => {
                self.log(NsOp::Remove(dir.to_path_buf()));
                Ok(())
            }
        }
    }

    /// POSIX's promise: fsync of `dir` makes durable the changes to `dir`'s own entries (the
    /// ops homed there), and with them every earlier change they build on (a parent's mkdir, the
    /// create of a file later renamed into `dir`), so the durable namespace is always one the
    /// journal could have produced. Other directories' changes stay pending: a directory that is
    /// never synced loses its new names to a power loss however often its neighbours sync.
    pub(super) fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        check_dir(&self.current_ns, dir, "fsync directory")?;
        // Walk back from the newest op: one is committed if it is homed in `dir` or a later
        // committed op depends on it. The pending ops left behind touch none of the committed
        // ops' paths, so they commute with them: durable + journal stays current.
        let mut commit = vec![false; self.journal.len()];
        let mut touched: Vec<&Path> = Vec::new();
        for (i, op) in self.journal.iter().enumerate().rev() {
            if op.homes().any(|h| h == dir) || op.paths().any(|p| touched.iter().any(|t| related(p, t))) {
                commit[i] = true;
                touched.extend(op.paths());
            }
        }
        let journal = std::mem::take(&mut self.journal);
        for (op, commit) in journal.into_iter().zip(commit) {
            if commit {
                ns_apply(&mut self.durable_ns, &op);
            } else {
                self.journal.push(op);
            }
        }
        // Only a lost name or a closed handle can free an inode; without one the collection
        // would change nothing, and it costs a walk of every file on the disk.
        if self.gc_due {
            self.collect_garbage();
        }
        Ok(())
    }

    /// syncfs: every pending change of every directory becomes durable, in order.
    pub(super) fn commit_journal(&mut self) {
        for op in self.journal.drain(..) {
            ns_apply(&mut self.durable_ns, &op);
        }
        if self.gc_due {
            self.collect_garbage();
        }
    }

    /// Frees inodes nothing can reach any more: no name in either namespace, no journal entry,
    /// no open handle.
    pub(super) fn collect_garbage(&mut self) {
        // A sorted vector, not a set: this runs after most directory syncs, over every file.
        let mut live: Vec<u64> = Vec::with_capacity(self.durable_ns.len() + self.current_ns.len());
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
        live.sort_unstable();
        live.dedup();
        self.inodes.retain(|ino, inode| inode.handles > 0 || live.binary_search(ino).is_ok());
        self.used_bytes = self.inodes.values().map(|i| i.current.len() as u64).sum();
        self.gc_due = false;
    }
}
