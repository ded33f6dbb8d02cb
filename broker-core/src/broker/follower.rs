//! The follower's side of a partition: which leaders this node fetches from and what, KIP-279
//! epoch truncation, appending what the leader sent (its bytes unchanged), taking the leader's
//! log start, and starting over when the leader's log starts after ours ends. An answer that
//! arrives after the partition moved on (another leader or epoch) is dropped, never applied.

use super::partition::{Following, Partition};
use super::producer::ProducerStates;
use super::{Action, Broker, Error};
use crate::log::{batch, LogError};
use crate::replication::Role;
use std::collections::BTreeSet;

impl Broker {
    /// The leaders this node fetches from (counted again only after a role may have changed:
    /// the replica fetchers ask every 100 ms, `due`).
    pub fn leaders_followed(&mut self) -> BTreeSet<i32> {
        let partitions = &self.partitions;
        self.due
            .followed
            .get_or_insert_with(|| {
                partitions.values().filter_map(|p| match p.replication.role {
                    Role::Follower { leader } => Some(leader),
                    _ => None,
                }).collect()
            })
            .clone()
    }

    /// The partitions this node follows from `leader`, for its replica fetcher.
    pub fn following(&self, leader: i32) -> Vec<Following> {
        self.partitions
            .iter()
            // A replica whose truncation's job is in flight waits for its report (`truncation`).
            .filter(|(_, part)| part.replication.role == Role::Follower { leader } && part.log.failure().is_none() && !part.log.cutting())
            .map(|((name, p), part)| Following {
                topic: name.clone(),
                partition: p,
                leader_epoch: part.replication.leader_epoch,
                fetch_offset: part.leo(),
                log_start_offset: part.log_start_offset(),
                truncate_from_epoch: part.replication.needs_truncation.then(|| part.log.latest_epoch()),
            })
            .collect()
    }

    /// The follower's partition, if it still follows `leader` under `epoch`: answers that
    /// arrive after a metadata change are dropped.
    fn followed_mut(&mut self, name: &str, p: i32, leader: i32, epoch: i32) -> Option<&mut Partition> {
        let part = self.partitions.get_mut(name, p)?;
        (part.replication.role == Role::Follower { leader } && part.replication.leader_epoch == epoch).then_some(part)
    }

    /// KIP-279 truncation: the leader answered OffsetForLeaderEpoch for our latest epoch with
    /// (`epoch`, `end`). Cuts the local log where it diverges from the leader's: in memory at
    /// once, the IO and the producer-state rebuild as a job pushed to `out` (`truncation`).
    #[allow(clippy::too_many_arguments)]
    pub fn truncate_to_leader(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, epoch: i32, end: i64, now: u64, out: &mut Vec<Action>) -> Result<Option<i64>, Error> {
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(None) };
        let leo = part.leo();
        // (where to cut, whether that settles it) — Kafka's getOffsetTruncationState.
        let (target, complete) = match (part.log.latest_epoch(), epoch) {
            (None, _) => (leo, true),
            // The leader has no epoch at or below ours: fall back to the high watermark.
            (Some(_), -1) => (part.high_watermark().min(leo), true),
            (Some(ours), e) if e == ours => (end.min(leo), true),
            // The leader's log ends an older epoch `e` at `end`. If this log has `e` too, both
            // agree up to where the earlier of the two ends it. If not, its answer is an even
            // older epoch: cut to where that ends and ask the leader again about it.
            (Some(_), e) => {
                let (ours, our_end) = part.log.end_offset_for_epoch(e, None);
                (end.min(our_end.max(0)).min(leo), ours == e)
            }
        };
        let rules = self.config.rules();
        let (me, observer) = (self.config.node_id, self.config.observer.clone());
        let part = self.followed_mut(name, p, leader, leader_epoch).expect("checked above");
        // A leader never answers a negative end offset; a broken one must not make us panic.
        let target = target.max(0);
        let cut = target < leo && rules.follower_truncates();
        if cut {
            match part.log.truncate_to(target, now) {
                // A cleaning swap or a write in flight (`log::swap`, `log::deferred`): the next
                // round asks again.
                Err(LogError::Busy(_)) => return Ok(None),
                done => done?,
            }
        }
        let leo = part.leo();
        part.replication.on_truncate(leo);
        part.replication.needs_truncation = !complete && rules.follower_truncates() && rules.truncates_until_agreed();
        part.observed(&observer, me, name, p, now);
        if cut {
            self.after_truncation(name, p, true, out)?;
        }
        Ok(Some(leo))
    }

    /// Appends what the leader sent for a partition this node follows, and learns the leader's
    /// high watermark. Does nothing if the partition moved on meanwhile. Returns the sync the
    /// log's flush policy (or a roll) asked for, which the next fetch must wait for: the fetch
    /// offset tells the leader what this replica holds.
    #[allow(clippy::too_many_arguments)]
    pub fn append_from_leader(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, fetch_offset: i64, records: &[u8], leader_hw: i64, now: u64) -> Result<Option<crate::log::SyncJob>, Error> {
        let (me, observer) = (self.config.node_id, self.config.observer.clone());
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(None) };
        if part.replication.needs_truncation || part.leo() != fetch_offset || part.log.cutting() {
            return Ok(None); // a stale answer: the next fetch asks again from the right place
        }
        if !records.is_empty() {
            let appended = part.log.append_replicated(records, now);
            // The same whole batches the log kept: all of them (a trailing partial batch is
            // dropped there too), or after an IO error the prefix it wrote (`log::replica`).
            // Idempotent producers' state must know each, should this replica lead.
            let end = part.leo();
            let mut pos = 0;
            let mut recorded = Ok(None);
            while let Ok(h) = batch::read_header(&records[pos..]) {
                if pos + h.size > records.len() || h.next_offset() > end {
                    break;
                }
                recorded = recorded.and(part.record_appended(&h, &records[pos..pos + h.size]));
                pos += h.size;
            }
            if let Err(e) = appended.map_err(Error::from).and(recorded) {
                // The next fetch offset tells the leader what was written; so must the observer.
                part.observed(&observer, me, name, p, now);
                self.note_log(name, p);
                return Err(e);
            }
        }
        let job = part.log.take_sync();
        let leo = part.leo();
        part.replication.on_leader_high_watermark(leader_hw, leo);
        part.observed(&observer, me, name, p, now);
        // A flush.ms deadline, a roll or a higher mark may bring time-driven work (`due`).
        self.note_log(name, p);
        Ok(job)
    }

    /// The job `name`-`p`'s log owes, if any (after an append that failed part of the way).
    pub fn owed_job(&mut self, name: &str, p: i32) -> Option<crate::log::SyncJob> {
        self.partitions.get_mut(name, p)?.log.take_sync()
    }

    /// Takes the leader's log start from a fetch answer (Kafka's followers do, so records
    /// DeleteRecords removed at the leader go here too), up to this replica's high watermark:
    /// a start never passes what is known committed here.
    pub fn adopt_leader_start(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, leader_start: i64, now: u64) -> Result<(), Error> {
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(()) };
        let target = leader_start.min(part.high_watermark());
        if target <= part.log_start_offset() {
            return Ok(());
        }
        self.raise_log_start(name, p, target, now)
    }

    /// The leader says this follower's offset is past its log end: truncate by epoch again.
    pub fn retruncate(&mut self, name: &str, p: i32) -> Result<(), Error> {
        if let Some(part) = self.partitions.get_mut(name, p) {
            part.replication.needs_truncation = true;
        }
        Ok(())
    }

    /// The leader's log starts after ours ends (retention there): start over from its start,
    /// in memory at once, the IO as a job pushed to `out` (`truncation`).
    #[allow(clippy::too_many_arguments)]
    pub fn restart_from(&mut self, name: &str, p: i32, leader: i32, leader_epoch: i32, leader_start: i64, now: u64, out: &mut Vec<Action>) -> Result<(), Error> {
        let (me, observer) = (self.config.node_id, self.config.observer.clone());
        let Some(part) = self.followed_mut(name, p, leader, leader_epoch) else { return Ok(()) };
        match part.log.truncate_fully(leader_start, now) {
            // A cleaning swap or a write in flight: the next fetch is refused again.
            Err(LogError::Busy(_)) => return Ok(()),
            done => done?,
        }
        // An empty log has no producers: this state is right at once.
        part.producers = ProducerStates::default();
        let leo = part.leo();
        part.replication.on_truncate(leo);
        part.observed(&observer, me, name, p, now);
        self.after_truncation(name, p, false, out)
    }
}
