//! The log start offset as clients see it, and DeleteRecords, which moves it (Kafka's
//! `deleteRecordsOnLeader` and `logStartOffset`).
//!
//! The log deletes whole segments only; Kafka's start offset may fall inside a segment. So a
//! replica keeps a floor: the offset DeleteRecords moved its start to, persisted in
//! `log-start-offset-checkpoint` in the partition directory *before* anything is deleted, so a
//! crash never brings deleted records back. Segments wholly below the floor are then removed;
//! the one holding it stays, its records below the floor hidden (reads and fetches refuse
//! offsets below the start, and a fetch from the start returns the whole batch holding it, as
//! Kafka's does). Followers adopt their leader's start from every fetch answer (capped by their
//! own high watermark), and tell the leader theirs in every fetch; the leader answers a
//! DeleteRecords once every replica on a live broker reports a start at or past the offset
//! (Kafka's low watermark).
//!
//! A truncation below the floor (epoch truncation, starting over at the leader's start, a
//! recovery that lost an unflushed tail) brings the floor down to the new log end, persisted
//! (by the truncation's job, `truncation`, before the replica takes appends again), so records
//! appended later are never hidden by a floor from before.

use super::{Broker, Error};
use crate::kafka::delete_records_to_high_watermark;
use crate::log::{dir, CleanupPolicy, Log, LogConfig, LogError};
use crate::storage::Disk;
use std::path::Path;

impl Broker {
    /// DeleteRecords at the leader: moves the log start to `offset` (-1: the high watermark),
    /// which must not pass the high watermark. A start already past it stays. Returns the
    /// offset asked for and the leader epoch, for the wait on [`Broker::low_watermark`].
    pub fn delete_records(&mut self, name: &str, p: i32, offset: i64, now: u64) -> Result<(i64, i32), Error> {
        let part = self.led(name, p, -1)?;
        if !part.log.config().cleanup.delete {
            // Kafka's rule: only a topic whose cleanup.policy includes delete may lose records
            // by offset; a compacted topic keeps every key's latest value.
            return Err(Error::PolicyViolation(format!("records of {name}-{p} cannot be deleted: its cleanup.policy is {}", part.log.config().cleanup.name())));
        }
        let hw = part.high_watermark();
        let target = if offset == delete_records_to_high_watermark { hw } else { offset };
        if target < 0 || target > hw {
            return Err(Error::OffsetOutOfRange { requested: target, start: part.log_start_offset(), end: hw });
        }
        let epoch = part.replication.leader_epoch;
        self.raise_log_start(name, p, target, now)?;
        let part = self.local_mut(name, p)?;
        part.delete_asked = part.delete_asked.max(target);
        Ok((target, epoch))
    }

    /// The partition's low watermark at its leader, under `leader_epoch`: the smallest log
    /// start over this replica and every follower on a live broker, -1 while one of those has
    /// not reported its start since this leadership began (Kafka's lowWatermarkIfLeader).
    pub fn low_watermark(&self, name: &str, p: i32, leader_epoch: i32) -> Result<i64, Error> {
        let part = self.led(name, p, leader_epoch)?;
        Ok(part.replication.low_watermark(part.log_start_offset(), |r| self.image.is_live(r)))
    }

    /// Moves a replica's log start up to `offset` (a start already there stays): the floor is
    /// persisted first, then the whole segments below it are deleted.
    pub(super) fn raise_log_start(&mut self, name: &str, p: i32, offset: i64, now: u64) -> Result<(), Error> {
        let dir = self.partition_dir(name, p);
        let disk = self.disk.clone();
        let part = self.local_mut(name, p)?;
        if offset <= part.log_start_offset() {
            return Ok(());
        }
        dir::write_log_start(disk.as_ref(), &dir, offset)?;
        part.start_floor = offset;
        trim_below(&mut part.log, offset, now)?;
        self.note_log(name, p); // deleted files wait for the next tick to be closed off the lock
        Ok(())
    }

}

/// The floor of a replica just opened: read from its directory, brought down to the log end
/// if recovery cut below it, with the segments wholly below it deleted (a crash may have come
/// between persisting the floor and deleting them).
pub(super) fn open(disk: &dyn Disk, dir: &Path, log: &mut Log, now: u64) -> Result<i64, Error> {
    let floor = dir::read_log_start(disk, dir)?.unwrap_or(0);
    let floor = lowered(disk, dir, log, floor)?;
    trim_below(log, floor, now)?;
    Ok(floor)
}

/// `floor`, or the log end persisted as the new floor when the log now ends below it.
fn lowered(disk: &dyn Disk, dir: &Path, log: &Log, floor: i64) -> Result<i64, Error> {
    let end = log.log_end_offset();
    if floor <= end {
        return Ok(floor);
    }
    dir::write_log_start(disk, dir, end)?;
    Ok(end)
}

/// Deletes the whole segments of `log` below `offset`. The log removes segments only by
/// retention, which never removes one that reaches its bound: retention allowing no bytes and
/// bounded by `offset` removes exactly the segments wholly below it, with the log's own durable
/// bookkeeping (directory sync, epoch cache, recovery point). The log's settings are restored
/// whatever happens.
pub(super) fn trim_below(log: &mut Log, offset: i64, now: u64) -> Result<usize, LogError> {
    if log.segment_bases().get(1).is_none_or(|&next| next > offset) {
        return Ok(0); // nothing wholly below
    }
    let config = log.config().clone();
    log.set_config(LogConfig { retention_bytes: 0, cleanup: CleanupPolicy::DELETE, ..config.clone() })?;
    let deleted = log.apply_retention(now, offset);
    log.set_config(config)?;
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::build;
    use crate::storage::FileDisk;
    use std::sync::Arc;

    #[test]
    fn trimming_deletes_exactly_the_segments_wholly_below_and_keeps_the_settings() {
        let tmp = tempfile::tempdir().unwrap();
        let config = LogConfig { segment_bytes: 200, retention_ms: -1, cleanup: CleanupPolicy::COMPACT, ..LogConfig::default() };
        let (mut log, _) = Log::open(Arc::new(FileDisk::new()), tmp.path(), config.clone(), 0).unwrap();
        for _ in 0..6 {
            log.append(&mut build(&[&[7u8; 80]], 1), 0, 0).unwrap();
        }
        let bases = log.segment_bases();
        assert!(bases.len() >= 4, "{bases:?}");
        assert_eq!(trim_below(&mut log, bases[2], 0).unwrap(), 2, "segments 0 and 1 end at or below {}", bases[2]);
        assert_eq!(log.log_start_offset(), bases[2]);
        assert_eq!(trim_below(&mut log, bases[3] - 1, 0).unwrap(), 0, "the segment holding the offset stays");
        assert_eq!(log.config(), &config);
    }

    #[test]
    fn a_floor_above_the_log_end_comes_down_to_it_and_is_persisted() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = Arc::new(FileDisk::new());
        let (mut log, _) = Log::open(disk.clone(), tmp.path(), LogConfig::default(), 0).unwrap();
        log.append(&mut build(&[b"a", b"b"], 1), 0, 0).unwrap();
        dir::write_log_start(disk.as_ref(), tmp.path(), 9).unwrap();
        assert_eq!(open(disk.as_ref(), tmp.path(), &mut log, 0).unwrap(), 2);
        assert_eq!(dir::read_log_start(disk.as_ref(), tmp.path()).unwrap(), Some(2));
    }
}
