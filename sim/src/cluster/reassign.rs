//! The scenario's partition reassignments (`scenario::reassignments`) in the run: an admin node
//! of the harness's own that reads each reassigned partition's replicas once the topics exist,
//! then at each `at_ms` asks the active controller to move a partition (or to cancel its move),
//! retrying until it is answered; after healing it reads where each partition ended, as an
//! operator's `kafka-reassign-partitions.sh --verify` would. Everything goes to the history.
//!
//! The scenario's decommissions (`cluster::membership`) are made here too, in their turn
//! among the reassignments: an operator's one script, one change at a time.
//!
//! It asks and records, and must never decide what the checkers conclude. Nothing here runs
//! without `reassignments`, `joins` or `decommissions`: a scenario without them creates no node
//! and spawns no task, so its traces are what they were.

use super::recorder::{event, now_ms, producing, Rec};
use super::request_timeout_ms;
use super::topology::harness_node;
use crate::history::{Placement, Reassignment};
use super::membership::Members;
use crate::scenario::{DecommissionSpec, ReassignmentSpec, Scenario};
use broker_core::client::{admin, placement};
use broker_core::client::ClientError;
use broker_core::kafka::Code;
use madsim::runtime::NodeHandle;
use madsim::task::JoinHandle;
use serde_json::json;
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The reassignment admin's node address.
const reassign_admin_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 5));

/// How long the admin keeps trying to read the replicas, before the first reassignment and
/// after healing, before it records why it could not.
const placement_deadline_ms: u64 = 10_000;

/// Pause between attempts, as an admin client's retry backoff.
pub(super) const retry_backoff_ms: u64 = 100;

/// The admin's node and its task.
pub(super) struct Reassigner {
    node: NodeHandle,
    task: JoinHandle<()>,
    /// Every partition a reassignment names.
    partitions: BTreeSet<(String, i32)>,
}

/// One change the admin makes at its time.
enum Step {
    Move(ReassignmentSpec),
    Decommission(DecommissionSpec),
}

/// Starts the admin: it reads the reassigned partitions' replicas, then makes each reassignment
/// and decommission at its time. None without `reassignments`, `joins` or `decommissions`.
pub(super) fn start(s: &Scenario, brokers: &[SocketAddr], members: &Members, rec: &Rec) -> Option<Reassigner> {
    if s.reassignments.is_empty() && s.joins.is_empty() && s.decommissions.is_empty() {
        return None;
    }
    let node = harness_node("reassign-admin", reassign_admin_ip);
    let partitions: BTreeSet<(String, i32)> = s.reassignments.iter().map(|r| (r.topic.clone(), r.partition)).collect();
    let moves = s.reassignments.iter().map(|r| (r.at_ms, Step::Move(r.clone())));
    let mut steps: Vec<(u64, Step)> = moves.chain(s.decommissions.iter().map(|d| (d.at_ms, Step::Decommission(d.clone())))).collect();
    // In time order, file order among equals (reassignments first): one at a time, as an
    // operator's script would.
    steps.sort_by_key(|(at_ms, _)| *at_ms);
    let (b, r, p, m) = (brokers.to_vec(), rec.clone(), partitions.clone(), members.clone());
    let task = node.spawn(async move {
        if !p.is_empty() {
            let found = placements(&b, &p, &r).await;
            event(&r, "reassign-admin", "initial_replicas", json!({"placements": found.as_ref().map(|f| format!("{f:?}")).unwrap_or_else(|e| e.clone())}));
            match found {
                Ok(found) => r.lock().expect("recorder").history.initial_replicas = found.into_iter().map(|(k, placement)| (k, placement.replicas)).collect(),
                Err(why) => r.lock().expect("recorder").history.placement_error = Some(format!("before the first reassignment: {why}")),
            }
        }
        for (at_ms, step) in steps {
            tokio::time::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms(&r)))).await;
            if !producing(&r) {
                return;
            }
            match step {
                Step::Move(spec) => reassign(&b, &spec, &r).await,
                Step::Decommission(spec) => super::membership::decommission(&b, &spec, &m, &r).await,
            }
        }
    });
    Some(Reassigner { node, task, partitions })
}

/// Waits for the admin to be done: it stops retrying once producers stop (three quarters into
/// healing), so that nothing it sent can land after the final placements are read.
pub(super) async fn settle(admin: Option<Reassigner>) -> Option<Reassigner> {
    let mut admin = admin?;
    let _ = (&mut admin.task).await;
    Some(admin)
}

/// After healing: where each reassigned partition ended, into the history's `final_placements`
/// (or why it could not be read, `placement_error`).
/// With joins or decommissions, every partition's replicas and the brokers registered too
/// (`membership::final_cluster`).
pub(super) async fn final_placements(s: &Scenario, admin: &Option<Reassigner>, brokers: &[SocketAddr], rec: &Rec) {
    let Some(admin) = admin else { return };
    // The scenario's partitions, and those a decommission moved.
    let moved: Vec<(String, i32)> = rec.lock().expect("recorder").history.reassignments.iter().map(|m| (m.topic.clone(), m.partition)).collect();
    let (b, r, p, s) = (brokers.to_vec(), rec.clone(), admin.partitions.iter().cloned().chain(moved).collect::<BTreeSet<_>>(), s.clone());
    let _ = admin
        .node
        .spawn(async move {
            super::membership::final_cluster(&s, &b, &r).await;
            if p.is_empty() {
                return;
            }
            let found = placements(&b, &p, &r).await;
            event(&r, "reassign-admin", "final_placements", json!({"placements": found.as_ref().map(|f| format!("{f:?}")).unwrap_or_else(|e| e.clone())}));
            let mut rec = r.lock().expect("recorder");
            match found {
                Ok(found) => rec.history.final_placements = found,
                Err(why) => rec.history.placement_error = Some(format!("after healing: {why}")),
            }
        })
        .await;
}

/// Sends one reassignment to the active controller until it is answered, or producers stop;
/// recorded as invoked before the first attempt.
pub(super) async fn reassign(brokers: &[SocketAddr], spec: &ReassignmentSpec, rec: &Rec) {
    let timeout = Duration::from_millis(request_timeout_ms);
    let target = spec.target();
    let at = {
        let mut r = rec.lock().expect("recorder");
        let invoke_ms = r.now_ms();
        let asked = Reassignment { topic: spec.topic.clone(), partition: spec.partition, target: target.clone(), invoke_ms, complete_ms: None, code: None, earlier_unknown: false };
        r.history.reassignments.push(asked);
        r.history.reassignments.len() - 1
    };
    let asked = &[((spec.topic.clone(), spec.partition), target.clone())];
    let attempt = |controller| async move {
        match judge(placement::alter_reassignments(controller, asked, timeout).await, spec) {
            Attempt::Answered(code, error) => Some((code, error)),
            Attempt::Retry => None,
        }
    };
    let retried = || rec.lock().expect("recorder").history.reassignments[at].earlier_unknown = true;
    let Some((code, error)) = until_answered(brokers, rec, attempt, retried).await else { return };
    let mut r = rec.lock().expect("recorder");
    let complete_ms = r.now_ms();
    let asked = &mut r.history.reassignments[at];
    (asked.complete_ms, asked.code) = (Some(complete_ms), Some(code));
    drop(r);
    event(rec, "reassign-admin", "reassigned", json!({"topic": spec.topic, "partition": spec.partition, "target": target, "code": code, "error": error}));
}

/// Asks the active controller (found through each broker in turn) with `attempt` until it gets
/// an answer (None: ask again, after `retried` and the back-off), while producers run: the
/// harness admins' way of retrying a change that may or may not have been committed.
pub(super) async fn until_answered<T, F, Fut>(brokers: &[SocketAddr], rec: &Rec, mut attempt: F, mut retried: impl FnMut()) -> Option<T>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let timeout = Duration::from_millis(request_timeout_ms);
    let mut n = 0usize;
    while producing(rec) {
        let bootstrap = brokers[n % brokers.len()];
        n += 1;
        let controller = admin::find_controller(bootstrap, timeout).await.unwrap_or(bootstrap);
        match attempt(controller).await {
            Some(answer) => return Some(answer),
            None => {
                retried();
                tokio::time::sleep(Duration::from_millis(retry_backoff_ms)).await;
            }
        }
    }
    None
}

/// What one attempt came to.
enum Attempt {
    /// The partition's answer: its code (0: accepted) and message.
    Answered(i16, Option<String>),
    /// Ask again. The attempt may have taken effect all the same: even a NOT_CONTROLLER for the
    /// whole request may come from a broker that forwarded it and lost the controller's answer.
    Retry,
}

/// One attempt's outcome for `spec`'s partition. Asked again: NOT_CONTROLLER for the whole
/// request; no answer at all (a timeout, a broken connection, an answer that did not decode);
/// and the partition's own NOT_CONTROLLER (the controller lost its leadership before the
/// reassignment was committed: it may be in the log) or REQUEST_TIMED_OUT. Any other code is
/// the answer.
fn judge(answer: Result<Vec<placement::Answer>, ClientError>, spec: &ReassignmentSpec) -> Attempt {
    let retried = |code: &Code| matches!(code, Code::NotController | Code::RequestTimedOut);
    let mine = match answer {
        Err(ClientError::Kafka { code, message }) if !retried(&code) => return Attempt::Answered(code.code(), Some(message)),
        Err(_) => return Attempt::Retry,
        Ok(answers) => answers.into_iter().find(|((t, p), _)| *t == spec.topic && *p == spec.partition).map(|(_, a)| a),
    };
    match mine {
        Some(None) => Attempt::Answered(0, None),
        Some(Some((code, message))) if !retried(&code) => Attempt::Answered(code.code(), Some(message)),
        Some(Some(_)) | None => Attempt::Retry,
    }
}

/// Each partition of `partitions`: its replicas (Metadata) and the reassignment in progress
/// (ListPartitionReassignments), both answered by the active controller, retried on the next
/// broker for up to `placement_deadline_ms`.
async fn placements(brokers: &[SocketAddr], partitions: &BTreeSet<(String, i32)>, rec: &Rec) -> Result<std::collections::BTreeMap<(String, i32), Placement>, String> {
    let timeout = Duration::from_millis(request_timeout_ms);
    let topics: Vec<String> = partitions.iter().map(|(t, _)| t.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let start = now_ms(rec);
    let mut attempt = 0usize;
    loop {
        let bootstrap = brokers[attempt % brokers.len()];
        attempt += 1;
        let controller = admin::find_controller(bootstrap, timeout).await.unwrap_or(bootstrap);
        let read = async {
            let ongoing = placement::list_reassignments(controller, timeout).await?;
            let (replicas, _) = placement::assignment(controller, Some(&topics), timeout).await?;
            let mut out = std::collections::BTreeMap::new();
            for key in partitions {
                let replicas = replicas.get(key).cloned().ok_or_else(|| ClientError::Protocol(format!("Metadata lists no {}-{}", key.0, key.1)))?;
                let (adding, removing) = ongoing.get(key).map_or((Vec::new(), Vec::new()), |o| (o.adding.clone(), o.removing.clone()));
                out.insert(key.clone(), Placement { replicas, adding, removing });
            }
            Ok::<_, ClientError>(out)
        };
        match read.await {
            Ok(out) => return Ok(out),
            Err(e) if now_ms(rec) - start > placement_deadline_ms => return Err(e.to_string()),
            Err(_) => tokio::time::sleep(Duration::from_millis(retry_backoff_ms)).await,
        }
    }
}
