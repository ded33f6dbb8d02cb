//! Client quotas of a running cluster: DescribeClientQuotas (any broker answers from its
//! metadata) and AlterClientQuotas (forwarded to the active controller), for `seedlog configs`.

use super::conn::Conn;
use super::ClientError;
use crate::metadata::quotas::Entity;
use kafka_protocol::messages::alter_client_quotas_request::{AlterClientQuotasRequest, EntityData as AlterEntity, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::{ComponentData, DescribeClientQuotasRequest};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

fn s(t: &str) -> StrBytes {
    StrBytes::from_string(t.to_string())
}

/// The quotas of every entity whose parts match `entity`'s exactly (`strict`: and no others),
/// as (type, name) parts and values by key.
pub async fn describe(addr: SocketAddr, entity: &Entity, strict: bool, timeout: Duration) -> Result<Vec<(Vec<(String, Option<String>)>, BTreeMap<String, f64>)>, ClientError> {
    let components = entity
        .parts()
        .into_iter()
        .map(|(kind, name)| match name {
            Some(n) => ComponentData::default().with_entity_type(s(kind)).with_match_type(0).with_match(Some(s(n))),
            None => ComponentData::default().with_entity_type(s(kind)).with_match_type(1),
        })
        .collect();
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&DescribeClientQuotasRequest::default().with_components(components).with_strict(strict)).await?;
    if r.error_code != 0 {
        return Err(ClientError::kafka(r.error_code, r.error_message.map(|m| m.to_string()).unwrap_or_default()));
    }
    Ok(r.entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let parts = e.entity.iter().map(|p| (p.entity_type.to_string(), p.entity_name.as_ref().map(|n| n.to_string()))).collect();
            (parts, e.values.iter().map(|v| (v.key.to_string(), v.value)).collect())
        })
        .collect())
}

/// Sets (Some) or removes (None) each key's quota for `entity`.
pub async fn alter(addr: SocketAddr, entity: &Entity, ops: &[(String, Option<f64>)], timeout: Duration) -> Result<(), ClientError> {
    let parts = entity.parts().into_iter().map(|(kind, name)| AlterEntity::default().with_entity_type(s(kind)).with_entity_name(name.map(s))).collect();
    let ops = ops.iter().map(|(k, v)| OpData::default().with_key(s(k)).with_value(v.unwrap_or(0.0)).with_remove(v.is_none())).collect();
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&AlterClientQuotasRequest::default().with_entries(vec![EntryData::default().with_entity(parts).with_ops(ops)])).await?;
    let e = r.entries.first().ok_or_else(|| ClientError::Protocol("AlterClientQuotas answered no entry".into()))?;
    match e.error_code {
        0 => Ok(()),
        code => Err(ClientError::kafka(code, e.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default())),
    }
}
