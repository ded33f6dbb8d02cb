//! Per-topic configs and DeleteRecords with real admin clients against the real `broker`
//! binary (issue 9 items 5 and 6): confluent-kafka's AdminClient creates a topic with configs,
//! changes them with `incremental_alter_configs` and sees them in `describe_configs` as
//! DYNAMIC_TOPIC_CONFIG, a bad value is refused with INVALID_CONFIG, the new retention.ms
//! deletes old segments within a bounded wait, kafka-python's legacy AlterConfigs switches the
//! topic to LogAppendTime (keeping the other overrides it read back), and `delete_records` moves
//! a partition's low watermark. Then the broker restarts on the same data directory and every
//! change is still there: overrides replayed from the metadata log, the log start from its
//! checkpoint. The checks themselves are in `tests/clients/topic_configs.py`. Group configs
//! (KIP-848, KIP-932) likewise, with `tests/clients/group_configs.py`.

use crate::real_clients::{client_script, Broker};

#[test]
fn admin_clients_change_topic_configs_and_delete_records_and_both_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let out = client_script(&mut broker, "topic_configs.py", &["--topic", "cfg", "--phase", "change"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    broker.signal_and_wait(libc::SIGTERM);
    let mut broker = broker.restart();
    client_script(&mut broker, "topic_configs.py", &["--topic", "cfg", "--phase", "restarted"]);
}

/// Group configs (ConfigResource type GROUP) with confluent-kafka's AdminClient: set on a group
/// the broker has never seen, described as GROUP_CONFIG next to the defaults, bad names and
/// values refused INVALID_CONFIG, DELETE back to the default, and the change still there after
/// a restart (replayed from the metadata log). The checks are in `tests/clients/group_configs.py`.
#[test]
fn admin_clients_set_describe_and_delete_group_configs_and_they_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let out = client_script(&mut broker, "group_configs.py", &["--group", "share-cfg", "--phase", "change"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    broker.signal_and_wait(libc::SIGTERM);
    let mut broker = broker.restart();
    client_script(&mut broker, "group_configs.py", &["--group", "share-cfg", "--phase", "restarted"]);
}
