//! Opening local replicas as a job off the node's gate (issue 32): a step that finds replicas to
//! open (a topic created, a replica moved here, a failed log's retry, this process's
//! registration) hands out one [`OpenJob`] for all of them, and the job's report installs them.
//! Opening is IO that can take long: claiming the directory, recovery's reads and cuts, the
//! DeleteRecords floor, the producer-state replay (a reopen after a disk failure can read a
//! checkpoint interval of writes), file creates that wait on the file system's journal under
//! writeback (200 replicas in one decision held a loaded broker's gate for 1 s,
//! docs/benchmarks.md). The rest of the node is decided meanwhile.
//!
//! A replica whose directory the job gave a new marker (a creation) is made durable by one
//! file-system sync at the job's end, for all of them (a topic of 4,000 partitions: one
//! `syncfs`, not 4,000 rounds of fsyncs), before the report: so a replica is installed, and
//! takes a role, only with its marker durable, and a marker torn by a power loss always belongs
//! to a creation nobody wrote under (`dir::Claimed::Torn` empties it). A marker written but not
//! covered by a sync that succeeded (the sync failed; the open failed after its claim) is
//! remembered (`Broker::creating`), and the next open of the directory syncs again even if it
//! finds the marker whole in the page cache.
//!
//! Until the report the replica is not open here: its partition's requests are refused as for a
//! replica being set up, and this node's Metadata and FindCoordinator say its leader is not
//! available ([`Broker::replica_pending`]). A directory's removal while its open is out (the
//! topic deleted, the replica moved away, a stray) closes the open's fence first
//! (`log::Fence`): it waits for the open running in the directory, and an open that runs later
//! does nothing; that open's report is stale (`Opening::attempt`) and its log is dropped.
//! Decisions here touch no file.

use super::partition::{restored_producers, start_of, Partition};
use super::producer::ProducerStates;
use super::{log_start, Action, Broker, Error, Level};
use crate::constants::failed_log_reopen_ms;
use crate::log::dir::{self, Claimed};
use crate::log::{Fence, Log, LogConfig, OwedStamp};
use crate::metadata::topic;
use crate::replication::Replication;
use crate::storage::Disk;
use std::path::PathBuf;
use std::sync::Arc;

/// One open job: the replicas a step found to open, opened one after another, then one
/// file-system sync if any of them wrote a marker (blocking: run it where that stops nobody
/// else). Two jobs are equal when they open the same replicas at the same attempts.
#[derive(Clone)]
pub struct OpenJob {
    disk: Arc<dyn Disk>,
    data_dir: PathBuf,
    /// The broker's write-behind (`log::deferred`): opened logs stage their appends.
    write_behind: bool,
    /// Planted: every checkpoint of an opened log is written in place.
    checkpoints_in_place: bool,
    replicas: Vec<ToOpen>,
}

/// One replica an [`OpenJob`] opens.
#[derive(Clone)]
pub(super) struct ToOpen {
    key: (String, i32),
    topic_id: [u8; 16],
    /// Which open of the key this is (`Opening::attempt`): a report of another is stale.
    attempt: u64,
    config: LogConfig,
    /// When it was queued (its log's first segment time, if it makes one).
    now: u64,
    /// Open before (or failed to open): its old log's name changes are made durable before it
    /// takes writes (`Log::reopen`).
    reopen: bool,
    /// Its marker was written by an earlier open and no sync has covered it yet.
    owes_marker: bool,
    fence: Fence,
}

/// An open job out for a replica, until its report.
pub(super) struct Opening {
    topic_id: [u8; 16],
    attempt: u64,
    fence: Fence,
}

/// A finished [`OpenJob`]: each replica's log and state, or why not.
pub struct Opened {
    replicas: Vec<OpenedReplica>,
    /// The file-system sync's error, when one ran and failed.
    sync_failed: Option<String>,
}

struct OpenedReplica {
    key: (String, i32),
    topic_id: [u8; 16],
    attempt: u64,
    /// A marker of it was written and no sync that succeeded covered it.
    marker_unsynced: bool,
    result: Result<Ready, Error>,
}

/// A replica opened, not yet installed.
struct Ready {
    log: Log,
    start_floor: i64,
    producers: ProducerStates,
    /// Lines for the operator: the directory emptied, recovery's cuts and rebuilds.
    lines: Vec<String>,
}

impl std::fmt::Debug for OpenJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenJob({} replicas)", self.replicas.len())
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened({} replicas)", self.replicas.len())
    }
}

impl PartialEq for OpenJob {
    fn eq(&self, other: &OpenJob) -> bool {
        let keys = |j: &OpenJob| j.replicas.iter().map(|r| (r.key.clone(), r.attempt)).collect::<Vec<_>>();
        keys(self) == keys(other)
    }
}

impl Eq for OpenJob {}

impl OpenJob {
    /// How many replicas it opens.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// Opens every replica, each inside its fence, then syncs the file system once if any
    /// wrote a marker. A failed sync fails every replica that wrote one (their markers are
    /// removed: the kernel may have dropped their pages), the others stand.
    pub fn run(&self) -> Opened {
        let mut replicas = Vec::with_capacity(self.replicas.len());
        let mut stamps: Vec<Option<OwedStamp>> = Vec::new();
        for r in &self.replicas {
            let mut marker = r.owes_marker;
            let result = r.fence.pass(|| Ok(self.open_one(r, &mut marker))).unwrap_or_else(|e| Err(e.into()));
            stamps.push(result.as_ref().ok().map(|ready| ready.log.owed_stamp()));
            replicas.push(OpenedReplica { key: r.key.clone(), topic_id: r.topic_id, attempt: r.attempt, marker_unsynced: marker, result });
        }
        let mut sync_failed = None;
        if replicas.iter().any(|r| r.marker_unsynced) {
            match self.disk.sync_all(&self.data_dir) {
                Ok(()) => {
                    for (r, stamp) in replicas.iter_mut().zip(stamps) {
                        r.marker_unsynced = false;
                        // The sync covered what each opened log owed (its directory's entry).
                        if let (Ok(ready), Some(stamp)) = (&mut r.result, stamp) {
                            ready.log.owed_synced(stamp);
                        }
                    }
                }
                Err(e) => {
                    let why = format!("syncfs after creating replicas: {e}");
                    for (r, to) in replicas.iter_mut().zip(&self.replicas).filter(|(r, _)| r.marker_unsynced) {
                        let marker = self.data_dir.join(format!("{}-{}", r.key.0, r.key.1)).join(dir::partition_marker);
                        let _ = to.fence.pass(|| Ok(self.disk.remove(&marker)));
                        r.result = Err(Error::Storage(why.clone()));
                    }
                    sync_failed = Some(why);
                }
            }
        }
        if self.checkpoints_in_place {
            // Planted: the in-place checkpoint at open comes after the creation's sync, so it
            // stays unsynced as the bug has it.
            for (r, to) in replicas.iter_mut().zip(&self.replicas) {
                if let Ok(ready) = &mut r.result {
                    if let Err(e) = to.fence.pass(|| ready.log.checkpoint()) {
                        r.result = Err(e.into());
                    }
                }
            }
        }
        Opened { replicas, sync_failed }
    }

    /// Claims, opens and recovers one replica's log, and replays its producers' state; sets
    /// `marker` once a new marker is written.
    fn open_one(&self, r: &ToOpen, marker: &mut bool) -> Result<Ready, Error> {
        let dir = self.data_dir.join(format!("{}-{}", r.key.0, r.key.1));
        // A claim that failed while changing the directory may have written a marker: owed, as
        // one that did. One that failed reading the marker wrote none: a failed sync must not
        // remove the marker of a directory that holds records (seed swarm-five 71630).
        let claimed = dir::claim(self.disk.as_ref(), &self.data_dir, &dir, &topic::hex(&r.topic_id)).map_err(|f| {
            *marker |= f.changed;
            f.error
        })?;
        *marker |= claimed.marker_written();
        let mut lines = Vec::new();
        match claimed {
            Claimed::Emptied => lines.push(format!("{}: left by a deleted topic of the same name; emptied", dir.display())),
            Claimed::Torn => lines.push(format!("{}: its marker was torn by a power loss before its first flush; emptied", dir.display())),
            Claimed::Ours | Claimed::Fresh => {}
        }
        let open = if r.reopen { Log::reopen } else { Log::open };
        let (mut log, report) = open(self.disk.clone(), &dir, r.config.clone(), r.now)?;
        log.defer_syncs();
        if self.write_behind {
            log.defer_writes();
        }
        if self.checkpoints_in_place {
            log.plant_checkpoint_in_place();
        }
        let (name, p) = (&r.key.0, r.key.1);
        if let Some(cut) = &report.cut {
            lines.push(format!("{name}-{p}: recovery cut {} at byte {} ({} bytes): {}", cut.file.display(), cut.position, cut.bytes_removed, cut.reason));
        }
        for path in report.indexes_rebuilt.iter().chain(&report.segments_removed) {
            lines.push(format!("{name}-{p}: recovery rebuilt or removed {}", path.display()));
        }
        let start_floor = log_start::open(self.disk.as_ref(), &dir, &mut log, r.now)?;
        let producers = restored_producers(&mut log)?;
        Ok(Ready { log, start_floor, producers, lines })
    }

    /// The report of a job whose run ended without one (`why`): every replica failed, its
    /// marker (if it wrote one) unsynced; each is retried later.
    pub fn lost(&self, why: String) -> Opened {
        let replicas = self.replicas.iter().map(|r| OpenedReplica { key: r.key.clone(), topic_id: r.topic_id, attempt: r.attempt, marker_unsynced: true, result: Err(Error::Storage(why.clone())) }).collect();
        Opened { replicas, sync_failed: None }
    }
}

impl Broker {
    /// Queues the open of `name`-`p` for the step's job ([`Broker::hand_out_opens`]).
    pub(super) fn queue_open(&mut self, name: &str, p: i32, now: u64, out: &mut Vec<Action>) -> Result<(), Error> {
        let config = self.settings_or_defaults(name, out).ok_or(Error::UnknownTopicOrPartition)?.log;
        let topic_id = self.image.topics.get(name).map(|t| t.id).ok_or(Error::UnknownTopicOrPartition)?;
        let key = (name.to_string(), p);
        self.open_attempts += 1;
        let (attempt, fence) = (self.open_attempts, Fence::default());
        let (reopen, owes_marker) = (self.offline.contains_key(&key), self.creating.contains(&key));
        self.opening.insert(key.clone(), Opening { topic_id, attempt, fence: fence.clone() });
        self.to_open.push(ToOpen { key, topic_id, attempt, config, now, reopen, owes_marker, fence });
        Ok(())
    }

    /// Hands out the opens this step queued as one job ([`Action::Open`]).
    pub(super) fn hand_out_opens(&mut self, out: &mut Vec<Action>) {
        if self.to_open.is_empty() {
            return;
        }
        let replicas = std::mem::take(&mut self.to_open);
        let (disk, data_dir, write_behind) = (self.disk.clone(), self.config.data_dir.clone(), self.config.write_behind);
        let checkpoints_in_place = self.config.rules().checkpoints_in_place();
        out.push(Action::Open(OpenJob { disk, data_dir, write_behind, checkpoints_in_place, replicas }));
    }

    /// Whether an open job is out for this replica (or queued this step).
    pub(super) fn is_opening(&self, name: &str, p: i32) -> bool {
        !self.opening.is_empty() && self.opening.contains_key(&(name.to_string(), p))
    }

    /// How many replicas wait for their open job's report.
    pub fn opening(&self) -> usize {
        self.opening.len()
    }

    /// Whether this broker applied the metadata log up to `offset` and opened the replicas it
    /// named here (no open job out): a topic created, or moved here, is usable once this holds,
    /// and a CreateTopics this node answers waits for it.
    pub fn applied_through(&self, offset: i64) -> bool {
        self.image.offset >= offset && self.opening.is_empty()
    }

    /// The directory of this replica is being removed: its open job, if one is out, is fenced
    /// (a running open ends first, a later one does nothing) and its report will be stale. A
    /// marker it may have written stays owed (`creating`) until the removal succeeds.
    pub(super) fn cancel_open(&mut self, name: &str, p: i32) {
        let key = (name.to_string(), p);
        if let Some(o) = self.opening.remove(&key) {
            o.fence.close();
            self.creating.insert(key);
        }
    }

    /// Shuts the open jobs' fences of `keys` without waiting ([`Fence::shut`]), before their
    /// directories are removed one by one ([`Broker::cancel_open`]): each removal then waits
    /// only for the open running at that moment, not for the job's next ones in turn.
    pub(super) fn shut_opens<'a>(&self, keys: impl IntoIterator<Item = &'a (String, i32)>) {
        for key in keys {
            if let Some(o) = self.opening.get(key) {
                o.fence.shut();
            }
        }
    }

    /// The process is stopping: every open job out is fenced, its replicas left unopened. A
    /// line at error level says so: the stop is not clean (the next start recovers them).
    pub fn stop_opens(&mut self) -> Vec<Action> {
        if self.opening.is_empty() {
            return Vec::new();
        }
        let keys: Vec<(String, i32)> = self.opening.keys().cloned().collect();
        self.shut_opens(&keys);
        for (name, p) in &keys {
            self.cancel_open(name, *p);
        }
        vec![Action::Log(Level::Error, format!("stopping with {} replicas not opened yet; the next start recovers them", keys.len()))]
    }

    /// The open job's topic id for each replica it opens, for the removal of those whose topic
    /// is gone (`reconcile`).
    pub(super) fn opening_ids(&self) -> impl Iterator<Item = (&(String, i32), [u8; 16])> {
        self.opening.iter().map(|(k, o)| (k, o.topic_id))
    }

    /// Whether this node's replica of a partition is not ready to take a role yet: not open
    /// (its open job out, offline, or not opened yet). Where the image names this node the
    /// leader, its Metadata and FindCoordinator answers say the leader is not available
    /// meanwhile, as for a partition whose leader is being elected, so clients wait rather than
    /// send to it.
    pub fn replica_pending(&self, name: &str, p: i32) -> bool {
        !self.partitions.contains(name, p)
    }

    /// An open job ran: each replica still waiting for this open is installed and takes its
    /// role from the image, or, failed, goes offline to be opened again after
    /// `failed_log_reopen_ms`. A report for an open cancelled since (`cancel_open`) is stale:
    /// its log is dropped.
    pub fn opened(&mut self, done: Opened, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if let Some(why) = &done.sync_failed {
            out.push(Action::Log(Level::Error, format!("{why}; the replicas it created go offline until opened again")));
        }
        for r in done.replicas {
            if self.opening.get(&r.key).is_none_or(|o| o.attempt != r.attempt) {
                continue;
            }
            self.opening.remove(&r.key);
            if r.marker_unsynced {
                self.creating.insert(r.key.clone());
            } else {
                self.creating.remove(&r.key);
            }
            let ready = match r.result {
                Ok(ready) => ready,
                Err(e) => {
                    let (name, p) = &r.key;
                    let again = if self.offline.contains_key(&r.key) { "still offline" } else { "opening" };
                    out.push(Action::Log(Level::Error, format!("{name}-{p}: {again}: {e}")));
                    self.offline.insert(r.key, now + failed_log_reopen_ms);
                    continue;
                }
            };
            self.install(r.key, r.topic_id, ready, now, &mut out);
        }
        self.hand_out_opens(&mut out);
        out
    }

    /// Makes an opened replica one of this node's, with the topic's settings as they are now,
    /// and gives it its role.
    fn install(&mut self, key: (String, i32), topic_id: [u8; 16], ready: Ready, now: u64, out: &mut Vec<Action>) {
        let (name, p) = (key.0.as_str(), key.1);
        let Ready { mut log, start_floor, producers, lines } = ready;
        out.extend(lines.into_iter().map(|l| Action::Log(Level::Info, l)));
        let Some(settings) = self.settings_or_defaults(name, out) else { return };
        log.ring_on_failure(self.due.failures.clone());
        if log.failure().is_some() {
            self.due.failures.ring(); // it went offline inside the job, before it had the alarm
        }
        // The topic's config may have changed while the job was out.
        if let Err(e) = log.set_config(settings.log) {
            out.push(Action::Log(Level::Error, format!("{name}-{p}: new config refused by the log: {e}")));
        }
        // Until the leader says otherwise, only what this replica holds is known committed
        // by no one: start at the log start and learn the mark from the leader (or, as a
        // leader, from the ISR).
        let mut replication = Replication::new(self.config.node_id, start_of(&log, start_floor));
        replication.set_strict_min_isr(self.config.strict_min_isr(settings.min_insync));
        let leo = log.log_end_offset();
        let lso_held_by = self.config.lso_held_by();
        self.partitions.insert(name, p, Partition { topic_id, min_insync: settings.min_insync, log, producers, replication, start_floor, delete_asked: -1, lso_held_by });
        self.due.replicas_changed();
        if self.offline.remove(&key).is_some() {
            out.push(Action::Log(Level::Info, format!("{name}-{p}: reopened after a storage failure; log end {leo}")));
        }
        self.reconcile_or_offline(key, now, out);
    }
}
