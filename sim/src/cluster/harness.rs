//! The simulated cluster: the real broker server on madsim nodes over `SimDisk`, client nodes
//! running workloads through the real Rust client, a fault schedule (fixed and/or drawn from
//! the seed), a healing phase, a final read, the checkers, and the trace. One function,
//! [`run`]: scenario + seed in, result out; same inputs, byte-identical trace.
//!
//! A scenario that slipped past validation must not crash the harness: what cannot be run (a
//! fault on no such node, a link fault without a link) is skipped with a `fault_skipped` event.

use crate::checkers;
use crate::disk::{CrashMode, DiskFaults, SimDisk};
use crate::history::{History, Outcome, Read, Violation, Write};
use super::derive_faults;
use crate::scenario::{FaultKind, FaultSpec, ProducerSpec, Scenario};
use crate::trace::{self, Trace};
use broker_core::broker::{Broker, BrokerConfig, PlantedBug};
use broker_core::client::admin::{self, NewTopic};
use broker_core::client::{ClientError, Consumer, Producer, ProducerConfig};
use broker_core::controller::quorum::Quorum;
use broker_core::log::FlushPolicy;
use broker_core::server::{self, Shared};
use broker_core::storage::Disk;
use bytes::Bytes;
use tracing::Instrument;
use madsim::runtime::{Handle, NodeHandle, Runtime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Client request timeout in simulated time: long enough for a paused or restarting broker to
/// come back within a fault, short enough that a dead one is noticed.
const request_timeout_ms: u64 = 1_000;
const broker_port: u16 = 9092;

pub struct RunResult {
    pub trace: Trace,
    pub history: History,
    pub violations: Vec<Violation>,
    /// Violations that are allowed losses under the scenario's `expect.loss_allowed`.
    pub allowed: Vec<Violation>,
    pub derived: Map<String, Value>,
    pub digest: u64,
    /// Simulated milliseconds the run covered.
    pub simulated_ms: u64,
}

impl RunResult {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Shared recorder for the trace and history, stamped with simulated time.
struct Recorder {
    start: madsim::time::Instant,
    trace: Trace,
    history: History,
    /// When producers stop invoking writes; unknown (`None`) until the last fault is undone.
    produce_until_ms: Option<u64>,
}

type Rec = Arc<Mutex<Recorder>>;

fn now_ms(rec: &Rec) -> u64 {
    rec.lock().expect("recorder").start.elapsed().as_millis() as u64
}

/// Whether producers should keep invoking writes.
fn producing(rec: &Rec) -> bool {
    let r = rec.lock().expect("recorder");
    let now = r.start.elapsed().as_millis() as u64;
    r.produce_until_ms.is_none_or(|until| now < until)
}

fn event(rec: &Rec, node: &str, name: &str, fields: Value) {
    let mut r = rec.lock().expect("recorder");
    let t = r.start.elapsed().as_millis() as u64;
    r.trace.event(t, node, name, fields);
}

/// Broker i's address: 10.0.0.(i+1).
fn broker_ip(i: u32) -> IpAddr {
    IpAddr::from([10, 0, 0, (i + 1) as u8])
}

/// Heartbeats, sessions and ISR lag scaled to simulated scenarios of tens of seconds, whose
/// faults last up to a few seconds (Kafka's 2 s / 9 s / 30 s would see no failover at all).
const heartbeat_ms: u64 = 250;
const session_ms: u64 = 1_500;
const replica_lag_ms: u64 = 2_000;

fn broker_config(s: &Scenario, i: u32, bug: Option<PlantedBug>) -> BrokerConfig {
    let mut c = BrokerConfig {
        node_id: i as i32,
        data_dir: "/data".into(),
        advertised_host: broker_ip(i).to_string(),
        advertised_port: broker_port as i32,
        controller_id: 0,
        controller_addr: SocketAddr::new(broker_ip(0), broker_port).to_string(),
        heartbeat_interval_ms: heartbeat_ms,
        session_timeout_ms: session_ms,
        replica_lag_ms_max: replica_lag_ms,
        planted_bug: bug,
        ..BrokerConfig::default()
    };
    if let Some(n) = s.broker.flush_messages {
        c.log.flush = if n == 1 { FlushPolicy::EveryBatch } else { FlushPolicy::EveryMessages(n) };
    }
    if let Some(b) = s.broker.segment_bytes {
        c.log.segment_bytes = b;
    }
    if let Some(m) = s.broker.min_insync_replicas {
        c.min_insync_replicas = m;
    }
    if let Some(u) = s.broker.unclean_leader_election {
        c.unclean_leader_election = u;
    }
    c
}

/// How long the node's supervisor (systemd's `Restart=on-failure` in a real deployment) waits
/// before starting a broker process that exited.
const supervisor_restart_ms: u64 = 1_000;

/// The broker process: open the data dir on the node's disk (and, on the controller node, the
/// metadata log), serve until killed. If opening fails (a full or failing disk), the process
/// exits and its supervisor starts it again.
async fn broker_main(disk: SimDisk, config: BrokerConfig, rec: Rec) {
    let name = format!("broker-{}", config.node_id);
    let d: Arc<dyn Disk> = Arc::new(disk);
    let (broker, quorum) = loop {
        let now = server::now_ms();
        let quorum = match config.node_id == config.controller_id {
            true => Quorum::open(d.clone(), &config.data_dir, server::config::controller_config(&config), now).map(|(q, _)| Some(q)),
            false => Ok(None),
        };
        let opened = quorum.and_then(|q| Broker::open(d.clone(), config.clone(), now).map(|b| (b, q)).map_err(|e| e.to_string()));
        match opened {
            Ok(x) => break x,
            Err(e) => {
                event(&rec, &name, "open_failed", json!({"error": e, "restart_in_ms": supervisor_restart_ms}));
                tokio::time::sleep(Duration::from_millis(supervisor_restart_ms)).await;
            }
        }
    };
    event(&rec, &name, "started", json!({}));
    let addr = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), broker_port);
    let listener = loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(e) => {
                // The previous incarnation's socket may not be released yet (a restart landing
                // on a restart); the supervisor tries again.
                event(&rec, &name, "bind_failed", json!({"error": e.to_string(), "restart_in_ms": supervisor_restart_ms}));
                tokio::time::sleep(Duration::from_millis(supervisor_restart_ms)).await;
            }
        }
    };
    server::serve(listener, Shared::new(broker, quorum, d), std::future::pending()).await;
}

/// Creates the scenario's topics through the controller once every broker is registered and
/// unfenced (retrying while they register). Gives up after `topics_deadline_ms`.
async fn create_topics(controller: SocketAddr, brokers: usize, topics: Vec<NewTopic>, rec: Rec) {
    let start = now_ms(&rec);
    // Every broker first, so replica placement does not depend on which registered first.
    while now_ms(&rec) - start <= topics_deadline_ms {
        match admin::live_brokers(controller, Duration::from_millis(request_timeout_ms)).await {
            Ok(n) if n >= brokers => break,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    loop {
        match admin::create_topics(controller, &topics, Duration::from_millis(request_timeout_ms)).await {
            Ok(()) => {
                event(&rec, "admin", "topics_created", json!({"topics": topics.iter().map(|t| &t.0).collect::<Vec<_>>()}));
                return;
            }
            Err(e) if now_ms(&rec) - start > topics_deadline_ms => {
                event(&rec, "admin", "create_topics_failed", json!({"error": e.to_string()}));
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// How long the harness keeps trying to create the scenario's topics before starting the
/// workload anyway (it then fails, and the checkers say so).
const topics_deadline_ms: u64 = 10_000;

fn outcome_of(r: &Result<i64, ClientError>) -> Outcome {
    match r {
        Ok(o) => Outcome::Ok(*o),
        Err(e) if e.outcome_unknown() => Outcome::Unknown(e.to_string()),
        Err(e) => Outcome::Fail(e.to_string()),
    }
}

/// Most records in one batch: a producer that fell behind catches up in bounded steps.
const batch_records_max: u64 = 500;
/// Most value bytes in one batch, so that a batch of large records stays under the broker's
/// `message.max.bytes` (1,048,588); a batch always carries at least one record.
const batch_value_bytes_max: u64 = 1_000_000;

/// A producer at `rate` records/s: every batch carries the records that fell due while the
/// previous one was in flight (Kafka's linger, driven by simulated time), one batch in flight.
/// It produces through the healing phase until the harness sets `produce_until_ms`, so that
/// `write_liveness` can see whether writes succeed again once faults are gone.
async fn producer_main(name: String, brokers: Vec<SocketAddr>, topic: String, partitions: i32, spec: ProducerSpec, rec: Rec) {
    let (acks, idempotent, rate, bytes) = (Scenario::acks(&spec), spec.idempotent(), spec.rate.max(1), spec.record_bytes);
    let partitions = partitions.max(1);
    let batch_records = batch_records_max.min((batch_value_bytes_max / bytes.max(1) as u64).max(1));
    let config = ProducerConfig { client_id: name.clone(), acks, idempotent, retries: 3, retry_backoff: Duration::from_millis(50), request_timeout: Duration::from_millis(request_timeout_ms) };
    let mut producer = Producer::with_bootstrap(brokers, config);
    let start = now_ms(&rec);
    let mut n: u64 = 0;
    let mut batch_no: u64 = 0;
    while producing(&rec) {
        let due = (now_ms(&rec) - start + 1) * rate as u64 / 1000;
        if due <= n {
            tokio::time::sleep(Duration::from_micros(1_000_000 / rate as u64)).await;
            continue;
        }
        let count = (due - n).min(batch_records);
        let partition = (batch_no % partitions as u64) as i32;
        batch_no += 1;
        let values: Vec<Vec<u8>> = (n..n + count)
            .map(|i| {
                let mut v = format!("{name}-{i}-").into_bytes();
                v.resize(bytes.max(v.len()), b'.');
                v
            })
            .collect();
        let key = |i: u64| (spec.keys > 0).then(|| Bytes::from(format!("key-{}", i % spec.keys as u64)));
        let records: Vec<_> = values.iter().zip(n..).map(|(v, i)| (key(i), Some(Bytes::from(v.clone())))).collect();
        let invoke_ms = now_ms(&rec);
        let result = producer.send(&topic, partition, &records, server::now_ms() as i64).await;
        let complete_ms = now_ms(&rec);
        let fields = match &result {
            Ok(o) => json!({"partition": partition, "first": n, "count": count, "ok": o}),
            Err(e) if e.outcome_unknown() => json!({"partition": partition, "first": n, "count": count, "unknown": e.to_string()}),
            Err(e) => json!({"partition": partition, "first": n, "count": count, "fail": e.to_string()}),
        };
        event(&rec, &name, "produce", fields);
        let mut r = rec.lock().expect("recorder");
        for (i, value) in values.into_iter().enumerate() {
            let outcome = match outcome_of(&result) {
                Outcome::Ok(base) if base >= 0 => Outcome::Ok(base + i as i64),
                other => other,
            };
            r.history.writes.push(Write { process: name.clone(), topic: topic.clone(), partition, value, acks, idempotent, invoke_ms, complete_ms, outcome });
        }
        n += count;
    }
}

async fn consumer_main(name: String, brokers: Vec<SocketAddr>, topic: String, partitions: i32, max_wait_ms: i32, until_ms: u64, rec: Rec) {
    let mut session = 0u32;
    let mut positions: Vec<i64> = vec![0; partitions as usize];
    while now_ms(&rec) < until_ms {
        // Each session starts from another broker, so a dead one does not blind every session.
        let mut bootstrap = brokers.clone();
        let shift = session as usize % bootstrap.len().max(1);
        bootstrap.rotate_left(shift);
        let mut c = Consumer::with_bootstrap(bootstrap, &name, Duration::from_millis(request_timeout_ms));
        for (p, pos) in positions.iter().enumerate() {
            c.assign(&topic, p as i32, *pos);
        }
        loop {
            if now_ms(&rec) >= until_ms {
                return;
            }
            match c.poll(max_wait_ms).await {
                Ok(records) => {
                    let at_ms = now_ms(&rec);
                    if !records.is_empty() {
                        event(&rec, &name, "poll", json!({"records": records.len(), "first": records[0].offset, "last": records[records.len() - 1].offset}));
                    }
                    let mut r = rec.lock().expect("recorder");
                    for x in records {
                        positions[x.partition as usize] = x.offset + 1;
                        r.history.reads.push(Read { process: name.clone(), session, topic: x.topic, partition: x.partition, offset: x.offset, value: x.value.map(|v| v.to_vec()).unwrap_or_default(), high_watermark: x.high_watermark, at_ms });
                    }
                }
                Err(e) => {
                    event(&rec, &name, "poll_error", json!({"error": e.to_string()}));
                    if let ClientError::Kafka { code: 1, .. } = e {
                        // Offset out of range: the log lost what we had read past. Start over.
                        positions.iter_mut().for_each(|p| *p = 0);
                    }
                    session += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    break;
                }
            }
        }
    }
}

/// Reads every partition in full after healing; records what could not be read.
async fn final_read(brokers: Vec<SocketAddr>, topics: Vec<(String, i32)>, rec: Rec) {
    for (topic, partitions) in topics {
        for p in 0..partitions {
            let key = (topic.clone(), p);
            let mut c = Consumer::with_bootstrap(brokers.clone(), "final-reader", Duration::from_millis(request_timeout_ms));
            c.assign(&topic, p, 0);
            let mut log = Vec::new();
            let mut failure = None;
            let mut errors = 0;
            loop {
                match c.poll(0).await {
                    Ok(records) if records.is_empty() => break,
                    Ok(records) => log.extend(records.into_iter().map(|r| (r.offset, r.value.map(|v| v.to_vec()).unwrap_or_default()))),
                    Err(e) => {
                        errors += 1;
                        if errors >= 10 {
                            failure = Some(e.to_string());
                            break;
                        }
                        let mut bootstrap = brokers.clone();
                        let shift = errors % bootstrap.len().max(1);
                        bootstrap.rotate_left(shift);
                        c = Consumer::with_bootstrap(bootstrap, "final-reader", Duration::from_millis(request_timeout_ms));
                        c.assign(&topic, p, log.last().map_or(0, |(o, _)| o + 1));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
            event(&rec, "final-reader", "final_read", json!({"topic": topic, "partition": p, "records": log.len(), "error": failure}));
            let mut r = rec.lock().expect("recorder");
            match failure {
                Some(why) => {
                    r.history.final_errors.insert(key, why);
                }
                None => {
                    r.history.final_read.insert(key, log);
                }
            }
        }
    }
}

/// Every replica's records of every partition, read from each (stopped) broker's disk. A log
/// that does not open or read is recorded as an event and left out.
fn replica_logs(s: &Scenario, disks: &BTreeMap<String, (SimDisk, Arc<Mutex<DiskFaultState>>)>, rec: &Rec) -> BTreeMap<(String, i32), BTreeMap<String, Vec<(i64, Vec<u8>)>>> {
    let mut out: BTreeMap<(String, i32), BTreeMap<String, Vec<(i64, Vec<u8>)>>> = BTreeMap::new();
    let config = broker_config(s, 0, None).log;
    for (name, (disk, _)) in disks {
        let d: Arc<dyn Disk> = Arc::new(disk.clone());
        for t in &s.topics {
            for p in 0..t.partitions {
                let dir = std::path::PathBuf::from(format!("/data/{}-{p}", t.name));
                if !d.exists(&dir) {
                    continue;
                }
                match read_replica(d.clone(), &dir, config.clone()) {
                    Ok(records) => {
                        out.entry((t.name.clone(), p)).or_default().insert(name.clone(), records);
                    }
                    Err(e) => event(rec, name, "replica_unreadable", json!({"topic": t.name, "partition": p, "error": e})),
                }
            }
        }
    }
    out
}

fn read_replica(disk: Arc<dyn Disk>, dir: &std::path::Path, config: broker_core::log::LogConfig) -> Result<Vec<(i64, Vec<u8>)>, String> {
    let (log, _) = broker_core::log::Log::open(disk, dir, config, 0).map_err(|e| e.to_string())?;
    let end = log.log_end_offset();
    let mut at = log.log_start_offset();
    let mut out = Vec::new();
    while at < end {
        let read = log.read(at, 1 << 20, end).map_err(|e| e.to_string())?;
        let records = broker_core::client::consumer::decode_records(read.bytes).map_err(|e| e.to_string())?;
        let Some(last) = records.last().map(|r| r.0) else { break };
        out.extend(records.into_iter().filter(|r| r.0 >= at).map(|(o, _, v)| (o, v.map(|v| v.to_vec()).unwrap_or_default())));
        at = last + 1;
    }
    Ok(out)
}

/// The broker disk's fault settings: the scenario's base latency plus the active faults.
struct DiskFaultState {
    base: DiskFaults,
    slow: u32,
    full: u32,
    /// Path substrings currently failing with EIO (one entry per active fault).
    eio: Vec<String>,
}

impl DiskFaultState {
    fn apply(&self, disk: &SimDisk) {
        let mut f = self.base.clone();
        if self.slow > 0 {
            (f.latency_ns_min, f.latency_ns_max) = (1_000_000, 20_000_000);
        }
        if self.full > 0 {
            f.capacity_bytes = Some(disk.used_bytes());
        }
        f.eio_paths.extend(self.eio.iter().cloned());
        disk.set_faults(f);
    }
    fn enter(&mut self, slow: bool, disk: &SimDisk) {
        if slow { self.slow += 1 } else { self.full += 1 }
        self.apply(disk);
    }
    fn leave(&mut self, slow: bool, disk: &SimDisk) {
        if slow { self.slow -= 1 } else { self.full -= 1 }
        self.apply(disk);
    }
}

/// Applies one fault and undoes it after `for_ms`.
async fn inject(f: FaultSpec, nodes: BTreeMap<String, (NodeHandle, IpAddr)>, disks: BTreeMap<String, (SimDisk, Arc<Mutex<DiskFaultState>>)>, rec: Rec) {
    let handle = Handle::current();
    let kind = format!("{:?}", f.kind);
    let skip = |why: &str| event(&rec, "harness", "fault_skipped", json!({"kind": kind, "target": f.target, "why": why}));
    if f.kind.is_link() {
        let Some((from, to)) = f.link() else {
            return skip("a link fault needs a target \"a>b\"");
        };
        let (Some((a, a_ip)), Some((b, b_ip))) = (nodes.get(from), nodes.get(to)) else {
            return skip("no such node");
        };
        let net = madsim::net::NetSim::current();
        if f.kind == FaultKind::ClogLink {
            net.clog_link(a.id(), b.id());
        } else {
            broker_core::netfault::set_link(*a_ip, *b_ip, Some(broker_core::netfault::LinkFault { delay_ms: f.delay_ms, loss_per_mille: f.loss_per_mille }));
        }
        event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms, "delay_ms": f.delay_ms, "loss_per_mille": f.loss_per_mille}));
        tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
        if f.kind == FaultKind::ClogLink {
            net.unclog_link(a.id(), b.id());
        } else {
            broker_core::netfault::set_link(*a_ip, *b_ip, None);
        }
        event(&rec, &f.target, "heal", json!({"kind": kind}));
        return;
    }
    let Some((node, _)) = nodes.get(&f.target) else {
        return skip("no such node");
    };
    let id = node.id();
    let disk = disks.get(&f.target);
    if f.kind.broker_only() && disk.is_none() {
        // A client node has no init to restart and no disk (scenario validation refuses this).
        return skip("process and disk faults target brokers only");
    }
    let Some((disk, disk_faults)) = disk.cloned().or_else(|| disks.values().next().cloned()) else {
        return skip("no broker disk");
    };
    match f.kind {
        FaultKind::Kill | FaultKind::PowerLoss => {
            handle.kill(id);
            let report = disk.crash(if f.kind == FaultKind::Kill { CrashMode::Clean } else { CrashMode::PowerLoss });
            event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms, "disk": report.to_string()}));
            tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
            // madsim's restart of a running node (a restart landing on a restart) does not
            // release the old incarnation's sockets; kill first, which does.
            handle.kill(id);
            handle.restart(id);
            event(&rec, &f.target, "restart", json!({}));
        }
        FaultKind::Pause => {
            handle.pause(id);
            event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms}));
            tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
            handle.resume(id);
            event(&rec, &f.target, "heal", json!({"kind": kind}));
        }
        FaultKind::Isolate | FaultKind::IsolateIn | FaultKind::IsolateOut => {
            let net = madsim::net::NetSim::current();
            match f.kind {
                FaultKind::Isolate => net.clog_node(id),
                FaultKind::IsolateIn => net.clog_node_in(id),
                _ => net.clog_node_out(id),
            }
            event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms}));
            tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
            match f.kind {
                FaultKind::Isolate => net.unclog_node(id),
                FaultKind::IsolateIn => net.unclog_node_in(id),
                _ => net.unclog_node_out(id),
            }
            event(&rec, &f.target, "heal", json!({"kind": kind}));
        }
        FaultKind::ClogLink | FaultKind::SlowLink => skip("link faults are handled above"),
        FaultKind::DiskEio => {
            disk_faults.lock().expect("disk faults").eio.push(f.path.clone());
            disk_faults.lock().expect("disk faults").apply(&disk);
            event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms, "path": f.path}));
            tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
            {
                let mut st = disk_faults.lock().expect("disk faults");
                if let Some(i) = st.eio.iter().position(|p| *p == f.path) {
                    st.eio.remove(i);
                }
                st.apply(&disk);
            }
            event(&rec, &f.target, "heal", json!({"kind": kind}));
        }
        FaultKind::SlowDisk | FaultKind::DiskFull => {
            // Overlapping disk faults compose: each counts itself in and out, and the disk's
            // settings are recomputed from the counts (restoring a saved copy would resurrect
            // a fault that ended in between).
            let slow = f.kind == FaultKind::SlowDisk;
            disk_faults.lock().expect("disk faults").enter(slow, &disk);
            event(&rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms}));
            tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
            disk_faults.lock().expect("disk faults").leave(slow, &disk);
            event(&rec, &f.target, "heal", json!({"kind": kind}));
        }
    }
}

/// Runs `scenario` under `seed`. `scenario_path` is recorded in the trace header for replay.
pub fn run(scenario: &Scenario, scenario_path: &str, seed: u64, bug: Option<PlantedBug>) -> RunResult {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let faults = derive_faults(scenario, &mut rng);
    let disk_seed = rng.gen::<u64>();
    let mut derived = Map::new();
    derived.insert("faults".into(), json!(faults.iter().map(|f| json!({"at": f.at, "kind": format!("{:?}", f.kind), "target": f.target, "for": f.for_ms, "delay_ms": f.delay_ms, "loss_per_mille": f.loss_per_mille})).collect::<Vec<_>>()));
    derived.insert("disk_seed".into(), json!(disk_seed));
    let trace = Trace::header(&scenario.name, scenario_path, trace::scenario_digest(scenario), seed, &derived);
    let s = scenario.clone();
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let (trace, history, simulated_ms) = runtime.block_on(async move {
        let handle = Handle::current();
        let rec: Rec = Arc::new(Mutex::new(Recorder { start: madsim::time::Instant::now(), trace, history: History::default(), produce_until_ms: None }));
        let base = match s.broker.disk_latency_us {
            Some([lo, hi]) => DiskFaults { latency_ns_min: lo.saturating_mul(1000), latency_ns_max: hi.max(lo).saturating_mul(1000), ..DiskFaults::default() },
            None => DiskFaults::default(),
        };
        broker_core::netfault::reset(disk_seed);
        let topics: Vec<(String, i32)> = s.topics.iter().map(|t| (t.name.clone(), t.partitions)).collect();
        let brokers: Vec<SocketAddr> = (0..s.brokers).map(|i| SocketAddr::new(broker_ip(i), broker_port)).collect();
        let mut nodes = BTreeMap::new();
        let mut disks = BTreeMap::new();
        for i in 0..s.brokers {
            let name = format!("broker-{i}");
            // Each broker's disk has its own seed, derived from the run's.
            let disk = SimDisk::new(disk_seed.wrapping_add(i as u64));
            let faults = Arc::new(Mutex::new(DiskFaultState { base: base.clone(), slow: 0, full: 0, eio: Vec::new() }));
            faults.lock().expect("disk faults").apply(&disk);
            let (d, config, r) = (disk.clone(), broker_config(&s, i, bug), rec.clone());
            let node = handle
                .create_node()
                .name(&name)
                .ip(broker_ip(i))
                .init(move || broker_main(d.clone(), config.clone(), r.clone()).instrument(tracing::info_span!("broker", id = i)))
                .build();
            nodes.insert(name.clone(), (node, broker_ip(i)));
            disks.insert(name, (disk, faults));
        }
        // Topics are created through the controller once enough brokers have registered;
        // clients start after that.
        let admin_node = handle.create_node().name("admin").ip(IpAddr::from([10, 0, 2, 2])).build();
        let new_topics: Vec<NewTopic> = s.topics.iter().map(|t| (t.name.clone(), t.partitions, t.replication_factor)).collect();
        let _ = admin_node.spawn(create_topics(brokers[0], brokers.len(), new_topics, rec.clone())).await;
        let until = s.duration_ms;
        // Client k (producers first, then consumers) is 10.0.1.(11+k); validation keeps the
        // count far below where the octet would run out, and past it clients are not started.
        let client_ip = |k: usize| u8::try_from(11 + k).ok().map(|o| IpAddr::from([10, 0, 1, o]));
        let mut clients = 0usize;
        let mut producers = Vec::new();
        let mut consumers = Vec::new();
        // The next client node, or None (logged) when addresses ran out.
        let mut new_client = |name: &str| {
            let Some(node_ip) = client_ip(clients) else {
                event(&rec, "harness", "clients_skipped", json!({"from": name, "why": "no address left in 10.0.1.0/24"}));
                return None;
            };
            clients += 1;
            Some((handle.create_node().name(name).ip(node_ip).build(), node_ip))
        };
        for (i, p) in s.producers.iter().flat_map(|p| std::iter::repeat_n(p, p.count as usize)).enumerate() {
            let name = format!("producer-{i}");
            let Some((node, node_ip)) = new_client(&name) else { break };
            let parts = s.topics.iter().find(|t| t.name == p.topic).map_or(1, |t| t.partitions);
            producers.push(node.spawn(producer_main(name.clone(), brokers.clone(), p.topic.clone(), parts, p.clone(), rec.clone())));
            nodes.insert(name, (node, node_ip));
        }
        for (i, c) in s.consumers.iter().enumerate() {
            let name = format!("consumer-{i}");
            let Some((node, node_ip)) = new_client(&name) else { break };
            let parts = s.topics.iter().find(|t| t.name == c.topic).map_or(1, |t| t.partitions);
            consumers.push(node.spawn(consumer_main(name.clone(), brokers.clone(), c.topic.clone(), parts, c.max_wait_ms, until + s.heal_ms / 2, rec.clone())));
            nodes.insert(name, (node, node_ip));
        }
        let mut injectors = Vec::new();
        for f in faults {
            let (nodes, disks, rec) = (nodes.clone(), disks.clone(), rec.clone());
            injectors.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(f.at)).await;
                inject(f, nodes, disks, rec).await;
            }));
        }
        for t in injectors {
            let _ = t.await;
        }
        tokio::time::sleep(Duration::from_millis(until.saturating_sub(now_ms(&rec)))).await;
        // Healing: the safety phase is over and every fault has been undone. Producers go on
        // for three quarters of the phase; write_liveness judges their writes from half-way,
        // when the cluster has had time to recover; then the final read.
        let healed_at = now_ms(&rec);
        let produce_until = healed_at.saturating_add(s.heal_ms.saturating_mul(3) / 4);
        {
            let mut r = rec.lock().expect("recorder");
            r.produce_until_ms = Some(produce_until);
            r.history.healed_at_ms = healed_at;
            r.history.heal_ms = s.heal_ms;
        }
        event(&rec, "harness", "heal_phase", json!({"produce_until_ms": produce_until, "write_liveness_from_ms": healed_at.saturating_add(s.heal_ms / 2), "heal_ms": s.heal_ms}));
        tokio::time::sleep(Duration::from_millis(s.heal_ms)).await;
        // A producer's last write may still be in flight (bounded by its timeout and retries);
        // the final read must come after every acknowledgement it is checked against.
        for t in producers {
            let _ = t.await;
        }
        event(&rec, "harness", "healed", json!({}));
        let reader = handle.create_node().name("final-reader").ip(IpAddr::from([10, 0, 2, 1])).build();
        let _ = reader.spawn(final_read(brokers, topics, rec.clone())).await;
        for t in consumers {
            let _ = t.await;
        }
        let simulated_ms = now_ms(&rec);
        // Stop every broker cleanly and read each replica's log from its disk.
        for (name, (disk, _)) in &disks {
            if let Some((node, _)) = nodes.get(name) {
                handle.kill(node.id());
            }
            disk.crash(CrashMode::Clean);
        }
        let logs = replica_logs(&s, &disks, &rec);
        rec.lock().expect("recorder").history.replica_logs = logs;
        // The broker node's init closure still holds the recorder; take what it gathered.
        let mut r = rec.lock().expect("recorder");
        (std::mem::take(&mut r.trace), std::mem::take(&mut r.history), simulated_ms)
    });
    let mut trace = trace;
    let (allowed, violations): (Vec<_>, Vec<_>) = checkers::check_all(&history).into_iter().partition(|v| v.loss && (scenario.expect.loss_allowed || (scenario.expect.acks1_loss_allowed && v.acks == Some(1))));
    let verdicts = json!({
        "writes": history.writes.len(),
        // acks=0 writes are never acknowledged: `Ok(-1)` only says they were sent.
        "acknowledged": history.writes.iter().filter(|w| w.acknowledged().is_some()).count(),
        "sent_acks0": history.writes.iter().filter(|w| w.acks == 0 && matches!(w.outcome, Outcome::Ok(_))).count(),
        "reads": history.reads.len(),
        "violations": violations.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        "allowed_losses": allowed.len(),
    });
    let digest = trace.finish(verdicts);
    RunResult { trace, history, violations, allowed, derived, digest, simulated_ms }
}
