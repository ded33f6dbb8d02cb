//! The replica fetchers' rounds as node inputs: one [`ReplicaFetcher`] per leader this node
//! follows lives in the node, and each round enters through [`Node::input`] as a
//! [`FetcherInput`] — ready for the next request, or the leader's answer to the last one. What
//! to ask next comes out as [`Action::FetchFrom`] for the shell to send, a pause as
//! [`Action::FetcherBackOff`]; what an answer does to the local replicas is the fetcher's
//! decision, made here under the node's lock. The shell's fetcher task only translates a step
//! into wire requests and carries the responses back.

use super::{Node, Parts};
use crate::broker::{Action, FetchAnswer, Following, PartitionMap, ReplicaFetcher, Then};
use kafka_protocol::messages::fetch_response::FetchResponse;
use kafka_protocol::messages::offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;

/// What the shell's fetcher task for one leader tells the node.
#[derive(Debug)]
pub enum FetcherInput {
    /// Ready for the next round: what should be asked of the leader?
    Next,
    /// The leader's OffsetForLeaderEpoch answer to the step's `ask` (KIP-279).
    EpochAnswers { ask: Vec<(Following, i32)>, response: OffsetForLeaderEpochResponse },
    /// The leader's Fetch answer to a round over `following`. An answer that names no partition
    /// (an incremental fetch with no news) is none of the node's business and never comes in.
    Fetched { following: Vec<Following>, response: FetchResponse },
}

impl Node {
    /// One input of `leader`'s fetcher, decided with the broker locked.
    pub(super) fn fetcher_input(parts: &mut Parts, leader: i32, input: FetcherInput, now: u64) -> Vec<Action> {
        let Parts { broker, fetchers, .. } = parts;
        let fetcher = fetchers.entry(leader).or_insert_with(|| ReplicaFetcher::new(leader));
        let mut out = Vec::new();
        let mut then = Then::Continue;
        match input {
            FetcherInput::Next => {
                let step = fetcher.next(broker, now, &mut out);
                out.push(Action::FetchFrom { leader, step });
            }
            FetcherInput::EpochAnswers { ask, response } => {
                for t in &response.topics {
                    for p in &t.partitions {
                        let Some((f, _)) = ask.iter().find(|(f, _)| &*f.topic == t.topic.0.as_str() && f.partition == p.partition) else { continue };
                        let answer = match crate::kafka::error(p.error_code) {
                            None => Ok((p.leader_epoch, p.end_offset)),
                            Some(code) => Err(code),
                        };
                        if fetcher.on_epoch_answer(broker, f, answer, now, &mut out) == Then::BackOff {
                            then = Then::BackOff;
                        }
                    }
                }
            }
            FetcherInput::Fetched { following, response } => {
                // Each answer finds its partition by lookup (a scan per answer cost a fetch of
                // N partitions N^2/2 string comparisons).
                let mut index = PartitionMap::default();
                for (i, f) in following.iter().enumerate() {
                    index.insert_shared(&f.topic, f.partition, i);
                }
                for t in &response.responses {
                    for p in &t.partitions {
                        let Some(&i) = index.get(t.topic.0.as_str(), p.partition_index) else { continue };
                        let records = p.records.clone().unwrap_or_default();
                        let answer = FetchAnswer { error: crate::kafka::error(p.error_code), records: &records, high_watermark: p.high_watermark, log_start_offset: p.log_start_offset };
                        if fetcher.on_fetch_answer(broker, &following[i], answer, now, &mut out) == Then::BackOff {
                            then = Then::BackOff;
                        }
                    }
                }
                // What was appended may complete waiting produces and parked fetches here.
                out.push(Action::Wake);
            }
        }
        if then == Then::BackOff {
            out.push(Action::FetcherBackOff { leader });
        }
        out
    }
}
