//! The configuration's resolution, tested: flags, the config file, Kafka's names and checks.

use super::*;

#[test]
fn process_roles_agree_with_the_voters() {
    let voters = Some("0@127.0.0.1:9092,1@127.0.0.1:9093".to_string());
    let with = |id: i32, roles: Option<&str>| resolve(&Flags { node_id: Some(id), controller_quorum_voters: voters.clone(), process_roles: roles.map(String::from), ..Flags::default() });
    assert!(with(0, None).unwrap().1.broker_role, "combined mode by default");
    assert!(with(2, None).unwrap().1.broker_role, "a broker that is not a voter");
    assert!(!with(1, Some("controller")).unwrap().1.broker_role, "a voter-only node");
    assert!(with(1, Some(" controller , broker ")).unwrap().1.broker_role);
    assert!(with(2, Some("broker")).unwrap().1.broker_role);
    for (id, roles, why) in [(2, "controller", "not in controller.quorum.voters"), (0, "broker", "must include controller"), (0, "controller,zookeeper", "unknown role 'zookeeper'"), (0, ",", "no role")] {
        let e = with(id, Some(roles)).unwrap_err();
        assert!(e.contains(why), "{roles}: {e}");
    }
}

#[test]
fn file_then_flags_with_named_errors() {
    let file = "\"log.segment.bytes\" = 1048576\n\"num.partitions\" = 3\n\"log.dirs\" = \"/x\"\n";
    let over = Flags { num_partitions: Some(6), ..Flags::default() };
    let (listen, c) = resolve(&merge_file(file, over).unwrap()).unwrap();
    assert_eq!(listen.to_string(), "127.0.0.1:9092");
    assert_eq!((c.log.segment_bytes, c.num_partitions, c.data_dir.clone()), (1048576, 6, PathBuf::from("/x")));
    assert!(merge_file("\"log.segmnt.bytes\" = 1", Flags::default()).unwrap_err().contains("log.segmnt.bytes"));
    assert!(merge_file("\"num.partitions\" = \"x\"", Flags::default()).unwrap_err().contains("num.partitions"));
    let bad = Flags { log_segment_bytes: Some(3), ..Flags::default() };
    assert!(resolve(&bad).unwrap_err().contains("segment.bytes=3"));
    let every = Flags { log_flush_interval_messages: Some(1), ..Flags::default() };
    assert_eq!(resolve(&every).unwrap().1.log.flush, FlushPolicy::EveryBatch);
    let c = resolve(&Flags::default()).unwrap().1;
    assert_eq!(c.voters, [(0, "127.0.0.1:9092".to_string())].into(), "a lone node is its own controller");
    let other = Flags { controller_quorum_voters: Some("3@10.0.0.4:9093".into()), ..Flags::default() };
    assert_eq!(resolve(&other).unwrap().1.voters.keys().copied().collect::<Vec<_>>(), vec![3]);
    let three = Flags { controller_quorum_voters: Some("1@a:1,2@b:2,0@c:3".into()), ..Flags::default() };
    assert_eq!(resolve(&three).unwrap().1.voters.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
    for bad in ["1@a:1,1@b:2", "1@a", "x@a:1", "1a:1", "1@a:99999", "0@a:1,1@a:2,2@a:3,3@a:4,4@a:5,5@a:6,6@a:7,7@a:8"] {
        let f = Flags { controller_quorum_voters: Some(bad.into()), ..Flags::default() };
        assert!(resolve(&f).unwrap_err().contains("controller.quorum.voters"), "{bad}");
    }
    let slow = Flags { controller_quorum_election_timeout_ms: Some(0), ..Flags::default() };
    assert!(resolve(&slow).is_err(), "a zero election timeout is refused");
    // The runtime's threads: a count from 1, from the file or the flag (which wins).
    assert_eq!(merge_file("\"worker.threads\" = 1", Flags::default()).unwrap().worker_threads, Some(1));
    assert_eq!(merge_file("\"worker.threads\" = 1", Flags { worker_threads: Some(3), ..Flags::default() }).unwrap().worker_threads, Some(3));
    for bad in ["0", "-1", "1025", "\"two\""] {
        assert!(merge_file(&format!("\"worker.threads\" = {bad}"), Flags::default()).unwrap_err().contains("worker.threads"), "{bad}");
    }
    assert!(<Flags as clap::Parser>::try_parse_from(["broker", "--worker-threads", "0"]).is_err());
    assert_eq!(<Flags as clap::Parser>::try_parse_from(["broker", "--worker-threads", "2"]).unwrap().worker_threads, Some(2));
}

#[test]
fn group_settings_by_kafkas_names() {
    let file = "\"group.initial.rebalance.delay.ms\" = 0\n\"offsets.topic.num.partitions\" = 5\n\"offsets.retention.minutes\" = 2\n";
    let c = resolve(&merge_file(file, Flags::default()).unwrap()).unwrap().1;
    assert_eq!((c.groups.initial_rebalance_delay_ms, c.groups.offsets_partitions, c.groups.offsets_retention_ms), (0, 5, 120_000));
    let bad = Flags { group_min_session_timeout_ms: Some(10), group_max_session_timeout_ms: Some(5), ..Flags::default() };
    assert!(resolve(&bad).unwrap_err().contains("group.min.session.timeout.ms=10"));
    let txn = merge_file("\"transaction.max.timeout.ms\" = 60000\n\"transaction.state.log.num.partitions\" = 3\n\"transaction.version\" = 1\n", Flags::default()).unwrap();
    let (_, c) = resolve(&txn).unwrap();
    assert_eq!((c.txns.max_timeout_ms, c.txns.state_partitions, c.txns.state_min_isr), (60_000, 3, 2));
    assert_eq!(c.txns.transaction_version, crate::kafka::TxnVersion::Classic);
    assert_eq!(resolve(&Flags::default()).unwrap().1.txns.transaction_version, crate::kafka::TxnVersion::EpochBump, "KIP-890 is the default");
    assert!(resolve(&Flags { transaction_version: Some(3), ..Flags::default() }).unwrap_err().contains("transaction.version=3"));
    assert!(resolve(&Flags { transaction_state_log_min_isr: Some(0), ..Flags::default() }).unwrap_err().contains("transaction.state.log.min.isr=0"));
    let none = Flags { offsets_topic_num_partitions: Some(0), ..Flags::default() };
    assert!(resolve(&none).unwrap_err().contains("offsets.topic.num.partitions=0"));
}

#[test]
fn listeners_sasl_and_bootstrap_credentials_take_kafkas_names() {
    use crate::security::{sasl::Mech, scram::Mechanism, Protocol};
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"s3cret\";";
    let sasl = |listeners: &str| Flags { listeners: Some(listeners.into()), add_scram: vec!["SCRAM-SHA-512=[name=admin,password=s3cret]".into()], sasl_jaas_config: Some(jaas.into()), ..Flags::default() };
    let (listen, c) = resolve(&sasl("SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")).unwrap();
    assert_eq!((listen.to_string(), c.security.inter_broker_protocol, c.security.controller_listener.map(|a| a.to_string())), ("127.0.0.1:9092".into(), Protocol::SaslPlaintext, Some("127.0.0.1:9093".into())));
    assert_eq!(c.voters.get(&0).map(|a| a.to_string()), Some("127.0.0.1:9093".into()), "the quorum is the node's controller listener");
    assert_eq!(c.security.sasl_mechanisms, vec![Mech::Scram(Mechanism::Sha256), Mech::Scram(Mechanism::Sha512)], "PLAIN only when asked for");
    let (user, credential) = &c.security.scram_bootstrap[0];
    assert!(user == "admin" && credential.matches(b"s3cret") && !credential.matches(b"secret"), "salted and iterated, never the password");
    let login = c.security.inter_broker.clone().expect("the broker's own user");
    assert_eq!((login.mechanism, login.user.as_str(), login.password.as_str()), (Mechanism::Sha256, "admin", "s3cret"));
    // A cluster: both listeners SASL, the voters on the controller listeners.
    let cluster = Flags {
        controller_quorum_voters: Some("0@127.0.0.1:9093,1@127.0.0.1:9095".into()),
        listener_security_protocol_map: Some("CONTROLLER:SASL_PLAINTEXT".into()),
        sasl_mechanism_inter_broker_protocol: Some("SCRAM-SHA-512".into()),
        ..sasl("SASL_PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093")
    };
    let (_, c) = resolve(&cluster).unwrap();
    assert_eq!((c.security.controller_protocol, c.security.inter_broker.map(|l| l.mechanism)), (Protocol::SaslPlaintext, Some(Mechanism::Sha512)));
    for (flags, why) in [
        (Flags { sasl_jaas_config: None, ..sasl("SASL_PLAINTEXT://127.0.0.1:9092") }, "needs --sasl-jaas-config"),
        (Flags { sasl_jaas_config: Some("username=admin".into()), ..sasl("SASL_PLAINTEXT://127.0.0.1:9092") }, "expected username="),
        (sasl("SASL_PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093"), "on loopback"),
        (sasl("SSL://127.0.0.1:9092"), "needs --ssl-keystore-location"),
        (sasl("TLS://127.0.0.1:9092"), "no protocol"),
        (sasl("SASL_SSL://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093"), "inter.broker.listener.name=PLAINTEXT is not among"),
        (Flags { listen: Some("127.0.0.1:9092".parse().unwrap()), ..sasl("PLAINTEXT://127.0.0.1:9092") }, "both given"),
        (Flags { sasl_enabled_mechanisms: Some("GSSAPI".into()), ..sasl("PLAINTEXT://127.0.0.1:9092") }, "GSSAPI is not supported"),
        (Flags { add_scram: vec!["SCRAM-SHA-256=[name=a]".into()], ..Flags::default() }, "no password"),
        (Flags { controller_quorum_voters: Some("0@127.0.0.1:9093,1@127.0.0.1:9095".into()), ..sasl("SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093") }, "one-node cluster's own"),
    ] {
        let e = resolve(&flags).unwrap_err();
        assert!(e.contains(why), "{flags:?}: {e}");
    }
    // The file's names; a --listen flag wins over the file's listeners.
    let file = "listeners = \"SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\"\n\"sasl.enabled.mechanisms\" = \"PLAIN\"\n\"sasl.jaas.config\" = 'x required username=\"a\" password=\"b\";'\n";
    let (_, c) = resolve(&merge_file(file, Flags::default()).unwrap()).unwrap();
    assert_eq!((c.security.inter_broker_protocol, c.security.sasl_mechanisms.clone()), (Protocol::SaslPlaintext, vec![Mech::Plain]));
    let (listen, c) = resolve(&merge_file(file, Flags { listen: Some("127.0.0.1:9999".parse().unwrap()), ..Flags::default() }).unwrap()).unwrap();
    assert_eq!((listen.to_string(), c.security.inter_broker_protocol), ("127.0.0.1:9999".into(), Protocol::Plaintext));
}

#[test]
fn tls_takes_kafkas_pem_stores_and_refuses_what_cannot_work() {
    use crate::security::{ClientAuth, Protocol};
    let tls = |listeners: &str| Flags {
        listeners: Some(listeners.into()),
        ssl_keystore_location: Some("/etc/seedlog/broker.pem".into()),
        ssl_truststore_location: Some("/etc/seedlog/ca.pem".into()),
        ..Flags::default()
    };
    let (_, c) = resolve(&Flags { ssl_client_auth: Some("required".into()), ssl_keystore_type: Some("PEM".into()), ..tls("SSL://127.0.0.1:9093") }).unwrap();
    assert_eq!((c.security.inter_broker_protocol, c.security.tls.client_auth), (Protocol::Ssl, ClientAuth::Required));
    assert_eq!(c.security.tls.keystore.as_deref(), Some(std::path::Path::new("/etc/seedlog/broker.pem")));
    for (flags, why) in [
        (Flags { ssl_keystore_location: None, ..tls("SSL://127.0.0.1:9093") }, "needs --ssl-keystore-location"),
        (Flags { ssl_truststore_location: None, ..tls("SSL://127.0.0.1:9093") }, "needs --ssl-truststore-location"),
        (Flags { ssl_keystore_type: Some("JKS".into()), ..tls("SSL://127.0.0.1:9093") }, "only PEM"),
        (Flags { ssl_client_auth: Some("always".into()), ..tls("SSL://127.0.0.1:9093") }, "none, requested or required"),
        (Flags { ssl_truststore_location: None, ssl_client_auth: Some("requested".into()), ..tls("PLAINTEXT://127.0.0.1:9092") }, "needs --ssl-truststore-location"),
        (tls("SASL_SSL://127.0.0.1:9093"), "needs --sasl-jaas-config"),
        (Flags { controller_quorum_voters: Some("0@127.0.0.1:9094,1@127.0.0.1:9095".into()), ..tls("SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094") }, "CONTROLLER:SSL"),
    ] {
        let e = resolve(&flags).unwrap_err();
        assert!(e.contains(why), "{flags:?}: {e}");
    }
    let file = "listeners = \"SSL://127.0.0.1:9093\"\n\"ssl.keystore.type\" = \"PEM\"\n\"ssl.keystore.location\" = \"k.pem\"\n\"ssl.truststore.location\" = \"t.pem\"\n\"ssl.client.auth\" = \"requested\"\n";
    let (_, c) = resolve(&merge_file(file, Flags::default()).unwrap()).unwrap();
    assert_eq!((c.security.inter_broker_protocol, c.security.tls.client_auth), (Protocol::Ssl, ClientAuth::Requested));
    assert!(merge_file("\"ssl.cipher.suites\" = \"x\"\n", Flags::default()).unwrap_err().contains("unknown setting 'ssl.cipher.suites'"));
}

#[test]
fn the_authorizer_takes_kafkas_names_and_the_brokers_own_user_is_a_super_user() {
    let jaas = "x required username=\"broker\" password=\"p\";";
    let on = Flags {
        listeners: Some("SASL_PLAINTEXT://127.0.0.1:9092".into()),
        sasl_jaas_config: Some(jaas.into()),
        authorizer_class_name: Some("org.apache.kafka.metadata.authorizer.StandardAuthorizer".into()),
        super_users: Some("User:admin;User:ops".into()),
        ..Flags::default()
    };
    let (_, c) = resolve(&on).unwrap();
    let a = &c.security.authorizer;
    assert!(a.enabled && !a.allow_if_no_acl);
    assert_eq!(a.super_users.iter().map(String::as_str).collect::<Vec<_>>(), vec!["User:admin", "User:broker", "User:ops"]);
    assert!(!resolve(&Flags::default()).unwrap().1.security.authorizer.enabled, "off unless named");
    let old = Flags { authorizer_class_name: Some("kafka.security.authorizer.AclAuthorizer".into()), ..Flags::default() };
    assert!(resolve(&old).unwrap_err().contains("only org.apache.kafka.metadata.authorizer.StandardAuthorizer"));
    assert!(resolve(&Flags { super_users: Some("admin".into()), ..Flags::default() }).unwrap_err().contains("TYPE:NAME"));
    let file = "\"authorizer.class.name\" = \"org.apache.kafka.metadata.authorizer.StandardAuthorizer\"\n\"allow.everyone.if.no.acl.found\" = true\n\"super.users\" = \"User:admin\"\n";
    let (_, c) = resolve(&merge_file(file, Flags::default()).unwrap()).unwrap();
    assert!(c.security.authorizer.enabled && c.security.authorizer.allow_if_no_acl);
}

#[test]
fn several_listeners_each_advertise_their_own_endpoint() {
    use crate::metadata::Endpoint;
    use crate::security::Protocol;
    let jaas = "x required username=\"broker\" password=\"b\";";
    let flags = Flags {
        listeners: Some("PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://0.0.0.0:9094,INTERNAL://127.0.0.1:9095".into()),
        listener_security_protocol_map: Some("INTERNAL:SASL_PLAINTEXT".into()),
        inter_broker_listener_name: Some("INTERNAL".into()),
        advertised_listeners: Some("SASL_PLAINTEXT://broker1.example.com:9094,INTERNAL://10.0.0.1:9095".into()),
        sasl_jaas_config: Some(jaas.into()),
        ..Flags::default()
    };
    let (listen, c) = resolve(&flags).unwrap();
    assert_eq!((listen.to_string(), c.security.inter_broker_listener.as_str(), c.security.inter_broker_protocol), ("127.0.0.1:9095".into(), "INTERNAL", Protocol::SaslPlaintext));
    let names: Vec<(&str, Protocol)> = c.security.listeners.iter().map(|l| (l.name.as_str(), l.protocol)).collect();
    assert_eq!(names, vec![("PLAINTEXT", Protocol::Plaintext), ("SASL_PLAINTEXT", Protocol::SaslPlaintext), ("INTERNAL", Protocol::SaslPlaintext)]);
    let e = |name: &str, host: &str, port: i32| Endpoint { name: name.into(), host: host.into(), port };
    // The inter-broker listener's first; one left out of advertised.listeners advertises its address.
    assert_eq!(c.endpoints(), vec![e("INTERNAL", "10.0.0.1", 9095), e("PLAINTEXT", "127.0.0.1", 9092), e("SASL_PLAINTEXT", "broker1.example.com", 9094)]);
    assert_eq!((c.advertised_host.as_str(), c.advertised_port), ("10.0.0.1", 9095));
    // Kafka's default inter-broker listener is the one named PLAINTEXT, whose links need no login.
    let (_, c) = resolve(&Flags { inter_broker_listener_name: None, sasl_jaas_config: None, ..flags.clone() }).unwrap();
    assert_eq!((c.security.inter_broker_listener.as_str(), c.security.inter_broker.is_none(), c.endpoints()[0].port), ("PLAINTEXT", true, 9092));
    // One listener: one endpoint, under its name; the file's names.
    let file = "listeners = \"SSL://127.0.0.1:9093\"\n\"advertised.listeners\" = \"SSL://localhost:9093\"\n\"ssl.keystore.location\" = \"k.pem\"\n\"ssl.truststore.location\" = \"ca.pem\"\n";
    let (_, c) = resolve(&merge_file(file, Flags::default()).unwrap()).unwrap();
    assert_eq!((c.endpoints(), c.advertised_listeners.len()), (vec![e("SSL", "localhost", 9093)], 0));
    let file = "listeners = \"A://127.0.0.1:9092,B://127.0.0.1:9093\"\n\"listener.security.protocol.map\" = \"A:PLAINTEXT,B:PLAINTEXT\"\n\"inter.broker.listener.name\" = \"B\"\n";
    assert_eq!(resolve(&merge_file(file, Flags::default()).unwrap()).unwrap().1.security.inter_broker_listener, "B");
    for (bad, why) in [
        (Flags { inter_broker_listener_name: Some("REPLICATION".into()), ..flags.clone() }, "inter.broker.listener.name=REPLICATION is not among the listeners"),
        (Flags { advertised_listeners: Some("EXTERNAL://h:1".into()), ..flags.clone() }, "names EXTERNAL, which is not a client listener"),
        (Flags { advertised_listeners: Some("INTERNAL://0.0.0.0:9095".into()), ..flags.clone() }, "unspecified"),
        (Flags { advertised_listeners: Some("INTERNAL://h".into()), ..flags.clone() }, "expected NAME://host:port"),
        (Flags { advertised_listeners: None, advertised: Some("h:1".into()), ..flags.clone() }, "one-listener shorthand"),
        (Flags { listeners: Some("PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093".into()), ..Flags::default() }, "named twice"),
        (Flags { listeners: Some("CONTROLLER://127.0.0.1:9093".into()), ..Flags::default() }, "no client listener"),
    ] {
        let e = resolve(&bad).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
}
