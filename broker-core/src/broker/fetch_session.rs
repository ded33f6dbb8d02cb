//! KIP-227 incremental fetch sessions, the leader's side, as decisions without IO: a bounded
//! cache of sessions, each the partitions one fetcher follows with what it last asked for
//! (fetch offset, log start, leader epoch, byte limit) and what it was last told (high
//! watermark, log start). A full fetch (epoch 0) opens a session and is answered whole; an
//! incremental one (the session's next epoch) names only the partitions whose position changed
//! and the ones to forget, and its answer carries only partitions with records, an error or a
//! new high watermark or log start. So a fetcher following thousands of idle partitions sends
//! and receives a few bytes per round instead of every partition.
//!
//! Epochs as Kafka's `FetchMetadata`: 0 opens a session (closing the one named, if any), -1
//! closes the one named and fetches without a session, and an incremental fetch must carry the
//! session's expected epoch (then the next, wrapping from i32::MAX to 1) or is refused with
//! INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND. The fetcher then
//! starts over with a full fetch. The cache holds `fetch_sessions_max` sessions; when it is
//! full a new session takes the slot of one idle past `fetch_session_eviction_ms`, else that of
//! the least recently used consumer session if the newcomer is a follower (followers are
//! privileged, as in Kafka), else it gets none and is answered without a session (id 0).
//!
//! Never reads a clock (every call takes `now`), never iterates a hash map; session ids come
//! from a counter, so the simulator replays them.
//!
//! Status: the cache and its rules only. The Fetch handler and the replica fetcher do not use
//! it yet (see docs/benchmarks.md, "Replica fetch as partitions grow").

use crate::constants::{fetch_session_eviction_ms, fetch_sessions_max};
use crate::kafka::Code;
use std::collections::BTreeMap;

/// A partition by topic name and index.
pub type PartitionKey = (String, i32);

/// What a fetcher asks of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub leader_epoch: i32,
    pub max_bytes: i32,
}

/// A session's partition: what was asked, and what the last answer carrying it said.
#[derive(Debug, Clone, Copy)]
struct Cached {
    wanted: Wanted,
    /// (high watermark, log start) last sent; None before the first answer.
    sent: Option<(i64, i64)>,
}

#[derive(Debug)]
struct Session {
    /// The follower it serves (Kafka's replica id), None for a consumer.
    replica: Option<i32>,
    /// The epoch the next incremental fetch must carry.
    next_epoch: i32,
    partitions: BTreeMap<PartitionKey, Cached>,
    used_ms: u64,
}

/// How a fetch is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// No session: every partition asked is answered.
    Sessionless,
    /// A new session `id`: every partition is answered, and the answer names the id.
    Full { id: i32 },
    /// Session `id` moved to its next epoch: only partitions with news are answered.
    Incremental { id: i32 },
}

impl Context {
    /// The session id the answer carries (0: none).
    pub fn id(&self) -> i32 {
        match *self {
            Context::Sessionless => 0,
            Context::Full { id } | Context::Incremental { id } => id,
        }
    }
}

/// A fetch once its session rules applied: how to answer it, and every partition it fetches
/// (for an incremental fetch, the whole session, in key order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Begun {
    pub context: Context,
    pub partitions: Vec<(PartitionKey, Wanted)>,
}

/// The leader's cache of fetch sessions.
#[derive(Debug, Default)]
pub struct FetchSessions {
    sessions: BTreeMap<i32, Session>,
    last_id: i32,
}

const final_epoch: i32 = -1;
const initial_epoch: i32 = 0;

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

impl FetchSessions {
    pub fn new() -> FetchSessions {
        FetchSessions::default()
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Applies a fetch's session fields: `id` and `epoch` as the request carries them, `asked`
    /// its partitions, `forgotten` its forgotten topics' partitions (incremental fetches only).
    pub fn begin(&mut self, now: u64, replica: Option<i32>, id: i32, epoch: i32, asked: Vec<(PartitionKey, Wanted)>, forgotten: &[PartitionKey]) -> Result<Begun, Code> {
        if epoch == final_epoch || epoch == initial_epoch {
            if id != 0 {
                self.sessions.remove(&id);
            }
            let context = match epoch {
                initial_epoch => self.open(now, replica, &asked).map_or(Context::Sessionless, |id| Context::Full { id }),
                _ => Context::Sessionless,
            };
            return Ok(Begun { context, partitions: asked });
        }
        let session = match self.sessions.get_mut(&id) {
            Some(s) if s.replica == replica => s,
            _ => return Err(Code::FetchSessionIdNotFound),
        };
        if epoch != session.next_epoch {
            return Err(Code::InvalidFetchSessionEpoch);
        }
        for key in forgotten {
            session.partitions.remove(key);
        }
        for (key, wanted) in asked {
            let sent = session.partitions.get(&key).and_then(|c| c.sent);
            session.partitions.insert(key, Cached { wanted, sent });
        }
        session.next_epoch = next(epoch);
        session.used_ms = now;
        let partitions = session.partitions.iter().map(|(k, c)| (k.clone(), c.wanted)).collect();
        Ok(Begun { context: Context::Incremental { id }, partitions })
    }

    /// Whether the answer under `context` carries `key`, given what it has for it: records or
    /// an error (`news`), its high watermark and log start. A full or sessionless answer carries
    /// every partition; an incremental one only those with news or a changed high watermark or
    /// log start. What a carried partition said is remembered for the next answer.
    pub fn carries(&mut self, context: Context, key: &PartitionKey, news: bool, high_watermark: i64, log_start: i64) -> bool {
        let id = context.id();
        let Some(cached) = self.sessions.get_mut(&id).and_then(|s| s.partitions.get_mut(key)) else {
            return context == Context::Sessionless || matches!(context, Context::Full { .. });
        };
        let now = (high_watermark, log_start);
        let carry = !matches!(context, Context::Incremental { .. }) || news || cached.sent != Some(now);
        if carry {
            cached.sent = Some(now);
        }
        carry
    }

    /// A new session for `asked`, if a slot is free or can be taken: its id.
    fn open(&mut self, now: u64, replica: Option<i32>, asked: &[(PartitionKey, Wanted)]) -> Option<i32> {
        if self.sessions.len() >= fetch_sessions_max {
            let victim = self.victim(now, replica.is_some())?;
            self.sessions.remove(&victim);
        }
        // Ids are positive and unused; a counter, so a run replays them.
        let mut id = self.last_id;
        loop {
            id = if id == i32::MAX { 1 } else { id + 1 };
            if !self.sessions.contains_key(&id) {
                break;
            }
        }
        self.last_id = id;
        let partitions = asked.iter().map(|(k, w)| (k.clone(), Cached { wanted: *w, sent: None })).collect();
        self.sessions.insert(id, Session { replica, next_epoch: next(initial_epoch), partitions, used_ms: now });
        Some(id)
    }

    /// The session a newcomer may take the slot of: the least recently used one idle past the
    /// eviction time, else (for a follower) the least recently used consumer session.
    fn victim(&self, now: u64, follower: bool) -> Option<i32> {
        let lru = |consumers_only: bool| self.sessions.iter().filter(|(_, s)| !consumers_only || s.replica.is_none()).min_by_key(|(id, s)| (s.used_ms, **id)).map(|(id, s)| (*id, s.used_ms));
        match lru(false) {
            Some((id, used)) if now.saturating_sub(used) >= fetch_session_eviction_ms => Some(id),
            _ if follower => lru(true).map(|(id, _)| id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
