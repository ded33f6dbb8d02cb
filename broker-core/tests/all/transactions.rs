//! Transactions as real clients run them: this crate's own transactional producer and
//! read_committed consumer (`client::transactions`), and confluent-kafka's and kafka-python's transactional
//! producers against the broker's transaction coordinator (commit, abort, a producer fenced
//! by a new one with its transaction aborted), read back with read_committed and
//! read_uncommitted (tests/clients/transactional_producer.py). And as real consumers see
//! them (and kafkajs's, tests/clients/kafkajs_transactions.js): a broker process holding transactional batches
//! ended by commit and abort markers (written with WriteTxnMarkers, as a coordinator will) and
//! plain batches, read by confluent-kafka and kafka-python with read_committed (the aborted
//! records dropped by the broker's aborted-transaction list, the open ones held back by the
//! last stable offset) and read_uncommitted (every data record), markers hidden from both.

use crate::real_clients::{client_script, Broker};
use broker_core::client::Conn;
use broker_core::log::batch::{build, set_producer, set_transactional};
use bytes::Bytes;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest};
use kafka_protocol::messages::{ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use std::net::SocketAddr;
use std::time::Duration;

const topic: &str = "txn";

/// Appends `values` as one batch: transactional for `producer` (id, epoch, first sequence),
/// plain without one; returns its base offset.
async fn append(c: &mut Conn, values: &[&str], producer: Option<(i64, i16, i32)>) -> i64 {
    let refs: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    // Today's time: records from 1970 would be past the topic's retention at once.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis() as i64;
    let mut batch = build(&refs, now);
    if let Some((pid, epoch, seq)) = producer {
        set_producer(&mut batch, pid, epoch, seq);
        set_transactional(&mut batch);
    }
    let part = PartitionProduceData::default().with_index(0).with_records(Some(Bytes::from(batch)));
    let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str(topic))).with_partition_data(vec![part]);
    let id = producer.map(|_| TransactionalId(StrBytes::from_static_str("writer")));
    let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_transactional_id(id).with_topic_data(vec![t]);
    let r = c.send(&req).await.expect("produce");
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "produce {values:?}");
    p.base_offset
}

async fn end(c: &mut Conn, pid: i64, epoch: i16, commit: bool) {
    let t = WritableTxnMarkerTopic::default().with_name(TopicName(StrBytes::from_static_str(topic))).with_partition_indexes(vec![0]);
    let m = WritableTxnMarker::default().with_producer_id(ProducerId(pid)).with_producer_epoch(epoch).with_transaction_result(commit).with_coordinator_epoch(0).with_topics(vec![t]);
    let r = c.send(&WriteTxnMarkersRequest::default().with_markers(vec![m])).await.expect("write markers");
    assert_eq!(r.markers[0].topics[0].partitions[0].error_code, 0, "marker for {pid}");
}

async fn producer_id(c: &mut Conn) -> (i64, i16) {
    let req = InitProducerIdRequest::default().with_transactional_id(None).with_transaction_timeout_ms(60_000).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
    let r = c.send(&req).await.expect("init producer id");
    assert_eq!(r.error_code, 0);
    (r.producer_id.0, r.producer_epoch)
}

#[test]
fn real_consumers_read_committed_without_aborted_records_or_markers() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Transactions written by hand, with no coordinator to verify their first writes
    // (KIP-890 part 1), so verification is off for this broker.
    let mut broker = Broker::start(dir.path(), &["--transaction-partition-verification-enable", "false"]);
    let addr: SocketAddr = broker.bootstrap().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let log_end = runtime.block_on(async {
        broker_core::client::admin::create_topics(addr, &[(topic.into(), 1, 1)], Duration::from_secs(10)).await.expect("create topic");
        let mut c = Conn::connect(addr, "txn-writer", Duration::from_secs(10)).await.expect("connect");
        let (p1, e1) = producer_id(&mut c).await;
        let (p2, e2) = producer_id(&mut c).await;
        assert_eq!(append(&mut c, &["c1", "c2"], Some((p1, e1, 0))).await, 0);
        end(&mut c, p1, e1, true).await; // 2
        assert_eq!(append(&mut c, &["a1", "a2"], Some((p1, e1, 2))).await, 3);
        assert_eq!(append(&mut c, &["c3"], Some((p2, e2, 0))).await, 5);
        assert_eq!(append(&mut c, &["p1"], None).await, 6);
        end(&mut c, p1, e1, false).await; // 7: p1's second transaction aborts
        end(&mut c, p2, e2, true).await; // 8
        let last = append(&mut c, &["p2"], None).await; // 9
        last
    });
    let (committed, all) = (r#"["c1","c2","c3","p1","p2"]"#, r#"["c1","c2","a1","a2","c3","p1","p2"]"#);
    let end = (log_end + 1).to_string();
    client_script(&mut broker, "read_committed.py", &["--topic", topic, "--end", &end, "--committed", committed, "--all", all]);
}

#[test]
fn real_transactional_producers_commit_abort_and_are_fenced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let addr: SocketAddr = broker.bootstrap().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let clients = ["confluent", "kafka-python"];
    let topics: Vec<(String, i32, i16)> = clients.iter().map(|c| (format!("txn-{c}"), 2, 1)).collect();
    runtime.block_on(broker_core::client::admin::create_topics(addr, &topics, Duration::from_secs(10))).expect("create topics");
    for (client, (name, _, _)) in clients.iter().zip(&topics) {
        client_script(&mut broker, "transactional_producer.py", &["--client", client, "--topic", name]);
    }
}

/// A confluent-kafka producer's transaction left hanging is aborted by the coordinator within
/// its `transaction.timeout.ms` (2 s) and two checks (`--transaction-abort-timed-out-...` 500
/// ms): read_committed reads past it without its records, the hung producer's commit fails, and
/// a new producer of the id commits (tests/clients/transactional_timeout.py).
#[test]
fn a_hung_real_transaction_is_aborted_by_its_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &["--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500"]);
    let addr: SocketAddr = broker.bootstrap().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(broker_core::client::admin::create_topics(addr, &[("txn-hung".into(), 1, 1)], Duration::from_secs(10))).expect("create topic");
    client_script(&mut broker, "transactional_timeout.py", &["--topic", "txn-hung", "--timeout-ms", "2000", "--check-ms", "500"]);
}

/// kafkajs's transactional producer: commit, abort, and offsets sent to a transaction (which
/// it asks for before `__consumer_offsets` exists: the broker must place the group by
/// `offsets.topic.num.partitions` then, as Kafka does, since kafkajs does not retry a refusal);
/// its read_committed consumer sees exactly the committed records
/// (tests/clients/kafkajs_transactions.js).
#[test]
fn kafkajs_transactional_producer_commits_aborts_and_sends_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let out = client_script(&mut broker, "kafkajs_transactions.js", &["--topic", "txn-kafkajs"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"seen\""), "{stdout}");
}

/// Every data record of `topic`-`p` from the start to `end`, read with this crate's consumer.
async fn read_values(addr: SocketAddr, topic_name: &str, p: i32, end: i64, read_committed: bool) -> Vec<String> {
    let mut c = broker_core::client::Consumer::new(addr, "txn-reader", Duration::from_secs(10));
    c.set_read_committed(read_committed);
    c.assign(topic_name, p, 0);
    let mut out = Vec::new();
    for _ in 0..200 {
        if c.position(topic_name, p).is_some_and(|pos| pos >= end) {
            return out;
        }
        for r in c.poll(100).await.expect("poll") {
            if r.fresh {
                out.push(String::from_utf8(r.value.expect("a value").to_vec()).expect("utf-8"));
            }
        }
    }
    panic!("{topic_name}-{p}: not read to {end} (at {:?}): {out:?}", c.position(topic_name, p));
}

#[test]
fn this_crates_transactional_producer_and_read_committed_consumer() {
    use broker_core::client::producer::ProducerRecord;
    use broker_core::client::{ClientError, ProducerConfig, TransactionalProducer};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &[]);
    let addr: SocketAddr = broker.bootstrap().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let name = "own-txn";
        broker_core::client::admin::create_topics(addr, &[(name.into(), 2, 1)], Duration::from_secs(10)).await.expect("create topic");
        let rec = |v: &str| vec![ProducerRecord { key: None, value: Some(Bytes::from(v.to_string())), headers: Vec::new() }];
        // Today's time: records from 1970 would be past the topic's retention at once.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis() as i64;
        let mut p = TransactionalProducer::new(vec![addr], ProducerConfig::default(), "own", 60_000);
        let (pid, epoch) = p.init().await.expect("init");
        assert_eq!(epoch, 0, "a new id");
        for (values, commit) in [(["c1", "c2"], true), (["a1", "a2"], false), (["c3", "c4"], true)] {
            p.begin().expect("begin");
            for (i, v) in values.iter().enumerate() {
                p.send(name, i as i32, &rec(v), now).await.expect("send");
            }
            match commit {
                true => p.commit().await.expect("commit"),
                false => p.abort().await.expect("abort"),
            }
        }
        // A transaction left open, then a new producer of the id: it is aborted, and the old
        // producer is fenced.
        p.begin().expect("begin");
        p.send(name, 0, &rec("z1"), now).await.expect("send");
        let mut q = TransactionalProducer::new(vec![addr], ProducerConfig::default(), "own", 60_000);
        let (qpid, qepoch) = q.init().await.expect("the new producer's init");
        assert_eq!((qpid, qepoch), (pid, 5), "three KIP-890 ends took the epoch to 3, fencing the open transaction 4; the new producer has 5");
        let fenced = p.commit().await.expect_err("the fenced producer's commit");
        assert!(matches!(fenced, ClientError::Kafka { code: broker_core::kafka::Code::ProducerFenced, .. }), "{fenced:?}");
        q.begin().expect("begin");
        q.send(name, 0, &rec("b1"), now).await.expect("send");
        q.commit().await.expect("commit");
        // Each transaction ends in a marker on each of its partitions (written after EndTxn is
        // answered, so a read waits for them): p0 holds c1 m a1 m c3 m z1 m b1 m, p1 c2 m a2 m c4 m.
        let ends = [10, 6];
        assert_eq!(read_values(addr, name, 0, ends[0], true).await, ["c1", "c3", "b1"]);
        assert_eq!(read_values(addr, name, 1, ends[1], true).await, ["c2", "c4"]);
        assert_eq!(read_values(addr, name, 0, ends[0], false).await, ["c1", "a1", "c3", "z1", "b1"], "read_uncommitted: every data record, no marker");
        assert_eq!(read_values(addr, name, 1, ends[1], false).await, ["c2", "a2", "c4"]);
    });
}

/// KIP-890 part 1 on a broker process: a transactional write of a producer whose transaction
/// has ended (as a late retry of it would be) is refused INVALID_TXN_STATE once the leader asks
/// the coordinator, over its own listener, and opens nothing; with
/// `--transaction-partition-verification-enable false` the same write is taken and opens a
/// transaction no coordinator knows, which holds the last stable offset back (a hanging one).
#[test]
fn a_write_outside_any_open_transaction_is_refused_by_verification() {
    use broker_core::client::producer::ProducerRecord;
    use broker_core::client::{ProducerConfig, TransactionalProducer};
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
    use kafka_protocol::messages::BrokerId;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    for verify in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        let broker = Broker::start(dir.path(), &["--transaction-partition-verification-enable", if verify { "true" } else { "false" }]);
        let addr: SocketAddr = broker.bootstrap().parse().expect("address");
        runtime.block_on(async {
            let name = "late";
            broker_core::client::admin::create_topics(addr, &[(name.into(), 1, 1)], Duration::from_secs(10)).await.expect("create topic");
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis() as i64;
            let mut p = TransactionalProducer::new(vec![addr], ProducerConfig::default(), "late-writer", 60_000);
            let (pid, epoch) = p.init().await.expect("init");
            p.begin().expect("begin");
            p.send(name, 0, &[ProducerRecord { key: None, value: Some(Bytes::from_static(b"c1")), headers: Vec::new() }], now).await.expect("send");
            p.commit().await.expect("commit");
            // KIP-890 ended that transaction at epoch + 1 (a marker at offset 1, written after
            // the commit is answered): the producer's epoch now, with no transaction open.
            let mut c = Conn::connect(addr, "late-raw", Duration::from_secs(10)).await.expect("connect");
            let lp = ListOffsetsPartition::default().with_partition_index(0).with_current_leader_epoch(-1).with_timestamp(-1);
            let lt = ListOffsetsTopic::default().with_name(TopicName(StrBytes::from_static_str(name))).with_partitions(vec![lp]);
            let latest = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_isolation_level(1).with_topics(vec![lt]);
            let mut stable = -1;
            for _ in 0..100 {
                stable = c.send(&latest).await.expect("list offsets").topics[0].partitions[0].offset;
                if stable == 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(stable, 2, "c1 and its marker");
            let mut batch = build(&[b"late"], now);
            set_producer(&mut batch, pid, epoch + 1, 0);
            set_transactional(&mut batch);
            let part = PartitionProduceData::default().with_index(0).with_records(Some(Bytes::from(batch)));
            let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str(name))).with_partition_data(vec![part]);
            let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(10_000).with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("late-writer")))).with_topic_data(vec![t]);
            let code = c.send(&req).await.expect("produce").responses[0].partition_responses[0].error_code;
            let lso = c.send(&latest).await.expect("list offsets").topics[0].partitions[0].offset;
            match verify {
                true => assert_eq!((code, lso), (broker_core::kafka::Code::InvalidTxnState.code(), 2), "refused; c1 and its marker stable"),
                false => assert_eq!((code, lso), (0, 2), "taken at offset 2, holding the LSO there: a hanging transaction"),
            }
        });
    }
}
