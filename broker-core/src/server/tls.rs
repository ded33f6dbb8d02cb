//! TLS for the listeners and links that ask for it (SSL, SASL_SSL), with rustls over ring: the
//! node's key and certificate chain and the authorities it trusts, read from Kafka 2.7+'s PEM
//! stores when the node starts, become an acceptor (TLS listeners, with `ssl.client.auth`) and
//! a connector (this node's links to other nodes' TLS listeners, presenting the same
//! certificate, so `ssl.client.auth=required` holds between brokers too). TLS 1.2 and 1.3 only:
//! rustls has nothing older. A handshake is bounded by `tls_handshake_ms_max` and counted in
//! the connection limits like any connection; a client's certificate names its principal
//! (`security::x509`).

use super::send::{self, ReadHalf, WriteHalf};
use crate::security::{ClientAuth, TlsFiles};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a client has to finish the TLS handshake after it connects.
pub const tls_handshake_ms_max: u64 = 10_000;

/// The node's TLS, ready for sockets.
#[derive(Clone)]
pub struct Tls {
    /// For TLS listeners; None when the node has no keystore.
    pub acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// For links to TLS listeners; None when the node has no truststore.
    pub connector: Option<tokio_rustls::TlsConnector>,
}

impl Tls {
    /// Reads the PEM stores `files` names. Errors name the file and what is wrong with it.
    pub fn load(files: &TlsFiles) -> Result<Tls, String> {
        let provider = provider();
        let identity = match &files.keystore {
            Some(path) => Some(identity(&[path], files.key_password.as_ref().map(|p| p.0.as_str()), "ssl.keystore.location")?),
            None => None,
        };
        let roots = match &files.truststore {
            Some(path) => Some(Arc::new(roots(path, "ssl.truststore.location")?)),
            None => None,
        };
        let acceptor = match &identity {
            None => None,
            Some((chain, key)) => {
                let builder = rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| format!("TLS: {e}"))?;
                let builder = match (files.client_auth, &roots) {
                    (ClientAuth::None, _) => builder.with_no_client_auth(),
                    (_, None) => return Err("ssl.client.auth=requested or required needs --ssl-truststore-location: the authorities whose client certificates are accepted".into()),
                    (auth, Some(roots)) => {
                        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
                        let verifier = if auth == ClientAuth::Requested { verifier.allow_unauthenticated() } else { verifier };
                        builder.with_client_cert_verifier(verifier.build().map_err(|e| format!("ssl.truststore.location: {e}"))?)
                    }
                };
                let config = builder.with_single_cert(chain.clone(), key.clone_key()).map_err(|e| format!("ssl.keystore.location: {e}"))?;
                Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
            }
        };
        let connector = match roots {
            None => None,
            Some(roots) => Some(connector(provider, roots, identity, "ssl.keystore.location")?),
        };
        Ok(Tls { acceptor, connector })
    }
}

/// ring, not aws-lc-rs (rustls' default, a large C build): X25519, P-256 and P-384 key
/// exchange, without the post-quantum hybrid that rustls 0.23.48 deprecates it for. Every TLS
/// configuration of the project takes it from here.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    #[allow(deprecated)]
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client's side (the operator's tools, tests): trusts the authorities in the PEM file `ca`
/// and presents the certificate and key of `identity` (PEM files) if given.
pub fn client(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<tokio_rustls::TlsConnector, String> {
    let roots = Arc::new(roots(ca, "--ssl-ca")?);
    let identity = match identity {
        Some((cert, key)) => Some(self::identity(&[cert, key], None, "--ssl-cert/--ssl-key")?),
        None => None,
    };
    connector(provider(), roots, identity, "--ssl-cert/--ssl-key")
}

fn connector(provider: Arc<rustls::crypto::CryptoProvider>, roots: Arc<rustls::RootCertStore>, identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, what: &str) -> Result<tokio_rustls::TlsConnector, String> {
    let builder = rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().map_err(|e| format!("TLS: {e}"))?.with_root_certificates(roots);
    let config = match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| format!("{what}: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// An identity from PEM files read together (a keystore holds both in one): one private key
/// (PKCS#8, PKCS#1 or SEC1; or encrypted PKCS#8 with `password`, `ssl.key.password`) and its
/// certificate chain, leaf first. `what` names the setting in errors.
fn identity(files: &[&Path], password: Option<&str>, what: &str) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let shown = files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" and ");
    let bad = |why: String| format!("{what} {shown}: {why}");
    let mut pem = Vec::new();
    for file in files {
        pem.extend(std::fs::read(file).map_err(|e| bad(e.to_string()))?);
        pem.push(b'\n');
    }
    let key = match (encrypted_key(&pem), password) {
        (Some(block), Some(password)) => decrypt_key(block, password).map_err(bad)?,
        (Some(_), None) => return Err(bad("the private key is encrypted: give its password with --ssl-key-password (ssl.key.password)".into())),
        (None, _) => PrivateKeyDer::from_pem_slice(&pem).map_err(|e| bad(format!("no private key ({e})")))?,
    };
    let chain = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| bad(e.to_string()))?;
    if chain.is_empty() {
        return Err(bad("no certificate: a PEM identity is the key and its certificate chain".into()));
    }
    Ok((chain, key))
}

/// The PEM block of an encrypted PKCS#8 key in `pem`, if it holds one.
fn encrypted_key(pem: &[u8]) -> Option<&str> {
    let (begin, end) = ("-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----END ENCRYPTED PRIVATE KEY-----");
    let text = std::str::from_utf8(pem).ok()?;
    let from = text.find(begin)?;
    let to = from + text[from..].find(end)? + end.len();
    Some(&text[from..to])
}

/// An encrypted PKCS#8 key (PBES2, as `openssl pkcs8 -topk8` writes it), decrypted.
fn decrypt_key(block: &str, password: &str) -> Result<PrivateKeyDer<'static>, String> {
    let (_, der) = pkcs8::der::Document::from_pem(block).map_err(|e| format!("the encrypted private key is not PEM: {e}"))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_bytes()).map_err(|e| format!("the encrypted private key does not decode: {e}"))?;
    let plain = info.decrypt(password).map_err(|e| format!("the private key does not decrypt with ssl.key.password (a wrong password, or a scheme other than PBES2 with AES-CBC): {e}"))?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

/// A PEM truststore: the certificates of trusted authorities (`what` names the setting).
fn roots(path: &Path, what: &str) -> Result<rustls::RootCertStore, String> {
    let bad = |why: String| format!("{what} {}: {why}", path.display());
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.map_err(|e| bad(e.to_string()))?).map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate".into()));
    }
    Ok(roots)
}

/// The server side of a TLS handshake on an accepted connection, within
/// `tls_handshake_ms_max`: the connection's halves and its principal (`User:` and the client
/// certificate's subject, `User:ANONYMOUS` without one), or None (logged) when it failed.
pub(super) async fn accept(acceptor: &tokio_rustls::TlsAcceptor, stream: tokio::net::TcpStream, peer: SocketAddr) -> Option<(ReadHalf, WriteHalf, String)> {
    let done = tokio::time::timeout(Duration::from_millis(tls_handshake_ms_max), acceptor.accept(stream)).await;
    let stream = match done {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::warn!("closing connection from {peer}: TLS handshake: {e}");
            return None;
        }
        Err(_) => {
            tracing::warn!("closing connection from {peer}: no TLS handshake within {tls_handshake_ms_max} ms");
            return None;
        }
    };
    let leaf = stream.get_ref().1.peer_certificates().and_then(|chain| chain.first());
    let principal = match leaf.map(|cert| crate::security::x509::subject_dn(cert)) {
        None => "User:ANONYMOUS".to_string(),
        Some(Some(subject)) => format!("User:{subject}"),
        Some(None) => {
            // rustls verified it, but who it names cannot be read: not taken as anyone.
            tracing::warn!("closing connection from {peer}: the client certificate's subject cannot be read");
            return None;
        }
    };
    let (rd, wr) = send::split_tls(stream);
    Some((rd, wr, principal))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key encrypted by `openssl pkcs8 -topk8 -passout pass:broker-secret` (OpenSSL
    /// 3's default: PBES2, PBKDF2-HMAC-SHA256, AES-256-CBC) and its self-signed certificate.
    const encrypted: &str = include_str!("testdata/encrypted-key.pem");

    fn load(password: Option<&str>) -> Result<Tls, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker.pem");
        std::fs::write(&path, encrypted).unwrap();
        let files = TlsFiles { keystore: Some(path), key_password: password.map(|p| crate::security::Secret(p.into())), ..TlsFiles::default() };
        Tls::load(&files)
    }

    #[test]
    fn an_encrypted_key_is_read_with_its_password_and_refused_without() {
        assert!(load(Some("broker-secret")).is_ok_and(|t| t.acceptor.is_some()));
        let wrong = load(Some("not-it")).err().unwrap();
        assert!(wrong.contains("does not decrypt with ssl.key.password"), "{wrong}");
        let none = load(None).err().unwrap();
        assert!(none.contains("--ssl-key-password"), "{none}");
        assert_eq!(format!("{:?}", crate::security::Secret("broker-secret".into())), "Secret(..)", "never logged");
    }
}
