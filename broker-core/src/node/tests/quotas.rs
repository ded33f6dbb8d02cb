//! AlterClientQuotas and DescribeClientQuotas (`quota_handlers`) through `handle`, as real
//! request bytes, on a lone node: values set, described by exact name, default and any, removed;
//! bad keys, values and entity types refused per entity; `validate_only` changes nothing; and the
//! node's throttles follow the committed quotas.

use super::*;
use kafka_protocol::messages::alter_client_quotas_request::{AlterClientQuotasRequest, EntityData, EntryData, OpData};
use kafka_protocol::messages::alter_client_quotas_response::AlterClientQuotasResponse;
use kafka_protocol::messages::describe_client_quotas_request::{ComponentData, DescribeClientQuotasRequest};
use kafka_protocol::messages::describe_client_quotas_response::DescribeClientQuotasResponse;

fn s(t: &str) -> StrBytes {
    StrBytes::from_string(t.into())
}

fn entry(parts: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    let entity = parts.iter().map(|(k, n)| EntityData::default().with_entity_type(s(k)).with_entity_name(n.map(s))).collect();
    let ops = ops.iter().map(|(k, v)| OpData::default().with_key(s(k)).with_value(v.unwrap_or(0.0)).with_remove(v.is_none())).collect();
    EntryData::default().with_entity(entity).with_ops(ops)
}

fn alter(node: &Node, entries: Vec<EntryData>, validate_only: bool) -> Vec<i16> {
    let req = AlterClientQuotasRequest::default().with_entries(entries).with_validate_only(validate_only);
    let r: AlterClientQuotasResponse = reply(handle(node, &frame(ApiKey::AlterClientQuotas, 1, &req), 0, Attempt::First, &mut Vec::new()).pipe_wait(node), ApiKey::AlterClientQuotas, 1);
    r.entries.iter().map(|e| e.error_code).collect()
}

/// (parts, values) of what a filter matches, for version `v`.
fn describe(node: &Node, components: &[(&str, i8, Option<&str>)], strict: bool, v: i16) -> Vec<String> {
    let comps = components.iter().map(|(k, m, n)| ComponentData::default().with_entity_type(s(k)).with_match_type(*m).with_match(n.map(s))).collect();
    let req = DescribeClientQuotasRequest::default().with_components(comps).with_strict(strict);
    let r: DescribeClientQuotasResponse = reply(handle(node, &frame(ApiKey::DescribeClientQuotas, v, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::DescribeClientQuotas, v);
    assert_eq!(r.error_code, 0);
    r.entries.unwrap_or_default().iter().map(|e| format!("{:?} {:?}", e.entity.iter().map(|p| (p.entity_type.to_string(), p.entity_name.as_ref().map(|n| n.to_string()))).collect::<Vec<_>>(), e.values.iter().map(|v| (v.key.to_string(), v.value)).collect::<Vec<_>>())).collect()
}

#[test]
fn quotas_are_set_described_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let codes = alter(&node, vec![
        entry(&[("client-id", Some("app"))], &[("producer_byte_rate", Some(1024.0))]),
        entry(&[("user", Some("alice")), ("client-id", None)], &[("consumer_byte_rate", Some(2048.0))]),
        entry(&[("client-id", Some("x"))], &[("producer_rate", Some(1.0))]),
        entry(&[("client-id", Some("x"))], &[("producer_byte_rate", Some(-5.0))]),
        entry(&[("ip", Some("1.2.3.4"))], &[("connection_creation_rate", Some(1.0))]),
    ], false);
    let invalid = Code::InvalidRequest.code();
    assert_eq!(codes, vec![0, 0, invalid, invalid, invalid]);
    for v in 0..=1 {
        assert_eq!(describe(&node, &[("client-id", 0, Some("app"))], false, v), vec![r#"[("client-id", Some("app"))] [("producer_byte_rate", 1024.0)]"#]);
        assert_eq!(describe(&node, &[("client-id", 1, None)], false, v), vec![r#"[("user", Some("alice")), ("client-id", None)] [("consumer_byte_rate", 2048.0)]"#]);
        assert_eq!(describe(&node, &[("client-id", 1, None)], true, v), Vec::<String>::new(), "strict: alice's part is not in the filter");
        assert_eq!(describe(&node, &[("client-id", 2, None)], false, v).len(), 2, "any client id");
    }
    assert!(node.throttles().any(), "the node's throttles follow the committed quotas");
    assert_eq!(alter(&node, vec![entry(&[("client-id", Some("app"))], &[("producer_byte_rate", None)])], true), vec![0]);
    assert_eq!(describe(&node, &[("client-id", 0, Some("app"))], false, 1).len(), 1, "validate_only changes nothing");
    assert_eq!(alter(&node, vec![entry(&[("client-id", Some("app"))], &[("producer_byte_rate", None)])], false), vec![0]);
    assert!(describe(&node, &[("client-id", 0, Some("app"))], false, 1).is_empty(), "an entity with no value left is gone");
}
