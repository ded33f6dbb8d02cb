//! Client quota enforcement (Kafka's ClientQuotaManager and ClientRequestQuotaManager, KIP-13,
//! KIP-124 and KIP-219): the bytes each client produces and fetches, and the time the node spends
//! deciding its requests, are measured over a sliding window, and a client over its
//! `producer_byte_rate`, `consumer_byte_rate` or `request_percentage` is told how long to wait
//! (`throttle_time_ms` in its response) and is not read from for that long (its connection
//! muted, the broker's side of KIP-219). Which quota applies is the metadata's precedence (`metadata::quotas::limit`); the
//! clients sharing one meter are those the applying entity names (a user-level quota is shared
//! by all that user's client ids; a default client-id quota gives each client id its own).
//!
//! A plain struct driven with an explicit `now` (ms): the shell records each answered Produce
//! and consumer Fetch and acts on the throttle returned. Bounded: at most
//! `throttled_clients_max` meters, the idlest dropped first.

use crate::metadata::quotas::{self, Quotas};
use std::collections::{BTreeMap, VecDeque};

/// `quota.window.num`: samples in the window a rate is measured over.
pub const quota_window_samples: usize = 11;
/// `quota.window.size.seconds`, in ms: one sample's span.
pub const quota_window_sample_ms: u64 = 1_000;
/// Longest throttle one response asks for: the whole window (a client far over its quota
/// waits a window, then is measured again).
pub const throttle_ms_max: u64 = quota_window_samples as u64 * quota_window_sample_ms;
/// Longest request-time throttle: one sample (Kafka's ClientRequestQuotaManager caps it at
/// `quota.window.size.seconds`).
pub const request_throttle_ms_max: u64 = quota_window_sample_ms;
/// Most meters kept at once (clients measured): the idlest beyond it are forgotten.
pub const throttled_clients_max: usize = 10_000;

/// What a client's use counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Bytes produced.
    Produce,
    /// Bytes a consumer fetched.
    Fetch,
    /// Time the node spent on its requests, in µs (`request_percentage`).
    Request,
}

/// µs of request time per second that one percent of `request_percentage` allows: 100% is
/// one whole second per second, the time of one request handler (Kafka's quota unit).
pub const request_us_per_percent: f64 = 10_000.0;

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Produce => quotas::producer_byte_rate,
            Kind::Fetch => quotas::consumer_byte_rate,
            Kind::Request => quotas::request_percentage,
        }
    }

    /// The longest throttle of this kind.
    fn throttle_max(self) -> u64 {
        match self {
            Kind::Produce | Kind::Fetch => throttle_ms_max,
            Kind::Request => request_throttle_ms_max,
        }
    }

    /// What one unit of the quota's value is in recorded amounts per second.
    fn scale(self) -> f64 {
        match self {
            Kind::Produce | Kind::Fetch => 1.0,
            Kind::Request => request_us_per_percent,
        }
    }
}

/// Bytes per sample over the last `quota_window_samples` samples (Kafka's SampledStat Rate).
#[derive(Debug, Default)]
struct Meter {
    /// (sample start, bytes), oldest first.
    samples: VecDeque<(u64, u64)>,
    last_ms: u64,
}

impl Meter {
    fn record(&mut self, now: u64, bytes: u64) {
        let start = now - now % quota_window_sample_ms;
        match self.samples.back_mut() {
            Some((s, b)) if *s == start => *b += bytes,
            _ => self.samples.push_back((start, bytes)),
        }
        let horizon = now.saturating_sub(throttle_ms_max);
        while self.samples.front().is_some_and(|(s, _)| *s + quota_window_sample_ms <= horizon) {
            self.samples.pop_front();
        }
        self.last_ms = now;
    }

    /// Bytes per second over the window, and the window's length in ms: at least all but one
    /// sample's worth, so a client's first burst is spread over a whole window (Kafka's
    /// Rate.windowSize).
    fn rate(&self, now: u64) -> (f64, u64) {
        // Samples that have slid out of the window count nothing, recorded over or not.
        let horizon = now.saturating_sub(throttle_ms_max);
        let live = || self.samples.iter().filter(|(s, _)| *s + quota_window_sample_ms > horizon);
        let oldest = live().next().map_or(now, |(s, _)| *s);
        let window = now.saturating_sub(oldest).max((quota_window_samples as u64 - 1) * quota_window_sample_ms);
        let total: u64 = live().map(|(_, b)| b).sum();
        (total as f64 * 1000.0 / window as f64, window)
    }
}

/// One rate over the quota window, shared by everything it counts: a leader's replication
/// throttle (KIP-73: `leader.replication.throttled.rate`, all throttled partitions together).
#[derive(Debug, Default)]
pub struct SharedRate(Meter);

impl SharedRate {
    pub fn record(&mut self, now: u64, bytes: u64) {
        self.0.record(now, bytes);
    }

    /// Whether the rate measured so far is over `limit` bytes per second.
    pub fn over(&self, now: u64, limit: u64) -> bool {
        !self.0.samples.is_empty() && self.0.rate(now).0 > limit as f64
    }
}

/// How a throttle worked out in ms is handed out. The wrong rule exists only in the simulated
/// build, chosen when the node is built (`PlantedBug::ThrottleInSeconds`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unit {
    /// As ms, what `throttle_time_ms` counts (Kafka's).
    #[default]
    Ms,
    /// Planted: the throttle's seconds written where ms are read, a thousandth of the wait.
    #[cfg(madsim)]
    SecondsAsMs,
}

impl Unit {
    fn hand_out(self, ms: u64) -> u64 {
        match self {
            Unit::Ms => ms,
            #[cfg(madsim)]
            Unit::SecondsAsMs => ms / 1000,
        }
    }
}

/// The meters, and the quotas they are held to.
#[derive(Debug, Default)]
pub struct Throttles {
    quotas: Quotas,
    meters: BTreeMap<(Kind, String, String), Meter>,
    unit: Unit,
}

impl Throttles {
    /// No quotas yet; throttles handed out in `unit`.
    pub fn new(unit: Unit) -> Throttles {
        Throttles { unit, ..Throttles::default() }
    }

    /// The quotas from now on (the metadata's, after each change).
    pub fn set_quotas(&mut self, quotas: Quotas) {
        self.quotas = quotas;
    }

    /// Whether any quota is set (none: nothing to measure).
    pub fn any(&self) -> bool {
        !self.quotas.is_empty()
    }

    /// Whether any quota sets `kind` (none: its use need not be measured).
    pub fn any_of(&self, kind: Kind) -> bool {
        self.quotas.values().any(|values| values.contains_key(kind.key()))
    }

    /// Counts `amount` of `kind` (bytes, or µs for `Kind::Request`) for `user`'s connection with
    /// `client_id` at `now`; returns how long it must now wait, in ms (0: within its quota, or
    /// no quota applies).
    pub fn record(&mut self, now: u64, user: &str, client_id: &str, kind: Kind, amount: u64) -> u64 {
        let Some((entity, limit)) = quotas::limit(&self.quotas, user, client_id, kind.key()) else { return 0 };
        let limit = limit * kind.scale();
        let key = (kind, shared(entity.user.is_some(), user), shared(entity.client_id.is_some(), client_id));
        if !self.meters.contains_key(&key) && self.meters.len() >= throttled_clients_max {
            let idlest = self.meters.iter().min_by_key(|(_, m)| m.last_ms).map(|(k, _)| k.clone());
            idlest.map(|k| self.meters.remove(&k));
        }
        let meter = self.meters.entry(key).or_default();
        meter.record(now, amount);
        let (rate, window) = meter.rate(now);
        if rate <= limit {
            return 0;
        }
        // Kafka's QuotaUtils.throttleTime: long enough for the rate to fall to the quota.
        let ms = (rate - limit) / limit * window as f64;
        self.unit.hand_out((ms as u64).min(kind.throttle_max()))
    }
}

/// The part of a meter's key an entity part names: the client's own name where the entity
/// has that part (named or default alike), else shared by all.
fn shared(part: bool, name: &str) -> String {
    if part { name.to_string() } else { String::new() }
}

/// The user of a principal (`User:alice` → `alice`), as quotas name users.
pub fn user_of(principal: &str) -> &str {
    principal.strip_prefix("User:").unwrap_or(principal)
}

/// The entity of a test (used by the unit tests and the node's).
#[cfg(test)]
pub(crate) fn client_quota(client_id: &str, key: &str, value: f64) -> Quotas {
    let e = quotas::Entity { user: None, client_id: Some(quotas::Name::Named(client_id.into())) };
    [(e, [(key.to_string(), quotas::Value(value))].into_iter().collect())].into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_over_its_quota_is_told_to_wait_and_others_are_not() {
        let mut t = Throttles::default();
        t.set_quotas(client_quota("slow", quotas::producer_byte_rate, 1_000.0));
        // 10 kB in the first second is exactly the quota over a 10 s window: no throttle.
        assert_eq!(t.record(500, "ANONYMOUS", "slow", Kind::Produce, 10_000), 0);
        // 10 kB more: 20 kB over 10 s is twice the quota, so it waits a window (10 s).
        assert_eq!(t.record(600, "ANONYMOUS", "slow", Kind::Produce, 10_000), 10_000);
        assert_eq!(t.record(700, "ANONYMOUS", "fast", Kind::Produce, 1_000_000), 0, "no quota for this client id");
        assert_eq!(t.record(800, "ANONYMOUS", "slow", Kind::Fetch, 1_000_000), 0, "the quota is on producing only");
        // Once the burst has slid out of the window, it is within its quota again.
        assert_eq!(t.record(13_000, "ANONYMOUS", "slow", Kind::Produce, 100), 0);
    }

    #[test]
    fn request_time_counts_against_request_percentage() {
        let mut t = Throttles::default();
        t.set_quotas(client_quota("busy", quotas::request_percentage, 1.0));
        assert!(t.any_of(Kind::Request) && !t.any_of(Kind::Produce));
        // 1%: 10 ms of each second. 100 ms of request time in the first second is that over the
        // 10 s window; 100 ms more is twice it: a window's wait, capped at one sample (1 s).
        assert_eq!(t.record(500, "ANONYMOUS", "busy", Kind::Request, 100_000), 0);
        assert_eq!(t.record(600, "ANONYMOUS", "busy", Kind::Request, 100_000), request_throttle_ms_max);
        assert_eq!(t.record(700, "ANONYMOUS", "busy", Kind::Produce, 1_000_000), 0, "no byte quota is set");
        assert_eq!(t.record(800, "ANONYMOUS", "idle", Kind::Request, 1_000_000), 0, "nor a quota for this client id");
    }

    use crate::metadata::quotas::Entity;

    #[test]
    fn a_user_quota_is_shared_by_its_client_ids_and_a_default_one_is_not() {
        let user = Entity { user: Some(quotas::Name::Named("alice".into())), client_id: None };
        let default_client = Entity { user: None, client_id: Some(quotas::Name::Default) };
        let q = |e: Entity| -> Quotas { [(e, [(quotas::consumer_byte_rate.to_string(), quotas::Value(1_000.0))].into_iter().collect())].into_iter().collect() };
        let mut t = Throttles::default();
        t.set_quotas(q(user));
        assert_eq!(t.record(0, "alice", "a", Kind::Fetch, 10_000), 0);
        assert!(t.record(0, "alice", "b", Kind::Fetch, 10_000) > 0, "alice's two clients share her quota");
        let mut t = Throttles::default();
        t.set_quotas(q(default_client));
        assert_eq!(t.record(0, "x", "a", Kind::Fetch, 10_000), 0);
        assert_eq!(t.record(0, "x", "b", Kind::Fetch, 10_000), 0, "each client id has the default to itself");
        assert_eq!(t.record(0, "x", "b", Kind::Fetch, 10_000 * 100), throttle_ms_max, "capped at one window");
    }
}
