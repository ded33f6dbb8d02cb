//! Zero-copy fetch (the real build's default) under real clients: large records read back byte
//! for byte by confluent-kafka and kcat, and a segment deleted while a large fetch answer is
//! still being sent from it (the answer sends the bytes its read saw, the broker stays up).

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::kcat;
use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::fetch_response::FetchResponse;
use kafka_protocol::messages::{ApiKey, BrokerId, RequestHeader, ResponseHeader, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long kcat may take to produce or read back one topic.
const kcat_timeout_s: u64 = 120;

/// The i-th line kcat produces: its index, then letters, `len` bytes in all.
fn line(i: usize, len: usize) -> Vec<u8> {
    let mut v = format!("{i:08}|").into_bytes();
    v.extend((0..len - v.len()).map(|j| b'a' + ((i * 7 + j) % 26) as u8));
    v
}

fn kcat_produce(broker: &Broker, topic: &str, n: usize, len: usize) {
    let mut input = Vec::with_capacity(n * (len + 1));
    for i in 0..n {
        input.extend(line(i, len));
        input.push(b'\n');
    }
    let args = ["-P", "-b", &broker.bootstrap(), "-t", topic, "-p", "0", "-X", "acks=all", "-X", "message.max.bytes=2000000"];
    let out = run_bounded(Command::new(kcat()).args(args), Some(input), Duration::from_secs(kcat_timeout_s), "kcat -P");
    assert!(out.status.success(), "kcat -P failed: {}\n{}", String::from_utf8_lossy(&out.stderr), broker.log_tail());
}

#[test]
fn large_records_come_back_byte_for_byte_through_sendfile() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 4 MiB segments: answers come from several files, some of them rolled while read.
    let mut broker = Broker::start(dir.path(), &["--log-segment-bytes", "4194304"]);
    client_script(&mut broker, "large_records.py", &["--topic", "big-binary", "--n", "40", "--size", "524288"]);
    let (n, len) = (40, 256 * 1024);
    kcat_produce(&broker, "big-lines", n, len);
    let args = ["-C", "-b", &broker.bootstrap(), "-t", "big-lines", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o:%s\n"];
    let out = run_bounded(Command::new(kcat()).args(args), None, Duration::from_secs(kcat_timeout_s), "kcat -C");
    assert!(out.status.success(), "kcat -C failed: {}\n{}", String::from_utf8_lossy(&out.stderr), broker.log_tail());
    let mut want = Vec::new();
    for i in 0..n {
        want.extend(format!("{i}:").into_bytes());
        want.extend(line(i, len));
        want.push(b'\n');
    }
    assert_eq!(out.stdout.len(), want.len(), "kcat read {} bytes of output, {} expected", out.stdout.len(), want.len());
    assert!(out.stdout == want, "kcat read other bytes than it produced");
    broker.assert_alive("after the reads");
}

/// One request on `stream`: header v2 (v1 for requests below their flexible versions).
fn send<R: Encodable>(stream: &mut TcpStream, key: ApiKey, version: i16, correlation_id: i32, body: &R) {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("zero-copy-test")));
    let mut buf = bytes::BytesMut::new();
    header.encode(&mut buf, key.request_header_version(version)).unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    stream.write_all(&frame).expect("send request");
}

fn read_frame(stream: &mut TcpStream, prefix: &[u8]) -> bytes::Bytes {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("response size");
    let size = i32::from_be_bytes(size) as usize;
    let mut body = prefix.to_vec();
    body.resize(size, 0);
    stream.read_exact(&mut body[prefix.len()..]).expect("the whole response");
    body.into()
}

#[test]
fn a_segment_deleted_while_its_fetch_answer_is_in_flight_still_sends_the_bytes_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = Broker::start(dir.path(), &["--log-segment-bytes", "16777216"]);
    let (n, len) = (48, 512 * 1024);
    kcat_produce(&broker, "deleted", n, len);
    let first = dir.path().join("deleted-0").join("00000000000000000000.log");
    assert!(first.exists(), "segment 0 at {}", first.display());

    // A fetch of the whole first segment (about 16 MiB), left unread after its first bytes: the
    // rest waits in the broker, which parks on writable readiness.
    let mut stream = TcpStream::connect(broker.bootstrap()).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let topic = TopicName(StrBytes::from_static_str("deleted"));
    let partition = FetchPartition::default().with_partition(0).with_fetch_offset(0).with_partition_max_bytes(64 << 20);
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(64 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default().with_topic(topic.clone()).with_partitions(vec![partition])]);
    send(&mut stream, ApiKey::Fetch, 12, 7, &fetch);
    let mut head = vec![0u8; 64 * 1024];
    stream.read_exact(&mut head).expect("the answer starts");

    // Every record deleted: segment 0 is removed from the directory while the answer is open.
    let mut admin = TcpStream::connect(broker.bootstrap()).expect("connect");
    admin.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let delete = DeleteRecordsRequest::default().with_timeout_ms(10_000).with_topics(vec![DeleteRecordsTopic::default()
        .with_name(topic)
        .with_partitions(vec![DeleteRecordsPartition::default().with_partition_index(0).with_offset(-1)])]);
    send(&mut admin, ApiKey::DeleteRecords, 2, 8, &delete);
    let _ = read_frame(&mut admin, &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while first.exists() {
        assert!(Instant::now() < deadline, "segment 0 was not removed after DeleteRecords\n{}", broker.log_tail());
        std::thread::sleep(Duration::from_millis(50));
    }

    // The rest of the answer: the batches of the deleted file, whole and the ones produced.
    let size = i32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
    assert!(size > 8 << 20, "the answer is larger than what the socket buffers hold: {size}");
    let mut body = head[4..].to_vec();
    body.resize(size, 0);
    stream.read_exact(&mut body[head.len() - 4..]).expect("the rest of the answer after the deletion");
    let mut body = bytes::Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, ApiKey::Fetch.response_header_version(12)).unwrap();
    assert_eq!(header.correlation_id, 7);
    let resp = FetchResponse::decode(&mut body, 12).expect("a well-formed Fetch response");
    let pd = &resp.responses[0].partitions[0];
    assert_eq!(pd.error_code, 0);
    let mut records = pd.records.clone().expect("records");
    let sets = RecordBatchDecoder::decode_all(&mut records).expect("whole batches");
    let got: Vec<_> = sets.into_iter().flat_map(|s| s.records).collect();
    assert!(got.len() >= 20, "the answer holds the first segment's records: {}", got.len());
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        assert!(r.value.as_deref() == Some(&line(i, len)[..]), "record {i} has other bytes than produced");
    }
}
