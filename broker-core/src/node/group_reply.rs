//! A group request's response under construction: what it answers once the coordinator's
//! tickets are answered (a rebalance completing, a commit replicated), and what it answers when
//! its wait runs out. Wire encoding only; the waiting is `waiting.rs`'s, the decisions the
//! coordinator's.

use crate::protocol::Response;
use crate::group::{Answer, JoinAnswer, Ticket};
use crate::kafka::Code;
use crate::protocol::s;
use kafka_protocol::messages::alter_share_group_offsets_response::AlterShareGroupOffsetsResponse;
use kafka_protocol::messages::delete_groups_response::DeleteGroupsResponse;
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponse;
use kafka_protocol::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_protocol::messages::offset_commit_response::OffsetCommitResponse;
use kafka_protocol::messages::offset_delete_response::OffsetDeleteResponse;
use kafka_protocol::messages::sync_group_response::SyncGroupResponse;
use kafka_protocol::messages::txn_offset_commit_response::TxnOffsetCommitResponse;
use kafka_protocol::messages::ApiKey;
use uuid::Uuid;

/// A Kafka code as the wire carries it.
pub(super) fn code(c: Code) -> i16 {
    c.code()
}

/// The code of an outcome: 0 for success.
pub(super) fn err_code(r: &Result<(), Code>) -> i16 {
    r.err().map_or(0, code)
}

/// A group response under construction, finished with its tickets' answers.
#[derive(Debug)]
pub(crate) enum GroupReply {
    Join { version: i16, cid: i32 },
    Sync { version: i16, cid: i32, protocol: Option<(Option<String>, Option<String>)> },
    Commit { version: i16, cid: i32, response: OffsetCommitResponse, slots: Vec<(usize, usize)> },
    TxnCommit { version: i16, cid: i32, response: TxnOffsetCommitResponse, slots: Vec<(usize, usize)> },
    DeleteGroups { version: i16, cid: i32, response: DeleteGroupsResponse, slots: Vec<(Ticket, usize)> },
    OffsetDelete { version: i16, cid: i32, response: OffsetDeleteResponse },
    ConsumerHeartbeat { version: i16, cid: i32 },
    /// A ShareGroupHeartbeat of `group` (named in its error message).
    ShareHeartbeat { version: i16, cid: i32, group: String },
    /// A share-partition leader's ReadShareGroupState or WriteShareGroupState of one partition.
    ReadShareState { version: i16, cid: i32, topic_id: Option<Uuid>, partition: i32 },
    WriteShareState { version: i16, cid: i32, topic_id: Option<Uuid>, partition: i32 },
    /// AlterShareGroupOffsets and DeleteShareGroupOffsets (`share_offsets`): the partitions
    /// (topics) that wait for the write.
    AlterShareOffsets { version: i16, cid: i32, response: AlterShareGroupOffsetsResponse, slots: Vec<(usize, usize)> },
    DeleteShareOffsets { version: i16, cid: i32, response: DeleteShareGroupOffsetsResponse, slots: Vec<usize> },
}

impl GroupReply {
    /// What a request still waiting when its time is up is answered.
    pub(crate) fn expired(&self) -> Answer {
        match self {
            GroupReply::Join { .. } => Answer::Join(JoinAnswer::error(Code::RebalanceInProgress, "")),
            GroupReply::Sync { .. } => Answer::Sync(Err(Code::RebalanceInProgress)),
            GroupReply::ConsumerHeartbeat { .. } | GroupReply::ShareHeartbeat { .. } => Answer::Consumer(Err(Code::CoordinatorNotAvailable)),
            GroupReply::ReadShareState { .. } | GroupReply::WriteShareState { .. } => Answer::ShareState(Err(Code::CoordinatorNotAvailable)),
            _ => Answer::Written(Err(Code::CoordinatorNotAvailable)),
        }
    }

    /// The response, given the answers (in ticket order; all of them).
    pub(crate) fn finish(self, answers: &[Answer]) -> Response {
        let written = |i: usize| match answers.get(i) {
            Some(Answer::Written(r)) => err_code(r),
            _ => 0,
        };
        match self {
            GroupReply::Join { version, cid } => {
                let a = match answers.first() {
                    Some(Answer::Join(a)) => a.clone(),
                    _ => JoinAnswer::error(Code::UnknownServerError, ""),
                };
                Response::new(ApiKey::JoinGroup, version, cid, join_response(version, a))
            }
            GroupReply::Sync { version, cid, protocol } => {
                let mut r = SyncGroupResponse::default();
                match answers.first() {
                    Some(Answer::Sync(Ok(a))) => r.assignment = a.clone(),
                    Some(Answer::Sync(Err(e))) => r.error_code = code(*e),
                    _ => r.error_code = code(Code::UnknownServerError),
                }
                if version >= 5 && r.error_code == 0 {
                    if let Some((t, n)) = protocol {
                        r.protocol_type = t.as_deref().map(s);
                        r.protocol_name = n.as_deref().map(s);
                    }
                }
                Response::new(ApiKey::SyncGroup, version, cid, r)
            }
            GroupReply::Commit { version, cid, mut response, slots } => {
                let e = written(0);
                for (ti, pi) in slots {
                    response.topics[ti].partitions[pi].error_code = e;
                }
                Response::new(ApiKey::OffsetCommit, version, cid, response)
            }
            GroupReply::TxnCommit { version, cid, mut response, slots } => {
                // KIP-588: before v2 a fenced producer is told INVALID_PRODUCER_EPOCH.
                let e = match written(0) {
                    e if e == code(Code::ProducerFenced) && version < 2 => code(Code::InvalidProducerEpoch),
                    e => e,
                };
                for (ti, pi) in slots {
                    response.topics[ti].partitions[pi].error_code = e;
                }
                Response::new(ApiKey::TxnOffsetCommit, version, cid, response)
            }
            GroupReply::DeleteGroups { version, cid, mut response, slots } => {
                for (i, (_, slot)) in slots.iter().enumerate() {
                    response.results[*slot].error_code = written(i);
                }
                Response::new(ApiKey::DeleteGroups, version, cid, response)
            }
            GroupReply::ConsumerHeartbeat { version, cid } => Response::new(ApiKey::ConsumerGroupHeartbeat, version, cid, super::consumer_handlers::heartbeat_response(answers.first())),
            GroupReply::ShareHeartbeat { version, cid, group } => Response::new(ApiKey::ShareGroupHeartbeat, version, cid, super::share_handlers::heartbeat_response(&group, answers.first())),
            GroupReply::ReadShareState { version, cid, topic_id, partition } => Response::new(ApiKey::ReadShareGroupState, version, cid, super::share_handlers::read_response(topic_id, partition, answers.first())),
            GroupReply::WriteShareState { version, cid, topic_id, partition } => Response::new(ApiKey::WriteShareGroupState, version, cid, super::share_handlers::write_response(topic_id, partition, answers.first())),
            GroupReply::AlterShareOffsets { version, cid, response, slots } => Response::new(ApiKey::AlterShareGroupOffsets, version, cid, super::share_offsets::alter_finished(response, slots, answers.first())),
            GroupReply::DeleteShareOffsets { version, cid, response, slots } => Response::new(ApiKey::DeleteShareGroupOffsets, version, cid, super::share_offsets::delete_finished(response, slots, answers.first())),
            GroupReply::OffsetDelete { version, cid, mut response } => {
                match answers.first() {
                    Some(Answer::Written(Err(Code::GroupSubscribedToTopic))) => {
                        // Those refused already (authorization) keep their code.
                        response.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()).filter(|p| p.error_code == 0).for_each(|p| p.error_code = code(Code::GroupSubscribedToTopic));
                    }
                    _ => response.error_code = written(0),
                }
                Response::new(ApiKey::OffsetDelete, version, cid, response)
            }
        }
    }
}

fn join_response(version: i16, a: JoinAnswer) -> JoinGroupResponse {
    let mut r = JoinGroupResponse::default();
    r.error_code = a.error.map_or(0, code);
    r.generation_id = a.generation;
    r.protocol_type = if version >= 7 { a.protocol_type.as_deref().map(s) } else { None };
    r.protocol_name = a.protocol.as_deref().map(s).or_else(|| (version < 7).then(|| s("")));
    r.leader = s(&a.leader);
    r.member_id = s(&a.member_id);
    r.skip_assignment = version >= 9 && a.skip_assignment;
    r.members = a
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            let mut m = JoinGroupResponseMember::default();
            m.member_id = s(&id);
            m.group_instance_id = instance.as_deref().map(s);
            m.metadata = metadata;
            m
        })
        .collect();
    r
}

