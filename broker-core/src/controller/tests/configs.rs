//! Topic config changes (AlterConfigs, IncrementalAlterConfigs) as controller decisions: one
//! `TopicConfig` record holding the whole new override set, checked like CreateTopics' configs,
//! and the elections a newly enabled unclean election allows, in the same batch. Group configs
//! likewise: one `GroupConfig` record holding the group's whole new set.

use super::*;
use crate::metadata::configs::Op;
use crate::metadata::topic::unclean_leader_election_config;

fn ops(list: &[(&str, Op)]) -> Vec<(String, Op)> {
    list.iter().map(|(k, op)| (k.to_string(), op.clone())).collect()
}

#[test]
fn an_incremental_change_is_one_record_holding_the_whole_new_set() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    c.create("t", 1, 1, &[("retention.ms", "1000"), ("segment.ms", "50")]);
    let change = ops(&[("retention.ms", Op::Set("2000".into())), ("segment.ms", Op::Delete), ("cleanup.policy", Op::Append("compact".into()))]);
    let records = c.ctl.alter_topic_config("t", &change).unwrap();
    assert_eq!(c.commit(records), r#"config t {"cleanup.policy": "delete,compact", "retention.ms": "2000"}"#);
    assert_eq!(c.ctl.alter_topic_config("t", &change).unwrap(), Vec::new(), "the same change again changes nothing");
    // AlterConfigs replaces the whole set: what it leaves out is back at the default.
    let records = c.ctl.replace_topic_config("t", BTreeMap::from([("min.insync.replicas".to_string(), "1".to_string())])).unwrap();
    assert_eq!(c.commit(records), r#"config t {"min.insync.replicas": "1"}"#);
}

#[test]
fn bad_changes_are_refused_with_kafkas_codes_and_a_reason() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    c.create("t", 1, 1, &[]);
    let refused = |c: &Cluster, name: &str, change: &[(&str, Op)]| {
        let e = c.ctl.alter_topic_config(name, &ops(change)).unwrap_err();
        (e.kafka_error(), e.to_string())
    };
    let (code, why) = refused(&c, "t", &[("retention.ms", Op::Set("-7".into()))]);
    assert_eq!((code, why.as_str()), (Code::InvalidConfig, "retention.ms=-7 must be at least -1"));
    let (code, why) = refused(&c, "t", &[("retention.ms", Op::Append("5".into()))]);
    assert_eq!((code, why.as_str()), (Code::InvalidConfig, "can't APPEND to key retention.ms because its type is not LIST"));
    let (code, why) = refused(&c, "t", &[("log.retention.ms", Op::Set("5".into()))]);
    assert_eq!((code, why.as_str()), (Code::InvalidConfig, "unknown topic config 'log.retention.ms'"));
    assert_eq!(refused(&c, "t", &[(unclean_leader_election_config, Op::Set("maybe".into()))]).0, Code::InvalidConfig);
    assert_eq!(refused(&c, "t", &[("cleanup.policy", Op::Subtract("delete".into()))]).0, Code::InvalidConfig);
    assert_eq!(refused(&c, "nope", &[("retention.ms", Op::Set("5".into()))]).0, Code::UnknownTopicOrPartition);
    let e = c.ctl.replace_topic_config("t", BTreeMap::from([("segment.bytes".to_string(), "ten".to_string())])).unwrap_err();
    assert_eq!(e.kafka_error(), Code::InvalidConfig);
    assert!(c.ctl.image().topics["t"].config.is_empty(), "nothing was committed");
    c.check();
}

#[test]
fn turning_unclean_election_on_elects_a_leaderless_partition_in_the_same_batch() {
    // Why: a partition whose last ISR member is gone waits for it; enabling unclean election
    // for its topic is the operator choosing availability over those records now, and waiting
    // for the next unrelated election to act on it would leave the partition offline.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let (_, records) = c.ctl.alter_partition(&c.alter(1, "t", &[1])).unwrap();
    c.commit(records);
    c.add_bystanders(&[4, 5, 6, 7], 5_000);
    c.heartbeats(&[2, 3], 5_000);
    assert_eq!(c.tick(session + 1), lines("t-0 replicas=[1, 2, 3] isr=[1] leader=-1 epochs=1/2\nfence 1 epoch=0"));
    let records = c.ctl.alter_topic_config("t", &ops(&[(unclean_leader_election_config, Op::Set("true".into()))])).unwrap();
    let expected = r#"config t {"unclean.leader.election.enable": "true"}
        t-0 replicas=[1, 2, 3] isr=[2] leader=2 epochs=2/3"#;
    assert_eq!(c.commit(records), lines(expected));
}

#[test]
fn a_group_config_change_is_one_record_holding_the_whole_new_set() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    let change = ops(&[("share.auto.offset.reset", Op::Set(" earliest ".into())), ("share.record.lock.duration.ms", Op::Set("60000".into()))]);
    let records = c.ctl.alter_group_config("never-created", &change).unwrap();
    assert_eq!(c.commit(records), r#"group config never-created {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "60000"}"#, "stored trimmed");
    assert_eq!(c.ctl.alter_group_config("never-created", &change).unwrap(), Vec::new(), "the same change again changes nothing");
    let records = c.ctl.alter_group_config("never-created", &ops(&[("share.auto.offset.reset", Op::Delete)])).unwrap();
    assert_eq!(c.commit(records), r#"group config never-created {"share.record.lock.duration.ms": "60000"}"#);
    let records = c.ctl.replace_group_config("never-created", BTreeMap::new()).unwrap();
    assert_eq!(c.commit(records), "group config never-created {}", "AlterConfigs with nothing: every config back at its default");
    assert!(c.ctl.image().group_configs.is_empty());
    let refused = |group: &str, change: &[(&str, Op)]| c.ctl.alter_group_config(group, &ops(change)).unwrap_err().kafka_error();
    assert_eq!(refused("g", &[("retention.ms", Op::Set("1".into()))]), Code::InvalidConfig);
    assert_eq!(refused("g", &[("share.record.lock.duration.ms", Op::Set("3600001".into()))]), Code::InvalidConfig);
    assert_eq!(refused("", &[("share.auto.offset.reset", Op::Set("latest".into()))]), Code::InvalidRequest);
}
