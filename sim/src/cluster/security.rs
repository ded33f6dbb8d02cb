//! The scenario's principals and ACLs (`scenario::security`) in the run: each broker's SASL
//! listener, users and authorizer; the logins of the clients that name a user; and the admin
//! that creates the initial ACLs and makes the scheduled changes (ACLs, users' credentials),
//! each recorded in the history
//! with when it was invoked and acknowledged. Nothing here runs without `security`: a scenario
//! without it creates no node and draws nothing more, so its traces are what they were.

use super::recorder::Rec;
use crate::scenario::password;
use broker_core::security::scram::Mechanism;
use broker_core::security::SaslLogin;
use std::net::SocketAddr;
#[cfg(madsim)]
use {
    super::recorder::{event, now_ms},
    super::request_timeout_ms,
    super::topology::harness_node,
    crate::history::{Secured, SecurityChange},
    crate::scenario::Scenario,
    broker_core::broker::{BrokerConfig, PlantedBug},
    broker_core::client::admin,
    broker_core::metadata::Endpoint,
    broker_core::security::acl::{anonymous, AuthorizerConfig},
    broker_core::security::{AddScram, Listener, Protocol},
    madsim::task::JoinHandle,
    serde_json::json,
    std::net::IpAddr,
    std::time::Duration,
};

/// Each broker's SASL_PLAINTEXT listener port (PLAINTEXT stays on `topology::broker_port`).
pub(super) const sasl_port: u16 = 9093;

/// The ACL admin's node address.
#[cfg(madsim)]
const acl_admin_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 4));

/// Iterations of the users' SCRAM credentials: Kafka's minimum, the cheapest to simulate.
#[cfg(madsim)]
const iterations: i32 = 4096;

/// Gives a broker the scenario's security: a SASL_PLAINTEXT listener beside the PLAINTEXT
/// one (the inter-broker listener, as the harness's clients use), the users' credentials to
/// bootstrap (salted by name: the run must not draw), and the StandardAuthorizer with
/// `User:ANONYMOUS` the one super user — with DENY ignored where that bug is planted.
#[cfg(madsim)]
pub(super) fn configure(s: &Scenario, c: &mut BrokerConfig, ip: IpAddr, plaintext_port: u16, bug: Option<PlantedBug>) {
    let Some(spec) = &s.security else { return };
    let plaintext = Endpoint { name: Protocol::Plaintext.name().into(), host: ip.to_string(), port: i32::from(plaintext_port) };
    let sasl = Endpoint { name: Protocol::SaslPlaintext.name().into(), host: ip.to_string(), port: i32::from(sasl_port) };
    c.advertised_listeners = vec![plaintext, sasl];
    c.security.listeners = vec![
        Listener { name: Protocol::Plaintext.name().into(), protocol: Protocol::Plaintext, addr: SocketAddr::new(IpAddr::from([0, 0, 0, 0]), plaintext_port) },
        Listener { name: Protocol::SaslPlaintext.name().into(), protocol: Protocol::SaslPlaintext, addr: SocketAddr::new(IpAddr::from([0, 0, 0, 0]), sasl_port) },
    ];
    for user in &spec.users {
        let add = AddScram { mechanism: Mechanism::Sha256, user: user.clone(), password: password(user), iterations, salt: None };
        c.security.scram_bootstrap.push((user.clone(), add.credential(&salt_of(user))));
    }
    c.security.authorizer = AuthorizerConfig { enabled: true, super_users: [anonymous.to_string()].into(), allow_if_no_acl: false, ..AuthorizerConfig::default() };
    // Planted `AclDenyIgnored`: a rule chosen when the node is built.
    if bug == Some(PlantedBug::AclDenyIgnored) {
        c.security.authorizer.denies = broker_core::security::acl::Denies::Ignored;
    }
}

/// A user's salt: from the name, since the run must not draw (the simulator's users are not
/// secrets).
#[cfg(madsim)]
fn salt_of(user: &str) -> [u8; 16] {
    let mut salt = [0u8; 16];
    salt.iter_mut().zip(user.bytes().cycle()).for_each(|(s, b)| *s = b);
    salt
}

/// Who a client naming `user` logs in as.
pub(super) fn login(user: &str) -> SaslLogin {
    SaslLogin { mechanism: Mechanism::Sha256, user: user.to_string(), password: password(user) }
}

/// The addresses a client naming a user bootstraps from: every broker's SASL listener.
pub(super) fn sasl_brokers(brokers: &[SocketAddr]) -> Vec<SocketAddr> {
    brokers.iter().map(|b| SocketAddr::new(b.ip(), sasl_port)).collect()
}

/// Records that `process` authenticates as `user`.
pub(super) fn record_principal(rec: &Rec, process: &str, user: &str) {
    rec.lock().expect("recorder").history.principals.insert(process.to_string(), format!("User:{user}"));
}

/// Creates the scenario's initial ACLs (awaited: before any client starts), then starts the
/// admin that makes its changes at their times. None without `security`.
#[cfg(madsim)]
pub(super) async fn start(s: &Scenario, brokers: &[SocketAddr], rec: &Rec) -> Option<JoinHandle<()>> {
    let spec = s.security.clone()?;
    rec.lock().expect("recorder").history.users = spec.users.iter().cloned().collect();
    let node = harness_node("acl-admin", acl_admin_ip);
    let initial: Vec<(bool, Secured)> = spec.acls.iter().filter_map(|a| a.acl().ok()).map(|a| (true, Secured::Acl(a))).collect();
    let (b, r) = (brokers.to_vec(), rec.clone());
    let _ = node.spawn(async move { apply(&b, &initial, Some(initial_deadline_ms), &r).await }).await;
    let changes: Vec<(u64, (bool, Secured))> = spec.changes.iter().filter_map(|c| Some((c.at_ms, c.change().ok()?))).collect();
    let (b, r) = (brokers.to_vec(), rec.clone());
    Some(node.spawn(async move {
        for (at_ms, change) in changes {
            tokio::time::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms(&r)))).await;
            apply(&b, &[change], None, &r).await;
        }
    }))
}

/// How long the admin keeps trying to create the initial ACLs before the workload starts
/// anyway (their clients are then refused, and the checkers judge what happened).
#[cfg(madsim)]
const initial_deadline_ms: u64 = 10_000;

/// Makes each change in turn, retrying (on the next broker) until one is acknowledged or
/// `deadline_ms` from the first attempt passed: each is safe to repeat. Recorded as invoked
/// before the first attempt; acknowledged when it is.
#[cfg(madsim)]
async fn apply(brokers: &[SocketAddr], changes: &[(bool, Secured)], deadline_ms: Option<u64>, rec: &Rec) {
    let start = now_ms(rec);
    let timeout = Duration::from_millis(request_timeout_ms);
    let mut attempt = 0usize;
    for (add, what) in changes {
        let at = {
            let mut r = rec.lock().expect("recorder");
            let invoke_ms = r.now_ms();
            r.history.security_changes.push(SecurityChange { add: *add, what: what.clone(), invoke_ms, complete_ms: None });
            r.history.security_changes.len() - 1
        };
        loop {
            let addr = brokers[attempt % brokers.len()];
            attempt += 1;
            let result = match (add, what) {
                (true, Secured::Acl(acl)) => admin::create_acl(addr, acl, timeout).await,
                (false, Secured::Acl(acl)) => admin::delete_acl(addr, acl, timeout).await,
                (true, Secured::User(user)) => admin::upsert_scram(addr, user, &password(user), Mechanism::Sha256, (&salt_of(user), iterations), timeout).await,
                (false, Secured::User(user)) => admin::delete_scram(addr, user, Mechanism::Sha256, timeout).await,
            };
            match result {
                Ok(()) => {
                    let mut r = rec.lock().expect("recorder");
                    let complete_ms = r.now_ms();
                    r.history.security_changes[at].complete_ms = Some(complete_ms);
                    drop(r);
                    event(rec, "acl-admin", if *add { "added" } else { "removed" }, json!({"what": format!("{what:?}")}));
                    break;
                }
                Err(_) if deadline_ms.is_some_and(|d| now_ms(rec) - start > d) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}
