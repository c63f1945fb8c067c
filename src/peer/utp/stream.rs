//! A uTP connection as a byte stream ([`UtpStream`]: `AsyncRead` + `AsyncWrite`), so the
//! peer wire protocol and MSE run over it as over TCP.
//!
//! Reads copy from the connection's receive buffer straight into the caller's buffer
//! (uninitialised memory is fine); writes copy into its send buffer and send what the
//! windows allow at once. Both take the connection's lock briefly and never across an
//! await. A stream splits into two handles on the same connection (the peer connection's
//! reader and writer); the last one dropped closes the connection (our FIN).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::conn::State;
use super::socket::{Cell, Inner};
use crate::lock::MutexExt;

/// One uTP connection's byte stream (or one of its halves after [`UtpStream::split`]).
#[derive(Debug)]
pub struct UtpStream {
    inner: Arc<Inner>,
    cell: Arc<Cell>,
}

impl UtpStream {
    pub(super) fn new(inner: Arc<Inner>, cell: Arc<Cell>) -> UtpStream {
        cell.handles.fetch_add(1, Ordering::AcqRel);
        UtpStream { inner, cell }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.cell.addr
    }

    /// Two handles on the connection: one to read, one to write (either may do both).
    pub fn split(self) -> (UtpStream, UtpStream) {
        let other = UtpStream::new(self.inner.clone(), self.cell.clone());
        (self, other)
    }

    /// LEDBAT's congestion window and the smoothed round-trip time, µs (diagnostics).
    pub fn congestion(&self) -> (u32, Option<u64>) {
        let s = self.cell.slot.locked();
        (s.conn.cwnd(), s.conn.rtt_us())
    }
}

impl Drop for UtpStream {
    fn drop(&mut self) {
        self.inner.release(&self.cell);
    }
}

fn closed_error(kind: Option<io::ErrorKind>) -> io::Error {
    io::Error::from(kind.unwrap_or(io::ErrorKind::BrokenPipe))
}

impl AsyncRead for UtpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut s = this.cell.slot.locked();
        if s.conn.readable() > 0 {
            let now = this.inner.now_us();
            let mut out = this.inner.out(this.cell.addr);
            let (a, b) = s.conn.recv_slices();
            let na = a.len().min(buf.remaining());
            buf.put_slice(&a[..na]);
            let nb = b.len().min(buf.remaining());
            buf.put_slice(&b[..nb]);
            s.conn.consume(na + nb, now, &mut out);
            let d = s.conn.deadline();
            drop(s);
            this.inner.schedule(d);
            return Poll::Ready(Ok(()));
        }
        if s.conn.at_eof() {
            return Poll::Ready(Ok(()));
        }
        if s.conn.state() == State::Closed {
            return Poll::Ready(Err(closed_error(s.conn.error())));
        }
        s.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncWrite for UtpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut s = this.cell.slot.locked();
        if s.conn.state() == State::Closed {
            return Poll::Ready(Err(closed_error(s.conn.error())));
        }
        if s.conn.writable() == 0 {
            s.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let now = this.inner.now_us();
        let n = s.conn.write(data, now, &mut this.inner.out(this.cell.addr));
        let d = s.conn.deadline();
        drop(s);
        this.inner.schedule(d);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut s = this.cell.slot.locked();
        let now = this.inner.now_us();
        s.conn.push(now, &mut this.inner.out(this.cell.addr));
        let d = s.conn.deadline();
        drop(s);
        this.inner.schedule(d);
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut s = this.cell.slot.locked();
        let now = this.inner.now_us();
        s.conn
            .shutdown_write(now, &mut this.inner.out(this.cell.addr));
        let d = s.conn.deadline();
        drop(s);
        this.inner.schedule(d);
        Poll::Ready(Ok(()))
    }
}
