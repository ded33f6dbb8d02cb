//! KIP-227 fetch sessions over a real socket, against a broker in process (real files): a
//! full fetch opens a session; incremental fetches that name nothing are answered with only
//! the partitions that took records since; a parked incremental fetch wakes with the one
//! partition produced to while it waits; a wrong epoch is refused at the top level.

use crate::support::node_in_process;
use broker_core::client::{Conn, Producer, ProducerConfig};
use broker_core::kafka::Code;
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::fetch_response::FetchResponse;
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::time::{Duration, Instant};

const partitions: i32 = 8;

/// A consumer's fetch in session `id` at `epoch`, naming `named` (index, fetch offset).
fn request(id: i32, epoch: i32, named: &[(i32, i64)], max_wait_ms: i32) -> FetchRequest {
    let parts = named.iter().map(|&(p, o)| FetchPartition::default().with_partition(p).with_fetch_offset(o).with_partition_max_bytes(1 << 20)).collect();
    let topics = if named.is_empty() { vec![] } else { vec![FetchTopic::default().with_topic(TopicName(StrBytes::from_static_str("t"))).with_partitions(parts)] };
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(id)
        .with_session_epoch(epoch)
        .with_topics(topics)
}

/// The partitions an answer carries, with their record bytes.
fn carried(r: &FetchResponse) -> Vec<(i32, usize)> {
    r.responses.iter().flat_map(|t| &t.partitions).map(|p| (p.partition_index, p.records.as_ref().map_or(0, |x| x.len()))).collect()
}

async fn produce(p: &mut Producer, partition: i32) {
    p.send("t", partition, &[(None, Some(Bytes::from_static(b"news")))], 0).await.expect("produce");
}

#[test]
fn a_session_over_a_socket_answers_only_partitions_with_news() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (addr, node) = node_in_process(dir.path(), &[("t".into(), partitions, 1)]).await;
        let mut p = Producer::new(addr, ProducerConfig { client_id: "p".into(), ..ProducerConfig::default() });
        produce(&mut p, 3).await;
        let mut c = Conn::connect(addr, "session", Duration::from_secs(5)).await.expect("connect");
        let all: Vec<(i32, i64)> = (0..partitions).map(|p| (p, 0)).collect();
        let full = c.send(&request(0, 0, &all, 0)).await.expect("full fetch");
        assert_eq!(full.error_code, 0);
        assert_ne!(full.session_id, 0, "the broker opened a session");
        let id = full.session_id;
        assert_eq!(carried(&full).len(), partitions as usize, "a full answer carries every partition");
        assert!(carried(&full)[3].1 > 0, "with partition 3's record");
        // Every partition stays at offset 0 in the session: 3 has its record again, the rest
        // have nothing new and are left out.
        let r = c.send(&request(id, 1, &[], 0)).await.expect("incremental");
        assert_eq!((r.error_code, r.session_id), (0, id));
        assert_eq!(carried(&r).iter().map(|x| x.0).collect::<Vec<_>>(), vec![3]);
        produce(&mut p, 6).await;
        let r = c.send(&request(id, 2, &[], 0)).await.expect("incremental");
        let mut got: Vec<i32> = carried(&r).iter().map(|x| x.0).collect();
        got.sort();
        assert_eq!(got, vec![3, 6], "the old record and the new one");
        // A parked incremental fetch (3 and 6 moved past their records, nothing to read): woken
        // by a produce to partition 5 while it waits.
        let waiter = tokio::spawn(async move {
            let started = Instant::now();
            let r = c.send(&request(id, 3, &[(3, 1), (6, 1)], 5_000)).await.expect("parked incremental");
            (r, started.elapsed(), c)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        produce(&mut p, 5).await;
        let (r, waited, mut c) = waiter.await.unwrap();
        assert!(waited < Duration::from_secs(4), "answered when the record came, not at the end of the wait ({waited:?})");
        let got = carried(&r);
        assert!(got.iter().any(|&(p, bytes)| p == 5 && bytes > 0), "partition 5's record: {got:?}");
        let mut which: Vec<i32> = got.iter().map(|x| x.0).collect();
        which.sort();
        assert_eq!(which, vec![3, 5, 6], "the partition with news and the two named, nothing else");
        // Epoch 3 was taken once, even though the fetch was handled more than once.
        assert_eq!(c.send(&request(id, 3, &[], 0)).await.expect("stale epoch").error_code, Code::InvalidFetchSessionEpoch.code());
        assert_eq!(c.send(&request(id, 4, &[], 0)).await.expect("epoch 4").error_code, 0);
        assert_eq!(c.send(&request(id + 100, 1, &[], 0)).await.expect("unknown").error_code, Code::FetchSessionIdNotFound.code());
        node.abort();
    });
}
