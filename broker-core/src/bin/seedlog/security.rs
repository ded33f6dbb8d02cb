//! `seedlog acls` and `seedlog users`: an operator's ACLs and SCRAM users on a running cluster,
//! like kafka-acls.sh and kafka-configs.sh's `--entity-type users`. Logs in as the operator's
//! user (`--sasl-*`) over TLS when given a CA (`--ssl-ca`), sends CreateAcls, DescribeAcls,
//! DeleteAcls, AlterUserScramCredentials or DescribeUserScramCredentials, and prints what the
//! cluster answered; a refusal exits 1 with Kafka's error name.

use broker_core::client::{ClientError, Conn};
use broker_core::security::scram::Mechanism;
use broker_core::security::SaslLogin;
use bytes::Bytes;
use clap::{Args, Subcommand};
use kafka_protocol::messages::alter_user_scram_credentials_request::{AlterUserScramCredentialsRequest, ScramCredentialDeletion, ScramCredentialUpsertion};
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use kafka_protocol::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol::messages::describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest;
use kafka_protocol::protocol::StrBytes;
use std::time::Duration;

type Res = Result<(), Box<dyn std::error::Error>>;

/// How to reach and log in to the cluster.
#[derive(Args)]
pub struct Login {
    /// Any broker of the cluster, host:port (the controller is found from it for changes).
    #[arg(long, global = true, default_value = "127.0.0.1:9092")]
    pub bootstrap: String,
    /// SCRAM-SHA-256 or SCRAM-SHA-512 (with --sasl-username and --sasl-password).
    #[arg(long, global = true, default_value = "SCRAM-SHA-256")]
    pub sasl_mechanism: String,
    #[arg(long, global = true)]
    pub sasl_username: Option<String>,
    #[arg(long, global = true)]
    pub sasl_password: Option<String>,
    /// The CA certificate (PEM) of a TLS listener: connect over TLS.
    #[arg(long, global = true)]
    pub ssl_ca: Option<std::path::PathBuf>,
    /// This client's certificate (PEM), for a listener with ssl.client.auth (with --ssl-key).
    #[arg(long, global = true, requires = "ssl_key")]
    pub ssl_cert: Option<std::path::PathBuf>,
    /// This client's private key (PEM, unencrypted).
    #[arg(long, global = true, requires = "ssl_cert")]
    pub ssl_key: Option<std::path::PathBuf>,
    /// How long to wait for each answer.
    #[arg(long, global = true, default_value_t = 30_000)]
    pub timeout_ms: u64,
}

/// Which resource an ACL names, as kafka-acls.sh takes it.
#[derive(Args, Clone)]
pub struct Resource {
    #[arg(long, group = "resource")]
    pub topic: Option<String>,
    #[arg(long, group = "resource")]
    pub group: Option<String>,
    #[arg(long, group = "resource")]
    pub transactional_id: Option<String>,
    #[arg(long, group = "resource")]
    pub cluster: bool,
    /// The name is a prefix (PREFIXED), not a literal name.
    #[arg(long)]
    pub prefixed: bool,
}

#[derive(Subcommand)]
pub enum AclsCmd {
    /// Every ACL (or those on one resource), one per line.
    List {
        #[command(flatten)]
        resource: Resource,
    },
    /// Allows (or with --deny denies) PRINCIPAL an operation on a resource.
    Add {
        #[command(flatten)]
        resource: Resource,
        /// `User:alice`, or `User:*` for everyone.
        #[arg(long)]
        principal: String,
        /// Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
        /// AlterConfigs, IdempotentWrite or All.
        #[arg(long)]
        operation: String,
        #[arg(long, default_value = "*")]
        host: String,
        #[arg(long)]
        deny: bool,
    },
    /// Removes the ACLs on a resource (of one principal and operation, if named).
    Remove {
        #[command(flatten)]
        resource: Resource,
        #[arg(long)]
        principal: Option<String>,
        #[arg(long)]
        operation: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum UsersCmd {
    /// Every user with a SCRAM credential, and its mechanisms and iterations.
    List,
    /// Adds a user's credential for one mechanism (or replaces it).
    Add {
        name: String,
        #[arg(long)]
        password: String,
        #[arg(long, default_value = "SCRAM-SHA-256")]
        mechanism: String,
        #[arg(long, default_value_t = 4096)]
        iterations: i32,
    },
    /// Deletes a user's credential for one mechanism.
    Delete {
        name: String,
        #[arg(long, default_value = "SCRAM-SHA-256")]
        mechanism: String,
    },
}

const operations: [(&str, i8); 11] =
    [("All", 2), ("Read", 3), ("Write", 4), ("Create", 5), ("Delete", 6), ("Alter", 7), ("Describe", 8), ("ClusterAction", 9), ("DescribeConfigs", 10), ("AlterConfigs", 11), ("IdempotentWrite", 12)];
const resource_types: [(&str, i8); 4] = [("Topic", 2), ("Group", 3), ("Cluster", 4), ("TransactionalId", 5)];

fn operation_code(name: &str) -> Result<i8, String> {
    operations.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, c)| *c).ok_or_else(|| format!("operation {name}: one of {}", operations.map(|(n, _)| n).join(", ")))
}

fn name_of(table: &[(&str, i8)], code: i8) -> String {
    table.iter().find(|(_, c)| *c == code).map_or(format!("{code}"), |(n, _)| n.to_string())
}

impl Resource {
    /// (type, name, pattern) for a filter: ANY resource when none is named.
    fn filter(&self) -> (i8, Option<String>, i8) {
        let pattern = if self.prefixed { 4 } else { 3 };
        match (&self.topic, &self.group, &self.transactional_id, self.cluster) {
            (Some(t), ..) => (2, Some(t.clone()), pattern),
            (_, Some(g), ..) => (3, Some(g.clone()), pattern),
            (_, _, Some(x), _) => (5, Some(x.clone()), pattern),
            (.., true) => (4, Some("kafka-cluster".into()), 3),
            _ => (1, None, 1),
        }
    }

    fn named(&self) -> Result<(i8, String, i8), String> {
        match self.filter() {
            (1, ..) => Err("name a resource: --topic, --group, --transactional-id or --cluster".into()),
            (t, name, p) => Ok((t, name.expect("a named resource"), p)),
        }
    }
}

/// A connection to `addr`, over TLS with `--ssl-ca`, logged in with `--sasl-*`.
async fn connect(login: &Login, addr: std::net::SocketAddr) -> Result<Conn, Box<dyn std::error::Error>> {
    let timeout = Duration::from_millis(login.timeout_ms);
    let mut conn = match &login.ssl_ca {
        None => Conn::connect(addr, "seedlog-admin", timeout).await?,
        Some(ca) => {
            let identity = login.ssl_cert.as_deref().zip(login.ssl_key.as_deref());
            Conn::connect_tls(addr, None, "seedlog-admin", timeout, &broker_core::server::tls::client(ca, identity)?).await?
        }
    };
    if let (Some(user), Some(password)) = (&login.sasl_username, &login.sasl_password) {
        let mechanism = Mechanism::named(&login.sasl_mechanism).ok_or_else(|| format!("--sasl-mechanism {}: SCRAM-SHA-256 or SCRAM-SHA-512", login.sasl_mechanism))?;
        let cnonce: String = (0..24).map(|_| char::from(b'a' + rand::random::<u8>() % 26)).collect();
        conn.authenticate(&SaslLogin { mechanism, user: user.clone(), password: password.clone() }, &cnonce).await?;
    }
    Ok(conn)
}

fn addr(login: &Login) -> Result<std::net::SocketAddr, String> {
    login.bootstrap.parse().map_err(|_| format!("--bootstrap {}: host:port with an IP address", login.bootstrap))
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// Ok for code 0; else Kafka's error by name, number and message.
fn kafka(code: i16, message: Option<&StrBytes>) -> Res {
    match ClientError::kafka(code, message.map_or(String::new(), |m| m.to_string())) {
        _ if code == 0 => Ok(()),
        ClientError::Kafka { code, message } => Err(format!("{code:?} (error code {}): {message}", code.code()).into()),
        e => Err(e.to_string().into()),
    }
}

pub fn acls(login: Login, cmd: AclsCmd) -> Res {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut conn = connect(&login, addr(&login)?).await?;
        match cmd {
            AclsCmd::List { resource } => {
                let (t, name, pattern) = resource.filter();
                let req = DescribeAclsRequest::default().with_resource_type_filter(t).with_resource_name_filter(name.map(|n| s(&n))).with_pattern_type_filter(pattern).with_principal_filter(None).with_host_filter(None).with_operation(1).with_permission_type(1);
                let r = conn.send(&req).await?;
                kafka(r.error_code, r.error_message.as_ref())?;
                for res in &r.resources {
                    for a in &res.acls {
                        let pattern = if res.pattern_type == 4 { "PREFIXED" } else { "LITERAL" };
                        let permission = if a.permission_type == 2 { "DENY" } else { "ALLOW" };
                        println!("{} {:?} {pattern}: {permission} {} {} from {}", name_of(&resource_types, res.resource_type), res.resource_name.as_str(), a.principal.as_str(), name_of(&operations, a.operation), a.host.as_str());
                    }
                }
                Ok(())
            }
            AclsCmd::Add { resource, principal, operation, host, deny } => {
                let (t, name, pattern) = resource.named()?;
                let c = AclCreation::default().with_resource_type(t).with_resource_name(s(&name)).with_resource_pattern_type(pattern).with_principal(s(&principal)).with_host(s(&host)).with_operation(operation_code(&operation)?).with_permission_type(if deny { 2 } else { 3 });
                let r = conn.send(&CreateAclsRequest::default().with_creations(vec![c])).await?;
                let result = r.results.first().ok_or("the cluster answered no result")?;
                kafka(result.error_code, result.error_message.as_ref())
            }
            AclsCmd::Remove { resource, principal, operation } => {
                let (t, name, pattern) = resource.named()?;
                let f = DeleteAclsFilter::default().with_resource_type_filter(t).with_resource_name_filter(Some(s(&name))).with_pattern_type_filter(pattern).with_principal_filter(principal.map(|p| s(&p))).with_host_filter(None).with_operation(operation.map_or(Ok(1), |o| operation_code(&o))?).with_permission_type(1);
                let r = conn.send(&DeleteAclsRequest::default().with_filters(vec![f])).await?;
                let result = r.filter_results.first().ok_or("the cluster answered no result")?;
                kafka(result.error_code, result.error_message.as_ref())?;
                println!("removed {} ACL(s)", result.matching_acls.len());
                Ok(())
            }
        }
    })
}

pub fn users(login: Login, cmd: UsersCmd) -> Res {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut conn = connect(&login, addr(&login)?).await?;
        let mechanism = |name: &str| Mechanism::named(name).ok_or_else(|| format!("--mechanism {name}: SCRAM-SHA-256 or SCRAM-SHA-512"));
        match cmd {
            UsersCmd::List => {
                let r = conn.send(&DescribeUserScramCredentialsRequest::default().with_users(None)).await?;
                kafka(r.error_code, r.error_message.as_ref())?;
                for u in &r.results {
                    let infos: Vec<String> = u.credential_infos.iter().map(|i| format!("{} ({} iterations)", Mechanism::from_kafka_type(i.mechanism).map_or("?", |m| m.name()), i.iterations)).collect();
                    println!("{}: {}", u.user.as_str(), infos.join(", "));
                }
                Ok(())
            }
            UsersCmd::Add { name, password, mechanism: m, iterations } => {
                let m = mechanism(&m)?;
                let salt: [u8; 16] = rand::random();
                let up = ScramCredentialUpsertion::default().with_name(s(&name)).with_mechanism(m.kafka_type()).with_iterations(iterations).with_salt(Bytes::copy_from_slice(&salt)).with_salted_password(Bytes::from(m.salted_password(password.as_bytes(), &salt, iterations)));
                let r = conn.send(&AlterUserScramCredentialsRequest::default().with_upsertions(vec![up])).await?;
                let result = r.results.first().ok_or("the cluster answered no result")?;
                kafka(result.error_code, result.error_message.as_ref())
            }
            UsersCmd::Delete { name, mechanism: m } => {
                let del = ScramCredentialDeletion::default().with_name(s(&name)).with_mechanism(mechanism(&m)?.kafka_type());
                let r = conn.send(&AlterUserScramCredentialsRequest::default().with_deletions(vec![del])).await?;
                let result = r.results.first().ok_or("the cluster answered no result")?;
                kafka(result.error_code, result.error_message.as_ref())
            }
        }
    })
}

/// `seedlog bench-authorizer`: the cost of one authorization with `acls` ACLs in the image
/// (a LITERAL WRITE per topic and user, a PREFIXED READ per team, a group READ per user),
/// found by lookups (`acl::covering`, what the broker does) and by a scan of them all.
pub fn bench_authorizer(acls: usize, checks: usize) -> Res {
    use broker_core::security::acl::{authorize, covering, Acl, AuthorizerConfig, Operation, PatternType, Permission, ResourceType};
    use std::time::Instant;
    let users = 100;
    let mut set = std::collections::BTreeSet::new();
    let mut i = 0;
    while set.len() < acls {
        let user = format!("User:u{}", i % users);
        let (resource_type, name, pattern, operation) = match i % 3 {
            0 => (ResourceType::Topic, format!("team{}-topic{}", i % 50, i), PatternType::Literal, Operation::Write),
            1 => (ResourceType::Topic, format!("team{}-", i % 50), PatternType::Prefixed, Operation::Read),
            _ => (ResourceType::Group, format!("group{i}"), PatternType::Literal, Operation::Read),
        };
        set.insert(Acl { resource_type, resource_name: name, pattern, principal: user, host: "*".into(), operation, permission: Permission::Allow });
        i += 1;
    }
    let config = AuthorizerConfig { enabled: true, super_users: Default::default(), allow_if_no_acl: false, ..Default::default() };
    let names: Vec<String> = (0..checks).map(|k| format!("team{}-topic{}", k % 50, (k * 7919) % (acls.max(1) * 2))).collect();
    let run = |scan: bool| {
        let start = Instant::now();
        let mut allowed = 0usize;
        for (k, name) in names.iter().enumerate() {
            let principal = format!("User:u{}", k % users);
            let ok = match scan {
                true => authorize(&config, set.iter(), &principal, "10.0.0.1", Operation::Write, ResourceType::Topic, name),
                false => authorize(&config, covering(&set, ResourceType::Topic, name), &principal, "10.0.0.1", Operation::Write, ResourceType::Topic, name),
            };
            allowed += ok as usize;
        }
        (start.elapsed().as_nanos() as f64 / names.len() as f64, allowed)
    };
    let (lookup_ns, a) = run(false);
    let (scan_ns, b) = run(true);
    if a != b {
        return Err(format!("the lookup allowed {a} checks and the scan {b}").into());
    }
    println!("{acls} ACLs, {checks} checks ({a} allowed): lookup {lookup_ns:.0} ns/check, scan {scan_ns:.0} ns/check");
    Ok(())
}
