//! What the real-client tests share: where the workspace is, the client tools they run (found
//! once; a missing tool fails the test with the command that installs it, never skips), and
//! the capture of a broker process's output.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;

pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace above broker-core").to_path_buf()
}

/// `kcat` on PATH, or a failure saying how to get it.
pub fn kcat() -> &'static str {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| match Command::new("kcat").arg("-V").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("`kcat -V` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr))),
        Err(e) => Err(format!("`kcat` not runnable from PATH: {e}")),
    });
    if let Err(why) = found {
        panic!("{why}\nThese tests need kcat: install it with `apt-get install kcat`, or run `scripts/test.sh` (the README's test command), which does.");
    }
    "kcat"
}

/// A Python that can `import confluent_kafka, kafka`: `$SEEDLOG_PYTHON` if set (then it must
/// work: it was asked for), else `target/client-venv/bin/python` (made by `scripts/test.sh`), else
/// `python3`.
pub fn python() -> &'static Path {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let imports = |python: &Path| -> Result<(), String> {
            let out = Command::new(python)
                .args(["-c", "import confluent_kafka, kafka"])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run it: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                Err(stderr.trim().lines().last().map_or_else(|| format!("exited {}", out.status), str::to_string))
            }
        };
        if let Some(explicit) = std::env::var_os("SEEDLOG_PYTHON") {
            let explicit = PathBuf::from(explicit);
            return imports(&explicit)
                .map(|()| explicit.clone())
                .map_err(|e| format!("$SEEDLOG_PYTHON={}: `import confluent_kafka, kafka`: {e}", explicit.display()));
        }
        let venv = workspace_dir().join("target/client-venv/bin/python");
        let mut tried = Vec::new();
        for candidate in [venv, PathBuf::from("python3")] {
            if candidate.is_absolute() && !candidate.exists() {
                tried.push(format!("{}: does not exist", candidate.display()));
                continue;
            }
            match imports(&candidate) {
                Ok(()) => return Ok(candidate),
                Err(e) => tried.push(format!("{}: {e}", candidate.display())),
            }
        }
        Err(format!(
            "no Python that can `import confluent_kafka, kafka`; tried $SEEDLOG_PYTHON (unset), {}",
            tried.join("; ")
        ))
    });
    match found {
        Ok(path) => path,
        Err(why) => panic!(
            "{why}\nThese tests need confluent-kafka and kafka-python: `pip install confluent-kafka kafka-python` \
             (or run `scripts/test.sh`, which makes target/client-venv with them), or set $SEEDLOG_PYTHON to a Python that has them."
        ),
    }
}

/// Keeps the last `lines_max` lines of a broker pipe in `log` (colour codes removed); signals `ready` once a line contains its text.
pub fn keep_lines(
    pipe: impl Read + Send + 'static,
    name: &'static str,
    log: Arc<Mutex<VecDeque<String>>>,
    lines_max: usize,
    mut ready: Option<(String, mpsc::Sender<()>)>,
) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let line = strip_ansi(&line);
            if ready.as_ref().is_some_and(|(text, _)| line.contains(text.as_str())) {
                let (_, tx) = ready.take().expect("checked");
                let _ = tx.send(());
            }
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            if log.len() >= lines_max {
                log.pop_front();
            }
            log.push_back(format!("[{name}] {line}"));
        }
    });
}

/// Removes terminal colour sequences (`ESC [ ... letter`), in case the logger adds them to a pipe.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
