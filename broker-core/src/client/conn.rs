//! One connection to a broker: encode a request with its header and size prefix, write it,
//! read the response frame, decode it. One request in flight at a time, or a group of them
//! pipelined ([`Conn::send_all`]) with their answers read in order. Over TCP, or over TLS
//! ([`Conn::connect_tls`]) to a broker's SSL or SASL_SSL listener. An answer with a
//! `throttle_time_ms` (a client quota) holds the connection's next request back that long, the
//! client's side of KIP-219.

use super::ClientError;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The longest throttle the client waits out: a broker's whole quota window
/// (`throttle::throttle_ms_max`); a larger `throttle_time_ms` is a broker's mistake.
pub const throttle_wait_ms_max: u64 = crate::throttle::throttle_ms_max;

/// The largest response the client accepts (a broker answering more is misbehaving).
pub const response_bytes_max: usize = 128 * 1024 * 1024;

pub struct Conn {
    addr: SocketAddr,
    local: std::net::IpAddr,
    rd: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    wr: Box<dyn AsyncWrite + Send + Unpin>,
    next_correlation_id: i32,
    client_id: String,
    timeout: Duration,
    /// Until when the broker asked this connection to send nothing (a throttled answer).
    quiet_until: Option<tokio::time::Instant>,
}

impl Conn {
    pub async fn connect(addr: SocketAddr, client_id: &str, timeout: Duration) -> Result<Conn, ClientError> {
        Conn::open(addr, client_id, timeout, None).await
    }

    /// [`Conn::connect`] over TLS: the broker's certificate must be vouched for by the
    /// connector's trust roots and valid for `host` (the name the broker was addressed by),
    /// or for `addr`'s IP address without one (subjectAltNames).
    pub async fn connect_tls(addr: SocketAddr, host: Option<&str>, client_id: &str, timeout: Duration, tls: &tokio_rustls::TlsConnector) -> Result<Conn, ClientError> {
        Conn::open(addr, client_id, timeout, Some((tls, host))).await
    }

    async fn open(addr: SocketAddr, client_id: &str, timeout: Duration, tls: Option<(&tokio_rustls::TlsConnector, Option<&str>)>) -> Result<Conn, ClientError> {
        let io = |reason: String| ClientError::Io { addr: addr.to_string(), reason };
        let timed_out = |_| ClientError::Timeout(timeout.as_millis() as u64);
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr)).await.map_err(timed_out)?.map_err(|e| io(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().map(|a| a.ip()).unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let (rd, wr): (Box<dyn AsyncRead + Send + Unpin>, Box<dyn AsyncWrite + Send + Unpin>) = match tls {
            None => {
                let (rd, wr) = tokio::io::split(stream);
                (Box::new(rd), Box::new(wr))
            }
            Some((connector, host)) => {
                let name = match host {
                    None => rustls::pki_types::ServerName::IpAddress(addr.ip().into()),
                    Some(host) => rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| io(format!("TLS: {host:?} is not a host name: {e}")))?,
                };
                let stream = tokio::time::timeout(timeout, connector.connect(name, stream)).await.map_err(timed_out)?.map_err(|e| io(format!("TLS handshake: {e}")))?;
                let (rd, wr) = tokio::io::split(stream);
                (Box::new(rd), Box::new(wr))
            }
        };
        Ok(Conn { addr, local, rd: BufReader::new(rd), wr, next_correlation_id: 0, client_id: client_id.to_string(), timeout, quiet_until: None })
    }

    /// Authenticates this connection on a SASL listener as `login` (SaslHandshake v1, then
    /// SCRAM's two rounds of SaslAuthenticate), checking the server's signature too. `cnonce`
    /// is fresh printable random text from the caller.
    pub async fn authenticate(&mut self, login: &crate::security::SaslLogin, cnonce: &str) -> Result<(), ClientError> {
        use crate::security::scram::ClientExchange;
        use kafka_protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
        use kafka_protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
        let refused = |e: crate::security::scram::ScramError| ClientError::Protocol(format!("SASL {}: {e}", login.mechanism.name()));
        let handshake = self.send(&SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(login.mechanism.name()))).await?;
        if handshake.error_code != 0 {
            return Err(ClientError::kafka(handshake.error_code, format!("SaslHandshake {}", login.mechanism.name())));
        }
        let (mut exchange, first) = ClientExchange::first(login.mechanism, &login.user, &login.password, cnonce);
        let round = |bytes: Vec<u8>| SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
        let answer = self.send(&round(first)).await?;
        if answer.error_code != 0 {
            return Err(ClientError::kafka(answer.error_code, answer.error_message.map_or(String::new(), |m| m.to_string())));
        }
        let last = exchange.last(&answer.auth_bytes).map_err(refused)?;
        let answer = self.send(&round(last)).await?;
        if answer.error_code != 0 {
            return Err(ClientError::kafka(answer.error_code, answer.error_message.map_or(String::new(), |m| m.to_string())));
        }
        exchange.verify(&answer.auth_bytes).map_err(refused)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn io(&self, e: impl std::fmt::Display) -> ClientError {
        ClientError::Io { addr: self.addr.to_string(), reason: e.to_string() }
    }

    /// The frame of `req` at `version` (None: the version this crate sends of it), with the
    /// next correlation id.
    fn encode<R: Request>(&mut self, req: &R, version: Option<i16>) -> Result<(i32, i16, Bytes), ClientError> {
        let id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let version = match version {
            Some(v) => v,
            None => sent_version::<R>()?,
        };
        Ok((id, version, request_frame_at(req, version, id, &self.client_id)?))
    }

    /// Waits out the last answer's throttle, before a request's own timeout starts. Cancel-safe:
    /// the throttle is forgotten only once waited out.
    async fn quiet(&mut self) {
        if let Some(until) = self.quiet_until {
            tokio::time::sleep_until(until).await;
            self.quiet_until = None;
        }
    }

    /// Notes an answer's throttle: the next request waits that long (at most
    /// `throttle_wait_ms_max`, whatever a broker asks).
    fn heed<T: 'static>(&mut self, answer: &T) {
        let ms = throttle_ms(answer);
        if ms > 0 {
            let ms = (ms as u64).min(throttle_wait_ms_max);
            self.quiet_until = Some(tokio::time::Instant::now() + Duration::from_millis(ms));
        }
    }

    async fn write(&mut self, frame: &[u8]) -> Result<(), ClientError> {
        if crate::netfault::hold(self.local, self.addr, frame) {
            return Ok(());
        }
        crate::netfault::before_send(self.local, self.addr.ip()).await;
        self.wr.write_all(frame).await.map_err(|e| self.io(e))?;
        self.wr.flush().await.map_err(|e| self.io(e))
    }

    /// Writes one whole frame that gets no answer (a Raft message between voters), within the
    /// connection's timeout.
    pub async fn send_frame(&mut self, frame: &[u8]) -> Result<(), ClientError> {
        self.quiet().await;
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.write(frame)).await.map_err(|_| ClientError::Timeout(timeout.as_millis() as u64))?
    }

    /// Sends `req` and waits for its response (within the connection's timeout).
    pub async fn send<R: Request<Response: 'static>>(&mut self, req: &R) -> Result<R::Response, ClientError> {
        let timeout = self.timeout;
        self.send_within(req, timeout).await
    }

    /// [`Conn::send`] with its own timeout: a JoinGroup waits as long as a rebalance.
    pub async fn send_within<R: Request<Response: 'static>>(&mut self, req: &R, timeout: Duration) -> Result<R::Response, ClientError> {
        self.send_at(req, None, timeout).await
    }

    /// [`Conn::send_within`] at `version` (None: the version this crate sends): a broker's own
    /// request where the client's version differs (AddPartitionsToTxn v4, a leader's
    /// verification).
    pub async fn send_at<R: Request<Response: 'static>>(&mut self, req: &R, version: Option<i16>, timeout: Duration) -> Result<R::Response, ClientError> {
        self.quiet().await;
        let (id, version, frame) = self.encode(req, version)?;
        tokio::time::timeout(timeout, async {
            self.write(&frame).await?;
            self.read_answer::<R>(id, version).await
        })
        .await
        .map_err(|_| ClientError::Timeout(timeout.as_millis() as u64))?
    }

    /// Sends every request of `reqs` at once, pipelined (Kafka answers a connection's requests
    /// in the order they came), and reads their answers in order, all within the connection's
    /// timeout from the write. One answer per request; an answer that cannot be read (timeout,
    /// IO, garbage) fails it and every later one, and leaves the connection unusable.
    pub async fn send_all<R: Request<Response: 'static>>(&mut self, reqs: &[R]) -> Vec<Result<R::Response, ClientError>> {
        let mut frames = Vec::new();
        let mut sent = Vec::with_capacity(reqs.len());
        for req in reqs {
            match self.encode(req, None) {
                Ok((id, version, frame)) => {
                    sent.push((id, version));
                    frames.extend_from_slice(&frame);
                }
                Err(e) => return reqs.iter().map(|_| Err(e.clone())).collect(),
            }
        }
        self.quiet().await;
        let timeout = self.timeout;
        let mut answers = Vec::with_capacity(reqs.len());
        let failed = match tokio::time::timeout(timeout, self.write_then_read::<R>(&frames, &sent, &mut answers)).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(ClientError::Timeout(timeout.as_millis() as u64)),
        };
        let mut out: Vec<Result<R::Response, ClientError>> = answers.into_iter().map(Ok).collect();
        if let Some(e) = failed {
            out.resize_with(reqs.len(), || Err(e.clone()));
        }
        out
    }

    /// Writes `frames` and reads the answer to each of `sent` into `answers`, stopping at the
    /// first that cannot be read.
    async fn write_then_read<R: Request<Response: 'static>>(&mut self, frames: &[u8], sent: &[(i32, i16)], answers: &mut Vec<R::Response>) -> Result<(), ClientError> {
        self.write(frames).await?;
        for &(id, version) in sent {
            answers.push(self.read_answer::<R>(id, version).await?);
        }
        Ok(())
    }

    /// Reads one response frame and decodes it as the answer to request `id`.
    async fn read_answer<R: Request<Response: 'static>>(&mut self, id: i32, version: i16) -> Result<R::Response, ClientError> {
        let mut prefix = [0u8; 4];
        self.rd.read_exact(&mut prefix).await.map_err(|e| self.io(e))?;
        let len = i32::from_be_bytes(prefix);
        if len < 0 || len as usize > response_bytes_max {
            return Err(ClientError::Protocol(format!("response size {len}")));
        }
        let mut body = vec![0u8; len as usize];
        self.rd.read_exact(&mut body).await.map_err(|e| self.io(e))?;
        let answer = answer::<R>(Bytes::from(body), id, version)?;
        self.heed(&answer);
        Ok(answer)
    }

    /// Sends a request that gets no response (produce with acks=0).
    pub async fn send_only<R: Request<Response: 'static>>(&mut self, req: &R) -> Result<(), ClientError> {
        self.quiet().await;
        let (_, _, frame) = self.encode(req, None)?;
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.write(&frame)).await.map_err(|_| ClientError::Timeout(timeout.as_millis() as u64))?
    }
}

/// The `throttle_time_ms` of an answer that has one (0 for any other).
fn throttle_ms<T: 'static>(answer: &T) -> i32 {
    use kafka_protocol::messages::*;
    let any = answer as &dyn std::any::Any;
    macro_rules! first_of {
        ($(($api:ident, $ty:ident)),* $(,)?) => {
            $(if let Some(a) = any.downcast_ref::<$ty>() { return a.throttle_time_ms; })*
        };
    }
    crate::kafka::with_throttled_responses!(first_of);
    0
}

/// The frame of `req` (size prefix, header, body) at the version this crate sends of it
/// ([`crate::kafka::SENT`]), and that version. Correlation id 0 is as good as any for a
/// caller that patches its own in: it sits at bytes 8..12 of the frame.
pub fn request_frame<R: Request>(req: &R, correlation_id: i32, client_id: &str) -> Result<(i16, Bytes), ClientError> {
    let version = sent_version::<R>()?;
    Ok((version, request_frame_at(req, version, correlation_id, client_id)?))
}

/// The version this crate sends of `R` ([`crate::kafka::SENT`]).
fn sent_version<R: Request>() -> Result<i16, ClientError> {
    crate::kafka::sent(R::KEY).ok_or_else(|| ClientError::Protocol(format!("no version of API key {} is sent", R::KEY)))
}

/// The frame of `req` at `version`.
fn request_frame_at<R: Request>(req: &R, version: i16, correlation_id: i32, client_id: &str) -> Result<Bytes, ClientError> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let hv = R::header_version(version);
    let size = header.compute_size(hv).and_then(|h| Ok(h + req.compute_size(version)?)).map_err(|e| ClientError::Protocol(e.to_string()))?;
    let mut out = BytesMut::with_capacity(size + 4);
    out.put_i32(size as i32);
    header.encode(&mut out, hv).map_err(|e| ClientError::Protocol(e.to_string()))?;
    req.encode(&mut out, version).map_err(|e| ClientError::Protocol(e.to_string()))?;
    Ok(out.freeze())
}

/// Decodes an answer frame's `body` (after its size prefix) as the answer to request `id`, sent
/// at `version`.
pub fn answer<R: Request>(mut body: Bytes, id: i32, version: i16) -> Result<R::Response, ClientError> {
    let header = ResponseHeader::decode(&mut body, <R::Response as HeaderVersion>::header_version(version)).map_err(|e| ClientError::Protocol(e.to_string()))?;
    if header.correlation_id != id {
        return Err(ClientError::Protocol(format!("correlation id {} answers request {id}", header.correlation_id)));
    }
    R::Response::decode(&mut body, version).map_err(|e| ClientError::Protocol(e.to_string()))
}
