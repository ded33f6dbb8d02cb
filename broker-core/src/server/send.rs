//! A connection's two halves, and writing a response [`Frame`] to one: memory parts through the connection's buffer,
//! file regions (zero-copy fetch) with `sendfile` from the segment file straight to the socket
//! in the real build — the buffer flushed first, the socket non-blocking, each call bounded by
//! `sendfile_bytes_max` and retried on writable readiness, so a slow reader parks the task,
//! never a runtime worker. The simulated build (madsim's sockets have no descriptor) reads each
//! region into memory and writes it: the same bytes.
//!
//! Before every call the region is checked against its file (see `log::region`): a segment cut
//! since the fetch read it, or shorter than the region, fails the send, and the caller closes
//! the connection with the frame incomplete. Over TLS every region is copied: its bytes must go
//! through the cipher (kTLS, which would let `sendfile` serve TLS too, is not used: rustls does
//! not hand its keys to the kernel). Nothing here decides what to send.

use crate::protocol::fetch_frame::{Frame, Part};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncWriteExt, BufWriter};

/// A TCP connection's halves: owned in the real build (the socket is needed for `sendfile`
/// and readiness), tokio's generic halves under madsim (which has no `into_split`).
#[cfg(not(madsim))]
type TcpWrite = tokio::net::tcp::OwnedWriteHalf;
#[cfg(madsim)]
type TcpWrite = tokio::io::WriteHalf<tokio::net::TcpStream>;
#[cfg(not(madsim))]
type TcpRead = tokio::net::tcp::OwnedReadHalf;
#[cfg(madsim)]
type TcpRead = tokio::io::ReadHalf<tokio::net::TcpStream>;

/// A TLS connection, server side.
pub(super) type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// The reading half of a connection: a socket's, or TLS's over one.
pub(super) enum ReadHalf {
    Tcp(TcpRead),
    Tls(tokio::io::ReadHalf<TlsStream>),
}

/// The writing half of a connection.
pub(super) enum WriteHalf {
    Tcp(TcpWrite),
    Tls(tokio::io::WriteHalf<TlsStream>),
}

impl tokio::io::AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(h) => Pin::new(h).poll_read(cx, buf),
            ReadHalf::Tls(h) => Pin::new(h).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for WriteHalf {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Tcp(h) => Pin::new(h).poll_write(cx, buf),
            WriteHalf::Tls(h) => Pin::new(h).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(h) => Pin::new(h).poll_flush(cx),
            WriteHalf::Tls(h) => Pin::new(h).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(h) => Pin::new(h).poll_shutdown(cx),
            WriteHalf::Tls(h) => Pin::new(h).poll_shutdown(cx),
        }
    }
}

impl ReadHalf {
    /// Whether [`readable`] waits for bytes: a real socket's readiness. Not under madsim, whose
    /// halves have none, nor over TLS, where bytes on the socket are not yet a request's (a
    /// record may be partial, or a key update): there the read waits instead, its buffer taken.
    pub(super) fn has_readiness(&self) -> bool {
        cfg!(not(madsim)) && matches!(self, ReadHalf::Tcp(_))
    }
}

/// Waits until the connection has bytes to read (or an error or end to report), so that an idle
/// connection waits without a buffer; at once where [`ReadHalf::has_readiness`] is false.
#[cfg(not(madsim))]
pub(super) async fn readable(rd: &ReadHalf) {
    if let ReadHalf::Tcp(h) = rd {
        let _ = h.readable().await;
    }
}
#[cfg(madsim)]
pub(super) fn readable(_: &ReadHalf) -> std::future::Ready<()> {
    // Not an async fn: the future must not hold the (non-Sync) half across the await.
    std::future::ready(())
}

/// Splits a TCP connection into its halves.
#[cfg(not(madsim))]
pub(super) fn split(stream: tokio::net::TcpStream) -> (ReadHalf, WriteHalf) {
    let (rd, wr) = stream.into_split();
    (ReadHalf::Tcp(rd), WriteHalf::Tcp(wr))
}
#[cfg(madsim)]
pub(super) fn split(stream: tokio::net::TcpStream) -> (ReadHalf, WriteHalf) {
    let (rd, wr) = tokio::io::split(stream);
    (ReadHalf::Tcp(rd), WriteHalf::Tcp(wr))
}

/// Splits a TLS connection into its halves.
pub(super) fn split_tls(stream: TlsStream) -> (ReadHalf, WriteHalf) {
    let (rd, wr) = tokio::io::split(stream);
    (ReadHalf::Tls(rd), WriteHalf::Tls(wr))
}

/// Writes `frame` (the caller flushes when it is done answering, as for any reply).
pub(super) async fn frame(wr: &mut BufWriter<WriteHalf>, frame: &Frame) -> io::Result<()> {
    for part in &frame.parts {
        match part {
            Part::Memory(bytes) => wr.write_all(bytes).await?,
            Part::File(region) => send_region(wr, region).await?,
        }
    }
    Ok(())
}

/// The copying path: the region read into memory, checked, then written.
async fn copy_region(wr: &mut BufWriter<WriteHalf>, region: &crate::log::FileRegion) -> io::Result<()> {
    let mut buf = Vec::with_capacity(region.len as usize);
    region.read_into(&mut buf)?;
    wr.write_all(&buf).await
}

#[cfg(madsim)]
async fn send_region(wr: &mut BufWriter<WriteHalf>, region: &crate::log::FileRegion) -> io::Result<()> {
    copy_region(wr, region).await
}

#[cfg(not(madsim))]
async fn send_region(wr: &mut BufWriter<WriteHalf>, region: &crate::log::FileRegion) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Some(file) = region.raw_fd() else { return copy_region(wr, region).await };
    // Over TLS the bytes must be encrypted here: copied, never sent from the file.
    if matches!(wr.get_ref(), WriteHalf::Tls(_)) {
        return copy_region(wr, region).await;
    }
    // The header and framing before the region go first, in order.
    wr.flush().await?;
    let WriteHalf::Tcp(half) = wr.get_ref() else { unreachable!("a TLS half copies, above") };
    let socket: &tokio::net::TcpStream = half.as_ref();
    let out = socket.as_raw_fd();
    let (mut at, end) = (region.position as libc::off_t, region.end());
    while (at as u64) < end {
        region.check()?;
        let chunk = ((end - at as u64) as usize).min(crate::constants::sendfile_bytes_max);
        let sent = socket
            .async_io(tokio::io::Interest::WRITABLE, || {
                // `out` is the socket of the OwnedWriteHalf that `wr` borrows for this whole
                // function; `file` is the segment file held open by the `Arc<SegmentLog>` in
                // `region`, also borrowed throughout (a deleted or cut segment unlinks or
                // shrinks, never closes it); `chunk` is a byte count, no buffer of ours is touched.
                // SAFETY: both descriptors stay open for the call; `&mut at` is a live off_t of ours.
                match unsafe { libc::sendfile(out, file, &mut at, chunk) } {
                    n if n < 0 => Err(io::Error::last_os_error()),
                    n => Ok(n as usize),
                }
            })
            .await;
        match sent {
            Ok(0) => return Err(crate::log::RegionError::Short(at as u64, end).into()),
            Ok(_) => {}
            // A file system without sendfile support: nothing sent yet, so copy instead.
            Err(e) if at as u64 == region.position && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)) => {
                return copy_region(wr, region).await;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `sendfile` over a real socket: a region sent whole, and a region whose segment is cut while
/// the reader is slow stops with an error, the frame short and the bytes below the cut intact.
#[cfg(all(test, not(madsim)))]
mod tests {
    use super::*;
    use crate::log::{Log, LogConfig, Records};
    use crate::storage::FileDisk;
    use std::sync::Arc;
    use tokio::io::AsyncReadExt;

    /// A log of one segment holding 256 batches of 64 KiB (16 MiB), and its whole slice.
    fn log(dir: &std::path::Path) -> (Log, Frame, bytes::Bytes) {
        let (mut log, _) = Log::open(Arc::new(FileDisk::new()), dir, LogConfig::default(), 0).unwrap();
        for b in 0..256usize {
            log.append(&mut crate::log::batch::build(&[&vec![b as u8; 64 * 1024]], b as i64), 1, 0).unwrap();
        }
        let end = log.log_end_offset();
        let Records::File(regions) = log.slice(0, 32 << 20, end).unwrap() else { panic!("a file slice") };
        let bytes = log.read(0, 32 << 20, end).unwrap().bytes;
        let mut parts = vec![Part::Memory(bytes::Bytes::from_static(b"head"))];
        parts.extend(regions.into_iter().map(Part::File));
        (log, Frame { parts }, bytes)
    }

    /// A connection whose socket buffers are small (64 KiB each way), so a region of many MiB
    /// stays in flight until the client reads it.
    async fn pair() -> (tokio::net::TcpStream, BufWriter<WriteHalf>) {
        use std::os::fd::AsRawFd;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(64 * 1024).unwrap();
        let client = socket.connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let size: libc::c_int = 64 * 1024;
        // The descriptor is `server`'s, open while it is alive (this whole call); the
        // option value points to `size`, a live c_int, and the length given is a c_int's, so
        // the kernel reads exactly that local and writes nothing.
        // SAFETY: as the lines above say.
        let set = unsafe { libc::setsockopt(server.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, (&size as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
        assert_eq!(set, 0);
        let (_, wr) = split(server);
        (client, BufWriter::new(wr))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_region_goes_out_whole_after_the_memory_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (_log, response, bytes) = log(tmp.path());
        let (mut client, mut wr) = pair().await;
        let sender = tokio::spawn(async move {
            frame(&mut wr, &response).await.unwrap();
            wr.flush().await.unwrap();
        });
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        sender.await.unwrap();
        assert_eq!(&got[..4], b"head");
        assert!(got[4..] == bytes[..], "the region's bytes, in order");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cut_while_the_reader_lags_ends_the_send_short_with_the_bytes_below_the_cut_intact() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut log, response, bytes) = log(tmp.path());
        let (mut client, mut wr) = pair().await;
        let sender = tokio::spawn(async move { frame(&mut wr, &response).await });
        let mut got = vec![0u8; 64 * 1024];
        client.read_exact(&mut got).await.unwrap();
        // The sender is parked on a full socket: cut the segment to its first batch, then
        // append other batches past the region's old end.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        log.truncate_to(1, 0).unwrap();
        for b in 0..300usize {
            log.append(&mut crate::log::batch::build(&[&vec![!(b as u8); 64 * 1024]], b as i64), 2, 0).unwrap();
        }
        client.read_to_end(&mut got).await.unwrap();
        let sent = sender.await.unwrap();
        assert!(sent.is_err(), "the send must fail once the segment is cut");
        assert!(got.len() < 4 + bytes.len(), "the send stopped short: {} of {}", got.len(), 4 + bytes.len());
        // Bytes before the cut are the read's. Bytes past it that were queued in the socket may
        // not be: sendfile queues page-cache pages, and the page holding the cut point is zeroed
        // past it and refilled in place (see log::region). The frame never completes, so no
        // client parses them.
        let cut = crate::log::batch::read_header(&bytes).unwrap().size;
        let differ = got[4..].iter().zip(bytes.iter()).position(|(a, b)| a != b);
        assert!(differ.is_none_or(|at| at >= cut), "a byte before the cut differs: {differ:?}");
    }
}
