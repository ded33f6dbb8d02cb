//! Requests that are answered later: an acks=all produce waits until the ISR holds its batches
//! (Kafka's delayed produce), a DeleteRecords until every live replica's log start has moved
//! (Kafka's delayed delete records), a CreateTopics/DeleteTopics/AlterConfigs on the controller
//! node waits until this node's broker has applied the change, so the client's next request
//! here sees it, and a group request waits for the coordinator's answers to its tickets (a
//! rebalance completing, a commit replicated), a WriteTxnMarkers until its markers are
//! replicated, and a transaction request for the transaction coordinator's answer to its
//! ticket, which later decisions return as [`Action::Answer`] and the shell hands in
//! ([`Waiting::answered`]). Each is a response
//! under construction plus a condition; the shell polls it whenever the node changed or an
//! answer came, and once more when its timeout passed.

use super::group_reply::GroupReply;
use super::txn_handlers::TxnReply;
use crate::protocol::Response;
use super::{Node, Outcome};
use crate::broker::{Action, Answer, Broker, Error, Produced, Ticket};
use crate::group;
use kafka_protocol::messages::delete_records_response::DeleteRecordsResponse;
use kafka_protocol::messages::produce_response::ProduceResponse;
use kafka_protocol::messages::write_txn_markers_response::WriteTxnMarkersResponse;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

#[derive(Debug)]
pub struct Waiting {
    /// How long the request may wait in all.
    pub timeout_ms: u64,
    what: What,
    /// A forwarded request: its answer goes back sealed in the Envelope answer of this version
    /// and correlation id.
    envelope: Option<(i16, i32)>,
}

#[derive(Debug)]
enum What {
    /// `hints`: the client's listener, where the answer names the leaders of partitions led
    /// elsewhere (Produce v10+, `leader_hints`).
    Produce { version: i16, correlation_id: i32, response: ProduceResponse, pending: Vec<Pending>, hints: Option<String> },
    Applied { offset: i64, reply: Response },
    /// A controller decision whose last record is at `offset`, proposed in the controller epoch
    /// `epoch` (None once it is committed); `applied`: then wait for this node's broker to apply
    /// it too. `refused` answers if the epoch ends or the wait runs out before the commit.
    Committed { offset: i64, epoch: Option<i32>, reply: Response, refused: Response, applied: bool },
    DeleteRecords { version: i16, correlation_id: i32, response: DeleteRecordsResponse, pending: Vec<PendingDelete> },
    /// A WriteTxnMarkers: its partitions' markers, each with the index of its marker in the
    /// request.
    Markers { version: i16, correlation_id: i32, response: WriteTxnMarkersResponse, pending: Vec<(usize, Pending)> },
    /// A group request: the response, the coordinator tickets it still waits on, and the
    /// answers so far.
    Group { reply: Option<GroupReply>, tickets: Vec<group::Ticket>, answers: Vec<(group::Ticket, group::Answer)> },
    /// A transaction coordinator's request: the response, waiting on one ticket.
    Txn { reply: Option<TxnReply>, ticket: crate::txn::Ticket },
    /// A ShareFetch or ShareAcknowledge: the response, waiting on the share-partition leader's
    /// ticket (`results`: its answer, once come).
    Share { reply: Option<super::share_fetch::ShareReply>, ticket: u64, results: Option<crate::share::leader::Results> },
}

/// One partition of a produce waiting for its high watermark (acks=all), or for its batch to
/// be written (acks=1: the write-behind, `log::deferred`).
#[derive(Debug)]
pub(crate) struct Pending {
    pub acks_all: bool,
    /// Where its answer sits in the response.
    pub topic: usize,
    pub slot: usize,
    pub name: std::sync::Arc<str>,
    pub partition: i32,
    pub produced: Produced,
}

/// One partition of a DeleteRecords waiting for its low watermark.
#[derive(Debug)]
pub(crate) struct PendingDelete {
    /// Where its answer sits in the response.
    pub topic: usize,
    pub slot: usize,
    pub name: String,
    pub partition: i32,
    /// The new log start (the high watermark for -1).
    pub offset: i64,
    /// The leadership it was moved under: the wait ends with it.
    pub leader_epoch: i32,
}

impl Waiting {
    pub(crate) fn produce(version: i16, correlation_id: i32, response: ProduceResponse, pending: Vec<Pending>, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Produce { version, correlation_id, response, pending, hints: None } }
    }

    /// A produce whose answer names the leaders of partitions led elsewhere, with their
    /// endpoints on `listener` (KIP-951; None: the version has no such fields).
    pub(crate) fn with_leader_hints(mut self, listener: Option<String>) -> Waiting {
        if let What::Produce { hints, .. } = &mut self.what {
            *hints = listener;
        }
        self
    }

    pub(crate) fn markers(version: i16, correlation_id: i32, response: WriteTxnMarkersResponse, pending: Vec<(usize, Pending)>, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Markers { version, correlation_id, response, pending } }
    }

    pub(crate) fn delete_records(version: i16, correlation_id: i32, response: DeleteRecordsResponse, pending: Vec<PendingDelete>, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::DeleteRecords { version, correlation_id, response, pending } }
    }

    /// Reply with `reply` once the local broker applied metadata up to `offset`
    /// ([`Broker::applied_through`]).
    pub(crate) fn applied(offset: i64, reply: Response, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Applied { offset, reply } }
    }

    /// Reply with `reply` once the controller's record at `offset` is committed in `epoch` (and
    /// with `applied`, once this node's broker applied it, or the wait ran out); with `refused`
    /// if that leadership ends or the wait runs out first.
    pub(crate) fn committed(offset: i64, epoch: i32, reply: Response, refused: Response, applied: bool, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Committed { offset, epoch: Some(epoch), reply, refused, applied } }
    }

    /// Waits for the group coordinator to answer every one of `tickets`.
    pub(crate) fn group(reply: GroupReply, tickets: Vec<group::Ticket>, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Group { reply: Some(reply), tickets, answers: Vec::new() } }
    }

    /// Waits for the transaction coordinator to answer `ticket`.
    pub(crate) fn txn(reply: TxnReply, ticket: crate::txn::Ticket, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Txn { reply: Some(reply), ticket } }
    }

    /// Waits for the share-partition leader to answer `ticket`.
    pub(crate) fn share(reply: super::share_fetch::ShareReply, ticket: u64, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, envelope: None, what: What::Share { reply: Some(reply), ticket, results: None } }
    }

    /// The coordinator tickets this request still waits on (none but for a coordinator's
    /// request).
    pub fn tickets(&self) -> Vec<Ticket> {
        match &self.what {
            What::Group { tickets, .. } => tickets.iter().map(|t| Ticket::Group(*t)).collect(),
            What::Txn { reply: Some(_), ticket } => vec![Ticket::Txn(*ticket)],
            What::Share { reply: Some(_), ticket, results: None } => vec![Ticket::Share(*ticket)],
            _ => Vec::new(),
        }
    }

    /// Takes the answer for `ticket` if this request waits on it (else nothing happens).
    pub fn answered(&mut self, ticket: Ticket, answer: Answer) {
        match (&mut self.what, ticket, answer) {
            (What::Group { tickets, answers, .. }, Ticket::Group(ticket), Answer::Group(answer)) => {
                let Some(i) = tickets.iter().position(|t| *t == ticket) else { return };
                tickets.remove(i);
                answers.push((ticket, answer));
            }
            (What::Txn { reply, ticket: mine }, Ticket::Txn(ticket), Answer::Txn(answer)) if *mine == ticket => {
                if let Some(r) = reply.as_mut() {
                    r.answered(answer);
                }
            }
            (What::Share { ticket: mine, results, .. }, Ticket::Share(ticket), Answer::Share(r)) if *mine == ticket => *results = Some(r),
            _ => {}
        }
    }

    /// Moves the answers among `actions` that are for this request into it (a decision made
    /// without the shell, or the request's own decision answering at once).
    pub fn take_answers(&mut self, actions: &mut Vec<Action>) {
        let mut kept = Vec::with_capacity(actions.len());
        for a in actions.drain(..) {
            match a {
                Action::Answer { ticket, answer } if self.tickets().contains(&ticket) => {
                    self.answered(ticket, answer);
                }
                other => kept.push(other),
            }
        }
        *actions = kept;
    }

    /// The answer, once the condition holds or `expired` (then what is still missing is
    /// answered with REQUEST_TIMED_OUT, or for metadata sent as it is). Looking changes
    /// nothing but, once expired, which tickets the coordinator still answers.
    pub fn poll(&mut self, node: &Node, expired: bool) -> Option<Outcome> {
        let outcome = self.poll_inner(node, expired)?;
        Some(match (self.envelope, outcome) {
            (Some((version, correlation_id)), Outcome::Reply(reply)) => crate::protocol::envelope::seal(version, correlation_id, &reply).map_or_else(Outcome::Close, Outcome::Reply),
            (_, outcome) => outcome,
        })
    }

    /// This request came in an envelope: its answer goes back in the envelope's answer.
    pub(crate) fn sealed(mut self, version: i16, correlation_id: i32) -> Waiting {
        self.envelope = Some((version, correlation_id));
        self
    }

    fn poll_inner(&mut self, node: &Node, expired: bool) -> Option<Outcome> {
        match &mut self.what {
            What::Group { reply, tickets, answers } => Self::poll_group(node, reply, tickets, answers, expired),
            What::Txn { reply, ticket } => {
                let done = reply.as_ref()?.is_answered();
                if !done && !expired {
                    return None;
                }
                if !done {
                    node.parts().txns.coordinator.forget(*ticket);
                }
                reply.take().map(|r| Outcome::Reply(r.finish()))
            }
            What::Share { reply, ticket, results } => {
                if results.is_none() && !expired {
                    return None;
                }
                if results.is_none() {
                    node.parts().shares.forget(*ticket);
                }
                reply.take().map(|r| Outcome::Reply(r.finish(results.as_ref())))
            }
            What::Committed { offset, epoch, reply, refused, applied } => {
                if let Some(e) = *epoch {
                    // Polled outside the gates: while a quorum decision holds the lock (at its
                    // metadata log's sync), what the last one published, which the decision
                    // that commits the record publishes before anyone is woken.
                    let state = match node.try_controller() {
                        Ok(q) => q.map(|q| (q.active_epoch() == Some(e), q.is_committed(*offset))),
                        Err(()) => Some(node.quorum_view()).map(|v| (v.active_epoch == Some(e), *offset < v.committed_end)),
                    };
                    match state {
                        Some((true, true)) => *epoch = None,
                        Some((true, false)) if !expired => return None,
                        _ => return Some(Outcome::Reply(refused.clone())),
                    }
                }
                (!*applied || expired || node.broker().applied_through(*offset)).then(|| Outcome::Reply(reply.clone()))
            }
            _ => self.poll_broker(&node.broker(), expired),
        }
    }

    /// A group request: answered once every ticket is; when the wait is over, the coordinator
    /// forgets the rest and they are answered as timed out.
    fn poll_group(node: &Node, reply: &mut Option<GroupReply>, tickets: &mut Vec<group::Ticket>, answers: &mut Vec<(group::Ticket, group::Answer)>, expired: bool) -> Option<Outcome> {
        if !tickets.is_empty() {
            if !expired {
                return None;
            }
            let mut parts = node.parts();
            for t in tickets.drain(..) {
                parts.groups.forget(t);
                let late = reply.as_ref().map(GroupReply::expired)?;
                answers.push((t, late));
            }
        }
        answers.sort_by_key(|(t, _)| *t);
        let all: Vec<group::Answer> = answers.drain(..).map(|(_, a)| a).collect();
        Some(Outcome::Reply(reply.take()?.finish(&all)))
    }

    /// [`Waiting::poll`] with the broker already locked.
    pub(crate) fn poll_broker(&mut self, b: &Broker, expired: bool) -> Option<Outcome> {
        match &mut self.what {
            What::Group { .. } | What::Txn { .. } | What::Share { .. } | What::Committed { .. } => None,
            What::Applied { offset, reply } => (expired || b.applied_through(*offset)).then(|| Outcome::Reply(reply.clone())),
            What::DeleteRecords { version, correlation_id, response, pending } => {
                let timeout = self.timeout_ms;
                pending.retain(|p| {
                    let pr = &mut response.topics[p.topic].partitions[p.slot];
                    match b.low_watermark(&p.name, p.partition, p.leader_epoch) {
                        Ok(low) if low >= p.offset => pr.low_watermark = low,
                        Ok(_) if !expired => return true,
                        Ok(_) => pr.error_code = Error::RequestTimedOut(timeout).kafka_error(true).code(),
                        // The leadership ended: the start moved here may not be the new leader's.
                        Err(_) => pr.error_code = Error::NotLeaderOrFollower.kafka_error(true).code(),
                    }
                    false
                });
                if !pending.is_empty() {
                    return None;
                }
                Some(Outcome::Reply(Response::new(ApiKey::DeleteRecords, *version, *correlation_id, std::mem::take(response))))
            }
            What::Markers { version, correlation_id, response, pending } => {
                let timeout = self.timeout_ms;
                pending.retain(|(m, p)| {
                    let Some(failed) = settled(b, p, expired, timeout) else { return true };
                    if let Some(e) = failed {
                        response.markers[*m].topics[p.topic].partitions[p.slot].error_code = e.kafka_error(true).code();
                    }
                    false
                });
                if !pending.is_empty() {
                    return None;
                }
                Some(Outcome::Reply(Response::new(ApiKey::WriteTxnMarkers, *version, *correlation_id, std::mem::take(response))))
            }
            What::Produce { version, correlation_id, response, pending, hints } => {
                let timeout = self.timeout_ms;
                pending.retain(|p| {
                    let Some(failed) = settled(b, p, expired, timeout) else { return true };
                    if let Some(e) = failed {
                        let pr = &mut response.responses[p.topic].partition_responses[p.slot];
                        pr.error_code = e.kafka_error(true).code();
                        pr.base_offset = -1;
                        if *version >= 8 {
                            pr.error_message = Some(StrBytes::from_string(e.to_string()));
                        }
                    }
                    false
                });
                if !pending.is_empty() {
                    return None;
                }
                if let Some(listener) = hints {
                    super::leader_hints::produce(b, listener, response);
                }
                Some(Outcome::Reply(Response::new(ApiKey::Produce, *version, *correlation_id, std::mem::take(response))))
            }
        }
    }
}

/// Whether an append has settled: None while it waits, `Some(None)` once replicated (acks=all)
/// or written (acks=1), `Some(Some(error))` when it failed or the wait ran out.
fn settled(b: &Broker, p: &Pending, expired: bool, timeout: u64) -> Option<Option<Error>> {
    let done = match p.acks_all {
        true => b.replicated(&p.name, p.partition, &p.produced),
        false => b.written(&p.name, p.partition, &p.produced),
    };
    match done {
        Ok(true) => Some(None),
        Ok(false) if !expired => None,
        Ok(false) => Some(Some(Error::RequestTimedOut(timeout))),
        Err(e) => Some(Some(e)),
    }
}
