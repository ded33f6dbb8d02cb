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
        "ssl.key.password" => f.ssl_key_password = Some(text),
        "ssl.truststore.type" => f.ssl_truststore_type = Some(text),
        "ssl.truststore.location" => f.ssl_truststore_location = Some(text.into()),
        "ssl.client.auth" => f.ssl_client_auth = Some(text),
        "authorizer.class.name" => f.authorizer_class_name = Some(text),
        "super.users" => f.super_users = Some(text),
        "inter.broker.listener.name" => f.inter_broker_listener_name = Some(text),
        _ => return Err(format!("config file: unknown setting '{key}' (known: {})", super::config::FILE_SETTINGS.join(", "))),
    }
    Ok(())
}

/// The client listeners (`--listen`, or `--listeners` with their protocols and an optional
/// CONTROLLER listener), the inter-broker one among them, and what each advertises. Returns
/// the inter-broker listener's address.
pub(super) fn resolve_listeners(f: &Flags, c: &mut BrokerConfig) -> Result<SocketAddr, String> {
    use crate::security::{controller_listener_name, Listener, Protocol};
    let clients: Vec<Listener> = match (&f.listeners, f.listen) {
        (Some(_), Some(_)) => return Err("--listen and --listeners both given: --listen is the one-PLAINTEXT-listener shorthand".into()),
        (Some(l), None) => {
            let listeners = crate::security::parse_listeners(l, f.listener_security_protocol_map.as_deref())?;
            let (controllers, clients): (Vec<_>, Vec<_>) = listeners.into_iter().partition(|l| l.name == controller_listener_name);
            c.security.controller_listener = controllers.first().map(|l| l.addr);
            c.security.controller_protocol = controllers.first().map_or(Protocol::Plaintext, |l| l.protocol);
            clients
        }
        (None, listen) => vec![Listener { name: Protocol::Plaintext.name().into(), protocol: Protocol::Plaintext, addr: listen.unwrap_or_else(|| listen_default.parse().expect("valid default")) }],
    };
    // Kafka's default inter-broker listener is the one named by security.inter.broker.protocol's
    // default, PLAINTEXT; with one listener, it is that one.
    let inter = match (&f.inter_broker_listener_name, clients.as_slice()) {
        (Some(name), _) => name.clone(),
        (None, [one]) => one.name.clone(),
        (None, _) => Protocol::Plaintext.name().into(),
    };
    let Some(own) = clients.iter().find(|l| l.name == inter) else {
        let names: Vec<&str> = clients.iter().map(|l| l.name.as_str()).collect();
        return Err(format!("inter.broker.listener.name={inter} is not among the listeners ({}): name one with --inter-broker-listener-name", names.join(", ")));
    };
    let listen = own.addr;
    c.security.inter_broker_protocol = own.protocol;
    c.security.inter_broker_listener = inter.clone();
    c.advertised_listeners = advertised(f, &clients, &inter)?;
    let first = &c.advertised_listeners[0];
    (c.advertised_host, c.advertised_port) = (first.host.clone(), first.port);
    if c.advertised_listeners.len() == 1 {
        c.advertised_listeners.clear();
    }
    c.security.listeners = clients;
    Ok(listen)
}

/// Each client listener's advertised endpoint (`advertised.listeners`, `NAME://host:port,...`;
/// `--advertised host:port` with one listener; else the listener's own address), the
/// inter-broker listener's first.
fn advertised(f: &Flags, clients: &[crate::security::Listener], inter: &str) -> Result<Vec<crate::metadata::Endpoint>, String> {
    use crate::metadata::Endpoint;
    let given: Vec<Endpoint> = match (&f.advertised_listeners, &f.advertised) {
        (Some(_), Some(_)) => return Err("--advertised and --advertised-listeners both given: --advertised is the one-listener shorthand".into()),
        (Some(text), None) => crate::security::parse_advertised(text)?,
        (None, Some(one)) if clients.len() == 1 => {
            let bad = || format!("--advertised {one}: expected host:port");
            let (host, port) = one.rsplit_once(':').ok_or_else(bad)?;
            vec![Endpoint { name: clients[0].name.clone(), host: host.to_string(), port: port.parse().map_err(|_| bad())? }]
        }
        (None, Some(_)) => return Err("--advertised is the one-listener shorthand: with several listeners, give --advertised-listeners NAME://host:port,...".into()),
        (None, None) => Vec::new(),
    };
    if let Some(stray) = given.iter().find(|e| !clients.iter().any(|l| l.name == e.name)) {
        return Err(format!("advertised.listeners names {}, which is not a client listener in --listeners", stray.name));
    }
    let mut out: Vec<Endpoint> = clients
        .iter()
        .map(|l| given.iter().find(|e| e.name == l.name).cloned().unwrap_or_else(|| Endpoint { name: l.name.clone(), host: l.addr.ip().to_string(), port: i32::from(l.addr.port()) }))
        .collect();
    out.sort_by_key(|e| e.name != inter);
    Ok(out)
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
    // The node's own links go to the inter-broker and CONTROLLER listeners: a login for SASL there.
    let sasl = c.security.inter_broker_protocol.is_sasl() || c.security.controller_protocol.is_sasl();
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
    let secured = c.security.listeners.iter().map(|l| l.protocol).find(|p| *p != Protocol::Plaintext);
    if let (Some(addr), Protocol::Plaintext, Some(listener)) = (c.security.controller_listener, c.security.controller_protocol, secured) {
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
    tls.key_password = f.ssl_key_password.clone().map(crate::security::Secret);
    tls.truststore = f.ssl_truststore_location.clone();
    if let Some(auth) = &f.ssl_client_auth {
        tls.client_auth = crate::security::ClientAuth::named(auth).ok_or_else(|| format!("ssl.client.auth={auth}: none, requested or required"))?;
    }
    let security = &c.security;
    let served = security.listeners.iter().map(|l| l.protocol).chain([security.controller_protocol]).find(|p| p.is_tls());
    if let (Some(protocol), None) = (served, &security.tls.keystore) {
        return Err(format!("a {} listener needs --ssl-keystore-location: a PEM file with this node's key and certificate chain", protocol.name()));
    }
    let linked = [security.inter_broker_protocol, security.controller_protocol].into_iter().find(|p| p.is_tls());
    if let (Some(protocol), None) = (linked, &security.tls.truststore) {
        return Err(format!("a {} inter-broker or CONTROLLER listener needs --ssl-truststore-location: this node links to the cluster's {} listeners (its own among them) and must know whom to trust", protocol.name(), protocol.name()));
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
