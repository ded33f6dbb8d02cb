//! KIP-932 share groups with a real client against the real `broker` binary: confluent-kafka's
//! `ShareConsumer` (librdkafka 2.16, a "Preview" API) in explicit acknowledgement mode, over
//! ShareGroupHeartbeat, ShareFetch and ShareAcknowledge. Three members at once split a topic and
//! accept, release and reject records, each record ending exactly once; a group's
//! acknowledgements and delivery counts, kept by its coordinator in `__consumer_offsets`, are
//! still there after the broker restarts, and so is its membership (raw heartbeats go on at
//! their epochs); an empty group is deleted with its states (`delete_consumer_groups`); the
//! group's own lock duration, `by_duration:` reset and isolation level decide; a killed
//! member's records come back when its connection closes; and a member whose group session
//! timed out has its records given back while its share session lives on.
//!
//! The harness is `real_clients`'s (own broker, port and data directory per test, every wait
//! bounded); the checks are in `tests/clients/share_group*.py`. No test waits out the broker's
//! record lock (30 s by default): every record handed out is acknowledged, or comes back by the
//! group's 2 s lock or its holder's closed connection.

use crate::groups::group_script;
use crate::real_clients::Broker;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

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

/// DeleteGroups of a share group with confluent-kafka's `delete_consumer_groups`: refused
/// (NON_EMPTY_GROUP) while a member is in it; after a SIGKILL restart the empty group is still
/// known and is deleted, a second deletion is GROUP_ID_NOT_FOUND, and a group re-created under
/// the name is handed every record again at delivery count 1 (its share-partition states,
/// everything accepted, were deleted with it). Checks in `tests/clients/share_group_delete.py`.
#[test]
fn an_empty_share_group_is_deleted_after_a_restart_with_its_states() {
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("create data dir");
    let state = work.path().join("share-delete.json");
    let state = state.to_str().expect("utf-8 temp path");
    let args = |phase: &'static str| ["--topic", "share-delete", "--group", "share-delete", "--state", state, "--phase", phase];
    let mut broker = Broker::start(&data, &[]);
    group_script(&mut broker, "share_group_delete.py", &args("before"));
    let status = broker.signal_and_wait(libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL), "broker after SIGKILL: {status}");
    let mut broker = broker.restart();
    group_script(&mut broker, "share_group_delete.py", &args("after"));
}

/// A share group's membership over a real socket, across a SIGKILL restart (the coordinator
/// loads it from `__consumer_offsets`): two members join; after the restart both heartbeat on
/// at the epoch they had (no UNKNOWN_MEMBER_ID, no new epoch, no assignment sent again) and
/// ShareGroupDescribe shows the same epoch, members and partitions; once both left, a second
/// restart still knows the group, Empty, so DeleteGroups deletes it.
#[test]
fn share_group_membership_survives_restarts() {
    use broker_core::kafka::Code;
    let g = "durable-share";
    let work = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(work.path(), &[]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let addr: std::net::SocketAddr = broker.bootstrap().parse().expect("address");
    runtime.block_on(broker_core::client::admin::create_topics(addr, &[("shared".into(), 2, 1)], Duration::from_secs(10))).expect("create the topic");
    let a = runtime.block_on(raw::beat(addr, g, "m-a", 0, Some("shared"))).expect("a joins");
    let b = runtime.block_on(raw::beat(addr, g, "m-b", 0, Some("shared"))).expect("b joins");
    let a = runtime.block_on(raw::beat(addr, g, "m-a", a.member_epoch, None)).expect("a heartbeats");
    assert_eq!((a.member_epoch, b.member_epoch), (2, 2), "two joins, two epochs");
    let before = runtime.block_on(raw::describe(addr, g));
    assert_eq!((before.1, before.2.len()), (2, 2), "epoch 2, two members: {before:?}");

    assert_eq!(broker.signal_and_wait(libc::SIGKILL).signal(), Some(libc::SIGKILL));
    let mut broker = broker.restart();
    for m in ["m-a", "m-b"] {
        let r = runtime.block_on(raw::beat(addr, g, m, 2, None)).unwrap_or_else(|code| panic!("{m} after the restart: {code:?}"));
        assert_eq!(r.member_epoch, 2, "{m} goes on at its epoch");
        assert!(r.assignment.is_none(), "{m}: nothing changed, no assignment sent");
    }
    assert_eq!(runtime.block_on(raw::describe(addr, g)), before, "the group as it was before the restart");
    assert_eq!(runtime.block_on(raw::delete(addr, g)), Some(Code::NonEmptyGroup));
    for m in ["m-a", "m-b"] {
        runtime.block_on(raw::beat(addr, g, m, -1, None)).unwrap_or_else(|code| panic!("{m} leaves: {code:?}"));
    }

    broker.signal_and_wait(libc::SIGTERM);
    let _broker = broker.restart();
    let (state, epoch, members) = runtime.block_on(raw::describe(addr, g));
    assert_eq!((state.as_str(), epoch, members.len()), ("Empty", 4, 0), "the empty group is known after the restart, at its epoch");
    assert_eq!(runtime.block_on(raw::delete(addr, g)), None, "and deleted");
    assert_eq!(runtime.block_on(raw::delete(addr, g)), Some(Code::GroupIdNotFound));
}

/// Raw requests to a share group's coordinator (the membership test's; `groups_cli`'s), each
/// retried while a (restarted) coordinator loads.
pub(crate) mod raw {
    use broker_core::client::Conn;
    use broker_core::kafka::{error, Code};
    use kafka_protocol::messages::share_group_heartbeat_response::ShareGroupHeartbeatResponse;
    use kafka_protocol::messages::{DeleteGroupsRequest, FindCoordinatorRequest, GroupId, ShareGroupDescribeRequest, ShareGroupHeartbeatRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    const retry_s: u64 = 30;

    /// `ask` until it answers something other than a retriable error (or a failed connection).
    async fn retried<T>(addr: SocketAddr, group: &str, ask: impl AsyncFn(&mut Conn) -> Result<T, Code>) -> Result<T, Code> {
        let give_up = Instant::now() + Duration::from_secs(retry_s);
        loop {
            let result = match Conn::connect(addr, "share-test", Duration::from_secs(5)).await {
                // As a client does: FindCoordinator first (it creates the offsets topic).
                Ok(mut c) => match c.send(&FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![s(group)])).await {
                    Ok(_) => ask(&mut c).await,
                    Err(_) => Err(Code::CoordinatorNotAvailable),
                },
                Err(_) => Err(Code::CoordinatorNotAvailable),
            };
            match result {
                Err(Code::CoordinatorLoadInProgress | Code::NotCoordinator | Code::CoordinatorNotAvailable) if Instant::now() < give_up => tokio::time::sleep(Duration::from_millis(200)).await,
                other => return other,
            }
        }
    }

    fn s(x: &str) -> StrBytes {
        StrBytes::from_string(x.to_string())
    }

    /// A heartbeat of `member` at `epoch`; `join`: the topic it subscribes to.
    pub async fn beat(addr: SocketAddr, group: &str, member: &str, epoch: i32, join: Option<&str>) -> Result<ShareGroupHeartbeatResponse, Code> {
        retried(addr, group, async |c: &mut Conn| {
            let mut req = ShareGroupHeartbeatRequest::default().with_group_id(GroupId(s(group))).with_member_id(s(member)).with_member_epoch(epoch);
            if let Some(topic) = join {
                req.subscribed_topic_names = Some(vec![TopicName(s(topic))]);
            }
            let r = c.send(&req).await.map_err(|_| Code::CoordinatorNotAvailable)?;
            error(r.error_code).map_or(Ok(r), Err)
        })
        .await
    }

    /// The group's state, epoch and members, each (id, epoch, partitions).
    pub async fn describe(addr: SocketAddr, group: &str) -> (String, i32, Vec<(String, i32, Vec<i32>)>) {
        let d = retried(addr, group, async |c: &mut Conn| {
            let req = ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(group))]);
            let r = c.send_at(&req, Some(1), Duration::from_secs(10)).await.map_err(|_| Code::CoordinatorNotAvailable)?;
            let d = r.groups.into_iter().next().ok_or(Code::UnknownServerError)?;
            error(d.error_code).map_or(Ok(d), Err)
        })
        .await
        .expect("ShareGroupDescribe");
        let members = d.members.iter().map(|m| (m.member_id.to_string(), m.member_epoch, m.assignment.topic_partitions.iter().flat_map(|t| t.partitions.clone()).collect())).collect();
        (d.group_state.to_string(), d.group_epoch, members)
    }

    /// DeleteGroups of the group: its error, if any.
    pub async fn delete(addr: SocketAddr, group: &str) -> Option<Code> {
        let r = retried(addr, group, async |c: &mut Conn| {
            let req = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(group))]);
            let r = c.send_at(&req, Some(2), Duration::from_secs(10)).await.map_err(|_| Code::CoordinatorNotAvailable)?;
            let code = r.results.first().map_or(Some(Code::UnknownServerError), |x| error(x.error_code));
            code.map_or(Ok(()), Err)
        })
        .await;
        r.err()
    }
}

/// A share group's `share.record.lock.duration.ms` (2 s) overrides the broker's 30 s: records a
/// frozen member holds go to another member within seconds, at delivery count 2;
/// `share.auto.offset.reset=by_duration:PT1H` starts past records two hours old, at the first
/// one within the hour; and `share.isolation.level=read_committed` hands out a transactional
/// producer's committed records and never its aborted ones (which read_uncommitted does).
/// Checks in `tests/clients/share_group_configs.py`.
#[test]
fn a_share_groups_own_lock_duration_reset_and_isolation_level_decide() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    group_script(&mut broker, "share_group_configs.py", &["--topic", "share-configs", "--group", "share-configs"]);
}

/// A share session ends when its connection closes: a member SIGKILLed while holding records
/// (never acknowledging, closing or leaving) has them back with another member within seconds,
/// at delivery count 2, not after the 30 s lock. Checks in
/// `tests/clients/share_group_disconnect.py`.
#[test]
fn a_killed_members_records_come_back_when_its_connection_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    group_script(&mut broker, "share_group_disconnect.py", &["--topic", "share-disconnect", "--group", "share-disconnect"]);
}

/// A member whose group session times out at the coordinator, while its share session at the
/// partition leader lives on (its connection open, a ShareAcknowledge with nothing in it every
/// second keeping the session used), has its records given back once the coordinator no longer
/// has it: another member is handed every one of them at delivery count 2 within seconds of the
/// 6 s group session timeout, long before the 60 s record lock; and the fenced member's
/// acceptance of them afterwards is INVALID_RECORD_STATE. Raw requests for the fenced member;
/// the other is `client::share`'s member.
#[test]
fn a_member_fenced_by_its_group_session_timeout_has_its_records_given_back() {
    use broker_core::client::share::{ShareConfig, ShareConsumer};
    use broker_core::client::{Conn, Producer, ProducerConfig};
    use broker_core::kafka::Code;
    use bytes::Bytes;
    use kafka_protocol::messages::share_acknowledge_request::{AcknowledgementBatch, AcknowledgePartition, AcknowledgeTopic, ShareAcknowledgeRequest};
    use kafka_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic, ShareFetchRequest};
    use kafka_protocol::messages::GroupId;
    use kafka_protocol::protocol::StrBytes;
    use std::time::Instant;

    let (g, topic, n) = ("share-fenced", "share-fenced", 10i64);
    let dir = tempfile::tempdir().expect("tempdir");
    let flags = ["--group-share-session-timeout-ms", "6000", "--group-share-heartbeat-interval-ms", "1000", "--group-share-record-lock-duration-ms", "60000"];
    let broker = Broker::start(dir.path(), &flags);
    let addr: std::net::SocketAddr = broker.bootstrap().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        broker_core::client::admin::create_topics(addr, &[(topic.into(), 1, 1)], Duration::from_secs(10)).await.expect("create the topic");
        let earliest = (broker_core::kafka::config_resource::group, g.to_string(), "share.auto.offset.reset".to_string(), Some("earliest".to_string()));
        broker_core::client::placement::alter_configs(addr, &[earliest], Duration::from_secs(10)).await.expect("share.auto.offset.reset=earliest");
        let mut p = Producer::new(addr, ProducerConfig { client_id: "p".into(), ..ProducerConfig::default() });
        let records: Vec<_> = (0..n).map(|i| (None, Some(Bytes::from(format!("r{i}"))))).collect();
        p.send(topic, 0, &records, 0).await.expect("produce");
        let mut cluster = broker_core::client::cluster::Cluster::new(vec![addr], "ids", Duration::from_secs(5));
        cluster.refresh(&[topic]).await.expect("metadata");
        let id = cluster.topic_id(topic).expect("topic id");
        let s = |x: &str| StrBytes::from_string(x.to_string());

        // "fenced" joins (one heartbeat, never another) and acquires every record.
        let joined = raw::beat(addr, g, "fenced", 0, Some(topic)).await.expect("fenced joins");
        assert!(joined.member_epoch > 0);
        let mut c = Conn::connect(addr, "fenced", Duration::from_secs(5)).await.expect("connect");
        let fetch = |epoch: i32| {
            let part = FetchPartition::default().with_partition_index(0);
            ShareFetchRequest::default().with_group_id(Some(GroupId(s(g)))).with_member_id(Some(s("fenced"))).with_share_session_epoch(epoch).with_max_wait_ms(500).with_max_bytes(1 << 20).with_max_records(100).with_topics(vec![FetchTopic::default().with_topic_id(id).with_partitions(vec![part])])
        };
        let (mut epoch, mut acquired) = (0, 0i64);
        let give_up = Instant::now() + Duration::from_secs(20);
        while acquired < n {
            assert!(Instant::now() < give_up, "fenced acquired {acquired} of {n} records");
            let r = c.send_at(&fetch(epoch), Some(1), Duration::from_secs(10)).await.expect("ShareFetch");
            assert_eq!(r.error_code, 0, "ShareFetch at epoch {epoch}");
            epoch += 1;
            acquired += r.responses.iter().flat_map(|t| &t.partitions).flat_map(|p| &p.acquired_records).map(|a| a.last_offset - a.first_offset + 1).sum::<i64>();
        }
        let held_at = Instant::now();

        // Its share session stays in use: a ShareAcknowledge with nothing in it every second.
        let keep = tokio::spawn(async move {
            loop {
                let req = ShareAcknowledgeRequest::default().with_group_id(Some(GroupId(s(g)))).with_member_id(Some(s("fenced"))).with_share_session_epoch(epoch);
                let r = c.send_at(&req, Some(1), Duration::from_secs(10)).await.expect("ShareAcknowledge");
                assert_eq!(r.error_code, 0, "the fenced member's share session lives on (epoch {epoch})");
                epoch += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
                if epoch > 40 {
                    return (c, epoch);
                }
            }
        });

        // Another member is handed them once the coordinator ended "fenced".
        let config = ShareConfig { group_id: g.into(), member_id: "other".into(), topics: vec![topic.into()], max_records: 100, request_timeout: Duration::from_secs(5) };
        let mut other = ShareConsumer::new(vec![addr], config);
        let mut got = std::collections::BTreeMap::new();
        let give_up = Instant::now() + Duration::from_secs(25);
        while (got.len() as i64) < n {
            assert!(Instant::now() < give_up, "after {:?} the other member got {got:?}, not all {n} records", held_at.elapsed());
            for r in other.poll(500).await.records {
                assert!(got.insert(r.offset, r.delivery_count).is_none(), "offset {} handed twice", r.offset);
            }
        }
        let waited = held_at.elapsed();
        assert!(got.values().all(|c| *c == 2), "each given back once: {got:?}");
        assert!(waited < Duration::from_secs(20), "given back {waited:?} after they were acquired: long before the 60 s lock");
        assert!(waited >= Duration::from_secs(5), "not before the group session timed out ({waited:?})");

        // The fenced member's acceptance now is refused: the records are the other's.
        keep.abort();
        let mut c = Conn::connect(addr, "fenced-late", Duration::from_secs(5)).await.expect("connect");
        let r = c.send_at(&fetch(0), Some(1), Duration::from_secs(10)).await.expect("a new session");
        assert_eq!(r.error_code, 0);
        let batch = AcknowledgementBatch::default().with_first_offset(0).with_last_offset(n - 1).with_acknowledge_types(vec![1]);
        let ack = ShareAcknowledgeRequest::default().with_group_id(Some(GroupId(s(g)))).with_member_id(Some(s("fenced"))).with_share_session_epoch(1).with_topics(vec![AcknowledgeTopic::default().with_topic_id(id).with_partitions(vec![AcknowledgePartition::default().with_partition_index(0).with_acknowledgement_batches(vec![batch])])]);
        let r = c.send_at(&ack, Some(1), Duration::from_secs(10)).await.expect("ShareAcknowledge");
        let code = r.responses.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).next();
        assert_eq!(code, Some(Code::InvalidRecordState.code()), "{r:?}");
    });
}
