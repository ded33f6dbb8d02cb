//! Target `sasl`: a connection's SASL authentication (`security::sasl`, `security::scram`) fed
//! any bytes as its handshake and tokens — bad SCRAM messages, huge nonces, truncated
//! client-first, tokens out of turn, PLAIN without its separators.
//!
//! Input: the first byte chooses the mechanism the handshake names (bits 0–1: SCRAM-SHA-256,
//! SCRAM-SHA-512, PLAIN, or GSSAPI, which is not enabled) and the handshake version (bit 2 set:
//! v0, raw tokens); the rest is up to [`tokens_max`] tokens separated by `\n`. One user exists,
//! `admin`, with both SCRAM credentials. Promises checked: no panic; a session that failed stays
//! unauthenticated; a session is authenticated only as `admin`, and only through an exchange
//! that ended in `Done`.

use crate::kafka::ApiKey;
use crate::security::sasl::{Mech, Session, Step};
use crate::security::scram::{Credential, Mechanism};
use std::sync::OnceLock;

/// Most tokens one input sends (an exchange takes two; more are out of turn).
const tokens_max: usize = 8;

/// The server nonce of every exchange: fixed, so a recorded input replays the same way.
const nonce: &str = "fuzz-server-nonce";

fn credentials() -> &'static [Credential; 2] {
    static CREDENTIALS: OnceLock<[Credential; 2]> = OnceLock::new();
    CREDENTIALS.get_or_init(|| [Mechanism::Sha256, Mechanism::Sha512].map(|m| Credential::new(m, b"admin-secret", b"fuzz-salt", crate::security::scram::iterations_min)))
}

pub fn run(data: &[u8]) {
    authenticates(data);
}

/// Runs the input's exchange, checking the promises; whether it ended authenticated.
pub fn authenticates(data: &[u8]) -> bool {
    let Some((&flags, rest)) = data.split_first() else { return false };
    let names = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "GSSAPI"];
    let mut s = Session::default();
    let enabled = Mech::all;
    if s.handshake(if flags & 4 != 0 { 0 } else { 1 }, names[(flags & 3) as usize], &enabled).is_err() {
        assert!(!s.allows(ApiKey::Metadata, 0));
        return false;
    }
    let lookup = |user: &str, m: Mechanism| (user == "admin").then(|| credentials().iter().find(|c| c.mechanism == m).cloned()).flatten();
    let mut done = false;
    for token in rest.split(|&b| b == b'\n').take(tokens_max) {
        match s.authenticate(token, nonce, 0, lookup) {
            Ok(Step::Done { user, .. }) => {
                assert_eq!(user, "admin", "authenticated as a user that does not exist");
                done = true;
            }
            Ok(Step::Failed(_)) => {
                assert!(!s.allows(ApiKey::Metadata, 0), "a failed exchange left the session authenticated");
                return false;
            }
            Ok(Step::Continue(_)) | Err(_) => {}
        }
        assert_eq!(s.allows(ApiKey::Metadata, 0), done, "authenticated without an exchange that ended in Done");
    }
    done
}
