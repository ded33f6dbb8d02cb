//! Where replicas live, on the active controller: AlterPartitionReassignments (API 45) and
//! ListPartitionReassignments (API 46), what `kafka-reassign-partitions.sh --execute / --verify
//! / --cancel`, Admin.alterPartitionReassignments and `seedlog reassign` send; and
//! UnregisterBroker (API 64), which removes a decommissioned broker. The decisions are the
//! controller's (`controller::reassign`, `Controller::unregister_broker`); these handlers read
//! the request, commit the records as one batch and answer once it is committed and applied
//! here, as Kafka answers when a reassignment has started (not finished). Another node
//! forwards all three to the active controller (`forward`).

use super::controller_handlers::{active, answer_committed, not_controller};
use super::{Node, Outcome};
use crate::controller::reassign::Asked;
use crate::kafka::Code;
use crate::protocol::{s, topic_name, Response};
use kafka_protocol::messages::alter_partition_reassignments_request::AlterPartitionReassignmentsRequest;
use kafka_protocol::messages::alter_partition_reassignments_response::{AlterPartitionReassignmentsResponse, ReassignablePartitionResponse, ReassignableTopicResponse};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use kafka_protocol::messages::list_partition_reassignments_response::{ListPartitionReassignmentsResponse, OngoingPartitionReassignment, OngoingTopicReassignment};
use kafka_protocol::messages::unregister_broker_request::UnregisterBrokerRequest;
use kafka_protocol::messages::unregister_broker_response::UnregisterBrokerResponse;
use kafka_protocol::messages::{ApiKey, BrokerId};

pub fn alter(node: &Node, version: i16, correlation_id: i32, req: AlterPartitionReassignmentsRequest, now: u64) -> Result<Outcome, String> {
    let asked: Vec<Asked> = req
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index, p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect()))))
        .collect();
    let mut r = AlterPartitionReassignmentsResponse::default();
    if version >= 1 {
        r.allow_replication_factor_change = req.allow_replication_factor_change;
    }
    let mut quorum = active(node);
    let Some(q) = quorum.as_deref_mut() else {
        r.error_code = not_controller;
        r.error_message = Some(s("this node is not the controller"));
        return Ok(Outcome::Reply(Response::new(ApiKey::AlterPartitionReassignments, version, correlation_id, r)));
    };
    let keep_factor = version >= 1 && !req.allow_replication_factor_change;
    let (answers, records) = q.controller().alter_reassignments(&asked, keep_factor);
    let committed = match records.is_empty() {
        true => Ok(-1),
        false => q.commit(records, now),
    };
    let last = *committed.as_ref().unwrap_or(&-1);
    for (name, p, answer) in answers {
        let (code, message) = match (answer, &committed) {
            (Err(e), _) => (e.kafka_error().code(), Some(s(&e.to_string()))),
            (Ok(()), Err(e)) => (e.kafka_error().code(), Some(s(&e.to_string()))),
            (Ok(()), Ok(_)) => (0, None),
        };
        if r.responses.last().is_none_or(|t| t.name.0.as_str() != name) {
            r.responses.push(ReassignableTopicResponse::default().with_name(topic_name(&name)));
        }
        let pr = ReassignablePartitionResponse::default().with_partition_index(p).with_error_code(code).with_error_message(message);
        r.responses.last_mut().expect("pushed above").partitions.push(pr);
    }
    Ok(answer_committed(quorum, (ApiKey::AlterPartitionReassignments, version, correlation_id), r, (last, req.timeout_ms), "the reassignment", |r| {
        r.responses.iter_mut().flat_map(|t| t.partitions.iter_mut().map(|p| (&mut p.error_code, &mut p.error_message))).collect()
    }))
}

/// The reassignments in progress among those asked (every one when the request names none),
/// each with its whole replica set and the replicas being added and removed.
pub fn list(node: &Node, version: i16, correlation_id: i32, req: ListPartitionReassignmentsRequest) -> Result<Outcome, String> {
    let mut r = ListPartitionReassignmentsResponse::default();
    let Some(q) = active(node) else {
        r.error_code = Code::NotController.code();
        r.error_message = Some(s("this node is not the controller"));
        return Ok(Outcome::Reply(Response::new(ApiKey::ListPartitionReassignments, version, correlation_id, r)));
    };
    let asked: Option<Vec<(String, i32)>> = req.topics.map(|ts| ts.iter().flat_map(|t| t.partition_indexes.iter().map(move |&p| (t.name.0.to_string(), p))).collect());
    let brokers = |list: &[i32]| list.iter().map(|&b| BrokerId(b)).collect::<Vec<BrokerId>>();
    for (name, p, part) in q.controller().reassignments(asked.as_deref()) {
        if r.topics.last().is_none_or(|t| t.name.0.as_str() != name) {
            r.topics.push(OngoingTopicReassignment::default().with_name(topic_name(&name)));
        }
        let ongoing = OngoingPartitionReassignment::default().with_partition_index(p).with_replicas(brokers(&part.replicas)).with_adding_replicas(brokers(&part.adding)).with_removing_replicas(brokers(&part.removing));
        r.topics.last_mut().expect("pushed above").partitions.push(ongoing);
    }
    Ok(Outcome::Reply(Response::new(ApiKey::ListPartitionReassignments, version, correlation_id, r)))
}

/// UnregisterBroker: BROKER_ID_NOT_REGISTERED for an id with no registration.
pub fn unregister(node: &Node, version: i16, correlation_id: i32, req: UnregisterBrokerRequest, now: u64) -> Result<Outcome, String> {
    let mut r = UnregisterBrokerResponse::default();
    let mut quorum = active(node);
    let mut last = -1;
    let result = match quorum.as_deref_mut() {
        None => Err((not_controller, "this node is not the controller".to_string())),
        Some(q) => match q.controller_mut().unregister_broker(req.broker_id.0, now) {
            Err(e) => Err((e.kafka_error().code(), e.to_string())),
            Ok(records) => q.commit(records, now).map(|offset| last = offset).map_err(|e| (e.kafka_error().code(), e.to_string())),
        },
    };
    if let Err((code, message)) = result {
        r.error_code = code;
        r.error_message = Some(s(&message));
    }
    Ok(answer_committed(quorum, (ApiKey::UnregisterBroker, version, correlation_id), r, (last, crate::constants::controller_commit_wait_ms as i32), "the unregistration", |r| vec![(&mut r.error_code, &mut r.error_message)]))
}
