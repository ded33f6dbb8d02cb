//! Who a connection is: SASL authentication (`sasl`: the per-connection state machine of
//! SaslHandshake and SaslAuthenticate) over SCRAM and PLAIN (`scram`: credentials, the
//! exchange, PLAIN checked against the stored SCRAM credential), and the operator's bootstrap
//! credentials (`--add-scram`, as `kafka-storage format` takes them); listeners and their
//! protocols; who a TLS client's certificate names (`x509`). Decisions only: the shell draws
//! nonces and salts, reads key files, runs TLS, reads sockets and answers.

pub mod acl;
pub mod sasl;
pub mod scram;
pub mod users;
pub mod x509;

use scram::{Credential, Mechanism};

/// Who this broker is when it connects to another on a SASL listener
/// (`sasl.mechanism.inter.broker.protocol` and the login module's `username`/`password`).
#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin {
    pub mechanism: Mechanism,
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    // Never the password, in a log line or a test failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SaslLogin({} as {})", self.mechanism.name(), self.user)
    }
}

impl SaslLogin {
    /// From Kafka's `sasl.jaas.config` text: `...ScramLoginModule required username="u"
    /// password="p";` (only the two options are read).
    pub fn from_jaas(mechanism: Mechanism, jaas: &str) -> Result<SaslLogin, String> {
        let option = |name: &str| {
            let at = jaas.find(&format!("{name}="))? + name.len() + 1;
            let rest = jaas[at..].strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        };
        match (option("username"), option("password")) {
            (Some(user), Some(password)) if !user.is_empty() && !password.is_empty() => Ok(SaslLogin { mechanism, user, password }),
            _ => Err("--sasl-jaas-config: expected username=\"...\" password=\"...\" (as Kafka's ScramLoginModule takes them)".into()),
        }
    }
}

/// A listener's security protocol (Kafka's names): TLS or not, SASL or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl Protocol {
    pub fn named(name: &str) -> Option<Protocol> {
        match name {
            "PLAINTEXT" => Some(Protocol::Plaintext),
            "SSL" => Some(Protocol::Ssl),
            "SASL_PLAINTEXT" => Some(Protocol::SaslPlaintext),
            "SASL_SSL" => Some(Protocol::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl => "SSL",
            Protocol::SaslPlaintext => "SASL_PLAINTEXT",
            Protocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's SecurityProtocol id (BrokerRegistration's `security_protocol`).
    pub fn id(self) -> i16 {
        match self {
            Protocol::Plaintext => 0,
            Protocol::Ssl => 1,
            Protocol::SaslPlaintext => 2,
            Protocol::SaslSsl => 3,
        }
    }

    /// Whether a connection authenticates by SASL before anything else.
    pub fn is_sasl(self) -> bool {
        matches!(self, Protocol::SaslPlaintext | Protocol::SaslSsl)
    }

    /// Whether the connection's bytes go through TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Protocol::Ssl | Protocol::SaslSsl)
    }
}

/// `ssl.client.auth`: whether a TLS listener asks clients for a certificate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientAuth {
    #[default]
    None,
    /// Asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// A client without a certificate the truststore vouches for is refused in the handshake.
    Required,
}

impl ClientAuth {
    pub fn named(name: &str) -> Option<ClientAuth> {
        match name {
            "none" => Some(ClientAuth::None),
            "requested" => Some(ClientAuth::Requested),
            "required" => Some(ClientAuth::Required),
            _ => None,
        }
    }
}

/// Where a node's TLS identity and trust come from (Kafka 2.7+'s PEM stores): the shell reads
/// them when the node starts (`server::tls`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// `ssl.keystore.location` (type PEM): the private key and the certificate chain.
    pub keystore: Option<std::path::PathBuf>,
    /// `ssl.key.password`: the keystore's private key is encrypted (PKCS#8) with it.
    pub key_password: Option<Secret>,
    /// `ssl.truststore.location` (type PEM): the certificates of the authorities this node
    /// trusts, for clients' certificates and for the brokers it connects to.
    pub truststore: Option<std::path::PathBuf>,
    pub client_auth: ClientAuth,
}

/// A setting that must not be logged (a password): its Debug shows none of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Who may connect, and how they prove it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityConfig {
    /// The client listeners (`--listeners`; CONTROLLER aside), each with its protocol.
    pub listeners: Vec<Listener>,
    /// `inter.broker.listener.name`: the listener the node's links to brokers use, and its
    /// protocol (every node of a cluster is configured alike).
    pub inter_broker_listener: String,
    pub inter_broker_protocol: Protocol,
    /// The controllers' own listener (`CONTROLLER://…` in `--listeners`), if any, and its
    /// protocol.
    pub controller_listener: Option<std::net::SocketAddr>,
    pub controller_protocol: Protocol,
    /// `sasl.enabled.mechanisms` on a SASL listener. Kafka's default is GSSAPI, which is not
    /// built; SCRAM's two are the default here, and PLAIN (a password in clear on a plaintext
    /// listener) only when asked for.
    pub sasl_mechanisms: Vec<sasl::Mech>,
    /// The credentials `--add-scram` asked for, salted by the shell: written to the metadata log
    /// by the first active controller of a cluster being formed (`kafka-storage format
    /// --add-scram`), never again.
    pub scram_bootstrap: Vec<(String, Credential)>,
    /// How this broker authenticates to other brokers' SASL listeners (and to its own).
    pub inter_broker: Option<SaslLogin>,
    /// The TLS listeners' and links' key, certificates and trust.
    pub tls: TlsFiles,
    /// Whether and how requests are authorized (ACLs: `acl`).
    pub authorizer: acl::AuthorizerConfig,
    /// `connections.max.reauth.ms` (KIP-368): how long a SASL authentication lasts before the
    /// client must authenticate again on its connection; 0, Kafka's default: for ever.
    pub reauth_ms: u64,
}

impl Default for SecurityConfig {
    fn default() -> SecurityConfig {
        SecurityConfig { listeners: Vec::new(), inter_broker_listener: Protocol::Plaintext.name().into(), inter_broker_protocol: Protocol::Plaintext, controller_listener: None, controller_protocol: Protocol::Plaintext, sasl_mechanisms: vec![sasl::Mech::Scram(Mechanism::Sha256), sasl::Mech::Scram(Mechanism::Sha512)], scram_bootstrap: Vec::new(), inter_broker: None, tls: TlsFiles::default(), authorizer: acl::AuthorizerConfig::default(), reauth_ms: 0 }
    }
}

/// The listener name Kafka's KRaft examples give the controllers' own listener
/// (`controller.listener.names`).
pub const controller_listener_name: &str = "CONTROLLER";

/// One entry of `--listeners`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub protocol: Protocol,
    pub addr: std::net::SocketAddr,
}

/// `--listeners` (Kafka's `listeners`): `NAME://host:port,...`, each name's protocol from
/// `map` (`listener.security.protocol.map`, `NAME:PROTOCOL,...`), where PLAINTEXT, SSL,
/// SASL_PLAINTEXT and SASL_SSL name themselves and CONTROLLER is PLAINTEXT unless mapped. At
/// least one client listener, and at most one CONTROLLER listener (which the controller link
/// and the metadata follower use: the quorum's voters default to it).
pub fn parse_listeners(text: &str, map: Option<&str>) -> Result<Vec<Listener>, String> {
    let bad = |why: String| format!("--listeners {text:?}: {why}");
    let mut protocols: Vec<(String, Protocol)> = [Protocol::Plaintext, Protocol::Ssl, Protocol::SaslPlaintext, Protocol::SaslSsl].iter().map(|p| (p.name().to_string(), *p)).collect();
    protocols.push((controller_listener_name.into(), Protocol::Plaintext));
    for entry in map.unwrap_or_default().split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry.split_once(':').ok_or_else(|| format!("listener.security.protocol.map {entry:?}: expected NAME:PROTOCOL"))?;
        let protocol = Protocol::named(protocol).ok_or_else(|| format!("listener.security.protocol.map {entry:?}: the protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"))?;
        protocols.retain(|(n, _)| n != name);
        protocols.push((name.to_string(), protocol));
    }
    let mut out: Vec<Listener> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, addr) = entry.split_once("://").ok_or_else(|| bad(format!("{entry:?} is not NAME://host:port")))?;
        let protocol = protocols.iter().find(|(n, _)| n == name).map(|(_, p)| *p).ok_or_else(|| bad(format!("listener {name} has no protocol in listener.security.protocol.map")))?;
        let addr = addr.parse().map_err(|_| bad(format!("{addr:?} is not host:port with an IP address")))?;
        if out.iter().any(|l| l.name == name) {
            return Err(bad(format!("listener {name} named twice")));
        }
        out.push(Listener { name: name.to_string(), protocol, addr });
    }
    if !out.iter().any(|l| l.name != controller_listener_name) {
        return Err(bad(format!("no client listener (only {controller_listener_name})")));
    }
    if out.len() > crate::controller::broker_listeners_max {
        return Err(bad(format!("{} listeners; at most {}", out.len(), crate::controller::broker_listeners_max)));
    }
    Ok(out)
}

/// `--advertised-listeners` (Kafka's `advertised.listeners`): `NAME://host:port,...`, where
/// the host may be a name; never the unroutable 0.0.0.0 or ::, as Kafka refuses.
pub fn parse_advertised(text: &str) -> Result<Vec<crate::metadata::Endpoint>, String> {
    let mut out: Vec<crate::metadata::Endpoint> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: &str| format!("--advertised-listeners {entry:?}: {why}");
        let (name, addr) = entry.split_once("://").ok_or_else(|| bad("expected NAME://host:port"))?;
        let (host, port) = addr.rsplit_once(':').ok_or_else(|| bad("expected NAME://host:port"))?;
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number up to 65535"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_unspecified()) {
            return Err(bad("a client cannot connect to an empty or unspecified (0.0.0.0, ::) host"));
        }
        if out.iter().any(|e| e.name == name) {
            return Err(bad("the listener is named twice"));
        }
        out.push(crate::metadata::Endpoint { name: name.to_string(), host: host.to_string(), port: i32::from(port) });
    }
    Ok(out)
}

/// `sasl.enabled.mechanisms`: a comma-separated list of mechanisms this broker implements.
pub fn parse_mechanisms(text: &str) -> Result<Vec<sasl::Mech>, String> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = sasl::Mech::named(name).ok_or_else(|| format!("sasl.enabled.mechanisms: {name} is not supported (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN)"))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err("sasl.enabled.mechanisms names no mechanism".into());
    }
    Ok(out)
}

/// Iterations of a bootstrap credential when `--add-scram` names none (Kafka's default).
pub const bootstrap_iterations_default: i32 = 4096;

/// One `--add-scram` value: `SCRAM-SHA-256=[name=admin,password=admin-secret]`, with optional
/// `iterations=N` and `salt=BASE64` inside the brackets (as `kafka-storage format --add-scram`
/// takes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddScram {
    pub mechanism: Mechanism,
    pub user: String,
    pub password: String,
    pub iterations: i32,
    pub salt: Option<Vec<u8>>,
}

impl AddScram {
    pub fn parse(s: &str) -> Result<AddScram, String> {
        use base64::Engine;
        let bad = |why: &str| format!("--add-scram {s:?}: {why} (expected SCRAM-SHA-256=[name=NAME,password=PASSWORD])");
        let (mech, rest) = s.split_once('=').ok_or_else(|| bad("no mechanism"))?;
        let mechanism = Mechanism::named(mech.trim()).ok_or_else(|| bad("the mechanism is SCRAM-SHA-256 or SCRAM-SHA-512"))?;
        let inner = rest.trim().strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(|| bad("the settings go in [...]"))?;
        let (mut user, mut password, mut iterations, mut salt) = (None, None, bootstrap_iterations_default, None);
        for kv in inner.split(',') {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad("settings are key=value"))?;
            let v = v.trim().trim_matches('"');
            match k.trim() {
                "name" => user = Some(v.to_string()),
                "password" => password = Some(v.to_string()),
                "iterations" => iterations = v.parse().map_err(|_| bad("iterations is a number"))?,
                "salt" => salt = Some(base64::engine::general_purpose::STANDARD.decode(v).map_err(|_| bad("salt is base64"))?),
                other => return Err(bad(&format!("unknown setting {other:?}"))),
            }
        }
        if !(scram::iterations_min..=scram::iterations_max).contains(&iterations) {
            return Err(bad(&format!("iterations must be {}..={}", scram::iterations_min, scram::iterations_max)));
        }
        let user = user.filter(|u| !u.is_empty()).ok_or_else(|| bad("no name"))?;
        let password = password.filter(|p| !p.is_empty()).ok_or_else(|| bad("no password"))?;
        Ok(AddScram { mechanism, user, password, iterations, salt })
    }

    /// The stored credential, salted with the given salt or else `random_salt` (the shell's).
    pub fn credential(&self, random_salt: &[u8]) -> Credential {
        Credential::new(self.mechanism, self.password.as_bytes(), self.salt.as_deref().unwrap_or(random_salt), self.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_scram_takes_kafkas_syntax() {
        let a = AddScram::parse("SCRAM-SHA-256=[name=admin,password=admin-secret]").unwrap();
        assert_eq!((a.mechanism, a.user.as_str(), a.password.as_str(), a.iterations, a.salt), (Mechanism::Sha256, "admin", "admin-secret", 4096, None));
        let b = AddScram::parse("SCRAM-SHA-512=[name=alice,password=\"p w\",iterations=8192,salt=c2FsdA==]").unwrap();
        assert_eq!((b.mechanism, b.password.as_str(), b.iterations, b.salt.as_deref()), (Mechanism::Sha512, "p w", 8192, Some(&b"salt"[..])));
        for bad in ["admin", "SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=name=a,password=b", "SCRAM-SHA-256=[name=a]", "SCRAM-SHA-256=[name=a,password=b,iterations=10]", "SCRAM-SHA-256=[name=a,password=b,color=red]"] {
            assert!(AddScram::parse(bad).is_err(), "{bad}");
        }
        assert!(b.credential(b"ignored").matches(b"p w"));
    }
}
