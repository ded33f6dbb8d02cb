//! The data directory around the partition logs, through [`Disk`]: a partition directory
//! belongs to one topic id (its `partition.metadata`, as Kafka writes it), is emptied before a
//! re-created topic of the same name takes it, and is removed whole with its topic (renamed out
//! of use first, its files unlinked later); and the
//! node's `producer-ids` file, the end of the last producer-id block handed out. The broker
//! decides when; this module only does the IO, so no decision module touches the disk.
//!
//! ```text
//! <data>/<topic>-<p>/partition.metadata   "version: 0\ntopic_id: <32 hex digits>\n"
//! <data>/producer-ids                     "<next unallocated id>\n"
//! <data>/<topic>-<p>/log-start-offset-checkpoint   "<log start offset>\n" (DeleteRecords)
//! <data>/clean-shutdown                   "<broker epoch>\n" (KIP-966; only while stopped)
//! <data>/<topic>-<p>.<n>-delete/          a removed replica's directory, until its files go
//! ```

use super::{io_err as io, LogError};
use crate::storage::{read_exact_at, write_atomically, Disk};
use std::path::{Path, PathBuf};

/// The name of the file that says which topic id a partition directory belongs to.
pub const partition_marker: &str = "partition.metadata";

/// A metadata file larger than this is not one of ours (both are a line or two).
const small_file_bytes_max: u64 = 1 << 20;

/// What [`claim`] found in the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claimed {
    /// The directory already belonged to this topic id.
    Ours,
    /// The directory is new (or had no marker) and now belongs to this topic id.
    Fresh,
    /// A deleted topic of the same name had left it; its files were removed first, so old
    /// records never resurface under the new topic.
    Emptied,
    /// Its marker was not whole: a power loss before the creation was made durable (the broker's
    /// open job syncs the file system before a created replica is installed and takes a role,
    /// see `broker::opening`); no record was ever written there, so it was emptied as above.
    Torn,
}

impl Claimed {
    /// Whether the marker was written just now, unsynced: the caller must make it and the
    /// directory's entry in the data directory durable before the partition takes a write (the
    /// broker's open job syncs the file system once for every replica it created, off the
    /// node's gate, before their report installs them).
    pub fn marker_written(self) -> bool {
        self != Claimed::Ours
    }
}

/// A failed [`claim`]: why, and whether it failed after it began changing the directory
/// (removing another topic's files, writing the marker), which may have left a marker written
/// or torn: owed a sync, as a written one. A failure to read what was there changed nothing,
/// and must not be taken for one (the broker's open job removes an owed marker whose sync
/// failed, and a directory of records without its marker is later claimed as fresh).
#[derive(Debug)]
pub struct ClaimFailed {
    pub error: LogError,
    pub changed: bool,
}

/// Makes `dir` the directory of the topic with id `topic_id_hex`. A new marker is written in
/// place and unsynced (see [`Claimed::marker_written`]): creating a topic of 4,000 partitions
/// must not cost 4,000 rounds of fsyncs.
pub fn claim(disk: &dyn Disk, data_dir: &Path, dir: &Path, topic_id_hex: &str) -> Result<Claimed, ClaimFailed> {
    let (read, changing) = (|error| ClaimFailed { error, changed: false }, |error| ClaimFailed { error, changed: true });
    let marker = dir.join(partition_marker);
    let expected = format!("version: 0\ntopic_id: {topic_id_hex}\n");
    // `exists` first: on a fresh directory no open is attempted (a failed open is still a disk
    // call, and the simulated disk charges latency for it).
    let text = if disk.exists(&marker) { read_small(disk, &marker, small_file_bytes_max).map_err(read)? } else { None };
    let claimed = match text {
        Some(text) if text == expected => return Ok(Claimed::Ours),
        Some(text) => {
            remove(disk, data_dir, dir).map_err(changing)?;
            if is_marker(&text) { Claimed::Emptied } else { Claimed::Torn }
        }
        None => Claimed::Fresh,
    };
    disk.create_dir_all(dir).map_err(io("create", dir)).map_err(changing)?;
    let file = disk.open(&marker, true).map_err(io("create", &marker)).map_err(changing)?;
    file.truncate(0).and_then(|_| file.write_at(expected.as_bytes(), 0)).map_err(io("write", &marker)).map_err(changing)?;
    Ok(claimed)
}

/// Whether `text` is a whole marker (of any topic id).
fn is_marker(text: &str) -> bool {
    text.strip_prefix("version: 0\ntopic_id: ").and_then(|id| id.strip_suffix('\n')).is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes a partition directory and everything in it, then syncs the data directory so the
/// removal survives a crash.
pub fn remove(disk: &dyn Disk, data_dir: &Path, dir: &Path) -> Result<(), LogError> {
    if !disk.exists(dir) {
        return Ok(());
    }
    for file in disk.list(dir).map_err(io("list", dir))? {
        let f = dir.join(file);
        disk.remove(&f).map_err(io("remove", &f))?;
    }
    disk.remove_dir(dir).map_err(io("remove", dir))?;
    disk.sync_dir(data_dir).map_err(io("fsync", data_dir))
}

/// How a retired partition directory's name ends (`<topic>-<p>.<n>-delete`): Kafka's suffix
/// for a deleted log's directory awaiting its asynchronous deletion. No partition directory's
/// name ends so (theirs end in a partition number).
const retired_suffix: &str = "-delete";

/// A retired directory's name keeps at most this many bytes of the partition directory's, so
/// `<name>.<n>-delete` stays within the 255 bytes a file name may have (a topic's name alone
/// may have 249; Kafka shortens its deleted logs' names the same way).
const retired_name_kept_bytes_max: usize = 200;

/// Takes partition directory `dir` out of use with one rename, to `<its name>.<n>-delete` (the
/// lowest `n` not taken), and returns the new path; None when `dir` does not exist. Its files
/// are unlinked later, off the node's gate ([`remove_retired`]): a replica is removed without
/// its unlinks and syncs stopping the node, and the name is free at once for a replica created
/// again under it. The rename is not synced: a crash before it is durable leaves the directory
/// under its old name, and a crash before the removal leaves the retired one; both are strays
/// the next registration removes ([`strays`]).
pub fn retire(disk: &dyn Disk, dir: &Path) -> Result<Option<PathBuf>, LogError> {
    if !disk.exists(dir) {
        return Ok(None);
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut kept = name.len().min(retired_name_kept_bytes_max);
    while !name.is_char_boundary(kept) {
        kept -= 1;
    }
    let name = &name[..kept];
    let to = (0u64..).map(|n| dir.with_file_name(format!("{name}.{n}{retired_suffix}"))).find(|to| !disk.exists(to)).expect("some name is free");
    disk.rename(dir, &to).map_err(io("rename", dir))?;
    Ok(Some(to))
}

/// Removes a retired directory ([`retire`]) and everything in it. What is already gone is no
/// error: a registration's stray sweep may hand out a directory a removal is still removing.
/// Not synced: a crash before the removal is durable leaves it a stray again.
pub fn remove_retired(disk: &dyn Disk, dir: &Path) -> Result<(), LogError> {
    let gone = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    };
    let files = match disk.list(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        r => r.map_err(io("list", dir))?,
    };
    for file in files {
        let f = dir.join(file);
        gone(disk.remove(&f)).map_err(io("remove", &f))?;
    }
    gone(disk.remove_dir(dir)).map_err(io("remove", dir))
}

/// What a broker left behind in `data_dir` while it was down, from one listing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Strays {
    /// The partition directories holding a marker that `keep` (given the topic name and
    /// partition the name says) does not keep: a move or a deletion the broker never saw. A
    /// kept one with another topic's marker is `claim`'s to empty.
    pub replicas: Vec<(String, i32)>,
    /// Retired directories whose removal did not finish ([`retire`]).
    pub retired: Vec<PathBuf>,
}

/// The [`Strays`] under `data_dir`: one listing, and one look per partition directory not kept.
pub fn strays(disk: &dyn Disk, data_dir: &Path, keep: impl Fn(&str, i32) -> bool) -> Result<Strays, LogError> {
    let mut out = Strays::default();
    for name in disk.list(data_dir).map_err(io("list", data_dir))? {
        if name.ends_with(retired_suffix) {
            out.retired.push(data_dir.join(name));
            continue;
        }
        let Some((topic, p)) = name.rsplit_once('-').and_then(|(t, p)| Some((t, p.parse::<i32>().ok()?))) else { continue };
        if keep(topic, p) || !disk.exists(&data_dir.join(&name).join(partition_marker)) {
            continue;
        }
        out.replicas.push((topic.to_string(), p));
    }
    Ok(out)
}

/// The next unallocated producer id persisted in `path`, if the file exists.
pub fn read_producer_ids(disk: &dyn Disk, path: &Path) -> Result<Option<i64>, LogError> {
    if !disk.exists(path) {
        return Ok(None);
    }
    let Some(text) = read_small(disk, path, small_file_bytes_max)? else { return Ok(None) };
    let next = text.trim().parse().map_err(|_| LogError::Corrupt { file: path.to_path_buf(), position: 0, reason: "not a number".into() })?;
    Ok(Some(next))
}

/// Persists `limit` as the next unallocated producer id (atomically, synced).
pub fn write_producer_ids(disk: &dyn Disk, path: &Path, limit: i64) -> Result<(), LogError> {
    write_atomically(disk, path, format!("{limit}\n").as_bytes()).map_err(io("write", path))
}

/// The file a broker leaves after a clean shutdown (every partition flushed and checkpointed),
/// naming the broker epoch it held: Kafka's `.kafka_cleanshutdown`. Read and removed at the
/// next start, so a crash after that start leaves none; its absence is an unclean shutdown.
pub const clean_shutdown_file: &str = "clean-shutdown";

/// Takes the clean-shutdown marker: the broker epoch it names, if there is one, after removing
/// it durably (the next stop must write its own). A marker that does not parse is treated as
/// none (an unclean shutdown: the safe side), and removed too.
pub fn take_clean_shutdown(disk: &dyn Disk, data_dir: &Path) -> Result<Option<i64>, LogError> {
    let path = data_dir.join(clean_shutdown_file);
    if !disk.exists(&path) {
        return Ok(None);
    }
    let epoch = read_small(disk, &path, small_file_bytes_max)?.and_then(|text| text.trim().parse().ok()).filter(|&e: &i64| e >= 0);
    disk.remove(&path).map_err(io("remove", &path))?;
    disk.sync_dir(data_dir).map_err(io("sync", data_dir))?;
    Ok(epoch)
}

/// Leaves the clean-shutdown marker naming `broker_epoch` (atomically, synced).
pub fn write_clean_shutdown(disk: &dyn Disk, data_dir: &Path, broker_epoch: i64) -> Result<(), LogError> {
    let path = data_dir.join(clean_shutdown_file);
    write_atomically(disk, &path, format!("{broker_epoch}\n").as_bytes()).map_err(io("write", &path))
}

/// The file holding the log start offset DeleteRecords set, in the partition directory (Kafka
/// keeps one `log-start-offset-checkpoint` per data directory).
pub const log_start_file: &str = "log-start-offset-checkpoint";

/// The log start offset persisted in partition directory `dir`, if any.
pub fn read_log_start(disk: &dyn Disk, dir: &Path) -> Result<Option<i64>, LogError> {
    let path = dir.join(log_start_file);
    // `exists` first, as in `claim`: most partitions never had records deleted, and a failed
    // open is still a disk call (the simulated disk charges latency for it).
    if !disk.exists(&path) {
        return Ok(None);
    }
    let Some(text) = read_small(disk, &path, small_file_bytes_max)? else { return Ok(None) };
    let offset = text.trim().parse().ok().filter(|&o: &i64| o >= 0);
    offset.map(Some).ok_or_else(|| LogError::Corrupt { file: path, position: 0, reason: "not a non-negative number".into() })
}

/// Persists `offset` as the log start of partition directory `dir` (atomically, synced).
pub fn write_log_start(disk: &dyn Disk, dir: &Path, offset: i64) -> Result<(), LogError> {
    let path = dir.join(log_start_file);
    write_atomically(disk, &path, format!("{offset}\n").as_bytes()).map_err(io("write", &path))
}

/// The text of a small file the log layer replaces atomically (a line or two), or None when it
/// does not exist. A file longer than `bytes_max`, or not UTF-8, is corrupt: atomic replacement
/// never tears it.
pub(super) fn read_small(disk: &dyn Disk, path: &Path, bytes_max: u64) -> Result<Option<String>, LogError> {
    let f = match disk.open(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open", path)(e)),
    };
    let len = f.len().map_err(io("stat", path))?;
    if len > bytes_max {
        return Err(LogError::Corrupt { file: path.to_path_buf(), position: bytes_max, reason: format!("{len} bytes; a file of this kind holds at most {bytes_max}") });
    }
    let mut buf = vec![0u8; len as usize];
    read_exact_at(f.as_ref(), &mut buf, 0).map_err(io("read", path))?;
    let text = String::from_utf8(buf).map_err(|e| LogError::Corrupt { file: path.to_path_buf(), position: e.utf8_error().valid_up_to() as u64, reason: "not UTF-8".into() })?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FileDisk;

    fn plant(disk: &dyn Disk, path: &Path, bytes: &[u8]) {
        let f = disk.open(path, true).unwrap();
        f.truncate(0).unwrap();
        f.write_at(bytes, 0).unwrap();
    }

    #[test]
    fn a_directory_left_by_another_topic_id_is_emptied_before_it_is_claimed() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let (data, dir) = (tmp.path(), tmp.path().join("t-0"));
        let (aa, bb) = ("aa".repeat(16), "bb".repeat(16));
        assert_eq!(claim(&disk, data, &dir, &aa).unwrap(), Claimed::Fresh);
        assert_eq!(claim(&disk, data, &dir, &aa).unwrap(), Claimed::Ours);
        plant(&disk, &dir.join("00000000000000000000.log"), b"old records");
        assert_eq!(claim(&disk, data, &dir, &bb).unwrap(), Claimed::Emptied);
        assert_eq!(disk.list(&dir).unwrap(), vec![partition_marker.to_string()]);
        remove(&disk, data, &dir).unwrap();
        assert!(!disk.exists(&dir));
    }

    #[test]
    fn a_torn_marker_is_told_apart_from_another_topics() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let (data, dir) = (tmp.path(), tmp.path().join("t-0"));
        let aa = "aa".repeat(16);
        for torn in [&b""[..], b"version: 0\ntopic_id: aaaa", b"\0\0\0\0"] {
            assert!(claim(&disk, data, &dir, &aa).unwrap().marker_written());
            plant(&disk, &dir.join(partition_marker), torn);
            assert_eq!(claim(&disk, data, &dir, &aa).unwrap(), Claimed::Torn, "{torn:?}");
            assert_eq!(claim(&disk, data, &dir, &aa).unwrap(), Claimed::Ours);
            remove(&disk, data, &dir).unwrap();
        }
    }

    #[test]
    fn a_retired_directory_frees_its_name_at_once_and_is_found_again_until_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let (data, dir) = (tmp.path(), tmp.path().join("t-0"));
        let aa = "aa".repeat(16);
        assert_eq!(retire(&disk, &dir).unwrap(), None, "nothing to retire");
        claim(&disk, data, &dir, &aa).unwrap();
        plant(&disk, &dir.join("00000000000000000000.log"), b"old records");
        let first = retire(&disk, &dir).unwrap().expect("retired");
        assert_eq!(first, data.join("t-0.0-delete"));
        assert!(!disk.exists(&dir) && disk.exists(&first.join("00000000000000000000.log")));
        // Created again under the name and retired again before the first removal ran.
        assert_eq!(claim(&disk, data, &dir, &aa).unwrap(), Claimed::Fresh);
        let second = retire(&disk, &dir).unwrap().expect("retired");
        assert_eq!(second, data.join("t-0.1-delete"), "a free name, not the one still being removed");
        claim(&disk, data, &dir, &aa).unwrap();
        let found = strays(&disk, data, |_, _| true).unwrap();
        assert_eq!(found, Strays { replicas: vec![], retired: vec![first.clone(), second.clone()] }, "a retired directory is never taken for a replica");
        let found = strays(&disk, data, |_, _| false).unwrap();
        assert_eq!(found.replicas, vec![("t".to_string(), 0)]);
        remove_retired(&disk, &first).unwrap();
        remove_retired(&disk, &first).unwrap(); // a second removal of it finds nothing to do
        remove_retired(&disk, &second).unwrap();
        assert_eq!(disk.list(data).unwrap(), vec!["t-0".to_string()], "only the live directory is left");
        // A topic name of 249 bytes, the longest Kafka allows: its retired name still fits.
        let long = data.join(format!("{}-17", "x".repeat(249)));
        claim(&disk, data, &long, &aa).unwrap();
        let retired = retire(&disk, &long).unwrap().expect("retired");
        assert!(retired.file_name().unwrap().len() <= 255 && disk.exists(&retired.join(partition_marker)), "{}", retired.display());
    }

    #[test]
    fn a_claim_that_fails_reading_the_marker_says_it_changed_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let (data, dir) = (tmp.path(), tmp.path().join("t-0"));
        disk.create_dir_all(&dir.join(partition_marker)).unwrap(); // unreadable as a file
        let failed = claim(&disk, data, &dir, &"aa".repeat(16)).unwrap_err();
        assert!(!failed.changed, "{failed:?}");
        let (file_dir, under) = (tmp.path().join("u-0"), tmp.path().join("u-0").join("x"));
        plant(&disk, &file_dir, b"a file where the directory goes");
        let failed = claim(&disk, data, &under, &"aa".repeat(16)).unwrap_err();
        assert!(failed.changed, "a failure while creating may leave a marker behind: {failed:?}");
    }

    #[test]
    fn producer_ids_round_trip_and_garbage_is_corrupt() {
        let tmp = tempfile::tempdir().unwrap();
        let (disk, path) = (FileDisk::new(), tmp.path().join("producer-ids"));
        assert_eq!(read_producer_ids(&disk, &path).unwrap(), None);
        write_producer_ids(&disk, &path, 4000).unwrap();
        assert_eq!(read_producer_ids(&disk, &path).unwrap(), Some(4000));
        plant(&disk, &path, b"four thousand");
        assert!(matches!(read_producer_ids(&disk, &path), Err(LogError::Corrupt { .. })));
    }
}
