//! Replication throttles (KIP-73), as the metadata keeps them: the rate a broker's leaders may
//! serve catching-up followers (`leader.replication.throttled.rate`, a dynamic broker config,
//! per broker or the cluster's default), and which replicas it applies to (the topic configs
//! `leader.replication.throttled.replicas` and `follower.replication.throttled.replicas`:
//! `partition:broker` pairs, or `*` for all). `seedlog reassign execute --throttle` sets both
//! for a move, as kafka-reassign-partitions.sh does. Plain data and pure functions.

use std::collections::BTreeMap;

pub const leader_rate: &str = "leader.replication.throttled.rate";
pub const follower_rate: &str = "follower.replication.throttled.rate";
pub const leader_replicas: &str = "leader.replication.throttled.replicas";
pub const follower_replicas: &str = "follower.replication.throttled.replicas";

/// The broker configs that may change while brokers run (the others are read at start).
pub const dynamic_broker_configs: [&str; 2] = [leader_rate, follower_rate];

/// The broker id a cluster-wide default broker config is kept under (Kafka's empty resource
/// name).
pub const cluster_default: i32 = -1;

/// A dynamic broker config's value, checked: a positive whole number of bytes per second.
pub fn check_rate(key: &str, value: &str) -> Result<u64, String> {
    if !dynamic_broker_configs.contains(&key) {
        return Err(format!("cannot update {key} dynamically (broker settings are read at start; only {} can change while brokers run)", dynamic_broker_configs.join(" and ")));
    }
    value.trim().parse::<u64>().ok().filter(|v| *v > 0).ok_or_else(|| format!("{key}={value}: must be a positive number of bytes per second"))
}

/// A throttled-replicas list, checked: empty, `*`, or `partition:broker` pairs.
pub fn check_replicas(key: &str, value: &str) -> Result<(), String> {
    let v = value.trim();
    if v.is_empty() || v == "*" {
        return Ok(());
    }
    for pair in v.split(',') {
        let ok = pair.trim().split_once(':').is_some_and(|(p, b)| p.trim().parse::<i32>().is_ok_and(|p| p >= 0) && b.trim().parse::<i32>().is_ok_and(|b| b >= 0));
        if !ok {
            return Err(format!("{key}={value}: {pair:?} is not partition:broker (a list of them, or *)"));
        }
    }
    Ok(())
}

/// Whether a list names `partition` on `broker` (`*`: every replica).
pub fn names(value: Option<&String>, partition: i32, broker: i32) -> bool {
    let Some(v) = value.map(|v| v.trim()) else { return false };
    v == "*" || v.split(',').any(|pair| pair.trim().split_once(':').is_some_and(|(p, b)| p.trim().parse() == Ok(partition) && b.trim().parse() == Ok(broker)))
}

/// The rate `key` for broker `id`: its own, else the cluster default, else none.
pub fn rate(configs: &BTreeMap<i32, BTreeMap<String, String>>, id: i32, key: &str) -> Option<u64> {
    [id, cluster_default].iter().find_map(|b| configs.get(b)?.get(key)?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_rates_read_as_kafka_writes_them() {
        assert!(check_replicas(leader_replicas, "0:1, 1:2").is_ok() && check_replicas(leader_replicas, "*").is_ok() && check_replicas(leader_replicas, "").is_ok());
        assert!(check_replicas(leader_replicas, "0-1").is_err() && check_replicas(leader_replicas, "a:1").is_err());
        assert!(names(Some(&"0:1,1:2".into()), 1, 2) && !names(Some(&"0:1".into()), 0, 2) && names(Some(&"*".into()), 7, 9) && !names(None, 0, 0));
        assert_eq!(check_rate(leader_rate, "1048576"), Ok(1_048_576));
        assert!(check_rate(leader_rate, "0").is_err() && check_rate("log.retention.ms", "1").unwrap_err().contains("cannot update"));
        let configs: BTreeMap<i32, BTreeMap<String, String>> = [(cluster_default, [(leader_rate.to_string(), "100".to_string())].into()), (2, [(leader_rate.to_string(), "200".to_string())].into())].into();
        assert_eq!((rate(&configs, 1, leader_rate), rate(&configs, 2, leader_rate), rate(&configs, 1, follower_rate)), (Some(100), Some(200), None));
    }
}
