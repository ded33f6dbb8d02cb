//! The answers of the topics, groups and keys a check took out of a request
//! ([`Check::Without`]), given back after the handler: each asked partition (or group, or
//! key) answered with its authorization error, in the answer's shape. Builds answers only;
//! decides nothing.

use super::Refused;
use crate::protocol::s;

/// After ListOffsets: each refused topic's asked partitions answered with its error.
pub(in crate::node) fn list_offsets_after(resp: &mut kafka_protocol::messages::ListOffsetsResponse, refused: &[Refused]) {
    use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    for (name, code, asked) in refused {
        let partitions = asked.iter().map(|p| ListOffsetsPartitionResponse::default().with_partition_index(*p).with_error_code(code.code()).with_offset(-1).with_timestamp(-1)).collect();
        resp.topics.push(ListOffsetsTopicResponse::default().with_name(s(name).into()).with_partitions(partitions));
    }
}

/// After DescribeGroups, OffsetFetch (v8+) or a batched FindCoordinator handled without the
/// groups or keys the caller may not DESCRIBE: each answered with its error, as Kafka does.
pub(in crate::node) fn describe_groups_after(resp: &mut kafka_protocol::messages::DescribeGroupsResponse, refused: &[Refused]) {
    use kafka_protocol::messages::describe_groups_response::DescribedGroup;
    resp.groups.extend(refused.iter().map(|(g, code, _)| DescribedGroup::default().with_group_id(s(g).into()).with_error_code(code.code())));
}

/// After a consumer's OffsetForLeaderEpoch handled without its refused topics: each asked
/// partition of theirs answered with the error.
pub(in crate::node) fn offset_for_leader_epoch_after(resp: &mut kafka_protocol::messages::OffsetForLeaderEpochResponse, refused: &[Refused]) {
    use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
    for (name, code, partitions) in refused {
        let each = partitions.iter().map(|p| EpochEndOffset::default().with_partition(*p).with_error_code(code.code()).with_leader_epoch(-1).with_end_offset(-1)).collect();
        resp.topics.push(OffsetForLeaderTopicResult::default().with_topic(crate::protocol::topic_name(name)).with_partitions(each));
    }
}

pub(in crate::node) fn offset_fetch_after(resp: &mut kafka_protocol::messages::OffsetFetchResponse, refused: &[Refused]) {
    use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
    resp.groups.extend(refused.iter().map(|(g, code, _)| OffsetFetchResponseGroup::default().with_group_id(s(g).into()).with_error_code(code.code())));
}

pub(in crate::node) fn find_coordinator_after(resp: &mut kafka_protocol::messages::FindCoordinatorResponse, refused: &[Refused]) {
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    let each = refused.iter().map(|(k, code, _)| Coordinator::default().with_key(s(k)).with_node_id((-1).into()).with_port(-1).with_error_code(code.code()).with_error_message(Some(s("not authorized"))));
    resp.coordinators.extend(each);
}
