//! A byte stream after an MSE/PE handshake ([`crate::peer::mse`]): [`MseStream`] reads
//! what the handshake already received first, then decrypts what it reads in place in the
//! caller's buffer (no copy); it encrypts what it is given into its one write buffer
//! (at most [`WRITE_BUF`] bytes, the only copy) and writes that out. With plaintext
//! selected it only hands over what the handshake received, then passes reads and writes
//! through. It is generic over the stream (TCP today, uTP later) and splits like it
//! ([`Transport`]).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::stream::Transport;
use crate::metainfo::InfoHash;
use crate::peer::mse::{Cipher, Established, Method};

/// Most encrypted bytes waiting for the socket, per connection: a write is taken while
/// there is room, so a peer that stops reading holds this much at most (the upload pump's
/// stall detection sees the next write wait).
pub const WRITE_BUF: usize = 64 * 1024;

/// The reading side's state: what the handshake received, and the peer's keystream.
struct Decrypt {
    cipher: Option<Cipher>,
    /// Plaintext received during the handshake, handed out first.
    prefix: Vec<u8>,
    /// How much of `prefix` was handed out.
    at: usize,
}

impl Decrypt {
    fn poll_read<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.at);
            buf.put_slice(&self.prefix[self.at..self.at + n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(io).poll_read(cx, buf))?;
        if let Some(c) = &mut self.cipher {
            // in place, in the caller's buffer: the bytes just read
            c.apply(&mut buf.filled_mut()[before..]);
        }
        Poll::Ready(Ok(()))
    }
}

/// The writing side's state: our keystream and the encrypted bytes not yet written.
struct Encrypt {
    cipher: Option<Cipher>,
    /// Encrypted bytes; `buf[pos..]` not yet taken by the socket.
    buf: Vec<u8>,
    pos: usize,
}

impl Encrypt {
    /// Write out what is pending, as far as the socket takes it.
    fn poll_drain<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        while self.pos < self.buf.len() {
            let n = ready!(Pin::new(&mut *io).poll_write(cx, &self.buf[self.pos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pos += n;
        }
        self.buf.clear();
        self.pos = 0;
        Poll::Ready(Ok(()))
    }

    fn poll_write_vectored<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.cipher.is_none() {
            return Pin::new(io).poll_write_vectored(cx, bufs);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        if self.pos < self.buf.len() {
            if let Poll::Ready(Err(e)) = self.poll_drain(io, cx) {
                return Poll::Ready(Err(e));
            }
            if self.pos > 0 && self.pos < self.buf.len() {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
        }
        let room = WRITE_BUF.saturating_sub(self.buf.len());
        if room == 0 {
            // the drain above is waiting for the socket (its waker is registered)
            return Poll::Pending;
        }
        let start = self.buf.len();
        let mut left = room.min(total);
        for b in bufs {
            if left == 0 {
                break;
            }
            let n = b.len().min(left);
            self.buf.extend_from_slice(&b[..n]);
            left -= n;
        }
        let taken = self.buf.len() - start;
        if let Some(c) = &mut self.cipher {
            c.apply(&mut self.buf[start..]);
        }
        // taken: they go out with this drain or a later one (a flush waits for them)
        if let Poll::Ready(Err(e)) = self.poll_drain(io, cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(taken))
    }

    fn poll_flush<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(io, cx))?;
        Pin::new(io).poll_flush(cx)
    }

    fn poll_shutdown<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(io, cx))?;
        Pin::new(io).poll_shutdown(cx)
    }
}

/// A stream after a finished MSE handshake: RC4 both ways, or plaintext after an
/// obfuscated handshake ([`MseStream::method`]).
pub struct MseStream<S> {
    io: S,
    method: Method,
    info_hash: InfoHash,
    rd: Decrypt,
    wr: Encrypt,
}

impl<S> MseStream<S> {
    /// `io` going on as the handshake `est` says (its keystreams, what it received).
    pub fn new(io: S, est: Established) -> MseStream<S> {
        MseStream {
            io,
            method: est.method,
            info_hash: est.info_hash,
            rd: Decrypt {
                cipher: est.recv,
                prefix: est.received,
                at: 0,
            },
            wr: Encrypt {
                cipher: est.send,
                buf: Vec::new(),
                pos: 0,
            },
        }
    }

    /// The method the handshake selected.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The torrent the handshake was for (`SKEY`).
    pub fn info_hash(&self) -> InfoHash {
        self.info_hash
    }

    /// The stream underneath (socket options).
    pub fn get_ref(&self) -> &S {
        &self.io
    }
}

impl<S> std::fmt::Debug for MseStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MseStream")
            .field("method", &self.method)
            .finish()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for MseStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.rd.poll_read(&mut this.io, cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for MseStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.wr
            .poll_write_vectored(&mut this.io, cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.wr.poll_write_vectored(&mut this.io, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.wr.poll_flush(&mut this.io, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.wr.poll_shutdown(&mut this.io, cx)
    }
}

/// The read half of a split [`MseStream`].
pub struct MseReader<R> {
    io: R,
    rd: Decrypt,
}

/// The write half of a split [`MseStream`].
pub struct MseWriter<W> {
    io: W,
    wr: Encrypt,
}

impl<R: AsyncRead + Unpin> AsyncRead for MseReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.rd.poll_read(&mut this.io, cx, buf)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for MseWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.wr
            .poll_write_vectored(&mut this.io, cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.wr.poll_write_vectored(&mut this.io, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.wr.poll_flush(&mut this.io, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.wr.poll_shutdown(&mut this.io, cx)
    }
}

impl<T: Transport> Transport for MseStream<T> {
    type Reader = MseReader<T::Reader>;
    type Writer = MseWriter<T::Writer>;
    fn split(self) -> (Self::Reader, Self::Writer) {
        let (r, w) = self.io.split();
        (
            MseReader { io: r, rd: self.rd },
            MseWriter { io: w, wr: self.wr },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::mse::{MseHandshake, Policy, Step};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Two handshakes run to the end in memory: (initiator's, responder's).
    fn established(policy_b: u32) -> (Established, Established) {
        let ih = InfoHash([3; 20]);
        let mut find = |h: &[u8; 20]| (*h == crate::peer::mse::req2(&ih)).then_some(ih);
        let mut a = MseHandshake::initiator(ih, b"IA!", Policy::Prefer);
        let mut b = MseHandshake::responder_with(policy_b, [9; 20]);
        let m1 = a.take_output();
        assert!(matches!(b.feed(&m1, &mut find).unwrap(), Step::NeedMore));
        assert!(matches!(
            a.feed(&b.take_output(), &mut find).unwrap(),
            Step::NeedMore
        ));
        let Step::Done(eb) = b.feed(&a.take_output(), &mut find).unwrap() else {
            panic!()
        };
        let Step::Done(ea) = a.feed(&b.take_output(), &mut find).unwrap() else {
            panic!()
        };
        (ea, eb)
    }

    #[tokio::test]
    async fn rc4_streams_carry_megabytes_both_ways_and_nothing_plain_on_the_wire() {
        let (ea, eb) = established(crate::peer::mse::CRYPTO_RC4);
        // a tap between the two ends sees the raw bytes
        let (a_io, tap_a) = tokio::io::duplex(8 * 1024);
        let (tap_b, b_io) = tokio::io::duplex(8 * 1024);
        let (mut ta_r, mut ta_w) = tokio::io::split(tap_a);
        let (mut tb_r, mut tb_w) = tokio::io::split(tap_b);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s1 = seen.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let n = ta_r.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                s1.lock().unwrap().extend_from_slice(&buf[..n]);
                tb_w.write_all(&buf[..n]).await.unwrap();
            }
            tb_w.shutdown().await.unwrap();
        });
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut tb_r, &mut ta_w).await;
        });
        let a = MseStream::new(a_io, ea);
        let b = MseStream::new(b_io, eb);
        assert_eq!(a.method(), Method::Rc4);
        let (mut ar, mut aw) = a.split();
        let (mut br, mut bw) = b.split();
        let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let p2 = payload.clone();
        let writer = tokio::spawn(async move {
            // vectored writes of many slices, as the upload pump does
            let mut at = 0;
            while at < p2.len() {
                let parts: Vec<IoSlice<'_>> =
                    p2[at..].chunks(13).take(40).map(IoSlice::new).collect();
                let n = aw.write_vectored(&parts).await.unwrap();
                assert!(n > 0);
                at += n;
            }
            aw.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        // first the initial payload the responder already received, then the stream
        br.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(&got[..3], b"IA!");
        assert!(got[3..] == payload[..], "bytes arrive in order, decrypted");
        let wire = seen.lock().unwrap().clone();
        assert_eq!(wire.len(), payload.len());
        let same = wire.iter().zip(&payload).filter(|(w, p)| w == p).count();
        assert!(
            same < payload.len() / 100,
            "no plaintext on the wire ({same} bytes as sent)"
        );
        // and back
        bw.write_all(b"pong").await.unwrap();
        bw.flush().await.unwrap();
        let mut pong = [0u8; 4];
        ar.read_exact(&mut pong).await.unwrap();
        assert_eq!(&pong, b"pong");
    }

    #[tokio::test]
    async fn a_writer_whose_socket_stops_draining_holds_at_most_its_buffer() {
        let (ea, _eb) = established(crate::peer::mse::CRYPTO_RC4);
        let (a_io, _other_end_never_read) = tokio::io::duplex(1024);
        let mut a = MseStream::new(a_io, ea);
        let big = vec![1u8; 1 << 20];
        let mut taken = 0;
        while let Ok(n) = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            a.write(&big[taken..]),
        )
        .await
        {
            taken += n.unwrap();
        }
        assert!(taken <= WRITE_BUF + 1024, "took {taken}");
        assert!(a.wr.buf.len() <= WRITE_BUF);
    }

    #[tokio::test]
    async fn plaintext_after_the_handshake_passes_through() {
        let (ea, eb) = established(crate::peer::mse::CRYPTO_PLAINTEXT);
        let (a_io, b_io) = tokio::io::duplex(64 * 1024);
        let mut a = MseStream::new(a_io, ea);
        let mut b = MseStream::new(b_io, eb);
        assert_eq!(a.method(), Method::Plaintext);
        a.write_all(b"plain bytes").await.unwrap();
        a.flush().await.unwrap();
        let mut got = [0u8; 14];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"IA!plain bytes");
    }
}
