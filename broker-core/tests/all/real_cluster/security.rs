//! A cluster whose every listener is SASL_SSL: three broker processes, each with a client
//! listener (SASL_SSL, advertised as `localhost`) and an INTERNAL one (SASL_SSL, the
//! inter-broker listener, advertised as 127.0.0.1), each voter of the
//! metadata quorum on a CONTROLLER listener mapped to SASL_SSL, every link between nodes (Raft,
//! the controller link, the metadata follower, replica fetchers, the transaction coordinator's
//! markers, a leader's verifications) over TLS, each node checking the other's certificate
//! against the test CA and presenting its own (`ssl.client.auth=requested`: the clients present
//! none), and authenticated with SCRAM as the broker's own
//! user (`--sasl-jaas-config`), the first user bootstrapped by `--add-scram` on every node.
//! Real clients produce with acks=all and run transactions across brokers
//! (`tests/clients/sasl_cluster.py`), and see each listener's own endpoints in Metadata.

use super::*;

#[test]
fn a_cluster_whose_brokers_and_controllers_authenticate_to_each_other() {
    let serial = one_cluster_at_a_time();
    let dir = tempfile::tempdir().expect("tempdir");
    let ports = free_ports(3 * cluster_size);
    let (controller_port, internal_port) = (|i: usize| ports[cluster_size + i], |i: usize| ports[2 * cluster_size + i]);
    let voters: Vec<String> = (0..cluster_size).map(|i| format!("{i}@127.0.0.1:{}", controller_port(i))).collect();
    let voters = voters.join(",");
    let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";"#;
    let certs = crate::certs::Certs::write(&dir.path().join("certs"));
    let mut cluster = Cluster { nodes: Vec::new(), _dir: dir, _serial: serial };
    for id in 0..cluster_size {
        let data = cluster._dir.path().join(format!("node-{id}"));
        std::fs::create_dir_all(&data).expect("create data dir");
        let flags: Vec<String> = [
            "--listeners",
            &format!("SASL_SSL://127.0.0.1:{},INTERNAL://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", ports[id], internal_port(id), controller_port(id)),
            "--listener-security-protocol-map",
            "CONTROLLER:SASL_SSL,INTERNAL:SASL_SSL",
            "--inter-broker-listener-name",
            "INTERNAL",
            "--advertised-listeners",
            &format!("SASL_SSL://localhost:{}", ports[id]),
            "--ssl-keystore-location",
            &certs.path("broker.pem"),
            "--ssl-truststore-location",
            &certs.path("ca.pem"),
            "--ssl-client-auth",
            "requested",
            "--sasl-jaas-config",
            jaas,
            "--add-scram",
            "SCRAM-SHA-256=[name=admin,password=admin-secret]",
            "--transaction-state-log-replication-factor",
            "3",
            "--transaction-state-log-num-partitions",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        match Node::start(id as i32, ports[id], &data, &voters, &flags) {
            Ok(node) => cluster.nodes.push(node),
            Err(why) => cluster.fail(&format!("starting the SASL cluster: {why}")),
        }
    }
    let client: Vec<String> = (0..cluster_size).map(|i| format!("localhost:{}", ports[i])).collect();
    let internal: Vec<String> = (0..cluster_size).map(|i| format!("127.0.0.1:{}", internal_port(i))).collect();
    let args = ["--topic", "sasl-replicated", "--ca", &certs.path("ca.pem"), "--expect-brokers", &client.join(","), "--internal", &internal.join(",")];
    let out = cluster.script(0, "sasl_cluster.py", &args);
    eprintln!("{}", out.trim());
    cluster.assert_alive("after the SASL cluster's work", None);
}
