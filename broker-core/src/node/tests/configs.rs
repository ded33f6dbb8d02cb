//! The config APIs and DeleteRecords through `handle`, as real request bytes: what
//! IncrementalAlterConfigs and AlterConfigs change is what DescribeConfigs then reports (with
//! its source and synonyms), every bad request gets Kafka's code and a reason, a node that is
//! not the controller answers NOT_CONTROLLER, and DeleteRecords answers the low watermark.
//! Group resources (type 32) the same way: set, described as DYNAMIC_GROUP_CONFIG or
//! DEFAULT_CONFIG, deleted, and bad names and values refused INVALID_CONFIG naming the key.

use super::*;
use crate::kafka::{config_op, config_resource, config_source, config_type};
use kafka_protocol::messages::alter_configs_request::{AlterConfigsRequest, AlterConfigsResource as LegacyResource, AlterableConfig as LegacyConfig};
use kafka_protocol::messages::alter_configs_response::AlterConfigsResponse;
use kafka_protocol::messages::delete_records_request::{DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic};
use kafka_protocol::messages::delete_records_response::DeleteRecordsResponse;
use kafka_protocol::messages::describe_configs_request::{DescribeConfigsRequest, DescribeConfigsResource};
use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResponse};
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest};
use kafka_protocol::messages::incremental_alter_configs_response::IncrementalAlterConfigsResponse;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// Handles a request; one that waits for metadata to be applied is answered after this
/// node's broker applies it (what the shell's metadata follower does).
fn answer<R: Encodable + HeaderVersion>(node: &Node, key: ApiKey, version: i16, req: &R) -> Outcome {
    match handle(node, &frame(key, version, req), 0, Attempt::First, &mut Vec::new()) {
        Outcome::Wait(mut waiting) => {
            if node.controller().is_some() {
                crate::testing::apply_metadata(node, 0);
            }
            waiting.poll(node, false).expect("answered once applied")
        }
        other => other,
    }
}

type Change<'a> = (&'a str, i8, Option<&'a str>);

fn incremental(resources: &[(i8, &str, &[Change])], validate_only: bool) -> IncrementalAlterConfigsRequest {
    let resources = resources
        .iter()
        .map(|(kind, name, changes)| {
            let configs = changes.iter().map(|(k, op, v)| AlterableConfig::default().with_name(s(k)).with_config_operation(*op).with_value(v.map(s))).collect();
            AlterConfigsResource::default().with_resource_type(*kind).with_resource_name(s(name)).with_configs(configs)
        })
        .collect();
    IncrementalAlterConfigsRequest::default().with_resources(resources).with_validate_only(validate_only)
}

/// (error code, error message) per resource, at `version`.
fn alter_incrementally(node: &Node, version: i16, req: &IncrementalAlterConfigsRequest) -> Vec<(i16, String)> {
    let r: IncrementalAlterConfigsResponse = reply(answer(node, ApiKey::IncrementalAlterConfigs, version, req), ApiKey::IncrementalAlterConfigs, version);
    r.responses.iter().map(|x| (x.error_code, x.error_message.as_ref().map_or(String::new(), |m| m.to_string()))).collect()
}

fn describe(node: &Node, topic: &str) -> Vec<DescribeConfigsResourceResult> {
    let res = DescribeConfigsResource::default().with_resource_type(config_resource::topic).with_resource_name(s(topic));
    let req = DescribeConfigsRequest::default().with_resources(vec![res]).with_include_synonyms(true);
    let r: DescribeConfigsResponse = reply(answer(node, ApiKey::DescribeConfigs, 4, &req), ApiKey::DescribeConfigs, 4);
    assert_eq!(r.results[0].error_code, 0, "{:?}", r.results[0].error_message);
    r.results[0].configs.clone()
}

/// (value, source) of config `name` in a DescribeConfigs answer.
fn entry(configs: &[DescribeConfigsResourceResult], name: &str) -> (String, i8) {
    let c = configs.iter().find(|c| c.name.as_str() == name).unwrap_or_else(|| panic!("{name} not described"));
    (c.value.as_ref().unwrap().to_string(), c.config_source)
}

#[test]
fn incremental_alter_configs_changes_what_describe_configs_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let before = describe(&node, "t");
    assert_eq!(before.len(), crate::metadata::configs::CATALOG.len(), "every topic config is described");
    assert_eq!(entry(&before, "cleanup.policy"), ("delete".into(), config_source::default));
    let set: &[Change] = &[("retention.ms", config_op::set, Some("5000")), ("cleanup.policy", config_op::append, Some("compact"))];
    assert_eq!(alter_incrementally(&node, 0, &incremental(&[(config_resource::topic, "t", set)], false)), vec![(0, String::new())]);
    let after = describe(&node, "t");
    assert_eq!(entry(&after, "retention.ms"), ("5000".into(), config_source::dynamic_topic));
    assert_eq!(entry(&after, "cleanup.policy"), ("delete,compact".into(), config_source::dynamic_topic));
    assert_eq!(entry(&after, "segment.ms"), ("604800000".into(), config_source::default));
    let retention = after.iter().find(|c| c.name.as_str() == "retention.ms").unwrap();
    assert_eq!((retention.read_only, retention.config_type), (false, config_type::long));
    let synonyms: Vec<(String, i8)> = retention.synonyms.iter().map(|x| (x.name.to_string(), x.source)).collect();
    assert_eq!(synonyms, vec![("retention.ms".into(), config_source::dynamic_topic), ("log.retention.ms".into(), config_source::default)]);
    let b = node.broker();
    let log = b.partitions()[("t", 0)].log.config().clone();
    assert_eq!((log.retention_ms, log.cleanup.compact, log.cleanup.delete), (5000, true, true), "the open log took it");
    drop(b);
    // v1 (flexible) as well; DELETE goes back to the default.
    let delete: &[Change] = &[("retention.ms", config_op::delete, None)];
    assert_eq!(alter_incrementally(&node, 1, &incremental(&[(config_resource::topic, "t", delete)], false)), vec![(0, String::new())]);
    assert_eq!(entry(&describe(&node, "t"), "retention.ms"), ("604800000".into(), config_source::default));
}

#[test]
fn bad_config_changes_get_kafkas_codes_and_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let topic = config_resource::topic;
    let req = incremental(
        &[
            (topic, "t", &[("retention.ms", config_op::set, Some("-7"))]),
            (topic, "nope", &[("retention.ms", config_op::set, Some("1"))]),
            (config_resource::broker, "0", &[("log.retention.ms", config_op::set, Some("1"))]),
            (config_resource::broker, "1", &[]),
            (topic, "twice", &[]),
            (topic, "twice", &[]),
            (topic, "n1", &[("retention.ms", config_op::set, None)]),
            (topic, "n2", &[("retention.ms", 9, Some("1"))]),
            (topic, "n3", &[("retention.ms", config_op::set, Some("1")), ("retention.ms", config_op::delete, None)]),
            (8, "root", &[("root", config_op::set, Some("DEBUG"))]),
        ],
        false,
    );
    let answers = alter_incrementally(&node, 1, &req);
    let codes: Vec<i16> = answers.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, vec![40, 3, 42, 0, 42, 42, 42, 42, 42, 42]);
    assert_eq!(answers[0].1, "retention.ms=-7 must be at least -1");
    assert!(answers[2].1.starts_with("cannot update these configs dynamically: log.retention.ms"), "{}", answers[2].1);
    assert!(answers[6].1.contains("null value"), "{}", answers[6].1);
    // validate_only decides and commits nothing.
    let check = incremental(&[(topic, "t", &[("retention.ms", config_op::set, Some("1234"))])], true);
    assert_eq!(alter_incrementally(&node, 1, &check), vec![(0, String::new())]);
    assert_eq!(entry(&describe(&node, "t"), "retention.ms").1, config_source::default);
    assert!(node.broker().image().topics["t"].config.is_empty());
}

#[test]
fn alter_configs_replaces_the_whole_override_set() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, [("retention.ms".to_string(), "5000".to_string())].into()).unwrap();
    let legacy = |pairs: &[(&str, Option<&str>)]| {
        let configs = pairs.iter().map(|(k, v)| LegacyConfig::default().with_name(s(k)).with_value(v.map(s))).collect();
        let res = LegacyResource::default().with_resource_type(config_resource::topic).with_resource_name(s("t")).with_configs(configs);
        AlterConfigsRequest::default().with_resources(vec![res])
    };
    for version in [0, 2] {
        let r: AlterConfigsResponse = reply(answer(&node, ApiKey::AlterConfigs, version, &legacy(&[("segment.ms", Some("100"))])), ApiKey::AlterConfigs, version);
        assert_eq!(r.responses[0].error_code, 0, "v{version}: {:?}", r.responses[0].error_message);
    }
    let described = describe(&node, "t");
    assert_eq!(entry(&described, "segment.ms"), ("100".into(), config_source::dynamic_topic));
    assert_eq!(entry(&described, "retention.ms"), ("604800000".into(), config_source::default), "left out: back to the default");
    let r: AlterConfigsResponse = reply(answer(&node, ApiKey::AlterConfigs, 1, &legacy(&[("segment.ms", None)])), ApiKey::AlterConfigs, 1);
    assert_eq!(r.responses[0].error_code, Code::InvalidRequest.code());
    let r: AlterConfigsResponse = reply(answer(&node, ApiKey::AlterConfigs, 1, &legacy(&[("segment.ms", Some("0"))])), ApiKey::AlterConfigs, 1);
    assert_eq!(r.responses[0].error_code, Code::InvalidConfig.code());
}

#[test]
fn a_node_that_is_not_the_controller_answers_not_controller() {
    let tmp = tempfile::tempdir().unwrap();
    let b = crate::broker::Broker::open(std::sync::Arc::new(crate::storage::FileDisk::new()), crate::testing::config(tmp.path()), 0).unwrap();
    let node = Node::new(b, None);
    let req = incremental(&[(config_resource::topic, "t", &[("retention.ms", config_op::set, Some("1"))]), (config_resource::broker, "0", &[("x", config_op::set, Some("1"))])], false);
    let codes: Vec<i16> = alter_incrementally(&node, 1, &req).into_iter().map(|(c, _)| c).collect();
    assert_eq!(codes, vec![Code::NotController.code(), Code::InvalidRequest.code()]);
}

#[test]
fn delete_records_answers_the_new_low_watermark() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    crate::testing::create(&node, "t", 1, Default::default()).unwrap();
    let produced: ProduceResponse = reply(answer(&node, ApiKey::Produce, 9, &produce_req("t", build(&[b"a", b"b", b"c"], 1), 1)), ApiKey::Produce, 9);
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    let delete = |topic: &str, offset: i64| {
        let p = DeleteRecordsPartition::default().with_partition_index(0).with_offset(offset);
        let t = DeleteRecordsTopic::default().with_name(TopicName(s(topic))).with_partitions(vec![p]);
        let req = DeleteRecordsRequest::default().with_topics(vec![t]).with_timeout_ms(1000);
        let r: DeleteRecordsResponse = reply(answer(&node, ApiKey::DeleteRecords, 2, &req), ApiKey::DeleteRecords, 2);
        (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].low_watermark)
    };
    assert_eq!(delete("t", 2), (0, 2));
    assert_eq!(delete("t", 9), (Code::OffsetOutOfRange.code(), -1));
    assert_eq!(delete("nope", 1), (Code::UnknownTopicOrPartition.code(), -1));
    assert_eq!(delete("t", -1), (0, 3), "-1: up to the high watermark");
    let r: FetchResponse = reply(answer(&node, ApiKey::Fetch, 12, &fetch_req("t", 0, 0)), ApiKey::Fetch, 12);
    let pd = &r.responses[0].partitions[0];
    assert_eq!((pd.error_code, pd.log_start_offset), (Code::OffsetOutOfRange.code(), 3));
}

/// One described config: (name, value, source).
type Entry = (String, String, i8);

/// A GROUP resource (type 32): what a DescribeConfigs answers for a group, in catalog order, at
/// v4 (or the error code and message).
fn describe_group(node: &Node, group: &str) -> Result<Vec<Entry>, (i16, String)> {
    let res = DescribeConfigsResource::default().with_resource_type(config_resource::group).with_resource_name(s(group));
    let req = DescribeConfigsRequest::default().with_resources(vec![res]);
    let r: DescribeConfigsResponse = reply(answer(node, ApiKey::DescribeConfigs, 4, &req), ApiKey::DescribeConfigs, 4);
    let x = &r.results[0];
    match x.error_code {
        0 => Ok(x.configs.iter().map(|c| (c.name.to_string(), c.value.as_ref().unwrap().to_string(), c.config_source)).collect()),
        code => Err((code, x.error_message.as_ref().map_or(String::new(), |m| m.to_string()))),
    }
}

#[test]
fn group_configs_are_set_described_and_deleted_for_any_group_id() {
    use crate::metadata::group_configs::{self, share_auto_offset_reset as reset, share_record_lock_duration_ms as lock};
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let group = config_resource::group;
    let defaults = describe_group(&node, "g").unwrap();
    let want: Vec<Entry> = group_configs::CATALOG.iter().map(|d| (d.name.to_string(), d.default_value(), config_source::default)).collect();
    assert_eq!(defaults, want, "a group nobody configured (or created) has every default");
    assert!(defaults.contains(&(reset.into(), "latest".into(), config_source::default)));

    let set: &[Change] = &[(reset, config_op::set, Some("by_duration:PT1H")), (lock, config_op::set, Some("60000"))];
    assert_eq!(alter_incrementally(&node, 1, &incremental(&[(group, "g", set)], false)), vec![(0, String::new())]);
    let after = describe_group(&node, "g").unwrap();
    assert!(after.contains(&(reset.into(), "by_duration:PT1H".into(), config_source::dynamic_group)), "{after:?}");
    assert!(after.contains(&(lock.into(), "60000".into(), config_source::dynamic_group)));
    assert!(after.contains(&("share.isolation.level".into(), "read_uncommitted".into(), config_source::default)));
    assert_eq!(node.broker().image().group_config("g", reset), Some("by_duration:PT1H"), "the accessor the share coordinator reads");
    assert_eq!(describe_group(&node, "other").unwrap(), want, "another group is untouched");

    // DELETE goes back to the default; the other config stays.
    let delete: &[Change] = &[(reset, config_op::delete, None)];
    assert_eq!(alter_incrementally(&node, 0, &incremental(&[(group, "g", delete)], false)), vec![(0, String::new())]);
    let after = describe_group(&node, "g").unwrap();
    assert!(after.contains(&(reset.into(), "latest".into(), config_source::default)) && after.contains(&(lock.into(), "60000".into(), config_source::dynamic_group)));
    assert_eq!(node.broker().image().group_config("g", reset), None);

    // AlterConfigs replaces the whole set.
    let legacy = LegacyResource::default().with_resource_type(group).with_resource_name(s("g")).with_configs(vec![LegacyConfig::default().with_name(s("share.isolation.level")).with_value(Some(s("read_committed")))]);
    let r: AlterConfigsResponse = reply(answer(&node, ApiKey::AlterConfigs, 2, &AlterConfigsRequest::default().with_resources(vec![legacy])), ApiKey::AlterConfigs, 2);
    assert_eq!(r.responses[0].error_code, 0, "{:?}", r.responses[0].error_message);
    assert_eq!(node.broker().image().group_configs["g"], [("share.isolation.level".to_string(), "read_committed".to_string())].into());
}

#[test]
fn bad_group_config_changes_are_invalid_config_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let group = config_resource::group;
    let req = incremental(
        &[
            (group, "g1", &[("group.share.record.lock.duration.ms", config_op::set, Some("1000"))]),
            (group, "g2", &[("share.auto.offset.reset", config_op::set, Some("yesterday"))]),
            (group, "g3", &[("share.auto.offset.reset", config_op::set, Some("by_duration:PT1.5H"))]),
            (group, "g4", &[("share.record.lock.duration.ms", config_op::set, Some("999"))]),
            (group, "g5", &[("consumer.session.timeout.ms", config_op::set, Some("0"))]),
            (group, "g6", &[("share.isolation.level", config_op::set, Some("dirty"))]),
            (group, "g7", &[("no.such.config", config_op::delete, None)]),
            (group, "g8", &[("share.session.timeout.ms", config_op::append, Some("1"))]),
            (group, "", &[("share.session.timeout.ms", config_op::set, Some("1"))]),
        ],
        false,
    );
    let answers = alter_incrementally(&node, 1, &req);
    let codes: Vec<i16> = answers.iter().map(|(c, _)| *c).collect();
    let invalid = Code::InvalidConfig.code();
    assert_eq!(codes, vec![invalid, invalid, invalid, invalid, invalid, invalid, invalid, invalid, Code::InvalidRequest.code()]);
    assert!(answers[0].1.starts_with("unknown group config 'group.share.record.lock.duration.ms'"), "{}", answers[0].1);
    assert!(answers[1].1.starts_with("share.auto.offset.reset=yesterday must be latest, earliest or by_duration:"), "{}", answers[1].1);
    assert_eq!(answers[3].1, "share.record.lock.duration.ms=999 must be at least 1000");
    assert!(answers[6].1.contains("no.such.config") && answers[7].1.contains("not LIST"), "{answers:?}");
    assert!(node.broker().image().group_configs.is_empty(), "nothing was committed");
    assert_eq!(describe_group(&node, "").unwrap_err().0, Code::InvalidRequest.code());
    // validate_only checks and commits nothing.
    let check = incremental(&[(group, "g", &[("share.auto.offset.reset", config_op::set, Some("earliest"))])], true);
    assert_eq!(alter_incrementally(&node, 1, &check), vec![(0, String::new())]);
    assert!(node.broker().image().group_configs.is_empty());
}
