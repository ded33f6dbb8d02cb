//! Mechanical determinism rules for the core (TigerBeetle's `tidy.zig` habit): decision code
//! must not read wall-clock time or OS randomness, nor iterate hash maps into anything
//! observable. The IO edge (`src/bin/`, `src/server/`) is exempt: it is where real time enters.

use std::path::{Path, PathBuf};

/// Substrings that must not appear in the core, with the reason shown on failure.
const BANNED: &[(&str, &str)] = &[
    ("SystemTime::now", "wall-clock time: take `now` from the caller"),
    ("Instant::now", "wall-clock time: take `now` from the caller"),
    ("thread_rng", "OS-seeded randomness: take an injected seeded RNG"),
    ("rand::random", "OS-seeded randomness: take an injected seeded RNG"),
    ("OsRng", "OS randomness: take an injected seeded RNG"),
    ("HashMap", "iteration order varies per process: use BTreeMap"),
    ("HashSet", "iteration order varies per process: use BTreeSet"),
    ("std::fs::", "the core does IO only through storage::Disk (FileDisk is the one exception)"),
];

/// Files allowed to break a rule, and which rule. The group consumer is a client at the IO edge
/// like the rest of `client/`: it reads tokio's clock (madsim's simulated clock in the
/// simulator) to know when a heartbeat or an auto-commit is due, and to stamp its events. The
/// cleaner's key map is a hash table with a fixed hasher (no per-process seed), only ever
/// looked up, never iterated. The fuzz replay reads the checked-in fuzz inputs: test support,
/// never called by the broker.
const EXEMPT: &[(&str, &str)] = &[("fuzzing/replay.rs", "std::fs::"), ("storage/file_disk.rs", "std::fs::"), ("storage/conformance.rs", "std::fs::"), ("client/group.rs", "Instant::now"), ("log/clean.rs", "HashMap")];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn core_reads_no_clock_no_os_randomness_no_hash_order() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() >= 8, "found only {} source files under {}", files.len(), src.display());
    let mut hits = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        // The edge, and unit-test files (which poke real files to plant corruption).
        if rel.starts_with("bin/") || rel.starts_with("server/") || rel.ends_with("/tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (pat, why) in BANNED {
                if code.contains(pat) && !EXEMPT.iter().any(|(f, p)| rel == *f && p == pat) {
                    hits.push(format!("src/{rel}:{}: `{pat}`: {why}", n + 1));
                }
            }
        }
    }
    assert!(hits.is_empty(), "determinism rules broken:\n{}", hits.join("\n"));
}

#[test]
fn every_select_is_biased() {
    // tokio::select! picks among ready branches with an RNG that madsim does not seed, so an
    // unbiased select makes simulated runs unrepeatable. The edge (server/) is included: it
    // runs under madsim too.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            if line.contains("select! {") && !lines[n + 1..(n + 5).min(lines.len())].iter().any(|l| l.trim() == "biased;") {
                hits.push(format!("{}:{}", file.display(), n + 1));
            }
        }
    }
    assert!(hits.is_empty(), "tokio::select! without `biased;`:\n{}", hits.join("\n"));
}
