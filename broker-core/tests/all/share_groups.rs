//! KIP-932 share groups with a real client against the real `broker` binary: confluent-kafka's
//! `ShareConsumer` (librdkafka 2.16, a "Preview" API) in explicit acknowledgement mode, over
//! ShareGroupHeartbeat, ShareFetch and ShareAcknowledge. Three members at once split a topic and
//! accept, release and reject records, each record ending exactly once; and a group's
//! acknowledgements and delivery counts, kept by its coordinator in `__consumer_offsets`, are
//! still there after the broker restarts.
//!
//! The harness is `real_clients`'s (own broker, port and data directory per test, every wait
//! bounded); the checks are in `tests/clients/share_group.py` and `share_group_restart.py`. No
//! test waits out a record lock (30 s by default): every record handed out is acknowledged.

use crate::groups::group_script;
use crate::real_clients::Broker;
use std::os::unix::process::ExitStatusExt;

/// Three members of one group poll a 2-partition topic at once and reject every value ending in
/// 3, release those ending in 7 on their first delivery and accept the rest. Shows each record
/// is handed to one member at a time and ends exactly once: accepted and rejected records are
/// never handed out again, a released one comes back once with delivery count 2; all three
/// members get records; commit_sync and the acknowledgement callbacks report no error; and once
/// they close, a fourth member is handed nothing but two sentinels produced after them.
#[test]
fn three_share_consumers_accept_release_and_reject_each_record_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    group_script(&mut broker, "share_group.py", &["--topic", "share-three", "--group", "share-three", "--n", "2000"]);
}

/// A member accepts the first half of each partition by offset and releases the rest; the broker
/// is stopped with `signal` and restarted on the same data directory. A new member must be
/// handed exactly the second half, each record once, the released ones with a higher delivery
/// count than they were released at.
fn share_state_survives_a_restart(signal: libc::c_int, name: &str) {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("create data dir");
    let state = work.path().join("share-state.json");
    let state = state.to_str().expect("utf-8 temp path");
    let args = |phase: &[&'static str]| [&["--topic", name, "--group", name, "--state", state][..], phase].concat();

    let mut broker = Broker::start(&data, &[]);
    group_script(&mut broker, "share_group_restart.py", &args(&["--phase", "before", "--n", "1000"]));
    let status = broker.signal_and_wait(signal);
    if signal == libc::SIGKILL {
        assert_eq!(status.signal(), Some(libc::SIGKILL), "broker after SIGKILL: {status}");
    } else {
        assert!(status.success(), "broker after signal {signal}: {status}, expected a clean exit 0\n{}", broker.log_tail());
    }
    let mut broker = broker.restart();
    group_script(&mut broker, "share_group_restart.py", &args(&["--phase", "after"]));
}

/// After a clean stop (SIGTERM): the share-partition state was written when the acknowledgements
/// were answered, so nothing accepted comes back and nothing released is lost.
#[test]
fn share_group_acknowledgements_survive_a_sigterm_restart() {
    share_state_survives_a_restart(libc::SIGTERM, "share-sigterm");
}

/// After SIGKILL: what commit_sync saw acknowledged was already durable at the coordinator.
#[test]
fn share_group_acknowledgements_survive_a_sigkill_restart() {
    share_state_survives_a_restart(libc::SIGKILL, "share-sigkill");
}
