//! The Rust producer with several batches in flight against a real broker in process (real
//! sockets, real files): five batches pipelined per round land in the order sent, each at the
//! offsets it was answered with; what idempotence cannot cover is refused up front.

use crate::support::node_in_process;
use broker_core::client::consumer::Consumer;
use broker_core::client::producer::{in_flight_max, BatchTo, ProducerRecord};
use broker_core::client::{ClientError, Producer, ProducerConfig};
use std::time::Duration;

fn records(round: usize, batch: usize, n: usize) -> Vec<ProducerRecord> {
    (0..n).map(|i| ProducerRecord { key: None, value: Some(format!("r{round}-b{batch}-{i}").into()), headers: Vec::new() }).collect()
}

#[test]
fn five_batches_in_flight_land_in_the_order_sent() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (addr, node) = node_in_process(dir.path(), &[("t".into(), 2, 1)]).await;
        let mut p = Producer::new(addr, ProducerConfig { client_id: "p".into(), ..ProducerConfig::default() });
        // Partition → the values in the order they were sent, and where each batch landed.
        let mut sent: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for round in 0..20 {
            let batches: Vec<Vec<ProducerRecord>> = (0..in_flight_max).map(|b| records(round, b, 1 + (round + b) % 3)).collect();
            let to: Vec<BatchTo> = batches.iter().enumerate().map(|(b, r)| BatchTo { topic: "t", partition: (b % 2) as i32, records: r }).collect();
            let answers = p.send_batches(&to, 0).await;
            for (b, answer) in answers.into_iter().enumerate() {
                let part = &mut sent[b % 2];
                assert_eq!(answer, Ok(part.len() as i64), "round {round} batch {b}: answered at the next offset of its partition");
                part.extend(batches[b].iter().map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap()));
            }
        }
        // The log holds them in the order sent.
        let mut c = Consumer::new(addr, "c", Duration::from_secs(5));
        for partition in 0..2 {
            c.assign("t", partition, 0);
        }
        let mut read: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        while read[0].len() + read[1].len() < sent[0].len() + sent[1].len() {
            for r in c.poll(100).await.expect("poll").into_iter().filter(|r| r.fresh) {
                read[r.partition as usize].push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
        assert_eq!(read, sent);
        // More than the broker's window, or several in flight without idempotence: refused.
        let six: Vec<Vec<ProducerRecord>> = (0..in_flight_max + 1).map(|b| records(99, b, 1)).collect();
        let to: Vec<BatchTo> = six.iter().map(|r| BatchTo { topic: "t", partition: 0, records: r }).collect();
        assert!(p.send_batches(&to, 0).await.iter().all(|a| matches!(a, Err(ClientError::Protocol(_)))));
        let mut plain = Producer::new(addr, ProducerConfig { client_id: "q".into(), idempotent: false, ..ProducerConfig::default() });
        assert!(plain.send_batches(&to[..2], 0).await.iter().all(|a| matches!(a, Err(ClientError::Protocol(_)))));
        node.abort();
    });
}
