//! No operation succeeds without a credential and an ACL allowing it: every acknowledged write
//! of a client that authenticated (`History::principals`) was by a user with a credential and
//! allowed WRITE on its topic, and every record such a consumer received was allowed READ, in
//! the state of some moment a broker could have been authenticating and authorizing with.
//! Brokers apply ACL and credential changes from the metadata log as they replay it, so a
//! broker may lag: it holds the state after some prefix of the admin's changes (one at a
//! time, so in the log in the admin's order), up to every change invoked before the operation
//! completed — never one not yet invoked. (A connection authenticated before its user's
//! credential was deleted goes on, as in Kafka: any earlier prefix covers it.) An operation no
//! prefix allows was let through by the authenticator or the authorizer, not by lag.
//!
//! The ACL semantics are modelled here on their own (Kafka's StandardAuthorizer, topic ACLs:
//! literal and prefixed names, the principal or `User:*`, any host, DENY before ALLOW, ALL and
//! an operation implying DESCRIBE), not taken from the broker's code, so a wrong rule there is
//! not also the checker's. Not a loss: nothing acknowledged is gone.

use crate::history::{History, Secured, SecurityChange, Violation};
use std::collections::BTreeSet;
use broker_core::security::acl::{Acl, Operation, PatternType, Permission, ResourceType};

/// Every authenticated write and read, against the ACL states a broker could hold.
pub fn authorized(h: &History, out: &mut Vec<Violation>) {
    if h.principals.is_empty() {
        return;
    }
    let states = states(&h.users, &h.security_changes);
    let allowed = |principal: &str, operation: Operation, topic: &str, at_ms: u64| {
        let invoked = h.security_changes.iter().filter(|c| c.invoke_ms <= at_ms).count();
        let user = principal.strip_prefix("User:").unwrap_or(principal);
        states[..=invoked].iter().any(|(users, acls)| users.contains(user) && allows(acls, principal, operation, topic))
    };
    for w in &h.writes {
        let (Some(principal), Some(offset)) = (h.principals.get(&w.process), w.acknowledged()) else { continue };
        if !allowed(principal, Operation::Write, &w.topic, w.complete_ms) {
            let detail = format!("{} ({principal}) had a write acknowledged at offset {offset}, which no ACLs of the run allowed by then", w.process);
            out.push(Violation { checker: "authorized", topic: w.topic.clone(), partition: w.partition, offsets: vec![offset], at_ms: w.complete_ms, detail, loss: false, acks: Some(w.acks) });
        }
    }
    for r in &h.reads {
        let Some(principal) = h.principals.get(&r.process) else { continue };
        if !allowed(principal, Operation::Read, &r.topic, r.at_ms) {
            let detail = format!("{} ({principal}) read offset {}, which no ACLs of the run allowed by then", r.process, r.offset);
            out.push(Violation { checker: "authorized", topic: r.topic.clone(), partition: r.partition, offsets: vec![r.offset], at_ms: r.at_ms, detail, loss: false, acks: None });
        }
    }
}

/// The users with credentials and the ACLs before any change, and after each prefix of them.
fn states(users: &BTreeSet<String>, changes: &[SecurityChange]) -> Vec<(BTreeSet<String>, Vec<Acl>)> {
    let mut out = vec![(users.clone(), Vec::new())];
    for c in changes {
        let (mut users, mut acls) = out.last().expect("starts with one").clone();
        match (&c.what, c.add) {
            (Secured::Acl(acl), add) => {
                acls.retain(|a| a != acl);
                if add {
                    acls.push(acl.clone());
                }
            }
            (Secured::User(user), true) => drop(users.insert(user.clone())),
            (Secured::User(user), false) => drop(users.remove(user)),
        }
        out.push((users, acls));
    }
    out
}

/// Kafka's rule for a topic, modelled: a matching DENY refuses; else a matching ALLOW of the
/// operation (or of ALL; any of READ, WRITE, ... for DESCRIBE) allows; else refused.
fn allows(acls: &[Acl], principal: &str, operation: Operation, topic: &str) -> bool {
    let matching = acls.iter().filter(|a| {
        let name = match a.pattern {
            PatternType::Literal => a.resource_name == topic || a.resource_name == "*",
            PatternType::Prefixed => topic.starts_with(&a.resource_name),
            _ => false,
        };
        a.resource_type == ResourceType::Topic && name && (a.principal == principal || a.principal == "User:*") && a.host == "*"
    });
    let mut allow = false;
    for a in matching {
        let covers = a.operation == operation || a.operation == Operation::All;
        let implies = operation == Operation::Describe && a.permission == Permission::Allow && a.operation != Operation::Describe;
        match a.permission {
            Permission::Deny if covers => return false,
            Permission::Allow if covers || implies => allow = true,
            _ => {}
        }
    }
    allow
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Outcome, Read, Write};

    fn acl(topic: &str, prefixed: bool, principal: &str, operation: Operation, permission: Permission) -> Acl {
        let pattern = if prefixed { PatternType::Prefixed } else { PatternType::Literal };
        Acl { resource_type: ResourceType::Topic, resource_name: topic.into(), pattern, principal: principal.into(), host: "*".into(), operation, permission }
    }

    fn write(topic: &str, complete_ms: u64) -> Write {
        Write { process: "producer-0".into(), topic: topic.into(), partition: 0, value: b"v".to_vec(), key: None, tombstone: false, acks: -1, idempotent: true, invoke_ms: complete_ms, complete_ms, outcome: Outcome::Ok(0), retry_refused: false }
    }

    fn change(add: bool, acl: Acl, invoke_ms: u64) -> SecurityChange {
        SecurityChange { add, what: Secured::Acl(acl), invoke_ms, complete_ms: Some(invoke_ms + 10) }
    }

    #[test]
    fn an_operation_counts_as_allowed_by_any_state_a_broker_could_hold() {
        let mut h = History::default();
        h.principals.insert("producer-0".into(), "User:alice".into());
        h.principals.insert("consumer-0".into(), "User:bob".into());
        h.users = ["alice".to_string(), "bob".to_string()].into();
        let allow = acl("orders", true, "User:alice", Operation::Write, Permission::Allow);
        let deny = acl("orders-audit", false, "User:alice", Operation::All, Permission::Deny);
        h.security_changes = vec![change(true, deny.clone(), 0), change(true, allow.clone(), 0), change(false, deny, 5_000)];
        // Allowed by prefix; denied until the deny's removal was invoked; allowed after it.
        h.writes = vec![write("orders-eu", 100), write("orders-audit", 100), write("orders-audit", 5_000), write("other", 6_000)];
        let mut unacked = write("other", 7_000);
        unacked.outcome = Outcome::Fail("TOPIC_AUTHORIZATION_FAILED".into());
        h.writes.push(unacked);
        h.reads = vec![Read { process: "consumer-0".into(), session: 0, topic: "orders".into(), partition: 0, offset: 3, value: Vec::new(), high_watermark: 4, at_ms: 9 }];
        let v = crate::checkers::judged(authorized, &h);
        let what: Vec<(&str, u64)> = v.iter().map(|v| (v.topic.as_str(), v.at_ms)).collect();
        assert_eq!(what, vec![("orders-audit", 100), ("other", 6_000), ("orders", 9)], "{v:#?}");
        // The allow before its deny: a broker holding only the allow lets alice through.
        h.security_changes.swap(0, 1);
        assert_eq!(crate::checkers::judged(authorized, &h).len(), 2, "orders-audit at 100 ms is allowed by the state with the allow alone");
        // A user without a credential yet: nothing of hers counts as allowed until it is added.
        h.users.remove("alice");
        assert_eq!(crate::checkers::judged(authorized, &h).len(), 5, "every acknowledged write of alice's, and bob's read");
        h.security_changes.insert(0, SecurityChange { add: true, what: Secured::User("alice".into()), invoke_ms: 0, complete_ms: Some(5) });
        assert_eq!(crate::checkers::judged(authorized, &h).len(), 2);
        let lag = [acl("orders", false, "User:alice", Operation::Write, Permission::Allow)];
        assert!(allows(&lag, "User:alice", Operation::Describe, "orders") && !allows(&lag, "User:alice", Operation::Read, "orders"));
        assert!(allows(&[acl("*", false, "User:*", Operation::All, Permission::Allow)], "User:bob", Operation::Read, "x"));
    }
}
