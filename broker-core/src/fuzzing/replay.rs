//! Replays the checked-in inputs of one fuzz target — its corpus (`fuzz/corpus/<target>`,
//! seeds and what fuzzing runs added) and the inputs that once crashed it, since fixed
//! (`fuzz/regressions/<target>`) — through the target's function, on whatever toolchain runs
//! the tests: how stable CI keeps every finding fixed (broker-core's and sim's
//! `tests/all/fuzz_replay.rs`).

use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").join("fuzz")
}

/// The checked-in inputs of `target`, corpus first, each directory in name order.
pub fn inputs(target: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
        files.sort();
        all.extend(files);
    }
    all
}

/// Runs every checked-in input of `target` through `run`; panics naming the first input that
/// fails (with the command that reproduces it under the fuzzer). Returns how many ran; fails
/// if there are none, so a moved directory cannot make the replay pass vacuously.
pub fn replay(target: &str, run: fn(&[u8])) -> usize {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no inputs for fuzz target {target} under {}", fuzz_dir().display());
    for path in &inputs {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if std::panic::catch_unwind(|| run(&data)).is_err() {
            panic!("fuzz target {target} fails on {} (reproduce: cargo +nightly fuzz run {target} {} from fuzz/)", path.display(), path.display());
        }
    }
    inputs.len()
}
