//! The data directory around the partition logs, through [`Disk`]: a partition directory
//! belongs to one topic id (its `partition.metadata`, as Kafka writes it), is emptied before a
//! re-created topic of the same name takes it, and is removed whole with its topic; and the
//! node's `producer-ids` file, the end of the last producer-id block handed out. The broker
//! decides when; this module only does the IO, so no decision module touches the disk.
//!
//! ```text
//! <data>/<topic>-<p>/partition.metadata   "version: 0\ntopic_id: <32 hex digits>\n"
//! <data>/producer-ids                     "<next unallocated id>\n"
//! <data>/<topic>-<p>/log-start-offset-checkpoint   "<log start offset>\n" (DeleteRecords)
//! <data>/clean-shutdown                   "<broker epoch>\n" (KIP-966; only while stopped)
//! ```

use super::{io_err as io, LogError};
use crate::storage::{read_exact_at, write_atomically, Disk};
use std::path::Path;

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

/// Makes `dir` the directory of the topic with id `topic_id_hex`. A new marker is written in
/// place and unsynced (see [`Claimed::marker_written`]): creating a topic of 4,000 partitions
/// must not cost 4,000 rounds of fsyncs.
pub fn claim(disk: &dyn Disk, data_dir: &Path, dir: &Path, topic_id_hex: &str) -> Result<Claimed, LogError> {
    let marker = dir.join(partition_marker);
    let expected = format!("version: 0\ntopic_id: {topic_id_hex}\n");
    // `exists` first: on a fresh directory no open is attempted (a failed open is still a disk
    // call, and the simulated disk charges latency for it).
    let text = if disk.exists(&marker) { read_small(disk, &marker, small_file_bytes_max)? } else { None };
    let claimed = match text {
        Some(text) if text == expected => return Ok(Claimed::Ours),
        Some(text) => {
            remove(disk, data_dir, dir)?;
            if is_marker(&text) { Claimed::Emptied } else { Claimed::Torn }
        }
        None => Claimed::Fresh,
    };
    disk.create_dir_all(dir).map_err(io("create", dir))?;
    let file = disk.open(&marker, true).map_err(io("create", &marker))?;
    file.truncate(0).and_then(|_| file.write_at(expected.as_bytes(), 0)).map_err(io("write", &marker))?;
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

/// The partition directories under `data_dir` that `keep` (given the topic name and partition
/// a directory's name says) does not keep, among those holding a partition marker: what a broker
/// left behind while it was down (a move or a deletion it never saw). One listing, and one look
/// per directory not kept: a kept one with another topic's marker is `claim`'s to empty.
pub fn strays(disk: &dyn Disk, data_dir: &Path, keep: impl Fn(&str, i32) -> bool) -> Result<Vec<(String, i32)>, LogError> {
    let mut out = Vec::new();
    for name in disk.list(data_dir).map_err(io("list", data_dir))? {
        let Some((topic, p)) = name.rsplit_once('-').and_then(|(t, p)| Some((t, p.parse::<i32>().ok()?))) else { continue };
        if keep(topic, p) || !disk.exists(&data_dir.join(&name).join(partition_marker)) {
            continue;
        }
        out.push((topic.to_string(), p));
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
