//! The simulated cluster: the real broker server on madsim nodes over `SimDisk`, client nodes
//! running workloads through the real Rust client, a fault schedule (fixed and/or drawn from
//! the seed), a healing phase, a final read, the checkers, and the trace. One function,
//! `run`: scenario + seed in, result out; same inputs, byte-identical trace.
//!
//! A scenario that slipped past validation must not crash the harness: one it cannot run at all
//! (no broker, more brokers than the address plan holds) is refused with the validation error;
//! what cannot be run of the rest (a fault on no such node, a link fault without a link) is
//! skipped with a `fault_skipped` event.
//!
//! # Phases
//!
//! `run` reads in the order a run goes, one module per phase:
//!
//! | phase | module | what happens |
//! |---|---|---|
//! | fault schedule | `faults` | fixed faults plus the random mix from the seed, within the budget (pure: both builds) |
//! | topology | `topology` | one node per broker over its own disk; addresses; broker configs |
//! | workloads | `workloads`, `processors`, `groups` | topics created through the controller, then producer, processor, consumer and group member nodes |
//! | admin | `security`, `reassign`, `membership`, `quotas` | ACL and credential changes, partition reassignments, brokers joining late and decommissioned, client quota changes, each at its time |
//! | safety | `inject` | each fault applied at its time and undone after `for` |
//! | healing | here | faults gone; producers go on for ¾ of `heal_ms`, judged from ½ |
//! | final read | `final_read`, `groups`, `reassign`, `membership` | every partition through a client; every group's committed offsets; each reassigned partition's replicas (with joins or decommissions: every partition's, and the brokers registered); every replica from its disk (not a decommissioned broker's) |
//! | verdict | `verdict` | the checkers, allowed losses, the trace's summary and digest |
//!
//! `recorder` stamps every event and operation with simulated time. The run's RNG draws the
//! schedule and then the disk seed (unless the scenario pins it, as `sim shrink` writes it);
//! madsim's runtime takes the seed itself. Nodes are created
//! and tasks spawned and awaited in one fixed order: moving a step, or adding a draw, changes
//! every trace (and the digests in `scenarios/` tests say so).

pub mod faults;
pub(crate) mod timing;
pub(crate) mod final_read;
#[cfg(madsim)]
mod groups;
#[cfg(madsim)]
mod inject;
#[cfg(madsim)]
mod membership;
#[cfg(madsim)]
mod processors;
#[cfg(madsim)]
mod shares;
#[cfg(madsim)]
mod quotas;
#[cfg(madsim)]
mod reassign;
pub(crate) mod recorder;
mod security;
#[cfg(madsim)]
mod topology;
pub(crate) mod verdict;
pub(crate) mod workloads;

pub use faults::{derive_faults, schedule};
pub use verdict::RunResult;

#[cfg(madsim)]
use {
    crate::history::{Compaction, History},
    crate::scenario::{FaultSpec, Scenario},
    crate::trace::{self, Trace},
    broker_core::broker::PlantedBug,
    broker_core::buggify::Buggify,
    madsim::runtime::Runtime,
    recorder::{event, now_ms, Recorder},
    serde_json::{json, Map, Value},
    std::time::Duration,
};

/// Client request timeout in simulated time: long enough for a paused or restarting broker to
/// come back within a fault, short enough that a dead one is noticed.
const request_timeout_ms: u64 = 1_000;

/// Runs `scenario` under `seed`. `scenario_path` is recorded in the trace header for replay.
/// A scenario the harness cannot run at all (see [`Scenario::runnable`]) is an error naming
/// the field; anything else that slipped past validation is skipped as the run goes.
#[cfg(madsim)]
pub fn run(scenario: &Scenario, scenario_path: &str, seed: u64, bug: Option<PlantedBug>) -> Result<RunResult, String> {
    scenario.runnable()?;
    let (faults, disk_seed) = schedule(scenario, seed);
    let mut derived = derived(&faults, disk_seed);
    if scenario.buggify {
        let sites = |i| Buggify::seeded(topology::buggify_seed(disk_seed, i), &topology::buggify_sites(scenario)).enabled().iter().map(|(site, per_mille)| format!("{site:?}:{per_mille}")).collect::<Vec<_>>();
        derived.insert("buggify".into(), json!((0..scenario.brokers).map(|i| (format!("broker-{i}"), json!(sites(i)))).collect::<Map<String, Value>>()));
    }
    if let Some(bug) = bug {
        // So `sim replay` plants it again (traces of clean runs are unchanged).
        derived.insert("planted_bug".into(), json!(format!("{bug:?}")));
    }
    if let Some(v) = scenario.broker.transaction_version {
        // So `sim replay` runs a `--transaction-version` override again.
        derived.insert("transaction_version".into(), json!(v));
    }
    let trace = Trace::header(&scenario.name, scenario_path, trace::scenario_digest(scenario), seed, &derived);
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let (trace, history, simulated_ms) = runtime.block_on(simulate(scenario.clone(), faults, disk_seed, bug, trace));
    Ok(verdict::judge(scenario, trace, history, derived, simulated_ms))
}

/// What the seed decided, for the trace header and `sim run`'s `derived` lines.
#[cfg(madsim)]
fn derived(faults: &[FaultSpec], disk_seed: u64) -> Map<String, Value> {
    let mut derived = Map::new();
    let fault = |f: &FaultSpec| {
        let mut x = json!({"at": f.at, "kind": format!("{:?}", f.kind), "target": f.target, "for": f.for_ms, "delay_ms": f.delay_ms, "loss_per_mille": f.loss_per_mille});
        if !f.api.is_empty() {
            x["api"] = json!(f.api);
        }
        x
    };
    derived.insert("faults".into(), json!(faults.iter().map(fault).collect::<Vec<_>>()));
    derived.insert("disk_seed".into(), json!(disk_seed));
    derived
}

/// The run inside the simulator, phase by phase: the trace and history it recorded, and the
/// simulated milliseconds up to the end of the final read.
#[cfg(madsim)]
async fn simulate(s: Scenario, faults: Vec<FaultSpec>, disk_seed: u64, bug: Option<PlantedBug>, trace: Trace) -> (Trace, History, u64) {
    let rec = Recorder::start(trace);
    {
        let h = &mut rec.lock().expect("recorder").history;
        h.compacted_topics = s.compacted_topics().into_iter().map(|(t, delete_retention_ms)| (t, Compaction { delete_retention_ms })).collect();
        (h.session_ms, h.voters, h.brokers) = (topology::session_ms, topology::voters(&s).collect(), s.brokers);
        h.controller_failover_ms = topology::controller_failover_ms;
        h.share_delivery_limit = broker_core::group::GroupConfig::default().share_delivery_count_limit;
        h.processors = processors::of(&s);
    }
    broker_core::netfault::reset(disk_seed);
    broker_core::simprobe::reset();
    let mut cluster = topology::start_brokers(&s, disk_seed, bug, &rec);
    workloads::create_topics(&s, &cluster, &rec).await;
    let _acl_admin = security::start(&s, &cluster.brokers, &rec).await;
    let procs = inject::Procs::default();
    let members = membership::Members::new(&s, &cluster, &procs);
    let _joins = membership::start_joins(&members, &rec);
    let reassigner = reassign::start(&s, &cluster.brokers, &members, &rec);
    let quota_admin = quotas::start(&s, &cluster.brokers, &rec);
    let clients = workloads::start_clients(&s, &mut cluster, &rec);
    let members = groups::start(&s, &mut cluster, disk_seed, &rec);
    let budget = s.random_faults.as_ref().map_or_else(inject::Budget::default, |m| inject::Budget::new(m.brokers_at_once.map(|n| n as usize), m.recovery_ms));
    inject::run_schedule(faults, budget, &cluster, &procs, &rec).await;
    tokio::time::sleep(Duration::from_millis(s.duration_ms.saturating_sub(now_ms(&rec)))).await;
    cluster.quiet_buggify();
    heal(&s, &rec).await;
    // A producer's last write may still be in flight (bounded by its timeout and retries);
    // the final read must come after every acknowledgement it is checked against.
    for t in clients.producers {
        let _ = t.await;
    }
    let reassigner = reassign::settle(reassigner).await;
    quotas::settle(quota_admin).await;
    event(&rec, "harness", "healed", json!({}));
    final_read::through_clients(&s, &cluster, &rec).await;
    reassign::final_placements(&s, &reassigner, &cluster.brokers, &rec).await;
    let final_read_ms = now_ms(&rec);
    rec.lock().expect("recorder").history.final_read_ms = final_read_ms;
    for t in clients.consumers.into_iter().chain(members) {
        let _ = t.await;
    }
    groups::final_commits(&s, &cluster, &rec).await;
    let simulated_ms = now_ms(&rec);
    final_read::from_disks(&s, &cluster, &rec);
    {
        // The voters stamp with the broker's clock (simulated ms since the epoch): to run time.
        let mut r = rec.lock().expect("recorder");
        let mut raft = broker_core::simprobe::take_raft_history();
        let run_start = broker_core::server::now_ms().saturating_sub(r.now_ms());
        raft.active.iter_mut().for_each(|(at, _, _)| *at = at.saturating_sub(run_start));
        r.history.raft = raft;
        let mut breaches = broker_core::simprobe::take_isr_breaches();
        breaches.iter_mut().for_each(|b| b.at_ms = b.at_ms.saturating_sub(run_start));
        r.history.isr_breaches = breaches;
        let mut regressions = broker_core::simprobe::take_lso_regressions();
        regressions.iter_mut().for_each(|g| g.at_ms = g.at_ms.saturating_sub(run_start));
        r.history.lso_regressions = regressions;
        let (mut failed, mut elections, mut fences) = broker_core::simprobe::take_leadership();
        for f in &mut failed {
            f.failed_ms = f.failed_ms.saturating_sub(run_start);
            f.ended_ms = f.ended_ms.map(|e| e.saturating_sub(run_start));
        }
        elections.iter_mut().for_each(|e| e.at_ms = e.at_ms.saturating_sub(run_start));
        fences.iter_mut().for_each(|f| f.at_ms = f.at_ms.saturating_sub(run_start));
        (r.history.failed_leaders, r.history.elections, r.history.fences) = (failed, elections, fences);
    }
    let (trace, history) = recorder::take(&rec);
    (trace, history, simulated_ms)
}

/// Healing: the safety phase is over and every fault has been undone. Producers go on for
/// three quarters of the phase; `write_liveness` judges their writes from half-way, when the
/// cluster has had time to recover; then the final read.
pub(crate) async fn heal(s: &crate::scenario::Scenario, rec: &recorder::Rec) {
    use recorder::{event, now_ms};
    use serde_json::json;
    use std::time::Duration;
    let healed_at = now_ms(rec);
    let produce_until = healed_at.saturating_add(s.heal_ms.saturating_mul(3) / 4);
    {
        let mut r = rec.lock().expect("recorder");
        r.produce_until_ms = Some(produce_until);
        r.history.healed_at_ms = healed_at;
        r.history.heal_ms = s.heal_ms;
    }
    event(rec, "harness", "heal_phase", json!({"produce_until_ms": produce_until, "write_liveness_from_ms": healed_at.saturating_add(s.heal_ms / 2), "heal_ms": s.heal_ms}));
    tokio::time::sleep(Duration::from_millis(s.heal_ms)).await;
}
