//! One connection's SASL authentication on a SASL listener (KIP-43's SaslHandshake, KIP-152's
//! SaslAuthenticate, and the v0 handshake's raw tokens): which requests it may send, which
//! mechanism it chose, and each step of the exchange. A plain struct: the connection hands it
//! the decoded request and a fresh nonce and writes what it answers; it never does IO.
//!
//! Kafka's rules: before authentication a client may send only ApiVersions, SaslHandshake and
//! SaslAuthenticate (anything else closes the connection: IllegalSaslState); a handshake names
//! a mechanism the listener enables (else UNSUPPORTED_SASL_MECHANISM, with the list); a failed
//! authentication answers SASL_AUTHENTICATION_FAILED and closes the connection; at most
//! `sasl_failures_max` tries per connection.
//!
//! KIP-368 re-authentication: with a session lifetime (`connections.max.reauth.ms`) an
//! authenticated session expires that long after it authenticated (the shell tells clients of
//! SaslAuthenticate v1+ the lifetime); an expired session may send only a new handshake, which
//! must end as the same user, and is renewed by it. `now` is the shell's, in milliseconds.

use super::scram::{self, Credential, Exchange, Mechanism};
use crate::kafka::{ApiKey, Code};

/// A SASL mechanism a listener may enable (`sasl.enabled.mechanisms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mech {
    Plain,
    Scram(Mechanism),
}

impl Mech {
    /// Every mechanism this broker implements, in Kafka's names.
    pub const all: [Mech; 3] = [Mech::Scram(Mechanism::Sha256), Mech::Scram(Mechanism::Sha512), Mech::Plain];

    pub fn name(self) -> &'static str {
        match self {
            Mech::Plain => "PLAIN",
            Mech::Scram(m) => m.name(),
        }
    }

    pub fn named(name: &str) -> Option<Mech> {
        Mech::all.into_iter().find(|m| m.name() == name)
    }
}

/// Where the connection stands.
#[derive(Debug, Clone)]
enum State {
    /// Nothing chosen yet.
    Start,
    /// A mechanism chosen, its first client message awaited; `raw`: after a v0 handshake the
    /// tokens come as bare size-prefixed frames, not SaslAuthenticate requests.
    Chosen { mech: Mech, raw: bool },
    /// A SCRAM exchange between its two client messages.
    Scram { exchange: Box<Exchange>, raw: bool },
    /// Authenticated as this user (Kafka's principal `User:<name>`).
    Done(String),
}

/// What the connection does with a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Answer with these bytes; more tokens follow.
    Continue(Vec<u8>),
    /// Answer with these bytes; the connection is now this user's.
    Done { user: String, reply: Vec<u8> },
    /// Answer SASL_AUTHENTICATION_FAILED with this message, then close.
    Failed(String),
}

/// A connection's SASL state.
#[derive(Debug, Clone)]
pub struct Session {
    state: State,
    /// How long an authentication lasts (0: for the connection's life).
    lifetime_ms: u64,
    /// When the current authentication expires, if it does.
    expires: Option<u64>,
    /// The user a re-authentication under way must end as.
    previous: Option<String>,
}

impl Default for Session {
    fn default() -> Session {
        Session::with_lifetime(0)
    }
}

impl Session {
    /// A session whose authentications last `lifetime_ms` (0: for ever).
    pub fn with_lifetime(lifetime_ms: u64) -> Session {
        Session { state: State::Start, lifetime_ms, expires: None, previous: None }
    }

    /// How long an authentication lasts, as SaslAuthenticate v1+ tells the client (0: for ever).
    pub fn lifetime_ms(&self) -> u64 {
        self.lifetime_ms
    }

    /// Whether a request with `key` may be handled now: any once authenticated (until the
    /// authentication expires), before that only the three that authenticate; after it expired
    /// only a new handshake and its exchange.
    pub fn allows(&self, key: ApiKey, now: u64) -> bool {
        match self.state {
            State::Done(_) if self.expires.is_some_and(|e| now >= e) => matches!(key, ApiKey::SaslHandshake),
            State::Done(_) => true,
            _ => matches!(key, ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate),
        }
    }

    /// The authenticated user, if any.
    pub fn user(&self) -> Option<&str> {
        match &self.state {
            State::Done(user) => Some(user),
            _ => None,
        }
    }

    /// Whether the next frame is a raw token (after a v0 handshake), not a request.
    pub fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::Chosen { raw: true, .. } | State::Scram { raw: true, .. })
    }

    /// SaslHandshake (`version` 0: raw tokens follow; 1: SaslAuthenticate requests) choosing
    /// `mechanism` among `enabled`.
    pub fn handshake(&mut self, version: i16, mechanism: &str, enabled: &[Mech]) -> Result<(), Code> {
        match &self.state {
            State::Start => {}
            // KIP-368: a new handshake on an authenticated connection re-authenticates it (v1
            // only: a v0 handshake's raw tokens cannot be told from requests on a live one).
            State::Done(user) if version >= 1 => self.previous = Some(user.clone()),
            _ => return Err(Code::IllegalSaslState),
        }
        let mech = Mech::named(mechanism).filter(|m| enabled.contains(m)).ok_or(Code::UnsupportedSaslMechanism)?;
        self.state = State::Chosen { mech, raw: version == 0 };
        Ok(())
    }

    /// A client token (SaslAuthenticate's `auth_bytes`, or a raw token after a v0 handshake):
    /// `nonce` is fresh printable random text, `lookup` a user's credential for a mechanism.
    pub fn authenticate(&mut self, token: &[u8], nonce: &str, now: u64, lookup: impl Fn(&str, Mechanism) -> Option<Credential>) -> Result<Step, Code> {
        let step = self.step(token, nonce, lookup)?;
        let Step::Done { user, .. } = &step else { return Ok(step) };
        if let Some(previous) = self.previous.take().filter(|p| p != user) {
            self.state = State::Start;
            return Ok(Step::Failed(format!("re-authentication as {user} on a connection of {previous}: a connection keeps its principal")));
        }
        self.expires = (self.lifetime_ms > 0).then(|| now.saturating_add(self.lifetime_ms));
        Ok(step)
    }

    fn step(&mut self, token: &[u8], nonce: &str, lookup: impl Fn(&str, Mechanism) -> Option<Credential>) -> Result<Step, Code> {
        let failed = |mech: Mech, e: scram::ScramError| Step::Failed(format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {} ({e})", mech.name()));
        match std::mem::replace(&mut self.state, State::Start) {
            State::Chosen { mech: Mech::Plain, .. } => {
                // PLAIN is checked against the user's stored SCRAM credential, whichever exists.
                let find = |user: &str| lookup(user, Mechanism::Sha512).or_else(|| lookup(user, Mechanism::Sha256));
                Ok(match scram::plain(token, find) {
                    Ok(user) => {
                        self.state = State::Done(user.clone());
                        Step::Done { user, reply: Vec::new() }
                    }
                    Err(e) => failed(Mech::Plain, e),
                })
            }
            State::Chosen { mech: Mech::Scram(m), raw } => Ok(match Exchange::first(m, token, nonce, |user| lookup(user, m)) {
                Ok((exchange, reply)) => {
                    self.state = State::Scram { exchange: Box::new(exchange), raw };
                    Step::Continue(reply)
                }
                Err(e) => failed(Mech::Scram(m), e),
            }),
            State::Scram { exchange, .. } => {
                let mech = Mech::Scram(exchange.mechanism());
                Ok(match exchange.last(token) {
                    Ok((user, reply)) => {
                        self.state = State::Done(user.clone());
                        Step::Done { user, reply }
                    }
                    Err(e) => failed(mech, e),
                })
            }
            other => {
                self.state = other;
                Err(Code::IllegalSaslState)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(user: &str, m: Mechanism) -> Option<Credential> {
        (user == "admin").then(|| Credential::new(m, b"admin-secret", b"salt-salt-salt", 4096))
    }

    #[test]
    fn only_the_authenticating_requests_pass_before_authentication() {
        let mut s = Session::default();
        assert!(s.allows(ApiKey::ApiVersions, 0) && s.allows(ApiKey::SaslHandshake, 0) && !s.allows(ApiKey::Metadata, 0) && !s.allows(ApiKey::Produce, 0));
        assert_eq!(s.authenticate(b"x", "n", 0, lookup), Err(Code::IllegalSaslState), "a token before a handshake");
        assert_eq!(s.handshake(1, "GSSAPI", &Mech::all), Err(Code::UnsupportedSaslMechanism));
        assert_eq!(s.handshake(1, "PLAIN", &[Mech::Scram(Mechanism::Sha256)]), Err(Code::UnsupportedSaslMechanism), "not enabled");
        s.handshake(1, "PLAIN", &Mech::all).unwrap();
        assert_eq!(s.handshake(1, "PLAIN", &Mech::all), Err(Code::IllegalSaslState), "one handshake at a time");
        assert!(!s.expects_raw_token());
        assert_eq!(s.authenticate(b"\0admin\0admin-secret", "n", 0, lookup), Ok(Step::Done { user: "admin".into(), reply: Vec::new() }));
        assert!(s.allows(ApiKey::Metadata, 0) && s.user() == Some("admin"));
    }

    #[test]
    fn a_wrong_password_fails_and_a_v0_handshake_takes_raw_tokens() {
        let mut s = Session::default();
        s.handshake(0, "SCRAM-SHA-256", &Mech::all).unwrap();
        assert!(s.expects_raw_token());
        let Ok(Step::Continue(first)) = s.authenticate(b"n,,n=admin,r=abc", "def", 0, lookup) else { panic!("server-first expected") };
        assert!(first.starts_with(b"r=abcdef,s="), "{}", String::from_utf8_lossy(&first));
        assert!(s.expects_raw_token(), "the final message is raw too");
        let Ok(Step::Failed(why)) = s.authenticate(b"c=biws,r=abcdef,p=AAAA", "def", 0, lookup) else { panic!("a bad proof fails") };
        assert!(why.contains("SCRAM-SHA-256"), "{why}");
        assert!(!s.allows(ApiKey::Metadata, 0));
        let mut p = Session::default();
        p.handshake(1, "PLAIN", &Mech::all).unwrap();
        assert!(matches!(p.authenticate(b"\0admin\0nope", "n", 0, lookup), Ok(Step::Failed(_))));
    }

    #[test]
    fn a_session_expires_and_is_renewed_by_the_same_user_only() {
        let mut s = Session::with_lifetime(1_000);
        s.handshake(1, "PLAIN", &Mech::all).unwrap();
        assert!(matches!(s.authenticate(b"\0admin\0admin-secret", "n", 5_000, lookup), Ok(Step::Done { .. })));
        assert!(s.allows(ApiKey::Produce, 5_999), "within its lifetime");
        assert!(!s.allows(ApiKey::Produce, 6_000) && !s.allows(ApiKey::ApiVersions, 6_000), "expired: nothing but a new handshake");
        assert!(s.allows(ApiKey::SaslHandshake, 6_000));
        assert_eq!(s.handshake(0, "PLAIN", &Mech::all), Err(Code::IllegalSaslState), "no v0 re-authentication");
        s.handshake(1, "PLAIN", &Mech::all).unwrap();
        assert!(!s.allows(ApiKey::Produce, 6_000), "nothing else while re-authenticating");
        assert!(matches!(s.authenticate(b"\0admin\0admin-secret", "n", 6_500, lookup), Ok(Step::Done { .. })));
        assert!(s.allows(ApiKey::Produce, 7_499) && !s.allows(ApiKey::Produce, 7_500), "renewed from the re-authentication");
        // Another user may not take the connection over.
        let other = |user: &str, m: Mechanism| (user == "eve").then(|| Credential::new(m, b"eve-secret", b"salt-salt-salt", 4096)).or_else(|| lookup(user, m));
        s.handshake(1, "PLAIN", &Mech::all).unwrap();
        let Ok(Step::Failed(why)) = s.authenticate(b"\0eve\0eve-secret", "n", 7_000, other) else { panic!("a different principal") };
        assert!(why.contains("keeps its principal"), "{why}");
        assert!(!s.allows(ApiKey::Produce, 7_000));
    }
}
