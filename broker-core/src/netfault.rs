//! Per-link network faults for the simulator: extra delay and message loss on one direction of
//! one link, which madsim (a single global latency) cannot express, and one request held on its
//! way past its sender's timeout. The transport calls [`before_send`] before each message it
//! sends (server responses, client requests) and asks [`hold`] about each request; in the real
//! build both are empty functions, so nothing here can touch a real network.
//!
//! Loss on a TCP link is not a lost message but a retransmission: each send on a lossy link is
//! delayed by one retransmission timeout per loss, losses drawn from a seeded generator.
//!
//! A held request (the `hold_request` fault) is the delay that makes a protocol's retries
//! dangerous: its sender times out and sends it again on a new connection, the retry succeeds,
//! and the first copy arrives later, when the world has moved on (docs/transactions.md,
//! section 4: a late EndTxn or WriteTxnMarkers ending the next transaction). It is taken off its
//! connection, which its sender then waits on in vain, and delivered on a connection of its own
//! from the same node when the hold ends; the answer goes nowhere.

use std::net::IpAddr;

/// TCP's minimum retransmission timeout (Linux `TCP_RTO_MIN`): what one lost segment costs.
pub const retransmit_ms: u64 = 200;

/// A fault on one direction of one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkFault {
    /// Added to every message.
    pub delay_ms: u64,
    /// Chance, in thousandths, that a send is lost once (and again, geometrically).
    pub loss_per_mille: u32,
}

/// One request to hold: the first of API `api_key` sent by `from` (anyone: `None`) while armed.
#[cfg(madsim)]
#[derive(Debug, Clone)]
pub struct Hold {
    pub api_key: i16,
    pub from: Option<IpAddr>,
    /// When the held request is delivered (and the hold stops catching requests).
    pub until: tokio::time::Instant,
    /// The request caught: its sender and destination.
    pub held: Option<(IpAddr, std::net::SocketAddr)>,
}

#[cfg(madsim)]
mod registry {
    use super::{Hold, LinkFault};
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::net::IpAddr;

    thread_local! {
        // One simulation runs on one thread, so a thread-local is per run.
        pub static LINKS: RefCell<BTreeMap<(IpAddr, IpAddr), LinkFault>> = const { RefCell::new(BTreeMap::new()) };
        pub static RNG: RefCell<u64> = const { RefCell::new(0x9e37_79b9_7f4a_7c15) };
        pub static HOLDS: RefCell<BTreeMap<u64, Hold>> = const { RefCell::new(BTreeMap::new()) };
        pub static NEXT_HOLD: RefCell<u64> = const { RefCell::new(0) };
    }
}

/// Clears every link fault and hold and seeds the loss generator (the harness calls it per run).
#[cfg(madsim)]
pub fn reset(seed: u64) {
    registry::LINKS.with(|l| l.borrow_mut().clear());
    registry::HOLDS.with(|h| h.borrow_mut().clear());
    registry::RNG.with(|r| *r.borrow_mut() = seed | 1);
}

/// Arms a hold of the next request of API `api_key` from `from` (anyone: `None`) until `until`
/// (the harness's clock); returns its id for [`disarm_hold`].
#[cfg(madsim)]
pub fn arm_hold(api_key: i16, from: Option<IpAddr>, until: tokio::time::Instant) -> u64 {
    let id = registry::NEXT_HOLD.with(|n| {
        let mut n = n.borrow_mut();
        *n += 1;
        *n
    });
    registry::HOLDS.with(|h| h.borrow_mut().insert(id, Hold { api_key, from, until, held: None }));
    id
}

/// Ends hold `id`; returns the request it caught, if any (delivered by now, or being).
#[cfg(madsim)]
pub fn disarm_hold(id: u64) -> Option<(IpAddr, std::net::SocketAddr)> {
    registry::HOLDS.with(|h| h.borrow_mut().remove(&id)).and_then(|h| h.held)
}

/// Whether the request `frame` (size prefix included) from `from` to `to` is held: if so it is
/// taken, and delivered on a connection of its own when the hold ends; the caller must not
/// write it.
#[cfg(madsim)]
pub fn hold(from: IpAddr, to: std::net::SocketAddr, frame: &[u8]) -> bool {
    let Some(api_key) = frame.get(4..6).map(|b| i16::from_be_bytes([b[0], b[1]])) else { return false };
    let until = registry::HOLDS.with(|h| {
        let mut h = h.borrow_mut();
        let hold = h.values_mut().find(|x| x.held.is_none() && x.api_key == api_key && x.from.is_none_or(|f| f == from))?;
        hold.held = Some((from, to));
        Some(hold.until)
    });
    let Some(until) = until else { return false };
    let frame = frame.to_vec();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        tokio::time::sleep_until(until).await;
        let Ok(mut conn) = tokio::net::TcpStream::connect(to).await else { return };
        if conn.write_all(&frame).await.is_ok() && conn.flush().await.is_ok() {
            // Read (and drop) the answer, so the request is served before the connection goes.
            let mut answer = [0u8; 4];
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), conn.read_exact(&mut answer)).await;
        }
    });
    true
}

/// Real build: nothing is held.
#[cfg(not(madsim))]
#[inline(always)]
pub fn hold(_from: IpAddr, _to: std::net::SocketAddr, _frame: &[u8]) -> bool {
    false
}

/// Sets (or with `None` clears) the fault on messages from `from` to `to`.
#[cfg(madsim)]
pub fn set_link(from: IpAddr, to: IpAddr, fault: Option<LinkFault>) {
    registry::LINKS.with(|l| match fault {
        Some(f) => l.borrow_mut().insert((from, to), f),
        None => l.borrow_mut().remove(&(from, to)),
    });
}

/// The extra time the next message from `from` to `to` takes.
#[cfg(madsim)]
fn extra_ms(from: IpAddr, to: IpAddr) -> u64 {
    let Some(f) = registry::LINKS.with(|l| l.borrow().get(&(from, to)).copied()) else { return 0 };
    let mut ms = f.delay_ms;
    registry::RNG.with(|r| {
        let mut x = *r.borrow();
        // Geometric number of losses, capped so a 100% lossy link still delivers eventually.
        for _ in 0..16 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x % 1000) as u32 >= f.loss_per_mille {
                break;
            }
            ms += retransmit_ms;
        }
        *r.borrow_mut() = x;
    });
    ms
}

/// Waits as long as the link's fault says before a message from `from` to `to` goes out.
#[cfg(madsim)]
pub async fn before_send(from: IpAddr, to: IpAddr) {
    let ms = extra_ms(from, to);
    if ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

/// Real build: no faults, no cost.
#[cfg(not(madsim))]
#[inline(always)]
pub async fn before_send(_from: IpAddr, _to: IpAddr) {}
