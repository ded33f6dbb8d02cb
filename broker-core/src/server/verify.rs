//! A partition leader's verification (KIP-890 part 1): the AddPartitionsToTxn v4 a produce's
//! decision asked for (`Outcome::Verify`) goes to the producer's transaction coordinator
//! (this node included, through its own listener, as markers do) on a link of `links.rs`,
//! within `peer_request_ms_max`; what came back, or why nothing did, is the produce's
//! [`Verified`]. IO only: what is asked and what the answer means are `node::verify`'s.

use super::{links, Shared};
use crate::node::verify::{self, Verified, VerifyJob};

async fn deliver(shared: &Shared, job: &VerifyJob) -> Result<kafka_protocol::messages::AddPartitionsToTxnResponse, String> {
    let id = job.coordinator.ok_or_else(|| format!("no coordinator is known for transactional id {}", job.txn_id))?;
    links::ask(shared, id, "seedlog-txn-verify", &verify::request(job), Some(verify::verify_version)).await
}

/// Asks `job`'s coordinator; an answer that did not come is COORDINATOR_NOT_AVAILABLE for
/// every partition (the client's retry verifies again).
pub(super) async fn ask(shared: &Shared, job: &VerifyJob) -> Verified {
    let answer = deliver(shared, job).await;
    if let Err(why) = &answer {
        tracing::debug!("verifying transactional id {}: {why}", job.txn_id);
    }
    verify::results(job, answer)
}
