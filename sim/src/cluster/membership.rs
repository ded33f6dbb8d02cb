//! The scenario's joins and decommissions (`scenario::membership`) in the run, as an operator
//! grows or shrinks a cluster: a broker that joins late has its process first started at its
//! `at_ms` (it registers with the controller quorum like any broker); a decommission, made by
//! the reassignment admin in its turn (`cluster::reassign`), moves every replica off its
//! broker with the plan `seedlog reassign generate --remove-broker` makes
//! (`broker_core::client::plan`), waits until ListPartitionReassignments shows the moves done
//! and Metadata no replica left there, stops the broker's process for good and sends
//! UnregisterBroker. After healing the admin reads every partition's replicas and the brokers
//! registered. Everything goes to the history.
//!
//! It asks, starts, stops and records, and must never decide what the checkers conclude. The
//! fault injector learns from `Procs` which brokers are absent (not joined yet, decommissioned)
//! and leaves them alone. Nothing here runs without `joins` or `decommissions`: a scenario
//! without them spawns no task and asks nothing, so its traces are what they were.

use super::inject::Procs;
use super::reassign::{reassign, until_answered};
use super::recorder::{event, now_ms, Rec};
use super::request_timeout_ms;
use super::topology::Cluster;
use crate::history::Decommission;
use crate::scenario::{DecommissionSpec, ReassignmentSpec, Scenario};
use broker_core::client::plan::{self, Assignment};
use broker_core::client::{placement, ClientError};
use broker_core::kafka::Code;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Rounds of plan, move and wait a decommission makes before it gives up with replicas still
/// on its broker: the second round moves what the first could not (a move refused, or one
/// whose answer was lost and that did not land); more than that is a cluster that does not
/// move replicas, which the checkers then report.
const decommission_rounds_max: usize = 3;

/// How long the admin keeps trying to read the final assignment after healing.
const final_read_deadline_ms: u64 = 10_000;

/// What joins and decommissions act on: each broker's node and process state.
#[derive(Clone)]
pub(super) struct Members {
    procs: Procs,
    /// Every broker's node, by id.
    nodes: BTreeMap<i32, NodeId>,
    /// Each broker joining late: its node's go-ahead, and when.
    joining: BTreeMap<i32, (Arc<AtomicBool>, u64)>,
}

impl Members {
    /// The brokers of `cluster`, those joining late marked absent in `procs` until they join.
    pub(super) fn new(s: &Scenario, cluster: &Cluster, procs: &Procs) -> Members {
        let nodes = (0..s.brokers).filter_map(|i| Some((i as i32, cluster.nodes.get(&format!("broker-{i}"))?.0.id()))).collect();
        let mut joining = BTreeMap::new();
        for j in &s.joins {
            let name = format!("broker-{}", j.broker);
            if let Some(go) = cluster.joining.get(&name) {
                procs.joins_later(&name);
                joining.insert(j.broker as i32, (go.clone(), j.at_ms));
            }
        }
        Members { procs: procs.clone(), nodes, joining }
    }

    /// The brokers an operator would place replicas on now: every broker of the cluster that
    /// has joined and is not decommissioned.
    fn present(&self) -> Vec<i32> {
        self.nodes.keys().copied().filter(|id| self.procs.absent(&format!("broker-{id}")).is_none()).collect()
    }
}

/// Starts each joining broker's process at its time, in time order. None without `joins`.
pub(super) fn start_joins(members: &Members, rec: &Rec) -> Option<tokio::task::JoinHandle<()>> {
    if members.joining.is_empty() {
        return None;
    }
    let mut due: Vec<(u64, i32)> = members.joining.iter().map(|(id, (_, at))| (*at, *id)).collect();
    due.sort_unstable();
    let (m, r) = (members.clone(), rec.clone());
    Some(tokio::spawn(async move {
        for (at_ms, id) in due {
            tokio::time::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms(&r)))).await;
            let (Some((go, _)), Some(&node)) = (m.joining.get(&id), m.nodes.get(&id)) else { continue };
            let name = format!("broker-{id}");
            go.store(true, Ordering::SeqCst);
            m.procs.joined(&name);
            // Its node's init ran at creation and did nothing; this runs it again, for real.
            let handle = Handle::current();
            handle.kill(node);
            handle.restart(node);
            let at = now_ms(&r);
            r.lock().expect("recorder").history.joins.push((id, at));
            event(&r, &name, "joined", json!({}));
        }
    }))
}

/// One decommission: rounds of (no reassignment in progress, read every partition's replicas,
/// plan them off the broker, send the moves one at a time until answered) until Metadata
/// shows no replica on it; then its process stopped for good and UnregisterBroker sent until
/// answered. Gives up where producers stop, leaving the steps not reached unrecorded.
pub(super) async fn decommission(brokers: &[SocketAddr], spec: &DecommissionSpec, m: &Members, rec: &Rec) {
    let (id, name) = (spec.broker as i32, format!("broker-{}", spec.broker));
    let onto: Vec<i32> = m.present().into_iter().filter(|&b| b != id).collect();
    let at = {
        let mut r = rec.lock().expect("recorder");
        let invoke_ms = r.now_ms();
        r.history.decommissions.push(Decommission { broker: id, invoke_ms, onto: onto.clone(), ..Decommission::default() });
        r.history.decommissions.len() - 1
    };
    let record = |f: &dyn Fn(&mut Decommission)| f(&mut rec.lock().expect("recorder").history.decommissions[at]);
    event(rec, "reassign-admin", "decommission_started", json!({"broker": id, "onto": onto}));
    let mut drained = false;
    for _ in 0..decommission_rounds_max {
        let Some(current) = at_rest(brokers, rec).await else { return };
        if !current.values().any(|r| r.contains(&id)) {
            drained = true;
            break;
        }
        let planned = match plan::plan(&current, &onto, &BTreeMap::new()) {
            Ok(p) => p,
            Err(e) => return event(rec, "reassign-admin", "decommission_unplanned", json!({"broker": id, "error": e.to_string()})),
        };
        let moves: Vec<((String, i32), Vec<i32>)> = planned.into_iter().filter(|(k, r)| current.get(k) != Some(r)).collect();
        event(rec, "reassign-admin", "decommission_plan", json!({"broker": id, "moves": format!("{moves:?}")}));
        for ((topic, partition), replicas) in moves {
            {
                let mut r = rec.lock().expect("recorder");
                let key = (topic.clone(), partition);
                r.history.initial_replicas.entry(key.clone()).or_insert_with(|| current[&key].clone());
                r.history.decommissions[at].moved.push(key);
            }
            let asked = ReassignmentSpec { at_ms: now_ms(rec), topic, partition, replicas: Some(replicas), cancel: false };
            reassign(brokers, &asked, rec).await;
        }
    }
    if !drained {
        return event(rec, "reassign-admin", "decommission_abandoned", json!({"broker": id, "rounds": decommission_rounds_max}));
    }
    let now = now_ms(rec);
    record(&|d| d.drained_ms = Some(now));
    // Stopped for good: the injector restarts it no more, and no later fault touches it.
    m.procs.retire(&name, now);
    if let Some(&node) = m.nodes.get(&id) {
        Handle::current().kill(node);
    }
    record(&|d| d.stopped_ms = Some(now));
    event(rec, &name, "decommissioned", json!({}));
    let timeout = Duration::from_millis(request_timeout_ms);
    let attempt = |controller| async move {
        match placement::unregister_broker(controller, id, timeout).await {
            Ok(()) => Some(0),
            Err(ClientError::Kafka { code, .. }) if !matches!(code, Code::NotController | Code::RequestTimedOut) => Some(code.code()),
            Err(_) => None,
        }
    };
    let retried = || record(&|d| d.unregister_earlier_unknown = true);
    let Some(code) = until_answered(brokers, rec, attempt, retried).await else { return };
    record(&|d| d.unregister_code = Some(code));
    event(rec, "reassign-admin", "unregistered", json!({"broker": id, "code": code}));
}

/// Every partition's replicas once no reassignment is in progress (asked of the active
/// controller until it says so), or None once producers stop.
async fn at_rest(brokers: &[SocketAddr], rec: &Rec) -> Option<Assignment> {
    let timeout = Duration::from_millis(request_timeout_ms);
    let attempt = |controller| async move {
        let ongoing = placement::list_reassignments(controller, timeout).await.ok()?;
        if !ongoing.is_empty() {
            return None;
        }
        placement::assignment(controller, None, timeout).await.ok().map(|(a, _)| a)
    };
    until_answered(brokers, rec, attempt, || {}).await
}

/// After healing: every partition's replicas and the brokers registered, as the active
/// controller answers, into the history (or why not, `placement_error`). Only with joins or
/// decommissions.
pub(super) async fn final_cluster(s: &Scenario, brokers: &[SocketAddr], rec: &Rec) {
    if s.joins.is_empty() && s.decommissions.is_empty() {
        return;
    }
    let timeout = Duration::from_millis(request_timeout_ms);
    let start = now_ms(rec);
    let mut attempt = 0usize;
    let found = loop {
        let bootstrap = brokers[attempt % brokers.len()];
        attempt += 1;
        let controller = broker_core::client::admin::find_controller(bootstrap, timeout).await.unwrap_or(bootstrap);
        let read = async { Ok::<_, ClientError>((placement::assignment(controller, None, timeout).await?.0, placement::registered_brokers(controller, timeout).await?)) };
        match read.await {
            Ok(found) => break Ok(found),
            Err(e) if now_ms(rec) - start > final_read_deadline_ms => break Err(e.to_string()),
            Err(_) => tokio::time::sleep(Duration::from_millis(super::reassign::retry_backoff_ms)).await,
        }
    };
    event(rec, "reassign-admin", "final_cluster", json!({"cluster": found.as_ref().map(|f| format!("{f:?}")).unwrap_or_else(|e| e.clone())}));
    let mut r = rec.lock().expect("recorder");
    match found {
        Ok((assignment, registered)) => (r.history.final_assignment, r.history.final_registered) = (assignment, registered),
        Err(why) => r.history.placement_error = Some(format!("after healing, every partition and the brokers registered: {why}")),
    }
}
