//! The bodies of the fuzz targets that need the simulator's pieces (`fuzz/`, see
//! docs/fuzzing.md): log recovery on a [`SimDisk`] (in memory, so a target opens thousands of
//! logs a second), the scenario TOML parser, and the trace reader behind `sim replay`,
//! `sim shrink` and `sim view`. Here, not in the fuzz crate, so that the stable tests replay
//! every checked-in corpus and crash input through exactly this code
//! (`sim/tests/all/fuzz_replay.rs`). A target panics only when a promise is broken.

use crate::disk::SimDisk;
use crate::scenario::Scenario;
use broker_core::log::{batch, Log, LogConfig, LogError};
use broker_core::storage::Disk;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the log under test lives on its disk.
const log_dir: &str = "/data/t-0";

/// Files one recovery input may hold: a handful of segments with their indexes, checkpoints
/// and leftovers is all recovery ever sees at once.
const files_max: usize = 16;

/// The kinds of file a recovery input can place, by the entry's kind byte (modulo 8).
fn file_name(kind: u8, base: u64) -> String {
    let base = base as i64 & i64::MAX;
    match kind % 8 {
        0 => format!("{base:020}.log"),
        1 => format!("{base:020}.index"),
        2 => format!("{base:020}.timeindex"),
        3 => broker_core::log::RECOVERY_POINT_FILE.to_string(),
        4 => "cleaner-offset-checkpoint".to_string(),
        5 => format!("{base:020}.log.swap"),
        6 => format!("{base:020}.log.cleaned"),
        _ => format!("{base:020}.log.deleted"),
    }
}

/// Splits a recovery input into files: entries of kind (1 byte), base offset (8 bytes, little
/// endian), length (4 bytes, little endian) and that many bytes (fewer if the input ends).
/// `fuzz/seed_log_recovery` writes real test logs in this form.
pub fn log_files(data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut rest = data;
    while files.len() < files_max && rest.len() >= 13 {
        let kind = rest[0];
        let base = u64::from_le_bytes(rest[1..9].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(rest[9..13].try_into().expect("4 bytes")) as usize;
        let bytes = &rest[13..];
        let take = len.min(bytes.len());
        files.insert(file_name(kind, base), bytes[..take].to_vec());
        rest = &bytes[take..];
    }
    files
}

/// The inverse of [`log_files`], for seed corpora.
pub fn log_input(files: &[(u8, u64, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (kind, base, bytes) in files {
        out.push(*kind);
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Target `log_recovery`: a partition directory of arbitrary segment, index, time index,
/// checkpoint and leftover files, opened as the broker opens it. Promises: open never panics;
/// with no checkpoint vouching for anything (no recovery point, no swap) it succeeds, cutting
/// what does not check out; what it keeps of each segment is a prefix of that file, of whole
/// batches with their CRC checked and offsets dense across segments, with indexes that agree;
/// a segment it shortened is named, with the position, in the report's cut; and opening the
/// result again changes nothing and cuts nothing, and the log takes an append.
pub fn log_recovery(data: &[u8]) {
    let files = log_files(data);
    let disk = SimDisk::new(0);
    let dir = Path::new(log_dir);
    disk.create_dir_all(dir).expect("mkdir");
    for (name, bytes) in &files {
        let f = disk.open(&dir.join(name), true).expect("create");
        f.write_at(bytes, 0).expect("write");
        f.sync().expect("sync");
    }
    disk.sync_dir(dir).expect("sync dir");
    let disk: Arc<dyn Disk> = Arc::new(disk);
    let config = LogConfig { segment_bytes: 4096, index_interval_bytes: 256, ..LogConfig::default() };
    let vouched = files.keys().any(|n| n == broker_core::log::RECOVERY_POINT_FILE || n.ends_with(".swap"));
    let (log, report) = match Log::open(disk.clone(), dir, config.clone(), 0) {
        Ok(opened) => opened,
        Err(LogError::Corrupt { .. } | LogError::Io { .. }) if vouched => return, // reported, with the file
        Err(e) => panic!("nothing vouched for these files, so recovery must cut, not fail: {e}"),
    };
    check_prefixes(disk.as_ref(), dir, &files, &report);
    check_batches(&log);
    log.verify_indexes().unwrap_or_else(|e| panic!("indexes after recovery: {e}"));
    let end = log.log_end_offset();
    drop(log);
    let (mut again, second) = Log::open(disk.clone(), dir, config, 0).unwrap_or_else(|e| panic!("a recovered log does not open again: {e}"));
    assert_eq!(second.cut, None, "a second open cut a log the first open recovered");
    assert_eq!(again.log_end_offset(), end, "a second open moved the log end");
    let mut b = batch::build(&[b"after recovery"], 0);
    let info = again.append(&mut b, 0, 0).unwrap_or_else(|e| panic!("a recovered log refuses an append: {e}"));
    assert_eq!(info.base_offset, end);
    check_batches(&again);
}

/// Each segment kept is a prefix of the file given (or the file as given); a shortened one is
/// the report's cut, at the length kept.
fn check_prefixes(disk: &dyn Disk, dir: &Path, given: &BTreeMap<String, Vec<u8>>, report: &broker_core::log::RecoveryReport) {
    if !report.swaps_completed.is_empty() {
        return; // a completed swap replaced segments with the swap's bytes
    }
    for (name, bytes) in given.iter().filter(|(n, _)| n.ends_with(".log")) {
        let path: PathBuf = dir.join(name);
        let Ok(f) = disk.open(&path, false) else { continue }; // removed: after a cut
        let len = f.len().expect("len") as usize;
        let mut kept = vec![0u8; len];
        broker_core::storage::read_exact_at(f.as_ref(), &mut kept, 0).expect("read");
        assert!(len <= bytes.len() && kept[..] == bytes[..len], "{name}: recovery kept bytes that were not the file's prefix");
        if len < bytes.len() {
            let cut = report.cut.as_ref().unwrap_or_else(|| panic!("{name} was cut from {} to {len} bytes, and the report names no cut", bytes.len()));
            assert_eq!((cut.file.as_path(), cut.position), (path.as_path(), len as u64), "the report's cut");
        }
    }
}

/// Every batch from the log start checks as stored, and offsets are dense.
fn check_batches(log: &Log) {
    let mut next = log.log_start_offset();
    let result: Result<(), LogError> = log.for_each_batch(next, 1 << 20, |h, bytes| {
        batch::validate_stored(&bytes).unwrap_or_else(|e| panic!("recovery kept an invalid batch at offset {}: {e}", h.base_offset));
        assert_eq!(h.base_offset, next, "offsets are dense");
        next = h.next_offset();
        Ok(())
    });
    result.unwrap_or_else(|e| panic!("reading the recovered log: {e}"));
    assert_eq!(next, log.log_end_offset(), "the batches end at the log end");
}

/// Target `scenario`: any text through the scenario parser. Promises: no panic; a scenario
/// that parses is written back (`sim shrink` writes scenarios) to text that parses to the
/// same scenario, and its fault schedule can be drawn from a seed.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(s) = Scenario::parse(text) else { return };
    let written = toml::to_string(&s).unwrap_or_else(|e| panic!("a parsed scenario does not serialize: {e}"));
    let again = Scenario::parse(&written).unwrap_or_else(|e| panic!("a written scenario does not parse: {e}\n{written}"));
    assert_eq!(again, s, "a scenario written and parsed again changed");
    let _ = crate::trace::scenario_digest(&s);
    let _ = crate::cluster::faults::schedule(&s, 1);
}

/// Target `trace`: any text as a trace file, through what reads one: the header (`sim replay`,
/// `sim shrink`), the divergence check and the view's parser and renderer (`sim view`).
/// Promise: no panic; a trace is identical to itself.
pub fn trace(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = crate::trace::read_header(text);
    let _ = crate::trace::read_planted_bug(text);
    assert_eq!(crate::trace::first_divergence(text, text), None);
    let _ = crate::view::render(text, "fuzz");
}
