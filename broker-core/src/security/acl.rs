//! Who may do what: ACLs and the authorizer's decision, with the semantics of Kafka's
//! StandardAuthorizer. An ACL binds a resource pattern (a topic, group, transactional id or
//! the cluster; a literal name, `*`, or a prefix) to a principal, a host, an operation and
//! allow or deny. A request is allowed when the principal is a super user, or when some ACL
//! allows it and none denies it; deny wins. ALLOW on READ, WRITE, DELETE or ALTER implies
//! DESCRIBE, ALLOW on ALTER_CONFIGS implies DESCRIBE_CONFIGS, ALL is every operation. A resource
//! no ACL names at all is allowed only under `allow.everyone.if.no.acl.found`. Decisions only:
//! the ACLs come from the metadata image, the principal from the connection.

use std::collections::BTreeSet;

/// A resource type (Kafka's codes). ANY only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum ResourceType {
    Any,
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

impl ResourceType {
    pub fn from_code(code: i8) -> Option<ResourceType> {
        Some(match code {
            1 => ResourceType::Any,
            2 => ResourceType::Topic,
            3 => ResourceType::Group,
            4 => ResourceType::Cluster,
            5 => ResourceType::TransactionalId,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            ResourceType::Any => 1,
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
        }
    }
}

/// How an ACL's resource name matches. ANY and MATCH only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum PatternType {
    Any,
    Match,
    Literal,
    Prefixed,
}

impl PatternType {
    pub fn from_code(code: i8) -> Option<PatternType> {
        Some(match code {
            1 => PatternType::Any,
            2 => PatternType::Match,
            3 => PatternType::Literal,
            4 => PatternType::Prefixed,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            PatternType::Any => 1,
            PatternType::Match => 2,
            PatternType::Literal => 3,
            PatternType::Prefixed => 4,
        }
    }
}

/// An operation (Kafka's AclOperation codes). ANY only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Operation {
    Any,
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
}

impl Operation {
    const codes: [(Operation, i8); 12] = [
        (Operation::Any, 1),
        (Operation::All, 2),
        (Operation::Read, 3),
        (Operation::Write, 4),
        (Operation::Create, 5),
        (Operation::Delete, 6),
        (Operation::Alter, 7),
        (Operation::Describe, 8),
        (Operation::ClusterAction, 9),
        (Operation::DescribeConfigs, 10),
        (Operation::AlterConfigs, 11),
        (Operation::IdempotentWrite, 12),
    ];

    pub fn from_code(code: i8) -> Option<Operation> {
        Operation::codes.iter().find(|(_, c)| *c == code).map(|(o, _)| *o)
    }

    pub fn code(self) -> i8 {
        Operation::codes.iter().find(|(o, _)| *o == self).map_or(0, |(_, c)| *c)
    }

    /// Whether an ALLOW for `self` allows `wanted` (ALL; READ, WRITE, DELETE, ALTER imply
    /// DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
    fn allows(self, wanted: Operation) -> bool {
        use Operation::*;
        self == wanted || self == All || (wanted == Describe && matches!(self, Read | Write | Delete | Alter)) || (wanted == DescribeConfigs && self == AlterConfigs)
    }
}

/// ALLOW or DENY. ANY only in filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Permission {
    Any,
    Deny,
    Allow,
}

impl Permission {
    pub fn from_code(code: i8) -> Option<Permission> {
        Some(match code {
            1 => Permission::Any,
            2 => Permission::Deny,
            3 => Permission::Allow,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            Permission::Any => 1,
            Permission::Deny => 2,
            Permission::Allow => 3,
        }
    }
}

/// The name the cluster resource always has.
pub const cluster_name: &str = "kafka-cluster";

/// The name and host that match any.
pub const wildcard: &str = "*";

/// One ACL (Kafka's AccessControlEntryRecord without its id: an ACL is its content, and
/// creating one that exists changes nothing).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Acl {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern: PatternType,
    /// `User:alice`, or `User:*` for every principal.
    pub principal: String,
    /// An IP address, or `*`.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

impl Acl {
    /// Why this ACL cannot be stored (Kafka's INVALID_REQUEST reasons), if it cannot.
    pub fn invalid(&self) -> Option<String> {
        if self.resource_type == ResourceType::Any {
            return Some("an ACL names a resource type, not ANY".into());
        }
        if !matches!(self.pattern, PatternType::Literal | PatternType::Prefixed) {
            return Some("an ACL's pattern type is LITERAL or PREFIXED".into());
        }
        if matches!(self.operation, Operation::Any) || self.permission == Permission::Any {
            return Some("an ACL names an operation and ALLOW or DENY, not ANY".into());
        }
        if self.resource_name.is_empty() {
            return Some("an ACL's resource name is empty".into());
        }
        if self.resource_type == ResourceType::Cluster && self.resource_name != cluster_name {
            return Some(format!("the cluster resource is named {cluster_name}"));
        }
        if self.pattern == PatternType::Prefixed && self.resource_name == wildcard {
            return Some("a PREFIXED pattern cannot be '*' (use LITERAL '*')".into());
        }
        if !self.principal.contains(':') || self.principal.ends_with(':') {
            return Some(format!("principal {:?} is not TYPE:NAME (User:alice)", self.principal));
        }
        if self.host.is_empty() {
            return Some("an ACL's host is an address or '*'".into());
        }
        None
    }

    /// Whether this ACL's pattern covers the resource `name` of its type.
    fn covers(&self, name: &str) -> bool {
        match self.pattern {
            PatternType::Literal => self.resource_name == name || self.resource_name == wildcard,
            PatternType::Prefixed => name.starts_with(&self.resource_name),
            PatternType::Any | PatternType::Match => false,
        }
    }
}

/// A filter over ACLs (DescribeAcls, DeleteAcls): None and the ANY values match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    /// ANY: any pattern with exactly this name; MATCH: every ACL that would apply to a resource
    /// of this name (literal equal or `*`, prefixes of it); LITERAL or PREFIXED: exactly so.
    pub pattern: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclFilter {
    pub fn matches(&self, acl: &Acl) -> bool {
        let name = match (&self.resource_name, self.pattern) {
            (None, _) => true,
            (Some(n), PatternType::Match) => acl.covers(n),
            (Some(n), _) => acl.resource_name == *n,
        };
        let pattern = matches!(self.pattern, PatternType::Any | PatternType::Match) || self.pattern == acl.pattern;
        (self.resource_type == ResourceType::Any || self.resource_type == acl.resource_type)
            && name
            && pattern
            && self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == Operation::Any || self.operation == acl.operation)
            && (self.permission == Permission::Any || self.permission == acl.permission)
    }
}

/// The authorizer's settings (`authorizer.class.name`, `super.users`,
/// `allow.everyone.if.no.acl.found`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Whether requests are authorized at all (StandardAuthorizer named).
    pub enabled: bool,
    pub super_users: BTreeSet<String>,
    pub allow_if_no_acl: bool,
    /// Whether a matching DENY refuses (Kafka's rule); the simulator may plant the wrong one
    /// when it builds a node (`PlantedBug::AclDenyIgnored`).
    pub denies: Denies,
}

/// What a matching DENY ACL does. The wrong rule exists only in the simulated build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Denies {
    /// Deny wins over any allow (StandardAuthorizer).
    #[default]
    Win,
    /// Planted: DENY ACLs are skipped, so an allow elsewhere lets the principal through.
    #[cfg(madsim)]
    Ignored,
}

/// Who sent a request: the connection's principal (`User:alice` from SASL, `User:CN=…` from a
/// TLS client certificate, else [`anonymous`]) and the address it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub principal: String,
    pub host: std::net::IpAddr,
    /// The node's own link on its internal controller listener: allowed what it sends.
    pub internal: bool,
    /// The client listener the request came in on, whose endpoints the answers name (None:
    /// the inter-broker listener's, as for a forwarded request or the CONTROLLER listener).
    pub listener: Option<std::sync::Arc<str>>,
    /// The connection the request came on, unique in the process (None: a forwarded request,
    /// a test's): share sessions end when theirs closes.
    pub connection: Option<u64>,
}

/// The principal of a connection that proved nothing (PLAINTEXT, or TLS without a client
/// certificate), as Kafka names it.
pub const anonymous: &str = "User:ANONYMOUS";

/// Whether `principal` connecting from `host` may do `operation` on the resource `name` of
/// `resource_type`, under `acls` and `config`.
pub fn authorize<'a>(config: &AuthorizerConfig, acls: impl IntoIterator<Item = &'a Acl>, principal: &str, host: &str, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
    if !config.enabled || config.super_users.contains(principal) {
        return true;
    }
    let (mut any_acl, mut allowed) = (false, false);
    for acl in acls.into_iter().filter(|a| a.resource_type == resource_type && a.covers(name)) {
        any_acl = true;
        let who = (acl.principal == principal || acl.principal == "User:*") && (acl.host == host || acl.host == wildcard);
        if !who {
            continue;
        }
        match acl.permission {
            Permission::Deny if config.denies == Denies::Win && (acl.operation == operation || acl.operation == Operation::All) => return false,
            Permission::Allow if acl.operation.allows(operation) => allowed = true,
            _ => {}
        }
    }
    allowed || (!any_acl && config.allow_if_no_acl)
}

/// The ACLs of `acls` (sorted by type, name and pattern first, as the image keeps them) whose
/// pattern covers the resource `name` of `resource_type`: the literal name, the literal `*`,
/// and each prefix of the name as a PREFIXED pattern, found by range lookups (one per
/// distinct length of the name's prefixes) rather than a scan, so a check costs the same with
/// a hundred ACLs or a hundred thousand.
pub fn covering<'a>(acls: &'a BTreeSet<Acl>, resource_type: ResourceType, name: &'a str) -> impl Iterator<Item = &'a Acl> + 'a {
    let at = move |resource_name: &'a str, pattern: PatternType| {
        let first = Acl { resource_type, resource_name: resource_name.to_string(), pattern, principal: String::new(), host: String::new(), operation: Operation::Any, permission: Permission::Any };
        acls.range(first..).take_while(move |a| a.resource_type == resource_type && a.pattern == pattern && a.resource_name == resource_name)
    };
    let prefixes = name.char_indices().map(move |(i, c)| &name[..i + c.len_utf8()]);
    let literal = at(name, PatternType::Literal);
    let any_name = (name != wildcard).then(|| at(wildcard, PatternType::Literal)).into_iter().flatten();
    literal.chain(any_name).chain(prefixes.flat_map(move |p| at(p, PatternType::Prefixed)))
}

/// `super.users`: `User:alice;User:bob`.
pub fn parse_super_users(text: &str) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    for p in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        if !p.contains(':') || p.ends_with(':') {
            return Err(format!("super.users: {p:?} is not TYPE:NAME (User:alice)"));
        }
        out.insert(p.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Operation::*;
    use ResourceType::*;

    fn acl(resource_type: ResourceType, name: &str, pattern: PatternType, principal: &str, operation: Operation, permission: Permission) -> Acl {
        Acl { resource_type, resource_name: name.into(), pattern, principal: principal.into(), host: "*".into(), operation, permission }
    }

    fn on(allow_if_no_acl: bool) -> AuthorizerConfig {
        AuthorizerConfig { enabled: true, super_users: ["User:admin".to_string()].into(), allow_if_no_acl, ..Default::default() }
    }

    #[test]
    fn standard_authorizer_semantics() {
        let acls = [
            acl(Topic, "orders", PatternType::Literal, "User:alice", Write, Permission::Allow),
            acl(Topic, "pay-", PatternType::Prefixed, "User:alice", Read, Permission::Allow),
            acl(Topic, "pay-secret", PatternType::Literal, "User:alice", All, Permission::Deny),
            acl(Topic, "*", PatternType::Literal, "User:*", Describe, Permission::Allow),
            acl(Group, "g", PatternType::Literal, "User:bob", Read, Permission::Allow),
        ];
        let c = on(false);
        let can = |p: &str, op, t, n: &str| authorize(&c, &acls, p, "10.0.0.1", op, t, n);
        assert!(can("User:alice", Write, Topic, "orders"));
        assert!(!can("User:alice", Read, Topic, "orders"), "WRITE does not imply READ");
        assert!(can("User:alice", Describe, Topic, "orders"), "WRITE implies DESCRIBE (and so does the wildcard)");
        assert!(can("User:alice", Read, Topic, "pay-in"), "a prefix covers the topics under it");
        assert!(!can("User:alice", Read, Topic, "pay-secret"), "deny wins over allow");
        assert!(!can("User:alice", Describe, Topic, "pay-secret"), "DENY ALL denies DESCRIBE too, the wildcard's allow notwithstanding");
        assert!(!can("User:alice", Read, Topic, "pa"), "a prefix is not matched by a shorter name");
        assert!(can("User:carol", Describe, Topic, "anything"), "User:* on *");
        assert!(!can("User:carol", Write, Topic, "orders"));
        assert!(can("User:admin", Delete, Topic, "orders"), "super users bypass ACLs");
        assert!(can("User:bob", Read, Group, "g") && !can("User:bob", Read, Group, "h"));
        assert!(!can("User:bob", Create, Cluster, cluster_name), "no ACL on the cluster, and allow.everyone.if.no.acl.found is off");
        assert!(authorize(&on(true), &acls, "User:bob", "h", Create, Cluster, cluster_name), "no ACL names it: everyone");
        assert!(!authorize(&on(true), &acls, "User:bob", "h", Write, Topic, "orders"), "ACLs name it: only they decide");
        assert!(authorize(&AuthorizerConfig::default(), &acls, "User:bob", "h", Write, Topic, "pay-secret"), "no authorizer: everything");
    }

    #[test]
    fn covering_finds_by_lookup_what_a_scan_finds() {
        let mut acls = BTreeSet::new();
        for (t, name, pattern) in [(Topic, "orders", PatternType::Literal), (Topic, "*", PatternType::Literal), (Topic, "ord", PatternType::Prefixed), (Topic, "orders", PatternType::Prefixed), (Topic, "orders-eu", PatternType::Literal), (Topic, "o", PatternType::Prefixed), (Topic, "p", PatternType::Prefixed), (Group, "orders", PatternType::Literal), (Topic, "ordersx", PatternType::Prefixed), (Topic, "é", PatternType::Prefixed)] {
            for principal in ["User:alice", "User:bob"] {
                acls.insert(acl(t, name, pattern, principal, Read, Permission::Allow));
            }
        }
        for (t, name) in [(Topic, "orders"), (Topic, "orders-eu"), (Topic, "*"), (Topic, "x"), (Group, "orders"), (Topic, "éa"), (Cluster, cluster_name)] {
            let mut scanned: Vec<&Acl> = acls.iter().filter(|a| a.resource_type == t && a.covers(name)).collect();
            let mut found: Vec<&Acl> = covering(&acls, t, name).collect();
            scanned.sort();
            found.sort();
            assert_eq!(found, scanned, "{t:?} {name}");
        }
    }

    #[test]
    fn hosts_and_implications() {
        let mut only_here = acl(Topic, "t", PatternType::Literal, "User:alice", AlterConfigs, Permission::Allow);
        only_here.host = "10.0.0.1".into();
        let acls = [only_here];
        let c = on(false);
        assert!(authorize(&c, &acls, "User:alice", "10.0.0.1", DescribeConfigs, Topic, "t"), "ALTER_CONFIGS implies DESCRIBE_CONFIGS");
        assert!(!authorize(&c, &acls, "User:alice", "10.0.0.2", DescribeConfigs, Topic, "t"), "another host");
        assert!(!authorize(&c, &acls, "User:alice", "10.0.0.1", Describe, Topic, "t"), "ALTER_CONFIGS does not imply DESCRIBE");
    }

    #[test]
    fn filters_match_as_describe_and_delete_acls_take_them() {
        let lit = acl(Topic, "orders", PatternType::Literal, "User:alice", Write, Permission::Allow);
        let pre = acl(Topic, "ord", PatternType::Prefixed, "User:bob", Read, Permission::Deny);
        let any = AclFilter { resource_type: ResourceType::Any, resource_name: None, pattern: PatternType::Any, principal: None, host: None, operation: Operation::Any, permission: Permission::Any };
        assert!(any.matches(&lit) && any.matches(&pre));
        let matching = AclFilter { resource_type: Topic, resource_name: Some("orders".into()), pattern: PatternType::Match, ..any.clone() };
        assert!(matching.matches(&lit) && matching.matches(&pre), "MATCH: every ACL that applies to the topic");
        let exact = AclFilter { resource_name: Some("ord".into()), pattern: PatternType::Any, ..any.clone() };
        assert!(!exact.matches(&lit) && exact.matches(&pre));
        let bob_deny = AclFilter { principal: Some("User:bob".into()), permission: Permission::Deny, ..any.clone() };
        assert!(!bob_deny.matches(&lit) && bob_deny.matches(&pre));
    }

    #[test]
    fn what_cannot_be_an_acl() {
        let good = acl(Topic, "t", PatternType::Literal, "User:alice", Write, Permission::Allow);
        assert_eq!(good.invalid(), None);
        for (bad, why) in [
            (Acl { pattern: PatternType::Match, ..good.clone() }, "LITERAL or PREFIXED"),
            (Acl { resource_type: ResourceType::Any, ..good.clone() }, "not ANY"),
            (Acl { operation: Operation::Any, ..good.clone() }, "not ANY"),
            (Acl { principal: "alice".into(), ..good.clone() }, "TYPE:NAME"),
            (Acl { resource_type: Cluster, resource_name: "c".into(), ..good.clone() }, "kafka-cluster"),
            (Acl { pattern: PatternType::Prefixed, resource_name: "*".into(), ..good.clone() }, "PREFIXED"),
        ] {
            assert!(bad.invalid().is_some_and(|e| e.contains(why)), "{bad:?}: {:?}", bad.invalid());
        }
        assert_eq!(parse_super_users("User:admin; User:broker").unwrap().len(), 2);
        assert!(parse_super_users("admin").is_err());
    }
}
