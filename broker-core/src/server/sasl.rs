//! SASL on a connection, the shell's part: reads SaslHandshake, SaslAuthenticate and the raw
//! tokens of a v0 handshake off the connection before anything reaches the node, asks the
//! connection's [`Session`] what they mean, draws the server nonces, and says what to write.
//! A request the session does not allow yet closes the connection (Kafka's
//! IllegalSaslStateException); so does a failed authentication, after its answer.

use super::Shared;
use crate::kafka::{ApiKey, Code};
use crate::protocol::request::{decode_request, Decoded};
use crate::protocol::{leading, Response};
use crate::security::sasl::{Mech, Session, Step};
use crate::security::scram::{Credential, Mechanism};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use kafka_protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use kafka_protocol::messages::RequestKind;
use kafka_protocol::protocol::StrBytes;

/// What the connection does with a frame.
pub(super) enum Sasl {
    /// Not an authentication frame, and allowed: the node answers it.
    Pass,
    /// Write this frame and go on.
    Answer(Bytes),
    /// Write this frame, then close (a refused mechanism, a failed authentication).
    AnswerThenClose(Bytes, String),
    /// Close without an answer.
    Close(String),
}

/// Looks at `frame` for the connection's `session` (None: a PLAINTEXT listener, where the
/// authentication requests are answered ILLEGAL_SASL_STATE and everything else passes).
pub(super) fn intercept(shared: &Shared, session: &mut Option<Session>, enabled: &[Mech], internal_only: bool, frame: &Bytes) -> Sasl {
    if let Some(s) = session.as_mut().filter(|s| s.expects_raw_token()) {
        // After a v0 handshake the client's tokens come bare, and so do the answers.
        return match s.authenticate(frame, &nonce(), super::now_ms(), |user, m| credential(shared, user, m)) {
            Ok(Step::Continue(reply)) | Ok(Step::Done { reply, .. }) => Sasl::Answer(raw(&reply)),
            Ok(Step::Failed(why)) => Sasl::Close(why),
            Err(code) => Sasl::Close(format!("SASL token out of turn ({code:?})")),
        };
    }
    let raw_key = leading(frame).map_or(-1, |l| l.key);
    if internal_only && !internal(raw_key) {
        return Sasl::Close(format!("API key {raw_key} on the controller listener, which takes only the node's own links"));
    }
    let Some(key) = leading(frame).and_then(|l| ApiKey::try_from(l.key).ok()) else { return Sasl::Pass };
    if !matches!(key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) {
        return match session {
            Some(s) if !s.allows(key, super::now_ms()) => match s.user() {
                Some(user) => Sasl::Close(format!("{key:?} from User:{user}: session expired (connections.max.reauth.ms={}) without re-authentication", s.lifetime_ms())),
                None => Sasl::Close(format!("{key:?} before SASL authentication")),
            },
            _ => Sasl::Pass,
        };
    }
    let request = match decode_request(frame, shared.legacy_api_versions) {
        Ok(Decoded::Request(r)) => r,
        Ok(_) => return Sasl::Pass,
        Err(reason) => return Sasl::Close(reason),
    };
    let (version, correlation_id) = (request.version, request.correlation_id());
    let names: Vec<StrBytes> = match session {
        Some(_) => enabled.iter().map(|m| StrBytes::from_static_str(m.name())).collect(),
        None => Vec::new(),
    };
    match request.body {
        RequestKind::SaslHandshake(h) => {
            let result = match session.as_mut() {
                Some(s) => s.handshake(version, h.mechanism.as_str(), enabled),
                None => Err(Code::IllegalSaslState),
            };
            let body = SaslHandshakeResponse::default().with_error_code(result.err().map_or(0, |c| c.code())).with_mechanisms(names);
            let frame = Response::new(key, version, correlation_id, body).encode();
            match result {
                Ok(()) => frame.map_or_else(Sasl::Close, Sasl::Answer),
                Err(code) => frame.map_or_else(Sasl::Close, |f| Sasl::AnswerThenClose(f, format!("SASL handshake for {:?} refused ({code:?})", h.mechanism.as_str()))),
            }
        }
        RequestKind::SaslAuthenticate(a) => {
            let step = match session.as_mut() {
                Some(s) => s.authenticate(&a.auth_bytes, &nonce(), super::now_ms(), |user, m| credential(shared, user, m)),
                None => Err(Code::IllegalSaslState),
            };
            let lifetime_ms = session.as_ref().map_or(0, |s| s.lifetime_ms());
            let mut session_ms = 0;
            let (code, message, bytes, close) = match step {
                Ok(Step::Continue(reply)) => (0, None, reply, None),
                Ok(Step::Done { user, reply }) => {
                    tracing::debug!("SASL: authenticated as User:{user}");
                    // KIP-368: v1+ tells the client how long the session lasts.
                    session_ms = lifetime_ms as i64;
                    (0, None, reply, None)
                }
                Ok(Step::Failed(why)) => (Code::SaslAuthenticationFailed.code(), Some(why.clone()), Vec::new(), Some(why)),
                Err(code) => (code.code(), None, Vec::new(), Some(format!("SaslAuthenticate out of turn ({code:?})"))),
            };
            let body = SaslAuthenticateResponse::default().with_error_code(code).with_error_message(message.map(StrBytes::from_string)).with_auth_bytes(Bytes::from(bytes)).with_session_lifetime_ms(if version >= 1 { session_ms } else { 0 });
            let frame = Response::new(key, version, correlation_id, body).encode();
            match (frame, close) {
                (Err(reason), _) => Sasl::Close(reason),
                (Ok(f), None) => Sasl::Answer(f),
                (Ok(f), Some(why)) => Sasl::AnswerThenClose(f, why),
            }
        }
        _ => Sasl::Pass,
    }
}

/// What the node's own links send its controller: registration, heartbeats, ISR changes,
/// topic auto-creation, the metadata log's Fetch, and Raft messages between voters.
fn internal(key: i16) -> bool {
    use ApiKey::*;
    key == crate::controller::raft::wire::api_key || [ApiVersions, BrokerRegistration, BrokerHeartbeat, AlterPartition, CreateTopics, Fetch].iter().any(|k| *k as i16 == key)
}

/// A token after a v0 handshake: size-prefixed, no header.
fn raw(token: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + token.len());
    out.put_i32(token.len() as i32);
    out.put_slice(token);
    out.freeze()
}

/// `user`'s stored credential for `m`, from the metadata this broker has; while that holds
/// nothing at all (a cluster being formed, whose voters must authenticate to each other before
/// their metadata log has a record), from this node's `--add-scram`, as Kafka's bootstrap
/// checkpoint serves every node `kafka-storage format` wrote it to. Not once anything is there:
/// deleting the last user must not bring the bootstrap ones back.
fn credential(shared: &Shared, user: &str, m: Mechanism) -> Option<Credential> {
    let broker = shared.broker();
    match broker.image().is_fresh() {
        true => broker.config().security.scram_bootstrap.iter().find(|(u, c)| u == user && c.mechanism == m).map(|(_, c)| c.clone()),
        false => broker.image().scram_credential(user, m).cloned(),
    }
}

/// A server nonce: 18 random bytes, base64 (printable, no comma). The edge's randomness:
/// madsim makes it the seed's in the simulator.
pub fn nonce() -> String {
    use base64::Engine;
    // madsim's: the OS's in the real build, the run's seeded generator in the simulated one.
    base64::engine::general_purpose::STANDARD.encode(madsim::rand::random::<[u8; 18]>())
}
