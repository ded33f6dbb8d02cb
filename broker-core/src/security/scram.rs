//! SCRAM (RFC 5802, RFC 7677) as Kafka speaks it (KIP-84): the stored credential, the server's
//! side of one exchange as a plain state machine, and PLAIN checked against the same stored
//! credential. No IO, no clock, no randomness: the server nonce and a new credential's salt are
//! the caller's (the shell draws them; the simulator from its seed).
//!
//! An exchange: the client's first message (`n,,n=user,r=cnonce`) → [`Exchange::first`] answers
//! `r=cnonce+snonce,s=salt,i=iterations`; the client's final message (`c=biws,r=…,p=proof`) →
//! [`Exchange::last`] checks the proof against the stored key and answers `v=signature`. Any
//! malformed or oversized message, unknown user or wrong proof is one error,
//! [`ScramError`], which the caller answers as SASL_AUTHENTICATION_FAILED without saying which
//! (as Kafka does, so a client cannot probe for user names).

use base64::engine::general_purpose::STANDARD as base64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The SCRAM mechanisms Kafka supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Mechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

/// Kafka's bounds on a credential's iterations (`ScramMechanism.minIterations` and the
/// AlterUserScramCredentials limit): fewer makes a stolen stored key cheap to attack, more makes
/// every login expensive.
pub const iterations_min: i32 = 4096;
pub const iterations_max: i32 = 16384;

/// The longest SCRAM message taken: a user name, two nonces and a proof fit in far less.
pub const message_bytes_max: usize = 4096;

/// The longest client nonce taken (RFC 5802 sets none; a huge one only costs the server).
pub const nonce_bytes_max: usize = 256;

impl Mechanism {
    /// Kafka's name: the SaslHandshake mechanism and the `--add-scram` key.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha256 => "SCRAM-SHA-256",
            Mechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn named(name: &str) -> Option<Mechanism> {
        [Mechanism::Sha256, Mechanism::Sha512].into_iter().find(|m| m.name() == name)
    }

    /// The mechanism of Kafka's number `code`.
    pub fn from_kafka_type(code: i8) -> Option<Mechanism> {
        [Mechanism::Sha256, Mechanism::Sha512].into_iter().find(|m| m.kafka_type() == code)
    }

    /// Kafka's mechanism number (DescribeUserScramCredentials, AlterUserScramCredentials).
    pub fn kafka_type(self) -> i8 {
        match self {
            Mechanism::Sha256 => 1,
            Mechanism::Sha512 => 2,
        }
    }

    /// The bytes of this mechanism's hash (and of a salted password).
    pub fn digest_bytes(self) -> usize {
        match self {
            Mechanism::Sha256 => 32,
            Mechanism::Sha512 => 64,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Mechanism::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes a key of any length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
            Mechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's Hi(): PBKDF2 with this mechanism's HMAC (what AlterUserScramCredentials
    /// carries for a new credential).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let rounds = iterations.max(1) as u32;
        match self {
            Mechanism::Sha256 => pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, rounds).to_vec(),
            Mechanism::Sha512 => pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, rounds).to_vec(),
        }
    }
}

/// What the broker keeps of a user's password for one mechanism (Kafka's
/// `UserScramCredentialRecord`): never the password.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credential {
    pub mechanism: Mechanism,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl Credential {
    /// The credential of `password` with `salt` (the caller's random bytes) and `iterations`.
    pub fn new(mechanism: Mechanism, password: &[u8], salt: &[u8], iterations: i32) -> Credential {
        let salted = mechanism.salted_password(password, salt, iterations);
        Credential::from_salted(mechanism, &salted, salt, iterations)
    }

    /// From an already salted password (AlterUserScramCredentials sends that, never the
    /// password).
    pub fn from_salted(mechanism: Mechanism, salted: &[u8], salt: &[u8], iterations: i32) -> Credential {
        let client_key = mechanism.hmac(salted, b"Client Key");
        Credential { mechanism, salt: salt.to_vec(), stored_key: mechanism.hash(&client_key), server_key: mechanism.hmac(salted, b"Server Key"), iterations }
    }

    /// Whether `password` is this credential's (PLAIN checked against the stored SCRAM
    /// credential: the password is salted and iterated as at creation).
    pub fn matches(&self, password: &[u8]) -> bool {
        let salted = self.mechanism.salted_password(password, &self.salt, self.iterations);
        let stored = self.mechanism.hash(&self.mechanism.hmac(&salted, b"Client Key"));
        constant_time_eq(&stored, &self.stored_key)
    }
}

/// Why an exchange failed. The client is told only SASL_AUTHENTICATION_FAILED.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    #[error("unknown user or wrong password")]
    Refused,
}

/// The server's side of one SCRAM exchange between its two client messages.
#[derive(Debug, Clone)]
pub struct Exchange {
    user: String,
    credential: Credential,
    /// The client's GS2 header (`n,,`), which its final message carries base64-encoded.
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

impl Exchange {
    /// Takes the client's first message; `lookup` finds the user's credential for this
    /// mechanism, and `server_nonce` is fresh printable random text from the caller. Returns the
    /// exchange and the server's first message. An unknown user is refused here.
    pub fn first(mechanism: Mechanism, message: &[u8], server_nonce: &str, lookup: impl FnOnce(&str) -> Option<Credential>) -> Result<(Exchange, Vec<u8>), ScramError> {
        let text = text(message)?;
        // gs2-header: no channel binding ("n" or "y"), no authzid other than empty or the user.
        let (cbind, rest) = text.split_once(',').ok_or(ScramError::Malformed("no GS2 header"))?;
        if cbind != "n" && cbind != "y" {
            return Err(ScramError::Malformed("channel binding is not supported"));
        }
        let (authzid, bare) = rest.split_once(',').ok_or(ScramError::Malformed("no GS2 header"))?;
        let mut fields = attributes(bare)?;
        let user = unescape(fields.next().and_then(|(k, v)| (k == 'n').then_some(v)).ok_or(ScramError::Malformed("no user name"))?)?;
        let cnonce = fields.next().and_then(|(k, v)| (k == 'r').then_some(v)).ok_or(ScramError::Malformed("no client nonce"))?;
        if cnonce.is_empty() || cnonce.len() > nonce_bytes_max || !cnonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',') {
            return Err(ScramError::Malformed("client nonce"));
        }
        // Extensions (Kafka's `tokenauth=true`, KIP-48) are not supported: delegation tokens
        // are not built.
        if fields.next().is_some() {
            return Err(ScramError::Malformed("extensions are not supported"));
        }
        if !authzid.is_empty() && authzid.strip_prefix("a=").map(unescape).transpose()?.as_deref() != Some(user.as_str()) {
            return Err(ScramError::Malformed("authorization id differs from the user"));
        }
        let credential = lookup(&user).filter(|c| c.mechanism == mechanism).ok_or(ScramError::Refused)?;
        let nonce = format!("{cnonce}{server_nonce}");
        let server_first = format!("r={nonce},s={},i={}", base64.encode(&credential.salt), credential.iterations);
        let reply = server_first.clone().into_bytes();
        let gs2_header = text[..text.len() - bare.len()].to_string();
        Ok((Exchange { user, credential, gs2_header, client_first_bare: bare.to_string(), server_first, nonce }, reply))
    }

    /// The mechanism of this exchange.
    pub fn mechanism(&self) -> Mechanism {
        self.credential.mechanism
    }

    /// Takes the client's final message: the proof must show the password. Returns the
    /// authenticated user and the server's final message (its signature, so the client knows
    /// the server holds the credential too).
    pub fn last(self, message: &[u8]) -> Result<(String, Vec<u8>), ScramError> {
        let text = text(message)?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError::Malformed("no proof"))?;
        let mut fields = attributes(without_proof)?;
        let binding = fields.next().and_then(|(k, v)| (k == 'c').then_some(v)).ok_or(ScramError::Malformed("no channel binding"))?;
        // The first message's GS2 header again (no channel binding data follows it).
        if binding != base64.encode(&self.gs2_header) {
            return Err(ScramError::Malformed("channel binding"));
        }
        let nonce = fields.next().and_then(|(k, v)| (k == 'r').then_some(v)).ok_or(ScramError::Malformed("no nonce"))?;
        // Kafka's server takes any nonce that ends with the one it sent (`ScramSaslServer`), and
        // librdkafka 2.0 sends the client's part twice: refusing it would refuse those clients.
        if !nonce.ends_with(&self.nonce) {
            return Err(ScramError::Refused);
        }
        let proof = base64.decode(proof).map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let m = self.credential.mechanism;
        let auth_message = format!("{},{},{without_proof}", self.client_first_bare, self.server_first);
        let signature = m.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError::Refused);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if !constant_time_eq(&m.hash(&client_key), &self.credential.stored_key) {
            return Err(ScramError::Refused);
        }
        let server_signature = m.hmac(&self.credential.server_key, auth_message.as_bytes());
        Ok((self.user, format!("v={}", base64.encode(server_signature)).into_bytes()))
    }
}

/// The client's side of one SCRAM exchange (a broker authenticating to another): its first
/// message, then its final one from the server's first, then the server's signature checked.
#[derive(Debug, Clone)]
pub struct ClientExchange {
    mechanism: Mechanism,
    password: String,
    client_first_bare: String,
    cnonce: String,
    /// The server's signature the final message expects, once sent.
    expected: Option<Vec<u8>>,
}

impl ClientExchange {
    /// The client's first message for `user`, with `cnonce` (fresh printable random text, no
    /// comma) from the caller.
    pub fn first(mechanism: Mechanism, user: &str, password: &str, cnonce: &str) -> (ClientExchange, Vec<u8>) {
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let bare = format!("n={name},r={cnonce}");
        let message = format!("n,,{bare}").into_bytes();
        (ClientExchange { mechanism, password: password.to_string(), client_first_bare: bare, cnonce: cnonce.to_string(), expected: None }, message)
    }

    /// The final message, from the server's first (its nonce must extend ours, and its
    /// iterations be in Kafka's range).
    pub fn last(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let server_first = text(server_first)?;
        let mut fields = attributes(server_first)?;
        let nonce = fields.next().and_then(|(k, v)| (k == 'r').then_some(v)).ok_or(ScramError::Malformed("no nonce"))?;
        let salt = fields.next().and_then(|(k, v)| (k == 's').then_some(v)).ok_or(ScramError::Malformed("no salt"))?;
        let iterations: i32 = fields.next().and_then(|(k, v)| (k == 'i').then_some(v)).and_then(|v| v.parse().ok()).ok_or(ScramError::Malformed("no iterations"))?;
        if !nonce.starts_with(&self.cnonce) || nonce.len() == self.cnonce.len() || !(iterations_min..=iterations_max).contains(&iterations) {
            return Err(ScramError::Malformed("server-first nonce or iterations"));
        }
        let salt = base64.decode(salt).map_err(|_| ScramError::Malformed("salt is not base64"))?;
        let m = self.mechanism;
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = m.hmac(&m.hash(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
        self.expected = Some(m.hmac(&m.hmac(&salted, b"Server Key"), auth.as_bytes()));
        Ok(format!("{without_proof},p={}", base64.encode(proof)).into_bytes())
    }

    /// Checks the server's final message: it must hold the credential too.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let v = text(server_final)?.strip_prefix("v=").ok_or(ScramError::Malformed("no server signature"))?;
        let got = base64.decode(v).map_err(|_| ScramError::Malformed("server signature is not base64"))?;
        match &self.expected {
            Some(want) if constant_time_eq(want, &got) => Ok(()),
            _ => Err(ScramError::Refused),
        }
    }
}

/// PLAIN (RFC 4616: `authzid NUL user NUL password`), checked against the user's stored SCRAM
/// credential (`lookup` gives any of them). Returns the user.
pub fn plain(message: &[u8], lookup: impl FnOnce(&str) -> Option<Credential>) -> Result<String, ScramError> {
    if message.len() > message_bytes_max {
        return Err(ScramError::Malformed("too long"));
    }
    let mut parts = message.split(|&b| b == 0);
    let (Some(authzid), Some(user), Some(password), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(ScramError::Malformed("PLAIN takes authzid, user and password"));
    };
    let user = std::str::from_utf8(user).map_err(|_| ScramError::Malformed("user name is not UTF-8"))?;
    if user.is_empty() || (!authzid.is_empty() && authzid != user.as_bytes()) {
        return Err(ScramError::Malformed("user name"));
    }
    let credential = lookup(user).ok_or(ScramError::Refused)?;
    match credential.matches(password) {
        true => Ok(user.to_string()),
        false => Err(ScramError::Refused),
    }
}

fn text(message: &[u8]) -> Result<&str, ScramError> {
    if message.len() > message_bytes_max {
        return Err(ScramError::Malformed("too long"));
    }
    std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))
}

/// `k=v` attributes separated by commas.
fn attributes(s: &str) -> Result<impl Iterator<Item = (char, &str)>, ScramError> {
    let parsed: Result<Vec<(char, &str)>, ScramError> = s
        .split(',')
        .map(|a| {
            let mut chars = a.chars();
            match (chars.next(), chars.next()) {
                (Some(k), Some('=')) if k.is_ascii_alphabetic() => Ok((k, &a[2..])),
                _ => Err(ScramError::Malformed("attribute")),
            }
        })
        .collect();
    Ok(parsed?.into_iter())
}

/// RFC 5802's saslname: `=2C` is a comma, `=3D` an equals sign; any other `=` is malformed.
fn unescape(s: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed("user name escape")),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    if out.is_empty() {
        return Err(ScramError::Malformed("empty user name"));
    }
    Ok(out)
}

/// Equality whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example: user "user", password "pencil", its salt and nonces.
    #[test]
    fn rfc_7677_exchange() {
        let salt = base64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = Credential::new(Mechanism::Sha256, b"pencil", &salt, 4096);
        let first = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
        let (exchange, reply) = Exchange::first(Mechanism::Sha256, first, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", |u| (u == "user").then(|| credential.clone())).unwrap();
        assert_eq!(reply, b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
        let last = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let (user, reply) = exchange.clone().last(last).unwrap();
        assert_eq!((user.as_str(), reply.as_slice()), ("user", &b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="[..]));
        // One bit of the proof wrong: refused.
        let wrong = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVc=";
        assert_eq!(exchange.last(wrong).unwrap_err(), ScramError::Refused);
    }

    #[test]
    fn an_unknown_user_another_mechanism_and_malformed_messages_are_refused() {
        let credential = Credential::new(Mechanism::Sha512, b"secret", b"salt", 4096);
        let lookup = |u: &str| (u == "alice").then(|| credential.clone());
        assert_eq!(Exchange::first(Mechanism::Sha512, b"n,,n=bob,r=abc", "x", lookup).unwrap_err(), ScramError::Refused);
        assert_eq!(Exchange::first(Mechanism::Sha256, b"n,,n=alice,r=abc", "x", lookup).unwrap_err(), ScramError::Refused, "a SHA-512 credential does not serve SHA-256");
        for bad in [&b""[..], b"n,,", b"p=tls,,n=alice,r=abc", b"n,,n=alice", b"n,,n=al=ice,r=abc", b"n,,n=alice,r=a,b=c", b"n,a=bob,n=alice,r=abc", &[0xff, 0xfe]] {
            assert!(matches!(Exchange::first(Mechanism::Sha512, bad, "x", lookup), Err(ScramError::Malformed(_))), "{:?}", String::from_utf8_lossy(bad));
        }
        let huge = format!("n,,n=alice,r={}", "a".repeat(nonce_bytes_max + 1));
        assert!(matches!(Exchange::first(Mechanism::Sha512, huge.as_bytes(), "x", lookup), Err(ScramError::Malformed(_))));
        let (e, _) = Exchange::first(Mechanism::Sha512, b"n,,n=alice,r=abc", "def", lookup).unwrap();
        assert_eq!(e.clone().last(b"c=biws,r=abcXXX,p=AAAA").unwrap_err(), ScramError::Refused, "another nonce");
        assert_eq!(e.clone().last(b"c=biws,r=abcdefX,p=AAAA").unwrap_err(), ScramError::Refused, "a nonce that does not end with the server's");
        assert!(matches!(e.last(b"c=biws,r=abcdef"), Err(ScramError::Malformed(_))));
    }

    #[test]
    fn a_client_that_knows_the_password_gets_in_and_one_that_does_not_is_refused() {
        for m in [Mechanism::Sha256, Mechanism::Sha512] {
            let credential = Credential::new(m, b"admin-secret", b"0123456789abcdef", 4096);
            for (password, ok) in [(&b"admin-secret"[..], true), (b"admin-secre", false)] {
                let (e, server_first) = Exchange::first(m, b"n,,n=admin,r=cnonce", "snonce", |_| Some(credential.clone())).unwrap();
                // The client's side, by the RFC.
                let server_first = String::from_utf8(server_first).unwrap();
                let salted = m.salted_password(password, b"0123456789abcdef", 4096);
                let client_key = m.hmac(&salted, b"Client Key");
                let without_proof = "c=biws,r=cnoncesnonce";
                let auth = format!("n=admin,r=cnonce,{server_first},{without_proof}");
                let signature = m.hmac(&m.hash(&client_key), auth.as_bytes());
                let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
                let last = format!("{without_proof},p={}", base64.encode(proof));
                assert_eq!(e.last(last.as_bytes()).is_ok(), ok, "{m:?} {ok}");
            }
            assert_eq!(plain(b"\0admin\0admin-secret", |_| Some(credential.clone())), Ok("admin".to_string()));
            assert_eq!(plain(b"admin\0admin\0admin-secret", |_| Some(credential.clone())), Ok("admin".to_string()));
            assert_eq!(plain(b"\0admin\0wrong", |_| Some(credential.clone())), Err(ScramError::Refused));
            assert!(matches!(plain(b"\0admin", |_| Some(credential.clone())), Err(ScramError::Malformed(_))));
            assert!(matches!(plain(b"bob\0admin\0admin-secret", |_| Some(credential.clone())), Err(ScramError::Malformed(_))));
        }
    }

    #[test]
    fn the_client_side_talks_to_the_server_side() {
        for m in [Mechanism::Sha256, Mechanism::Sha512] {
            let credential = Credential::new(m, b"broker-secret", b"some-salt", 4096);
            for (password, ok) in [("broker-secret", true), ("nope", false)] {
                let (mut client, first) = ClientExchange::first(m, "bro,ker", password, "cn");
                let (server, server_first) = Exchange::first(m, &first, "sn", |u| (u == "bro,ker").then(|| credential.clone())).unwrap();
                let last = client.last(&server_first).unwrap();
                match server.last(&last) {
                    Ok((user, server_final)) => {
                        assert!(ok && user == "bro,ker");
                        client.verify(&server_final).unwrap();
                        assert_eq!(client.verify(b"v=AAAA"), Err(ScramError::Refused), "a server without the credential");
                    }
                    Err(e) => assert!(!ok, "{m:?}: {e}"),
                }
            }
            let (mut client, _) = ClientExchange::first(m, "u", "p", "cn");
            assert!(client.last(b"r=other,s=c2FsdA==,i=4096").is_err(), "a nonce that does not extend ours");
            assert!(client.last(b"r=cnX,s=c2FsdA==,i=1").is_err(), "too few iterations");
        }
    }

    #[test]
    fn user_names_are_unescaped() {
        assert_eq!(unescape("a=2Cb=3Dc").unwrap(), "a,b=c");
        assert!(unescape("a=2").is_err() && unescape("").is_err());
    }
}
