//! Fault injection: every fault of the schedule gets a task, spawned at the fault's time, that
//! applies it, holds it for `for` ms and undoes it, with a `fault` and a `heal` (or
//! `restart`) event. One function per kind of fault says what applying and undoing mean.
//!
//! The schedule is fixed before the run (`faults`): nothing here may draw from an RNG or add a
//! fault. A fault that cannot be aimed (no such node, a process fault on a client, a link
//! without a link) must not crash the harness: it is skipped with a `fault_skipped` event.

use super::recorder::{event, now_ms, Rec};
use crate::history::FaultSpan;
use super::topology::{Cluster, Disks, Nodes, Stop};
use crate::disk::{CrashMode, DiskFaults, SimDisk};
use crate::scenario::{FaultKind, FaultSpec};
use broker_core::netfault::{self, LinkFault};
use madsim::net::NetSim;
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::NodeId;
use serde_json::json;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a fault could not be aimed, as the `fault_skipped` event says it.
type Skip = &'static str;

/// Runs the whole schedule (sorted by start): each fault's injector task is spawned when the
/// fault starts, not before; returns once every fault has been undone.
///
/// Why not all at once: madsim picks the next ready task with the run's one RNG, so a task
/// that merely exists (spawned, sleeping) already shifts every later choice. Spawned at its
/// start, a fault changes nothing before it: a run without its last faults is the same run up
/// to where they would have started, which is what lets `sim shrink` remove faults one by one
/// without losing a failure that happened earlier.
pub(super) async fn run_schedule(faults: Vec<FaultSpec>, budget: Budget, cluster: &Cluster, procs: &Procs, rec: &Rec) {
    let start = tokio::time::Instant::now();
    let clogs = Clogs::default();
    let mut injectors = Vec::new();
    for f in faults {
        let due = start + Duration::from_millis(f.at);
        // madsim sleeps at least 1 ms: faults due at the same moment start at the same moment.
        if tokio::time::Instant::now() < due {
            tokio::time::sleep_until(due).await;
        }
        let (nodes, disks, rec, clogs, procs, budget) = (cluster.nodes.clone(), cluster.disks.clone(), rec.clone(), clogs.clone(), procs.clone(), budget.clone());
        let stops = cluster.stops.clone();
        injectors.push(tokio::spawn(inject(f, nodes, disks, rec, clogs, procs, budget, stops)));
    }
    for t in injectors {
        let _ = t.await;
    }
}

/// Applies one fault and undoes it after `for_ms`, or says why it was skipped. A fault aimed at
/// `controller` hits the broker that is the active metadata controller when it starts; one at
/// `leader:TOPIC-P` the broker that last became that partition's leader.
#[allow(clippy::too_many_arguments)]
async fn inject(mut f: FaultSpec, nodes: Nodes, disks: Disks, rec: Rec, clogs: Clogs, procs: Procs, budget: Budget, stops: std::collections::BTreeMap<String, Arc<Stop>>) {
    if f.target == crate::scenario::controller_target {
        match broker_core::simprobe::current_controller() {
            Some(id) => f.target = format!("broker-{id}"),
            None => return event(&rec, "harness", "fault_skipped", json!({"kind": kind(&f), "target": f.target, "why": "no active controller yet"})),
        }
    }
    if let Some((topic, partition)) = crate::scenario::leader_target(&f.target) {
        let leader = rec.lock().expect("recorder").history.leaderships.iter().rev().find(|l| l.topic == topic && l.partition == partition).map(|l| l.broker.clone());
        match leader {
            Some(broker) => f.target = broker,
            None => return event(&rec, "harness", "fault_skipped", json!({"kind": kind(&f), "target": f.target, "why": "no leader yet"})),
        }
    }
    // A broker that has not joined yet, or was decommissioned, has no process to fault: the
    // harness must not start it early or bring it back (`cluster::membership`).
    let ends = f.link().map_or_else(|| vec![f.target.as_str()], |(a, b)| vec![a, b]);
    if let Some(why) = ends.into_iter().find_map(|n| procs.absent(n)) {
        return event(&rec, "harness", "fault_skipped", json!({"kind": kind(&f), "target": f.target, "why": why}));
    }
    let from_ms = now_ms(&rec);
    if let Err(why) = budget.admit(&f) {
        return event(&rec, "harness", "fault_skipped", json!({"kind": kind(&f), "target": f.target, "why": why}));
    }
    // Ok(Some(ms)): the fault stopped holding before it was undone (a pause whose process was
    // killed); the history's span ends there, where the checkers must see it end.
    let done = match f.kind {
        FaultKind::Kill | FaultKind::PowerLoss => crash_and_restart(&f, &nodes, &disks, &rec, &procs).await.map(|()| None),
        FaultKind::Terminate => terminate_and_restart(&f, &nodes, &disks, stops.get(&f.target).map(|s| &**s), &rec, &procs).await.map(|()| None),
        FaultKind::Pause => pause(&f, &nodes, &disks, &rec, &procs).await,
        FaultKind::Isolate | FaultKind::IsolateIn | FaultKind::IsolateOut => isolate(&f, &nodes, &rec, &clogs).await.map(|()| None),
        FaultKind::ClogLink => clog_link(&f, &nodes, &rec).await.map(|()| None),
        FaultKind::SlowLink => slow_link(&f, &nodes, &rec).await.map(|()| None),
        FaultKind::HoldRequest => hold_request(&f, &nodes, &rec).await.map(|()| None),
        FaultKind::DiskEio => disk_eio(&f, &nodes, &disks, &rec).await.map(|()| None),
        FaultKind::SlowDisk | FaultKind::DiskFull => slow_or_full_disk(&f, &nodes, &disks, &rec).await.map(|()| None),
    };
    match done {
        Ok(ended) => {
            let span = FaultSpan { kind: f.kind, target: f.target, from_ms, until_ms: ended.unwrap_or_else(|| now_ms(&rec)) };
            rec.lock().expect("recorder").history.faults.push(span);
        }
        Err(why) => event(&rec, "harness", "fault_skipped", json!({"kind": kind(&f), "target": f.target, "why": why})),
    }
}

/// The fault budget (`random_faults.brokers_at_once`) where it can only be kept: at injection.
/// The schedule counts a `controller` or `leader:T-P` target as one broker of its own, but which
/// broker it hits is known only when it starts (the same target may hit another broker each
/// time), so a fault that would then make more brokers faulty at once than the budget allows is
/// skipped — one aimed at a named broker too, when resolved targets took the room the schedule
/// counted on (swarm-quorum seed 55151: two faults at `leader:slow-0` hit two brokers, and a
/// third on broker-3 made three). A broker counts as faulty from its fault's scheduled start
/// until `recovery_ms` after its end, as in the schedule, so a schedule without resolved
/// targets is never cut here.
#[derive(Clone, Default)]
pub(super) struct Budget {
    max: Option<usize>,
    recovery_ms: u64,
    faulty_until: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
}

impl Budget {
    pub(super) fn new(max: Option<usize>, recovery_ms: u64) -> Budget {
        Budget { max, recovery_ms, ..Budget::default() }
    }

    /// Counts the brokers `f` (its target resolved) makes faulty, or refuses a resolved one
    /// that would exceed the budget.
    fn admit(&self, f: &FaultSpec) -> Result<(), Skip> {
        let ends = match f.link() {
            Some((a, b)) => vec![a, b],
            None => vec![f.target.as_str()],
        };
        let brokers: Vec<&str> = ends.into_iter().filter(|n| n.starts_with("broker-")).collect();
        let mut faulty = self.faulty_until.lock().expect("budget");
        if let Some(max) = self.max {
            let mut at_once: Vec<&str> = faulty.iter().filter(|(_, until)| **until > f.at).map(|(b, _)| b.as_str()).chain(brokers.iter().copied()).collect();
            at_once.sort_unstable();
            at_once.dedup();
            if at_once.len() > max {
                return Err("it would make more brokers faulty at once than random_faults.brokers_at_once");
            }
        }
        let until = f.at + f.for_ms + self.recovery_ms;
        for b in brokers {
            let e = faulty.entry(b.to_string()).or_default();
            *e = (*e).max(until);
        }
        Ok(())
    }
}

/// The kind as trace events spell it (its Rust name).
fn kind(f: &FaultSpec) -> String {
    format!("{:?}", f.kind)
}

async fn hold(f: &FaultSpec) {
    tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
}

/// The target node's id.
fn node_id(f: &FaultSpec, nodes: &Nodes) -> Result<NodeId, Skip> {
    nodes.get(&f.target).map(|(node, _)| node.id()).ok_or("no such node")
}

/// The target broker's disk and its fault state.
fn broker_disk<'a>(f: &FaultSpec, nodes: &Nodes, disks: &'a Disks) -> Result<&'a (SimDisk, Arc<Mutex<DiskFaultState>>), Skip> {
    node_id(f, nodes)?;
    // A client node has no init to restart and no disk (scenario validation refuses this).
    disks.get(&f.target).ok_or("process and disk faults target brokers only")
}

/// `kill` and `power_loss`: the process dies and the disk crashes — keeping every write, or
/// losing what was not synced — and the node restarts after `for`, unless another crash still
/// holds it down: then it restarts when the last one ends (`Procs`).
async fn crash_and_restart(f: &FaultSpec, nodes: &Nodes, disks: &Disks, rec: &Rec, procs: &Procs) -> Result<(), Skip> {
    let (disk, _) = broker_disk(f, nodes, disks)?;
    let (id, handle) = (node_id(f, nodes)?, Handle::current());
    procs.crash(&f.target, now_ms(rec));
    handle.kill(id);
    let report = disk.crash(if f.kind == FaultKind::Kill { CrashMode::Clean } else { CrashMode::PowerLoss });
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms, "disk": report.to_string()}));
    hold_then_restart(f, id, rec, procs).await
}

/// `terminate`: the broker's SIGTERM (a clean stop, `topology::Stop`), killed if it has not
/// stopped within `timing::terminate_grace_ms` (a paused process cannot act on it); its writes are all
/// kept, as after any process exit, and the node restarts after `for` as after a crash.
async fn terminate_and_restart(f: &FaultSpec, nodes: &Nodes, disks: &Disks, stop: Option<&Stop>, rec: &Rec, procs: &Procs) -> Result<(), Skip> {
    let (disk, _) = broker_disk(f, nodes, disks)?;
    let (id, handle) = (node_id(f, nodes)?, Handle::current());
    let stop = stop.ok_or("no such broker")?;
    procs.crash(&f.target, now_ms(rec));
    // Set again only by this incarnation's clean stop (a node already down never sets it).
    stop.stopped.store(false, std::sync::atomic::Ordering::SeqCst);
    stop.now.notify_waiters();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(super::timing::terminate_grace_ms);
    while !stop.stopped.load(std::sync::atomic::Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let clean = stop.stopped.load(std::sync::atomic::Ordering::SeqCst);
    handle.kill(id);
    let report = disk.crash(CrashMode::Clean);
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms, "stopped_cleanly": clean, "disk": report.to_string()}));
    hold_then_restart(f, id, rec, procs).await
}

/// The end of a crash: held down for `for`, then restarted unless another crash holds it.
async fn hold_then_restart(f: &FaultSpec, id: NodeId, rec: &Rec, procs: &Procs) -> Result<(), Skip> {
    let handle = Handle::current();
    hold(f).await;
    if !procs.release_crash(&f.target) {
        let why = procs.absent(&f.target).unwrap_or("another crash holds the node");
        event(rec, &f.target, "heal", json!({"kind": kind(f), "still_down": why}));
        return Ok(());
    }
    // madsim's restart of a running node (a restart landing on a restart) does not release
    // the old incarnation's sockets; kill first, which does.
    handle.kill(id);
    handle.restart(id);
    event(rec, &f.target, "restart", json!({}));
    Ok(())
}

/// `pause`: the node's tasks are not scheduled for `for` — or until a crash kills the paused
/// process (its restart is a new process, running: madsim's restart clears the pause). A node
/// that is down has no process to pause: the fault is skipped.
async fn pause(f: &FaultSpec, nodes: &Nodes, disks: &Disks, rec: &Rec, procs: &Procs) -> Result<Option<u64>, Skip> {
    broker_disk(f, nodes, disks)?;
    let (id, handle) = (node_id(f, nodes)?, Handle::current());
    let from_ms = now_ms(rec);
    if procs.pause(&f.target)? {
        handle.pause(id);
    }
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms}));
    hold(f).await;
    let (resume, killed_ms) = procs.release_pause(&f.target, from_ms);
    if resume {
        handle.resume(id);
    }
    match killed_ms {
        Some(ms) => event(rec, &f.target, "heal", json!({"kind": kind(f), "ended_by_crash_at_ms": ms})),
        None => event(rec, &f.target, "heal", json!({"kind": kind(f)})),
    }
    Ok(killed_ms)
}

/// Each broker's process as the process faults leave it, so that overlapping ones on one node
/// compose as on a real machine and the history's spans say what really held: a node restarts
/// when the last crash holding it ends (not at the first, while a longer one is still "down"),
/// a pause ends at the last pause's end or at a crash of the paused process, and a node that
/// is down cannot be paused.
///
/// A broker that joins late is absent until it joins, and one decommissioned is absent from
/// its stop on, held down for good (`cluster::membership`): no fault touches an absent broker.
#[derive(Clone, Default)]
pub(super) struct Procs(Arc<Mutex<std::collections::BTreeMap<String, Proc>>>);

#[derive(Default)]
struct Proc {
    /// Why the node has no process a fault may touch (not joined yet, decommissioned).
    absent: Option<Skip>,
    /// Crash faults holding the node down (and a decommission, for good).
    crashes: u32,
    /// Pause faults holding the running process stopped.
    pauses: u32,
    /// When the node's process was killed, each time (ms from the run's start).
    kills_ms: Vec<u64>,
}

impl Procs {
    fn with<T>(&self, node: &str, f: impl FnOnce(&mut Proc) -> T) -> T {
        f(self.0.lock().expect("procs").entry(node.to_string()).or_default())
    }

    /// Why `node` has no process faults may touch, if it has none.
    pub(super) fn absent(&self, node: &str) -> Option<Skip> {
        self.0.lock().expect("procs").get(node).and_then(|p| p.absent)
    }

    /// `node` joins late: absent until [`Procs::joined`].
    pub(super) fn joins_later(&self, node: &str) {
        self.with(node, |p| p.absent = Some("the broker has not joined the cluster yet"));
    }

    /// `node`'s process has started: faults may touch it.
    pub(super) fn joined(&self, node: &str) {
        self.with(node, |p| p.absent = None);
    }

    /// `node` is stopped for good (a decommission): a crash that never ends, so no fault's
    /// end restarts it and a pause of it ends here.
    pub(super) fn retire(&self, node: &str, now_ms: u64) {
        self.crash(node, now_ms);
        self.with(node, |p| p.absent = Some("the broker was decommissioned: stopped for good"));
    }

    /// A crash begins: the process (if one runs) dies, and with it every pause of it.
    fn crash(&self, node: &str, now_ms: u64) {
        self.with(node, |p| {
            if p.crashes == 0 {
                p.kills_ms.push(now_ms);
            }
            p.crashes += 1;
            p.pauses = 0;
        });
    }

    /// A crash ends; whether it was the last holding the node down (then it restarts).
    fn release_crash(&self, node: &str) -> bool {
        self.with(node, |p| {
            p.crashes -= 1;
            p.crashes == 0
        })
    }

    /// A pause begins; whether it is the first holding the process (then it stops).
    fn pause(&self, node: &str) -> Result<bool, Skip> {
        self.with(node, |p| {
            if p.crashes > 0 {
                return Err("the node is down: no process to pause");
            }
            p.pauses += 1;
            Ok(p.pauses == 1)
        })
    }

    /// A pause that began at `from_ms` ends: whether the process resumes now (the last pause of
    /// a process that was not killed meanwhile), and when a crash ended it, if one did.
    fn release_pause(&self, node: &str, from_ms: u64) -> (bool, Option<u64>) {
        self.with(node, |p| match p.kills_ms.iter().find(|&&k| k >= from_ms) {
            Some(&killed) => (false, Some(killed)),
            None => {
                p.pauses -= 1;
                (p.pauses == 0, None)
            }
        })
    }
}

/// How many isolation faults hold each node's inbound and outbound traffic, so overlapping ones
/// compose: madsim's clog is one flag per direction, and the first heal used to end every
/// isolation of the node (an `isolate_in` healing inside an `isolate` let the node hear again
/// while the history, and the checkers, had it cut off).
#[derive(Clone, Default)]
struct Clogs(Arc<Mutex<std::collections::BTreeMap<String, [u32; 2]>>>);

impl Clogs {
    /// Adds (`by` 1) or removes (-1) one hold on `node`'s directions `[in, out]`; returns the
    /// directions whose state changed (first hold taken, or last one released).
    fn hold(&self, node: &str, dirs: [bool; 2], by: i32) -> [bool; 2] {
        let mut all = self.0.lock().expect("clogs");
        let counts = all.entry(node.to_string()).or_default();
        let mut changed = [false; 2];
        for d in 0..2 {
            if dirs[d] {
                let before = counts[d];
                counts[d] = counts[d].saturating_add_signed(by);
                changed[d] = (before == 0) != (counts[d] == 0);
            }
        }
        changed
    }
}

/// `isolate`, `isolate_in`, `isolate_out`: the node's traffic is cut both ways, or one way,
/// until the last isolation holding that direction heals.
async fn isolate(f: &FaultSpec, nodes: &Nodes, rec: &Rec, clogs: &Clogs) -> Result<(), Skip> {
    let id = node_id(f, nodes)?;
    let net = NetSim::current();
    let dirs = match f.kind {
        FaultKind::Isolate => [true, true],
        FaultKind::IsolateIn => [true, false],
        _ => [false, true],
    };
    let [cut_in, cut_out] = clogs.hold(&f.target, dirs, 1);
    if cut_in {
        net.clog_node_in(id);
    }
    if cut_out {
        net.clog_node_out(id);
    }
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms}));
    hold(f).await;
    let [open_in, open_out] = clogs.hold(&f.target, dirs, -1);
    if open_in {
        net.unclog_node_in(id);
    }
    if open_out {
        net.unclog_node_out(id);
    }
    event(rec, &f.target, "heal", json!({"kind": kind(f)}));
    Ok(())
}

/// The two ends of a link target `a>b`: each node with its address.
fn link_ends<'a>(f: &'a FaultSpec, nodes: &'a Nodes) -> Result<[&'a (NodeHandle, IpAddr); 2], Skip> {
    let (from, to) = f.link().ok_or("a link fault needs a target \"a>b\"")?;
    let (Some(a), Some(b)) = (nodes.get(from), nodes.get(to)) else {
        return Err("no such node");
    };
    Ok([a, b])
}

/// The `fault` event of a link fault, with the link settings (drawn for every random fault).
fn link_fault_event(f: &FaultSpec, rec: &Rec) {
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms, "delay_ms": f.delay_ms, "loss_per_mille": f.loss_per_mille}));
}

/// `clog_link`: messages from a to b are dropped for `for`.
async fn clog_link(f: &FaultSpec, nodes: &Nodes, rec: &Rec) -> Result<(), Skip> {
    let [(a, _), (b, _)] = link_ends(f, nodes)?;
    let net = NetSim::current();
    net.clog_link(a.id(), b.id());
    link_fault_event(f, rec);
    hold(f).await;
    net.unclog_link(a.id(), b.id());
    event(rec, &f.target, "heal", json!({"kind": kind(f)}));
    Ok(())
}

/// `slow_link`: messages from a to b are delayed and lost (retransmitted) for `for`, through
/// the broker's network fault hook.
async fn slow_link(f: &FaultSpec, nodes: &Nodes, rec: &Rec) -> Result<(), Skip> {
    let [(_, a_ip), (_, b_ip)] = link_ends(f, nodes)?;
    netfault::set_link(*a_ip, *b_ip, Some(LinkFault { delay_ms: f.delay_ms, loss_per_mille: f.loss_per_mille }));
    link_fault_event(f, rec);
    hold(f).await;
    netfault::set_link(*a_ip, *b_ip, None);
    event(rec, &f.target, "heal", json!({"kind": kind(f)}));
    Ok(())
}

/// `hold_request`: the first request of `api` its target (or anyone) sends within `for` is held
/// until then, then delivered on a connection of its own; the `heal` event names the link it
/// was caught on (none if nothing was sent).
async fn hold_request(f: &FaultSpec, nodes: &Nodes, rec: &Rec) -> Result<(), Skip> {
    let api = crate::scenario::held_api(&f.api).ok_or("no such API to hold")?;
    let from = match f.target.as_str() {
        crate::scenario::any_sender => None,
        name => Some(nodes.get(name).ok_or("no such node")?.1),
    };
    let id = netfault::arm_hold(api, from, tokio::time::Instant::now() + Duration::from_millis(f.for_ms));
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms, "api": f.api}));
    hold(f).await;
    let held = netfault::disarm_hold(id).map(|(a, b)| format!("{}>{}", node_name(nodes, a), node_name(nodes, b.ip())));
    event(rec, &f.target, "heal", json!({"kind": kind(f), "held": held}));
    Ok(())
}

/// The node with address `ip` (the address itself if none has it).
fn node_name(nodes: &Nodes, ip: IpAddr) -> String {
    nodes.iter().find(|(_, (_, a))| *a == ip).map_or_else(|| ip.to_string(), |(n, _)| n.clone())
}

/// `disk_eio`: calls on the broker's files whose path contains `path` fail with EIO for `for`.
async fn disk_eio(f: &FaultSpec, nodes: &Nodes, disks: &Disks, rec: &Rec) -> Result<(), Skip> {
    let (disk, state) = broker_disk(f, nodes, disks)?;
    state.lock().expect("disk faults").fail_path(&f.path, disk);
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms, "path": f.path}));
    hold(f).await;
    state.lock().expect("disk faults").heal_path(&f.path, disk);
    event(rec, &f.target, "heal", json!({"kind": kind(f)}));
    Ok(())
}

/// `slow_disk` (every call takes 1–20 ms) and `disk_full` (no byte more fits) for `for`.
async fn slow_or_full_disk(f: &FaultSpec, nodes: &Nodes, disks: &Disks, rec: &Rec) -> Result<(), Skip> {
    let (disk, state) = broker_disk(f, nodes, disks)?;
    let slow = f.kind == FaultKind::SlowDisk;
    state.lock().expect("disk faults").enter(slow, disk);
    event(rec, &f.target, "fault", json!({"kind": kind(f), "for": f.for_ms}));
    hold(f).await;
    state.lock().expect("disk faults").leave(slow, disk);
    event(rec, &f.target, "heal", json!({"kind": kind(f)}));
    Ok(())
}

/// A broker disk's fault settings: the scenario's base latency plus the active faults.
/// Overlapping disk faults compose: each counts itself in and out, and the disk's settings are
/// recomputed from the counts (restoring a saved copy would resurrect a fault that ended in
/// between).
pub(super) struct DiskFaultState {
    base: DiskFaults,
    slow: u32,
    full: u32,
    /// Path substrings currently failing with EIO (one entry per active fault).
    eio: Vec<String>,
}

impl DiskFaultState {
    pub(super) fn new(base: DiskFaults) -> DiskFaultState {
        DiskFaultState { base, slow: 0, full: 0, eio: Vec::new() }
    }

    pub(super) fn apply(&self, disk: &SimDisk) {
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

    fn fail_path(&mut self, path: &str, disk: &SimDisk) {
        self.eio.push(path.into());
        self.apply(disk);
    }

    fn heal_path(&mut self, path: &str, disk: &SimDisk) {
        if let Some(i) = self.eio.iter().position(|p| p == path) {
            self.eio.remove(i);
        }
        self.apply(disk);
    }
}

#[cfg(test)]
mod tests {
    use super::{Clogs, Procs};

    #[test]
    fn overlapping_process_faults_compose() {
        let procs = Procs::default();
        // A kill inside a power loss: the node restarts when the longer one ends.
        procs.crash("broker-0", 100);
        procs.crash("broker-0", 150);
        assert!(!procs.release_crash("broker-0"));
        assert_eq!(procs.pause("broker-0"), Err("the node is down: no process to pause"));
        assert!(procs.release_crash("broker-0"));
        // Two pauses: the process resumes when the second ends.
        assert_eq!(procs.pause("broker-0"), Ok(true));
        assert_eq!(procs.pause("broker-0"), Ok(false));
        assert_eq!(procs.release_pause("broker-0", 300), (false, None));
        assert_eq!(procs.release_pause("broker-0", 310), (true, None));
        // A pause whose process is killed ends at the kill; a pause of the new process does not.
        assert_eq!(procs.pause("broker-0"), Ok(true));
        procs.crash("broker-0", 500);
        assert!(procs.release_crash("broker-0"));
        assert_eq!(procs.pause("broker-0"), Ok(true));
        assert_eq!(procs.release_pause("broker-0", 400), (false, Some(500)));
        assert_eq!(procs.release_pause("broker-0", 600), (true, None));
    }

    #[test]
    fn overlapping_isolations_compose_and_the_last_heal_opens() {
        let clogs = Clogs::default();
        // isolate_in, then isolate inside it: only the outbound direction changes.
        assert_eq!(clogs.hold("broker-0", [true, false], 1), [true, false]);
        assert_eq!(clogs.hold("broker-0", [true, true], 1), [false, true]);
        // The isolate_in heals first: the node stays deaf.
        assert_eq!(clogs.hold("broker-0", [true, false], -1), [false, false]);
        assert_eq!(clogs.hold("broker-0", [true, true], -1), [true, true]);
        // Another node is counted apart.
        assert_eq!(clogs.hold("broker-1", [false, true], 1), [false, true]);
    }
}
