//! SASL against the real `broker` binary on a SASL_PLAINTEXT listener, with real clients:
//! confluent-kafka and kafka-python authenticating by SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN
//! against the credentials `--add-scram` bootstrapped into the metadata log, kcat too; wrong
//! passwords, unknown users and unauthenticated clients refused; and the credentials still
//! there after a restart (they live in the metadata log, never as a password).

use crate::real_clients::{client_script, run_bounded, Broker};
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
    let bootstrap = broker.bootstrap();
    let mut cmd = Command::new(kcat());
    cmd.args(["-b", bootstrap.as_str(), "-L", "-m", "10"]);
    for setting in ["security.protocol=SASL_PLAINTEXT".to_string(), format!("sasl.mechanisms={mechanism}"), "sasl.username=admin".into(), format!("sasl.password={password}")] {
        cmd.args(["-X", &setting]);
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
