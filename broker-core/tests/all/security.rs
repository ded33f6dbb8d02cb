//! SASL against the real `broker` binary on a SASL_PLAINTEXT listener, with real clients:
//! confluent-kafka and kafka-python authenticating by SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN
//! against the credentials `--add-scram` bootstrapped into the metadata log, kcat too; wrong
//! passwords, unknown users and unauthenticated clients refused; and the credentials still
//! there after a restart (they live in the metadata log, never as a password). Then TLS: the
//! same clients over SASL_SSL, and over SSL with client certificates required (`tls_clients.py`),
//! certificates made per test (`certs.rs`); untrusted authorities refused either way. ACLs
//! with real clients (`acl_clients.py`), and a KIP-848 regex consumer that sees only the topics
//! it may describe (`acl_regex_consumer.py`).

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::certs::Certs;
use crate::support::kcat;
use std::process::Command;
use std::time::Duration;

/// A broker whose client listener is SASL_PLAINTEXT on `ports[0]`, its controller listener
/// PLAINTEXT on `ports[1]`; `bootstrap`: with `--add-scram`.
fn sasl_broker(dir: &std::path::Path, ports: &[u16], bootstrap: bool) -> Broker {
    let (port, controller) = (ports[0], ports[1]);
    let listeners = format!("SASL_PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}");
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"admin-secret\";";
    let mut args = vec!["--listeners", &listeners, "--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN", "--sasl-jaas-config", jaas];
    if bootstrap {
        args.extend(["--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]", "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]"]);
    }
    Broker::start_listening(dir, port, &args)
}

fn kcat_metadata(broker: &Broker, mechanism: &str, password: &str) -> std::process::Output {
    kcat_metadata_with(broker, &["security.protocol=SASL_PLAINTEXT".to_string(), format!("sasl.mechanisms={mechanism}"), "sasl.username=admin".into(), format!("sasl.password={password}")])
}

fn kcat_metadata_with(broker: &Broker, settings: &[String]) -> std::process::Output {
    let bootstrap = broker.bootstrap();
    let mut cmd = Command::new(kcat());
    cmd.args(["-b", bootstrap.as_str(), "-L", "-m", "10"]);
    for setting in settings {
        cmd.args(["-X", setting]);
    }
    run_bounded(&mut cmd, None, Duration::from_secs(30), "kcat -L over SASL")
}

#[test]
fn real_clients_authenticate_by_scram_and_plain_and_bad_credentials_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ports = crate::support::free_ports(2);
    let mut broker = sasl_broker(dir.path(), &ports, true);
    let out = client_script(&mut broker, "sasl_clients.py", &["--topic", "sasl-topic"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    let ok = kcat_metadata(&broker, "SCRAM-SHA-512", "admin-secret");
    assert!(ok.status.success() && String::from_utf8_lossy(&ok.stdout).contains("sasl-topic"), "kcat SCRAM-SHA-512: {}\n{}", String::from_utf8_lossy(&ok.stderr), broker.log_tail());
    let bad = kcat_metadata(&broker, "SCRAM-SHA-256", "wrong");
    assert!(!bad.status.success(), "kcat with a wrong password got metadata: {}", String::from_utf8_lossy(&bad.stdout));
    // The credentials are metadata: a restart without --add-scram keeps them.
    broker.signal_and_wait(libc::SIGTERM);
    drop(broker);
    let mut again = sasl_broker(dir.path(), &ports, false);
    let ok = kcat_metadata(&again, "SCRAM-SHA-256", "admin-secret");
    assert!(ok.status.success(), "kcat after a restart: {}\n{}", String::from_utf8_lossy(&ok.stderr), again.log_tail());
    again.assert_alive("after the restart");
}

/// A broker whose client listener is `protocol` (SSL or SASL_SSL) on `ports[0]` with the test
/// CA's certificates, its controller listener PLAINTEXT on `ports[1]`, and `more` flags.
fn tls_broker(dir: &std::path::Path, ports: &[u16], certs: &Certs, protocol: &str, more: &[&str]) -> Broker {
    let listeners = format!("{protocol}://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let (keystore, truststore) = (certs.path("broker.pem"), certs.path("ca.pem"));
    // `more` may name the listeners itself.
    let listeners: &[&str] = if more.contains(&"--listeners") { &[] } else { &["--listeners", &listeners] };
    let mut args = listeners.to_vec();
    args.extend(["--ssl-keystore-type", "PEM", "--ssl-keystore-location", &keystore, "--ssl-truststore-location", &truststore]);
    args.extend(more);
    Broker::start_listening(dir, ports[0], &args)
}

#[test]
fn real_clients_over_sasl_ssl_and_ssl_with_client_certificates_and_untrusted_authorities_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = Certs::write(&dir.path().join("certs"));
    let ports = crate::support::free_ports(5);
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"admin-secret\";";
    // A PLAINTEXT listener beside the SASL_SSL one (the node's own links stay on SASL_SSL).
    let plain = format!("127.0.0.1:{}", ports[4]);
    let listeners = format!("SASL_SSL://127.0.0.1:{},PLAINTEXT://{plain},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let sasl = ["--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN", "--sasl-jaas-config", jaas, "--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]", "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]", "--listeners", &listeners, "--inter-broker-listener-name", "SASL_SSL"];
    let mut broker = tls_broker(&dir.path().join("sasl-ssl"), &ports[..2], &certs, "SASL_SSL", &sasl);
    let out = client_script(&mut broker, "tls_clients.py", &["--topic", "tls-topic", "--certs", &certs.path(""), "--mode", "sasl_ssl"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    let tls = |mechanism: &str, ca: &str| vec!["security.protocol=SASL_SSL".to_string(), format!("ssl.ca.location={}", certs.path(ca)), format!("sasl.mechanisms={mechanism}"), "sasl.username=admin".into(), "sasl.password=admin-secret".into()];
    let ok = kcat_metadata_with(&broker, &tls("SCRAM-SHA-512", "ca.pem"));
    assert!(ok.status.success() && String::from_utf8_lossy(&ok.stdout).contains("tls-topic"), "kcat over SASL_SSL: {}\n{}", String::from_utf8_lossy(&ok.stderr), broker.log_tail());
    // Each listener's clients are told its own endpoint.
    let sasl_ssl = String::from_utf8_lossy(&ok.stdout);
    assert!(sasl_ssl.contains(&format!("broker 0 at 127.0.0.1:{}", ports[0])), "kcat over SASL_SSL: {sasl_ssl}");
    let mut cmd = Command::new(kcat());
    cmd.args(["-b", plain.as_str(), "-L", "-m", "10"]);
    let plaintext = run_bounded(&mut cmd, None, Duration::from_secs(30), "kcat -L over PLAINTEXT");
    let said = String::from_utf8_lossy(&plaintext.stdout);
    assert!(plaintext.status.success() && said.contains(&format!("broker 0 at {plain}")) && said.contains("tls-topic"), "kcat on the PLAINTEXT listener: {said}{}", String::from_utf8_lossy(&plaintext.stderr));
    let untrusted = kcat_metadata_with(&broker, &tls("SCRAM-SHA-256", "rogue-ca.pem"));
    let said = String::from_utf8_lossy(&untrusted.stderr);
    assert!(said.contains("certificate verify failed"), "kcat trusting another CA: {said}");
    assert!(!untrusted.status.success(), "kcat trusting another CA got metadata: {}", String::from_utf8_lossy(&untrusted.stdout));
    broker.assert_alive("after the SASL_SSL clients");
    let mut broker = tls_broker(&dir.path().join("ssl"), &ports[2..], &certs, "SSL", &["--ssl-client-auth", "required"]);
    let out = client_script(&mut broker, "tls_clients.py", &["--topic", "tls-topic", "--certs", &certs.path(""), "--mode", "ssl"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    // The refusals were the handshake's. (librdkafka does not even offer the other CA's
    // certificate, as the broker names the authorities it takes: the next test offers it.)
    let log = broker.log_tail();
    assert!(log.contains("TLS handshake: peer sent no certificates"), "the SSL broker refused no handshake\n{log}");
    broker.assert_alive("after the SSL clients");
}

/// A TLS client of the project's own that presents `name`'s certificate (from `certs`) and
/// trusts the test CA.
fn own_tls_client(certs: &Certs, name: &str) -> tokio_rustls::TlsConnector {
    let (cert, key) = (certs.path(&format!("{name}.crt")), certs.path(&format!("{name}.key")));
    broker_core::server::tls::client(certs.path("ca.pem").as_ref(), Some((cert.as_ref(), key.as_ref()))).expect("client TLS")
}

#[test]
fn the_broker_itself_refuses_a_certificate_from_an_authority_it_does_not_trust() {
    use broker_core::client::Conn;
    use kafka_protocol::messages::MetadataRequest;
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = Certs::write(&dir.path().join("certs"));
    let ports = crate::support::free_ports(2);
    let broker = tls_broker(&dir.path().join("ssl"), &ports, &certs, "SSL", &["--ssl-client-auth", "required"]);
    let addr: std::net::SocketAddr = broker.bootstrap().parse().expect("an address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let within = Duration::from_secs(10);
        let mut alice = Conn::connect_tls(addr, None, "alice", within, &own_tls_client(&certs, "alice")).await.expect("alice's certificate is the CA's");
        let metadata = alice.send(&MetadataRequest::default()).await.expect("Metadata over TLS");
        assert_eq!(metadata.brokers.len(), 1, "{metadata:?}");
        // The other CA's certificate is offered (rustls sends it whatever the broker asks for)
        // and refused: the handshake, or at the latest the first request, fails.
        let refused = match Conn::connect_tls(addr, None, "mallory", within, &own_tls_client(&certs, "rogue-alice")).await {
            Err(e) => e.to_string(),
            Ok(mut conn) => conn.send(&MetadataRequest::default()).await.err().map(|e| e.to_string()).expect("an untrusted certificate was served"),
        };
        eprintln!("refused: {refused}");
    });
    let log = broker.log_tail();
    assert!(log.contains("TLS handshake: invalid peer certificate: UnknownIssuer"), "the broker did not refuse the certificate itself\n{log}");
    // The operator's tool presents a certificate too.
    let seedlog = |more: &[String]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seedlog"));
        cmd.args(["users", "--bootstrap", &broker.bootstrap(), "--ssl-ca", &certs.path("ca.pem")]).args(more).arg("list");
        run_bounded(&mut cmd, None, Duration::from_secs(30), "seedlog users")
    };
    let with = seedlog(&["--ssl-cert".into(), certs.path("alice.crt"), "--ssl-key".into(), certs.path("alice.key")]);
    assert!(with.status.success(), "seedlog with alice's certificate: {}", String::from_utf8_lossy(&with.stderr));
    assert!(!seedlog(&[]).status.success(), "seedlog without a certificate was served");
}

/// A broker over SASL_PLAINTEXT whose authorizer is on (StandardAuthorizer), with super user
/// admin (SCRAM-SHA-256, password admin-secret).
fn authorizing_broker(dir: &std::path::Path) -> Broker {
    let ports = crate::support::free_ports(2);
    let listeners = format!("SASL_PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"admin-secret\";";
    let args = [
        "--listeners",
        &listeners,
        "--sasl-jaas-config",
        jaas,
        "--add-scram",
        "SCRAM-SHA-256=[name=admin,password=admin-secret]",
        "--authorizer-class-name",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users",
        "User:admin",
    ];
    Broker::start_listening(dir, ports[0], &args)
}

#[test]
fn acls_allow_and_deny_real_clients_per_topic_group_and_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = authorizing_broker(dir.path());
    let out = client_script(&mut broker, "acl_clients.py", &[]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    // The operator's tools see what the clients did, change it, and refuse alice.
    let seedlog = |user: &str, password: &str, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seedlog"));
        cmd.args(&args[..1]).args(["--bootstrap", &broker.bootstrap(), "--sasl-username", user, "--sasl-password", password]).args(&args[1..]);
        run_bounded(&mut cmd, None, Duration::from_secs(30), "seedlog")
    };
    let text = |o: &std::process::Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let users = seedlog("admin", "admin-secret", &["users", "list"]);
    assert!(users.status.success() && text(&users).contains("alice: SCRAM-SHA-256 (4096 iterations)"), "{}", text(&users));
    let added = seedlog("admin", "admin-secret", &["acls", "add", "--group", "audit", "--prefixed", "--principal", "User:bob", "--operation", "Read", "--deny"]);
    assert!(added.status.success(), "{}", text(&added));
    let listed = seedlog("admin", "admin-secret", &["acls", "list"]);
    let listed = text(&listed);
    assert_eq!(listed.lines().count(), 4, "three left by the script and one added:\n{listed}");
    assert!(listed.contains("Group \"audit\" PREFIXED: DENY User:bob Read from *") && listed.contains("Topic \"payments-secret\" LITERAL: DENY User:alice Read from *"), "{listed}");
    let refused = seedlog("alice", "alice-secret", &["acls", "list"]);
    assert!(!refused.status.success() && text(&refused).contains("ClusterAuthorizationFailed"), "{}", text(&refused));
    let removed = seedlog("admin", "admin-secret", &["acls", "remove", "--group", "audit", "--prefixed"]);
    assert!(removed.status.success() && text(&removed).contains("removed 1 ACL(s)"), "{}", text(&removed));
}

/// KIP-848 (`group.protocol=consumer`): confluent-kafka subscribed to `^.*` is assigned only
/// the topics its principal may DESCRIBE, and one more once an ACL lets it (Kafka 4's
/// KAFKA-18813), `acl_regex_consumer.py`.
#[test]
fn a_kip848_regex_consumer_is_assigned_only_the_topics_its_acls_let_it_describe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = authorizing_broker(dir.path());
    let out = client_script(&mut broker, "acl_regex_consumer.py", &[]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
}

#[test]
fn sasl_sessions_expire_and_clients_reauthenticate_on_their_connection() {
    use broker_core::client::Conn;
    use broker_core::security::{scram::Mechanism, SaslLogin};
    use kafka_protocol::messages::MetadataRequest;
    let dir = tempfile::tempdir().expect("tempdir");
    let ports = crate::support::free_ports(2);
    let listeners = format!("SASL_PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"admin-secret\";";
    let args = ["--listeners", &listeners, "--sasl-jaas-config", jaas, "--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]", "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]", "--connections-max-reauth-ms", "2000"];
    let mut broker = Broker::start_listening(dir.path(), ports[0], &args);
    let out = client_script(&mut broker, "reauth_clients.py", &["--topic", "reauth"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    let log = broker.log_tail();
    assert!(!log.contains("session expired"), "librdkafka did not re-authenticate in time:\n{log}");
    // The project's own client: a session used after it expired is closed; one renewed on its
    // connection goes on.
    let addr: std::net::SocketAddr = broker.bootstrap().parse().expect("an address");
    let login = SaslLogin { mechanism: Mechanism::Sha256, user: "admin".into(), password: "admin-secret".into() };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let within = Duration::from_secs(10);
        let mut stale = Conn::connect(addr, "stale", within).await.expect("connect");
        stale.authenticate(&login, "cnonce-stale").await.expect("authenticate");
        let mut renewed = Conn::connect(addr, "renewed", within).await.expect("connect");
        renewed.authenticate(&login, "cnonce-renewed").await.expect("authenticate");
        stale.send(&MetadataRequest::default()).await.expect("Metadata within the session");
        tokio::time::sleep(Duration::from_millis(2_300)).await;
        renewed.authenticate(&login, "cnonce-again").await.expect("re-authentication on the same connection");
        renewed.send(&MetadataRequest::default()).await.expect("Metadata after re-authenticating");
        assert!(stale.send(&MetadataRequest::default()).await.is_err(), "a request after the session expired was answered");
    });
    let log = broker.log_tail();
    assert!(log.contains("session expired (connections.max.reauth.ms=2000)"), "the stale connection's close was not logged as expiry\n{log}");
}

/// Sends `frame` (no size prefix) with its prefix and reads one answer frame back (None: the
/// broker closed the connection).
fn exchange(stream: &mut std::net::TcpStream, frame: &[u8]) -> Option<Vec<u8>> {
    use std::io::{Read, Write};
    stream.write_all(&(frame.len() as i32).to_be_bytes()).ok()?;
    stream.write_all(frame).ok()?;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).ok()?;
    Some(body)
}

#[test]
fn a_v0_handshake_takes_raw_plain_tokens_of_any_length() {
    use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader, SaslHandshakeRequest};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
    let dir = tempfile::tempdir().expect("tempdir");
    let ports = crate::support::free_ports(2);
    let listeners = format!("SASL_PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"b\";";
    let args = ["--listeners", &listeners, "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256", "--sasl-jaas-config", jaas, "--add-scram", "SCRAM-SHA-256=[name=a,password=b]"];
    let broker = Broker::start_listening(dir.path(), ports[0], &args);
    fn request<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, body: &R) -> Vec<u8> {
        let header = RequestHeader::default().with_request_api_key(key as i16).with_request_api_version(version).with_correlation_id(7).with_client_id(Some(StrBytes::from_static_str("raw")));
        let mut out = bytes::BytesMut::new();
        header.encode(&mut out, R::header_version(version)).unwrap();
        body.encode(&mut out, version).unwrap();
        out.to_vec()
    }
    let login = |token: &[u8]| {
        let mut stream = std::net::TcpStream::connect(broker.bootstrap()).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let handshake = request(ApiKey::SaslHandshake, 0, &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")));
        let answer = exchange(&mut stream, &handshake).expect("a handshake answer");
        assert_eq!(&answer[4..6], &[0, 0], "handshake error code");
        let reply = exchange(&mut stream, token);
        let after = exchange(&mut stream, &request(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default()));
        (reply, after)
    };
    // Four bytes: shorter than any request header, and still a whole PLAIN login.
    let (reply, after) = login(b"\0a\0b");
    assert_eq!(reply.as_deref(), Some(&[][..]), "an empty raw reply: authenticated");
    assert!(after.is_some(), "requests served after a short raw login");
    let (reply, _) = login(b"\0a\0c");
    assert_eq!(reply, None, "a wrong password closes the connection");
}

#[test]
fn nodes_check_each_others_certificates_by_the_host_name_they_were_given() {
    // A certificate for the name localhost alone; the node is named localhost as a voter and in
    // its registration, so its links to itself (registration and heartbeats to its controller
    // listener, both SSL) must check the name: by IP address they would fail, and the broker
    // would never be served.
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = Certs::write(&dir.path().join("certs"));
    let ports = crate::support::free_ports(2);
    let listeners = format!("SSL://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[0], ports[1]);
    let (keystore, truststore) = (certs.path("broker-by-name.pem"), certs.path("ca.pem"));
    let (advertised, voters) = (format!("localhost:{}", ports[0]), format!("0@localhost:{}", ports[1]));
    let args = ["--listeners", &listeners, "--listener-security-protocol-map", "CONTROLLER:SSL", "--ssl-keystore-location", &keystore, "--ssl-truststore-location", &truststore, "--advertised", &advertised, "--controller-quorum-voters", &voters];
    let broker = Broker::start_listening(&dir.path().join("data"), ports[0], &args);
    let bootstrap = format!("localhost:{}", ports[0]);
    let kcat_ssl = |extra: &[&str], stdin: Option<Vec<u8>>| {
        let mut cmd = Command::new(kcat());
        cmd.args(["-b", bootstrap.as_str(), "-X", "security.protocol=SSL", "-X", &format!("ssl.ca.location={truststore}")]).args(extra);
        run_bounded(&mut cmd, stdin, Duration::from_secs(40), "kcat over SSL by name")
    };
    // A produce needs the node's links: the topic's auto-creation and the broker's unfencing.
    let produced = kcat_ssl(&["-P", "-t", "named", "-p", "0"], Some(b"by-name\n".to_vec()));
    let read = kcat_ssl(&["-C", "-t", "named", "-p", "0", "-o", "beginning", "-e", "-c", "1"], None);
    let log = broker.log_tail();
    assert!(produced.status.success() && String::from_utf8_lossy(&read.stdout).trim() == "by-name", "produce and read back by name: {}\n{}\n{log}", String::from_utf8_lossy(&produced.stderr), String::from_utf8_lossy(&read.stderr));
    assert!(!log.contains("TLS handshake"), "a node's link failed its TLS handshake:\n{log}");
}
