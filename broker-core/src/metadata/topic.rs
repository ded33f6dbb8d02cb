//! Topics as broker and controller both name them: names (Kafka's rules), ids, and per-topic
//! config overrides mapped onto [`LogConfig`]. No IO.

use crate::log::{FlushPolicy, LogConfig};
use std::collections::BTreeMap;

/// Kafka's limit on topic name length (249: room for a partition suffix in a 255-byte name).
pub const topic_name_bytes_max: usize = 249;

/// Kafka's topic name rule: 1–249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("topic name is empty".into());
    }
    if name == "." || name == ".." {
        return Err(format!("topic name cannot be '{name}'"));
    }
    if name == super::metadata_topic {
        // Its directory would be the metadata log's, and fetches of it go to the controller.
        return Err(format!("topic name '{name}' is reserved for the cluster metadata log"));
    }
    if name.len() > topic_name_bytes_max {
        return Err(format!("topic name is {} characters; the limit is {topic_name_bytes_max}", name.len()));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(format!("topic name '{name}' contains '{c}'; only ASCII letters, digits, '.', '_' and '-' are allowed"));
    }
    Ok(())
}

/// The topic-level settings this broker understands, with Kafka's names.
pub const TOPIC_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "delete.retention.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
];

/// Kafka's topic config the controller reads and the log does not (see [`log_overrides`]).
pub const unclean_leader_election_config: &str = "unclean.leader.election.enable";

/// The topic config minus the keys the log does not read (the controller's unclean election,
/// the leader's throttled replicas): what the log's [`apply_overrides`] understands.
pub fn log_overrides(config: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let others = [unclean_leader_election_config, super::throttles::leader_replicas, super::throttles::follower_replicas];
    config.iter().filter(|(k, _)| !others.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Kafka's boolean config values: `true` or `false`, any case, surrounding blanks ignored.
pub fn parse_bool(value: &str) -> Option<bool> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("true") {
        Some(true)
    } else if v.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Parses a numeric override, naming the setting when it is bad.
fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value.trim().parse().map_err(|_| format!("{key}={value} is not a valid number"))
}

/// Parses a whole-number override of at least `min` (Kafka's `ConfigDef.Range.atLeast`),
/// naming the setting when it is bad.
fn at_least(key: &str, value: &str, min: i64) -> Result<i64, String> {
    let n: i64 = num(key, value)?;
    if n < min {
        return Err(format!("{key}={n} must be at least {min}"));
    }
    Ok(n)
}

/// Applies Kafka-named overrides to `base`. Unknown names and bad values are errors that name
/// the setting (Kafka: INVALID_CONFIG).
pub fn apply_overrides(base: &LogConfig, overrides: &BTreeMap<String, String>) -> Result<LogConfig, String> {
    let mut c = base.clone();
    let mut flush_messages: Option<u64> = None;
    let mut flush_ms: Option<u64> = None;
    for (key, value) in overrides {
        match key.as_str() {
            // The lower bounds are Kafka's (LogConfig's validators); upper bounds and what the
            // log cannot honour are LogConfig::validate's, below.
            "segment.bytes" => c.segment_bytes = at_least(key, value, 1)? as u64,
            "segment.ms" => c.segment_ms = at_least(key, value, 1)? as u64,
            "index.interval.bytes" => c.index_interval_bytes = at_least(key, value, 0)? as u64,
            "retention.ms" => c.retention_ms = at_least(key, value, -1)?,
            "retention.bytes" => c.retention_bytes = num(key, value)?,
            "max.message.bytes" => c.max_message_bytes = usize::try_from(at_least(key, value, 0)?).map_err(|_| format!("{key}={value} is too large"))?,
            "flush.messages" => flush_messages = Some(at_least(key, value, 1)? as u64),
            "flush.ms" => flush_ms = Some(at_least(key, value, 1)? as u64),
            "min.insync.replicas" => {
                let n: i32 = num(key, value)?;
                if n < 1 {
                    return Err(format!("min.insync.replicas={n} must be at least 1"));
                }
            }
            "cleanup.policy" => c.cleanup = crate::log::CleanupPolicy::parse(value)?,
            "message.timestamp.type" => {
                c.log_append_time = match value.trim() {
                    "CreateTime" => false,
                    "LogAppendTime" => true,
                    other => return Err(format!("message.timestamp.type '{other}' must be CreateTime or LogAppendTime")),
                }
            }
            "delete.retention.ms" => c.delete_retention_ms = at_least(key, value, 0)? as u64,
            "min.cleanable.dirty.ratio" => {
                let r: f64 = num(key, value)?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(format!("min.cleanable.dirty.ratio={value} must be in 0..=1"));
                }
                c.min_cleanable_dirty_ratio_ppm = (r * 1e6).round() as u32;
            }
            "min.compaction.lag.ms" => c.min_compaction_lag_ms = at_least(key, value, 0)? as u64,
            "max.compaction.lag.ms" => c.max_compaction_lag_ms = at_least(key, value, 1)? as u64,
            _ => return Err(format!("unknown topic config '{key}'")),
        }
    }
    // Kafka's "never" is Long.MAX_VALUE for both; anything at or above i64::MAX means never.
    c.flush = match (flush_messages.filter(|&n| n < i64::MAX as u64), flush_ms.filter(|&t| t < i64::MAX as u64)) {
        (Some(1), _) => FlushPolicy::EveryBatch,
        (Some(n), _) => FlushPolicy::EveryMessages(n),
        (None, Some(t)) => FlushPolicy::EveryMs(t),
        (None, None) => c.flush,
    };
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

/// The secret topic ids are derived under: drawn from the OS at each start of the real broker
/// (`server::config`), from the run's seed in the simulator; all zeros only in unit tests.
pub type TopicIdKey = [u8; 32];

/// A topic id from the name and the moment of creation, under the controller's secret `key`:
/// HMAC-SHA-256 of (name, now, controller, serial), its first 16 bytes, never zero. Deterministic
/// given the key (no OS randomness in the core), distinct for a re-created topic of the same
/// name, and, like Kafka's random UUIDs, not to be guessed by a client before the topic exists
/// (fetch sessions and ACLs name topics by id).
pub fn topic_id(key: &TopicIdKey, name: &str, now: u64, node_id: i32, serial: u64) -> [u8; 16] {
    use hmac::{Hmac, Mac};
    let mut m = Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    m.update(&(name.len() as u64).to_be_bytes());
    m.update(name.as_bytes());
    m.update(&now.to_be_bytes());
    m.update(&node_id.to_be_bytes());
    m.update(&serial.to_be_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&m.finalize().into_bytes()[..16]);
    if out == [0; 16] {
        out[15] = 1;
    }
    out
}

/// The simulator's key for node `node` of a run whose seed-derived value is `seed`: SHA-256 of
/// both, so a seed's ids are the same on every replay.
pub fn topic_id_key_from_seed(seed: u64, node: u32) -> TopicIdKey {
    use sha2::Digest;
    sha2::Sha256::new().chain_update(b"seedlog topic ids").chain_update(seed.to_be_bytes()).chain_update(node.to_be_bytes()).finalize().into()
}

pub fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kafka_rules() {
        assert!(validate_name("orders.v1_eu-2").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("..").is_err());
        assert!(validate_name("bad/name").unwrap_err().contains('/'));
        assert!(validate_name(&"x".repeat(250)).is_err());
        assert!(validate_name(&"x".repeat(249)).is_ok());
    }

    #[test]
    fn overrides_map_to_log_config_and_name_bad_ones() {
        let mut o = BTreeMap::new();
        o.insert("retention.ms".to_string(), "1000".to_string());
        o.insert("flush.messages".to_string(), "1".to_string());
        let c = apply_overrides(&LogConfig::default(), &o).unwrap();
        assert_eq!((c.retention_ms, c.flush), (1000, FlushPolicy::EveryBatch));
        o.insert("segment.bytes".to_string(), "ten".to_string());
        assert!(apply_overrides(&LogConfig::default(), &o).unwrap_err().contains("segment.bytes=ten"));
        let mut u = BTreeMap::new();
        u.insert("compression.typo".to_string(), "x".to_string());
        assert!(apply_overrides(&LogConfig::default(), &u).unwrap_err().contains("compression.typo"));
    }

    #[test]
    fn ids_are_stable_and_round_trip_through_hex() {
        let key = topic_id_key_from_seed(7, 0);
        let id = topic_id(&key, "t", 5, 0, 0);
        assert_eq!(id, topic_id(&key, "t", 5, 0, 0));
        assert_ne!(id, topic_id(&key, "t", 6, 0, 0));
        assert_ne!(id, topic_id(&topic_id_key_from_seed(8, 0), "t", 5, 0, 0), "another key, another id");
        assert_ne!(key, topic_id_key_from_seed(7, 1));
        // The name's length goes first: ("ab", ..) and ("a", ..) with shifted bytes differ.
        assert_ne!(topic_id(&key, "t", 5, 0, 0), topic_id(&key, "t\0", 5, 0, 0));
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert!(validate_name("__cluster_metadata").unwrap_err().contains("reserved"));
    }
}
