//! Per-link network faults for the simulator: extra delay and message loss on one direction of
//! one link, which madsim (a single global latency) cannot express. The transport calls
//! [`before_send`] before each message it sends (server responses, client requests); in the real
//! build that is an empty function, so nothing here can touch a real network.
//!
//! Loss on a TCP link is not a lost message but a retransmission: each send on a lossy link is
//! delayed by one retransmission timeout per loss, losses drawn from a seeded generator.

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

#[cfg(madsim)]
mod registry {
    use super::LinkFault;
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::net::IpAddr;

    thread_local! {
        // One simulation runs on one thread, so a thread-local is per run.
        pub static LINKS: RefCell<BTreeMap<(IpAddr, IpAddr), LinkFault>> = const { RefCell::new(BTreeMap::new()) };
        pub static RNG: RefCell<u64> = const { RefCell::new(0x9e37_79b9_7f4a_7c15) };
    }
}

/// Clears every link fault and seeds the loss generator (the harness calls it per run).
#[cfg(madsim)]
pub fn reset(seed: u64) {
    registry::LINKS.with(|l| l.borrow_mut().clear());
    registry::RNG.with(|r| *r.borrow_mut() = seed | 1);
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
