//! Topic configs as clients see and change them: the catalog of Kafka's topic-level names this
//! broker serves (with each one's type and broker-level synonym), a topic's effective settings
//! (the broker's defaults under the topic's overrides), what DescribeConfigs reports for each
//! (value, source, synonyms), and IncrementalAlterConfigs' operations applied to an override
//! set. Pure functions over plain data: no IO, no clock, no decision about who may change what.

use super::topic::{self, log_overrides, parse_bool, unclean_leader_election_config};
use crate::kafka::{config_source, config_type};
use crate::log::{FlushPolicy, LogConfig};
use std::collections::BTreeMap;

/// One topic config: Kafka's name, the broker setting that supplies its default, its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigDef {
    pub name: &'static str,
    /// The broker-level synonym (Kafka's `log.*` name), reported in DescribeConfigs synonyms.
    pub broker_name: &'static str,
    /// Kafka's ConfigEntry.ConfigType ([`config_type`]).
    pub kind: i8,
}

const fn def(name: &'static str, broker_name: &'static str, kind: i8) -> ConfigDef {
    ConfigDef { name, broker_name, kind }
}

/// Every topic config served, sorted by name: what CreateTopics, AlterConfigs and
/// IncrementalAlterConfigs accept and DescribeConfigs reports.
pub const CATALOG: &[ConfigDef] = &[
    def("cleanup.policy", "log.cleanup.policy", config_type::list),
    def("delete.retention.ms", "log.cleaner.delete.retention.ms", config_type::long),
    def("flush.messages", "log.flush.interval.messages", config_type::long),
    def("flush.ms", "log.flush.interval.ms", config_type::long),
    def(super::throttles::follower_replicas, super::throttles::follower_replicas, config_type::list),
    def("index.interval.bytes", "log.index.interval.bytes", config_type::int),
    // No broker-level synonym: a topic's own (KIP-73), reported under its own name.
    def(super::throttles::leader_replicas, super::throttles::leader_replicas, config_type::list),
    def("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", config_type::long),
    def("max.message.bytes", "message.max.bytes", config_type::int),
    def("message.timestamp.type", "log.message.timestamp.type", config_type::string),
    def("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", config_type::double),
    def("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", config_type::long),
    def("min.insync.replicas", "min.insync.replicas", config_type::int),
    def("retention.bytes", "log.retention.bytes", config_type::long),
    def("retention.ms", "log.retention.ms", config_type::long),
    def("segment.bytes", "log.segment.bytes", config_type::int),
    def("segment.ms", "log.roll.ms", config_type::long),
    def(unclean_leader_election_config, "unclean.leader.election.enable", config_type::boolean),
];

/// The catalog entry named `name`.
pub fn lookup(name: &str) -> Option<&'static ConfigDef> {
    CATALOG.iter().find(|d| d.name == name)
}

/// A topic's effective settings: what its log, its leader's acks=all check and the
/// controller's elections use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSettings {
    pub log: LogConfig,
    /// `min.insync.replicas`
    pub min_insync: i32,
    /// `unclean.leader.election.enable`
    pub unclean_leader_election: bool,
}

impl TopicSettings {
    /// Kafka's defaults: what a broker started without settings gives every topic.
    pub fn kafka_defaults() -> TopicSettings {
        TopicSettings { log: LogConfig::default(), min_insync: 1, unclean_leader_election: false }
    }

    /// `defaults` (the broker's settings) under a topic's `overrides`. An unknown name or a bad
    /// value is an error naming it (Kafka: INVALID_CONFIG).
    pub fn resolve(defaults: &TopicSettings, overrides: &BTreeMap<String, String>) -> Result<TopicSettings, String> {
        let log = topic::apply_overrides(&defaults.log, &log_overrides(overrides))?;
        // apply_overrides has checked it is a number of at least 1.
        let min_insync = overrides.get("min.insync.replicas").and_then(|v| v.trim().parse().ok()).unwrap_or(defaults.min_insync);
        for key in [super::throttles::leader_replicas, super::throttles::follower_replicas] {
            if let Some(v) = overrides.get(key) {
                super::throttles::check_replicas(key, v)?;
            }
        }
        let unclean_leader_election = match overrides.get(unclean_leader_election_config) {
            Some(v) => parse_bool(v).ok_or_else(|| format!("{unclean_leader_election_config}={v} is not true or false"))?,
            None => defaults.unclean_leader_election,
        };
        Ok(TopicSettings { log, min_insync, unclean_leader_election })
    }

    /// The value of config `name` as Kafka writes it; None for a name not in [`CATALOG`].
    pub fn value(&self, name: &str) -> Option<String> {
        let c = &self.log;
        // Kafka's "never" for both flush settings is Long.MAX_VALUE.
        let never = i64::MAX as u64;
        let (messages, ms) = match c.flush {
            FlushPolicy::Never => (never, never),
            FlushPolicy::EveryBatch => (1, never),
            FlushPolicy::EveryMessages(n) => (n, never),
            FlushPolicy::EveryMs(t) => (never, t),
        };
        Some(match name {
            "cleanup.policy" => c.cleanup.name().into(),
            "delete.retention.ms" => c.delete_retention_ms.to_string(),
            "flush.messages" => messages.to_string(),
            "flush.ms" => ms.to_string(),
            "index.interval.bytes" => c.index_interval_bytes.to_string(),
            "max.compaction.lag.ms" => c.max_compaction_lag_ms.to_string(),
            "max.message.bytes" => c.max_message_bytes.to_string(),
            "message.timestamp.type" => if c.log_append_time { "LogAppendTime" } else { "CreateTime" }.into(),
            "min.cleanable.dirty.ratio" => (c.min_cleanable_dirty_ratio_ppm as f64 / 1e6).to_string(),
            "min.compaction.lag.ms" => c.min_compaction_lag_ms.to_string(),
            "min.insync.replicas" => self.min_insync.to_string(),
            "retention.bytes" => c.retention_bytes.to_string(),
            "retention.ms" => c.retention_ms.to_string(),
            "segment.bytes" => c.segment_bytes.to_string(),
            "segment.ms" => c.segment_ms.to_string(),
            n if n == unclean_leader_election_config => self.unclean_leader_election.to_string(),
            super::throttles::leader_replicas | super::throttles::follower_replicas => String::new(),
            _ => return None,
        })
    }
}

/// One config as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub name: &'static str,
    pub value: String,
    /// [`config_source`]: the topic's override, the broker's own setting, or Kafka's default.
    pub source: i8,
    pub kind: i8,
    /// (name, value, source), highest precedence first (KIP-226): the topic override, the
    /// broker's setting if it has one, Kafka's default under the broker-level name.
    pub synonyms: Vec<(&'static str, String, i8)>,
}

/// Every config of a topic with `overrides`, on a broker whose topic defaults are `broker`.
/// A setting the broker was given that differs from Kafka's default is reported as
/// STATIC_BROKER_CONFIG (the broker does not remember which flags were given, so one set to
/// exactly Kafka's default reads as DEFAULT_CONFIG: same value, either way).
pub fn describe_topic(broker: &TopicSettings, overrides: &BTreeMap<String, String>) -> Vec<Described> {
    let kafka = TopicSettings::kafka_defaults();
    CATALOG
        .iter()
        .map(|d| {
            let broker_value = broker.value(d.name).unwrap_or_default();
            let kafka_value = kafka.value(d.name).unwrap_or_default();
            let set_on_broker = broker_value != kafka_value;
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(d.name) {
                synonyms.push((d.name, v.trim().to_string(), config_source::dynamic_topic));
            }
            if set_on_broker {
                synonyms.push((d.broker_name, broker_value.clone(), config_source::static_broker));
            }
            synonyms.push((d.broker_name, kafka_value, config_source::default));
            let (_, value, source) = synonyms[0].clone();
            Described { name: d.name, value, source, kind: d.kind, synonyms }
        })
        .collect()
}

/// One IncrementalAlterConfigs operation on a config (KIP-339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Set(String),
    /// Back to the default: the override is removed (a name without one is left alone).
    Delete,
    /// Adds values to a list config, each once, after its current ones.
    Append(String),
    /// Removes values from a list config.
    Subtract(String),
}

/// Applies `ops`, in order, to a topic's `overrides` and returns the new override set. APPEND
/// and SUBTRACT work on list configs only and start from the current value: the override, else
/// `default(name)` (the broker's), as Kafka's controller does. Validating the result is
/// [`TopicSettings::resolve`]'s.
pub fn alter(overrides: &BTreeMap<String, String>, ops: &[(String, Op)], default: impl Fn(&str) -> Option<String>) -> Result<BTreeMap<String, String>, String> {
    let mut next = overrides.clone();
    for (name, op) in ops {
        match op {
            Op::Set(v) => {
                next.insert(name.clone(), v.clone());
            }
            Op::Delete => {
                next.remove(name);
            }
            Op::Append(v) | Op::Subtract(v) => {
                let append = matches!(op, Op::Append(_));
                if lookup(name).is_none_or(|d| d.kind != config_type::list) {
                    let what = if append { "APPEND" } else { "SUBTRACT" };
                    return Err(format!("can't {what} to key {name} because its type is not LIST"));
                }
                let current = next.get(name).cloned().or_else(|| default(name)).unwrap_or_default();
                let mut parts: Vec<String> = split(&current);
                for item in split(v) {
                    match append {
                        true if !parts.contains(&item) => parts.push(item),
                        true => {}
                        false => parts.retain(|p| *p != item),
                    }
                }
                if parts.is_empty() {
                    return Err(format!("{name} would be empty; it needs at least one of its values"));
                }
                next.insert(name.clone(), parts.join(","));
            }
        }
    }
    Ok(next)
}

/// The items of a list config value, blanks and empty items dropped.
fn split(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_catalog_is_every_topic_config_the_log_and_the_controller_read() {
        let mut names: Vec<&str> = topic::TOPIC_CONFIGS.to_vec();
        names.push(unclean_leader_election_config);
        names.sort_unstable();
        assert_eq!(CATALOG.iter().map(|d| d.name).collect::<Vec<_>>(), names);
        let kafka = TopicSettings::kafka_defaults();
        for d in CATALOG {
            let v = kafka.value(d.name).unwrap();
            // Each default, given back as an override, resolves to the same settings.
            assert_eq!(TopicSettings::resolve(&kafka, &map(&[(d.name, &v)])), Ok(kafka.clone()), "{}={v}", d.name);
        }
        assert_eq!(kafka.value("cleanup.policy").as_deref(), Some("delete"));
        assert_eq!(kafka.value("min.cleanable.dirty.ratio").as_deref(), Some("0.5"));
        assert_eq!(kafka.value("message.timestamp.type").as_deref(), Some("CreateTime"));
        assert_eq!(kafka.value("no.such.config"), None);
    }

    #[test]
    fn bad_values_are_refused_naming_the_config_and_the_rule() {
        let kafka = TopicSettings::kafka_defaults();
        for (k, v, says) in [
            ("retention.ms", "-2", "must be at least -1"),
            ("segment.ms", "0", "must be at least 1"),
            ("retention.ms", "soon", "not a valid number"),
            ("min.insync.replicas", "0", "must be at least 1"),
            ("cleanup.policy", "shred", "must be delete, compact or both"),
            ("message.timestamp.type", "logappendtime", "CreateTime or LogAppendTime"),
            ("min.cleanable.dirty.ratio", "1.5", "0..=1"),
            ("max.compaction.lag.ms", "0", "must be at least 1"),
            (unclean_leader_election_config, "yes", "not true or false"),
            ("compression.type", "zstd", "unknown topic config 'compression.type'"),
        ] {
            let err = TopicSettings::resolve(&kafka, &map(&[(k, v)])).unwrap_err();
            assert!(err.contains(k) && err.contains(says), "{k}={v}: {err}");
        }
        let s = TopicSettings::resolve(&kafka, &map(&[("message.timestamp.type", "LogAppendTime"), ("min.insync.replicas", "2"), (unclean_leader_election_config, "TRUE")])).unwrap();
        assert!(s.log.log_append_time && s.unclean_leader_election);
        assert_eq!(s.min_insync, 2);
    }

    #[test]
    fn described_sources_are_override_then_broker_setting_then_kafka_default() {
        let broker = TopicSettings { log: LogConfig { retention_ms: 60_000, ..LogConfig::default() }, ..TopicSettings::kafka_defaults() };
        let described = describe_topic(&broker, &map(&[("segment.ms", " 5000 ")]));
        assert_eq!(described.len(), CATALOG.len());
        let get = |n: &str| described.iter().find(|d| d.name == n).unwrap().clone();
        let seg = get("segment.ms");
        assert_eq!((seg.value.as_str(), seg.source, seg.kind), ("5000", config_source::dynamic_topic, config_type::long));
        assert_eq!(seg.synonyms, vec![("segment.ms", "5000".into(), config_source::dynamic_topic), ("log.roll.ms", "604800000".into(), config_source::default)]);
        let ret = get("retention.ms");
        assert_eq!((ret.value.as_str(), ret.source), ("60000", config_source::static_broker));
        assert_eq!(ret.synonyms[1], ("log.retention.ms", "604800000".into(), config_source::default));
        let policy = get("cleanup.policy");
        assert_eq!((policy.value.as_str(), policy.source, policy.kind), ("delete", config_source::default, config_type::list));
    }

    #[test]
    fn incremental_operations_set_delete_append_and_subtract() {
        let default = |n: &str| TopicSettings::kafka_defaults().value(n);
        let start = map(&[("retention.ms", "1000"), ("segment.ms", "50")]);
        let ops = vec![("retention.ms".to_string(), Op::Set("2000".into())), ("segment.ms".to_string(), Op::Delete), ("flush.ms".to_string(), Op::Delete)];
        assert_eq!(alter(&start, &ops, default), Ok(map(&[("retention.ms", "2000")])));
        // APPEND starts from the default when there is no override, and adds each value once.
        let append = vec![("cleanup.policy".to_string(), Op::Append("compact,delete".into()))];
        assert_eq!(alter(&BTreeMap::new(), &append, default), Ok(map(&[("cleanup.policy", "delete,compact")])));
        let subtract = vec![("cleanup.policy".to_string(), Op::Subtract("delete".into()))];
        assert_eq!(alter(&map(&[("cleanup.policy", "delete,compact")]), &subtract, default), Ok(map(&[("cleanup.policy", "compact")])));
        assert!(alter(&BTreeMap::new(), &subtract, default).unwrap_err().contains("would be empty"));
        let not_list = vec![("retention.ms".to_string(), Op::Append("5".into()))];
        assert_eq!(alter(&start, &not_list, default), Err("can't APPEND to key retention.ms because its type is not LIST".into()));
    }
}
