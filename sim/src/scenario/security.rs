//! The scenario's principals and ACLs (issue 28): users with SCRAM credentials, the topic ACLs
//! the admin creates before the workload, and ACL changes during the run. Declarations and
//! their validation only; `cluster::security` runs them.

use super::{phase_ms_max, Scenario};
use crate::history::Secured;
use broker_core::security::acl::{Acl, Operation, PatternType, Permission, ResourceType};
use serde::{Deserialize, Serialize};

/// Most users and most ACLs (initial plus changes) a scenario may declare.
pub const users_max: usize = 16;
pub const acls_max: usize = 64;

/// With `security`, every broker has a SASL_PLAINTEXT listener beside its PLAINTEXT one and
/// the StandardAuthorizer on: clients with a `user` authenticate as it (SCRAM-SHA-256) on the
/// SASL listener and are held to the ACLs; the harness's own clients stay on PLAINTEXT, whose
/// `User:ANONYMOUS` is the one super user (as a cluster that trusts its inner network names it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySpec {
    /// Users (password `{name}-secret`), bootstrapped into the metadata as `--add-scram` does
    /// (a change may add more).
    pub users: Vec<String>,
    /// ACLs the admin creates once the topics exist, before any client starts.
    #[serde(default)]
    pub acls: Vec<AclSpec>,
    /// ACL changes the admin makes during the safety phase, each retried until answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<AclChangeSpec>,
}

/// A topic ACL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclSpec {
    /// `User:alice`, or `User:*`.
    pub principal: String,
    pub topic: String,
    /// A PREFIXED pattern (else LITERAL).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefixed: bool,
    /// read, write, describe or all.
    pub operation: String,
    /// A DENY (else ALLOW).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deny: bool,
}

/// One change: at `at_ms` (from the run's start) the admin adds or removes an ACL, or stores
/// or deletes a user's credential (AlterUserScramCredentials, SCRAM-SHA-256).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclChangeSpec {
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add: Option<AclSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<AclSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_user: Option<String>,
}

impl AclSpec {
    /// The ACL this declares, as the broker keeps it.
    pub fn acl(&self) -> Result<Acl, String> {
        let operation = match self.operation.as_str() {
            "read" => Operation::Read,
            "write" => Operation::Write,
            "describe" => Operation::Describe,
            "all" => Operation::All,
            other => return Err(format!("security: acl operation '{other}' is not read, write, describe or all")),
        };
        if !self.principal.starts_with("User:") || self.principal.len() == "User:".len() {
            return Err(format!("security: acl principal {:?} is not User:NAME or User:*", self.principal));
        }
        let pattern = if self.prefixed { PatternType::Prefixed } else { PatternType::Literal };
        let permission = if self.deny { Permission::Deny } else { Permission::Allow };
        let acl = Acl { resource_type: ResourceType::Topic, resource_name: self.topic.clone(), pattern, principal: self.principal.clone(), host: "*".into(), operation, permission };
        match acl.invalid() {
            Some(why) => Err(format!("security: acl {self:?}: {why}")),
            None => Ok(acl),
        }
    }
}

impl AclChangeSpec {
    /// Whether it adds (else removes), and what.
    pub fn change(&self) -> Result<(bool, Secured), String> {
        match (&self.add, &self.remove, &self.add_user, &self.remove_user) {
            (Some(a), None, None, None) => Ok((true, Secured::Acl(a.acl()?))),
            (None, Some(r), None, None) => Ok((false, Secured::Acl(r.acl()?))),
            (None, None, Some(u), None) => Ok((true, Secured::User(u.clone()))),
            (None, None, None, Some(u)) => Ok((false, Secured::User(u.clone()))),
            _ => Err(format!("security: the change at {} ms names exactly one of add, remove, add_user and remove_user", self.at_ms)),
        }
    }
}

/// The password of a scenario's user.
pub fn password(user: &str) -> String {
    format!("{user}-secret")
}

impl Scenario {
    pub(super) fn validate_security(&self) -> Result<(), String> {
        // The users clients may name: the cluster's first ones and those a change adds.
        let added = self.security.iter().flat_map(|s| s.changes.iter().filter_map(|c| c.add_user.as_deref()));
        let users: Vec<&str> = self.security.iter().flat_map(|s| s.users.iter().map(String::as_str)).chain(added).collect();
        if let Some(p) = self.producers.iter().find(|p| p.user.is_some() && p.transactional) {
            return Err(format!("scenario: a transactional producer of {} with a user: only plain producers and consumers authenticate for now", p.topic));
        }
        let named = self.producers.iter().filter_map(|p| p.user.as_deref()).chain(self.consumers.iter().filter_map(|c| c.user.as_deref()));
        for user in named {
            if !users.contains(&user) {
                return Err(format!("scenario: client user '{user}' is neither among security.users nor added by a change"));
            }
        }
        let Some(s) = &self.security else { return Ok(()) };
        if s.users.is_empty() || s.users.len() > users_max {
            return Err(format!("security: {} users; 1..={users_max}", s.users.len()));
        }
        if let Some(bad) = users.iter().find(|u| u.is_empty() || !u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            return Err(format!("security: user {bad:?} must be letters, digits, - and _"));
        }
        if s.acls.len() + s.changes.len() > acls_max {
            return Err(format!("security: {} ACLs and changes; at most {acls_max}", s.acls.len() + s.changes.len()));
        }
        for a in &s.acls {
            a.acl()?;
        }
        for c in &s.changes {
            c.change()?;
            if c.at_ms > phase_ms_max {
                return Err(format!("security: a change at {} ms is past {phase_ms_max}", c.at_ms));
            }
        }
        Ok(())
    }
}
