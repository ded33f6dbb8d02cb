//! The security part of the broker's settings (docs/security.md): its listeners and their
//! protocols, SASL's mechanisms, the bootstrap credentials (salted here, at the edge, with the
//! OS's randomness) and the broker's own login, with the rules that keep a SASL listener from
//! being bypassed.

use super::config::{listen_default, Flags};
use crate::broker::BrokerConfig;
use std::net::SocketAddr;

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
    let sasl = c.security.listener == Protocol::SaslPlaintext || c.security.controller_protocol == Protocol::SaslPlaintext;
    if sasl {
        let mechanism = match &f.sasl_mechanism_inter_broker_protocol {
            Some(name) => crate::security::scram::Mechanism::named(name).ok_or_else(|| format!("sasl.mechanism.inter.broker.protocol: {name} is not SCRAM-SHA-256 or SCRAM-SHA-512"))?,
            None => crate::security::scram::Mechanism::Sha256,
        };
        let jaas = f.sasl_jaas_config.as_deref().ok_or("a SASL listener needs --sasl-jaas-config: this broker's own user, with which it authenticates to the cluster's SASL listeners")?;
        c.security.inter_broker = Some(crate::security::SaslLogin::from_jaas(mechanism, jaas)?);
    }
    // A PLAINTEXT controller listener beside a SASL one would let anyone past SASL (it takes
    // the controller APIs, forwarded requests among them): only a one-node cluster's own, on
    // loopback, where it carries nothing but the node's links to itself.
    let one_node = c.voters.len() == 1 && c.voters.contains_key(&c.node_id);
    if let (Some(addr), Protocol::Plaintext, true) = (c.security.controller_listener, c.security.controller_protocol, c.security.listener == Protocol::SaslPlaintext) {
        if !(one_node && addr.ip().is_loopback()) {
            return Err(format!("a PLAINTEXT CONTROLLER listener beside a SASL one must be a one-node cluster's own, on loopback ({addr} is not): map it to SASL_PLAINTEXT with --listener-security-protocol-map CONTROLLER:SASL_PLAINTEXT"));
        }
    }
    Ok(())
}
