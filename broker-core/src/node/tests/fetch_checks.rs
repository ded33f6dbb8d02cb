//! What a Fetch checks of every partition it reads, at every fetch, as Kafka's
//! `handleFetchRequest` does over its whole fetch context: a fetch session's partitions (which
//! an incremental fetch does not name) are authorized like the named ones, so a session opened
//! on the id of a topic that did not exist yet, or kept after its READ was revoked, reads
//! nothing the caller may not READ; and partitions answered without being read (an unknown
//! topic id, an unknown topic or partition, a refused topic) neither end a long poll nor
//! prolong it.

use super::*;
use crate::security::acl::Caller;
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::create_acls_response::CreateAclsResponse;
use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use kafka_protocol::messages::delete_acls_response::DeleteAclsResponse;
use uuid::Uuid;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

fn who(principal: &str) -> Caller {
    Caller { principal: principal.into(), host: [10, 0, 0, 7].into(), internal: false, listener: None, connection: None }
}

/// A node whose authorizer is on, `User:admin` its super user.
fn secured(dir: &std::path::Path) -> Node {
    let mut c = crate::testing::config(dir);
    c.security.authorizer = crate::security::acl::AuthorizerConfig { enabled: true, super_users: ["User:admin".to_string()].into(), allow_if_no_acl: false, ..Default::default() };
    crate::testing::one_node(c)
}

/// `req` at `version` from `caller`; an answer waiting for metadata is answered once applied.
fn ask_as<R: Encodable + HeaderVersion>(node: &Node, caller: &Caller, key: ApiKey, version: i16, req: &R, attempt: Attempt) -> Outcome {
    handle_from(node, prepare(decode_request(&frame(key, version, req), true).unwrap()), Some(caller), 0, attempt, &mut Vec::new()).pipe_wait(node)
}

/// Alice's READ on topic `topic` (topic 2, literal 3, READ 3, ALLOW 3), created by the admin.
fn grant_read(node: &Node, topic: &str) {
    let acl = AclCreation::default().with_resource_type(2).with_resource_name(s(topic)).with_resource_pattern_type(3).with_principal(s("User:alice")).with_host(s("*")).with_operation(3).with_permission_type(3);
    let r: CreateAclsResponse = reply(ask_as(node, &who("User:admin"), ApiKey::CreateAcls, 3, &CreateAclsRequest::default().with_creations(vec![acl]), Attempt::First), ApiKey::CreateAcls, 3);
    assert_eq!(r.results[0].error_code, 0);
}

/// The admin deletes alice's READ on `topic`.
fn revoke_read(node: &Node, topic: &str) {
    let filter = DeleteAclsFilter::default().with_resource_type_filter(2).with_resource_name_filter(Some(s(topic))).with_pattern_type_filter(3).with_principal_filter(Some(s("User:alice"))).with_host_filter(Some(s("*"))).with_operation(3).with_permission_type(3);
    let r: DeleteAclsResponse = reply(ask_as(node, &who("User:admin"), ApiKey::DeleteAcls, 3, &DeleteAclsRequest::default().with_filters(vec![filter]), Attempt::First), ApiKey::DeleteAcls, 3);
    assert_eq!((r.filter_results[0].error_code, r.filter_results[0].matching_acls.len()), (0, 1), "alice's READ on {topic} deleted");
}

fn produce_to(node: &Node, topic: &str) {
    let r: ProduceResponse = reply(handle(node, &frame(ApiKey::Produce, 9, &produce_req(topic, build(&[b"secret"], 1000), 1)), 0, Attempt::First, &mut Vec::new()), ApiKey::Produce, 9);
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

/// A fetch naming partition 0 of each topic in `topics` (by id from v13, else by name), in
/// session `id` at `epoch`, waiting up to `max_wait_ms`.
fn fetch_of(topics: &[(&str, Uuid)], (id, epoch): (i32, i32), max_wait_ms: i32, by_id: bool) -> FetchRequest {
    let part = || vec![FetchPartition::default().with_partition(0).with_partition_max_bytes(1 << 20)];
    let topics = topics.iter().map(|(name, uuid)| match by_id {
        true => FetchTopic::default().with_topic_id(*uuid).with_partitions(part()),
        false => FetchTopic::default().with_topic(TopicName(s(name))).with_partitions(part()),
    });
    FetchRequest::default().with_replica_id(kafka_protocol::messages::BrokerId(-1)).with_max_wait_ms(max_wait_ms).with_min_bytes(1).with_max_bytes(1 << 20).with_session_id(id).with_session_epoch(epoch).with_topics(topics.collect())
}

/// What an answer carries: (topic name or id's text, partition, error, records bytes).
fn carried(r: &FetchResponse) -> Vec<(String, i32, i16, usize)> {
    let key = |t: &kafka_protocol::messages::fetch_response::FetchableTopicResponse| if t.topic.0.is_empty() { t.topic_id.to_string() } else { t.topic.0.to_string() };
    let mut all: Vec<_> = r.responses.iter().flat_map(|t| t.partitions.iter().map(move |p| (key(t), p.partition_index, p.error_code, p.records.as_ref().map_or(0, |x| x.len())))).collect();
    all.sort();
    all
}

/// KIP-516's ids are derived from the controller's secret, the name, the time, the controller
/// and the next metadata offset, so a caller who knew the secret could name a topic by id
/// before it exists. A session opened then holds
/// the id (UNKNOWN_TOPIC_ID); once the topic exists the session's partition is authorized
/// like any: TOPIC_AUTHORIZATION_FAILED, never the records, for a caller without READ.
#[test]
fn a_session_holding_the_id_of_a_topic_created_later_reads_it_only_with_read() {
    let tmp = tempfile::tempdir().unwrap();
    let node = secured(tmp.path());
    let alice = who("User:alice");
    let open = Uuid::from_bytes(crate::testing::create(&node, "open", 1, Default::default()).unwrap());
    grant_read(&node, "open");
    let (me, offset) = {
        let b = node.broker();
        (b.config().node_id, b.image().offset)
    };
    // The test knows the controller's key (zeros in unit tests); a client does not.
    let key = node.broker().config().topic_id_key;
    let guessed = Uuid::from_bytes(crate::metadata::topic::topic_id(&key, "secret", 0, me, offset as u64 + 1));
    let full: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 13, &fetch_of(&[("open", open), ("secret", guessed)], (0, 0), 0, true), Attempt::First), ApiKey::Fetch, 13);
    let session = full.session_id;
    assert!(session > 0, "a session opened");
    assert_eq!(carried(&full), { let mut w = vec![(open.to_string(), 0, 0, 0), (guessed.to_string(), 0, Code::UnknownTopicId.code(), 0)]; w.sort(); w });
    let secret = Uuid::from_bytes(crate::testing::create(&node, "secret", 1, Default::default()).unwrap());
    assert_eq!(secret, guessed, "the id was guessed right (else this test proves nothing)");
    produce_to(&node, "secret");
    for epoch in [1, 2] {
        let r: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 13, &fetch_of(&[], (session, epoch), 0, true), Attempt::First), ApiKey::Fetch, 13);
        assert_eq!((r.error_code, carried(&r)), (0, vec![(secret.to_string(), 0, Code::TopicAuthorizationFailed.code(), 0)]), "epoch {epoch}: the session's partition of a topic alice may not READ");
    }
    // Granted READ, the same session reads it.
    grant_read(&node, "secret");
    let r: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 13, &fetch_of(&[], (session, 3), 0, true), Attempt::First), ApiKey::Fetch, 13);
    let got = carried(&r);
    assert!(got.len() == 1 && got[0].2 == 0 && got[0].3 > 0, "now read: {got:?}");
}

/// READ revoked while a session by name follows the topic: the next incremental fetch (which
/// names nothing) answers its partition TOPIC_AUTHORIZATION_FAILED, with no records, and so
/// does every fetch after; a session opened naming a refused topic holds it (as Kafka's does)
/// and reads it once READ is granted; a session error carries no partition.
#[test]
fn read_revoked_mid_session_is_refused_at_the_next_fetch() {
    let tmp = tempfile::tempdir().unwrap();
    let node = secured(tmp.path());
    let alice = who("User:alice");
    crate::testing::create(&node, "open", 1, Default::default()).unwrap();
    crate::testing::create(&node, "later", 1, Default::default()).unwrap();
    grant_read(&node, "open");
    produce_to(&node, "open");
    produce_to(&node, "later");
    let nil = Uuid::nil();
    let full: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 12, &fetch_of(&[("open", nil), ("later", nil)], (0, 0), 0, false), Attempt::First), ApiKey::Fetch, 12);
    let session = full.session_id;
    let got = carried(&full);
    assert!(session > 0 && got.len() == 2, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].2, got[0].3), ("later", Code::TopicAuthorizationFailed.code(), 0));
    assert!(got[1].0 == "open" && got[1].2 == 0 && got[1].3 > 0, "{got:?}");
    revoke_read(&node, "open");
    produce_to(&node, "open");
    for epoch in [1, 2] {
        let r: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 12, &fetch_of(&[], (session, epoch), 0, false), Attempt::First), ApiKey::Fetch, 12);
        let refused = Code::TopicAuthorizationFailed.code();
        assert_eq!((r.error_code, carried(&r)), (0, vec![("later".into(), 0, refused, 0), ("open".into(), 0, refused, 0)]), "epoch {epoch}");
    }
    grant_read(&node, "later");
    let r: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 12, &fetch_of(&[], (session, 3), 0, false), Attempt::First), ApiKey::Fetch, 12);
    let got = carried(&r);
    assert!(got.len() == 2 && got[0].0 == "later" && got[0].2 == 0 && got[0].3 > 0, "the session held the refused topic: {got:?}");
    // A session's error is answered alone (Kafka's SessionErrorContext), with no partition of
    // the refused topic the fetch names.
    let r: FetchResponse = reply(ask_as(&node, &alice, ApiKey::Fetch, 12, &fetch_of(&[("open", nil)], (session, 9), 0, false), Attempt::First), ApiKey::Fetch, 12);
    assert_eq!((r.error_code, r.responses.len()), (Code::InvalidFetchSessionEpoch.code(), 0));
}

/// Partitions answered without being read (Kafka merges them in after its delayed fetch)
/// leave the long poll to the readable ones: a fetch naming an empty partition and an unknown
/// id (v13) or an unknown topic (v12) waits, and is answered with both when the wait is over;
/// one naming only unreadable partitions is answered at once; a session holding a deleted
/// topic's old id still waits on its live partition.
#[test]
fn partitions_answered_unread_neither_end_nor_prolong_the_long_poll() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let t = Uuid::from_bytes(crate::testing::create(&node, "t", 1, Default::default()).unwrap());
    let gone = Uuid::from_bytes(crate::testing::create(&node, "gone", 1, Default::default()).unwrap());
    let unknown = Uuid::from_u128(0xfeed);
    for (version, by_id, other) in [(13, true, ("nope", unknown)), (17, true, ("nope", unknown)), (12, false, ("nope", Uuid::nil()))] {
        let code = if by_id { Code::UnknownTopicId } else { Code::UnknownTopicOrPartition }.code();
        let both = frame(ApiKey::Fetch, version, &fetch_of(&[("t", t), other], (0, -1), 500, by_id));
        assert!(matches!(handle(&node, &both, 0, Attempt::First, &mut Vec::new()), Outcome::Park { wait_ms: 500, .. }), "v{version}: waits on t-0");
        let r: FetchResponse = reply(handle(&node, &both, 0, Attempt::Final, &mut Vec::new()), ApiKey::Fetch, version);
        let other_key = if by_id { unknown.to_string() } else { "nope".into() };
        let t_key = if by_id { t.to_string() } else { "t".into() };
        let mut want = vec![(t_key, 0, 0, 0), (other_key, 0, code, 0)];
        want.sort();
        assert_eq!(carried(&r), want, "v{version}: both answered when the wait is over");
        let alone = frame(ApiKey::Fetch, version, &fetch_of(&[other], (0, -1), 500, by_id));
        let r: FetchResponse = reply(handle(&node, &alone, 0, Attempt::First, &mut Vec::new()), ApiKey::Fetch, version);
        assert_eq!(r.responses[0].partitions[0].error_code, code, "v{version}: nothing to read: answered at once");
    }
    // A partition of a topic that exists but not that partition: the same.
    let mut req = fetch_of(&[("t", t)], (0, -1), 500, true);
    req.topics[0].partitions.push(FetchPartition::default().with_partition(7).with_partition_max_bytes(1024));
    assert!(matches!(handle(&node, &frame(ApiKey::Fetch, 13, &req), 0, Attempt::First, &mut Vec::new()), Outcome::Park { .. }), "t-7 does not end the wait on t-0");
    // A session by id over t and gone; gone deleted: its old id is UNKNOWN_TOPIC_ID, and the
    // session's next fetch still waits on t.
    let full: FetchResponse = reply(handle(&node, &frame(ApiKey::Fetch, 13, &fetch_of(&[("t", t), ("gone", gone)], (0, 0), 0, true)), 0, Attempt::First, &mut Vec::new()), ApiKey::Fetch, 13);
    crate::testing::delete(&node, "gone").unwrap();
    let next = frame(ApiKey::Fetch, 13, &fetch_of(&[], (full.session_id, 1), 500, true));
    assert!(matches!(handle(&node, &next, 0, Attempt::First, &mut Vec::new()), Outcome::Park { wait_ms: 500, .. }), "the deleted topic's id does not answer at once");
    let r: FetchResponse = reply(handle(&node, &next, 0, Attempt::Final, &mut Vec::new()), ApiKey::Fetch, 13);
    assert_eq!(carried(&r), vec![(gone.to_string(), 0, Code::UnknownTopicId.code(), 0)]);
    // An error reading a partition still answers at once (the client must act on it).
    let mut req = fetch_of(&[("t", t)], (0, -1), 500, true);
    req.topics[0].partitions[0].fetch_offset = 99;
    let r: FetchResponse = reply(handle(&node, &frame(ApiKey::Fetch, 13, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::Fetch, 13);
    assert_eq!(r.responses[0].partitions[0].error_code, Code::OffsetOutOfRange.code());
}
