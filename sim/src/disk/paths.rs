//! Path normal form and the `io::Error`s the model returns, worded as POSIX would word them.
//! Pure helpers: they never look at the disk's state, so every layer of the model can use them.

use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

/// Lexical normal form, so `a/./b`, `a//b` and `a/x/../b` name one entry. Exact here because the
/// model has no symlinks; `..` above the top stays at the top, as `/..` does in POSIX.
pub(super) fn normalize(path: &Path) -> PathBuf {
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
pub(super) fn is_root(path: &Path) -> bool {
    path.parent().is_none()
}

pub(super) fn fail(kind: ErrorKind, what: &str, path: &Path, why: &str) -> io::Error {
    io::Error::new(kind, format!("{what} {}: {why}", path.display()))
}

pub(super) fn not_found(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::NotFound, what, path, "no such file or directory")
}

pub(super) fn is_a_dir(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::IsADirectory, what, path, "is a directory")
}

pub(super) fn not_a_dir(what: &str, path: &Path) -> io::Error {
    fail(ErrorKind::NotADirectory, what, path, "not a directory")
}
