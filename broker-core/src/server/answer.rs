//! One request, from its decoded frame to its outcome: decided under the node's lock, then
//! parked (a fetch waiting for data), held (an answer owed later: acks=all, a coordinator's
//! ticket, a topic change), forwarded (a controller request on a node that is not the active
//! controller) or verified (a transactional produce's first writes, KIP-890 part 1) until it
//! can be answered; a ShareFetch's records are read off the gate before its decision (and
//! once more after one that found them unread). IO only: what each step means is the node's.

use super::metrics::Clock;
use super::{forward, now_ms, verify, Shared};
use crate::broker::{Action, Answer, Ticket};
use crate::kafka::ApiKey;
use crate::node::{self, Attempt, Outcome, Waiting};
use crate::protocol;
use bytes::Bytes;
use std::time::Duration;
use tokio::time::Instant;

/// Runs one request to completion: parks fetches until data arrives or their wait ends, and
/// holds requests that answer later (acks=all, topic changes) until they can. `turn` (the one
/// the request was read under) is given back after its first decision, before any wait: a
/// request that parks or waits holds none, so it never keeps another from being read. `clock`
/// learns when each decision began and how long it and its disk work took.
pub(super) async fn answer(shared: &Shared, frame: &Bytes, caller: &crate::security::acl::Caller, turn: tokio::sync::OwnedSemaphorePermit, clock: &mut Clock) -> Outcome {
    let mut turn = Some(turn);
    let key = protocol::leading(frame).map_or(-1, |l| l.key);
    // Fetch and ShareFetch park: they are decided again while they wait for records.
    let is_fetch = key == ApiKey::Fetch as i16 || key == ApiKey::ShareFetch as i16;
    if waits_for_startup(key) && !shared.is_started() {
        // The requests that register this broker must be read meanwhile.
        turn = None;
        shared.started().await;
    }
    // Off the node's lock: other connections' requests are decided meanwhile.
    let mut prepared = match protocol::request::decode_request(frame, shared.legacy_api_versions) {
        Ok(decoded) => Some(node::prepare(decoded)),
        Err(reason) => return Outcome::Close(reason),
    };
    // Decided under the quorum's gate or the node's (the same for every decision of it).
    let on_quorum = prepared.as_ref().is_some_and(|p| p.decided_by_quorum(key));
    let mut deadline: Option<Instant> = None;
    loop {
        // A fetch that parks is decided again, on a copy of its request kept for that.
        let Some(this) = prepared.take() else { return Outcome::Close("a request was decided twice".into()) };
        if is_fetch {
            prepared = this.copy_without_batches();
        }
        // Registered before we look, so no change is missed.
        let data = shared.changed.notified();
        let metadata = shared.metadata_committed.notified();
        tokio::pin!(data);
        tokio::pin!(metadata);
        data.as_mut().enable();
        metadata.as_mut().enable();
        let attempt = match deadline {
            None => Attempt::First,
            Some(d) if Instant::now() >= d => Attempt::Final,
            Some(_) => Attempt::Again,
        };
        // A ShareFetch's records are read off the gate before its decision.
        let this = match this.wants_share_plan() {
            true => match shared.decide(|s| this.share_plan(&s.node, Some(caller), attempt == Attempt::First)).await {
                Some(job) => this.with_share_reads(shared.read_shares(job, false).await),
                None => this,
            },
            false => this,
        };
        let decide = |s: &Shared| {
            let entered = Instant::now();
            let mut actions = Vec::new();
            let outcome = node::handle_from(&s.node, this, Some(caller), now_ms(), attempt, &mut actions);
            if protocol::is_controller_api(key) {
                s.node.quorum_decided(&mut actions);
            }
            s.queue_raft(&mut actions);
            let answers = match &outcome {
                Outcome::Wait(w) => s.await_answers(&w.tickets()),
                _ => None,
            };
            ((outcome, answers, entered), actions)
        };
        let ((outcome, answers, entered), actions) = match on_quorum {
            // A controller API's records are written and synced to the metadata log inside its
            // decision (a topic of 200 partitions: 120-250 ms here): the runtime is told, so the
            // tasks queued on this worker move meanwhile (`may_block`).
            true if protocol::is_controller_api(key) => shared.decide_quorum(|s| super::may_block(|| decide(s))).await,
            true => shared.decide_quorum(decide).await,
            false => shared.decide(decide).await,
        };
        drop(turn.take());
        // Anything but a fetch may have changed the node; a fetch only when a follower's
        // progress moved a high watermark (its Wake action).
        if !is_fetch && !actions.contains(&Action::Wake) {
            shared.changed();
        }
        shared.perform(actions).await;
        clock.decided(entered);
        if protocol::is_controller_api(key) {
            shared.metadata_committed.notify_waiters();
            shared.raft_wake.notify_one();
        }
        match outcome {
            Outcome::Park { wait_ms, metadata: for_metadata } => {
                let d = *deadline.get_or_insert_with(|| Instant::now() + Duration::from_millis(wait_ms));
                tokio::select! {
                    // biased: tokio picks branches with an unseeded RNG otherwise,
                    // which breaks replay under madsim.
                    biased;
                    _ = &mut data, if !for_metadata => {}
                    _ = &mut metadata, if for_metadata => {}
                    _ = tokio::time::sleep_until(d) => {}
                }
            }
            Outcome::Wait(mut waiting) => {
                // Most waits are over by now (an acks=1 or one-replica acks=all produce whose
                // write job was reported in `perform`): answered without a wait's machinery.
                if answers.is_none() {
                    if let Some(outcome) = waiting.poll(&shared.node, false) {
                        return outcome;
                    }
                }
                return wait_for(shared, waiting, answers).await;
            }
            Outcome::Forward { request, fallback } => return forward::forward(shared, request, caller, fallback).await,
            // KIP-890 part 1: ask the coordinator, then decide the produce again with its answer.
            Outcome::Verify { prepared: again, job } => prepared = Some(again.verified(verify::ask(shared, &job).await)),
            // A ShareFetch that found records unread: read them off the gate, decide again.
            Outcome::ShareRead { job, wait_ms } => {
                deadline.get_or_insert_with(|| Instant::now() + Duration::from_millis(wait_ms));
                let reads = shared.read_shares(job, true).await;
                prepared = prepared.map(|p| p.with_share_reads(reads));
            }
            other => return other,
        }
    }
}

/// Client requests that wait, at startup, until the broker is registered and unfenced (Kafka
/// opens its client listener only then): Produce, ListOffsets, Metadata, CreateTopics,
/// DeleteTopics, InitProducerId, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
/// DeleteRecords. Never the requests brokers and the controller exchange (Fetch, heartbeats,
/// registration), which are how the broker gets started.
fn waits_for_startup(key: i16) -> bool {
    use ApiKey::*;
    [Produce, ListOffsets, Metadata, CreateTopics, DeleteTopics, InitProducerId, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DeleteRecords]
        .iter()
        .any(|k| *k as i16 == key)
}

/// Polls a waiting request whenever the node changes or one of its tickets is answered, until
/// it answers or times out.
async fn wait_for(shared: &Shared, mut waiting: Waiting, mut answers: Option<tokio::sync::mpsc::UnboundedReceiver<(Ticket, Answer)>>) -> Outcome {
    let _counted = Waits::enter(shared);
    let deadline = Instant::now() + Duration::from_millis(waiting.timeout_ms);
    loop {
        let notified = shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let expired = Instant::now() >= deadline;
        if expired {
            // No answer is sent after this; one sent before it is in the channel, taken below.
            shared.forget_answers(&waiting.tickets());
        }
        if let Some(rx) = answers.as_mut() {
            while let Ok((ticket, answer)) = rx.try_recv() {
                waiting.answered(ticket, answer);
            }
        }
        if let Some(outcome) = waiting.poll(&shared.node, expired) {
            return outcome;
        }
        tokio::select! {
            // biased: tokio picks branches with an unseeded RNG otherwise,
            // which breaks replay under madsim.
            biased;
            Some((ticket, answer)) = async { answers.as_mut()?.recv().await } => {
                waiting.answered(ticket, answer);
            }
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// A request counted as waiting (`seedlog_produce_purgatory_size`) until this is dropped.
struct Waits<'a>(&'a Shared);

impl<'a> Waits<'a> {
    fn enter(shared: &'a Shared) -> Waits<'a> {
        shared.metrics.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Waits(shared)
    }
}

impl Drop for Waits<'_> {
    fn drop(&mut self) {
        self.0.metrics.waiting.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The answer to a request of a version Kafka 4.0 removed, written back at that version
/// (`protocol::legacy`): a zero-copy fetch's regions are read first, since the records are
/// converted. What does not convert closes the connection.
pub(super) fn bridged_back(bridge: &crate::protocol::legacy::Legacy, outcome: Outcome) -> Outcome {
    let frame = match outcome {
        Outcome::Reply(response) => response.encode(),
        Outcome::Relay(bytes) => Ok(bytes),
        Outcome::Frame(frame) => frame.to_bytes().map_err(|e| format!("a fetch answer's records do not read: {e}")),
        other => return other,
    };
    match frame.and_then(|f| bridge.down(&f)) {
        Ok(bytes) => Outcome::Relay(bytes),
        Err(reason) => Outcome::Close(reason),
    }
}
