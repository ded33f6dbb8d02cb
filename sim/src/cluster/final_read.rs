//! The final read, after healing: every partition read in full through a client, as a user
//! would see it; then every broker stopped cleanly and each replica's log read straight from
//! its disk, so the checkers can compare replicas with each other and with what was served.
//!
//! It reads and records, and must never repair anything: a partition that cannot be read is
//! recorded as such (`final_errors`, `replica_unreadable`), never retried into looking fine.

use super::recorder::{event, Rec};
use super::request_timeout_ms;
use crate::history::record_identity;
use broker_core::client::Consumer;
use broker_core::log::{Log, LogConfig};
use broker_core::storage::Disk;
use serde_json::json;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
#[cfg(madsim)]
use {
    super::topology::{broker_config, final_reader_ip, harness_node, Cluster, Disks},
    crate::disk::CrashMode,
    madsim::runtime::Handle,
};

/// A log's records as (offset, value).
pub(crate) type Records = Vec<(i64, Vec<u8>)>;

/// Poll errors after which the final read of a partition gives up.
const final_read_errors_max: usize = 10;

/// Reads every partition in full from the final-reader node, into the history's `final_read`
/// (or `final_errors`).
#[cfg(madsim)]
pub(super) async fn through_clients(s: &Scenario, cluster: &Cluster, rec: &Rec) {
    let topics: Vec<(String, i32)> = s.topics.iter().map(|t| (t.name.clone(), t.partitions)).collect();
    let committed = s.transactional();
    let reader = harness_node("final-reader", final_reader_ip);
    let _ = reader.spawn(final_reader_main(cluster.brokers.clone(), topics, committed, rec.clone())).await;
}

/// Stops every broker cleanly and reads each replica's log from its disk into the history's
/// `replica_logs` — but a decommissioned broker's: stopped for good, its machine is gone from
/// the cluster, and whatever it kept is no replica of anything.
#[cfg(madsim)]
pub(super) fn from_disks(s: &Scenario, cluster: &Cluster, rec: &Rec) {
    let handle = Handle::current();
    for (name, (disk, _)) in &cluster.disks {
        if let Some((node, _)) = cluster.nodes.get(name) {
            handle.kill(node.id());
        }
        disk.crash(CrashMode::Clean);
    }
    let gone: Vec<String> = rec.lock().expect("recorder").history.decommissions.iter().filter(|d| d.stopped_ms.is_some()).map(|d| format!("broker-{}", d.broker)).collect();
    let disks: Disks = cluster.disks.iter().filter(|(name, _)| !gone.contains(name)).map(|(n, d)| (n.clone(), d.clone())).collect();
    let brokers: Vec<(String, Arc<dyn Disk>, PathBuf)> = disks.iter().map(|(name, (disk, _))| (name.clone(), Arc::new(disk.clone()) as Arc<dyn Disk>, PathBuf::from("/data"))).collect();
    let logs = replica_logs(s, &brokers, &broker_config(s, 0, None).log, rec);
    let at = super::recorder::now_ms(rec);
    let mut r = rec.lock().expect("recorder");
    (r.history.replica_logs, r.history.replica_logs_ms) = (logs, at);
}

/// Reads every partition in full after healing; records what could not be read.
pub(crate) async fn final_reader_main(brokers: Vec<SocketAddr>, topics: Vec<(String, i32)>, committed: bool, rec: Rec) {
    for (topic, partitions) in topics {
        for p in 0..partitions {
            let (log, failure, end) = read_partition(&brokers, &topic, p, None).await;
            event(&rec, "final-reader", "final_read", json!({"topic": topic, "partition": p, "records": log.len(), "error": failure}));
            let failed = failure.is_some();
            {
                let mut r = rec.lock().expect("recorder");
                match failure {
                    Some(why) => drop(r.history.final_errors.insert((topic.clone(), p), why)),
                    None => drop(r.history.final_read.insert((topic.clone(), p), log)),
                }
            }
            if !committed || failed {
                continue;
            }
            // Read again with read_committed, to where this read ended: the transactions its
            // producers gave up on are aborted by their coordinators meanwhile.
            let (log, failure, _) = read_partition(&brokers, &topic, p, Some(end)).await;
            event(&rec, "final-reader", "final_read_committed", json!({"topic": topic, "partition": p, "records": log.len(), "error": failure}));
            let mut r = rec.lock().expect("recorder");
            match failure {
                Some(why) => drop(r.history.final_errors.insert((format!("committed:{topic}"), p), why)),
                None => drop(r.history.final_committed.insert((topic.clone(), p), log)),
            }
        }
    }
}

/// How long (simulated ms) a read_committed final read waits for the last stable offset to
/// reach where the plain read ended: a transaction's timeout (`workloads::txn_timeout_ms`), the
/// coordinator's check interval and its markers, with room to spare.
const committed_wait_ms: u64 = 30_000;

/// Polls one partition from offset 0 until a poll comes back empty without moving the
/// position (a compacted log's batches may hold no record: the position still moves past
/// them); with `committed_to`, reads with read_committed until the position reaches that
/// offset instead, for at most `committed_wait_ms`. After an error it goes on from the next
/// broker where it got to; after `final_read_errors_max` errors it gives up, returning what it
/// read and the last error. Also returns where it ended.
async fn read_partition(brokers: &[SocketAddr], topic: &str, p: i32, committed_to: Option<i64>) -> (Records, Option<String>, i64) {
    let reader = |bootstrap: Vec<SocketAddr>, from: i64| {
        let mut c = Consumer::with_bootstrap(bootstrap, "final-reader", Duration::from_millis(request_timeout_ms));
        c.set_read_committed(committed_to.is_some());
        c.assign(topic, p, from);
        c
    };
    let mut c = reader(brokers.to_vec(), 0);
    let mut log = Vec::new();
    let mut errors = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(committed_wait_ms);
    loop {
        let at = c.position(topic, p);
        let end = at.unwrap_or(0);
        if committed_to.is_some_and(|to| end >= to) {
            return (log, None, end);
        }
        match c.poll(0).await {
            Ok(records) if records.is_empty() && c.position(topic, p) == at && committed_to.is_none() => return (log, None, end),
            Ok(records) if records.is_empty() && c.position(topic, p) == at => {
                if tokio::time::Instant::now() >= deadline {
                    return (log, Some(format!("read_committed stayed at {end} below {} for {committed_wait_ms} ms", committed_to.unwrap_or(0))), end);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(records) if records.is_empty() => {}
            Ok(records) => log.extend(records.iter().filter(|r| r.fresh).map(|r| (r.offset, super::workloads::identity(r)))),
            Err(e) => {
                errors += 1;
                let resume = c.position(topic, p).unwrap_or(0);
                if errors >= final_read_errors_max {
                    return (log, Some(e.to_string()), resume);
                }
                let mut bootstrap = brokers.to_vec();
                let shift = errors % bootstrap.len().max(1);
                bootstrap.rotate_left(shift);
                c = reader(bootstrap, resume);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Every replica's records of every partition, read from each (stopped) broker's disk, in both
/// worlds: `brokers` names each broker's disk and data directory. A log that does not open or
/// read is recorded as an event and left out.
pub(crate) fn replica_logs(s: &Scenario, brokers: &[(String, Arc<dyn Disk>, PathBuf)], config: &LogConfig, rec: &Rec) -> BTreeMap<(String, i32), BTreeMap<String, Records>> {
    let mut out: BTreeMap<(String, i32), BTreeMap<String, Records>> = BTreeMap::new();
    for (name, d, data) in brokers {
        for t in &s.topics {
            for p in 0..t.partitions {
                let dir = data.join(format!("{}-{p}", t.name));
                if !d.exists(&dir) {
                    continue;
                }
                match read_replica(d.clone(), &dir, config.clone()) {
                    Ok(records) => {
                        out.entry((t.name.clone(), p)).or_default().insert(name.clone(), records);
                    }
                    Err(e) => {
                        event(rec, name, "replica_unreadable", json!({"topic": t.name, "partition": p, "error": e}));
                        let mut r = rec.lock().expect("recorder");
                        r.history.replica_errors.entry((t.name.clone(), p)).or_default().insert(name.clone(), e);
                    }
                }
            }
        }
    }
    out
}

/// One replica's records, opening its log as the broker would and reading it end to end.
pub(crate) fn read_replica(disk: Arc<dyn Disk>, dir: &Path, config: LogConfig) -> Result<Records, String> {
    let (log, _) = Log::open(disk, dir, config, 0).map_err(|e| e.to_string())?;
    let start = log.log_start_offset();
    let mut out = Vec::new();
    log.for_each_batch(start, 1 << 20, |_, batch| -> Result<(), Box<dyn std::error::Error>> {
        let records = broker_core::log::clean::records(&batch)?;
        out.extend(records.into_iter().filter(|r| r.offset >= start).map(|r| (r.offset, record_identity(r.value.as_deref(), r.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref()))))));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(out)
}
