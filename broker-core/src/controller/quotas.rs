//! AlterClientQuotas on the controller: each entity's ops checked (known keys, positive values,
//! a key set and removed at once refused) and turned into `ClientQuota` records, one per op that
//! changes something. Records out, the image untouched, as every decision here.

use super::{Controller, Error};
use crate::metadata::quotas::{self, Entity, Value};
use crate::metadata::MetadataRecord;

/// One entity's asked changes: each key's new value, or None to remove it.
pub type QuotaChange = (Entity, Vec<(String, Option<f64>)>);

impl Controller {
    /// The records for one entity's changes, or why the whole entry is refused (INVALID_REQUEST
    /// with the reason, as Kafka answers per entity).
    pub fn alter_client_quotas(&self, (entity, ops): &QuotaChange) -> Result<Vec<MetadataRecord>, Error> {
        let current = self.image.quotas.get(entity);
        if current.is_none() && self.image.quotas.len() >= quotas::quota_entities_max {
            return Err(Error::InvalidRequest(format!("{} quota entities already: at most {}", self.image.quotas.len(), quotas::quota_entities_max)));
        }
        let mut records = Vec::new();
        for (i, (key, value)) in ops.iter().enumerate() {
            if ops[..i].iter().any(|(k, _)| k == key) {
                return Err(Error::InvalidRequest(format!("quota key {key} given twice for one entity")));
            }
            let value = match value {
                Some(v) => Some(quotas::check(key, *v).map(|()| Value(*v)).map_err(Error::InvalidRequest)?),
                None if quotas::keys.contains(&key.as_str()) => None,
                None => return Err(Error::InvalidRequest(format!("unknown quota key {key:?}"))),
            };
            if current.and_then(|c| c.get(key)).copied() != value {
                records.push(MetadataRecord::ClientQuota { entity: entity.clone(), key: key.clone(), value });
            }
        }
        Ok(records)
    }
}
