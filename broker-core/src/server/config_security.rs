//! The security part of the broker's settings (docs/security.md): its listeners and their
//! protocols, SASL's mechanisms, the bootstrap credentials (salted here, at the edge, with the
//! OS's randomness) and the broker's own login, with the rules that keep a SASL listener from
//! being bypassed.

use super::config::{listen_default, Flags};
use crate::broker::BrokerConfig;
use std::net::SocketAddr;

/// One of the file's security settings (all strings), by its Kafka name.
pub(super) fn file_setting(f: &mut Flags, key: &str, text: String) -> Result<(), String> {
    match key {
        "sasl.enabled.mechanisms" => f.sasl_enabled_mechanisms = Some(text),
        "listener.security.protocol.map" => f.listener_security_protocol_map = Some(text),
        "sasl.mechanism.inter.broker.protocol" => f.sasl_mechanism_inter_broker_protocol = Some(text),
        "sasl.jaas.config" => f.sasl_jaas_config = Some(text),
        "ssl.keystore.type" => f.ssl_keystore_type = Some(text),
        "ssl.keystore.location" => f.ssl_keystore_location = Some(text.into()),
        "ssl.truststore.type" => f.ssl_truststore_type = Some(text),
        "ssl.truststore.location" => f.ssl_truststore_location = Some(text.into()),
        "ssl.client.auth" => f.ssl_client_auth = Some(text),
        "authorizer.class.name" => f.authorizer_class_name = Some(text),
        "super.users" => f.super_users = Some(text),
        _ => return Err(format!("config file: unknown setting '{key}' (known: {})", super::config::FILE_SETTINGS.join(", "))),
    }
    Ok(())
}

/// The client listener's address (`--listen`, or `--listeners` with its protocol and an
/// optional CONTROLLER listener).
pub(super) fn resolve_listeners(f: &Flags, c: &mut BrokerConfig) -> Result<SocketAddr, String> {
    Ok(match (&f.listeners, f.listen) {
        (Some(_), Some(_)) => return Err("--listen and --listeners both given: --listen is the one-PLAINTEXT-listener shorthand".into()),
        (Some(l), None) => {
            let listeners = crate::security::parse_listeners(l, f.listener_security_protocol_map.as_deref())?;
            let (controllers, clients): (Vec<_>, Vec<_>) = listeners.into_iter().partition(|l| l.name == crate::security::controller_listener_name);
            c.security.controller_listener = controllers.first().map(|l| l.addr);
            c.security.controller_protocol = controllers.first().map_or(crate::security::Protocol::Plaintext, |l| l.protocol);
            c.security.listener = clients[0].protocol;
            clients[0].addr
        }
        (None, listen) => listen.unwrap_or_else(|| listen_default.parse().expect("valid default")),
    })
}

/// SASL's settings: the mechanisms, the bootstrap credentials (salted here, at the edge, with
/// the OS's randomness), the broker's own login, and the controller listener's rule.
pub(super) fn resolve_security(f: &Flags, c: &mut BrokerConfig) -> Result<(), String> {
    use crate::security::{AddScram, Protocol};
    if let Some(names) = &f.sasl_enabled_mechanisms {
        c.security.sasl_mechanisms = crate::security::parse_mechanisms(names)?;
    }
    for text in &f.add_scram {
        let add = AddScram::parse(text)?;
        c.security.scram_bootstrap.push((add.user.clone(), add.credential(&rand::random::<[u8; 16]>())));
    }
    resolve_tls(f, c)?;
    c.security.reauth_ms = f.connections_max_reauth_ms.unwrap_or(0);
    let sasl = c.security.listener.is_sasl() || c.security.controller_protocol.is_sasl();
    if sasl {
        let mechanism = match &f.sasl_mechanism_inter_broker_protocol {
            Some(name) => crate::security::scram::Mechanism::named(name).ok_or_else(|| format!("sasl.mechanism.inter.broker.protocol: {name} is not SCRAM-SHA-256 or SCRAM-SHA-512"))?,
            None => crate::security::scram::Mechanism::Sha256,
        };
        let jaas = f.sasl_jaas_config.as_deref().ok_or("a SASL listener needs --sasl-jaas-config: this broker's own user, with which it authenticates to the cluster's SASL listeners")?;
        c.security.inter_broker = Some(crate::security::SaslLogin::from_jaas(mechanism, jaas)?);
    }
    // A PLAINTEXT controller listener beside a secured one would let anyone past SASL or TLS
    // (it takes the controller APIs, forwarded requests among them): only a one-node
    // cluster's own, on loopback, where it carries nothing but the node's links to itself.
    let one_node = c.voters.len() == 1 && c.voters.contains_key(&c.node_id);
    let listener = c.security.listener;
    if let (Some(addr), Protocol::Plaintext, true) = (c.security.controller_listener, c.security.controller_protocol, listener != Protocol::Plaintext) {
        if !(one_node && addr.ip().is_loopback()) {
            return Err(format!("a PLAINTEXT CONTROLLER listener beside a {} one must be a one-node cluster's own, on loopback ({addr} is not): map it with --listener-security-protocol-map CONTROLLER:{}", listener.name(), listener.name()));
        }
    }
    resolve_authorizer(f, c)
}

/// TLS's settings: PEM stores only, a keystore for every TLS listener, a truststore for
/// `ssl.client.auth` and for the node's own links to TLS listeners. The files are read when
/// the node starts (`server::tls`), which names a file that cannot be used.
fn resolve_tls(f: &Flags, c: &mut BrokerConfig) -> Result<(), String> {
    for (name, kind) in [("ssl.keystore.type", &f.ssl_keystore_type), ("ssl.truststore.type", &f.ssl_truststore_type)] {
        if let Some(kind) = kind.as_deref().filter(|k| *k != "PEM") {
            return Err(format!("{name}={kind}: only PEM stores are read (Kafka 2.7+'s type PEM: the key and certificates as PEM text)"));
        }
    }
    let tls = &mut c.security.tls;
    tls.keystore = f.ssl_keystore_location.clone();
    tls.truststore = f.ssl_truststore_location.clone();
    if let Some(auth) = &f.ssl_client_auth {
        tls.client_auth = crate::security::ClientAuth::named(auth).ok_or_else(|| format!("ssl.client.auth={auth}: none, requested or required"))?;
    }
    let secured = [c.security.listener, c.security.controller_protocol].into_iter().find(|p| p.is_tls());
    if let Some(protocol) = secured {
        let tls = &c.security.tls;
        if tls.keystore.is_none() {
            return Err(format!("a {} listener needs --ssl-keystore-location: a PEM file with this node's key and certificate chain", protocol.name()));
        }
        if tls.truststore.is_none() {
            return Err(format!("a {} listener needs --ssl-truststore-location: this node links to the cluster's {} listeners (its own among them) and must know whom to trust", protocol.name(), protocol.name()));
        }
    }
    if c.security.tls.client_auth != crate::security::ClientAuth::None && c.security.tls.truststore.is_none() {
        return Err("ssl.client.auth=requested or required needs --ssl-truststore-location: the authorities whose client certificates are accepted".into());
    }
    Ok(())
}

/// The name of Kafka's KRaft authorizer, which `authorizer.class.name` takes to turn ACLs on.
pub const standard_authorizer: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The authorizer: StandardAuthorizer's name turns it on (the older AclAuthorizer's is refused
/// with the hint), `super.users`, `allow.everyone.if.no.acl.found`. With it on, the broker's
/// own user is a super user, as Kafka's docs tell operators to make it: the node's links must
/// pass whatever the ACLs say.
fn resolve_authorizer(f: &Flags, c: &mut BrokerConfig) -> Result<(), String> {
    let a = &mut c.security.authorizer;
    a.enabled = match f.authorizer_class_name.as_deref().map(str::trim) {
        None | Some("") => false,
        Some(name) if name == standard_authorizer => true,
        Some(other) => return Err(format!("authorizer.class.name={other}: only {standard_authorizer} is built (ACLs in the metadata log)")),
    };
    if let Some(users) = &f.super_users {
        a.super_users = crate::security::acl::parse_super_users(users)?;
    }
    a.allow_if_no_acl = f.allow_everyone_if_no_acl_found.unwrap_or(false);
    if a.enabled {
        if let Some(login) = &c.security.inter_broker {
            a.super_users.insert(format!("User:{}", login.user));
        }
    }
    Ok(())
}
