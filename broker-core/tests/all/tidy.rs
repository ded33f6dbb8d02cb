//! Mechanical determinism rules for the core (TigerBeetle's `tidy.zig` habit): decision code
//! must not read wall-clock time or OS randomness, nor iterate hash maps into anything
//! observable. The IO edge (`src/bin/`, `src/server/`) is exempt: it is where real time enters.
//! And every `unsafe` says, in a `// SAFETY:` comment, why it is sound.

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

/// Files allowed to break a rule, and which rule. The group consumer and the transactional
/// producer are clients at the IO edge like the rest of `client/`: they read tokio's clock
/// (madsim's simulated clock in the simulator) to know when a heartbeat or an auto-commit is
/// due and to stamp events, or when an end of a transaction has waited its timeout; a
/// connection reads it to hold its next request back for a throttled answer's time. The
/// cleaner's key map is a hash table with a fixed hasher (no per-process seed), only ever
/// looked up, never iterated. The fuzz replay reads the checked-in fuzz inputs: test support,
/// never called by the broker.
const EXEMPT: &[(&str, &str)] = &[("fuzzing/replay.rs", "std::fs::"), ("storage/file_disk.rs", "std::fs::"), ("storage/conformance.rs", "std::fs::"), ("client/group.rs", "Instant::now"), ("client/group_config.rs", "Instant::now"), ("client/group_kip848.rs", "Instant::now"), ("client/share.rs", "Instant::now"), ("client/transactions.rs", "Instant::now"), ("client/conn.rs", "Instant::now"), ("log/clean.rs", "HashMap")];

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

/// broker-core's `src/` and every Rust file below it, sorted.
fn sources() -> (PathBuf, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    (src, files)
}

#[test]
fn core_reads_no_clock_no_os_randomness_no_hash_order() {
    let (src, files) = sources();
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

/// Where a rule finds `code` (comments and strings cut): `src/PATH:LINE` and, if it says, what.
/// Only the files whose path under `src/` `within` accepts are read.
fn code_hits(within: impl Fn(&str) -> bool, finds: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let (src, files) = sources();
    let mut hits = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if !within(&rel) {
            continue;
        }
        for (n, (code, _)) in code_and_comments(&std::fs::read_to_string(file).unwrap()).iter().enumerate() {
            if let Some(what) = finds(code) {
                hits.push(format!("src/{rel}:{}{what}", n + 1));
            }
        }
    }
    hits
}

#[test]
fn no_decision_reaches_for_the_simulators_probe() {
    // What the simulator watches reaches it through the observer a node is built with
    // (`observe.rs`); a call into `simprobe` from broker-core would be a global side channel
    // out of a decision again, and the controller <-> simprobe import cycle back.
    let hits = code_hits(|rel| !rel.starts_with("simprobe/") && rel != "lib.rs", |code| code.contains("simprobe").then(String::new));
    assert!(hits.is_empty(), "broker-core code names simprobe (tell the node's observer instead):\n{}", hits.join("\n"));
}

#[test]
fn no_decision_tests_a_planted_bug() {
    // Issue 32: a planted bug is a rule chosen when the node is built (`broker::rules`,
    // `controller::rules`, `group::rules`, the config's choices), never a branch in a decision.
    // Where they are chosen is exempt (the shell's config builds the Raft voter's), and the
    // planted list itself. The shell (server/) only carries: how a peer's answer is read is
    // the node's, by its rules.
    let decisions = ["broker/", "controller/", "group/", "replication/", "log/", "metadata/", "node/", "server/"];
    let choosers = ["broker/rules.rs", "broker/config.rs", "controller/rules.rs", "group/rules.rs", "server/config_quorum.rs"];
    let within = |rel: &str| decisions.iter().any(|d| rel.starts_with(d)) && !choosers.contains(&rel) && !rel.contains("tests");
    let hits = code_hits(within, |code| (code.contains("PlantedBug::") || code.contains(".planted(") || code.contains("planted.is(")).then(String::new));
    assert!(hits.is_empty(), "decisions test a planted bug (make it a rule chosen when the node is built):\n{}", hits.join("\n"));
}

#[test]
fn no_decision_logs_on_its_own() {
    // Issue 32: a decision's lines for the operator come out as `Action::Log` (the simulator
    // traces them, tests assert on them); only the shell, which performs them, calls `tracing`.
    let decisions = ["broker/", "controller/", "group/", "replication/", "log/", "metadata/", "node/", "protocol/"];
    let within = |rel: &str| decisions.iter().any(|d| rel.starts_with(d));
    let hits = code_hits(within, |code| code.contains("tracing::").then(String::new));
    assert!(hits.is_empty(), "decisions log through tracing (return an Action::Log instead):\n{}", hits.join("\n"));
}

#[test]
fn the_protocol_holds_no_state() {
    // Issue 32: `protocol/` reads and writes bytes; what a request does to a node is `node/`'s.
    // A lock, a node, a broker, a coordinator or a quorum named in `protocol/` would glue the
    // wire to the state again (it once held the node and a five-file import cycle).
    let types = ["Mutex", "MutexGuard", "RwLock", "Node", "Broker", "Coordinator", "Quorum"];
    let paths = ["crate::node", "crate::broker", "crate::group", "crate::server"];
    let hits = code_hits(
        |rel| rel.starts_with("protocol/"),
        |code| {
            let mut words = code.split(|c: char| !c.is_alphanumeric() && c != '_');
            let found = words.find(|w| types.contains(w)).or_else(|| paths.iter().copied().find(|p| code.contains(p)));
            found.map(|word| format!(": `{word}`"))
        },
    );
    assert!(hits.is_empty(), "protocol/ names the node's state (move the decision to node/):\n{}", hits.join("\n"));
}

#[test]
fn every_select_is_biased() {
    // tokio::select! picks among ready branches with an RNG that madsim does not seed, so an
    // unbiased select makes simulated runs unrepeatable. The edge (server/) is included: it
    // runs under madsim too.
    let (_, files) = sources();
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

/// Each line of `text` split into its code, with string literals emptied (`"unsafe {"` becomes
/// `""`), and its comment text (after `//`, or inside `/* */`). A simple scanner: strings, raw
/// strings and block comments may span lines; char literals are blanked; it knows no more Rust.
fn code_and_comments(text: &str) -> Vec<(String, String)> {
    #[derive(Clone, Copy)]
    enum In {
        Code,
        Str,
        /// A raw string, closed by `"` and this many `#`.
        Raw(usize),
        Block,
    }
    let ident = |ch: Option<&char>| ch.is_some_and(|&ch| ch.is_alphanumeric() || ch == '_');
    let mut state = In::Code;
    let mut out = Vec::new();
    for line in text.lines() {
        let (mut code, mut comment) = (String::new(), String::new());
        let c: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < c.len() {
            match state {
                In::Str if c[i] == '\\' => i += 1,
                In::Str if c[i] == '"' => {
                    code.push('"');
                    state = In::Code;
                }
                In::Str => {}
                In::Raw(n) if c[i] == '"' && c[i + 1..].iter().take(n).filter(|&&h| h == '#').count() == n => {
                    code.push('"');
                    (state, i) = (In::Code, i + n);
                }
                In::Raw(_) => {}
                In::Block if c[i] == '*' && c.get(i + 1) == Some(&'/') => (state, i) = (In::Code, i + 1),
                In::Block => comment.push(c[i]),
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'/') => {
                    comment.extend(&c[i + 2..]);
                    break;
                }
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'*') => (state, i) = (In::Block, i + 1),
                In::Code if c[i] == '"' => {
                    code.push('"');
                    state = In::Str;
                }
                // r"..", r#".."#, br"..": `r` not ending an identifier (other than a `b` prefix).
                In::Code if c[i] == 'r' && (i == 0 || !ident(c.get(i - 1)) || c[i - 1] == 'b' && (i == 1 || !ident(c.get(i - 2)))) && {
                    let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
                    c.get(i + 1 + hashes) == Some(&'"')
                } =>
                {
                    let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
                    code.push('"');
                    (state, i) = (In::Raw(hashes), i + 1 + hashes);
                }
                // A char literal ('"', '\'', '\u{7f}'); a lifetime ('a) stays code.
                In::Code if c[i] == '\'' && c.get(i + 1) == Some(&'\\') => {
                    code.push_str("' '");
                    i = c[i + 2..].iter().position(|&h| h == '\'').map_or(c.len(), |p| i + 2 + p);
                }
                In::Code if c[i] == '\'' && c.get(i + 2) == Some(&'\'') => {
                    code.push_str("' '");
                    i += 2;
                }
                In::Code => code.push(c[i]),
            }
            i += 1;
        }
        out.push((code, comment));
    }
    out
}

#[test]
fn every_unsafe_block_says_why_it_is_safe() {
    // Every `unsafe` block, `unsafe fn` and `unsafe impl` carries a `// SAFETY:` comment saying
    // why its invariants hold, on its line or in the comment (and attribute) lines directly
    // above it. Checked in the broker, its tests, the simulator and the fuzz targets.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [root.join("src"), root.join("tests"), root.join("../sim/src"), root.join("../sim/tests"), root.join("../fuzz/fuzz_targets")];
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        rust_files(dir, &mut files);
    }
    files.sort();
    assert!(files.len() >= 20, "found only {} source files under {}", files.len(), root.display());
    let safety = |comment: &str| comment.trim_start().starts_with("SAFETY:");
    let (mut sites, mut hits) = (0, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines = code_and_comments(&text);
        for (n, (code, comment)) in lines.iter().enumerate() {
            if !["unsafe {", "unsafe fn", "unsafe impl"].iter().any(|p| code.contains(p)) {
                continue;
            }
            sites += 1;
            // On the line itself, or in the comment and attribute lines directly above it.
            let above = lines[..n].iter().rev().take_while(|(code, comment)| {
                let code = code.trim();
                (code.is_empty() && !comment.is_empty()) || code.starts_with("#[")
            });
            if !safety(comment) && !above.map(|(_, comment)| comment).any(|c| safety(c)) {
                let rel = file.strip_prefix(root).unwrap_or(file);
                hits.push(format!("{}:{}: {}", rel.display(), n + 1, code.trim()));
            }
        }
    }
    assert!(sites >= 20, "found only {sites} unsafe sites: is the scan still seeing them?");
    assert!(hits.is_empty(), "unsafe without a `// SAFETY:` comment saying why it is sound:\n{}", hits.join("\n"));
}

#[test]
fn every_module_is_short_and_says_what_it_is_for() {
    // STYLE.md and issue 32: no file over 600 lines (split by responsibility), and every module
    // but a test module opens with a `//!` header saying what it is for.
    const lines_max: usize = 600;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
    let mut files = Vec::new();
    for dir in ["broker-core/src", "broker-core/tests", "sim/src", "sim/tests", "fuzz/fuzz_targets"].map(|d| root.join(d)) {
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    files.sort();
    assert!(files.len() >= 200, "found only {} Rust files under {}", files.len(), root.display());
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let count = text.lines().count();
        if count > lines_max {
            hits.push(format!("{rel}: {count} lines (at most {lines_max})"));
        }
        let test_module = rel.contains("/tests/") || rel.ends_with("tests.rs") || rel.contains("/tests.rs");
        if !test_module && rel.contains("/src/") && !text.trim_start().starts_with("//!") {
            hits.push(format!("{rel}: no `//!` header saying what the module is for"));
        }
    }
    assert!(hits.is_empty(), "modules too long or without a header:\n{}", hits.join("\n"));
}
