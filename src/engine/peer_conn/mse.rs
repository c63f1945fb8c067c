//! The MSE/PE handshake on a live stream: [`initiate`] when we dial, [`respond`] when a
//! connection's first bytes are not a BitTorrent handshake. Both drive the plain state
//! machine [`crate::peer::mse::MseHandshake`] (reading no more than it asks for, so a
//! handshake holds at most [`crate::peer::mse::MAX_BUFFERED`] bytes of the peer's) and
//! give the stream back wrapped in an [`MseStream`]. Neither has a timer of its own: the
//! callers bound each with [`MSE_TIMEOUT`].

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::engine::link::encrypted::MseStream;
use crate::engine::link::message::PeerError;
use crate::metainfo::InfoHash;
use crate::peer::mse::{MAX_BUFFERED, MseHandshake, Policy, Step};

/// Time allowed for an MSE handshake, from the first byte sent or received to the last
/// one of message 4.
pub const MSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Dial side: run the handshake for `skey` over `stream`, sending `ia` (our BitTorrent
/// handshake) as the initial payload.
///
/// # Errors
/// [`PeerError::Mse`] when the peer is refused, [`PeerError::Io`] on a socket error or
/// the peer closing.
pub async fn initiate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    skey: InfoHash,
    ia: &[u8],
    policy: Policy,
) -> Result<MseStream<S>, PeerError> {
    let hs = MseHandshake::initiator(skey, ia, policy);
    drive(stream, hs, &[], &mut |_| None).await
}

/// Answer side: the peer's first bytes (`first`, already read) were not a BitTorrent
/// handshake. `find` maps `HASH('req2', SKEY)` to a torrent the session holds.
///
/// # Errors
/// As [`initiate`]; [`crate::peer::mse::MseError::UnknownTorrent`] when `find` knows no
/// torrent.
pub async fn respond<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    first: &[u8],
    policy: Policy,
    find: &mut (dyn FnMut(&[u8; 20]) -> Option<InfoHash> + Send),
) -> Result<MseStream<S>, PeerError> {
    let hs = MseHandshake::responder(policy);
    drive(stream, hs, first, find).await
}

async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    mut hs: MseHandshake,
    first: &[u8],
    find: &mut (dyn FnMut(&[u8; 20]) -> Option<InfoHash> + Send),
) -> Result<MseStream<S>, PeerError> {
    let mut step = if first.is_empty() {
        Step::NeedMore
    } else {
        hs.feed(first, find)?
    };
    let mut buf = vec![0u8; MAX_BUFFERED];
    loop {
        let out = hs.take_output();
        if !out.is_empty() {
            stream.write_all(&out).await?;
            stream.flush().await?;
        }
        if let Step::Done(est) = step {
            return Ok(MseStream::new(stream, est));
        }
        let want = hs.read_hint().min(buf.len());
        let n = stream.read(&mut buf[..want]).await?;
        if n == 0 {
            return Err(PeerError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        step = hs.feed(&buf[..n], find)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::mse::{Method, req2};

    #[tokio::test]
    async fn initiator_and_responder_meet_over_a_pipe() {
        let ih = InfoHash([5; 20]);
        let (a, mut b) = tokio::io::duplex(1024);
        let dial = tokio::spawn(async move {
            let mut s = initiate(a, ih, b"\x13hello", Policy::Require)
                .await
                .unwrap();
            s.write_all(b"after").await.unwrap();
            s.flush().await.unwrap();
            let mut back = [0u8; 4];
            s.read_exact(&mut back).await.unwrap();
            (s.method(), back)
        });
        let mut first = [0u8; 20];
        b.read_exact(&mut first).await.unwrap();
        let mut find = |h: &[u8; 20]| (*h == req2(&ih)).then_some(ih);
        let mut s = respond(b, &first, Policy::Prefer, &mut find).await.unwrap();
        let mut got = [0u8; 11];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"\x13helloafter");
        s.write_all(b"back").await.unwrap();
        s.flush().await.unwrap();
        let (method, back) = dial.await.unwrap();
        assert_eq!((method, &back), (Method::Rc4, b"back"));
        assert_eq!(s.method(), Method::Rc4);
    }

    #[tokio::test]
    async fn a_responder_refuses_a_torrent_it_does_not_hold() {
        let (a, mut b) = tokio::io::duplex(4096);
        tokio::spawn(async move {
            let _ = initiate(a, InfoHash([1; 20]), b"", Policy::Prefer).await;
        });
        let mut first = [0u8; 20];
        b.read_exact(&mut first).await.unwrap();
        let e = respond(b, &first, Policy::Prefer, &mut |_| None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                PeerError::Mse(crate::peer::mse::MseError::UnknownTorrent)
            ),
            "{e}"
        );
    }
}
