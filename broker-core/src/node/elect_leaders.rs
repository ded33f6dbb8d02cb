//! ElectLeaders (API 43) on the active controller: an operator's preferred or unclean leader
//! election (`kafka-leader-election.sh --election-type PREFERRED|UNCLEAN`, Admin.electLeaders).
//! The decision is the controller's (`Controller::elect_leaders`); this handler only reads the
//! request, commits the moves as one batch and answers each partition once it is committed.
//! Another node forwards it to the active controller (`forward`); one that cannot answers the
//! whole request NOT_CONTROLLER.

use crate::protocol::Response;
use super::controller_handlers::{active, after_commit};
use crate::protocol::{s, topic_name};
use super::{Node, Outcome};
use crate::kafka::Code;
use kafka_protocol::messages::elect_leaders_request::ElectLeadersRequest;
use kafka_protocol::messages::elect_leaders_response::{ElectLeadersResponse, PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::ApiKey;

/// ElectLeaders' `election_type`s (Kafka's ElectionType): a preferred-replica election, and an
/// unclean one (KIP-460).
const preferred: i8 = 0;
const unclean: i8 = 1;

pub fn elect_leaders(node: &Node, version: i16, correlation_id: i32, req: ElectLeadersRequest, now: u64) -> Result<Outcome, String> {
    let asked: Option<Vec<(String, i32)>> = req.topic_partitions.as_ref().map(|tps| tps.iter().flat_map(|t| t.partitions.iter().map(move |&p| (t.topic.0.to_string(), p))).collect());
    let Some(mut q) = active(node) else {
        let answers: Vec<(String, i32, Option<Code>)> = asked.iter().flatten().map(|(t, p)| (t.clone(), *p, Some(Code::NotController))).collect();
        let r = response(version, Code::NotController.code(), &answers, "this node is not the controller");
        return Ok(Outcome::Reply(Response::new(ApiKey::ElectLeaders, version, correlation_id, r)));
    };
    let (mut answers, records) = match req.election_type {
        preferred | unclean => q.controller().elect_leaders(req.election_type == unclean, asked.as_deref()),
        _ => (asked.iter().flatten().map(|(t, p)| (t.clone(), *p, Some(Code::InvalidRequest))).collect(), Vec::new()),
    };
    let mut last = -1;
    if !records.is_empty() {
        match q.commit(records, now) {
            Ok(offset) => last = offset,
            Err(e) => {
                for a in answers.iter_mut().filter(|a| a.2.is_none()) {
                    a.2 = Some(e.kafka_error());
                }
            }
        }
    }
    let why = match req.election_type {
        preferred => "the preferred replica cannot lead now",
        unclean => "a live leader is left, or no live replica to elect",
        _ => "only PREFERRED and UNCLEAN elections exist",
    };
    let reply = Response::new(ApiKey::ElectLeaders, version, correlation_id, response(version, 0, &answers, why));
    for a in answers.iter_mut().filter(|a| a.2.is_none()) {
        a.2 = Some(Code::NotController); // the leadership ended before the moves were committed
    }
    let refused = Response::new(ApiKey::ElectLeaders, version, correlation_id, response(version, 0, &answers, "the controller lost its leadership"));
    Ok(after_commit(&q, last, reply, refused, false, crate::constants::controller_commit_wait_ms))
}

/// The answer: per topic in the order first asked, per partition its error (none: moved). v0
/// has no top-level error code; a refused v0 request names it on every partition.
fn response(version: i16, error_code: i16, answers: &[(String, i32, Option<Code>)], why: &str) -> ElectLeadersResponse {
    let mut r = ElectLeadersResponse::default();
    if version >= 1 {
        r.error_code = error_code;
    }
    for (topic, p, code) in answers {
        if r.replica_election_results.last().is_none_or(|t| t.topic.0.as_str() != topic) {
            let mut t = ReplicaElectionResult::default();
            t.topic = topic_name(topic);
            r.replica_election_results.push(t);
        }
        let mut pr = PartitionResult::default();
        pr.partition_id = *p;
        if let Some(code) = code {
            pr.error_code = code.code();
            pr.error_message = Some(s(why));
        }
        r.replica_election_results.last_mut().expect("pushed above").partition_result.push(pr);
    }
    r
}
