//! Requests that are answered later: an acks=all produce waits until the ISR holds its batches
//! (Kafka's delayed produce), and a CreateTopics/DeleteTopics on the controller node waits
//! until this node's broker has applied the change, so the client's next request here sees it.
//! Each is a response under construction plus a condition; the shell polls it whenever the
//! node changed and once more when its timeout passed.

use super::{encode, Node, Outcome};
use crate::broker::{Broker, Error, Produced};
use bytes::Bytes;
use kafka_protocol::messages::produce_response::ProduceResponse;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

#[derive(Debug)]
pub struct Waiting {
    /// How long the request may wait in all.
    pub timeout_ms: u64,
    what: What,
}

#[derive(Debug)]
enum What {
    Produce { version: i16, correlation_id: i32, response: ProduceResponse, pending: Vec<Pending> },
    Applied { offset: i64, reply: Bytes },
}

/// One partition of a produce waiting for its high watermark.
#[derive(Debug)]
pub(crate) struct Pending {
    /// Where its answer sits in the response.
    pub topic: usize,
    pub slot: usize,
    pub name: String,
    pub partition: i32,
    pub produced: Produced,
}

impl Waiting {
    pub(crate) fn produce(version: i16, correlation_id: i32, response: ProduceResponse, pending: Vec<Pending>, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, what: What::Produce { version, correlation_id, response, pending } }
    }

    /// Reply with `reply` once the local broker applied metadata up to `offset`.
    pub(crate) fn applied(offset: i64, reply: Bytes, timeout_ms: u64) -> Waiting {
        Waiting { timeout_ms, what: What::Applied { offset, reply } }
    }

    /// The answer, once the condition holds or `expired` (then what is still missing is
    /// answered with REQUEST_TIMED_OUT, or for metadata sent as it is).
    pub fn poll(&mut self, node: &Node, expired: bool) -> Option<Outcome> {
        self.poll_broker(&node.broker(), expired)
    }

    /// [`Waiting::poll`] with the broker already locked.
    pub(crate) fn poll_broker(&mut self, b: &Broker, expired: bool) -> Option<Outcome> {
        match &mut self.what {
            What::Applied { offset, reply } => (expired || b.image().offset >= *offset).then(|| Outcome::Reply(reply.clone())),
            What::Produce { version, correlation_id, response, pending } => {
                let timeout = self.timeout_ms;
                pending.retain(|p| {
                    let failed = match b.replicated(&p.name, p.partition, &p.produced) {
                        Ok(true) => None,
                        Ok(false) if !expired => return true,
                        Ok(false) => Some(Error::RequestTimedOut(timeout)),
                        Err(e) => Some(e),
                    };
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
                Some(match encode(ApiKey::Produce, *version, *correlation_id, response) {
                    Ok(bytes) => Outcome::Reply(bytes),
                    Err(reason) => Outcome::Close(reason),
                })
            }
        }
    }
}
