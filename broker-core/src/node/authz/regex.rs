//! KIP-848's topic checks that follow a group rather than a request, as Kafka 4 makes them
//! (KAFKA-18813): what a member's regular expression matches is cut to the topics its caller
//! may DESCRIBE — the node checks the expression's matches only and hands the group
//! coordinator those it may see with the heartbeat; the coordinator only filters by them
//! (`group::consumer`), never asking an authorizer — and a ConsumerGroupDescribe of a group
//! whose assignments hold a topic the caller may not DESCRIBE is answered
//! TOPIC_AUTHORIZATION_FAILED in that group's place. Decides from ACLs only, over the topics
//! it is handed; never looks into a group, never checks every topic of the image.

use super::Access;
use crate::security::acl::{Operation, ResourceType};
use std::collections::BTreeSet;

/// Kafka's message (ConsumerGroupDescribe) for a described group holding a topic the caller
/// may not DESCRIBE.
pub(in crate::node) const undescribable_group: &str = "The group has described topic(s) that the client is not authorized to describe.";

/// `access`'s caller when a check may refuse it; None: no caller to check (the node's own, or
/// a test's), no authorizer, or a caller every check lets through — nothing to filter.
pub(in crate::node) fn restricted<'b, 'a>(access: Option<&'b Access<'a>>) -> Option<&'b Access<'a>> {
    access.filter(|a| !a.exempt())
}

/// Which of `topics` (a member's regex matches) `a`'s caller may DESCRIBE: one check each.
pub(in crate::node) fn describable(a: &Access, topics: BTreeSet<String>) -> BTreeSet<String> {
    topics.into_iter().filter(|t| a.can(Operation::Describe, ResourceType::Topic, t)).collect()
}

/// Whether `a`'s caller may DESCRIBE every one of `topics` (a described group's).
pub(in crate::node) fn may_describe_all<'t>(a: &Access, mut topics: impl Iterator<Item = &'t String>) -> bool {
    topics.all(|t| a.can(Operation::Describe, ResourceType::Topic, t))
}
