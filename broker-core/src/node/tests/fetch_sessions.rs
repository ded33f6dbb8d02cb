//! KIP-227 fetch sessions through `handle`: a full fetch opens a session and is answered
//! whole; incremental fetches are answered with the partitions that have news only; a parked
//! fetch handled again takes its epoch once; forgotten partitions, wrong epochs and unknown
//! sessions. The fetcher's side (`Asking`) builds the incremental requests.

use super::*;
use crate::broker::fetch_session::{Asking, Wanted};
use kafka_protocol::messages::fetch_request::ForgottenTopic;
use std::sync::Arc;

const v: i16 = 12;

fn produce_to(b: &Node, p: i32) {
    let batch = build(&[b"news"], 1);
    let part = PartitionProduceData::default().with_index(p).with_records(Some(Bytes::from(batch)));
    let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str("t"))).with_partition_data(vec![part]);
    let req = ProduceRequest::default().with_acks(1).with_timeout_ms(1000).with_topic_data(vec![t]);
    let r: ProduceResponse = reply(handle(b, &frame(ApiKey::Produce, 9, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

/// A consumer's fetch in session `id` at `epoch`, naming `named` (index, offset) and
/// forgetting `forgotten`.
fn session_fetch(id: i32, epoch: i32, named: &[(i32, i64)], forgotten: &[i32], max_wait_ms: i32) -> Bytes {
    let parts = named.iter().map(|&(p, o)| FetchPartition::default().with_partition(p).with_fetch_offset(o).with_partition_max_bytes(1 << 20)).collect();
    let topics = if named.is_empty() { vec![] } else { vec![FetchTopic::default().with_topic(TopicName(StrBytes::from_static_str("t"))).with_partitions(parts)] };
    let forgotten = if forgotten.is_empty() { vec![] } else { vec![ForgottenTopic::default().with_topic(TopicName(StrBytes::from_static_str("t"))).with_partitions(forgotten.to_vec())] };
    let req = fetch_req("t", 0, max_wait_ms).with_session_id(id).with_session_epoch(epoch).with_topics(topics).with_forgotten_topics_data(forgotten);
    frame(ApiKey::Fetch, v, &req)
}

/// The partitions an answer carries: (index, records bytes, high watermark).
fn carried(r: &FetchResponse) -> Vec<(i32, usize, i64)> {
    r.responses.iter().flat_map(|t| &t.partitions).map(|p| (p.partition_index, p.records.as_ref().map_or(0, |x| x.len()), p.high_watermark)).collect()
}

fn fetch(b: &Node, f: &Bytes, attempt: Attempt) -> FetchResponse {
    reply(handle(b, f, 0, attempt, &mut Vec::new()), ApiKey::Fetch, v)
}

fn three_partitions(dir: &std::path::Path) -> Node {
    let b = broker(dir);
    crate::testing::create(&b, "t", 3, Default::default()).unwrap();
    b
}

#[test]
fn full_then_incremental_fetches_carry_only_partitions_with_news() {
    let tmp = tempfile::tempdir().unwrap();
    let b = three_partitions(tmp.path());
    produce_to(&b, 1);
    let full = fetch(&b, &session_fetch(0, 0, &[(0, 0), (1, 0), (2, 0)], &[], 0), Attempt::First);
    assert_ne!(full.session_id, 0, "a session opened");
    let id = full.session_id;
    assert_eq!(carried(&full).iter().map(|c| (c.0, c.2)).collect::<Vec<_>>(), vec![(0, 0), (1, 1), (2, 0)], "a full answer carries every partition");
    // Epoch 1 names nothing; partition 1 is still read from 0, so its record comes again.
    let r = fetch(&b, &session_fetch(id, 1, &[], &[], 0), Attempt::First);
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert_eq!(carried(&r).iter().map(|c| c.0).collect::<Vec<_>>(), vec![1], "only the partition with records");
    // The fetcher moves partition 1 past its record: nothing has news but that partition,
    // named again, which is answered once.
    let r = fetch(&b, &session_fetch(id, 2, &[(1, 1)], &[], 0), Attempt::First);
    assert_eq!(carried(&r), vec![(1, 0, 1)]);
    let r = fetch(&b, &session_fetch(id, 3, &[], &[], 0), Attempt::First);
    assert_eq!(carried(&r), vec![], "idle: an empty answer");
    produce_to(&b, 2);
    let r = fetch(&b, &session_fetch(id, 4, &[], &[], 0), Attempt::First);
    assert_eq!(carried(&r).iter().map(|c| (c.0, c.2)).collect::<Vec<_>>(), vec![(2, 1)], "the new record and its high watermark");
    // Forgotten: partition 2 is no longer read.
    let r = fetch(&b, &session_fetch(id, 5, &[], &[2], 0), Attempt::First);
    assert_eq!(carried(&r), vec![]);
    // Session errors are top-level, with no partitions.
    let r = fetch(&b, &session_fetch(id, 5, &[], &[], 0), Attempt::First);
    assert_eq!((r.error_code, r.responses.len()), (Code::InvalidFetchSessionEpoch.code(), 0), "epoch 5 was used");
    let r = fetch(&b, &session_fetch(id + 1, 1, &[], &[], 0), Attempt::First);
    assert_eq!(r.error_code, Code::FetchSessionIdNotFound.code());
    // Epoch -1 closes it.
    let r = fetch(&b, &session_fetch(id, -1, &[(0, 0)], &[], 0), Attempt::First);
    assert_eq!((r.error_code, r.session_id, carried(&r).len()), (0, 0, 1));
    assert_eq!(fetch(&b, &session_fetch(id, 6, &[], &[], 0), Attempt::First).error_code, Code::FetchSessionIdNotFound.code());
}

#[test]
fn a_parked_incremental_fetch_takes_its_epoch_once_and_only_its_answer_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let b = three_partitions(tmp.path());
    let full = fetch(&b, &session_fetch(0, 0, &[(0, 0), (1, 0), (2, 0)], &[], 0), Attempt::First);
    let id = full.session_id;
    let f = session_fetch(id, 1, &[], &[], 500);
    assert!(matches!(handle(&b, &f, 0, Attempt::First, &mut Vec::new()), Outcome::Park { wait_ms: 500, .. }));
    assert!(matches!(handle(&b, &f, 0, Attempt::Again, &mut Vec::new()), Outcome::Park { .. }), "handled again: parked, not refused for its epoch");
    produce_to(&b, 0);
    let r = fetch(&b, &f, Attempt::Again);
    assert_eq!(carried(&r).iter().map(|c| c.0).collect::<Vec<_>>(), vec![0]);
    // The next epoch is 2: epoch 1 was taken once, by the first handling.
    assert_eq!(fetch(&b, &session_fetch(id, 2, &[(0, 1)], &[], 0), Attempt::First).error_code, 0);
    // A parked full fetch opens its session only when answered: one session, not one per handling.
    let f = session_fetch(0, 0, &[(1, 0)], &[], 500);
    for attempt in [Attempt::First, Attempt::Again, Attempt::Again] {
        assert!(matches!(handle(&b, &f, 0, attempt, &mut Vec::new()), Outcome::Park { .. }));
    }
    assert_eq!(b.broker().fetch_sessions().len(), 1);
    let r = fetch(&b, &f, Attempt::Final);
    assert_eq!((r.session_id, b.broker().fetch_sessions().len()), (id + 1, 2));
}

/// The fetcher's side against the handler: after a full fetch, a fetcher naming only what
/// moved gets only what has news, with the records in order and nothing lost.
#[test]
fn a_fetcher_session_follows_records_as_they_come() {
    let tmp = tempfile::tempdir().unwrap();
    let b = three_partitions(tmp.path());
    let topic: Arc<str> = Arc::from("t");
    let mut offsets = [0i64; 3];
    let mut asking = Asking::new();
    let mut got = [0usize; 3];
    for round in 0..8 {
        if round % 2 == 1 {
            produce_to(&b, round % 3);
        }
        let wanted: Vec<_> = (0..3).map(|p| (topic.clone(), p, Wanted { fetch_offset: offsets[p as usize], log_start_offset: -1, leader_epoch: -1, max_bytes: 1 << 20 })).collect();
        let ask = asking.next_fetch(&wanted);
        let named: Vec<(i32, i64)> = ask.named.iter().map(|&i| (wanted[i].1, wanted[i].2.fetch_offset)).collect();
        let r = fetch(&b, &session_fetch(ask.session_id, ask.epoch, &named, &[], 0), Attempt::First);
        asking.answered(crate::kafka::error(r.error_code), r.session_id);
        if round > 0 {
            assert!(named.len() <= 1, "round {round}: at most the partition that took a record is named: {named:?}");
            assert!(carried(&r).len() <= 2, "round {round}: {:?}", carried(&r));
        }
        for (p, bytes, hw) in carried(&r) {
            if bytes > 0 {
                got[p as usize] += 1;
                offsets[p as usize] = hw;
            }
        }
    }
    assert_eq!(got, [1, 2, 1], "every record once: partitions 1, 0, 2, 1 took one each");
}
