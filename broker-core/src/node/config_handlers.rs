//! The config APIs. DescribeConfigs is answered by any broker from its image: a topic's every
//! config with its source and synonyms, or this broker's own settings. AlterConfigs and
//! IncrementalAlterConfigs change topic configs: decided and committed by the controller as one
//! `TopicConfig` record, like CreateTopics (NOT_CONTROLLER elsewhere), and answered once this
//! node's broker has applied it. Broker resources (a broker id, or "" for the cluster's
//! default) change only the replication throttle rates (`BrokerConfig` records, KIP-73); any
//! other broker config is INVALID_REQUEST, Kafka's answer for one it cannot update dynamically:
//! Seedlog reads its other settings at start. Group resources (type 32, KIP-848 and KIP-932)
//! are a group's dynamic configs, decided by the controller as topic configs are (one
//! `GroupConfig` record) and described by any broker from its image; the group need not exist.
//! Field-by-field translation and the per-request checks Kafka makes before deciding
//! (duplicate resources or keys, null values, unknown operations); decisions are the
//! controller's (`controller::configs`) and `metadata::configs`'.

use crate::protocol::Response;
use crate::protocol::s;
use super::{Node, Outcome, Waiting};
use crate::broker::Broker;
use crate::constants::alter_configs_wait_ms;
use crate::kafka::{config_op, config_resource, config_source, Code};
use crate::metadata::configs::{describe_topic, Described, Op};
use crate::metadata::group_configs;
use kafka_protocol::messages::alter_configs_request::AlterConfigsRequest;
use kafka_protocol::messages::alter_configs_response::{AlterConfigsResourceResponse, AlterConfigsResponse};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsRequest;
use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult, DescribeConfigsSynonym};
use kafka_protocol::messages::incremental_alter_configs_request::IncrementalAlterConfigsRequest;
use kafka_protocol::messages::incremental_alter_configs_response::{AlterConfigsResourceResponse as IncrementalResult, IncrementalAlterConfigsResponse};
use kafka_protocol::messages::ApiKey;
use std::collections::{BTreeMap, BTreeSet};

/// DescribeConfigs. Synonyms are listed when asked (`include_synonyms`); documentation is not
/// kept (null).
pub fn describe_configs(b: &Broker, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let mut r = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut rr = DescribeConfigsResult::default();
        rr.resource_type = res.resource_type;
        rr.resource_name = res.resource_name.clone();
        let name = res.resource_name.to_string();
        let entries = match res.resource_type {
            config_resource::topic => match b.image().topics.get(&name) {
                Some(t) => Ok(topic_entries(b, &t.config, req.include_synonyms)),
                None => Err((Code::UnknownTopicOrPartition, format!("unknown topic '{name}'"))),
            },
            config_resource::broker if name.is_empty() || name == b.config().node_id.to_string() => Ok(broker_entries(b)),
            config_resource::broker => Err((Code::InvalidRequest, format!("broker '{name}' is not this broker ({})", b.config().node_id))),
            config_resource::group => match group_configs::check_group_name(&name) {
                Ok(()) => Ok(described_entries(group_configs::describe(b.image().group_configs.get(&name).unwrap_or(&BTreeMap::new())), req.include_synonyms)),
                Err(why) => Err((Code::InvalidRequest, why)),
            },
            other => Err((Code::InvalidRequest, format!("config resource type {other} is not supported"))),
        };
        match entries {
            Ok(list) => {
                // Null or empty: every config (Kafka's ConfigHelper reads both as "all").
                let keys = res.configuration_keys.as_ref().filter(|ks| !ks.is_empty()).map(|ks| ks.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>());
                rr.configs = list.into_iter().filter(|c| keys.as_ref().is_none_or(|ks| ks.contains(c.name.as_str()))).collect();
            }
            Err((code, msg)) => {
                rr.error_code = code.code();
                rr.error_message = Some(s(&msg));
            }
        }
        r.results.push(rr);
    }
    r
}

fn topic_entries(b: &Broker, overrides: &BTreeMap<String, String>, synonyms: bool) -> Vec<DescribeConfigsResourceResult> {
    described_entries(describe_topic(&b.topic_defaults(), overrides), synonyms)
}

/// Configs as DescribeConfigs answers them, synonyms only when asked.
fn described_entries(described: Vec<Described>, synonyms: bool) -> Vec<DescribeConfigsResourceResult> {
    described
        .into_iter()
        .map(|d| {
            let mut c = DescribeConfigsResourceResult::default();
            c.name = s(d.name);
            c.value = Some(s(&d.value));
            c.config_source = d.source;
            c.config_type = d.kind;
            if synonyms {
                c.synonyms = d
                    .synonyms
                    .into_iter()
                    .map(|(name, value, source)| {
                        let mut x = DescribeConfigsSynonym::default();
                        x.name = s(name);
                        x.value = Some(s(&value));
                        x.source = source;
                        x
                    })
                    .collect();
            }
            c
        })
        .collect()
}

/// This broker's settings: read-only ones set at start, then the dynamic ones.
fn broker_entries(b: &Broker) -> Vec<DescribeConfigsResourceResult> {
    let c = b.config();
    let l = &c.log;
    [
        ("node.id", c.node_id.to_string()),
        ("log.dirs", c.data_dir.display().to_string()),
        ("auto.create.topics.enable", c.auto_create_topics.to_string()),
        ("num.partitions", c.num_partitions.to_string()),
        ("min.insync.replicas", c.min_insync_replicas.to_string()),
        ("message.max.bytes", l.max_message_bytes.to_string()),
        ("log.segment.bytes", l.segment_bytes.to_string()),
        ("log.roll.ms", l.segment_ms.to_string()),
        ("log.retention.ms", l.retention_ms.to_string()),
        ("log.retention.bytes", l.retention_bytes.to_string()),
        ("log.index.interval.bytes", l.index_interval_bytes.to_string()),
        ("socket.request.max.bytes", crate::constants::request_bytes_max.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| {
        let mut x = DescribeConfigsResourceResult::default();
        x.name = s(k);
        x.value = Some(s(&v));
        x.read_only = true;
        x.config_source = config_source::static_broker;
        x
    })
    .chain(dynamic_entries(b))
    .collect()
}

/// The replication throttle rates: this broker's own, else the cluster's default, else Kafka's
/// default (no limit, Long.MAX_VALUE).
fn dynamic_entries(b: &Broker) -> Vec<DescribeConfigsResourceResult> {
    use crate::metadata::throttles::{cluster_default, dynamic_broker_configs};
    let configs = &b.image().broker_configs;
    dynamic_broker_configs
        .iter()
        .map(|key| {
            let own = configs.get(&b.config().node_id).and_then(|c| c.get(*key));
            let default = configs.get(&cluster_default).and_then(|c| c.get(*key));
            let (value, source) = match (own, default) {
                (Some(v), _) => (v.clone(), config_source::dynamic_broker),
                (None, Some(v)) => (v.clone(), config_source::dynamic_default_broker),
                (None, None) => (i64::MAX.to_string(), config_source::default),
            };
            let mut x = DescribeConfigsResourceResult::default();
            x.name = s(key);
            x.value = Some(s(&value));
            x.config_source = source;
            x
        })
        .collect()
}

/// What one resource of an alter request asks, once the request-level checks passed.
enum Ask {
    /// AlterConfigs: this whole set replaces the overrides.
    Replace(BTreeMap<String, String>),
    /// IncrementalAlterConfigs: these operations, in order.
    Ops(Vec<(String, Op)>),
}

/// One resource's answer: its type and name, and the error (None: done).
type Answered = (i8, String, Option<(Code, String)>);

pub fn alter_configs(node: &Node, version: i16, correlation_id: i32, req: AlterConfigsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let asks = req
        .resources
        .iter()
        .map(|res| {
            let configs: Vec<(String, Option<String>)> = res.configs.iter().map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string()))).collect();
            let ask = unique_keys(configs.iter().map(|(k, _)| k)).and_then(|()| {
                let nulls: Vec<&str> = configs.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.as_str()).collect();
                match nulls.is_empty() {
                    true => Ok(Ask::Replace(configs.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))).collect())),
                    false => Err(format!("null value not supported for: {}", nulls.join(","))),
                }
            });
            (res.resource_type, res.resource_name.to_string(), ask)
        })
        .collect();
    let (answers, last, epoch) = alter(node, asks, req.validate_only, denied, now);
    after_commit(answers, last, epoch, |answers| {
    let mut r = AlterConfigsResponse::default();
    r.responses = entries(answers, |kind, name, code, message| AlterConfigsResourceResponse::default().with_resource_type(kind).with_resource_name(name).with_error_code(code).with_error_message(message));
    Ok(Response::new(ApiKey::AlterConfigs, version, correlation_id, r))
    })
}

pub fn incremental_alter_configs(node: &Node, version: i16, correlation_id: i32, req: IncrementalAlterConfigsRequest, denied: &super::authz::Denied, now: u64) -> Result<Outcome, String> {
    let asks = req
        .resources
        .iter()
        .map(|res| {
            let ops = unique_keys(res.configs.iter().map(|c| c.name.to_string())).and_then(|()| {
                res.configs
                    .iter()
                    .map(|c| {
                        let name = c.name.to_string();
                        let value = c.value.as_ref().map(|v| v.to_string());
                        let op = match (c.config_operation, value) {
                            (config_op::delete, _) => Op::Delete,
                            (config_op::set | config_op::append | config_op::subtract, None) => return Err(format!("null value not supported for: {name}")),
                            (config_op::set, Some(v)) => Op::Set(v),
                            (config_op::append, Some(v)) => Op::Append(v),
                            (config_op::subtract, Some(v)) => Op::Subtract(v),
                            (other, _) => return Err(format!("unknown config operation {other} for {name}")),
                        };
                        Ok((name, op))
                    })
                    .collect::<Result<Vec<_>, String>>()
                    .map(Ask::Ops)
            });
            (res.resource_type, res.resource_name.to_string(), ops)
        })
        .collect();
    let (answers, last, epoch) = alter(node, asks, req.validate_only, denied, now);
    after_commit(answers, last, epoch, |answers| {
    let mut r = IncrementalAlterConfigsResponse::default();
    r.responses = entries(answers, |kind, name, code, message| IncrementalResult::default().with_resource_type(kind).with_resource_name(name).with_error_code(code).with_error_message(message));
    Ok(Response::new(ApiKey::IncrementalAlterConfigs, version, correlation_id, r))
    })
}

/// Each resource's answer as the response's entry, built by `entry(type, name, error code,
/// error message)`: AlterConfigs and IncrementalAlterConfigs answer alike in different types.
fn entries<T>(answers: Vec<Answered>, entry: impl Fn(i8, kafka_protocol::protocol::StrBytes, i16, Option<kafka_protocol::protocol::StrBytes>) -> T) -> Vec<T> {
    answers
        .into_iter()
        .map(|(kind, name, error)| match error {
            Some((code, message)) => entry(kind, s(&name), code.code(), Some(s(&message))),
            None => entry(kind, s(&name), 0, None),
        })
        .collect()
}

/// Kafka's request check: a config named twice in one resource is INVALID_REQUEST.
fn unique_keys<S: AsRef<str>>(keys: impl Iterator<Item = S>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for k in keys {
        if !seen.insert(k.as_ref().to_string()) {
            return Err(format!("config '{}' appears more than once", k.as_ref()));
        }
    }
    Ok(())
}

/// Decides, and unless `validate_only` commits, each resource's change; returns every answer
/// and the offset of the last record committed (-1 for none), which the reply waits for.
fn alter(node: &Node, asks: Vec<(i8, String, Result<Ask, String>)>, validate_only: bool, denied: &super::authz::Denied, now: u64) -> (Vec<Answered>, i64, Option<i32>) {
    let mut quorum = super::controller_handlers::active(node);
    let mut last = -1;
    let mut count: BTreeMap<(i8, String), usize> = BTreeMap::new();
    for (kind, name, _) in &asks {
        *count.entry((*kind, name.clone())).or_default() += 1;
    }
    let mut answers = Vec::new();
    for (kind, name, ask) in asks {
        let result = match (kind, ask) {
            _ if count[&(kind, name.clone())] > 1 => Err((Code::InvalidRequest, format!("resource {kind}/'{name}' appears more than once"))),
            (_, Err(why)) => Err((Code::InvalidRequest, why)),
            (config_resource::topic, _) if denied.of(&name).is_some() => Err(denied.of(&name).map(|e| (e.kafka_error(true), e.to_string())).expect("just checked")),
            (config_resource::broker, _) if denied.cluster.is_some() => Err(denied.cluster.clone().expect("just checked")),
            (config_resource::broker, Ok(ask)) if static_keys(&ask).is_some() => Err((Code::InvalidRequest, static_keys(&ask).expect("just checked"))),
            (config_resource::broker, Ok(ask)) if ask_is_empty(&ask) => Ok(()),
            (config_resource::broker, Ok(ask)) => match quorum.as_deref_mut() {
                None => Err((Code::NotController, "this node is not the controller".to_string())),
                Some(q) => {
                    let decided = q.controller().broker_config(&name).and_then(|(id, current)| {
                        let next = match ask {
                            Ask::Replace(config) => config,
                            Ask::Ops(ops) => crate::metadata::configs::alter(&current, &ops, |_| None).map_err(crate::controller::Error::InvalidConfig)?,
                        };
                        q.controller().set_broker_config(id, next)
                    });
                    match decided {
                        Err(e) => Err((e.kafka_error(), e.to_string())),
                        Ok(_) if validate_only => Ok(()),
                        Ok(records) if records.is_empty() => Ok(()),
                        Ok(records) => q.commit(records, now).map(|offset| last = last.max(offset)).map_err(|e| (e.kafka_error(), e.to_string())),
                    }
                }
            },
            (config_resource::group, _) if denied.groups.contains_key(&name) => Err((Code::GroupAuthorizationFailed, format!("not authorized to alter the configs of group '{name}' (ALTER_CONFIGS on the group)"))),
            (config_resource::topic | config_resource::group, Ok(ask)) => match quorum.as_deref_mut() {
                None => Err((Code::NotController, "this node is not the controller".to_string())),
                Some(q) => {
                    let c = q.controller();
                    let decided = match (kind == config_resource::group, ask) {
                        (false, Ask::Replace(config)) => c.replace_topic_config(&name, config),
                        (false, Ask::Ops(ops)) => c.alter_topic_config(&name, &ops),
                        (true, Ask::Replace(config)) => c.replace_group_config(&name, config),
                        (true, Ask::Ops(ops)) => c.alter_group_config(&name, &ops),
                    };
                    match decided {
                        Err(e) => Err((e.kafka_error(), e.to_string())),
                        Ok(_) if validate_only => Ok(()),
                        Ok(records) if records.is_empty() => Ok(()),
                        Ok(records) => q.commit(records, now).map(|offset| last = last.max(offset)).map_err(|e| (e.kafka_error(), e.to_string())),
                    }
                }
            },
            (other, Ok(_)) => Err((Code::InvalidRequest, format!("config resource type {other} is not supported"))),
        };
        answers.push((kind, name, result.err()));
    }
    (answers, last, quorum.and_then(|q| q.active_epoch()))
}

/// The answer once the quorum committed the changes (decided in controller `epoch`) and this
/// node's broker applied them; if the leadership ends first, every change that was to be made
/// is answered NOT_CONTROLLER (it may or may not have been committed).
fn after_commit(answers: Vec<Answered>, last: i64, epoch: Option<i32>, encode: impl Fn(Vec<Answered>) -> Result<Response, String>) -> Result<Outcome, String> {
    let refused: Vec<Answered> = answers
        .iter()
        .map(|(kind, name, error)| (*kind, name.clone(), error.clone().or_else(|| Some((Code::NotController, "the controller lost its leadership before the change was committed".to_string())))))
        .collect();
    let reply = encode(answers)?;
    Ok(Outcome::Wait(match epoch {
        Some(epoch) => Waiting::committed(last, epoch, reply, encode(refused)?, true, alter_configs_wait_ms),
        None => Waiting::applied(last, reply, alter_configs_wait_ms),
    }))
}

/// Why a broker change is refused on any node, Kafka's INVALID_REQUEST: it names configs that
/// cannot change while brokers run (the others are read at start, from flags or --config).
fn static_keys(ask: &Ask) -> Option<String> {
    let keys: Vec<&str> = match ask {
        Ask::Replace(config) => config.keys().map(String::as_str).collect(),
        Ask::Ops(ops) => ops.iter().map(|(k, _)| k.as_str()).collect(),
    };
    let fixed: Vec<&str> = keys.into_iter().filter(|k| !crate::metadata::throttles::dynamic_broker_configs.contains(k)).collect();
    (!fixed.is_empty()).then(|| format!("cannot update these configs dynamically: {} (broker settings are read at start, from flags or --config; only the replication throttle rates change while brokers run)", fixed.join(", ")))
}

/// An empty change changes nothing and succeeds, on any node.
fn ask_is_empty(ask: &Ask) -> bool {
    match ask {
        Ask::Replace(config) => config.is_empty(),
        Ask::Ops(ops) => ops.is_empty(),
    }
}
