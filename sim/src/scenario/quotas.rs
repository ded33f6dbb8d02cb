//! The scenario's client quota changes (KIP-13, KIP-546): at each `at_ms` the harness's admin
//! sets or removes a client id's `producer_byte_rate` through the active controller.
//! Declarations and their validation only; `cluster::quotas` sends them and
//! `checkers::quotas` judges what the throttled producers got acknowledged.

use super::Scenario;
use serde::{Deserialize, Serialize};

/// Most quota changes a scenario may ask for: each is a request retried until answered.
pub const quota_changes_max: usize = 64;

/// One change: at `at_ms` (from the run's start, within the safety phase) set `client_id`'s
/// `producer_byte_rate` (bytes per second), or with `remove = true` remove it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaSpec {
    pub at_ms: u64,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_byte_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remove: bool,
}

impl QuotaSpec {
    /// The value to send: the rate, or None to remove it.
    pub fn value(&self) -> Option<f64> {
        self.producer_byte_rate.filter(|_| !self.remove)
    }
}

impl Scenario {
    /// Each change in the safety phase, of a client id some producer uses, a positive rate or
    /// a removal.
    pub(super) fn validate_quotas(&self) -> Result<(), String> {
        if self.quotas.len() > quota_changes_max {
            return Err(format!("scenario: {} quota changes; at most {quota_changes_max}", self.quotas.len()));
        }
        for q in &self.quotas {
            let what = format!("scenario: quotas: the one at {} ms of client id '{}'", q.at_ms, q.client_id);
            if q.at_ms >= self.duration_ms {
                return Err(format!("{what}: at_ms must be within the safety phase, below duration_ms {}", self.duration_ms));
            }
            if !self.producers.iter().any(|p| p.client_id.as_deref() == Some(q.client_id.as_str())) {
                return Err(format!("{what}: no producer has this client_id"));
            }
            match (q.producer_byte_rate, q.remove) {
                (Some(rate), false) if !(rate.is_finite() && rate >= 1.0) => return Err(format!("{what}: producer_byte_rate {rate} is not a rate of at least 1 byte/s")),
                (Some(_), false) | (None, true) => {}
                (Some(_), true) => return Err(format!("{what}: names producer_byte_rate and remove = true; a removal has no value")),
                (None, false) => return Err(format!("{what}: names neither producer_byte_rate nor remove = true")),
            }
        }
        Ok(())
    }
}
