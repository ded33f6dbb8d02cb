//! Target `tls`: a TLS listener's server side (the rustls configuration `server::tls` builds:
//! TLS 1.2 and 1.3, ring's suites, client certificates requested) fed any bytes as what a
//! client sends — records cut short, handshakes out of order, a ClientHello with huge or
//! repeated extensions, renegotiation attempts, alerts — and the certificate reader
//! (`security::x509::subject_dn`) fed the same bytes as a DER certificate.
//!
//! Input: the bytes a client sends, in chunks of the sizes the first byte cycles through (so
//! records arrive split at every boundary). Promises checked: no panic; no handshake completes
//! (the fuzzer holds no key, so a finished handshake would mean the server skipped a check);
//! no application data is ever readable; the certificate reader returns, whatever the bytes.
//!
//! The server's identity is a fixed self-signed key and certificate for this target alone
//! (`tls_identity/fuzz-only.pem`), so an input replays the same way.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::Read;
use std::sync::{Arc, OnceLock};

/// The bytes one input may send (a ClientHello and some records).
const input_bytes_max: usize = 64 * 1024;

const identity: &[u8] = include_bytes!("tls_identity/fuzz-only.pem");

fn config() -> Arc<rustls::ServerConfig> {
    static CONFIG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = crate::server::tls::provider();
            let cert = CertificateDer::from_pem_slice(identity).expect("the fuzz identity's certificate");
            let key = PrivateKeyDer::from_pem_slice(identity).expect("the fuzz identity's key");
            let mut roots = rustls::RootCertStore::empty();
            roots.add(cert.clone()).expect("the fuzz identity as a root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).allow_unauthenticated().build().expect("verifier");
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_client_cert_verifier(verifier)
                .with_single_cert(vec![cert], key)
                .expect("the fuzz identity");
            Arc::new(config)
        })
        .clone()
}

pub fn run(data: &[u8]) {
    let _ = crate::security::x509::subject_dn(data);
    server_answered(data);
}

/// Feeds the input to a server connection, checking the promises; how many bytes the server
/// sent back (a ServerHello and its flight for a genuine ClientHello).
pub fn server_answered(data: &[u8]) -> usize {
    let mut sent = 0;
    let Some((&sizes, mut rest)) = data.split_first() else { return sent };
    rest = &rest[..rest.len().min(input_bytes_max)];
    let mut server = rustls::ServerConnection::new(config()).expect("a server connection");
    let chunks = [1usize, 5, 16, 300, 4096];
    let mut turn = sizes as usize;
    while !rest.is_empty() {
        let take = rest.len().min(chunks[turn % chunks.len()]);
        turn += 1;
        let mut chunk = &rest[..take];
        rest = &rest[take..];
        while !chunk.is_empty() {
            match server.read_tls(&mut chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => return sent, // rustls' buffer is full of unprocessed records: the shell would close
            }
            if server.process_new_packets().is_err() {
                return sent; // an alert is due and the connection closes
            }
            // What the server sends back is drained, as the socket would take it.
            let mut sink = Vec::new();
            while server.wants_write() {
                if server.write_tls(&mut sink).is_err() {
                    break;
                }
                sent += sink.len();
                sink.clear();
            }
            assert!(server.is_handshaking(), "a handshake completed with a client that holds no key");
            let mut plain = [0u8; 64];
            assert!(!matches!(server.reader().read(&mut plain), Ok(n) if n > 0), "application data before a handshake");
        }
    }
    sent
}
