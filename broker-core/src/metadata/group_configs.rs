//! Group configs (Kafka's GroupConfig, KIP-848 and KIP-932): the settings an operator sets on
//! one group with IncrementalAlterConfigs or AlterConfigs on a GROUP resource (type 32, named
//! by the group id; the group need not exist), kept in the metadata log as `GroupConfig`
//! records and read by every broker's group coordinators through [`super::Image::group_config`].
//! Here: the catalog of names with each one's type, rule and default, the check of a whole set,
//! the parse of `share.auto.offset.reset`, and what DescribeConfigs reports. Pure functions over
//! plain data: no IO, no clock, no decision about who may change what.

use super::configs::Described;
use crate::constants::{
    group_consumer_heartbeat_interval_ms_default, group_consumer_session_timeout_ms_default, group_id_bytes_max, group_share_heartbeat_interval_ms_default,
    group_share_record_lock_duration_ms_default, group_share_session_timeout_ms_default, share_record_lock_duration_ms_max, share_record_lock_duration_ms_min,
};
use crate::kafka::{config_source, config_type};
use std::collections::BTreeMap;

pub const share_auto_offset_reset: &str = "share.auto.offset.reset";
pub const share_record_lock_duration_ms: &str = "share.record.lock.duration.ms";
pub const share_isolation_level: &str = "share.isolation.level";
pub const share_session_timeout_ms: &str = "share.session.timeout.ms";
pub const share_heartbeat_interval_ms: &str = "share.heartbeat.interval.ms";
pub const consumer_session_timeout_ms: &str = "consumer.session.timeout.ms";
pub const consumer_heartbeat_interval_ms: &str = "consumer.heartbeat.interval.ms";

/// Kafka INT's largest value: what an INT config can hold.
const int_max: u64 = i32::MAX as u64;

/// What a value of one group config must be, and what it is when unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A whole number in `min..=max` (Kafka INT).
    Int { min: u64, max: u64, default: u64 },
    /// One of `values`, exactly as written (Kafka's `ValidString`).
    OneOf { values: &'static [&'static str], default: &'static str },
    /// `latest`, `earliest`, or `by_duration:` and an ISO-8601 duration ([`OffsetReset`]).
    OffsetReset,
}

/// One group config: Kafka's name, its type, its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfigDef {
    pub name: &'static str,
    /// Kafka's ConfigEntry.ConfigType ([`config_type`]).
    pub kind: i8,
    pub rule: Rule,
}

const fn int(name: &'static str, min: u64, max: u64, default: u64) -> GroupConfigDef {
    GroupConfigDef { name, kind: config_type::int, rule: Rule::Int { min, max, default } }
}

/// Every group config served, sorted by name: what AlterConfigs and IncrementalAlterConfigs
/// accept on a GROUP resource and DescribeConfigs reports.
pub const CATALOG: &[GroupConfigDef] = &[
    int(consumer_heartbeat_interval_ms, 1, int_max, group_consumer_heartbeat_interval_ms_default),
    int(consumer_session_timeout_ms, 1, int_max, group_consumer_session_timeout_ms_default),
    GroupConfigDef { name: share_auto_offset_reset, kind: config_type::string, rule: Rule::OffsetReset },
    int(share_heartbeat_interval_ms, 1, int_max, group_share_heartbeat_interval_ms_default),
    GroupConfigDef { name: share_isolation_level, kind: config_type::string, rule: Rule::OneOf { values: &["read_uncommitted", "read_committed"], default: "read_uncommitted" } },
    int(share_record_lock_duration_ms, share_record_lock_duration_ms_min, share_record_lock_duration_ms_max, group_share_record_lock_duration_ms_default),
    int(share_session_timeout_ms, 1, int_max, group_share_session_timeout_ms_default),
];

const _: () = assert!(share_record_lock_duration_ms_min <= group_share_record_lock_duration_ms_default && group_share_record_lock_duration_ms_default <= share_record_lock_duration_ms_max);
const _: () = assert!(share_record_lock_duration_ms_max <= int_max);

/// The catalog entry named `name`.
pub fn lookup(name: &str) -> Option<&'static GroupConfigDef> {
    CATALOG.iter().find(|d| d.name == name)
}

impl GroupConfigDef {
    /// The value an unset config has (Kafka's default).
    pub fn default_value(&self) -> String {
        match self.rule {
            Rule::Int { default, .. } => default.to_string(),
            Rule::OneOf { default, .. } => default.to_string(),
            Rule::OffsetReset => "latest".to_string(),
        }
    }

    /// `value` checked by this config's rule; the error names the config and the rule.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let name = self.name;
        match self.rule {
            Rule::Int { min, max, .. } => match value.parse::<u64>() {
                Ok(n) if n < min => Err(format!("{name}={value} must be at least {min}")),
                Ok(n) if n > max => Err(format!("{name}={value} must be at most {max}")),
                Ok(_) => Ok(()),
                Err(_) => Err(format!("{name}={value} is not a valid number (a whole number from {min} to {max})")),
            },
            Rule::OneOf { values, .. } if values.contains(&value) => Ok(()),
            Rule::OneOf { values, .. } => Err(format!("{name}={value} must be {}", values.join(" or "))),
            Rule::OffsetReset => match OffsetReset::parse(value) {
                Some(_) => Ok(()),
                None => Err(format!("{name}={value} must be latest, earliest or by_duration:<ISO-8601 duration> (P[nD][T[nH][nM][nS]], such as by_duration:PT1H)")),
            },
        }
    }
}

/// A group's whole config set, checked: every name in [`CATALOG`], every value by its rule;
/// returned with each value trimmed (as Kafka's ConfigDef reads them), as it is to be stored.
/// The error names the config (Kafka: INVALID_CONFIG).
pub fn checked(config: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, String> {
    config
        .iter()
        .map(|(k, v)| {
            let value = v.trim();
            known(k)?.check(value)?;
            Ok((k.clone(), value.to_string()))
        })
        .collect()
}

/// The catalog entry named `name`, or the INVALID_CONFIG reason naming it.
pub fn known(name: &str) -> Result<&'static GroupConfigDef, String> {
    lookup(name).ok_or_else(|| format!("unknown group config '{name}' (group configs: {})", CATALOG.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")))
}

/// A GROUP resource's name, checked (Kafka: INVALID_REQUEST): any group id but the empty one,
/// up to the longest a group id may be.
pub fn check_group_name(group: &str) -> Result<(), String> {
    match group.len() {
        0 => Err("a group config resource needs a group id; the name is empty".to_string()),
        n if n > group_id_bytes_max => Err(format!("group id of {n} bytes is longer than {group_id_bytes_max}")),
        _ => Ok(()),
    }
}

/// `share.auto.offset.reset`: where a share group with no start offset for a partition begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Latest,
    Earliest,
    /// The first record at or after this long before now.
    ByDurationMs(u64),
}

impl OffsetReset {
    /// A value as written in the config; None if it is none of Kafka's forms.
    pub fn parse(value: &str) -> Option<OffsetReset> {
        match value {
            "latest" => Some(OffsetReset::Latest),
            "earliest" => Some(OffsetReset::Earliest),
            _ => value.strip_prefix("by_duration:").and_then(duration_ms).map(OffsetReset::ByDurationMs),
        }
    }
}

/// An ISO-8601 duration of whole days, hours, minutes and seconds (`P[nD][T[nH][nM][nS]]`, at
/// least one part, `T` only before a time part), in milliseconds; None for anything else
/// (fractions, signs, weeks, months, years) or a duration too long to count in milliseconds.
pub fn duration_ms(text: &str) -> Option<u64> {
    let rest = text.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((days, time)) if !time.is_empty() => (days, Some(time)),
        Some(_) => return None,
        None => (rest, None),
    };
    let mut total: u64 = 0;
    let mut parts = 0;
    if !days.is_empty() {
        total = whole(days.strip_suffix('D')?)?.checked_mul(86_400_000)?;
        parts += 1;
    }
    let mut time = time.unwrap_or("");
    for (unit, ms) in [('H', 3_600_000), ('M', 60_000), ('S', 1_000)] {
        if let Some(at) = time.find(unit) {
            total = total.checked_add(whole(&time[..at])?.checked_mul(ms)?)?;
            time = &time[at + 1..];
            parts += 1;
        }
    }
    (time.is_empty() && parts > 0).then_some(total)
}

/// A run of ASCII digits as a number.
fn whole(digits: &str) -> Option<u64> {
    match !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

/// Every config of a group whose dynamic configs are `set`: its value with source
/// DYNAMIC_GROUP_CONFIG (Kafka's GROUP_CONFIG) when set, else Kafka's default with
/// DEFAULT_CONFIG; synonyms are the set value, then the default, under the same name.
pub fn describe(set: &BTreeMap<String, String>) -> Vec<Described> {
    CATALOG
        .iter()
        .map(|d| {
            let mut synonyms: Vec<(&'static str, String, i8)> = set.get(d.name).map(|v| (d.name, v.clone(), config_source::dynamic_group)).into_iter().collect();
            synonyms.push((d.name, d.default_value(), config_source::default));
            let (_, value, source) = synonyms[0].clone();
            Described { name: d.name, value, source, kind: d.kind, synonyms }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_catalog_is_sorted_and_each_default_passes_its_own_check() {
        let names: Vec<&str> = CATALOG.iter().map(|d| d.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for d in CATALOG {
            assert_eq!(d.check(&d.default_value()), Ok(()), "{}", d.name);
        }
        let defaults: Vec<(&str, String)> = CATALOG.iter().map(|d| (d.name, d.default_value())).collect();
        let want = [
            (consumer_heartbeat_interval_ms, "5000"),
            (consumer_session_timeout_ms, "45000"),
            (share_auto_offset_reset, "latest"),
            (share_heartbeat_interval_ms, "5000"),
            (share_isolation_level, "read_uncommitted"),
            (share_record_lock_duration_ms, "30000"),
            (share_session_timeout_ms, "45000"),
        ];
        assert_eq!(defaults, want.iter().map(|(k, v)| (*k, v.to_string())).collect::<Vec<_>>());
    }

    #[test]
    fn durations_are_whole_days_hours_minutes_and_seconds() {
        for (text, ms) in [("PT1H", 3_600_000), ("P1D", 86_400_000), ("P1DT2H3M4S", 93_784_000), ("PT90M", 5_400_000), ("PT0S", 0), ("P2DT5S", 172_805_000), ("PT1M30S", 90_000)] {
            assert_eq!(duration_ms(text), Some(ms), "{text}");
        }
        for bad in ["", "P", "PT", "P1DT", "PT1.5S", "-PT1H", "PT-1H", "P1W", "P1Y", "P1M", "pt1h", "PT1S1M", "PT1H1H", "PTH", "1H", "P1DT1H ", "PT99999999999999999999S", "P999999999999999D"] {
            assert_eq!(duration_ms(bad), None, "{bad:?}");
        }
        assert_eq!(OffsetReset::parse("by_duration:PT1H"), Some(OffsetReset::ByDurationMs(3_600_000)));
        assert_eq!(OffsetReset::parse("earliest"), Some(OffsetReset::Earliest));
        assert_eq!(OffsetReset::parse("by_duration:"), None);
        assert_eq!(OffsetReset::parse("EARLIEST"), None);
    }

    #[test]
    fn bad_names_and_values_are_refused_naming_the_config_and_the_rule() {
        for (k, v, says) in [
            (share_record_lock_duration_ms, "999", "must be at least 1000"),
            (share_record_lock_duration_ms, "3600001", "must be at most 3600000"),
            (share_session_timeout_ms, "0", "must be at least 1"),
            (consumer_heartbeat_interval_ms, "2147483648", "must be at most 2147483647"),
            (consumer_session_timeout_ms, "soon", "not a valid number"),
            (share_isolation_level, "READ_COMMITTED", "must be read_uncommitted or read_committed"),
            (share_auto_offset_reset, "by_duration:1h", "by_duration:<ISO-8601 duration>"),
            ("group.share.record.lock.duration.ms", "1000", "unknown group config"),
        ] {
            let err = checked(&map(&[(k, v)])).unwrap_err();
            assert!(err.contains(k) && err.contains(says), "{k}={v}: {err}");
        }
        let ok = checked(&map(&[(share_auto_offset_reset, " by_duration:P1DT12H "), (share_isolation_level, "read_committed"), (share_record_lock_duration_ms, "3600000")]));
        assert_eq!(ok.unwrap()[share_auto_offset_reset], "by_duration:P1DT12H", "stored trimmed");
        assert!(check_group_name("").is_err() && check_group_name(&"g".repeat(group_id_bytes_max + 1)).is_err() && check_group_name("any group, even one never seen").is_ok());
    }

    #[test]
    fn described_sources_are_the_group_config_then_kafkas_default() {
        let described = describe(&map(&[(share_auto_offset_reset, "earliest")]));
        assert_eq!(described.len(), CATALOG.len());
        let get = |n: &str| described.iter().find(|d| d.name == n).unwrap().clone();
        let reset = get(share_auto_offset_reset);
        assert_eq!((reset.value.as_str(), reset.source, reset.kind), ("earliest", config_source::dynamic_group, config_type::string));
        assert_eq!(reset.synonyms, vec![(share_auto_offset_reset, "earliest".into(), config_source::dynamic_group), (share_auto_offset_reset, "latest".into(), config_source::default)]);
        let lock = get(share_record_lock_duration_ms);
        assert_eq!((lock.value.as_str(), lock.source, lock.kind), ("30000", config_source::default, config_type::int));
    }
}
