//! KIP-848's online migration with real clients against the real `broker` binary: two classic
//! confluent-kafka consumers upgraded by a `group.protocol=consumer` member joining, replaced one
//! at a time by consumer-protocol members, then classic members joining and the
//! consumer-protocol ones leaving until the group is classic again, all while records are
//! produced. `tests/clients/group_migration.py` checks, from the clients' rebalance callbacks
//! (each member taking 500 ms to give partitions up, so a partition handed on early is caught),
//! that no partition is ever given to a member while another holds it, that every record is
//! read, and that commits carry over every conversion. Eager (range) and cooperative
//! (cooperative-sticky) classic members each have their test.

use crate::groups::group_script;
use crate::real_clients::Broker;

/// The broker: 4 partitions a topic, KIP-848 heartbeats every 500 ms, no KIP-134 delay.
fn broker(dir: &tempfile::TempDir) -> Broker {
    let args = ["--num-partitions", "4", "--group-consumer-heartbeat-interval-ms", "500", "--group-initial-rebalance-delay-ms", "0"];
    Broker::start(dir.path(), &args)
}

#[test]
fn rolling_upgrade_of_eager_classic_members_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    group_script(&mut broker, "group_migration.py", &["--topic", "mig-range", "--group", "mig-range", "--strategy", "range"]);
}

#[test]
fn rolling_upgrade_of_cooperative_classic_members_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    group_script(&mut broker, "group_migration.py", &["--topic", "mig-coop", "--group", "mig-coop", "--strategy", "cooperative-sticky"]);
}
