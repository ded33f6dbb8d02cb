//! KIP-848's topic checks that follow a group rather than a request, as Kafka 4 makes them
//! (KAFKA-18813): what a member's regular expression matches is cut to the topics its caller
//! may DESCRIBE — the node hands the group coordinator that set with the heartbeat, and the
//! coordinator only filters by it (`group::consumer`), never asking an authorizer — and a
//! ConsumerGroupDescribe of a group whose assignments hold a topic the caller may not DESCRIBE
//! is answered TOPIC_AUTHORIZATION_FAILED in that group's place. Decides from ACLs only; never
//! looks into a group.

use super::Access;
use crate::security::acl::{Operation, ResourceType};
use std::collections::BTreeSet;

/// Kafka's message for a described group holding a topic the caller may not DESCRIBE.
pub(in crate::node) const undescribable_group: &str = "The described group uses topics that the client is not authorized to describe.";

/// The topics of the image `access`'s caller may DESCRIBE; None: every topic (no caller to
/// check — the node's own, or a test's —, no authorizer, or a caller every check lets through).
/// One check per topic of the image, as ShareFetch's READ filter: asked of every heartbeat
/// from a restricted caller, since one that leaves its regex out (unchanged) still has one.
pub(in crate::node) fn describable(access: Option<&Access>) -> Option<BTreeSet<String>> {
    let a = access.filter(|a| !a.exempt())?;
    Some(a.topics.keys().filter(|t| a.can(Operation::Describe, ResourceType::Topic, t)).cloned().collect())
}
