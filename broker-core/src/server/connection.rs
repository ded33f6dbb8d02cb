//! One client connection: read frames, answer them strictly in order, close on protocol
//! violations. Between bursts of requests a connection holds no buffer: it waits for
//! readability, then takes a request turn (`requests_read_max` over the broker), a read buffer of
//! `connection_read_buffer_bytes` (grown for a larger request only as its bytes arrive, never
//! past its frame) and a write buffer of `connection_write_buffer_bytes`, and gives all three back:
//! the turn while it waits for more bytes and after the request's first decision, the buffers
//! once the burst is answered and flushed. So a thousand idle connections cost a thousand times
//! `connection_idle_bytes_max`, and under load memory follows the turns, not the connections.
//!
//! Several requests that arrive together (a pipelining client) are read by one system call and
//! answered before one flush. On a SASL listener each frame first goes past the connection's
//! SASL session (`sasl.rs`), which answers the authentication itself and closes a connection
//! that asks for anything else before it authenticated. Nothing here decides anything: frames
//! go to `answer`. A connection that carried a ShareFetch tells the node when it closes, so the
//! share sessions last used on it end (`node::Input::ConnectionClosed`).

use super::answer::answer;
use super::sasl::{self, Sasl};
use super::{send, Shared};
use crate::security::sasl::{Mech, Session};
use crate::constants::{connection_idle_ms_max, connection_read_buffer_bytes, connection_write_buffer_bytes, request_body_ms_max, request_bytes_max};
use crate::kafka::ApiKey;
use crate::node::Outcome;
use crate::protocol;
use bytes::{Buf, Bytes, BytesMut};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The next connection's id (its requests' `Caller::connection`): unique in the process.
static next_connection_id: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Why reading the next request ended the connection.
enum Stop {
    /// The client closed it (or the socket failed) between requests.
    Closed,
    /// No request for `connection_idle_ms_max`.
    Idle,
    /// The client broke the protocol or stalled mid-request: logged as a warning.
    Violation(String),
}

/// The bytes read from a connection and not yet answered.
struct Inbox {
    buf: BytesMut,
    /// The shortest frame taken: a request header's, or none while a v0 SASL handshake's raw
    /// token is due (a short PLAIN login).
    min: usize,
}

impl Inbox {
    fn new() -> Inbox {
        Inbox { buf: BytesMut::new(), min: protocol::request_header_bytes_min }
    }

    /// Takes frames of any length while a raw SASL token is due, else requests only.
    fn expect_raw_token(&mut self, raw: bool) {
        self.min = if raw { 0 } else { protocol::request_header_bytes_min };
    }

    /// Reads until a whole frame is in and returns it (without its size prefix) with the turn it
    /// is to be answered under. Bytes are read only under a turn (`requests_read_max` over all
    /// connections), one read at a time, and the turn is given back while the connection waits
    /// for more: an idle or slow client holds none. Waits for a request's first bytes at most
    /// `connection_idle_ms_max`; the rest must come within `request_body_ms_max` of them.
    async fn next_frame(&mut self, rd: &mut send::ReadHalf, turns: &Arc<Semaphore>) -> Result<(Bytes, OwnedSemaphorePermit), Stop> {
        let mut deadline: Option<Instant> = None;
        loop {
            if let Some(len) = self.whole()? {
                let turn = turns.clone().acquire_owned().await.expect("the request turns are never closed");
                return Ok((self.take(len), turn));
            }
            let end = self.frame_end()?;
            if self.buf.is_empty() && deadline.is_none() {
                let idle = Duration::from_millis(connection_idle_ms_max);
                tokio::time::timeout(idle, self.wait_for_bytes(rd, end)).await.map_err(|_| Stop::Idle)??;
            } else {
                let d = *deadline.get_or_insert_with(|| Instant::now() + Duration::from_millis(request_body_ms_max));
                let waited = tokio::time::timeout(d.saturating_duration_since(Instant::now()), self.wait_for_bytes(rd, end)).await;
                self.within_body_time(waited.ok(), end)?;
            }
            if self.whole()?.is_some() {
                continue; // the wait read it (the simulated build)
            }
            let turn = turns.clone().acquire_owned().await.expect("the request turns are never closed");
            let end = self.frame_end()?;
            // One read, polled once: ready bytes come in under the turn; none ready gives it back.
            let read = tokio::select! {
                // biased: tokio picks branches with an unseeded RNG otherwise,
                // which breaks replay under madsim.
                biased;
                read = self.fill(rd, end) => Some(read),
                _ = std::future::ready(()) => None,
            };
            if let Some(read) = read {
                if self.buf.is_empty() {
                    read?;
                } else {
                    self.within_body_time(Some(read), end)?;
                }
            }
            if let Some(len) = self.whole()? {
                return Ok((self.take(len), turn));
            }
            drop(turn);
            if !self.buf.is_empty() && deadline.is_none() {
                deadline = Some(Instant::now() + Duration::from_millis(request_body_ms_max));
            }
        }
    }

    /// Until bytes can be read: readiness alone in the real build (no buffer is taken); a read
    /// under madsim, whose connection halves have no readiness to wait for.
    async fn wait_for_bytes(&mut self, rd: &mut send::ReadHalf, frame_end: usize) -> Result<(), Stop> {
        if rd.has_readiness() {
            send::readable(rd).await;
            Ok(())
        } else {
            self.fill(rd, frame_end).await
        }
    }

    /// What a wait or read inside a frame came to (None: the body time ran out).
    fn within_body_time(&self, got: Option<Result<(), Stop>>, frame_end: usize) -> Result<(), Stop> {
        let have = self.buf.len();
        match got {
            Some(Err(Stop::Closed)) => Err(Stop::Violation(format!("request cut short ({have} of {frame_end} bytes)"))),
            Some(result) => result,
            None => Err(Stop::Violation(format!("request not received within {request_body_ms_max} ms ({have} of {frame_end} bytes)"))),
        }
    }

    /// The length of the whole frame at the front of the buffer, if it is all in; a size prefix
    /// out of bounds is a violation.
    fn whole(&self) -> Result<Option<usize>, Stop> {
        let Some(prefix) = self.buf.get(..4) else { return Ok(None) };
        let len = protocol::sized(prefix.try_into().expect("four bytes"), request_bytes_max, self.min).map_err(Stop::Violation)?;
        Ok((self.buf.len() >= 4 + len).then_some(len))
    }

    /// Where the frame being read ends (size prefix included), as far as is known.
    fn frame_end(&self) -> Result<usize, Stop> {
        match self.buf.get(..4) {
            Some(prefix) => Ok(4 + protocol::sized(prefix.try_into().expect("four bytes"), request_bytes_max, self.min).map_err(Stop::Violation)?),
            None if self.buf.is_empty() => Ok(connection_read_buffer_bytes),
            None => Ok(4),
        }
    }

    /// Takes the whole frame of `len` bytes at the front, without its size prefix.
    fn take(&mut self, len: usize) -> Bytes {
        self.buf.advance(4);
        self.buf.split_to(len).freeze()
    }

    /// One read into the buffer, making room first when it is full: up to
    /// `connection_read_buffer_bytes` while frames fit in it; for a larger frame (`frame_end`
    /// bytes) a new buffer at most twice what already arrived and never past the frame's end,
    /// so a size prefix alone never reserves the size it declares, and a frame's buffer ends
    /// no larger than the frame.
    async fn fill(&mut self, rd: &mut send::ReadHalf, frame_end: usize) -> Result<(), Stop> {
        let have = self.buf.len();
        // An empty buffer starts again at the front of its allocation (no copy), so a request
        // is not read in two parts around the end of the last one.
        if have == 0 || self.buf.capacity() == have {
            if frame_end <= connection_read_buffer_bytes {
                self.buf.reserve(connection_read_buffer_bytes - have);
            } else {
                let mut bigger = BytesMut::with_capacity(frame_end.min(2 * have.max(connection_read_buffer_bytes)));
                bigger.extend_from_slice(&self.buf);
                self.buf = bigger;
            }
        }
        match rd.read_buf(&mut self.buf).await {
            Ok(0) | Err(_) => Err(Stop::Closed),
            Ok(_) => Ok(()),
        }
    }

    /// After a burst: the buffer is released if nothing is left in it, so an idle connection
    /// holds no buffer, least of all one grown for the largest request it sent.
    fn release(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    /// Whether a whole frame has been read and not yet taken.
    fn has_frame(&self) -> bool {
        let Some(prefix) = self.buf.get(..4) else { return false };
        let len = i32::from_be_bytes(prefix.try_into().expect("four bytes"));
        len >= 0 && self.buf.len() >= 4 + len as usize
    }
}

/// One client connection: read frames, answer in order, close on protocol violations. Between
/// bursts of requests it holds no buffer: the read buffer is taken when bytes arrive and the
/// write buffer when a burst starts, both released once the burst is answered and flushed.
pub(super) async fn connection(link: Link, shared: Arc<Shared>, protocol: crate::security::Protocol, listener: Option<Arc<str>>, internal_only: bool) {
    let Link { mut rd, wr: mut half, peer, local, principal } = link;
    let mut inbox = Inbox::new();
    if let Some(principal) = &principal {
        tracing::debug!("connection from {peer} is {principal}");
    }
    let reauth_ms = shared.broker().config().security.reauth_ms;
    let connection = next_connection_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut auth = Auth { session: protocol.is_sasl().then(|| Session::with_lifetime(reauth_ms)), enabled: shared.broker().config().security.sasl_mechanisms.clone(), internal_only, tls_principal: principal, listener, connection, shared_fetch: false };
    loop {
        inbox.expect_raw_token(auth.expects_raw_token());
        let Some(first) = next(&mut inbox, &mut rd, &shared, peer).await else { break };
        let mut wr = BufWriter::with_capacity(connection_write_buffer_bytes, half);
        // Boxed: an idle connection's task does not carry a burst's state (a request's decision,
        // park, wait or forward), only one that is answering does.
        let open = Box::pin(burst(&shared, &mut inbox, &mut rd, &mut wr, first, peer, local, &mut auth)).await;
        // The burst's answers go out before the connection waits again (or closes).
        if wr.flush().await.is_err() || !open {
            break;
        }
        half = wr.into_inner();
        inbox.release();
    }
    if auth.shared_fetch {
        let actions = shared.decide(|s| s.node.input(crate::node::Input::ConnectionClosed { connection }, super::now_ms())).await;
        shared.perform(actions).await;
        shared.changed();
    }
}

/// An accepted connection, past its TLS handshake if it has one.
pub(super) struct Link {
    pub rd: send::ReadHalf,
    pub wr: send::WriteHalf,
    pub peer: SocketAddr,
    pub local: IpAddr,
    /// Who a TLS client's certificate says it is (`User:CN=…`), None without TLS.
    pub principal: Option<String>,
}

impl Link {
    /// A TCP connection's link.
    pub(super) fn tcp(stream: TcpStream, peer: SocketAddr) -> Link {
        let local = stream.local_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let (rd, wr) = send::split(stream);
        Link { rd, wr, peer, local, principal: None }
    }
}

/// A connection's authentication: its SASL session on a SASL listener (None on a PLAINTEXT
/// one) and the listener's mechanisms.
struct Auth {
    session: Option<Session>,
    enabled: Vec<Mech>,
    /// A PLAINTEXT controller listener beside a SASL one: only the node's own links' APIs.
    internal_only: bool,
    /// Who a TLS client's certificate says it is.
    tls_principal: Option<String>,
    /// The client listener's name (None on the CONTROLLER listener).
    listener: Option<Arc<str>>,
    /// This connection's id, and whether it carried a ShareFetch (a share session may be on it).
    connection: u64,
    shared_fetch: bool,
}

impl Auth {
    /// Whether the next frame is a raw SASL token (after a v0 handshake).
    fn expects_raw_token(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.expects_raw_token())
    }

    /// Who sends the connection's requests: its SASL user, else its certificate's subject,
    /// else nobody in particular (Kafka's precedence).
    fn caller(&self, host: IpAddr) -> crate::security::acl::Caller {
        let principal = match (self.session.as_ref().and_then(|s| s.user()), &self.tls_principal) {
            (Some(user), _) => format!("User:{user}"),
            (None, Some(tls)) => tls.clone(),
            (None, None) => crate::security::acl::anonymous.to_string(),
        };
        // The PLAINTEXT controller listener beside a secured one carries only this node's own
        // links (`sasl.rs` refuses anything else there): the node itself.
        crate::security::acl::Caller { principal, host, internal: self.internal_only, listener: self.listener.clone(), connection: Some(self.connection) }
    }
}

/// The next frame and its turn, or None when the connection is to close (logged unless the
/// client closed it).
async fn next(inbox: &mut Inbox, rd: &mut send::ReadHalf, shared: &Shared, peer: SocketAddr) -> Option<(Bytes, OwnedSemaphorePermit)> {
    match inbox.next_frame(rd, &shared.request_turns).await {
        Ok(frame) => Some(frame),
        Err(Stop::Closed) => None,
        Err(Stop::Idle) => {
            tracing::info!("closing connection from {peer}: idle for connections.max.idle.ms={connection_idle_ms_max}");
            None
        }
        Err(Stop::Violation(reason)) => {
            tracing::warn!("closing connection from {peer}: {reason}");
            None
        }
    }
}

/// Answers `frame` and every whole frame read with it (a pipelining client's burst), in order,
/// into `wr`, flushed only where an answer must not wait. False when the connection must close.
#[allow(clippy::too_many_arguments)]
async fn burst(shared: &Shared, inbox: &mut Inbox, rd: &mut send::ReadHalf, wr: &mut BufWriter<send::WriteHalf>, first: (Bytes, OwnedSemaphorePermit), peer: SocketAddr, local: IpAddr, auth: &mut Auth) -> bool {
    let (mut frame, mut turn) = first;
    loop {
        let key = frame.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
        auth.shared_fetch |= key == Some(ApiKey::ShareFetch as i16);
        // A fetch may park for max_wait_ms: answers to earlier pipelined requests go out first.
        if key == Some(ApiKey::Fetch as i16) && wr.flush().await.is_err() {
            return false;
        }
        // So may a produce (acks=all waits for the ISR): a pipelining producer hears about its
        // earlier batches as each is answered, not when the last one is. Only when an answer
        // waits: an empty flush would still send a (simulated) packet.
        if key == Some(ApiKey::Produce as i16) && !wr.buffer().is_empty() && wr.flush().await.is_err() {
            return false;
        }
        // Only what a quota could apply to is looked at, and only when one is set.
        let counted = {
            let throttles = shared.node.throttles();
            // A raw SASL token (after a v0 handshake) is no Kafka request: nothing to count.
            (throttles.any() && !auth.expects_raw_token()).then(|| super::throttling::counted(&frame, throttles.any_of(crate::throttle::Kind::Request))).flatten()
        };
        let caller = auth.caller(peer.ip());
        let mut clock = super::metrics::Clock::start();
        // Kafka 3.9's removed versions, bridged to the ones the node reads (`protocol::legacy`).
        let mut legacy = None;
        let mut outcome = match sasl::intercept(shared, &mut auth.session, &auth.enabled, auth.internal_only, &frame) {
            Sasl::Pass => match crate::protocol::legacy::up(&frame, shared.legacy_api_versions) {
                Ok(None) => answer(shared, &frame, &caller, turn, &mut clock).await,
                Ok(Some((bridged, bridge))) => {
                    legacy = Some(bridge);
                    answer(shared, &bridged, &caller, turn, &mut clock).await
                }
                Err(reason) => Outcome::Close(reason),
            },
            Sasl::Answer(bytes) => Outcome::Relay(bytes),
            Sasl::Close(why) => Outcome::Close(why),
            Sasl::AnswerThenClose(bytes, why) => {
                // Answered, then closed: connection() flushes the answer before it closes.
                tracing::warn!("closing connection from {peer}: {why}");
                crate::netfault::before_send(local, peer.ip()).await;
                let _ = wr.write_all(&bytes).await;
                return false;
            }
        };
        drop(frame);
        let mute_ms = match counted {
            Some(c) if !caller.internal => super::throttling::apply(shared, &c, &caller.principal, clock.local(), &mut outcome),
            _ => 0,
        };
        if let Some(bridge) = &legacy {
            outcome = super::answer::bridged_back(bridge, outcome);
        }
        let mut phases = clock.phases();
        let sending = tokio::time::Instant::now();
        match outcome {
            Outcome::Reply(response) => {
                let encoded = response.encode();
                drop(response); // not held across the awaits below: the future stays small
                let bytes = match encoded {
                    Ok(bytes) => bytes,
                    Err(reason) => {
                        tracing::warn!("closing connection from {peer}: {reason}");
                        return false;
                    }
                };
                crate::netfault::before_send(local, peer.ip()).await;
                if wr.write_all(&bytes).await.is_err() {
                    return false;
                }
            }
            Outcome::Relay(bytes) => {
                crate::netfault::before_send(local, peer.ip()).await;
                if wr.write_all(&bytes).await.is_err() {
                    return false;
                }
            }
            Outcome::Frame(frame) => {
                crate::netfault::before_send(local, peer.ip()).await;
                if let Err(e) = send::frame(wr, &frame).await {
                    tracing::warn!("closing connection from {peer}: fetch response cut short: {e}");
                    return false;
                }
            }
            Outcome::NoReply => {}
            Outcome::Close(reason) => {
                tracing::warn!("closing connection from {peer}: {reason}");
                return false;
            }
            Outcome::Park { .. } | Outcome::Wait(_) | Outcome::Forward { .. } | Outcome::Verify { .. } | Outcome::ShareRead { .. } => unreachable!("answer() never returns Park, Wait, Forward, Verify or ShareRead"),
        }
        phases[3] = sending.elapsed().as_secs_f64();
        if mute_ms > 0 {
            // Throttled (a client quota, KIP-219): the answer goes now, and nothing more is
            // read from this client until its throttle time has passed.
            if wr.flush().await.is_err() {
                return false;
            }
            phases[3] = sending.elapsed().as_secs_f64();
            tokio::time::sleep(std::time::Duration::from_millis(mute_ms)).await;
            phases[4] = mute_ms as f64 / 1000.0;
        }
        if let Some(key) = key {
            shared.metrics.request(key, phases);
        }
        // Requests already read whole are answered before the flush, so a burst costs one
        // write; a part of the next one is not waited for with answers unsent.
        if !inbox.has_frame() {
            return true;
        }
        inbox.expect_raw_token(auth.expects_raw_token());
        match next(inbox, rd, shared, peer).await {
            Some(next) => (frame, turn) = next,
            None => return false,
        }
    }
}

/// The read buffer over a real socket: frames whole and in order whatever their size, a large
/// one's buffer never past its frame and released after, a declared size never reserved.
#[cfg(all(test, not(madsim)))]
mod tests {
    use super::*;

    /// A connected pair: the client's stream and the server's reading half.
    async fn pair() -> (TcpStream, send::ReadHalf) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (rd, wr) = send::split(server);
        std::mem::forget(wr); // keep the connection open for the test's life
        (client, rd)
    }

    fn turns() -> Arc<Semaphore> {
        Arc::new(Semaphore::new(1))
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    #[tokio::test]
    async fn frames_of_every_size_come_whole_and_a_large_ones_buffer_goes_after() {
        let (mut client, mut rd) = pair().await;
        let large: Vec<u8> = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
        let small = b"a small request body".to_vec();
        let mut burst = frame(&small);
        burst.extend(frame(&large));
        burst.extend(frame(&small));
        let writer = tokio::spawn(async move {
            client.write_all(&burst).await.unwrap();
            client
        });
        let mut inbox = Inbox::new();
        assert_eq!(inbox.next_frame(&mut rd, &turns()).await.ok().unwrap().0, small);
        let got = inbox.next_frame(&mut rd, &turns()).await.ok().unwrap().0;
        assert!(got == large, "the large frame whole and in order");
        drop(got);
        assert!(inbox.buf.capacity() <= small.len() + 4, "no room kept past the frames read");
        assert!(inbox.has_frame() || inbox.buf.len() < small.len() + 4);
        assert_eq!(inbox.next_frame(&mut rd, &turns()).await.ok().unwrap().0, small);
        assert!(!inbox.has_frame());
        inbox.release();
        assert_eq!(inbox.buf.capacity(), 0, "an idle connection holds no read buffer");
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn a_declared_size_is_not_reserved_before_its_bytes_arrive() {
        let (mut client, mut rd) = pair().await;
        let mut start = ((100 << 20) as i32).to_be_bytes().to_vec();
        start.extend_from_slice(&[7u8; 10]);
        client.write_all(&start).await.unwrap();
        let mut inbox = Inbox::new();
        let waited = tokio::time::timeout(Duration::from_millis(200), inbox.next_frame(&mut rd, &turns())).await;
        assert!(waited.is_err(), "the frame cannot be complete");
        assert_eq!(inbox.buf.len(), 14);
        assert!(inbox.buf.capacity() <= 2 * connection_read_buffer_bytes, "{} bytes reserved for 14 received", inbox.buf.capacity());
        // The frame's end is what a grown buffer stops at.
        let body_left = (100 << 20) - 10;
        let writer = tokio::spawn(async move {
            client.write_all(&vec![7u8; body_left]).await.unwrap();
            client
        });
        let got = inbox.next_frame(&mut rd, &turns()).await.ok().unwrap().0;
        assert_eq!(got.len(), 100 << 20);
        drop(got);
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn a_part_of_the_next_request_is_not_a_frame() {
        let (mut client, mut rd) = pair().await;
        let mut bytes = frame(b"first request");
        bytes.extend_from_slice(&frame(b"second request")[..9]);
        client.write_all(&bytes).await.unwrap();
        let mut inbox = Inbox::new();
        assert_eq!(inbox.next_frame(&mut rd, &turns()).await.ok().unwrap().0, &b"first request"[..]);
        // The rest may arrive in the same read or the next; either way it is not whole.
        assert!(!inbox.has_frame(), "a partial frame is no reason to hold answers back");
        inbox.release();
        assert!(!inbox.buf.is_empty(), "a partial frame's bytes are kept");
    }
}
