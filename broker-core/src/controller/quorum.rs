//! The controller's durable side: the metadata log, `<data>/__cluster_metadata-0/`, in the same
//! segment format as every partition (docs/storage.md), one Kafka record per
//! [`MetadataRecord`] (JSON value). At open the log is replayed into the [`Controller`]; a
//! decision's records are appended as one batch and synced before they are applied, so what a
//! request was told survives any crash. Brokers read the log with ordinary Fetch requests.
//!
//! One voter for now: a record is committed once it is synced here. A Raft quorum will make
//! `commit` replicate to a majority first; the records and the readers stay as they are.

use super::{Controller, ControllerConfig};
use crate::metadata::{decode_records, metadata_dir, Image, MetadataRecord};
use crate::log::{batch, FlushPolicy, Log, LogConfig};
use crate::storage::Disk;
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Quorum {
    controller: Controller,
    log: Log,
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    config: ControllerConfig,
}

pub(super) fn log_config() -> LogConfig {
    // Every batch synced before it counts; retention never (snapshots would be needed first).
    // One decision is one batch, and a decision over thousands of partitions (a topic of 10,000
    // partitions, fencing a broker that leads thousands) is megabytes of records.
    LogConfig { flush: FlushPolicy::EveryBatch, retention_ms: -1, retention_bytes: -1, max_message_bytes: crate::constants::metadata_batch_bytes_max, ..LogConfig::default() }
}

impl Quorum {
    /// Opens (or creates) the metadata log under `data_dir` and replays it.
    pub fn open(disk: Arc<dyn Disk>, data_dir: &Path, config: ControllerConfig, now: u64) -> Result<(Quorum, Vec<String>), String> {
        let dir = data_dir.join(metadata_dir);
        let (log, report) = Log::open(disk.clone(), &dir, log_config(), now).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut notes = Vec::new();
        if let Some(cut) = &report.cut {
            notes.push(format!("metadata log: recovery cut {} at byte {}: {}", cut.file.display(), cut.position, cut.reason));
        }
        let mut image = Image::default();
        let end = log.log_end_offset();
        let mut offset = log.log_start_offset();
        while offset < end {
            let read = log.read(offset, 1 << 20, end).map_err(|e| format!("metadata log at {offset}: {e}"))?;
            let records = decode_records(&read.bytes)?;
            let Some(&(last, _)) = records.last() else { break };
            for (o, r) in records.iter().filter(|(o, _)| *o >= offset) {
                image.apply(*o, r);
            }
            offset = last + 1;
        }
        notes.push(format!("metadata log replayed: {} records, {} brokers, {} topics", end, image.brokers.len(), image.topics.len()));
        let controller = Controller::new(config.clone(), image, now);
        Ok((Quorum { controller, log, disk, dir, config }, notes))
    }

    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    pub fn controller_mut(&mut self) -> &mut Controller {
        &mut self.controller
    }

    /// The offset the next committed record gets.
    pub fn end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// Appends `records` as one batch, syncs it, then applies each to the controller. Returns
    /// the offset of the last record (or of the last committed one, if `records` is empty).
    pub fn commit(&mut self, records: Vec<MetadataRecord>, now: u64) -> Result<i64, String> {
        if records.is_empty() {
            return Ok(self.end_offset() - 1);
        }
        let values: Vec<Vec<u8>> = records.iter().map(|r| r.encode()).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let mut bytes = batch::build(&refs, now as i64);
        let info = match self.log.append(&mut bytes, 0, now).and_then(|i| self.log.flush(now).map(|_| i)) {
            Ok(info) => info,
            Err(e) => {
                self.reopen(now);
                return Err(format!("metadata log: {e}"));
            }
        };
        for (i, r) in records.iter().enumerate() {
            self.controller.apply(info.base_offset + i as i64, r);
        }
        Ok(info.last_offset)
    }

    /// After a failed append the log is offline and may hold an unsynced batch that was never
    /// applied: reopen and replay, so the controller is exactly what the disk says.
    fn reopen(&mut self, now: u64) {
        let data = self.dir.parent().map(Path::to_path_buf).unwrap_or_default();
        match Quorum::open(self.disk.clone(), &data, self.config.clone(), now) {
            Ok((fresh, notes)) => {
                for n in notes {
                    tracing::warn!("controller reopened: {n}");
                }
                *self = fresh;
            }
            Err(e) => tracing::error!("controller: metadata log still failing: {e}"),
        }
    }

    /// Committed metadata from `offset` (whole batches, at most about `max_bytes`).
    pub fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, crate::log::LogError> {
        let end = self.end_offset();
        if offset >= end {
            return Ok(Bytes::new());
        }
        Ok(self.log.read(offset, max_bytes.max(1), end)?.bytes)
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    /// Fences brokers whose sessions expired and elects leaders; commits what that decides.
    pub fn tick(&mut self, now: u64) -> Result<(), String> {
        let records = self.controller.tick(now);
        self.commit(records, now).map(|_| ())
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.controller.next_deadline()
    }
}
