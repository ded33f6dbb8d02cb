//! The scenario's client quota changes (`scenario::quotas`) in the run: an admin node of the
//! harness's own that at each `at_ms` asks the active controller to set or remove a client
//! id's `producer_byte_rate` (AlterClientQuotas, as `kafka-configs.sh --alter --entity-type
//! clients` does), retrying until it is answered. Everything goes to the history.
//!
//! It asks and records, and must never decide what the checkers conclude. Nothing here runs
//! without `quotas`: a scenario without them creates no node and spawns no task, so its traces
//! are what they were.

use super::recorder::{event, now_ms, producing, Rec};
use super::request_timeout_ms;
use super::topology::harness_node;
use crate::history::QuotaChange;
use crate::scenario::{QuotaSpec, Scenario};
use broker_core::client::quotas;
use broker_core::client::ClientError;
use broker_core::kafka::Code;
use broker_core::metadata::quotas::{producer_byte_rate, Entity, Name};
use madsim::runtime::NodeHandle;
use madsim::task::JoinHandle;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The quota admin's node address.
const quota_admin_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 6));


/// The admin's node (kept so it outlives the run) and its task.
pub(super) struct QuotaAdmin {
    _node: NodeHandle,
    task: JoinHandle<()>,
}

/// Starts the admin: it makes each change at its time. None without `quotas`.
pub(super) fn start(s: &Scenario, brokers: &[SocketAddr], rec: &Rec) -> Option<QuotaAdmin> {
    if s.quotas.is_empty() {
        return None;
    }
    let node = harness_node("quota-admin", quota_admin_ip);
    let mut asked: Vec<QuotaSpec> = s.quotas.clone();
    // In time order, file order among equals: one at a time, as an operator's script would.
    asked.sort_by_key(|q| q.at_ms);
    let (b, r) = (brokers.to_vec(), rec.clone());
    let task = node.spawn(async move {
        for spec in asked {
            tokio::time::sleep(Duration::from_millis(spec.at_ms.saturating_sub(now_ms(&r)))).await;
            if !producing(&r) {
                return;
            }
            alter(&b, &spec, &r).await;
        }
    });
    Some(QuotaAdmin { _node: node, task })
}

/// Waits for the admin to be done: it stops retrying once producers stop.
pub(super) async fn settle(admin: Option<QuotaAdmin>) {
    if let Some(admin) = admin {
        let _ = admin.task.await;
    }
}

/// Sends one change to the active controller until it is answered, or producers stop;
/// recorded as invoked before the first attempt. Asked again: no answer at all (a timeout, a
/// broken connection, an answer that did not decode), NOT_CONTROLLER and REQUEST_TIMED_OUT
/// (either may have been committed: retrying a quota's value is idempotent). Any other code is
/// the answer.
async fn alter(brokers: &[SocketAddr], spec: &QuotaSpec, rec: &Rec) {
    let timeout = Duration::from_millis(request_timeout_ms);
    let value = spec.value();
    let at = {
        let mut r = rec.lock().expect("recorder");
        let invoke_ms = r.now_ms();
        r.history.quota_changes.push(QuotaChange { client_id: spec.client_id.clone(), producer_byte_rate: value, invoke_ms, complete_ms: None, code: None });
        r.history.quota_changes.len() - 1
    };
    let entity = Entity { user: None, client_id: Some(Name::Named(spec.client_id.clone())) };
    let ops = [(producer_byte_rate.to_string(), value)];
    let (entity, ops) = (&entity, &ops);
    let attempt = |controller| async move {
        match quotas::alter(controller, entity, ops, timeout).await {
            Ok(()) => Some((0, None)),
            Err(ClientError::Kafka { code, message }) if !matches!(code, Code::NotController | Code::RequestTimedOut) => Some((code.code(), Some(message))),
            Err(_) => None,
        }
    };
    let Some((code, error)) = super::reassign::until_answered(brokers, rec, attempt, || {}).await else { return };
    let mut r = rec.lock().expect("recorder");
    let complete_ms = r.now_ms();
    let change = &mut r.history.quota_changes[at];
    (change.complete_ms, change.code) = (Some(complete_ms), Some(code));
    drop(r);
    event(rec, "quota-admin", "quota_altered", json!({"client_id": spec.client_id, "producer_byte_rate": value, "code": code, "error": error}));
}
