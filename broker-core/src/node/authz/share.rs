//! KIP-932's topic checks, as Kafka makes them: ShareFetch and ShareAcknowledge need READ on
//! each topic they touch (a refused one is answered TOPIC_AUTHORIZATION_FAILED per partition
//! and neither fetched, acknowledged nor added to the share session; the handler is told which
//! through a [`Denied`] naming every topic of the image the caller may not READ, since a
//! session's partitions are not named in the request); ShareGroupHeartbeat needs DESCRIBE on
//! each topic it subscribes to, as KIP-848's heartbeat does. Decides from ACLs only; the
//! group's own READ check is `authz`'s.

use super::{Access, Denied};
use crate::kafka::Code;
use crate::security::acl::{Operation, ResourceType};
use kafka_protocol::messages::ShareGroupHeartbeatRequest;

/// Every topic of the image the caller may not READ (ShareFetch, ShareAcknowledge).
pub(super) fn unreadable(a: &Access) -> Denied {
    let mut denied = Denied::none();
    for name in a.topics.keys().filter(|t| !a.can(Operation::Read, ResourceType::Topic, t)) {
        denied.topics.insert(name.clone(), (Code::TopicAuthorizationFailed, a.why(Operation::Read, ResourceType::Topic, name)));
    }
    denied
}

/// Why a share heartbeat is refused: a subscribed topic the member may not DESCRIBE.
pub(super) fn undescribable(a: &Access, req: &ShareGroupHeartbeatRequest) -> Option<String> {
    let t = req.subscribed_topic_names.iter().flatten().find(|t| !a.can(Operation::Describe, ResourceType::Topic, t))?;
    Some(a.why(Operation::Describe, ResourceType::Topic, t))
}
