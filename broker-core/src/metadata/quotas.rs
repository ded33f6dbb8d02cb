//! Client quotas as the metadata keeps them (Kafka's ClientQuotaRecord; KIP-546's
//! AlterClientQuotas / DescribeClientQuotas): an entity — a user, a client id, or both, each
//! named or the default — and its quota values by key. Which entity's value applies to a
//! connection is Kafka's precedence ([`limit`]). Plain data and pure functions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `producer_byte_rate`: bytes a (user, client id) may produce per second on each broker.
pub const producer_byte_rate: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes it may fetch per second on each broker.
pub const consumer_byte_rate: &str = "consumer_byte_rate";
/// `request_percentage`: share of a request-handler thread it may use (kept and described; not
/// enforced here: this broker has no handler pool to measure).
pub const request_percentage: &str = "request_percentage";
/// `controller_mutation_rate` (KIP-599): kept and described; not enforced here.
pub const controller_mutation_rate: &str = "controller_mutation_rate";

/// The keys a user or client-id entity may have (Kafka's QuotaConfigs for those entities).
pub const keys: [&str; 4] = [producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate];

/// Entity types, as the requests spell them.
pub const user_type: &str = "user";
pub const client_id_type: &str = "client-id";

/// Most quota entities the metadata keeps: each is a record in every snapshot.
pub const quota_entities_max: usize = 10_000;

/// One part of an entity: a name, or the default for every name without its own.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Name {
    Default,
    Named(String),
}

/// A quota entity: a user, a client id, or a user's client id. At least one part is present.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Name>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<Name>,
}

/// A quota value: finite and positive (checked before it is recorded), so equality is exact.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Value(pub f64);

impl Eq for Value {}

/// Every entity's values by key.
pub type Quotas = BTreeMap<Entity, BTreeMap<String, Value>>;

impl Entity {
    /// The entity from a request's (type, name) parts: None for an unknown type, a type given
    /// twice or no part at all.
    pub fn from_parts<'a>(parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Result<Entity, String> {
        let mut e = Entity::default();
        for (kind, name) in parts {
            let name = name.map_or(Name::Default, |n| Name::Named(n.to_string()));
            let slot = match kind {
                user_type => &mut e.user,
                client_id_type => &mut e.client_id,
                other => return Err(format!("entity type {other:?}: only {user_type} and {client_id_type} are supported")),
            };
            if slot.replace(name).is_some() {
                return Err(format!("entity type {kind} given twice"));
            }
        }
        if e.user.is_none() && e.client_id.is_none() {
            return Err("an entity needs a user or a client-id".into());
        }
        Ok(e)
    }

    /// The (type, name) parts, user first; None for a default.
    pub fn parts(&self) -> Vec<(&'static str, Option<&str>)> {
        fn name(n: &Name) -> Option<&str> {
            match n {
                Name::Default => None,
                Name::Named(s) => Some(s.as_str()),
            }
        }
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((user_type, name(u)));
        }
        if let Some(c) = &self.client_id {
            out.push((client_id_type, name(c)));
        }
        out
    }
}

/// A quota op's value, checked: a known key and a finite positive number.
pub fn check(key: &str, value: f64) -> Result<(), String> {
    if !keys.contains(&key) {
        return Err(format!("unknown quota key {key:?}: one of {}", keys.join(", ")));
    }
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{key} = {value}: must be a positive number"));
    }
    Ok(())
}

/// The value of `key` that applies to `user`'s connections with `client_id`, and whose entity
/// it is: Kafka's precedence, most specific first — user and client id, user and default
/// client, user alone, default user and client id, default user and default client, default
/// user, client id alone, default client id.
pub fn limit<'a>(quotas: &'a Quotas, user: &str, client_id: &str, key: &str) -> Option<(&'a Entity, f64)> {
    let named = |s: &str| Some(Name::Named(s.to_string()));
    let order = [
        (named(user), named(client_id)),
        (named(user), Some(Name::Default)),
        (named(user), None),
        (Some(Name::Default), named(client_id)),
        (Some(Name::Default), Some(Name::Default)),
        (Some(Name::Default), None),
        (None, named(client_id)),
        (None, Some(Name::Default)),
    ];
    order.into_iter().find_map(|(user, client_id)| quotas.get_key_value(&Entity { user, client_id }).and_then(|(e, values)| Some((e, values.get(key)?.0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quotas(rows: &[(Option<Name>, Option<Name>, f64)]) -> Quotas {
        rows.iter().map(|(u, c, v)| (Entity { user: u.clone(), client_id: c.clone() }, [(producer_byte_rate.to_string(), Value(*v))].into_iter().collect())).collect()
    }

    fn n(s: &str) -> Option<Name> {
        Some(Name::Named(s.into()))
    }

    #[test]
    fn the_most_specific_entity_wins_in_kafkas_order() {
        let d = || Some(Name::Default);
        let all = quotas(&[(n("alice"), n("app"), 1.0), (n("alice"), d(), 2.0), (n("alice"), None, 3.0), (d(), n("app"), 4.0), (d(), d(), 5.0), (d(), None, 6.0), (None, n("app"), 7.0), (None, d(), 8.0)]);
        let mut q = all.clone();
        let mut seen = Vec::new();
        while let Some((e, v)) = limit(&q, "alice", "app", producer_byte_rate) {
            seen.push(v);
            let e = e.clone();
            q.remove(&e);
        }
        assert_eq!(seen, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(limit(&all, "bob", "other", producer_byte_rate).map(|x| x.1), Some(5.0), "bob and other fall to the defaults");
        assert_eq!(limit(&all, "alice", "app", consumer_byte_rate), None, "no value for that key");
        assert_eq!(limit(&quotas(&[(None, n("app"), 7.0)]), "anyone", "app", producer_byte_rate).map(|x| x.1), Some(7.0));
    }

    #[test]
    fn entities_and_values_are_checked() {
        assert_eq!(Entity::from_parts([("client-id", Some("app"))]).unwrap(), Entity { user: None, client_id: n("app") });
        assert_eq!(Entity::from_parts([("user", None), ("client-id", Some("app"))]).unwrap().parts(), vec![("user", None), ("client-id", Some("app"))]);
        assert!(Entity::from_parts([("ip", Some("1.2.3.4"))]).unwrap_err().contains("only user and client-id"));
        assert!(Entity::from_parts([("user", Some("a")), ("user", Some("b"))]).unwrap_err().contains("twice"));
        assert!(Entity::from_parts([]).is_err());
        assert!(check(producer_byte_rate, 1024.0).is_ok());
        assert!(check("producer_rate", 1.0).unwrap_err().contains("unknown quota key"));
        assert!(check(consumer_byte_rate, 0.0).is_err() && check(consumer_byte_rate, f64::NAN).is_err());
    }
}
