//! DescribeClientQuotas (API 48) and AlterClientQuotas (API 49), what kafka-configs.sh
//! `--entity-type users|clients` and `seedlog configs` send. Describe is answered by any broker
//! from its metadata (Kafka's broker answers from its cache); Alter is the active controller's
//! (`controller::quotas`), forwarded there from any other node, answered per entity once
//! committed and applied here. Enforcement is `crate::throttle`'s, applied by the shell.

use super::controller_handlers::{active, answer_committed, not_controller};
use super::{Node, Outcome};
use crate::broker::Broker;
use crate::controller::quotas::QuotaChange;
use crate::kafka::Code;
use crate::metadata::quotas::{client_id_type, user_type, Entity, Name};
use crate::protocol::s;
use kafka_protocol::messages::alter_client_quotas_request::AlterClientQuotasRequest;
use kafka_protocol::messages::alter_client_quotas_response::{AlterClientQuotasResponse, EntityData as AlteredEntity, EntryData as AlteredEntry};
use kafka_protocol::messages::describe_client_quotas_request::{ComponentData, DescribeClientQuotasRequest};
use kafka_protocol::messages::describe_client_quotas_response::{DescribeClientQuotasResponse, EntityData, EntryData, ValueData};
use kafka_protocol::messages::ApiKey;

/// DescribeClientQuotas' match types.
const match_exact: i8 = 0;
const match_default: i8 = 1;
const match_any: i8 = 2;

/// The entities the filter matches, with their values. Each component constrains one entity
/// type (exact name, the default, or any); `strict` also drops entities with parts the filter
/// does not name.
pub fn describe(b: &Broker, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    let mut r = DescribeClientQuotasResponse::default();
    for c in &req.components {
        if ![user_type, client_id_type].contains(&c.entity_type.as_str()) || ![match_exact, match_default, match_any].contains(&c.match_type) {
            r.error_code = Code::InvalidRequest.code();
            r.error_message = Some(s(&format!("component {:?} match type {}: only user and client-id, match 0..=2", c.entity_type.as_str(), c.match_type)));
            r.entries = None;
            return r;
        }
    }
    let matches = |e: &Entity| {
        let part = |kind: &str| match kind {
            user_type => e.user.as_ref(),
            _ => e.client_id.as_ref(),
        };
        let named = |c: &ComponentData| part(c.entity_type.as_str()).is_some_and(|n| match c.match_type {
            match_exact => *n == Name::Named(c._match.as_ref().map(|m| m.to_string()).unwrap_or_default()),
            match_default => *n == Name::Default,
            _ => true,
        });
        req.components.iter().all(named) && (!req.strict || e.parts().iter().all(|(kind, _)| req.components.iter().any(|c| c.entity_type.as_str() == *kind)))
    };
    let entries = b.image().quotas.iter().filter(|(e, _)| matches(e)).map(|(e, values)| {
        let entity = e.parts().into_iter().map(|(kind, name)| EntityData::default().with_entity_type(s(kind)).with_entity_name(name.map(s))).collect();
        let values = values.iter().map(|(k, v)| ValueData::default().with_key(s(k)).with_value(v.0)).collect();
        EntryData::default().with_entity(entity).with_values(values)
    });
    r.entries = Some(entries.collect());
    r
}

pub fn alter(node: &Node, version: i16, correlation_id: i32, req: AlterClientQuotasRequest, now: u64) -> Result<Outcome, String> {
    let mut r = AlterClientQuotasResponse::default();
    let mut quorum = active(node);
    let mut last = -1;
    for entry in req.entries {
        let parts: Vec<(String, Option<String>)> = entry.entity.iter().map(|p| (p.entity_type.to_string(), p.entity_name.as_ref().map(|n| n.to_string()))).collect();
        let echo = entry.entity.iter().map(|p| AlteredEntity::default().with_entity_type(p.entity_type.clone()).with_entity_name(p.entity_name.clone())).collect();
        let change = Entity::from_parts(parts.iter().map(|(k, n)| (k.as_str(), n.as_deref()))).map(|e| -> QuotaChange { (e, entry.ops.iter().map(|o| (o.key.to_string(), (!o.remove).then_some(o.value))).collect()) });
        let result = match (quorum.as_deref_mut(), change) {
            (None, _) => Err((not_controller, "this node is not the controller".to_string())),
            (_, Err(why)) => Err((Code::InvalidRequest.code(), why)),
            (Some(q), Ok(change)) => match q.controller().alter_client_quotas(&change) {
                Err(e) => Err((e.kafka_error().code(), e.to_string())),
                Ok(records) if records.is_empty() || req.validate_only => Ok(()),
                Ok(records) => q.commit(records, now).map(|offset| last = last.max(offset)).map_err(|e| (e.kafka_error().code(), e.to_string())),
            },
        };
        let (code, message) = result.err().map_or((0, None), |(c, m)| (c, Some(s(&m))));
        r.entries.push(AlteredEntry::default().with_entity(echo).with_error_code(code).with_error_message(message));
    }
    Ok(answer_committed(quorum, (ApiKey::AlterClientQuotas, version, correlation_id), r, (last, crate::constants::controller_commit_wait_ms as i32), "the quota change", |r| {
        r.entries.iter_mut().map(|e| (&mut e.error_code, &mut e.error_message)).collect()
    }))
}
