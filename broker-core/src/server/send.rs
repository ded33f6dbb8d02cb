//! Writing a response [`Frame`] to a connection: memory parts through the connection's buffer,
//! file regions (zero-copy fetch) with `sendfile` from the segment file straight to the socket
//! in the real build — the buffer flushed first, the socket non-blocking, each call bounded by
//! `sendfile_bytes_max` and retried on writable readiness, so a slow reader parks the task,
//! never a runtime worker. The simulated build (madsim's sockets have no descriptor) reads each
//! region into memory and writes it: the same bytes.
//!
//! Before every call the region is checked against its file (see `log::region`): a segment cut
//! since the fetch read it, or shorter than the region, fails the send, and the caller closes
//! the connection — bytes already sent are the ones the read bounded, never others. Nothing
//! here decides what to send.

use crate::protocol::fetch_frame::{Frame, Part};
use std::io;
use tokio::io::{AsyncWriteExt, BufWriter};

/// The writing half of a connection: owned in the real build (its socket is needed for
/// `sendfile`), tokio's generic half under madsim (which has no `into_split`).
#[cfg(not(madsim))]
pub(super) type WriteHalf = tokio::net::tcp::OwnedWriteHalf;
#[cfg(madsim)]
pub(super) type WriteHalf = tokio::io::WriteHalf<tokio::net::TcpStream>;

/// Splits a connection into its reading half and [`WriteHalf`].
#[cfg(not(madsim))]
pub(super) fn split(stream: tokio::net::TcpStream) -> (tokio::net::tcp::OwnedReadHalf, WriteHalf) {
    stream.into_split()
}
#[cfg(madsim)]
pub(super) fn split(stream: tokio::net::TcpStream) -> (tokio::io::ReadHalf<tokio::net::TcpStream>, WriteHalf) {
    tokio::io::split(stream)
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
    // The header and framing before the region go first, in order.
    wr.flush().await?;
    let socket: &tokio::net::TcpStream = wr.get_ref().as_ref();
    let out = socket.as_raw_fd();
    let (mut at, end) = (region.position as libc::off_t, region.end());
    while (at as u64) < end {
        region.check()?;
        let chunk = ((end - at as u64) as usize).min(crate::constants::sendfile_bytes_max);
        let sent = socket
            .async_io(tokio::io::Interest::WRITABLE, || {
                // SAFETY: both descriptors are open for the call (the socket borrowed from the
                // connection, the file held by the region's Arc); `at` is a valid off_t.
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
