//! The byte streams a connection runs on: [`Transport`] (anything that splits into a read
//! and a write half: TCP, uTP, an MSE/PE stream over either
//! ([`super::encrypted::MseStream`]), in-memory pipes in tests)
//! and [`PeerStream`], a handshaken stream on its way from the listener or a dial to its
//! torrent.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::encrypted::MseStream;
use crate::peer::mse::Method;
use crate::peer::utp::UtpStream;

/// A byte stream a peer connection can run on: it splits into independent read and write
/// halves (TCP: `into_split`, lock-free).
pub trait Transport: Send + 'static {
    /// Read half.
    type Reader: AsyncRead + Unpin + Send + 'static;
    /// Write half.
    type Writer: AsyncWrite + Unpin + Send + 'static;
    /// Split the stream.
    fn split(self) -> (Self::Reader, Self::Writer);
}

impl Transport for TcpStream {
    type Reader = tokio::net::tcp::OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;
    fn split(self) -> (Self::Reader, Self::Writer) {
        self.into_split()
    }
}

impl Transport for UtpStream {
    type Reader = UtpStream;
    type Writer = UtpStream;
    fn split(self) -> (Self::Reader, Self::Writer) {
        UtpStream::split(self)
    }
}

impl Transport for tokio::io::DuplexStream {
    type Reader = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Writer = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    fn split(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
    }
}

/// A handshaken stream on its way from the listener or a dial to the torrent.
#[derive(Debug)]
pub enum PeerStream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// uTP (BEP 29).
    Utp(UtpStream),
    /// TCP after an MSE/PE handshake (RC4, or plaintext after the obfuscated handshake).
    TcpMse(Box<MseStream<TcpStream>>),
    /// uTP after an MSE/PE handshake: the same handshake and ciphers as over TCP.
    UtpMse(Box<MseStream<UtpStream>>),
}

impl PeerStream {
    /// Over uTP (plain or encrypted).
    pub fn is_utp(&self) -> bool {
        matches!(self, PeerStream::Utp(_) | PeerStream::UtpMse(_))
    }

    /// What the MSE handshake selected; `None`: a plaintext BitTorrent connection.
    pub fn mse(&self) -> Option<Method> {
        match self {
            PeerStream::Tcp(_) | PeerStream::Utp(_) => None,
            PeerStream::TcpMse(s) => Some(s.method()),
            PeerStream::UtpMse(s) => Some(s.method()),
        }
    }
}

/// A raw byte stream a [`PeerStream`] is made of (TCP or uTP), before or after an MSE/PE
/// handshake: lets the dial and the listener run one code path for both transports.
pub trait RawStream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// This stream as a plaintext [`PeerStream`].
    fn plain(self) -> PeerStream;
    /// This stream under MSE/PE as a [`PeerStream`].
    fn encrypted(stream: MseStream<Self>) -> PeerStream
    where
        Self: Sized;
}

impl RawStream for TcpStream {
    fn plain(self) -> PeerStream {
        PeerStream::Tcp(self)
    }
    fn encrypted(stream: MseStream<Self>) -> PeerStream {
        PeerStream::TcpMse(Box::new(stream))
    }
}

impl RawStream for UtpStream {
    fn plain(self) -> PeerStream {
        PeerStream::Utp(self)
    }
    fn encrypted(stream: MseStream<Self>) -> PeerStream {
        PeerStream::UtpMse(Box::new(stream))
    }
}
