//! Connections to other brokers (this one included, through its own listener) for the requests
//! a node's decisions ask the shell to send on their behalf: the transaction coordinator's
//! WriteTxnMarkers (`markers.rs`) and a leader's verifications (`verify.rs`). One request at a
//! time per connection; an idle one is reused, and one the other side closed meanwhile is
//! replaced once. Opening a connection per request cost a verified transaction about a third
//! of its throughput (docs/benchmarks.md, "Transactions").

use super::{peers, Shared};
use crate::constants::peer_request_ms_max;
use kafka_protocol::protocol::Request;
use std::time::Duration;

/// Idle connections kept per broker and purpose: about as many as such requests run at once.
const links_idle_max: usize = 8;

/// Sends `req` (at `version`, or the version this crate sends) to broker `id` within
/// `peer_request_ms_max`, on an idle connection of `purpose` (its client id) or a new one.
pub(super) async fn ask<R: Request<Response: 'static>>(shared: &Shared, id: i32, purpose: &'static str, req: &R, version: Option<i16>) -> Result<R::Response, String> {
    let (host, port) = {
        let b = shared.broker();
        let x = b.image().brokers.get(&id).ok_or_else(|| format!("broker {id} is not registered"))?;
        let inter = &b.config().security.inter_broker_listener;
        let (host, port) = x.endpoint(inter).ok_or_else(|| format!("broker {id} has no {inter} listener (inter.broker.listener.name)"))?;
        (host.to_string(), port)
    };
    let addr = peers::resolve(&host, port)?;
    let within = Duration::from_millis(peer_request_ms_max);
    let idle = shared.links.lock().expect("links").get_mut(&(addr, purpose)).and_then(Vec::pop);
    let reused = match idle {
        Some(mut conn) => conn.send_at(req, version, within).await.map(|r| (r, conn)).ok(),
        None => None,
    };
    let (answer, conn) = match reused {
        Some(x) => x,
        None => {
            let mut conn = peers::connect_within(shared, addr, purpose, within).await.map_err(|e| format!("connecting to broker {id} at {addr}: {e}"))?;
            let answer = conn.send_at(req, version, within).await.map_err(|e| format!("broker {id} at {addr}: {e}"))?;
            (answer, conn)
        }
    };
    let mut links = shared.links.lock().expect("links");
    let idle = links.entry((addr, purpose)).or_default();
    if idle.len() < links_idle_max {
        idle.push(conn);
    }
    Ok(answer)
}
