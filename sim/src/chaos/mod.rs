//! `sim chaos`: a scenario against real broker processes on this machine (issue 31), judged by
//! the simulator's own checkers. The same scenario file, the same fault schedule drawn from the
//! seed (`cluster::schedule`), the same client tasks recording the same history
//! (`cluster::workloads`), the same final read and the same verdict (`cluster::verdict`); what
//! differs is the world: `broker` processes on loopback ports (`procs`), faults done with
//! signals, real time and real files.
//!
//! What a real run can and cannot do, and says so in its trace:
//! * `kill` is SIGKILL and a restart after `for`; `terminate` is SIGTERM (a clean stop, killed
//!   after a bound) and a restart; `pause` is SIGSTOP, then SIGCONT.
//! * `power_loss` is SIGKILL too: the kernel keeps the page cache, so unsynced writes survive
//!   and the run cannot lose what only a power loss loses (a `fault_approximated` event).
//! * Network faults need a network per broker (namespaces), which loopback mode does not have:
//!   they are skipped with `fault_skipped`, as are disk faults and held requests.
//! * The checkers that read the brokers' insides (the Raft history, ISR and LSO probes, leader
//!   elections and fences: `internal_checkers`) see nothing here and are reported as not judged.
//!
//! Nothing here is deterministic, and nothing is meant to be: a real run is evidence about the
//! real broker, not a replayable trace. It is bounded (the scenario's duration and healing, then
//! the final read with its own bounds) and leaves no process behind (`procs::kill_all`).

#![cfg(not(madsim))]

pub mod cli;
pub mod net;
pub mod procs;

use crate::cluster::recorder::{event, now_ms, Rec, Recorder};
use crate::cluster::verdict::{self, RunResult};
use crate::cluster::{final_read, timing, workloads};
use crate::history::FaultSpan;
use crate::scenario::{FaultKind, FaultSpec, Scenario};
use crate::trace::{self, Trace};
use broker_core::client::admin::TopicToCreate;
use net::{Net, Way};
use procs::Brokers;
use serde_json::{json, Map};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Checkers whose history comes from inside the brokers (`broker_core::simprobe` in the
/// simulator): a real run records none of it, so they pass on nothing and are not judged.
pub const internal_checkers: &[&str] = &["lso_monotonic", "isr_complete", "leader_handover", "leader_fenced", "fence_quorum", "leader_epochs", "raft_votes", "raft_leaders", "raft_log", "raft_completeness", "metadata_liveness"];

/// Where and how a real run goes.
pub struct Options {
    /// The `broker` binary to run.
    pub broker: PathBuf,
    /// The run's directory (made afresh): the brokers' data and logs.
    pub dir: PathBuf,
    /// Each broker in a network namespace of its own (`net`), so network faults can be done.
    pub namespaces: bool,
}

/// Runs `s` under `seed` against real broker processes.
pub fn run(s: &Scenario, scenario_path: &str, seed: u64, opts: &Options) -> Result<RunResult, String> {
    runnable(s)?;
    let (faults, _) = crate::cluster::schedule(s, seed);
    let mut derived = Map::new();
    derived.insert("world".into(), json!("real"));
    derived.insert("faults".into(), json!(faults.iter().map(|f| json!({"at": f.at, "kind": format!("{:?}", f.kind), "target": f.target, "for": f.for_ms})).collect::<Vec<_>>()));
    let trace = Trace::header(&s.name, scenario_path, trace::scenario_digest(s), seed, &derived);
    if opts.dir.exists() {
        std::fs::remove_dir_all(&opts.dir).map_err(|e| format!("{}: {e}", opts.dir.display()))?;
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| format!("{}: {e}", opts.dir.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    let (trace, history, ran_ms) = runtime.block_on(async {
        // An interrupted run (Ctrl-C, or SIGTERM from `timeout` or a batch system) takes its
        // brokers and namespaces with it.
        tokio::spawn(async {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else { return };
            let code = tokio::select! {
                _ = tokio::signal::ctrl_c() => 130,
                _ = term.recv() => 143,
            };
            procs::kill_all();
            std::process::exit(code);
        });
        chaos(s, faults, trace, opts).await
    })?;
    let failed: Vec<String> = trace.lines().iter().filter(|l| l.contains(r#""event":"harness_failed""#)).cloned().collect();
    if !failed.is_empty() {
        return Err(format!("the run did not go as scheduled, so it judges nothing: {}", failed.join("; ")));
    }
    Ok(verdict::judge(s, trace, history, derived, ran_ms))
}

/// What a real run cannot do yet: refused whole rather than run half.
pub fn runnable(s: &Scenario) -> Result<(), String> {
    s.runnable()?;
    let missing = [
        (s.security.is_some(), "security"),
        (!s.groups.is_empty(), "groups"),
        (!s.processors.is_empty(), "processors"),
        (!s.reassignments.is_empty(), "reassignments"),
        (!s.quotas.is_empty(), "quotas"),
        (!s.joins.is_empty() || !s.decommissions.is_empty(), "joins and decommissions"),
        (s.buggify, "buggify"),
    ];
    match missing.iter().find(|(has, _)| *has) {
        Some((_, what)) => Err(format!("scenario {}: {what} cannot run against real processes yet (sim chaos runs producers, consumers and process faults)", s.name)),
        None => Ok(()),
    }
}

/// Why a run of `s` would not do all its faults for real (`namespaces`: with network cuts):
/// the first fault kind it would skip. Random faults count by the kinds they draw from.
pub fn undone_fault(s: &Scenario, namespaces: bool) -> Option<String> {
    let done = |k: FaultKind| matches!(k, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss | FaultKind::Pause) || (namespaces && matches!(k, FaultKind::Isolate | FaultKind::IsolateIn | FaultKind::IsolateOut));
    let kinds = s.faults.iter().map(|f| f.kind).chain(s.random_faults.iter().flat_map(|r| r.kinds.iter().copied()));
    let skipped = kinds.clone().find(|k| !done(*k));
    let aimable = |t: &str| t.starts_with("broker-") || t == crate::scenario::controller_target || crate::scenario::leader_target(t).is_some();
    let aimed = s.faults.iter().find(|f| !aimable(&f.target));
    match (skipped, aimed) {
        (Some(k @ (FaultKind::Isolate | FaultKind::IsolateIn | FaultKind::IsolateOut)), _) => Some(format!("its {k:?} faults need --net namespaces")),
        (Some(k), _) => Some(format!("its {k:?} faults have no real counterpart here")),
        (None, Some(f)) => Some(format!("its fault on {} is aimed where a real run cannot aim (brokers: by name, `controller`, `leader:TOPIC-P`)", f.target)),
        (None, None) => None,
    }
}

/// The run, phase by phase as the simulator's: brokers, topics, clients, faults, healing, the
/// final read through clients, then every broker stopped and its replicas read from its files.
async fn chaos(s: &Scenario, faults: Vec<FaultSpec>, trace: Trace, opts: &Options) -> Result<(Trace, crate::history::History, u64), String> {
    let rec = Recorder::start(trace);
    {
        let h = &mut rec.lock().expect("recorder").history;
        h.compacted_topics = s.compacted_topics().into_iter().map(|(t, delete_retention_ms)| (t, crate::history::Compaction { delete_retention_ms })).collect();
        (h.session_ms, h.voters, h.brokers) = (timing::session_ms, timing::voters(s).collect(), s.brokers);
        h.controller_failover_ms = timing::controller_failover_ms;
    }
    let broker_bin = opts.broker.clone();
    let dir = opts.dir.clone();
    let scenario = s.clone();
    let net = Net::new(opts.namespaces, s.brokers as usize)?;
    let brokers = tokio::task::spawn_blocking(move || Brokers::start(&broker_bin, &dir, &scenario, net)).await.map_err(|e| e.to_string())??;
    let addrs = brokers.addrs();
    let brokers = Arc::new(brokers);
    event(&rec, "harness", "brokers_started", json!({"brokers": addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>()}));
    let topics: Vec<TopicToCreate> = s.topics.iter().map(|t| TopicToCreate { name: t.name.clone(), partitions: t.partitions, replication_factor: t.replication_factor, configs: t.config.clone() }).collect();
    workloads::admin_main(addrs[0], addrs.len(), topics, rec.clone()).await;
    let partitions = |topic: &str| s.topics.iter().find(|t| t.name == topic).map_or(1, |t| t.partitions);
    let mut producers = Vec::new();
    for (i, p) in s.producers.iter().flat_map(|p| std::iter::repeat_n(p, p.count as usize)).enumerate() {
        let (name, topic, n) = (format!("producer-{i}"), p.topic.clone(), partitions(&p.topic));
        producers.push(match p.transactional {
            true => tokio::spawn(workloads::txn_producer_main(name, addrs.clone(), topic, n, p.clone(), rec.clone())),
            false => tokio::spawn(workloads::producer_main(name, addrs.clone(), topic, n, p.clone(), rec.clone())),
        });
    }
    let until_ms = s.duration_ms + s.heal_ms / 2;
    let mut consumers = Vec::new();
    for (i, c) in s.consumers.iter().enumerate() {
        consumers.push(tokio::spawn(workloads::consumer_main(format!("consumer-{i}"), addrs.clone(), c.topic.clone(), partitions(&c.topic), (c.max_wait_ms, c.user.clone()), until_ms, rec.clone())));
    }
    inject(faults, s, &addrs, &brokers, &rec).await;
    tokio::time::sleep(Duration::from_millis(s.duration_ms.saturating_sub(now_ms(&rec)))).await;
    crate::cluster::heal(s, &rec).await;
    for t in producers {
        let _ = t.await;
    }
    event(&rec, "harness", "healed", json!({}));
    let topics: Vec<(String, i32)> = s.topics.iter().map(|t| (t.name.clone(), t.partitions)).collect();
    final_read::final_reader_main(addrs.clone(), topics, s.transactional(), rec.clone()).await;
    let final_read_ms = now_ms(&rec);
    rec.lock().expect("recorder").history.final_read_ms = final_read_ms;
    for t in consumers {
        let _ = t.await;
    }
    let ran_ms = now_ms(&rec);
    let dirs = {
        let brokers = brokers.clone();
        tokio::task::spawn_blocking(move || {
            brokers.stop_all();
            brokers.data_dirs()
        })
        .await
        .map_err(|e| e.to_string())?
    };
    replicas_from_files(s, &dirs, &rec);
    let (trace, history) = crate::cluster::recorder::take(&rec);
    Ok((trace, history, ran_ms))
}

/// Applies each fault at its time and undoes it after `for`, one task per fault, recording
/// each span as the simulator does; returns once every fault is undone. A fault on a broker
/// still under another is skipped, as are the kinds loopback processes cannot have.
async fn inject(faults: Vec<FaultSpec>, s: &Scenario, addrs: &[SocketAddr], brokers: &Arc<Brokers>, rec: &Rec) {
    let start = tokio::time::Instant::now();
    let busy: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut tasks = Vec::new();
    let at_once = s.random_faults.as_ref().and_then(|r| r.brokers_at_once).map_or(usize::MAX, |n| n as usize);
    for mut f in faults {
        tokio::time::sleep_until(start + Duration::from_millis(f.at)).await;
        let (kind, target) = (format!("{:?}", f.kind), f.target.clone());
        let skip = |why: &str| event(rec, "harness", "fault_skipped", json!({"kind": kind, "target": target, "why": why}));
        let Some(i) = aim(&f.target, addrs).await.filter(|i| *i < s.brokers as usize) else {
            skip("no broker to aim at: real runs fault brokers (by name, `controller` or `leader:TOPIC-P`)");
            continue;
        };
        if !f.target.starts_with("broker-") {
            event(rec, "harness", "fault_aimed", json!({"target": f.target, "broker": format!("broker-{i}")}));
            f.target = format!("broker-{i}");
        }
        if !matches!(f.kind, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss | FaultKind::Pause | FaultKind::Isolate | FaultKind::IsolateIn | FaultKind::IsolateOut) {
            skip("real runs have no fault of this kind: no disk faults, no netem for slow or clogged links, no held requests");
            continue;
        }
        {
            let mut b = busy.lock().expect("busy");
            if b.contains(&i) || b.len() >= at_once {
                drop(b);
                skip("another fault still holds this broker, or as many brokers as random_faults.brokers_at_once");
                continue;
            }
            b.push(i);
        }
        let (brokers, rec, busy) = (brokers.clone(), rec.clone(), busy.clone());
        tasks.push(tokio::task::spawn(async move {
            apply(&f, i, &brokers, &rec).await;
            busy.lock().expect("busy").retain(|b| *b != i);
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// The broker a fault's target names: `broker-N`; `controller`, the active controller as the
/// first broker that answers says; `leader:TOPIC-P`, that partition's leader as the metadata
/// says now — each asked when the fault starts, as the simulator resolves them.
async fn aim(target: &str, addrs: &[SocketAddr]) -> Option<usize> {
    let ask = Duration::from_millis(aim_timeout_ms);
    let at = if target == crate::scenario::controller_target {
        let mut found = None;
        for a in addrs {
            if let Ok(Some(c)) = broker_core::client::admin::named_controller(*a, ask).await {
                found = Some(c);
                break;
            }
        }
        found?
    } else if let Some((topic, p)) = crate::scenario::leader_target(target) {
        broker_core::client::cluster::Cluster::new(addrs.to_vec(), "chaos-aim", ask).leader(topic, p).await.ok()?
    } else {
        return target.strip_prefix("broker-")?.parse().ok();
    };
    addrs.iter().position(|a| *a == at)
}

/// How long aiming a fault may ask one broker.
const aim_timeout_ms: u64 = 1_000;

/// One fault on broker `i`: done, held for `for` ms, undone, with its events and span.
async fn apply(f: &FaultSpec, i: usize, brokers: &Arc<Brokers>, rec: &Rec) {
    let kind = format!("{:?}", f.kind);
    let from_ms = now_ms(rec);
    let done = {
        let brokers = brokers.clone();
        let kind = f.kind;
        tokio::task::spawn_blocking(move || {
            let b = &brokers;
            match kind {
                FaultKind::Pause => b.pause(i).then_some(()).ok_or_else(|| "no process to pause".to_string()),
                FaultKind::Kill | FaultKind::PowerLoss => b.kill(i),
                FaultKind::Terminate => b.terminate(i),
                // Both ways or neither: a half-made cut is taken back.
                _ => ways(kind).iter().try_for_each(|w| b.cut(i, *w, false)).inspect_err(|_| {
                    for w in ways(kind) {
                        let _ = b.cut(i, *w, true);
                    }
                }),
            }
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
    };
    if let Err(why) = done {
        event(rec, "harness", "fault_skipped", json!({"kind": kind, "target": f.target, "why": why}));
        return;
    }
    let how = match f.kind {
        FaultKind::Pause => "SIGSTOP",
        FaultKind::Kill | FaultKind::PowerLoss => "SIGKILL",
        FaultKind::Terminate => "SIGTERM",
        _ => "tc: every packet dropped",
    };
    event(rec, &f.target, "fault", json!({"kind": kind, "for": f.for_ms, "how": how}));
    if f.kind == FaultKind::PowerLoss {
        event(rec, &f.target, "fault_approximated", json!({"kind": kind, "as": "SIGKILL: the page cache survives, unsynced writes are kept"}));
    }
    tokio::time::sleep(Duration::from_millis(f.for_ms)).await;
    let brokers = brokers.clone();
    let kind_of = f.kind;
    let undone = tokio::task::spawn_blocking(move || {
        let b = &brokers;
        match kind_of {
            FaultKind::Pause => {
                b.resume(i);
                Ok(())
            }
            FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss => b.restart(i),
            _ => ways(kind_of).iter().try_for_each(|w| b.cut(i, *w, true)),
        }
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()));
    let until_ms = now_ms(rec);
    match undone {
        Ok(()) => event(rec, &f.target, if matches!(f.kind, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss) { "restart" } else { "heal" }, json!({"kind": kind})),
        Err(why) => {
            event(rec, &f.target, "undo_failed", json!({"kind": kind, "error": why}));
            harness_failed(rec, format!("{} on {} could not be undone: {why}", kind, f.target));
        }
    }
    rec.lock().expect("recorder").history.faults.push(FaultSpan { kind: f.kind, target: f.target.clone(), from_ms, until_ms });
}

/// Notes that the run did not go as scheduled (a fault that could not be undone): such a run
/// judges nothing and `run` refuses its verdict.
fn harness_failed(rec: &Rec, why: String) {
    event(rec, "harness", "harness_failed", json!({"why": why}));
}

/// The directions a network fault cuts, from the broker's side.
fn ways(kind: FaultKind) -> &'static [Way] {
    match kind {
        FaultKind::IsolateIn => &[Way::In],
        FaultKind::IsolateOut => &[Way::Out],
        _ => &[Way::In, Way::Out],
    }
}

/// Every replica's records, read from each stopped broker's directory with the broker's own
/// log code on real files, into the history's `replica_logs`.
fn replicas_from_files(s: &Scenario, dirs: &[(String, PathBuf)], rec: &Rec) {
    let disk: Arc<dyn broker_core::storage::Disk> = Arc::new(broker_core::storage::FileDisk);
    let mut config = broker_core::log::LogConfig::default();
    if let Some(b) = s.broker.segment_bytes {
        config.segment_bytes = b;
    }
    let brokers: Vec<_> = dirs.iter().map(|(name, dir)| (name.clone(), disk.clone(), dir.clone())).collect();
    let logs = final_read::replica_logs(s, &brokers, &config, rec);
    let at = now_ms(rec);
    let mut r = rec.lock().expect("recorder");
    (r.history.replica_logs, r.history.replica_logs_ms) = (logs, at);
}

/// Whether `s` has what checker `name` judges, for the checkers that look at one feature of a
/// scenario only (groups, compaction, transactions, ...): one whose feature is absent passes on
/// nothing and says so instead of "ok".
fn has_what_it_judges(s: &Scenario, name: &str) -> bool {
    let transactional = s.producers.iter().any(|p| p.transactional);
    match name {
        "group_owners" | "group_commits" | "group_delivery" | "group_liveness" => !s.groups.is_empty(),
        "compaction" => !s.compacted_topics().is_empty(),
        "authorized" => s.security.is_some(),
        "quota_respected" => !s.quotas.is_empty(),
        "reassignment_done" | "removed_replica_deleted" => !s.reassignments.is_empty() || !s.decommissions.is_empty(),
        "broker_decommissioned" | "broker_joined" => !s.joins.is_empty() || !s.decommissions.is_empty(),
        "txn_lost_write" | "txn_aborted_read" | "txn_torn" => transactional || !s.processors.is_empty(),
        "exactly_once" | "txn_wr_cycle" => !s.processors.is_empty(),
        _ => true,
    }
}

/// The verdict lines `sim chaos` prints: each checker's, those fed from inside the brokers
/// marked as not judged.
pub fn verdicts(s: &Scenario, r: &RunResult) -> Vec<(String, String)> {
    crate::checkers::CHECKERS
        .iter()
        .map(|(name, _)| {
            let n = r.violations.iter().filter(|v| v.checker == *name).count();
            let a = r.allowed.iter().filter(|v| v.checker == *name).count();
            let verdict = match (n, a) {
                (0, _) if internal_checkers.contains(name) => "not judged (needs the brokers' insides)".to_string(),
                (0, _) if !has_what_it_judges(s, name) => "not judged (the scenario has nothing it judges)".to_string(),
                (0, 0) => "ok".to_string(),
                (0, a) => format!("ok ({a} losses allowed by expect.loss_allowed)"),
                (n, _) => format!("VIOLATED ({n})"),
            };
            (name.to_string(), verdict)
        })
        .collect()
}
